// ge-sim prints one line per output: its name (ge.name, else resultN), its type,
// and min / max / mean. The outputs here do not depend on the random inputs.
// RUN: ge-sim %s --seed 3 --report | filecheck %s

func.func @main(%x: tensor<2x3xf32> {ge.name = "x"}, %unused: tensor<4xi32>) -> (tensor<2x3xf32> {ge.name = "y"}, tensor<2xi64>, tensor<3xi1> {ge.name = "mask"}) {
  %zero = ge.const dense<0.0> : tensor<2x3xf32>
  %c = ge.const dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %xz = ge.mul %x, %zero : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %y = ge.add %xz, %c : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %k = ge.const dense<[-7, 9]> : tensor<2xi64>
  %m = ge.const dense<[true, false, true]> : tensor<3xi1>
  func.return %y, %k, %m : tensor<2x3xf32>, tensor<2xi64>, tensor<3xi1>
}

// CHECK-NOT:  Traceback
// CHECK:      {{^}}y: tensor<2x3xf32> min=1 max=6 mean=3.5{{$}}
// CHECK-NEXT: {{^}}result1: tensor<2xi64> min=-7 max=9 mean=1{{$}}
// CHECK-NEXT: {{^}}mask: tensor<3xi1> min=0 max=1 mean=0.666667{{$}}
// CHECK-NEXT: {{^}}level: ge (reference interpreter){{$}}
// CHECK-NOT:  {{.}}
