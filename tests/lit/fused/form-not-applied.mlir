// An `npu.form` pinning another form than the op's own, lowered without the pass
// that applies it, is a located error rather than a kernel of the wrong form.
// RUN: not ge-opt %s -p ge-to-npu 2>&1 | filecheck %s
// RUN: ge-opt %s -p ge-lower-to-npu | filecheck %s --check-prefix=APPLIED

// APPLIED: npu.kernel @k0_matmul_partials_to_k1_y({{.*}}memref<4x32x256xf32
// CHECK: form-not-applied.mlir:[[# @LINE + 3]]:3: error: 'fused.matmul_bias_act' op 'npu.form' = "split-K 4" was not applied: run fused-split-k before ge-to-npu (ge-lower-to-npu does)
func.func @main(%a: tensor<32x1024xf16>, %c: tensor<256xf16>) -> tensor<32x256xf16> {
  %w = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.02> : tensor<1024x256xf16>
  %y = fused.matmul_bias_act %a, %w bias %c {act = "gelu", npu.form = "split-K 4"} : (tensor<32x1024xf16>, tensor<1024x256xf16>, tensor<256xf16>) -> tensor<32x256xf16>
  func.return %y : tensor<32x256xf16>
}
