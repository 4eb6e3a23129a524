// fused-stage-conv-input: a convolution reading an ND (NCHW) input converts it to
// NC1HWC0 first (a ge.transdata kernel, or inside the vector group computing it)
// where the estimates make that faster than staging NCHW rows in every core
// (EfficientNet-B0's stage-6 project convolution, 1152 -> 192 at 2x2, f32,
// ascend910); one of long rows and few channels reads its input as it is.
// RUN: ge-opt %s --split-input-file --pass-pipeline 'fused-stage-conv-input{hw=ascend910}' | filecheck %s
// RUN: ge-opt %s --split-input-file --pass-pipeline 'fused-stage-conv-input{hw=ascend910 debug=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=DEBUG

// CHECK-LABEL: func.func @many_channels(
// CHECK-NEXT: %[[W:.*]] = ge.const
// CHECK-NEXT: %[[T:.*]] = ge.transdata %x {src_format = "ND", dst_format = "NC1HWC0"} : (tensor<1x1152x2x2xf32>) -> tensor<1x1152x2x2xf32, #ge.format<NC1HWC0>>
// CHECK-NEXT: %y = fused.conv2d_bias_act %[[T]], %[[W]] bias %b : (tensor<1x1152x2x2xf32, #ge.format<NC1HWC0>>,
// DEBUG: one kernel ~{{[0-9]+}}, NC1HWC0 input + one kernel ~{{[0-9]+}}{{.*}} cycles: NC1HWC0 input +
func.func @many_channels(%x: tensor<1x1152x2x2xf32>, %b: tensor<192xf32>) -> tensor<1x192x2x2xf32, #ge.format<NC1HWC0>> {
  %w = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.03> : tensor<192x1152x1x1xf32, #ge.format<FRACTAL_Z>>
  %y = fused.conv2d_bias_act %x, %w bias %b : (tensor<1x1152x2x2xf32>, tensor<192x1152x1x1xf32, #ge.format<FRACTAL_Z>>, tensor<192xf32>) -> tensor<1x192x2x2xf32, #ge.format<NC1HWC0>>
  func.return %y : tensor<1x192x2x2xf32, #ge.format<NC1HWC0>>
}

// -----

// CHECK-LABEL: func.func @long_rows(
// CHECK-NOT: ge.transdata
// CHECK: fused.conv2d_bias_act %x, %w bias %b : (tensor<1x32x32x32xf32>,
// DEBUG: one kernel ~{{[0-9]+}}, NC1HWC0 input + one kernel ~{{[0-9]+}}{{.*}} cycles: one kernel
func.func @long_rows(%x: tensor<1x32x32x32xf32>, %b: tensor<16xf32>) -> tensor<1x16x32x32xf32, #ge.format<NC1HWC0>> {
  %w = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.03> : tensor<16x32x1x1xf32, #ge.format<FRACTAL_Z>>
  %y = fused.conv2d_bias_act %x, %w bias %b : (tensor<1x32x32x32xf32>, tensor<16x32x1x1xf32, #ge.format<FRACTAL_Z>>, tensor<16xf32>) -> tensor<1x16x32x32xf32, #ge.format<NC1HWC0>>
  func.return %y : tensor<1x16x32x32xf32, #ge.format<NC1HWC0>>
}

// -----

// An SE block's scaling (a vector group read by the convolution alone) writes
// the NC1HWC0 image itself: the conversion goes inside the group, and is no kernel.
// CHECK-LABEL: func.func @scaled(
// CHECK: %z = fused.group %s, %x : ({{.*}}) -> tensor<1x1152x2x2xf32, #ge.format<NC1HWC0>> {
// CHECK: %[[M:.*]] = ge.mul %g, %v
// CHECK-NEXT: %[[T:.*]] = ge.transdata %[[M]] {src_format = "ND", dst_format = "NC1HWC0"}
// CHECK-NEXT: fused.yield %[[T]] : tensor<1x1152x2x2xf32, #ge.format<NC1HWC0>>
// CHECK-NOT: ge.transdata
// CHECK: %y = fused.conv2d_bias_act %z, %w bias %b : (tensor<1x1152x2x2xf32, #ge.format<NC1HWC0>>,
// DEBUG: one kernel ~{{[0-9]+}}, NC1HWC0 input + one kernel ~{{[0-9]+}}{{.*}} cycles: NC1HWC0 input +
func.func @scaled(%x: tensor<1x1152x2x2xf32>, %s: tensor<1x1152x1x1xf32>, %b: tensor<192xf32>) -> tensor<1x192x2x2xf32, #ge.format<NC1HWC0>> {
  %w = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.03> : tensor<192x1152x1x1xf32, #ge.format<FRACTAL_Z>>
  %z = fused.group %s, %x : (tensor<1x1152x1x1xf32>, tensor<1x1152x2x2xf32>) -> tensor<1x1152x2x2xf32> {
  ^bb0(%a: tensor<1x1152x1x1xf32>, %v: tensor<1x1152x2x2xf32>):
    %g = ge.sigmoid %a : (tensor<1x1152x1x1xf32>) -> tensor<1x1152x1x1xf32>
    %m = ge.mul %g, %v : (tensor<1x1152x1x1xf32>, tensor<1x1152x2x2xf32>) -> tensor<1x1152x2x2xf32>
    fused.yield %m : tensor<1x1152x2x2xf32>
  }
  %y = fused.conv2d_bias_act %z, %w bias %b : (tensor<1x1152x2x2xf32>, tensor<192x1152x1x1xf32, #ge.format<FRACTAL_Z>>, tensor<192xf32>) -> tensor<1x192x2x2xf32, #ge.format<NC1HWC0>>
  func.return %y : tensor<1x192x2x2xf32, #ge.format<NC1HWC0>>
}
