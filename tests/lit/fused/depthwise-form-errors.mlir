// fused-depthwise-pointwise checks the pin of a depthwise convolution with no 1x1
// convolution beside it: a form of neither it nor fused-split-k-conv is a one-line
// error at the op ("separate kernels" is consumed, "one kernel" left to fused-split-k-conv).
// RUN: not ge-opt %s --split-input-file -p 'fused-depthwise-pointwise{hw=ascend910}' 2>&1 | filecheck %s

// CHECK: depthwise-form-errors.mlir:[[# @LINE + 3]]:3: error: 'fused.conv2d_bias_act' op 'npu.form' must be one of 'separate kernels'; got "with its expand convolution"
func.func @main(%x: tensor<1x16x8x8xf32, #ge.format<NC1HWC0>>) -> tensor<1x16x8x8xf32, #ge.format<NC1HWC0>> {
  %w = ge.const #ge.random<normal, seed = 3, mean = 0.0, std = 0.3> : tensor<16x1x3x3xf32>
  %h = fused.conv2d_bias_act %x, %w {pads = [1, 1, 1, 1], groups = 16, act = "relu6", npu.form = "with its expand convolution"} : (tensor<1x16x8x8xf32, #ge.format<NC1HWC0>>, tensor<16x1x3x3xf32>) -> tensor<1x16x8x8xf32, #ge.format<NC1HWC0>>
  func.return %h : tensor<1x16x8x8xf32, #ge.format<NC1HWC0>>
}

// -----

// CHECK: fused.conv2d_bias_act %x, %w {pads = [1, 1, 1, 1], groups = 16, act = "relu6"} :
func.func @main(%x: tensor<1x16x8x8xf32, #ge.format<NC1HWC0>>) -> tensor<1x16x8x8xf32, #ge.format<NC1HWC0>> {
  %w = ge.const #ge.random<normal, seed = 3, mean = 0.0, std = 0.3> : tensor<16x1x3x3xf32>
  %h = fused.conv2d_bias_act %x, %w {pads = [1, 1, 1, 1], groups = 16, act = "relu6", npu.form = "separate kernels"} : (tensor<1x16x8x8xf32, #ge.format<NC1HWC0>>, tensor<16x1x3x3xf32>) -> tensor<1x16x8x8xf32, #ge.format<NC1HWC0>>
  func.return %h : tensor<1x16x8x8xf32, #ge.format<NC1HWC0>>
}
