// Round trip of reduce_sum, reduce_mean, reduce_max (ONNX defaults: keepdims =
// true, empty axes = all). Custom form -> generic form -> custom form.
// RUN: ge-opt %s --print-op-generic > %t.generic.mlir
// RUN: filecheck %s --check-prefix=GENERIC --input-file %t.generic.mlir
// RUN: ge-opt %t.generic.mlir | filecheck %s

// CHECK-LABEL: func.func @reductions(
// GENERIC-LABEL: "func.func"() <{sym_name = "reductions"
func.func @reductions(%x: tensor<2x3x4xf32>, %h: tensor<8x16xf16>, %i: tensor<5x6xi32>, %l: tensor<7xi64>) {
  // CHECK-NEXT: %sum = ge.reduce_sum %x : (tensor<2x3x4xf32>) -> tensor<1x1x1xf32>
  // CHECK-NEXT: %sum_written = ge.reduce_sum %x : (tensor<2x3x4xf32>) -> tensor<1x1x1xf32>
  // CHECK-NEXT: %sum_axis = ge.reduce_sum %x {axes = [1], keepdims = false} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  // CHECK-NEXT: %sum_int = ge.reduce_sum %l {keepdims = false} : (tensor<7xi64>) -> tensor<i64>
  // CHECK-NEXT: %mean = ge.reduce_mean %x {axes = [-1, 0]} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
  // CHECK-NEXT: %mean_half = ge.reduce_mean %h {axes = [1]} : (tensor<8x16xf16>) -> tensor<8x1xf16>
  // CHECK-NEXT: %max = ge.reduce_max %i {axes = [0, 1], keepdims = false} : (tensor<5x6xi32>) -> tensor<i32>
  // CHECK-NEXT: %max_rows = ge.reduce_max %h {axes = [0]} : (tensor<8x16xf16>) -> tensor<1x16xf16>
  // GENERIC:      %sum = "ge.reduce_sum"(%x) <{axes = array<i64>, keepdims = true}> : (tensor<2x3x4xf32>) -> tensor<1x1x1xf32>
  // GENERIC-NEXT: %sum_written = "ge.reduce_sum"(%x) <{axes = array<i64>, keepdims = true}> : (tensor<2x3x4xf32>) -> tensor<1x1x1xf32>
  // GENERIC-NEXT: %sum_axis = "ge.reduce_sum"(%x) <{axes = array<i64: 1>, keepdims = false}> : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  // GENERIC-NEXT: %sum_int = "ge.reduce_sum"(%l) <{keepdims = false, axes = array<i64>}> : (tensor<7xi64>) -> tensor<i64>
  // GENERIC-NEXT: %mean = "ge.reduce_mean"(%x) <{axes = array<i64: -1, 0>, keepdims = true}> : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
  // GENERIC-NEXT: %mean_half = "ge.reduce_mean"(%h) <{axes = array<i64: 1>, keepdims = true}> : (tensor<8x16xf16>) -> tensor<8x1xf16>
  // GENERIC-NEXT: %max = "ge.reduce_max"(%i) <{axes = array<i64: 0, 1>, keepdims = false}> : (tensor<5x6xi32>) -> tensor<i32>
  // GENERIC-NEXT: %max_rows = "ge.reduce_max"(%h) <{axes = array<i64: 0>, keepdims = true}> : (tensor<8x16xf16>) -> tensor<1x16xf16>
  %sum = ge.reduce_sum %x : (tensor<2x3x4xf32>) -> tensor<1x1x1xf32>
  %sum_written = ge.reduce_sum %x {axes = [], keepdims = true} : (tensor<2x3x4xf32>) -> tensor<1x1x1xf32>
  %sum_axis = ge.reduce_sum %x {axes = [1], keepdims = false} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  %sum_int = ge.reduce_sum %l {keepdims = false} : (tensor<7xi64>) -> tensor<i64>
  %mean = ge.reduce_mean %x {axes = [-1, 0]} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
  %mean_half = ge.reduce_mean %h {axes = array<i64: 1>, keepdims = true} : (tensor<8x16xf16>) -> tensor<8x1xf16>
  %max = ge.reduce_max %i {axes = [0, 1], keepdims = false} : (tensor<5x6xi32>) -> tensor<i32>
  %max_rows = ge.reduce_max %h {axes = [0]} : (tensor<8x16xf16>) -> tensor<1x16xf16>
  func.return
}
