// Round trip of every fused op, with and without its optional operands:
// custom form -> generic form -> custom form.
// RUN: ge-opt %s | filecheck %s
// RUN: ge-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: ge-opt %s --print-op-generic | ge-opt | filecheck %s

// CHECK-LABEL: func.func @cube(
func.func @cube(%x: tensor<8x16xf16>, %w: tensor<16x32xf16>, %b: tensor<32xf16>, %r: tensor<8x32xf16>, %g: tensor<32xf16>,
                %img: tensor<1x4x6x6xf16>, %k: tensor<8x4x3x3xf16>, %cb: tensor<8xf16>, %cr: tensor<1x8x6x6xf16>,
                %qa: tensor<2x8x4xf16>, %qb: tensor<2x4x8xf16>, %m: tensor<8x8xi1>) {
  // CHECK-NEXT: %0 = fused.matmul_bias_act %x, %w bias %b residual %r {act = "gelu"} : (tensor<8x16xf16>, tensor<16x32xf16>, tensor<32xf16>, tensor<8x32xf16>) -> tensor<8x32xf16>
  // CHECK-NEXT: %1 = fused.matmul_bias_act %x, %w residual %r : (tensor<8x16xf16>, tensor<16x32xf16>, tensor<8x32xf16>) -> tensor<8x32xf16>
  // CHECK-NEXT: %2 = fused.matmul_bias_act %x, %w {act = "silu"} : (tensor<8x16xf16>, tensor<16x32xf16>) -> tensor<8x32xf16>
  // CHECK-NEXT: %3 = fused.conv2d_bias_act %img, %k bias %cb residual %cr {pads = [1, 1, 1, 1], act = "relu"} : (tensor<1x4x6x6xf16>, tensor<8x4x3x3xf16>, tensor<8xf16>, tensor<1x8x6x6xf16>) -> tensor<1x8x6x6xf16>
  // CHECK-NEXT: %4 = fused.conv2d_bias_act %img, %k {strides = [2, 2]} : (tensor<1x4x6x6xf16>, tensor<8x4x3x3xf16>) -> tensor<1x8x2x2xf16>
  // CHECK-NEXT: %5 = fused.batch_matmul %qa, %qb mask %m {scale = 0.125, mask_value = -10000.0} : (tensor<2x8x4xf16>, tensor<2x4x8xf16>, tensor<8x8xi1>) -> tensor<2x8x8xf16>
  // CHECK-NEXT: %6 = fused.batch_matmul %qa, %qa {transpose_b = true, scale = 0.5} : (tensor<2x8x4xf16>, tensor<2x8x4xf16>) -> tensor<2x8x8xf16>
  // CHECK-NEXT: %7 = fused.gated_matmul %x, %w, %w : (tensor<8x16xf16>, tensor<16x32xf16>, tensor<16x32xf16>) -> tensor<8x32xf16>
  // CHECK-NEXT: %8 = fused.gated_matmul %x, %w, %w {act = "gelu_tanh"} : (tensor<8x16xf16>, tensor<16x32xf16>, tensor<16x32xf16>) -> tensor<8x32xf16>
  // CHECK-NEXT: %9, %10 = fused.matmul_add_layer_norm %x, %w, %r, %g, %b bias %b {epsilon = 1.0e-12} : (tensor<8x16xf16>, tensor<16x32xf16>, tensor<8x32xf16>, tensor<32xf16>, tensor<32xf16>, tensor<32xf16>) -> (tensor<8x32xf16>, tensor<8x32xf16>)
  // CHECK-NEXT: %11, %12 = fused.matmul_add_rms_norm %x, %w, %r, %g : (tensor<8x16xf16>, tensor<16x32xf16>, tensor<8x32xf16>, tensor<32xf16>) -> (tensor<8x32xf16>, tensor<8x32xf16>)
  // GENERIC: "fused.matmul_bias_act"(%x, %w, %b, %r) <{act = "gelu", operandSegmentSizes = array<i32: 1, 1, 1, 1>
  // GENERIC: "fused.matmul_bias_act"(%x, %w, %r) <{{{.*}}operandSegmentSizes = array<i32: 1, 1, 0, 1>
  // GENERIC: "fused.conv2d_bias_act"(%img, %k, %cb, %cr) <{
  // GENERIC: "fused.batch_matmul"(%qa, %qb, %m) <{
  // GENERIC: "fused.gated_matmul"(%x, %w, %w) <{
  // GENERIC: "fused.matmul_add_layer_norm"(%x, %w, %r, %g, %b, %b) <{
  // GENERIC: "fused.matmul_add_rms_norm"(%x, %w, %r, %g) <{
  %0 = fused.matmul_bias_act %x, %w bias %b residual %r {act = "gelu"} : (tensor<8x16xf16>, tensor<16x32xf16>, tensor<32xf16>, tensor<8x32xf16>) -> tensor<8x32xf16>
  %1 = fused.matmul_bias_act %x, %w residual %r {act = "none"} : (tensor<8x16xf16>, tensor<16x32xf16>, tensor<8x32xf16>) -> tensor<8x32xf16>
  %2 = fused.matmul_bias_act %x, %w {act = "silu"} : (tensor<8x16xf16>, tensor<16x32xf16>) -> tensor<8x32xf16>
  %3 = fused.conv2d_bias_act %img, %k bias %cb residual %cr {pads = [1, 1, 1, 1], act = "relu"} : (tensor<1x4x6x6xf16>, tensor<8x4x3x3xf16>, tensor<8xf16>, tensor<1x8x6x6xf16>) -> tensor<1x8x6x6xf16>
  %4 = fused.conv2d_bias_act %img, %k {strides = [2, 2]} : (tensor<1x4x6x6xf16>, tensor<8x4x3x3xf16>) -> tensor<1x8x2x2xf16>
  %5 = fused.batch_matmul %qa, %qb mask %m {scale = 0.125, mask_value = -1.0e4} : (tensor<2x8x4xf16>, tensor<2x4x8xf16>, tensor<8x8xi1>) -> tensor<2x8x8xf16>
  %6 = fused.batch_matmul %qa, %qa {transpose_b = true, scale = 0.5} : (tensor<2x8x4xf16>, tensor<2x8x4xf16>) -> tensor<2x8x8xf16>
  %7 = fused.gated_matmul %x, %w, %w : (tensor<8x16xf16>, tensor<16x32xf16>, tensor<16x32xf16>) -> tensor<8x32xf16>
  %8 = fused.gated_matmul %x, %w, %w {act = "gelu_tanh"} : (tensor<8x16xf16>, tensor<16x32xf16>, tensor<16x32xf16>) -> tensor<8x32xf16>
  %9, %10 = fused.matmul_add_layer_norm %x, %w, %r, %g, %b bias %b {epsilon = 1.0e-12} : (tensor<8x16xf16>, tensor<16x32xf16>, tensor<8x32xf16>, tensor<32xf16>, tensor<32xf16>, tensor<32xf16>) -> (tensor<8x32xf16>, tensor<8x32xf16>)
  %11, %12 = fused.matmul_add_rms_norm %x, %w, %r, %g : (tensor<8x16xf16>, tensor<16x32xf16>, tensor<8x32xf16>, tensor<32xf16>) -> (tensor<8x32xf16>, tensor<8x32xf16>)
  func.return
}

