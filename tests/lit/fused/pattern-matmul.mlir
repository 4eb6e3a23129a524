// Named fusions anchored on ge.matmul: matmul-bias-act, matmul-add-norm and
// gated-matmul, positive and negative.
// RUN: ge-opt %s -p ge-pattern-fuse | filecheck %s
// RUN: ge-opt %s -p 'ge-pattern-fuse{debug=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=DEBUG

// Bias as ge.add of shape (N) and a GELU: one fused op, the intermediates gone.
// CHECK-LABEL: func.func @bias_gelu(
// CHECK-NEXT:    %[[Y:.*]] = fused.matmul_bias_act %x, %w bias %b {act = "gelu"} : (tensor<4x8xf16>, tensor<8x16xf16>, tensor<16xf16>) -> tensor<4x16xf16>
// CHECK-NEXT:    func.return %[[Y]]
// DEBUG: matmul-bias-act: ge.matmul, ge.add, ge.gelu -> fused.matmul_bias_act
func.func @bias_gelu(%x: tensor<4x8xf16>, %w: tensor<8x16xf16>, %b: tensor<16xf16>) -> tensor<4x16xf16> {
  %0 = ge.matmul %x, %w : (tensor<4x8xf16>, tensor<8x16xf16>) -> tensor<4x16xf16>
  %1 = ge.add %0, %b : (tensor<4x16xf16>, tensor<16xf16>) -> tensor<4x16xf16>
  %2 = ge.gelu %1 : (tensor<4x16xf16>) -> tensor<4x16xf16>
  func.return %2 : tensor<4x16xf16>
}

// ge.bias_add, a dropout (identity at inference), a residual in any operand
// order, then the activation; transpose flags are kept.
// CHECK-LABEL: func.func @bias_dropout_residual_relu(
// CHECK-NEXT:    %[[Y:.*]] = fused.matmul_bias_act %x, %w bias %b residual %r {transpose_b = true, act = "relu"}
// CHECK-NEXT:    func.return %[[Y]]
func.func @bias_dropout_residual_relu(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>, %r: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %0 = ge.matmul %x, %w {transpose_b = true} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %1 = ge.bias_add %0, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %2 = ge.dropout %1 {ratio = 0.1} : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %3 = ge.add %r, %2 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %4 = ge.relu %3 : (tensor<4x16xf32>) -> tensor<4x16xf32>
  func.return %4 : tensor<4x16xf32>
}

// An intermediate with another user ends the chain: the bias add is fused,
// its value stays available, the relu is not absorbed.
// CHECK-LABEL: func.func @intermediate_has_another_user(
// CHECK-NEXT:    %[[B:.*]] = fused.matmul_bias_act %x, %w bias %b : (
// CHECK-NEXT:    %[[R:.*]] = ge.relu %[[B]]
// CHECK-NEXT:    func.return %[[R]], %[[B]]
func.func @intermediate_has_another_user(%x: tensor<4x8xf16>, %w: tensor<8x16xf16>, %b: tensor<16xf16>) -> (tensor<4x16xf16>, tensor<4x16xf16>) {
  %0 = ge.matmul %x, %w : (tensor<4x8xf16>, tensor<8x16xf16>) -> tensor<4x16xf16>
  %1 = ge.add %0, %b : (tensor<4x16xf16>, tensor<16xf16>) -> tensor<4x16xf16>
  %2 = ge.relu %1 : (tensor<4x16xf16>) -> tensor<4x16xf16>
  func.return %2, %1 : tensor<4x16xf16>, tensor<4x16xf16>
}

