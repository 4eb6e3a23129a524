// fused-tune-forms: an op fused-split-k (or fused-split-matmul-norm) may rewrite
// takes the fastest, simulated, of the estimate's `top` best forms; the winner is
// pinned as npu.form, which the split passes honour.
// RUN: ge-opt %s --pass-pipeline 'fused-tune-forms{top=2}' | filecheck %s
// RUN: ge-opt %s --pass-pipeline 'fused-tune-forms{top=2 debug=true}' --pass-statistics 2>&1 >/dev/null | filecheck %s --check-prefix=DEBUG
// RUN: ge-opt %s --pass-pipeline 'fused-tune-forms{top=2},fused-split-k{debug=true}' 2>&1 | filecheck %s --check-prefix=SPLIT

// 32 x 1024 @ 1024 x 256 + bias + gelu: estimated fastest in 8 K slices, simulated
// faster in 4.
// CHECK: %y = fused.matmul_bias_act %a, %w bias %c {act = "gelu", npu.form = "split-K 4"}
// DEBUG: fused-tune-forms] module: as given: [[GIVEN:[0-9]+]] cycles
// DEBUG-NEXT: fused-tune-forms] fused.matmul_bias_act at {{.*}}tune-forms.mlir:[[# @LINE + 10]]:{{[0-9]+}}: npu.form = 'split-K 4': {{[0-9]+}} cycles
// DEBUG: fused-tune-forms: 1 ops tuned, 1 forms changed, 2 simulations
// SPLIT: split-K 8 ~{{[0-9]+}} cycles: split-K 4 (npu.form)
// SPLIT: fused.matmul_partials %a, %w {splits = 4}
// SPLIT-NOT: npu.form
// SPLIT: fused.partials_bias_act
// SPLIT-NOT: npu.form
func.func @main(%a: tensor<32x1024xf16>) -> tensor<32x256xf16> {
  %w = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.02> : tensor<1024x256xf16>
  %c = ge.const #ge.random<normal, seed = 3, mean = 0.0, std = 0.02> : tensor<256xf16>
  %y = fused.matmul_bias_act %a, %w bias %c {act = "gelu"} : (tensor<32x1024xf16>, tensor<1024x256xf16>, tensor<256xf16>) -> tensor<32x256xf16>
  func.return %y : tensor<32x256xf16>
}
