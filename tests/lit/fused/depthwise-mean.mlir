// fused-depthwise-mean: the global average pool of a depthwise convolution's output
// is computed by the convolution's kernel (fused.conv2d_bias_act_mean, results
// (y, mean)) where the estimates make that faster than a pooling kernel of its
// own: an EfficientNet-B0 squeeze-and-excitation block (144 channels of 16x16,
// f32, ascend910). A pool of an ungrouped convolution stays.
// RUN: ge-opt %s --split-input-file --pass-pipeline 'fused-depthwise-mean{hw=ascend910}' | filecheck %s
// RUN: ge-opt %s --split-input-file --pass-pipeline 'fused-depthwise-mean{hw=ascend910 debug=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=DEBUG

// CHECK-LABEL: func.func @se_block(
// CHECK: %h, %p = fused.conv2d_bias_act_mean %x, %w bias %b {pads = [1, 1, 1, 1], groups = 144, act = "silu"} : (tensor<1x144x16x16xf32>, tensor<144x1x3x3xf32>, tensor<144xf32>) -> (tensor<1x144x16x16xf32>, tensor<1x144x1x1xf32>)
// CHECK-NOT: ge.global_avg_pool
// CHECK: %s = ge.mul %p, %h
// DEBUG: [fused-depthwise-mean] ge.global_avg_pool at {{.*}}: pool kernel ~{{[0-9]+}}, means in the depthwise kernel ~{{[0-9]+}} cycles: means in the depthwise kernel
func.func @se_block(%x: tensor<1x144x16x16xf32>, %b: tensor<144xf32>) -> tensor<1x144x16x16xf32> {
  %w = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.3> : tensor<144x1x3x3xf32>
  %h = fused.conv2d_bias_act %x, %w bias %b {pads = [1, 1, 1, 1], groups = 144, act = "silu"} : (tensor<1x144x16x16xf32>, tensor<144x1x3x3xf32>, tensor<144xf32>) -> tensor<1x144x16x16xf32>
  %p = ge.global_avg_pool %h : (tensor<1x144x16x16xf32>) -> tensor<1x144x1x1xf32>
  %s = ge.mul %p, %h : (tensor<1x144x1x1xf32>, tensor<1x144x16x16xf32>) -> tensor<1x144x16x16xf32>
  func.return %s : tensor<1x144x16x16xf32>
}

// -----

// CHECK-LABEL: func.func @ungrouped(
// CHECK: fused.conv2d_bias_act %x, %w
// CHECK: ge.global_avg_pool
func.func @ungrouped(%x: tensor<1x16x8x8xf32>) -> tensor<1x32x1x1xf32> {
  %w = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.3> : tensor<32x16x3x3xf32>
  %h = fused.conv2d_bias_act %x, %w {pads = [1, 1, 1, 1]} : (tensor<1x16x8x8xf32>, tensor<32x16x3x3xf32>) -> tensor<1x32x8x8xf32>
  %p = ge.global_avg_pool %h : (tensor<1x32x8x8xf32>) -> tensor<1x32x1x1xf32>
  func.return %p : tensor<1x32x1x1xf32>
}

// -----

// The dynamo exporter's ReduceMean over the pixels (axes 2 and 3 kept) is the same pool.
// CHECK-LABEL: func.func @reduce_mean(
// CHECK: %h, %p = fused.conv2d_bias_act_mean %x, %w bias %b {pads = [1, 1, 1, 1], groups = 144, act = "silu"}
// CHECK-NOT: ge.reduce_mean
func.func @reduce_mean(%x: tensor<1x144x16x16xf32>, %b: tensor<144xf32>) -> tensor<1x144x1x1xf32> {
  %w = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.3> : tensor<144x1x3x3xf32>
  %h = fused.conv2d_bias_act %x, %w bias %b {pads = [1, 1, 1, 1], groups = 144, act = "silu"} : (tensor<1x144x16x16xf32>, tensor<144x1x3x3xf32>, tensor<144xf32>) -> tensor<1x144x16x16xf32>
  %p = ge.reduce_mean %h {axes = [2, 3]} : (tensor<1x144x16x16xf32>) -> tensor<1x144x1x1xf32>
  func.return %p : tensor<1x144x1x1xf32>
}
