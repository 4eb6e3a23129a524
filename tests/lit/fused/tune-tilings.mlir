// fused-tune-tilings: a cube op's tiling is the fastest, simulated, of the
// estimate's `top` best; the winner is pinned as npu.tiling_rank (its place in
// the estimate's ranking), which ge-to-npu honours.
// RUN: ge-opt %s --pass-pipeline 'fused-tune-tilings{top=3}' | filecheck %s
// RUN: ge-opt %s --pass-pipeline 'fused-tune-tilings{top=3 debug=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=DEBUG
// RUN: ge-opt %s --pass-pipeline 'fused-tune-tilings{top=3},ge-lower-to-npu{debug=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=LOWER

// 128 x 256 @ 256 x 512: the third tiling by estimate runs faster than the first two
// (which the estimate ties since a set_flag no longer holds its pipe, 18685c3).
// CHECK: %r = fused.matmul_bias_act %x, %w_nz {act = "relu", npu.tiling_rank = 2 : i64}
// DEBUG: fused-tune-tilings] module: as given: {{[0-9]+}} cycles
// DEBUG: fused-tune-tilings] fused.matmul_bias_act at {{.*}}tune-tilings.mlir:[[# @LINE + 4]]:{{[0-9]+}}: npu.tiling_rank = 2: {{[0-9]+}} cycles
// LOWER: estimated {{[0-9]+}} cycles, number 3 by estimate of {{[0-9]+}} tilings that fit (npu.tiling_rank = 2)
func.func @main(%x: tensor<128x256xf16>) -> tensor<128x512xf16> {
  %w_nz = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.02> : tensor<256x512xf16, #ge.format<FRACTAL_NZ>>
  %r = fused.matmul_bias_act %x, %w_nz {act = "relu"} : (tensor<128x256xf16>, tensor<256x512xf16, #ge.format<FRACTAL_NZ>>) -> tensor<128x512xf16>
  func.return %r : tensor<128x512xf16>
}
