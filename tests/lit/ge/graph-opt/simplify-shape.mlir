// ge-simplify on data movement and reductions: positive cases, then the case that
// must stay.
// RUN: ge-opt %s -p ge-simplify | filecheck %s

// "Broadcasting of a scalar constant kept as a splat": shape ops of a splat.
// CHECK-LABEL: func.func @splat_through_shape_ops
// CHECK-NEXT:    %e = ge.const dense<2.500000e+00> : tensor<64x1024xf32>
// CHECK-NEXT:    %t = ge.const dense<2.500000e+00> : tensor<1024x64xf32>
// CHECK-NEXT:    func.return %e, %t
func.func @splat_through_shape_ops() -> (tensor<64x1024xf32>, tensor<1024x64xf32>) {
  %s = ge.const dense<2.5> : tensor<f32>
  %e = ge.expand %s : (tensor<f32>) -> tensor<64x1024xf32>
  %t = ge.transpose %e {perm = [1, 0]} : (tensor<64x1024xf32>) -> tensor<1024x64xf32>
  func.return %e, %t : tensor<64x1024xf32>, tensor<1024x64xf32>
}
// A constant that is not a splat is left to ge-constant-fold (and max-bytes).
// CHECK-LABEL: func.func @expand_of_dense
// CHECK:         ge.expand %c
func.func @expand_of_dense() -> tensor<4x2xf32> {
  %c = ge.const dense<[1.0, 2.0]> : tensor<2xf32>
  %e = ge.expand %c : (tensor<2xf32>) -> tensor<4x2xf32>
  func.return %e : tensor<4x2xf32>
}

