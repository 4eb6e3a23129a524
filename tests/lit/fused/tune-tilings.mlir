// fused-tune-tilings: a cube op's tiling is the fastest, simulated, of the
// estimate's `top` best; the winner is pinned as npu.tiling_rank (its place in
// the estimate's ranking), which ge-to-npu honours.
// RUN: ge-opt %s --pass-pipeline 'fused-tune-tilings{top=2}' | filecheck %s
// RUN: ge-opt %s --pass-pipeline 'fused-tune-tilings{top=2 debug=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=DEBUG
// RUN: ge-opt %s --pass-pipeline 'fused-tune-tilings{top=2},ge-lower-to-npu{debug=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=LOWER

// 128 x 256 @ 256 x 512: the second tiling by estimate (narrower items) runs faster.
// CHECK: %r = fused.matmul_bias_act %x, %w_nz {act = "relu", npu.tiling_rank = 1 : i64}
// DEBUG: fused-tune-tilings] module: as given: {{[0-9]+}} cycles
// DEBUG-NEXT: fused-tune-tilings] fused.matmul_bias_act at {{.*}}tune-tilings.mlir:[[# @LINE + 4]]:{{[0-9]+}}: npu.tiling_rank = 1: {{[0-9]+}} cycles
// LOWER: estimated {{[0-9]+}} cycles, number 2 by estimate of {{[0-9]+}} tilings that fit (npu.tiling_rank = 1)
func.func @main(%x: tensor<128x256xf16>) -> tensor<128x512xf16> {
  %w_nz = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.02> : tensor<256x512xf16, #ge.format<FRACTAL_NZ>>
  %r = fused.matmul_bias_act %x, %w_nz {act = "relu"} : (tensor<128x256xf16>, tensor<256x512xf16, #ge.format<FRACTAL_NZ>>) -> tensor<128x512xf16>
  func.return %r : tensor<128x512xf16>
}