// The product itself used twice, or an add that would grow the result
// (shape not supported), or an activation the fused op has no name for: no fusion.
// CHECK-LABEL: func.func @not_fused(
// CHECK-NEXT:    ge.matmul
// CHECK-NEXT:    ge.relu
// CHECK-NEXT:    ge.matmul
// CHECK-NEXT:    ge.add
// CHECK-NEXT:    ge.matmul
// CHECK-NEXT:    ge.tanh
// CHECK-NOT:     fused.
func.func @not_fused(%x: tensor<4x8xf16>, %w: tensor<8x16xf16>, %g: tensor<3x4x16xf16>) -> (tensor<4x16xf16>, tensor<4x16xf16>, tensor<3x4x16xf16>, tensor<4x16xf16>) {
  %0 = ge.matmul %x, %w : (tensor<4x8xf16>, tensor<8x16xf16>) -> tensor<4x16xf16>
  %1 = ge.relu %0 : (tensor<4x16xf16>) -> tensor<4x16xf16>
  %2 = ge.matmul %x, %w : (tensor<4x8xf16>, tensor<8x16xf16>) -> tensor<4x16xf16>
  %3 = ge.add %2, %g : (tensor<4x16xf16>, tensor<3x4x16xf16>) -> tensor<3x4x16xf16>
  %4 = ge.matmul %x, %w : (tensor<4x8xf16>, tensor<8x16xf16>) -> tensor<4x16xf16>
  %5 = ge.tanh %4 : (tensor<4x16xf16>) -> tensor<4x16xf16>
  func.return %1, %0, %3, %5 : tensor<4x16xf16>, tensor<4x16xf16>, tensor<3x4x16xf16>, tensor<4x16xf16>
}

