// matmul + bias + GELU with the weights in FRACTAL_NZ and the result in NZ: the
// weights are staged as whole 16-column blocks (one run each), the epilogue runs
// on the fp32 product in UB in row-major tiles (the bias widened once and added,
// GELU as erf and four steps; one item per core, so its bias loads during the K
// loop, right after the last chunk's operands): the tiling's estimate finds them
// faster here than tiles in column blocks (`CubeTiling.ub_block`: 1,348 vs 1,527
// simulated cycles on tiny: the body's seven heads paid per 16-column block cost
// more than the 16 x 32-byte runs per block of the store). The result is stored a
// 16-column block at a time, its padding (columns 33..47, rows 40..47) written
// with zeros; the second product reads it back.
// RUN: ge-opt %s -p 'ge-to-npu{hw=tiny}' | filecheck %s
// RUN: ge-sim %s --pipeline 'ge-lower-to-npu{hw=tiny}' --hw tiny --check | filecheck %s --check-prefix=SIM

func.func @main(%a: tensor<40x24xf16> {ge.name = "a"}, %bias: tensor<33xf16> {ge.name = "bias"}) -> (tensor<40x8xf16> {ge.name = "d"}) {
  %w = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.2> : tensor<24x33xf16, #ge.format<FRACTAL_NZ>>
  %c = fused.matmul_bias_act %a, %w bias %bias {act = "gelu"} : (tensor<40x24xf16>, tensor<24x33xf16, #ge.format<FRACTAL_NZ>>, tensor<33xf16>) -> tensor<40x33xf16, #ge.format<FRACTAL_NZ>>
  %w2 = ge.const #ge.random<normal, seed = 2, mean = 0.0, std = 0.2> : tensor<33x8xf16>
  %d = ge.matmul %c, %w2 : (tensor<40x33xf16, #ge.format<FRACTAL_NZ>>, tensor<33x8xf16>) -> tensor<40x8xf16>
  func.return %d : tensor<40x8xf16>
}

// CHECK:      npu.kernel @k0_c(%0: memref<40x24xf16, #npu.space<gm>>, %1: memref<3x2x16x16xf16, #npu.space<gm>>, %2: memref<33xf16, #npu.space<gm>>, %3: memref<3x3x16x16xf16, #npu.space<gm>>)
// CHECK:        npu.copy %1[%c0], %[[B1:.*]][%c0] {rows = 3, cols = 384, strides = [512, 512]}
// CHECK-NEXT:   npu.copy %2[%c0], %[[BIAS:.*]][%c0] {cols = 33}
// CHECK:        npu.load_l0 %[[B1]][%c0], %{{.*}}[%c0] {rows = 24, cols = 48, strides = [512, 48], layout = "nz"}
// CHECK:        npu.mmad
// CHECK-NEXT:   npu.vdup %[[OUT:.*]][%c32] {rows = 16, cols = 16, strides = [48], value = 0.0}
// CHECK-NEXT:   npu.fixpipe %{{.*}}, %[[P:.*]][%c0] {rows = 16, cols = 33, strides = [48, 48]}
// CHECK-NEXT:   npu.vcast %[[BIAS]][%c0], %[[BIAS32:.*]][%c0] {cols = 33}
// CHECK-NEXT:   npu.vadd %[[P]][%c0], %[[BIAS32]][%c0], %[[P]][%c0] {rows = 16, cols = 33, strides = [48, 0, 48]}
// CHECK:        npu.verf
// CHECK:        npu.vcast %[[P]][%c0], %[[OUT]][%c0] {rows = 16, cols = 33, strides = [48, 48]}
// CHECK:        scf.for %blk = %c0 to %c3 step %c1 {
// CHECK:          npu.copy %[[OUT]][%{{.*}}], %3[%{{.*}}] {rows = 16, cols = 16, strides = [48, 16]}
// CHECK:        npu.vdup %{{.*}}[%c384] {rows = 8, cols = 48, strides = [48], value = 0.0}
// CHECK:      npu.kernel @k1_d

// SIM: check: ok
