// Named fusions anchored on ge.conv2d (conv2d-bias-act) and ge.batch_matmul
// (batch-matmul: scale and mask), positive and negative.
// RUN: ge-opt %s -p ge-pattern-fuse | filecheck %s

// A ResNet block after BN folding: per-channel bias (bias_add axis 1, or an add
// of shape (O, 1, 1)), relu; the second conv takes the shortcut as its residual.
// CHECK-LABEL: func.func @resnet_block(
// CHECK-NEXT:    %[[A:.*]] = fused.conv2d_bias_act %x, %w1 bias %b1 {pads = [1, 1, 1, 1], act = "relu"} : (tensor<1x4x6x6xf16>, tensor<4x4x3x3xf16>, tensor<4xf16>) -> tensor<1x4x6x6xf16>
// CHECK-NEXT:    %[[B:.*]] = fused.conv2d_bias_act %[[A]], %w2 bias %b2 residual %x {pads = [1, 1, 1, 1], act = "relu"} : (tensor<1x4x6x6xf16>, tensor<4x4x3x3xf16>, tensor<4x1x1xf16>, tensor<1x4x6x6xf16>) -> tensor<1x4x6x6xf16>
// CHECK-NEXT:    func.return %[[B]]
func.func @resnet_block(%x: tensor<1x4x6x6xf16>, %w1: tensor<4x4x3x3xf16>, %b1: tensor<4xf16>, %w2: tensor<4x4x3x3xf16>, %b2: tensor<4x1x1xf16>) -> tensor<1x4x6x6xf16> {
  %0 = ge.conv2d %x, %w1 {pads = [1, 1, 1, 1]} : (tensor<1x4x6x6xf16>, tensor<4x4x3x3xf16>) -> tensor<1x4x6x6xf16>
  %1 = ge.bias_add %0, %b1 {axis = 1} : (tensor<1x4x6x6xf16>, tensor<4xf16>) -> tensor<1x4x6x6xf16>
  %2 = ge.relu %1 : (tensor<1x4x6x6xf16>) -> tensor<1x4x6x6xf16>
  %3 = ge.conv2d %2, %w2 {pads = [1, 1, 1, 1]} : (tensor<1x4x6x6xf16>, tensor<4x4x3x3xf16>) -> tensor<1x4x6x6xf16>
  %4 = ge.add %3, %b2 : (tensor<1x4x6x6xf16>, tensor<4x1x1xf16>) -> tensor<1x4x6x6xf16>
  %5 = ge.add %4, %x : (tensor<1x4x6x6xf16>, tensor<1x4x6x6xf16>) -> tensor<1x4x6x6xf16>
  %6 = ge.relu %5 : (tensor<1x4x6x6xf16>) -> tensor<1x4x6x6xf16>
  func.return %6 : tensor<1x4x6x6xf16>
}