// CHECK-LABEL: func.func @split_k(
func.func @split_k(%x: tensor<8x64xf16>, %w: tensor<64x32xf16>, %r: tensor<8x32xf16>, %g: tensor<32xf16>, %b: tensor<32xf16>) {
  // CHECK-NEXT: %p = fused.matmul_partials %x, %w {splits = 4} : (tensor<8x64xf16>, tensor<64x32xf16>) -> tensor<4x8x32xf32>
  // CHECK-NEXT: %y, %s = fused.partials_add_layer_norm %p, %r, %g, %b bias %b {epsilon = 1.0e-12} : (tensor<4x8x32xf32>, tensor<8x32xf16>, tensor<32xf16>, tensor<32xf16>, tensor<32xf16>) -> (tensor<8x32xf16>, tensor<8x32xf16>)
  // CHECK-NEXT: %y2, %s2 = fused.partials_add_rms_norm %p, %r, %g : (tensor<4x8x32xf32>, tensor<8x32xf16>, tensor<32xf16>) -> (tensor<8x32xf16>, tensor<8x32xf16>)
  // CHECK-NEXT: %z = fused.partials_bias_act %p bias %b residual %r {act = "gelu"} : (tensor<4x8x32xf32>, tensor<32xf16>, tensor<8x32xf16>) -> tensor<8x32xf16>
  // GENERIC: "fused.matmul_partials"(%x, %w) <{
  // GENERIC: "fused.partials_add_layer_norm"(%p, %r, %g, %b, %b) <{
  %p = fused.matmul_partials %x, %w {splits = 4} : (tensor<8x64xf16>, tensor<64x32xf16>) -> tensor<4x8x32xf32>
  %y, %s = fused.partials_add_layer_norm %p, %r, %g, %b bias %b {epsilon = 1.0e-12} : (tensor<4x8x32xf32>, tensor<8x32xf16>, tensor<32xf16>, tensor<32xf16>, tensor<32xf16>) -> (tensor<8x32xf16>, tensor<8x32xf16>)
  %y2, %s2 = fused.partials_add_rms_norm %p, %r, %g : (tensor<4x8x32xf32>, tensor<8x32xf16>, tensor<32xf16>) -> (tensor<8x32xf16>, tensor<8x32xf16>)
  %z = fused.partials_bias_act %p bias %b residual %r {act = "gelu"} : (tensor<4x8x32xf32>, tensor<32xf16>, tensor<8x32xf16>) -> tensor<8x32xf16>
  func.return
}

