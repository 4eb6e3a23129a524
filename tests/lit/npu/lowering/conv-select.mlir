// Convolution kernels chosen by cost (templates/conv_select.py): every
// implementation is estimated or says why it does not apply, the fastest legal
// one is built, and debug=true prints the choice. The numbers are checked in
// tests/unit/test_conv_algorithms.py.
// RUN: ge-opt %s --split-input-file -p 'ge-compile{hw=tiny debug=true}' 2>&1 >/dev/null | filecheck %s

// A depthwise 3x3 convolution: on the vector unit (the cube would multiply
// 1-channel blocks of zeros), reading the NC1HWC0 the 1x1 convolution before it
// writes; that 1x1 convolution reads the graph's NCHW input as the (C x P) operand
// of a GEMM.
// CHECK-LABEL: conv 1x16x10x10 -> 16x10x10, window 1x1, strides [1, 1], dilations [1, 1], groups 1:
// CHECK-SAME:    depthwise-vector not legal: not depthwise
// CHECK-SAME:    gemm-1x1 estimated {{[0-9]+}} cycles (chosen)
// CHECK-SAME:    img2col estimated {{[0-9]+}} cycles
// CHECK:       conv 1x16x10x10 -> 16x10x10, window 3x3, strides [1, 1], dilations [1, 1], groups 16:
// CHECK-SAME:    depthwise-vector estimated {{[0-9]+}} cycles (chosen)
// CHECK-SAME:    gemm-1x1 not legal: a 3x3 window (a GEMM needs 1x1)
// CHECK-SAME:    img2col not legal: groups of 1 channels in an NC1HWC0 input
// CHECK:       depthwise conv 3x3 (vector unit, 9 instructions per tile)
func.func @main(%x: tensor<1x16x10x10xf32> {ge.name = "x"}) -> (tensor<1x16x10x10xf32> {ge.name = "y"}) {
  %w0 = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.3> : tensor<16x16x1x1xf32>
  %w = ge.const #ge.random<normal, seed = 2, mean = 0.0, std = 0.3> : tensor<16x1x3x3xf32>
  %a = ge.conv2d %x, %w0 : (tensor<1x16x10x10xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x10x10xf32>
  %r = ge.relu %a : (tensor<1x16x10x10xf32>) -> tensor<1x16x10x10xf32>
  %d = ge.conv2d %r, %w {pads = [1, 1, 1, 1], groups = 16} : (tensor<1x16x10x10xf32>, tensor<16x1x3x3xf32>) -> tensor<1x16x10x10xf32>
  %o = ge.relu %d : (tensor<1x16x10x10xf32>) -> tensor<1x16x10x10xf32>
  func.return %o : tensor<1x16x10x10xf32>
}

// -----

// A 1x1 stride-1 convolution of the NC1HWC0 a 3x3 convolution writes: a GEMM whose
// A is that input as it is in GM, estimated faster than gathering it through UB;
// the 3x3 convolution is img2col.
// CHECK-LABEL: conv 1x16x8x8 -> 16x8x8, window 3x3, strides [1, 1], dilations [1, 1], groups 1:
// CHECK-SAME:    depthwise-vector not legal
// CHECK-SAME:    gemm-1x1 not legal: a 3x3 window
// CHECK-SAME:    img2col estimated {{[0-9]+}} cycles (chosen)
// CHECK:       conv 1x16x8x8 -> 32x8x8, window 1x1, strides [1, 1], dilations [1, 1], groups 1:
// CHECK-SAME:    gemm-1x1 estimated {{[0-9]+}} cycles (chosen)
// CHECK-SAME:    img2col estimated {{[0-9]+}} cycles
func.func @main(%x: tensor<1x16x8x8xf32> {ge.name = "x"}) -> (tensor<1x32x8x8xf32> {ge.name = "y"}) {
  %w0 = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.3> : tensor<16x16x3x3xf32>
  %w = ge.const #ge.random<normal, seed = 2, mean = 0.0, std = 0.3> : tensor<32x16x1x1xf32>
  %a = ge.conv2d %x, %w0 {pads = [1, 1, 1, 1]} : (tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x8x8xf32>
  %r = ge.relu %a : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %c = ge.conv2d %r, %w : (tensor<1x16x8x8xf32>, tensor<32x16x1x1xf32>) -> tensor<1x32x8x8xf32>
  func.return %c : tensor<1x32x8x8xf32>
}

// -----

// A 1x1 stride-2 convolution (a ResNet downsample) between two NC1HWC0 tensors: the
// product over the pixels it reads, staged GM -> L1 by strided copies, estimated
// faster than img2col's slabs; the others say why it is not theirs.
// CHECK-LABEL: conv 1x16x8x8 -> 16x8x8, window 3x3, strides [1, 1], dilations [1, 1], groups 1:
// CHECK-SAME:    strided-1x1 not legal: a 3x3 window, strides [1, 1], pads [1, 1, 1, 1]
// CHECK-SAME:    img2col estimated {{[0-9]+}} cycles (chosen)
// CHECK:       conv 1x16x8x8 -> 32x4x4, window 1x1, strides [2, 2], dilations [1, 1], groups 1:
// CHECK-SAME:    gemm-1x1 not legal: strides [2, 2] and pads [0, 0, 0, 0]
// CHECK-SAME:    strided-1x1 estimated {{[0-9]+}} cycles (chosen)
// CHECK-SAME:    img2col estimated {{[0-9]+}} cycles
// CHECK:       conv 1x32x4x4 -> 16x4x4, window 1x1, strides [1, 1], dilations [1, 1], groups 1:
// CHECK-SAME:    gemm-1x1 estimated {{[0-9]+}} cycles (chosen)
// CHECK-SAME:    strided-1x1 not legal: a 1x1 window, strides [1, 1]
func.func @main(%x: tensor<1x16x8x8xf32> {ge.name = "x"}) -> (tensor<1x16x4x4xf32> {ge.name = "y"}) {
  %w0 = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.3> : tensor<16x16x3x3xf32>
  %w = ge.const #ge.random<normal, seed = 2, mean = 0.0, std = 0.3> : tensor<32x16x1x1xf32>
  %w2 = ge.const #ge.random<normal, seed = 3, mean = 0.0, std = 0.3> : tensor<16x32x1x1xf32>
  %a = ge.conv2d %x, %w0 {pads = [1, 1, 1, 1]} : (tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x8x8xf32>
  %r = ge.relu %a : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %c = ge.conv2d %r, %w {strides = [2, 2]} : (tensor<1x16x8x8xf32>, tensor<32x16x1x1xf32>) -> tensor<1x32x4x4xf32>
  %s = ge.relu %c : (tensor<1x32x4x4xf32>) -> tensor<1x32x4x4xf32>
  %d = ge.conv2d %s, %w2 : (tensor<1x32x4x4xf32>, tensor<16x32x1x1xf32>) -> tensor<1x16x4x4xf32>
  func.return %d : tensor<1x16x4x4xf32>
}
