// Pattern and automatic fusion make only kernels the NPU lowering builds: the
// fused op reads a format change's source only where its kernel reads that
// format, and a group no kernel runs is not formed (issue 34). The numbers
// are checked in tests/unit/test_lowering_regressions.py.
// RUN: ge-opt %s --split-input-file -p 'ge-graph-opt,ge-fuse' | filecheck %s
// RUN: ge-opt %s --split-input-file -p 'ge-graph-opt,ge-fuse{hw=tiny}' | filecheck %s

// A depthwise convolution after a convolution: the first conv writes NC1HWC0,
// which the depthwise one reads as it is (its vector kernel takes channels
// along the lanes of C0 blocks), with no conversion between them.
// CHECK-LABEL: func.func @depthwise
// CHECK-NOT:     src_format = "NC1HWC0", dst_format = "ND"
// CHECK:         fused.conv2d_bias_act %{{.*}}, %w bias %b {pads = [1, 1, 1, 1], groups = 16} : (tensor<1x16x8x8xf32, #ge.format<NC1HWC0>>, tensor<16x1x3x3xf32>,
func.func @depthwise(%x: tensor<1x3x8x8xf32>) -> tensor<1x16x8x8xf32> {
  %w0 = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.3> : tensor<16x3x3x3xf32>
  %c0 = ge.conv2d %x, %w0 {pads = [1, 1, 1, 1]} : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x8x8xf32>
  %lo = ge.const dense<0.0> : tensor<f32>
  %r0 = ge.maximum %c0, %lo : (tensor<1x16x8x8xf32>, tensor<f32>) -> tensor<1x16x8x8xf32>
  %w = ge.const #ge.random<normal, seed = 2, mean = 0.0, std = 0.3> : tensor<16x1x3x3xf32>
  %b = ge.const #ge.random<normal, seed = 3, mean = 0.0, std = 0.1> : tensor<16xf32>
  %y = ge.conv2d %r0, %w {pads = [1, 1, 1, 1], groups = 16} : (tensor<1x16x8x8xf32>, tensor<16x1x3x3xf32>) -> tensor<1x16x8x8xf32>
  %yb = ge.bias_add %y, %b {axis = 1} : (tensor<1x16x8x8xf32>, tensor<16xf32>) -> tensor<1x16x8x8xf32>
  return %yb : tensor<1x16x8x8xf32>
}

// -----

// A pre-norm residual LayerNorm(x + batched MatMul): add_layer_norm's row kernel
// broadcasts ND operands only, so it reads the product in ND.
// CHECK-LABEL: func.func @pre_norm
// CHECK:         fused.add_layer_norm %x, %{{.*}}, %g, %b : (tensor<2x32x48xf16>, tensor<2x32x48xf16>, tensor<48xf16>, tensor<48xf16>)
func.func @pre_norm(%x: tensor<2x32x48xf16>, %a: tensor<2x32x48xf16>) -> tensor<2x32x48xf16> {
  %w = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.1> : tensor<2x48x48xf16>
  %m = ge.batch_matmul %a, %w : (tensor<2x32x48xf16>, tensor<2x48x48xf16>) -> tensor<2x32x48xf16>
  %s = ge.add %x, %m : (tensor<2x32x48xf16>, tensor<2x32x48xf16>) -> tensor<2x32x48xf16>
  %g = ge.const #ge.random<uniform, seed = 2, low = 0.9, high = 1.1> : tensor<48xf16>
  %b = ge.const #ge.random<uniform, seed = 3, low = -0.1, high = 0.1> : tensor<48xf16>
  %n = ge.layer_norm %s, %g, %b {epsilon = 1.0e-05, axis = -1} : (tensor<2x32x48xf16>, tensor<48xf16>, tensor<48xf16>) -> tensor<2x32x48xf16>
  return %n : tensor<2x32x48xf16>
}

// -----

// A conv times a constant of its output shape: no cube group kernel reads an
// NC1HWC0 epilogue operand, so the conv and the mul stay two kernels.
// CHECK-LABEL: func.func @conv_times_constant
// CHECK-NOT:     fused.group
// CHECK:         ge.conv2d
// CHECK:         ge.mul
func.func @conv_times_constant(%x: tensor<1x4x10x10xf32>) -> tensor<1x8x8x8xf32> {
  %w = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.1> : tensor<8x4x3x3xf32>
  %y = ge.conv2d %x, %w : (tensor<1x4x10x10xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x8x8xf32>
  %c = ge.const #ge.random<normal, seed = 2, mean = 0.0, std = 1.0> : tensor<1x8x8x8xf32>
  %z = ge.mul %y, %c : (tensor<1x8x8x8xf32>, tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  return %z : tensor<1x8x8x8xf32>
}