// CHECK-LABEL: func.func @split_k_conv(
func.func @split_k_conv(%x: tensor<1x64x7x7xf32>, %w: tensor<32x64x1x1xf32>, %b: tensor<32xf32>, %r: tensor<1x32x7x7xf32>) {
  // CHECK-NEXT: %p = fused.conv2d_partials %x, %w {splits = 4} : (tensor<1x64x7x7xf32>, tensor<32x64x1x1xf32>) -> tensor<4x32x7x7xf32>
  // CHECK-NEXT: %y = fused.conv_partials_bias_act %p bias %b residual %r {act = "relu"} : (tensor<4x32x7x7xf32>, tensor<32xf32>, tensor<1x32x7x7xf32>) -> tensor<1x32x7x7xf32>
  // GENERIC: "fused.conv2d_partials"(%x, %w) <{
  // GENERIC: "fused.conv_partials_bias_act"(%p, %b, %r) <{
  %p = fused.conv2d_partials %x, %w {splits = 4} : (tensor<1x64x7x7xf32>, tensor<32x64x1x1xf32>) -> tensor<4x32x7x7xf32>
  %y = fused.conv_partials_bias_act %p bias %b residual %r {act = "relu"} : (tensor<4x32x7x7xf32>, tensor<32xf32>, tensor<1x32x7x7xf32>) -> tensor<1x32x7x7xf32>
  func.return
}

// CHECK-LABEL: func.func @vector(
func.func @vector(%x: tensor<4x8xf32>, %r: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>, %m: tensor<4x8xf32>, %bm: tensor<8xi1>) {
  // CHECK-NEXT: %y, %s = fused.add_layer_norm %x, %r, %g, %b {epsilon = 1.0e-06} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  // CHECK-NEXT: %y2, %s2 = fused.add_rms_norm %x, %r, %g {axis = 1} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  // CHECK-NEXT: %p = fused.softmax %x mask %m {scale = 0.5, dropout = 0.1} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK-NEXT: %p2 = fused.softmax %x mask %bm {mask_value = -1000.0} : (tensor<4x8xf32>, tensor<8xi1>) -> tensor<4x8xf32>
  // CHECK-NEXT: %p3 = fused.softmax %x {axis = 0} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK-NEXT: %sw = fused.swiglu %x, %r : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // GENERIC: "fused.add_layer_norm"(%x, %r, %g, %b)
  // GENERIC: "fused.add_rms_norm"(%x, %r, %g)
  // GENERIC: "fused.softmax"(%x, %m) <{
  // GENERIC: "fused.swiglu"(%x, %r)
  %y, %s = fused.add_layer_norm %x, %r, %g, %b {epsilon = 1.0e-6} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  %y2, %s2 = fused.add_rms_norm %x, %r, %g {axis = 1} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  %p = fused.softmax %x mask %m {scale = 0.5, dropout = 0.1} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %p2 = fused.softmax %x mask %bm {mask_value = -1000.0} : (tensor<4x8xf32>, tensor<8xi1>) -> tensor<4x8xf32>
  %p3 = fused.softmax %x {axis = 0} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %sw = fused.swiglu %x, %r : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return
}

