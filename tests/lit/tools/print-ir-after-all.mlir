// --print-ir-after-all prints MLIR's dump header and the whole module to stderr
// after every pass, the last one included; stdout keeps only the final IR.
// RUN: ge-opt %s -p dce,cse --print-ir-after-all 2> %t.stderr | filecheck %s --check-prefix=OUT
// RUN: filecheck %s --input-file %t.stderr --check-prefix=ERR

func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %a = ge.relu %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %b = ge.relu %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %dead = ge.exp %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = ge.add %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

// OUT-NOT:  IR Dump
// OUT:      builtin.module {
// OUT:        %a = ge.relu %x
// OUT-NEXT:   %y = ge.add %a, %a
// OUT-NOT:  IR Dump

// ERR:      {{^}}// -----// IR Dump After dce //----- //{{$}}
// ERR-NEXT: {{^}}builtin.module {{{$}}
// ERR-NEXT:   func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
// ERR-NEXT:     %a = ge.relu %x
// ERR-NEXT:     %b = ge.relu %x
// ERR-NEXT:     %y = ge.add %a, %b
// ERR-NEXT:     func.return %y
// ERR-NEXT:   }
// ERR-NEXT: {{^}}}{{$}}
// ERR:      {{^}}// -----// IR Dump After cse //----- //{{$}}
// ERR-NEXT: {{^}}builtin.module {{{$}}
// ERR-NEXT:   func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
// ERR-NEXT:     %a = ge.relu %x
// ERR-NEXT:     %y = ge.add %a, %a
// ERR-NEXT:     func.return %y
// ERR-NEXT:   }
// ERR-NEXT: {{^}}}{{$}}
// ERR-NOT:  IR Dump
