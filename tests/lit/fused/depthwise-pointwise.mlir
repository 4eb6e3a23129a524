// fused-depthwise-pointwise: a depthwise convolution joined into one kernel with the
// expand 1x1 convolution writing its input (fused.pointwise_depthwise) where the
// estimates make that faster than separate kernels: a MobileNetV2 block of 576
// channels at 4x4 (f32, ascend910). The joined ops print and parse back.
// RUN: ge-opt %s --split-input-file --pass-pipeline 'fused-depthwise-pointwise{hw=ascend910}' | filecheck %s
// RUN: ge-opt %s --split-input-file --pass-pipeline 'fused-depthwise-pointwise{hw=ascend910}' | ge-opt --split-input-file | filecheck %s
// RUN: ge-opt %s --split-input-file --pass-pipeline 'fused-depthwise-pointwise{hw=ascend910 debug=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=DEBUG

// CHECK-LABEL: func.func @main(
// CHECK: %h = fused.pointwise_depthwise %x0, %e, %w bias %eb dw_bias %b {pads = [1, 1, 1, 1], act = "relu6", dw_act = "relu6"}
// CHECK-NEXT: %y = fused.conv2d_bias_act %h, %p bias %pb
// DEBUG: [fused-depthwise-pointwise] fused.conv2d_bias_act at {{.*}}: separate kernels ~{{[0-9]+}}, with its expand convolution ~{{[0-9]+}}, as the pointwise product's operand ~{{[0-9]+}} cycles: with its expand convolution
func.func @main(%x0: tensor<1x96x4x4xf32, #ge.format<NC1HWC0>>, %b: tensor<576xf32>, %pb: tensor<96xf32>, %eb: tensor<576xf32>) -> tensor<1x96x4x4xf32, #ge.format<NC1HWC0>> {
  %e = ge.const #ge.random<normal, seed = 5, mean = 0.0, std = 0.3> : tensor<576x96x1x1xf32, #ge.format<FRACTAL_Z>>
  %x = fused.conv2d_bias_act %x0, %e bias %eb {act = "relu6"} : (tensor<1x96x4x4xf32, #ge.format<NC1HWC0>>, tensor<576x96x1x1xf32, #ge.format<FRACTAL_Z>>, tensor<576xf32>) -> tensor<1x576x4x4xf32, #ge.format<NC1HWC0>>
  %w = ge.const #ge.random<normal, seed = 3, mean = 0.0, std = 0.3> : tensor<576x1x3x3xf32>
  %p = ge.const #ge.random<normal, seed = 4, mean = 0.0, std = 0.3> : tensor<96x576x1x1xf32, #ge.format<FRACTAL_Z>>
  %h = fused.conv2d_bias_act %x, %w bias %b {strides = [1, 1], pads = [1, 1, 1, 1], groups = 576, act = "relu6"} : (tensor<1x576x4x4xf32, #ge.format<NC1HWC0>>, tensor<576x1x3x3xf32>, tensor<576xf32>) -> tensor<1x576x4x4xf32, #ge.format<NC1HWC0>>
  %y = fused.conv2d_bias_act %h, %p bias %pb {act = "none"} : (tensor<1x576x4x4xf32, #ge.format<NC1HWC0>>, tensor<96x576x1x1xf32, #ge.format<FRACTAL_Z>>, tensor<96xf32>) -> tensor<1x96x4x4xf32, #ge.format<NC1HWC0>>
  func.return %y : tensor<1x96x4x4xf32, #ge.format<NC1HWC0>>
}

// -----

// A block of 144 channels at 16x16 joins both 1x1 convolutions: a band of output
// rows a core (fused.expand_depthwise_project, the residual its input).
// CHECK-LABEL: func.func @main(
// CHECK-NOT: fused.conv2d_bias_act
// CHECK: %y = fused.expand_depthwise_project %x0, %e, %w, %p bias %eb dw_bias %b pw_bias %pb residual %x0 {pads = [1, 1, 1, 1], act = "relu6", dw_act = "relu6"}
// CHECK-NOT: fused.conv2d_bias_act
// DEBUG: [fused-depthwise-pointwise] {{.*}}: separate kernels ~{{[0-9]+}}, with its expand convolution ~{{[0-9]+}}, as the pointwise product's operand ~{{[0-9]+}}, with both 1x1 convolutions ~{{[0-9]+}} cycles: with both 1x1 convolutions
func.func @main(%x0: tensor<1x24x16x16xf32, #ge.format<NC1HWC0>>, %b: tensor<144xf32>, %pb: tensor<24xf32>, %eb: tensor<144xf32>) -> tensor<1x24x16x16xf32, #ge.format<NC1HWC0>> {
  %e = ge.const #ge.random<normal, seed = 5, mean = 0.0, std = 0.3> : tensor<144x24x1x1xf32, #ge.format<FRACTAL_Z>>
  %x = fused.conv2d_bias_act %x0, %e bias %eb {act = "relu6"} : (tensor<1x24x16x16xf32, #ge.format<NC1HWC0>>, tensor<144x24x1x1xf32, #ge.format<FRACTAL_Z>>, tensor<144xf32>) -> tensor<1x144x16x16xf32, #ge.format<NC1HWC0>>
  %w = ge.const #ge.random<normal, seed = 3, mean = 0.0, std = 0.3> : tensor<144x1x3x3xf32>
  %p = ge.const #ge.random<normal, seed = 4, mean = 0.0, std = 0.3> : tensor<24x144x1x1xf32, #ge.format<FRACTAL_Z>>
  %h = fused.conv2d_bias_act %x, %w bias %b {strides = [1, 1], pads = [1, 1, 1, 1], groups = 144, act = "relu6"} : (tensor<1x144x16x16xf32, #ge.format<NC1HWC0>>, tensor<144x1x3x3xf32>, tensor<144xf32>) -> tensor<1x144x16x16xf32, #ge.format<NC1HWC0>>
  %y = fused.conv2d_bias_act %h, %p bias %pb residual %x0 {act = "none"} : (tensor<1x144x16x16xf32, #ge.format<NC1HWC0>>, tensor<24x144x1x1xf32, #ge.format<FRACTAL_Z>>, tensor<24xf32>, tensor<1x24x16x16xf32, #ge.format<NC1HWC0>>) -> tensor<1x24x16x16xf32, #ge.format<NC1HWC0>>
  func.return %y : tensor<1x24x16x16xf32, #ge.format<NC1HWC0>>
}
