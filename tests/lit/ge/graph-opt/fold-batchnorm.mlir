// ge-fold-batchnorm: an inference batch_norm with constant statistics after a
// conv2d / matmul with a constant weight becomes a scaled weight and a bias_add.
// RUN: ge-opt %s -p ge-fold-batchnorm | filecheck %s
// RUN: ge-opt %s -p ge-fold-batchnorm --pass-statistics 2>&1 >/dev/null | filecheck %s --check-prefix=STATS

// STATS: ge-fold-batchnorm: 2 batch norms folded, 0 left unfolded (weight over max-bytes)

// scale / sqrt(var + eps) = [2, 0.5] (eps = 0): W * [2, 0.5] per output channel,
// bias = beta - mean * [2, 0.5] = [1 - 2, 0.5 - 1].
// CHECK-LABEL: func.func @conv
// CHECK-NEXT:    %w = ge.const dense<{{\[\[\[\[}}2.000000e+00]]], {{\[\[\[}}5.000000e-01]]]]> : tensor<2x1x1x1xf32>
// CHECK-NEXT:    %c = ge.conv2d %x, %w : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x3xf32>
// CHECK-NEXT:    %y_bias = ge.const dense<[-1.000000e+00, -5.000000e-01]> : tensor<2xf32>
// CHECK-NEXT:    %y = ge.bias_add %c, %y_bias {axis = 1} : (tensor<1x2x3x3xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
// CHECK-NEXT:    func.return %y
func.func @conv(%x: tensor<1x1x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %w = ge.const dense<1.0> : tensor<2x1x1x1xf32>
  %c = ge.conv2d %x, %w : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x3xf32>
  %gamma = ge.const dense<[1.0, 1.0]> : tensor<2xf32>
  %beta = ge.const dense<[1.0, 0.5]> : tensor<2xf32>
  %mean = ge.const dense<[1.0, 2.0]> : tensor<2xf32>
  %var = ge.const dense<[0.25, 4.0]> : tensor<2xf32>
  %y = ge.batch_norm %c, %gamma, %beta, %mean, %var {epsilon = 1.0e-30} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  func.return %y : tensor<1x2x3x3xf32>
}

// After a matmul the channels are the columns of the weight.
// CHECK-LABEL: func.func @matmul
// CHECK-NEXT:    %w = ge.const dense<{{\[}}[2.000000e+00, 5.000000e-01]]> : tensor<1x2xf32>
// CHECK-NEXT:    %m = ge.matmul %x, %w
// CHECK-NEXT:    %y_bias = ge.const
// CHECK-NEXT:    %y = ge.bias_add %m, %y_bias : (tensor<3x2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
func.func @matmul(%x: tensor<3x1xf32>) -> tensor<3x2xf32> {
  %w = ge.const dense<1.0> : tensor<1x2xf32>
  %m = ge.matmul %x, %w : (tensor<3x1xf32>, tensor<1x2xf32>) -> tensor<3x2xf32>
  %gamma = ge.const dense<[1.0, 1.0]> : tensor<2xf32>
  %beta = ge.const dense<[1.0, 0.0]> : tensor<2xf32>
  %mean = ge.const dense<[1.0, 2.0]> : tensor<2xf32>
  %var = ge.const dense<[0.25, 4.0]> : tensor<2xf32>
  %y = ge.batch_norm %m, %gamma, %beta, %mean, %var {epsilon = 1.0e-30} : (tensor<3x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  func.return %y : tensor<3x2xf32>
}

// Statistics that are arguments (training-style graphs) cannot be folded.
// CHECK-LABEL: func.func @statistics_are_arguments
// CHECK:         ge.batch_norm
func.func @statistics_are_arguments(%x: tensor<1x2x3x3xf32>, %gamma: tensor<2xf32>, %beta: tensor<2xf32>, %mean: tensor<2xf32>, %var: tensor<2xf32>) -> tensor<1x2x3x3xf32> {
  %w = ge.const dense<1.0> : tensor<2x2x1x1xf32>
  %c = ge.conv2d %x, %w : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %y = ge.batch_norm %c, %gamma, %beta, %mean, %var : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  func.return %y : tensor<1x2x3x3xf32>
}

// The conv result is also returned: changing the conv would change that output.
// CHECK-LABEL: func.func @conv_result_used_twice
// CHECK:         ge.batch_norm %c
func.func @conv_result_used_twice(%x: tensor<1x2x3x3xf32>) -> (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) {
  %w = ge.const dense<1.0> : tensor<2x2x1x1xf32>
  %c = ge.conv2d %x, %w : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %p = ge.const dense<1.0> : tensor<2xf32>
  %y = ge.batch_norm %c, %p, %p, %p, %p : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  func.return %y, %c : tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>
}

// A weight computed at run time cannot be rescaled at compile time.
// CHECK-LABEL: func.func @weight_is_an_argument
// CHECK:         ge.batch_norm %c
func.func @weight_is_an_argument(%x: tensor<1x2x3x3xf32>, %w: tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32> {
  %c = ge.conv2d %x, %w : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %p = ge.const dense<1.0> : tensor<2xf32>
  %y = ge.batch_norm %c, %p, %p, %p, %p : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  func.return %y : tensor<1x2x3x3xf32>
}
