// ge-fold-batchnorm over max-bytes: a dense weight that only the product reads is
// replaced by the folded one (no bytes added: it folds whatever its size); a
// #ge.random weight would become a new dense constant, and a weight read
// elsewhere too would stay beside the folded one: both stay unfolded.
// RUN: ge-opt %s -p 'ge-fold-batchnorm{max-bytes=4}' | filecheck %s
// RUN: ge-opt %s -p 'ge-fold-batchnorm{max-bytes=4}' --pass-statistics 2>&1 >/dev/null | filecheck %s --check-prefix=STATS

// STATS: ge-fold-batchnorm: 1 batch norms folded, 2 left unfolded (weight over max-bytes)

// CHECK-LABEL: func.func @dense_single_use
// CHECK-NEXT:    %w = ge.const dense<{{\[\[\[\[}}2.000000e+00]]], {{\[\[\[}}5.000000e-01]]]]> : tensor<2x1x1x1xf32>
// CHECK-NEXT:    %c = ge.conv2d %x, %w
// CHECK-NEXT:    %y_bias = ge.const
// CHECK-NEXT:    %y = ge.bias_add %c, %y_bias {axis = 1}
func.func @dense_single_use(%x: tensor<1x1x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %w = ge.const dense<1.0> : tensor<2x1x1x1xf32>
  %c = ge.conv2d %x, %w : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x3xf32>
  %gamma = ge.const dense<[1.0, 1.0]> : tensor<2xf32>
  %beta = ge.const dense<[1.0, 0.5]> : tensor<2xf32>
  %mean = ge.const dense<[1.0, 2.0]> : tensor<2xf32>
  %var = ge.const dense<[0.25, 4.0]> : tensor<2xf32>
  %y = ge.batch_norm %c, %gamma, %beta, %mean, %var {epsilon = 1.0e-30} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  func.return %y : tensor<1x2x3x3xf32>
}

// CHECK-LABEL: func.func @random
// CHECK:         ge.batch_norm
func.func @random(%x: tensor<1x1x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %w = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 1.0> : tensor<2x1x1x1xf32>
  %c = ge.conv2d %x, %w : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x3xf32>
  %gamma = ge.const dense<[1.0, 1.0]> : tensor<2xf32>
  %beta = ge.const dense<[1.0, 0.5]> : tensor<2xf32>
  %mean = ge.const dense<[1.0, 2.0]> : tensor<2xf32>
  %var = ge.const dense<[0.25, 4.0]> : tensor<2xf32>
  %y = ge.batch_norm %c, %gamma, %beta, %mean, %var {epsilon = 1.0e-30} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  func.return %y : tensor<1x2x3x3xf32>
}

// CHECK-LABEL: func.func @shared
// CHECK:         ge.batch_norm
func.func @shared(%x: tensor<1x1x3x3xf32>) -> (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) {
  %w = ge.const dense<1.0> : tensor<2x1x1x1xf32>
  %c = ge.conv2d %x, %w : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x3xf32>
  %d = ge.conv2d %x, %w : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x3xf32>
  %gamma = ge.const dense<[1.0, 1.0]> : tensor<2xf32>
  %beta = ge.const dense<[1.0, 0.5]> : tensor<2xf32>
  %mean = ge.const dense<[1.0, 2.0]> : tensor<2xf32>
  %var = ge.const dense<[0.25, 4.0]> : tensor<2xf32>
  %y = ge.batch_norm %c, %gamma, %beta, %mean, %var {epsilon = 1.0e-30} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  func.return %y, %d : tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>
}
