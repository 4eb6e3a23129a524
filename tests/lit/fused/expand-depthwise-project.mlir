// fused.expand_depthwise_project lowers to one kernel: an item is a band of output
// rows x a column segment (16 rows x 2 segments of 8 columns on 32 cores), each
// segment a static branch; the expand product and the project product on the
// cube, the expanded and depthwise rows only in UB and L1 (no GM buffer between
// them): the band's input rows with their halo (3 rows of 9 of the 16 columns, a
// copy per row, 3 blocks of 8 channels) into L1, expand into L0C -> UB, the
// depthwise taps in UB (one vmul, 8 vmla over all 144 channels), its row UB -> L1
// as the project's A, the project's NC1HWC0 blocks stored with the residual added.
// RUN: ge-opt %s --pass-pipeline 'ge-lower-to-npu{hw=ascend910}' | filecheck %s

// CHECK: npu.kernel @{{.*}}attributes {block_dim = 32, {{.*}}npu.sources = ["fused.expand_depthwise_project"
// CHECK: npu.load_l0 %blk_l1_we[%c0], %blk_l0b_we[%c0]
// CHECK: scf.if
// CHECK-COUNT-3: npu.copy %arg0[%{{.*}}], %blk_l1_x[%c{{[0-9]+}}] {rows = 3, cols = 72, strides = [2048, 216]}
// CHECK: npu.mmad %blk_l0a_x[%c0], %blk_l0b_we[%c0], %blk_l0c_e[%c0] {m = 27, n = 144, k = 24,
// CHECK: npu.fixpipe %blk_l0c_e[%c0], %blk_ub_exp[%c0] {rows = 27, cols = 144,
// CHECK: npu.vmul %blk_ub_slab
// CHECK-COUNT-8: npu.vmla %blk_ub_slab
// CHECK: npu.copy %blk_ub_acc[%c0], %blk_l1_a2[%c0] {cols = 1152}
// CHECK: npu.mmad %blk_l0a_a2[%c0], %blk_l0b_wp[%c0], %blk_l0c_p[%c0] {m = 8, n = 24, k = 144,
// CHECK: npu.copy %arg0[%{{.*}}], %blk_ub_res[%c0] {rows = 3, cols = 64, strides = [2048, 64]}
// CHECK: npu.copy %blk_ub_out[%c0], %y[%{{.*}}] {rows = 3, cols = 64, strides = [64, 2048]}
// CHECK: scf.if
// CHECK-COUNT-3: npu.copy %arg0[%{{.*}}], %blk_l1_x[%c{{[0-9]+}}] {rows = 3, cols = 72, strides = [2048, 216]}
// CHECK-NOT: npu.gm_buffer {{.*}}144x16x16
func.func @main(%x0: tensor<1x24x16x16xf32, #ge.format<NC1HWC0>>, %b: tensor<144xf32>, %pb: tensor<24xf32>, %eb: tensor<144xf32>) -> tensor<1x24x16x16xf32, #ge.format<NC1HWC0>> {
  %e = ge.const #ge.random<normal, seed = 5, mean = 0.0, std = 0.3> : tensor<144x24x1x1xf32, #ge.format<FRACTAL_Z>>
  %w = ge.const #ge.random<normal, seed = 3, mean = 0.0, std = 0.3> : tensor<144x1x3x3xf32>
  %p = ge.const #ge.random<normal, seed = 4, mean = 0.0, std = 0.3> : tensor<24x144x1x1xf32, #ge.format<FRACTAL_Z>>
  %y = fused.expand_depthwise_project %x0, %e, %w, %p bias %eb dw_bias %b pw_bias %pb residual %x0 {pads = [1, 1, 1, 1], act = "relu6", dw_act = "relu6"} : (tensor<1x24x16x16xf32, #ge.format<NC1HWC0>>, tensor<144x24x1x1xf32, #ge.format<FRACTAL_Z>>, tensor<144x1x3x3xf32>, tensor<24x144x1x1xf32, #ge.format<FRACTAL_Z>>, tensor<144xf32>, tensor<144xf32>, tensor<24xf32>, tensor<1x24x16x16xf32, #ge.format<NC1HWC0>>) -> tensor<1x24x16x16xf32, #ge.format<NC1HWC0>>
  func.return %y : tensor<1x24x16x16xf32, #ge.format<NC1HWC0>>
}
