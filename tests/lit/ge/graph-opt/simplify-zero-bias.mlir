// ge-simplify drops a bias_add of a zero bias (PyTorch's captured Linear / Conv
// keep their zero biases, where ONNX exporters' optimisers drop the Add), and
// keeps one whose bias is not all zero.
// RUN: ge-opt %s -p ge-simplify | filecheck %s

// CHECK-LABEL: func.func @zero_bias
// CHECK-NEXT:    func.return %x
func.func @zero_bias(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %b = ge.const dense<[0.0, 0.0, 0.0]> : tensor<3xf32>
  %y = ge.bias_add %x, %b {axis = 1} : (tensor<2x3x4xf32>, tensor<3xf32>) -> tensor<2x3x4xf32>
  func.return %y : tensor<2x3x4xf32>
}

// CHECK-LABEL: func.func @nonzero_bias
// CHECK:         ge.bias_add %x, %b
func.func @nonzero_bias(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %b = ge.const dense<[0.0, 1.0, 0.0]> : tensor<3xf32>
  %y = ge.bias_add %x, %b {axis = 1} : (tensor<2x3x4xf32>, tensor<3xf32>) -> tensor<2x3x4xf32>
  func.return %y : tensor<2x3x4xf32>
}