// CHECK-LABEL: func.func @attention(
func.func @attention(%q: tensor<2x8x4xf16>, %k: tensor<2x6x4xf16>, %v: tensor<2x6x5xf16>, %m: tensor<8x6xi1>,
                     %qs: tensor<8x12xf16>, %ks: tensor<6x12xf16>, %vs: tensor<6x6xf16>, %fm: tensor<3x8x6xf16>) {
  // CHECK-NEXT: %0 = fused.flash_attention %q, %k, %v mask %m {scale = 0.5, mask_value = -10000.0} : (tensor<2x8x4xf16>, tensor<2x6x4xf16>, tensor<2x6x5xf16>, tensor<8x6xi1>) -> tensor<2x8x5xf16>
  // CHECK-NEXT: %1 = fused.flash_attention %qs, %ks, %vs mask %fm {layout = "BSH", num_heads = 3, dropout = 0.1} : (tensor<8x12xf16>, tensor<6x12xf16>, tensor<6x6xf16>, tensor<3x8x6xf16>) -> tensor<8x6xf16>
  // GENERIC: "fused.flash_attention"(%q, %k, %v, %m) <{
  %0 = fused.flash_attention %q, %k, %v mask %m {scale = 0.5, mask_value = -1.0e4} : (tensor<2x8x4xf16>, tensor<2x6x4xf16>, tensor<2x6x5xf16>, tensor<8x6xi1>) -> tensor<2x8x5xf16>
  %1 = fused.flash_attention %qs, %ks, %vs mask %fm {layout = "BSH", num_heads = 3, dropout = 0.1} : (tensor<8x12xf16>, tensor<6x12xf16>, tensor<6x6xf16>, tensor<3x8x6xf16>) -> tensor<8x6xf16>
  func.return
}

// CHECK-LABEL: func.func @group(
func.func @group(%x: tensor<4x8xf16>, %b: tensor<8xf16>) -> (tensor<4x8xf16>, tensor<4x8xf16>) {
  // CHECK-NEXT: %r, %r_1 = fused.group %x, %b : (tensor<4x8xf16>, tensor<8xf16>) -> (tensor<4x8xf16>, tensor<4x8xf16>) {
  // CHECK-NEXT: ^bb0(%a: tensor<4x8xf16>, %c: tensor<8xf16>):
  // CHECK-NEXT:   %two = ge.const dense<2.000000e+00> : tensor<f16>
  // CHECK-NEXT:   %0 = ge.add %a, %c : (tensor<4x8xf16>, tensor<8xf16>) -> tensor<4x8xf16>
  // CHECK-NEXT:   %1 = ge.mul %0, %two : (tensor<4x8xf16>, tensor<f16>) -> tensor<4x8xf16>
  // CHECK-NEXT:   fused.yield %0, %1 : tensor<4x8xf16>, tensor<4x8xf16>
  // CHECK-NEXT: }
  // CHECK-NEXT: %e = fused.group : () -> tensor<2xf32> {
  // CHECK-NEXT:   %c = ge.const dense<1.000000e+00> : tensor<2xf32>
  // CHECK-NEXT:   %n = ge.neg %c : (tensor<2xf32>) -> tensor<2xf32>
  // CHECK-NEXT:   fused.yield %n : tensor<2xf32>
  // CHECK-NEXT: }
  // GENERIC: "fused.group"(%x, %b) ({
  // GENERIC: "fused.yield"(%{{.*}}, %{{.*}}) : (tensor<4x8xf16>, tensor<4x8xf16>) -> ()
  %r:2 = fused.group %x, %b : (tensor<4x8xf16>, tensor<8xf16>) -> (tensor<4x8xf16>, tensor<4x8xf16>) {
  ^bb0(%a: tensor<4x8xf16>, %c: tensor<8xf16>):
    %two = ge.const dense<2.0> : tensor<f16>
    %0 = ge.add %a, %c : (tensor<4x8xf16>, tensor<8xf16>) -> tensor<4x8xf16>
    %1 = ge.mul %0, %two : (tensor<4x8xf16>, tensor<f16>) -> tensor<4x8xf16>
    fused.yield %0, %1 : tensor<4x8xf16>, tensor<4x8xf16>
  }
  %e = fused.group : () -> tensor<2xf32> {
    %c = ge.const dense<1.0> : tensor<2xf32>
    %n = ge.neg %c : (tensor<2xf32>) -> tensor<2xf32>
    fused.yield %n : tensor<2xf32>
  }
  func.return %r#0, %r#1 : tensor<4x8xf16>, tensor<4x8xf16>
}
