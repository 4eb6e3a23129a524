// Flash attention (BNSD, a boolean mask shared by the batch) on the tiny preset:
// the mix kernel. Q is staged once; per key / value block: S = Q K^T on the cube
// (K through load_l0's transpose), scale and mask on the vector unit, the online
// softmax (row max and sum in UB), then V (needed only now: with more blocks it
// would share the next block's K landing), P back to the cube through L1 for P V;
// O / l rounded once. The keys fit one block, which starts the running max, sum
// and accumulator (P V lands in the accumulator, nothing is rescaled).
// RUN: ge-opt %s -p 'ge-to-npu{hw=tiny debug=true}' 2>&1 | filecheck %s
// RUN: ge-opt %s -p 'ge-to-npu{hw=tiny}' | ge-opt | filecheck %s --check-prefix=ROUNDTRIP
// RUN: ge-sim %s --pipeline 'ge-lower-to-npu{hw=tiny}' --hw tiny --check | filecheck %s --check-prefix=SIM

func.func @main(%q: tensor<2x20x16xf16> {ge.name = "q"}, %k: tensor<2x40x16xf16> {ge.name = "k"}, %v: tensor<2x40x16xf16> {ge.name = "v"}, %m: tensor<20x40xi1> {ge.name = "m"}) -> (tensor<2x20x16xf16> {ge.name = "o"}) {
  %o = fused.flash_attention %q, %k, %v mask %m {scale = 0.25, mask_value = -10000.0} : (tensor<2x20x16xf16>, tensor<2x40x16xf16>, tensor<2x40x16xf16>, tensor<20x40xi1>) -> tensor<2x20x16xf16>
  func.return %o : tensor<2x20x16xf16>
}

// CHECK:      [ge-to-npu] @k0_o: flash attention 2 x (20 x 16) against (40 x 16) / (40 x 16): items of 32 query rows (2 items, 1 per core on 2 cores), key / value blocks of 48 rows
// CHECK:        npu.load_l0 %{{.*}}, %[[Q:.*]][%c0] {rows = 20, cols = 16, strides = [16, 16]}
// CHECK-NEXT:   npu.load_l0 %{{.*}}, %[[K:.*]][%c0] {rows = 40, cols = 16, strides = [16, 48], transpose = true}
// CHECK-NEXT:   npu.mmad %[[Q]][%c0], %[[K]][%c0], %[[S:.*]][%c0] {m = 20, n = 40, k = 16, strides = [16, 48, 48]}
// CHECK-NEXT:   npu.fixpipe %[[S]][%c0], %[[SC:.*]][%c0] {rows = 20, cols = 40, strides = [48, 48]}
// CHECK-NEXT:   npu.vmuls %[[SC]][%c0], %[[SC]][%c0] {rows = 20, cols = 40, strides = [48, 48], scalar = 0.25}
// CHECK:        npu.vsel
// CHECK-NEXT:   npu.vreduce_max %[[SC]][%c0]
// CHECK:        npu.vexp %[[SC]][%c0], %[[SC]][%c0] {rows = 20, cols = 40, strides = [48, 48]}
// CHECK:        npu.vcast %[[SC]][%c0], %[[P:.*]][%c0] {rows = 20, cols = 40, strides = [48, 48]}
// CHECK-NEXT:   npu.copy %{{.*}}, %[[V1:.*]][%c0] {rows = 40, cols = 16, strides = [16, 16]}
// CHECK-NEXT:   npu.vrec
// CHECK-NEXT:   npu.load_l0 %[[V1]][%c0], %[[V0:.*]][%c0] {rows = 40, cols = 16, strides = [16, 16]}
// CHECK-NEXT:   npu.copy %[[P]][%c0], %[[P1:.*]][%c0] {rows = 20, cols = 40, strides = [48, 48]}
// CHECK-NEXT:   npu.load_l0 %[[P1]][%c0], %[[P0:.*]][%c0] {rows = 20, cols = 40, strides = [48, 48]}
// CHECK-NEXT:   npu.mmad %[[P0]][%c0], %[[V0]][%c0], %{{.*}} {m = 20, n = 16, k = 40, strides = [48, 16, 16]}
// CHECK-NEXT:   npu.fixpipe %{{.*}}, %[[ACC:.*]][%c0] {rows = 20, cols = 16, strides = [16, 16]}
// CHECK-NEXT:   npu.vmul %[[ACC]][%c0]
// CHECK-NEXT:   npu.vcast %[[ACC]][%c0], %[[OUT:.*]][%c0] {rows = 20, cols = 16}
// CHECK-NEXT:   npu.copy %[[OUT]][%c0], %4[%{{.*}}] {rows = 20, cols = 16, strides = [16, 16]}

// ROUNDTRIP: npu.kernel @k0_o

// SIM: check: ok
