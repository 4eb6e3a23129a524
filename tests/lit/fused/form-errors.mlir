// An `npu.form` that would be dropped is a located error at ge-to-npu: on an op
// no pass chooses the form of, or on one whose form pass has not run (rather
// than a kernel of another form than the one pinned). ge-lower-to-npu applies the
// second; each chunk's error is reported and the next chunk still compiles.
// RUN: not ge-opt %s --split-input-file -p ge-to-npu 2>&1 | filecheck %s
// RUN: not ge-opt %s --split-input-file -p ge-lower-to-npu 2>&1 | filecheck %s --check-prefix=APPLIED

// APPLIED: form-errors.mlir:[[# @LINE + 3]]:3: error: 'fused.softmax' op 'npu.form' = "split-K 2" pins a form
// CHECK: form-errors.mlir:[[# @LINE + 2]]:3: error: 'fused.softmax' op 'npu.form' = "split-K 2" pins a form, but no pass chooses the form of 'fused.softmax' (fused-split-matmul-norm: fused.matmul_add_layer_norm, fused.matmul_add_rms_norm; fused-split-k: fused.matmul_bias_act; fused-split-k-conv: ge.conv2d, fused.conv2d_bias_act; fused-depthwise-mean: ge.global_avg_pool, ge.reduce_mean)
func.func @main(%x: tensor<16x32xf16>) -> tensor<16x32xf16> {
  %y = fused.softmax %x {axis = -1 : i64, npu.form = "split-K 2"} : (tensor<16x32xf16>) -> tensor<16x32xf16>
  func.return %y : tensor<16x32xf16>
}

// -----

// APPLIED: npu.kernel @k0_matmul_partials_to_k1_y({{.*}}memref<4x32x256xf32
// CHECK: form-errors.mlir:[[# @LINE + 3]]:3: error: 'fused.matmul_bias_act' op 'npu.form' = "split-K 4" was not applied: run fused-split-k before ge-to-npu (ge-lower-to-npu does)
func.func @main(%a: tensor<32x1024xf16>, %c: tensor<256xf16>) -> tensor<32x256xf16> {
  %w = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.02> : tensor<1024x256xf16>
  %y = fused.matmul_bias_act %a, %w bias %c {act = "gelu", npu.form = "split-K 4"} : (tensor<32x1024xf16>, tensor<1024x256xf16>, tensor<256xf16>) -> tensor<32x256xf16>
  func.return %y : tensor<32x256xf16>
}