// CHECK-LABEL: func.func @reshape_same_shape
// CHECK-NEXT:    func.return %x
func.func @reshape_same_shape(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = ge.reshape %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @reshape_chain
// CHECK-NEXT:    %b = ge.reshape %x : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
// CHECK-NEXT:    func.return %b
func.func @reshape_chain(%x: tensor<2x3x4xf32>) -> tensor<6x4xf32> {
  %a = ge.reshape %x : (tensor<2x3x4xf32>) -> tensor<24xf32>
  %b = ge.reshape %a : (tensor<24xf32>) -> tensor<6x4xf32>
  func.return %b : tensor<6x4xf32>
}
// Unsqueeze then squeeze: the chain collapses to nothing.
// CHECK-LABEL: func.func @reshape_round_trip
// CHECK-NEXT:    func.return %x
func.func @reshape_round_trip(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %a = ge.reshape %x : (tensor<2x3xf32>) -> tensor<1x2x3xf32>
  %b = ge.reshape %a : (tensor<1x2x3xf32>) -> tensor<2x3xf32>
  func.return %b : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @reshape_after_transpose
// CHECK-NEXT:    ge.transpose
// CHECK-NEXT:    ge.reshape
func.func @reshape_after_transpose(%x: tensor<2x3xf32>) -> tensor<6xf32> {
  %a = ge.transpose %x {perm = [1, 0]} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %b = ge.reshape %a : (tensor<3x2xf32>) -> tensor<6xf32>
  func.return %b : tensor<6xf32>
}

// CHECK-LABEL: func.func @reshape_of_constants
// CHECK-NEXT:    %a = ge.const #ge.random<normal, seed = 4, mean = 0.0, std = 1.0> : tensor<64x32xf16>
// CHECK-NEXT:    %b = ge.const dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>
// CHECK-NEXT:    func.return %a, %b
func.func @reshape_of_constants() -> (tensor<64x32xf16>, tensor<2x2xi32>) {
  %w = ge.const #ge.random<normal, seed = 4, mean = 0.0, std = 1.0> : tensor<2048xf16>
  %a = ge.reshape %w : (tensor<2048xf16>) -> tensor<64x32xf16>
  %d = ge.const dense<[1, 2, 3, 4]> : tensor<4xi32>
  %b = ge.reshape %d : (tensor<4xi32>) -> tensor<2x2xi32>
  func.return %a, %b : tensor<64x32xf16>, tensor<2x2xi32>
}
// A dense constant also used as it is would be copied: the reshape stays.
// CHECK-LABEL: func.func @reshape_of_shared_dense
// CHECK:         ge.reshape %d
func.func @reshape_of_shared_dense() -> (tensor<4xi32>, tensor<2x2xi32>) {
  %d = ge.const dense<[1, 2, 3, 4]> : tensor<4xi32>
  %b = ge.reshape %d : (tensor<4xi32>) -> tensor<2x2xi32>
  func.return %d, %b : tensor<4xi32>, tensor<2x2xi32>
}

// CHECK-LABEL: func.func @transpose_identity
// CHECK-NEXT:    func.return %x
func.func @transpose_identity(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %t = ge.transpose %x {perm = [0, 1, 2]} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  func.return %t : tensor<2x3x4xf32>
}
// CHECK-LABEL: func.func @transpose_inverse_pair
// CHECK-NEXT:    func.return %x
func.func @transpose_inverse_pair(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %a = ge.transpose %x {perm = [1, 2, 0]} : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
  %b = ge.transpose %a {perm = [2, 0, 1]} : (tensor<3x4x2xf32>) -> tensor<2x3x4xf32>
  func.return %b : tensor<2x3x4xf32>
}
// A pair that is not inverse becomes one transpose, not the identity.
// CHECK-LABEL: func.func @transpose_pair_not_inverse
// CHECK-NEXT:    %b = ge.transpose %x {perm = [2, 0, 1]} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
// CHECK-NEXT:    func.return %b
func.func @transpose_pair_not_inverse(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  %a = ge.transpose %x {perm = [1, 2, 0]} : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
  %b = ge.transpose %a {perm = [1, 2, 0]} : (tensor<3x4x2xf32>) -> tensor<4x2x3xf32>
  func.return %b : tensor<4x2x3xf32>
}

// CHECK-LABEL: func.func @expand_same_shape
// CHECK-NEXT:    func.return %x
func.func @expand_same_shape(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %e = ge.expand %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %e : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @expand_real
// CHECK-NEXT:    ge.expand %x
func.func @expand_real(%x: tensor<1x3xf32>) -> tensor<2x3xf32> {
  %e = ge.expand %x : (tensor<1x3xf32>) -> tensor<2x3xf32>
  func.return %e : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @concat_one
// CHECK-NEXT:    func.return %x
func.func @concat_one(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %c = ge.concat %x {axis = 1} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %c : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @concat_two
// CHECK-NEXT:    ge.concat %x, %x
func.func @concat_two(%x: tensor<2x3xf32>) -> tensor<2x6xf32> {
  %c = ge.concat %x, %x {axis = 1} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
  func.return %c : tensor<2x6xf32>
}

// CHECK-LABEL: func.func @split_one
// CHECK-NEXT:    func.return %x
func.func @split_one(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %s = ge.split %x {axis = 0, sizes = [2]} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %s : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @split_two
// CHECK-NEXT:    ge.split %x
func.func @split_two(%x: tensor<2x3xf32>) -> tensor<1x3xf32> {
  %s:2 = ge.split %x {axis = 0, sizes = [1, 1]} : (tensor<2x3xf32>) -> (tensor<1x3xf32>, tensor<1x3xf32>)
  func.return %s#1 : tensor<1x3xf32>
}

// CHECK-LABEL: func.func @slice_everything
// CHECK-NEXT:    func.return %x
func.func @slice_everything(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %s = ge.slice %x {starts = [0, 0], ends = [2, 3], steps = [1, 1]} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %s : tensor<2x3xf32>
}
// The full range backwards reverses the tensor: kept.
// CHECK-LABEL: func.func @slice_reversed
// CHECK-NEXT:    ge.slice %x
func.func @slice_reversed(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %s = ge.slice %x {starts = [0, 2], ends = [2, -1], steps = [1, -1]} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %s : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @pad_nothing
// CHECK-NEXT:    func.return %x
func.func @pad_nothing(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %p = ge.pad %x {pads = [0, 0, 0, 0], mode = "reflect"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %p : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @pad_something
// CHECK-NEXT:    ge.pad %x
func.func @pad_something(%x: tensor<2x3xf32>) -> tensor<2x4xf32> {
  %p = ge.pad %x {pads = [0, 0, 0, 1]} : (tensor<2x3xf32>) -> tensor<2x4xf32>
  func.return %p : tensor<2x4xf32>
}

// CHECK-LABEL: func.func @reduce_unit_dims
// CHECK-NEXT:    func.return %x, %x
func.func @reduce_unit_dims(%x: tensor<2x1x3x1xf32>) -> (tensor<2x1x3x1xf32>, tensor<2x1x3x1xf32>) {
  %a = ge.reduce_sum %x {axes = [1, -1]} : (tensor<2x1x3x1xf32>) -> tensor<2x1x3x1xf32>
  %b = ge.reduce_max %x {axes = [3]} : (tensor<2x1x3x1xf32>) -> tensor<2x1x3x1xf32>
  func.return %a, %b : tensor<2x1x3x1xf32>, tensor<2x1x3x1xf32>
}
// Dropping the dim changes the shape; reducing a dim of 3 changes the values.
// CHECK-LABEL: func.func @reduce_real
// CHECK-NEXT:    ge.reduce_mean %x {axes = [1], keepdims = false}
// CHECK-NEXT:    ge.reduce_mean %x {axes = [2]}
func.func @reduce_real(%x: tensor<2x1x3x1xf32>) -> (tensor<2x3x1xf32>, tensor<2x1x1x1xf32>) {
  %a = ge.reduce_mean %x {axes = [1], keepdims = false} : (tensor<2x1x3x1xf32>) -> tensor<2x3x1xf32>
  %b = ge.reduce_mean %x {axes = [2]} : (tensor<2x1x3x1xf32>) -> tensor<2x1x1x1xf32>
  func.return %a, %b : tensor<2x3x1xf32>, tensor<2x1x1x1xf32>
}
