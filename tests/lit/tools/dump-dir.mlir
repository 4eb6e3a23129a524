// --dump-dir writes the IR before the first pass (00_input.mlir) and after every
// pass (NN_<pass>.mlir); dce removes %dead, then cse merges %b into %a.
// RUN: rm -rf %t && ge-opt %s -p dce,cse --dump-dir %t | filecheck %s --check-prefix=OUT
// RUN: ls %t | filecheck %s --check-prefix=FILES
// RUN: filecheck %s --input-file %t/00_input.mlir --check-prefix=INPUT
// RUN: filecheck %s --input-file %t/01_dce.mlir --check-prefix=DCE
// RUN: filecheck %s --input-file %t/02_cse.mlir --check-prefix=CSE
// A pass-less run writes only the input, into a directory it creates.
// RUN: rm -rf %t.nested && ge-opt %s --dump-dir %t.nested/a/b > /dev/null
// RUN: ls %t.nested/a/b | filecheck %s --check-prefix=NOPASS

func.func @main(%x: tensor<4x8xf32> {ge.name = "x"}) -> (tensor<4x8xf32> {ge.name = "y"}) {
  %a = ge.relu %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %b = ge.relu %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %dead = ge.exp %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = ge.add %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

// The final IR still goes to stdout.
// OUT:      %a = ge.relu %x
// OUT-NEXT: %y = ge.add %a, %a
// OUT-NEXT: func.return %y

// FILES:      {{^}}00_input.mlir{{$}}
// FILES-NEXT: {{^}}01_dce.mlir{{$}}
// FILES-NEXT: {{^}}02_cse.mlir{{$}}
// FILES-NOT:  .mlir

// INPUT:      builtin.module {
// INPUT-NEXT:   func.func @main(%x: tensor<4x8xf32> {ge.name = "x"}) -> (tensor<4x8xf32> {ge.name = "y"}) {
// INPUT-NEXT:     %a = ge.relu %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
// INPUT-NEXT:     %b = ge.relu %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
// INPUT-NEXT:     %dead = ge.exp %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
// INPUT-NEXT:     %y = ge.add %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// INPUT-NEXT:     func.return %y : tensor<4x8xf32>

// DCE:      %a = ge.relu %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
// DCE-NEXT: %b = ge.relu %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
// DCE-NEXT: %y = ge.add %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// DCE-NEXT: func.return %y : tensor<4x8xf32>

// CSE:      %a = ge.relu %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CSE-NEXT: %y = ge.add %a, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CSE-NEXT: func.return %y : tensor<4x8xf32>

// NOPASS:     {{^}}00_input.mlir{{$}}
// NOPASS-NOT: .mlir
