// fused.expand_depthwise_project lowers to one kernel: a band of output rows per
// block (16 rows of 16x16 on 16 cores), the expand product and the project product
// on the cube, the expanded and depthwise rows only in UB and L1 (no GM buffer
// between them): the input rows with their halo (3 rows of 16 pixels, 3 blocks of
// 8 channels) into L1, expand into L0C -> UB, the depthwise taps in UB, its rows
// UB -> L1 as the project's A, the project's NC1HWC0 blocks stored with the
// residual added.
// RUN: ge-opt %s --pass-pipeline 'ge-lower-to-npu{hw=ascend910}' | filecheck %s

// CHECK: npu.kernel @{{.*}}attributes {block_dim = 16, {{.*}}npu.sources = ["fused.expand_depthwise_project"
// CHECK: npu.copy %arg0[%{{.*}}], %blk_l1_x[%c0] {rows = 3, cols = 384, strides = [2048, 384]}
// CHECK: npu.mmad %blk_l0a_x[%c0], %blk_l0b_we[%c0], %blk_l0c_e[%c0] {m = 48, n = 144, k = 24,
// CHECK: npu.fixpipe %blk_l0c_e[%c0], %blk_ub_exp[%c0] {rows = 48, cols = 144,
// CHECK-COUNT-8: npu.vmla %blk_ub_slab
// CHECK: npu.copy %blk_ub_acc[%c0], %blk_l1_a2[%c0] {cols = 2304}
// CHECK: npu.mmad %blk_l0a_a2[%c0], %blk_l0b_wp[%c0], %blk_l0c_p[%c0] {m = 16, n = 24, k = 144,
// CHECK: npu.copy %arg0[%{{.*}}], %blk_ub_res[%c0] {rows = 3, cols = 128, strides = [2048, 128]}
// CHECK: npu.copy %blk_ub_out[%c0], %y[%{{.*}}] {rows = 3, cols = 128, strides = [128, 2048]}
// CHECK-NOT: npu.gm_buffer {{.*}}144x16x16
func.func @main(%x0: tensor<1x24x16x16xf32, #ge.format<NC1HWC0>>, %b: tensor<144xf32>, %pb: tensor<24xf32>, %eb: tensor<144xf32>) -> tensor<1x24x16x16xf32, #ge.format<NC1HWC0>> {
  %e = ge.const #ge.random<normal, seed = 5, mean = 0.0, std = 0.3> : tensor<144x24x1x1xf32, #ge.format<FRACTAL_Z>>
  %w = ge.const #ge.random<normal, seed = 3, mean = 0.0, std = 0.3> : tensor<144x1x3x3xf32>
  %p = ge.const #ge.random<normal, seed = 4, mean = 0.0, std = 0.3> : tensor<24x144x1x1xf32, #ge.format<FRACTAL_Z>>
  %y = fused.expand_depthwise_project %x0, %e, %w, %p bias %eb dw_bias %b pw_bias %pb residual %x0 {pads = [1, 1, 1, 1], act = "relu6", dw_act = "relu6"} : (tensor<1x24x16x16xf32, #ge.format<NC1HWC0>>, tensor<144x24x1x1xf32, #ge.format<FRACTAL_Z>>, tensor<144x1x3x3xf32>, tensor<24x144x1x1xf32, #ge.format<FRACTAL_Z>>, tensor<144xf32>, tensor<144xf32>, tensor<24xf32>, tensor<1x24x16x16xf32, #ge.format<NC1HWC0>>) -> tensor<1x24x16x16xf32, #ge.format<NC1HWC0>>
  func.return %y : tensor<1x24x16x16xf32, #ge.format<NC1HWC0>>
}