// A format change back to ND after the product is written by the cube directly;
// the fused op reads its operand through the ND -> NZ change, which goes away.
// CHECK-LABEL: func.func @through_transdata(
// CHECK-NEXT:    %[[Y:.*]] = fused.matmul_bias_act %x, %w bias %b : (tensor<32x16xf16>, tensor<16x16xf16, #ge.format<FRACTAL_NZ>>, tensor<16xf16>) -> tensor<32x16xf16>
// CHECK-NEXT:    func.return %[[Y]]
func.func @through_transdata(%x: tensor<32x16xf16>, %w: tensor<16x16xf16, #ge.format<FRACTAL_NZ>>, %b: tensor<16xf16>) -> tensor<32x16xf16> {
  %x_nz = ge.transdata %x {src_format = "ND", dst_format = "FRACTAL_NZ"} : (tensor<32x16xf16>) -> tensor<32x16xf16, #ge.format<FRACTAL_NZ>>
  %0 = ge.matmul %x_nz, %w : (tensor<32x16xf16, #ge.format<FRACTAL_NZ>>, tensor<16x16xf16, #ge.format<FRACTAL_NZ>>) -> tensor<32x16xf16, #ge.format<FRACTAL_NZ>>
  %1 = ge.add %0, %b : (tensor<32x16xf16, #ge.format<FRACTAL_NZ>>, tensor<16xf16>) -> tensor<32x16xf16, #ge.format<FRACTAL_NZ>>
  %2 = ge.transdata %1 {src_format = "FRACTAL_NZ", dst_format = "ND"} : (tensor<32x16xf16, #ge.format<FRACTAL_NZ>>) -> tensor<32x16xf16>
  func.return %2 : tensor<32x16xf16>
}

// Bias + residual + layer_norm over the last axis: matmul-add-norm, which also
// returns the sum for the later residual user.
// CHECK-LABEL: func.func @add_layer_norm_epilogue(
// CHECK-NEXT:    %[[Y:.*]], %[[S:.*]] = fused.matmul_add_layer_norm %x, %w, %r, %g, %beta bias %b {epsilon = 1.0e-12} : ({{.*}}) -> (tensor<4x16xf16>, tensor<4x16xf16>)
// CHECK-NEXT:    %[[T:.*]] = ge.mul %[[S]], %[[Y]]
// CHECK-NEXT:    func.return %[[T]]
// DEBUG: matmul-add-norm: ge.matmul, ge.add, ge.add, ge.layer_norm -> fused.matmul_add_layer_norm
func.func @add_layer_norm_epilogue(%x: tensor<4x8xf16>, %w: tensor<8x16xf16>, %b: tensor<16xf16>, %r: tensor<4x16xf16>, %g: tensor<16xf16>, %beta: tensor<16xf16>) -> tensor<4x16xf16> {
  %0 = ge.matmul %x, %w : (tensor<4x8xf16>, tensor<8x16xf16>) -> tensor<4x16xf16>
  %1 = ge.add %0, %b : (tensor<4x16xf16>, tensor<16xf16>) -> tensor<4x16xf16>
  %2 = ge.add %1, %r : (tensor<4x16xf16>, tensor<4x16xf16>) -> tensor<4x16xf16>
  %3 = ge.layer_norm %2, %g, %beta {epsilon = 1.0e-12} : (tensor<4x16xf16>, tensor<16xf16>, tensor<16xf16>) -> tensor<4x16xf16>
  %4 = ge.mul %2, %3 : (tensor<4x16xf16>, tensor<4x16xf16>) -> tensor<4x16xf16>
  func.return %4 : tensor<4x16xf16>
}

// A residual then rms_norm (no bias): matmul_add_rms_norm.
// CHECK-LABEL: func.func @add_rms_norm_epilogue(
// CHECK-NEXT:    %{{.*}}, %{{.*}} = fused.matmul_add_rms_norm %x, %w, %r, %g {epsilon = 1.0e-06}
// CHECK-NEXT:    func.return
func.func @add_rms_norm_epilogue(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %r: tensor<4x16xf32>, %g: tensor<16xf32>) -> tensor<4x16xf32> {
  %0 = ge.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %1 = ge.add %r, %0 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %2 = ge.rms_norm %1, %g {epsilon = 1.0e-6} : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  func.return %2 : tensor<4x16xf32>
}

// A norm not over the last axis alone, or no residual: plain matmul-bias-act and
// the norm stays.
// CHECK-LABEL: func.func @norm_not_fused(
// CHECK-NEXT:    %[[A:.*]] = fused.matmul_bias_act %x, %w residual %r :
// CHECK-NEXT:    ge.layer_norm %[[A]], %g2, %b2 {axis = 0}
// CHECK-NEXT:    %[[B:.*]] = fused.matmul_bias_act %x, %w bias %b :
// CHECK-NEXT:    ge.layer_norm %[[B]], %g, %b :
func.func @norm_not_fused(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %r: tensor<4x16xf32>, %g2: tensor<4x16xf32>, %b2: tensor<4x16xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %0 = ge.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %1 = ge.add %0, %r : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %2 = ge.layer_norm %1, %g2, %b2 {axis = 0} : (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %3 = ge.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %4 = ge.add %3, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %5 = ge.layer_norm %4, %g, %b : (tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  func.return %2, %5 : tensor<4x16xf32>, tensor<4x16xf32>
}

// silu(x @ wg) * (x @ wu): one gated matmul (either operand order of the mul).
// CHECK-LABEL: func.func @gated(
// CHECK-NEXT:    %[[Y:.*]] = fused.gated_matmul %x, %wg, %wu : (tensor<4x8xf16>, tensor<8x16xf16>, tensor<8x16xf16>) -> tensor<4x16xf16>
// CHECK-NEXT:    func.return %[[Y]]
func.func @gated(%x: tensor<4x8xf16>, %wg: tensor<8x16xf16>, %wu: tensor<8x16xf16>) -> tensor<4x16xf16> {
  %g = ge.matmul %x, %wg : (tensor<4x8xf16>, tensor<8x16xf16>) -> tensor<4x16xf16>
  %u = ge.matmul %x, %wu : (tensor<4x8xf16>, tensor<8x16xf16>) -> tensor<4x16xf16>
  %a = ge.silu %g : (tensor<4x16xf16>) -> tensor<4x16xf16>
  %y = ge.mul %u, %a : (tensor<4x16xf16>, tensor<4x16xf16>) -> tensor<4x16xf16>
  func.return %y : tensor<4x16xf16>
}

// Products of different inputs are not a gated matmul; the silu * up is a swiglu.
// CHECK-LABEL: func.func @gated_different_inputs(
// CHECK:         fused.matmul_bias_act %x, %wg {act = "silu"}
// CHECK-NOT:     fused.gated_matmul
func.func @gated_different_inputs(%x: tensor<4x8xf16>, %z: tensor<4x8xf16>, %wg: tensor<8x16xf16>, %wu: tensor<8x16xf16>) -> tensor<4x16xf16> {
  %g = ge.matmul %x, %wg : (tensor<4x8xf16>, tensor<8x16xf16>) -> tensor<4x16xf16>
  %u = ge.matmul %z, %wu : (tensor<4x8xf16>, tensor<8x16xf16>) -> tensor<4x16xf16>
  %a = ge.silu %g : (tensor<4x16xf16>) -> tensor<4x16xf16>
  %y = ge.mul %a, %u : (tensor<4x16xf16>, tensor<4x16xf16>) -> tensor<4x16xf16>
  func.return %y : tensor<4x16xf16>
}
