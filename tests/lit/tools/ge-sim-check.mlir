// --check runs the input module through the reference interpreter as well and
// compares; after dce and cse (which drop %dead and merge %b into %a) the
// results are bit-identical.
// RUN: ge-sim %s --check | filecheck %s
// RUN: ge-sim %s --pipeline dce,cse --check --seed 5 | filecheck %s

func.func @main(%x: tensor<8x16xf16> {ge.name = "x"}, %w: tensor<16x4xf16> {ge.name = "w"}) -> (tensor<8x4xf16> {ge.name = "y"}) {
  %a = ge.matmul %x, %w : (tensor<8x16xf16>, tensor<16x4xf16>) -> tensor<8x4xf16>
  %b = ge.matmul %x, %w : (tensor<8x16xf16>, tensor<16x4xf16>) -> tensor<8x4xf16>
  %dead = ge.exp %x : (tensor<8x16xf16>) -> tensor<8x16xf16>
  %s = ge.add %a, %b : (tensor<8x4xf16>, tensor<8x4xf16>) -> tensor<8x4xf16>
  %y = ge.gelu %s : (tensor<8x4xf16>) -> tensor<8x4xf16>
  func.return %y : tensor<8x4xf16>
}

// CHECK:      {{^}}y: tensor<8x4xf16> min={{.*}} max={{.*}} mean={{.*}}{{$}}
// CHECK-NEXT: {{^}}check: ok (identical){{$}}
// CHECK-NOT:  {{.}}
