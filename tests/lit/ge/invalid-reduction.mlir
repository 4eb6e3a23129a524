// Every verifier error of reduce_sum, reduce_mean and reduce_max, one per chunk.
// RUN: ge-opt %s --split-input-file --verify-diagnostics

func.func @main(%x: tensor<2x3xi1>) {
  // expected-error @+1 {{'ge.reduce_sum' op operand must be numeric, got i1}}
  %0 = ge.reduce_sum %x : (tensor<2x3xi1>) -> tensor<1x1xi1>
  func.return
}

// -----

func.func @main(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'ge.reduce_sum' op axis 3 is out of range for rank 3}}
  %0 = ge.reduce_sum %x {axes = [3]} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  func.return
}

// -----

func.func @main(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'ge.reduce_mean' op axes [0, -3] name a dimension twice}}
  %0 = ge.reduce_mean %x {axes = [0, -3]} : (tensor<2x3x4xf32>) -> tensor<1x3x4xf32>
  func.return
}

// -----

func.func @main(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'ge.reduce_mean' op axis -4 is out of range for rank 3}}
  %0 = ge.reduce_mean %x {axes = [-4]} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  func.return
}

// -----

func.func @main(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'ge.reduce_max' op result type tensor<2x4xf32> does not match the inferred type tensor<2x1x4xf32>}}
  %0 = ge.reduce_max %x {axes = [1]} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  func.return
}

// -----

func.func @main(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'ge.reduce_max' op result type tensor<1x1x1xf32> does not match the inferred type tensor<f32>}}
  %0 = ge.reduce_max %x {keepdims = false} : (tensor<2x3x4xf32>) -> tensor<1x1x1xf32>
  func.return
}
