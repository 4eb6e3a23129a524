// fused-split-k-conv's subsampled form of a strided 1x1 convolution: a ge.slice
// of every second pixel (in the input's NC1HWC0 format) and the stride-1 1x1
// convolution of it, where the estimates make that faster than one kernel
// reading strided pixels (ResNet-50's last downsample, f32, ascend910); a
// downsample of many pixels stays one kernel.
// RUN: ge-opt %s --split-input-file --pass-pipeline 'fused-split-k-conv{hw=ascend910}' | filecheck %s
// RUN: ge-opt %s --split-input-file --pass-pipeline 'fused-split-k-conv{hw=ascend910 debug=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=DEBUG

// CHECK-LABEL: func.func @few_pixels(
// CHECK-NEXT: %[[W:.*]] = ge.const
// CHECK-NEXT: %[[S:.*]] = ge.slice %x {starts = [0, 0, 0, 0], ends = [1, 1024, 14, 14], steps = [1, 1, 2, 2]} : (tensor<1x1024x14x14xf32, #ge.format<NC1HWC0>>) -> tensor<1x1024x7x7xf32, #ge.format<NC1HWC0>>
// CHECK-NEXT: %y = fused.conv2d_bias_act %[[S]], %[[W]] bias %b {act = "relu"} : (tensor<1x1024x7x7xf32, #ge.format<NC1HWC0>>,
// DEBUG: one kernel ~{{[0-9]+}}, subsample ~{{[0-9]+}}, split-K 2 ~{{[0-9]+}}, split-K 4 ~{{[0-9]+}}, split-K 8 ~{{[0-9]+}} cycles: subsample
func.func @few_pixels(%x: tensor<1x1024x14x14xf32, #ge.format<NC1HWC0>>, %b: tensor<2048xf32>) -> tensor<1x2048x7x7xf32, #ge.format<NC1HWC0>> {
  %w = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.03> : tensor<2048x1024x1x1xf32, #ge.format<FRACTAL_Z>>
  %y = fused.conv2d_bias_act %x, %w bias %b {strides = [2, 2], act = "relu"} : (tensor<1x1024x14x14xf32, #ge.format<NC1HWC0>>, tensor<2048x1024x1x1xf32, #ge.format<FRACTAL_Z>>, tensor<2048xf32>) -> tensor<1x2048x7x7xf32, #ge.format<NC1HWC0>>
  func.return %y : tensor<1x2048x7x7xf32, #ge.format<NC1HWC0>>
}

// -----

// CHECK-LABEL: func.func @many_pixels(
// CHECK-NOT: ge.slice
// CHECK: fused.conv2d_bias_act %x, %w bias %b {strides = [2, 2], act = "relu"}
// DEBUG: one kernel ~{{[0-9]+}}, subsample ~{{[0-9]+}}, {{.*}}: one kernel
func.func @many_pixels(%x: tensor<1x256x56x56xf32, #ge.format<NC1HWC0>>, %b: tensor<512xf32>) -> tensor<1x512x28x28xf32, #ge.format<NC1HWC0>> {
  %w = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.03> : tensor<512x256x1x1xf32, #ge.format<FRACTAL_Z>>
  %y = fused.conv2d_bias_act %x, %w bias %b {strides = [2, 2], act = "relu"} : (tensor<1x256x56x56xf32, #ge.format<NC1HWC0>>, tensor<512x256x1x1xf32, #ge.format<FRACTAL_Z>>, tensor<512xf32>) -> tensor<1x512x28x28xf32, #ge.format<NC1HWC0>>
  func.return %y : tensor<1x512x28x28xf32, #ge.format<NC1HWC0>>
}