// An unfolded batch_norm is not a bias: the conv stays alone (automatic fusion
// groups it), and so does a bias_add on another axis.
// CHECK-LABEL: func.func @conv_not_fused(
// CHECK-NEXT:    ge.conv2d
// CHECK-NEXT:    ge.batch_norm
// CHECK-NEXT:    ge.conv2d
// CHECK-NEXT:    ge.bias_add
// CHECK-NOT:     fused.
func.func @conv_not_fused(%x: tensor<1x4x6x6xf32>, %w: tensor<4x4x1x1xf32>, %s: tensor<4xf32>, %b6: tensor<6xf32>) -> (tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>) {
  %0 = ge.conv2d %x, %w : (tensor<1x4x6x6xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x6x6xf32>
  %1 = ge.batch_norm %0, %s, %s, %s, %s : (tensor<1x4x6x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x6x6xf32>
  %2 = ge.conv2d %x, %w : (tensor<1x4x6x6xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x6x6xf32>
  %3 = ge.bias_add %2, %b6 {axis = 3} : (tensor<1x4x6x6xf32>, tensor<6xf32>) -> tensor<1x4x6x6xf32>
  func.return %1, %3 : tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>
}

// Scores scaled by a constant (a division counts as its reciprocal) and masked.
// CHECK-LABEL: func.func @scaled_masked_scores(
// CHECK-NEXT:    %[[S:.*]] = fused.batch_matmul %q, %k mask %m {transpose_b = true, scale = 0.25, mask_value = -100.0} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<4x4xi1>) -> tensor<2x4x4xf32>
// CHECK-NEXT:    %[[T:.*]] = fused.batch_matmul %q, %k mask %f {transpose_b = true} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
// CHECK-NEXT:    func.return %[[S]], %[[T]]
func.func @scaled_masked_scores(%q: tensor<2x4x8xf32>, %k: tensor<2x4x8xf32>, %m: tensor<4x4xi1>, %f: tensor<2x4x4xf32>) -> (tensor<2x4x4xf32>, tensor<2x4x4xf32>) {
  %four = ge.const dense<4.0> : tensor<f32>
  %fill = ge.const dense<-100.0> : tensor<1xf32>
  %0 = ge.batch_matmul %q, %k {transpose_b = true} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x4xf32>
  %1 = ge.div %0, %four : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32>
  %2 = ge.where %m, %1, %fill : (tensor<4x4xi1>, tensor<2x4x4xf32>, tensor<1xf32>) -> tensor<2x4x4xf32>
  %3 = ge.batch_matmul %q, %k {transpose_b = true} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x4xf32>
  %4 = ge.add %3, %f : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  func.return %2, %4 : tensor<2x4x4xf32>, tensor<2x4x4xf32>
}

// A constant that is not a splat is no scale, and a divided constant is no
// reciprocal: nothing to fuse.
// CHECK-LABEL: func.func @scores_not_fused(
// CHECK-NEXT:    ge.const
// CHECK-NEXT:    ge.const
// CHECK-NEXT:    ge.batch_matmul
// CHECK-NEXT:    ge.mul
// CHECK-NEXT:    ge.batch_matmul
// CHECK-NEXT:    ge.div
func.func @scores_not_fused(%q: tensor<2x4x8xf32>, %k: tensor<2x8x4xf32>) -> (tensor<2x4x4xf32>, tensor<2x4x4xf32>) {
  %c = ge.const dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %two = ge.const dense<2.0> : tensor<f32>
  %0 = ge.batch_matmul %q, %k : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %1 = ge.mul %0, %c : (tensor<2x4x4xf32>, tensor<4xf32>) -> tensor<2x4x4xf32>
  %2 = ge.batch_matmul %q, %k : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %3 = ge.div %two, %2 : (tensor<f32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  func.return %1, %3 : tensor<2x4x4xf32>, tensor<2x4x4xf32>
}

// Activations as exporters write them become the conv's epilogue: ReLU6 (ONNX
// Clip(0, 6): max then min), SiLU (x * sigmoid(x): the conv result read twice),
// HardSwish (x * min(max(x / 6 + 0.5 ...)) as the importer writes it) and a
// sigmoid.
// CHECK-LABEL: func.func @written_out_activations(
// CHECK-NEXT:    %[[A:.*]] = fused.conv2d_bias_act %x, %w bias %b {pads = [1, 1, 1, 1], act = "relu6"} : (tensor<1x4x6x6xf32>, tensor<4x4x3x3xf32>, tensor<4xf32>) -> tensor<1x4x6x6xf32>
// CHECK-NEXT:    %[[B:.*]] = fused.conv2d_bias_act %[[A]], %dw bias %b {pads = [1, 1, 1, 1], groups = 4, act = "silu"} : (tensor<1x4x6x6xf32>, tensor<4x1x3x3xf32>, tensor<4xf32>) -> tensor<1x4x6x6xf32>
// CHECK-NEXT:    %[[C:.*]] = fused.conv2d_bias_act %[[B]], %w residual %x {pads = [1, 1, 1, 1], act = "hard_swish"} : (tensor<1x4x6x6xf32>, tensor<4x4x3x3xf32>, tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
// CHECK-NEXT:    %[[D:.*]] = fused.conv2d_bias_act %[[C]], %w {pads = [1, 1, 1, 1], act = "sigmoid"} : (tensor<1x4x6x6xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32>
// CHECK-NEXT:    func.return %[[D]]
func.func @written_out_activations(%x: tensor<1x4x6x6xf32>, %w: tensor<4x4x3x3xf32>, %dw: tensor<4x1x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x4x6x6xf32> {
  %zero = ge.const dense<0.0> : tensor<f32>
  %six = ge.const dense<6.0> : tensor<f32>
  %sixth = ge.const dense<0.16666667> : tensor<f32>
  %half = ge.const dense<0.5> : tensor<f32>
  %one = ge.const dense<1.0> : tensor<f32>
  %0 = ge.conv2d %x, %w {pads = [1, 1, 1, 1]} : (tensor<1x4x6x6xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32>
  %1 = ge.bias_add %0, %b {axis = 1} : (tensor<1x4x6x6xf32>, tensor<4xf32>) -> tensor<1x4x6x6xf32>
  %2 = ge.maximum %1, %zero : (tensor<1x4x6x6xf32>, tensor<f32>) -> tensor<1x4x6x6xf32>
  %3 = ge.minimum %2, %six : (tensor<1x4x6x6xf32>, tensor<f32>) -> tensor<1x4x6x6xf32>
  %4 = ge.conv2d %3, %dw {pads = [1, 1, 1, 1], groups = 4} : (tensor<1x4x6x6xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x6x6xf32>
  %5 = ge.bias_add %4, %b {axis = 1} : (tensor<1x4x6x6xf32>, tensor<4xf32>) -> tensor<1x4x6x6xf32>
  %6 = ge.sigmoid %5 : (tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  %7 = ge.mul %5, %6 : (tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  %8 = ge.conv2d %7, %w {pads = [1, 1, 1, 1]} : (tensor<1x4x6x6xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32>
  %9 = ge.add %8, %x : (tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  %10 = ge.mul %9, %sixth : (tensor<1x4x6x6xf32>, tensor<f32>) -> tensor<1x4x6x6xf32>
  %11 = ge.add %10, %half : (tensor<1x4x6x6xf32>, tensor<f32>) -> tensor<1x4x6x6xf32>
  %12 = ge.minimum %11, %one : (tensor<1x4x6x6xf32>, tensor<f32>) -> tensor<1x4x6x6xf32>
  %13 = ge.maximum %12, %zero : (tensor<1x4x6x6xf32>, tensor<f32>) -> tensor<1x4x6x6xf32>
  %14 = ge.mul %9, %13 : (tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  %15 = ge.conv2d %14, %w {pads = [1, 1, 1, 1]} : (tensor<1x4x6x6xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32>
  %16 = ge.sigmoid %15 : (tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  func.return %16 : tensor<1x4x6x6xf32>
}

// Not activations: Clip(0, 5) is no ReLU6 (the conv keeps its bias only), and
// x * sigmoid(x) whose sigmoid is also returned keeps both ops.
// CHECK-LABEL: func.func @not_activations(
// CHECK:         fused.conv2d_bias_act %x, %w bias %b {pads = [1, 1, 1, 1]}
// CHECK-NEXT:    ge.maximum
// CHECK-NEXT:    ge.minimum
// CHECK-NEXT:    ge.conv2d
// CHECK-NEXT:    ge.sigmoid
// CHECK-NEXT:    ge.mul
func.func @not_activations(%x: tensor<1x4x6x6xf32>, %w: tensor<4x4x3x3xf32>, %b: tensor<4xf32>) -> (tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>) {
  %zero = ge.const dense<0.0> : tensor<f32>
  %five = ge.const dense<5.0> : tensor<f32>
  %0 = ge.conv2d %x, %w {pads = [1, 1, 1, 1]} : (tensor<1x4x6x6xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32>
  %1 = ge.bias_add %0, %b {axis = 1} : (tensor<1x4x6x6xf32>, tensor<4xf32>) -> tensor<1x4x6x6xf32>
  %2 = ge.maximum %1, %zero : (tensor<1x4x6x6xf32>, tensor<f32>) -> tensor<1x4x6x6xf32>
  %3 = ge.minimum %2, %five : (tensor<1x4x6x6xf32>, tensor<f32>) -> tensor<1x4x6x6xf32>
  %4 = ge.conv2d %x, %w {pads = [1, 1, 1, 1]} : (tensor<1x4x6x6xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32>
  %5 = ge.sigmoid %4 : (tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  %6 = ge.mul %4, %5 : (tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  func.return %3, %5, %6 : tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>
}

