// Flash attention over four key / value blocks of 64 rows (200 keys on the tiny
// preset, the last block 8 rows), software-pipelined one block apart: block j's
// scores are computed (S = Q K_j^T) before block j-1's product P V, and block j's
// softmax comes before block j-1's accumulation, so the vector unit goes from one
// softmax to the next without waiting for P's round trip through L1 and the cube.
// V is needed only by its block's product: it is staged after the next block's
// K has gone on to L0B, so the scores do not wait for V to land (the last block's
// V right after its own block's). The rescale factor a and the product's L0C
// tile have a copy per block parity.
// After npu-insert-sync the scores' mmad has an M -> V flag of its own: the one
// of the product, set later, would hold the scores' fixpipe for that round trip.
// RUN: ge-opt %s -p 'ge-to-npu{hw=tiny}' | filecheck %s
// RUN: ge-opt %s -p 'ge-lower-to-npu{hw=tiny}' | filecheck %s --check-prefix=SYNC
// RUN: ge-sim %s --pipeline 'ge-lower-to-npu{hw=tiny}' --hw tiny --check | filecheck %s --check-prefix=SIM

func.func @main(%q: tensor<16x16xf16> {ge.name = "q"}, %k: tensor<200x16xf16> {ge.name = "k"}, %v: tensor<200x16xf16> {ge.name = "v"}) -> (tensor<16x16xf16> {ge.name = "o"}) {
  %o = fused.flash_attention %q, %k, %v {scale = 0.25} : (tensor<16x16xf16>, tensor<200x16xf16>, tensor<200x16xf16>) -> tensor<16x16xf16>
  func.return %o : tensor<16x16xf16>
}

// Block 0: scores and softmax; it starts the running max and sum.
// CHECK:      npu.mmad %[[Q:.*]][%c0], %[[K0:.*]][%c0], %[[S:.*]][%c0] {m = 16, n = 64, k = 16
// CHECK-NEXT: npu.fixpipe %[[S]][%c0], %[[SC:.*]][%c0] {rows = 16, cols = 64
// CHECK:      npu.vcast %[[SC]][%c0], %[[P:.*]][%c0] {rows = 16, cols = 64}
// Block 1's K, then block 0's V, block 1's scores, then block 0's product, then
// block 1's softmax, then block 0's product lands in the accumulator (the first:
// nothing to rescale).
// CHECK-NEXT: npu.copy %{{.*}}, %[[K1L1:.*]][%c0] {rows = 64, cols = 16
// CHECK-NEXT: npu.load_l0 %[[K1L1]][%c0], %[[K1:.*]][%c0] {rows = 64, cols = 16, strides = [16, 64], transpose = true}
// CHECK-NEXT: npu.copy %{{.*}}, %[[V0L1:.*]][%c0] {rows = 64, cols = 16
// CHECK-NEXT: npu.mmad %[[Q]][%c0], %[[K1]][%c0], %[[S]][%c0] {m = 16, n = 64, k = 16
// CHECK-NEXT: npu.load_l0 %[[V0L1]][%c0], %[[V0:.*]][%c0] {rows = 64, cols = 16
// CHECK-NEXT: npu.copy %[[P]][%c0], %[[P0L1:.*]][%c0] {rows = 16, cols = 64
// CHECK-NEXT: npu.load_l0 %[[P0L1]][%c0], %[[P0:.*]][%c0]
// CHECK-NEXT: npu.mmad %[[P0]][%c0], %[[V0]][%c0], %[[PV0:.*]][%c0] {m = 16, n = 16, k = 64
// CHECK-NEXT: npu.fixpipe %[[S]][%c0], %[[SC]][%c0] {rows = 16, cols = 64
// CHECK:      npu.vsub %[[MAX:.*]][%c0], %{{.*}}, %[[A1:.*]][%c0] {cols = 16}
// CHECK:      npu.vcast %[[SC]][%c0], %[[P]][%c0] {rows = 16, cols = 64}
// CHECK-NEXT: npu.fixpipe %[[PV0]][%c0], %[[ACC:.*]][%c0] {rows = 16, cols = 16
// Block 2 (copy 0 again): its K with block 1's V, its scores, block 1's product
// into the other L0C tile, its softmax, then block 1's product rescaled into the
// accumulator by a_1.
// CHECK-NEXT: npu.copy %{{.*}}, %{{.*}}[%c0] {rows = 64, cols = 16
// CHECK-NEXT: npu.load_l0
// CHECK-NEXT: npu.copy %{{.*}}, %{{.*}}[%c0] {rows = 64, cols = 16
// CHECK:      npu.mmad %[[Q]][%c0], %[[K0]][%c0], %[[S]][%c0] {m = 16, n = 64, k = 16
// CHECK:      npu.mmad %{{.*}}, %{{.*}}, %[[PV1:.*]][%c0] {m = 16, n = 16, k = 64
// CHECK-NEXT: npu.fixpipe %[[S]][%c0], %[[SC]][%c0] {rows = 16, cols = 64
// CHECK:      npu.vcast %[[SC]][%c0], %[[P]][%c0] {rows = 16, cols = 64}
// CHECK-NEXT: npu.fixpipe %[[PV1]][%c0], %[[PV:.*]][%c0] {rows = 16, cols = 16
// CHECK-NEXT: npu.vmul %[[ACC]][%c0], %[[A1]][%c0], %[[ACC]][%c0]
// CHECK-NEXT: npu.vadd %[[ACC]][%c0], %[[PV]][%c0], %[[ACC]][%c0]
// Block 3, the short one: 8 keys, then block 2's V and its own.
// CHECK-NEXT: npu.copy %{{.*}}, %[[K1L1]][%c0] {rows = 8, cols = 16
// CHECK-NEXT: npu.load_l0
// CHECK-NEXT: npu.copy %{{.*}}, %[[V0L1]][%c0] {rows = 64, cols = 16
// CHECK-NEXT: npu.copy %{{.*}}, %{{.*}}[%c0] {rows = 8, cols = 16
// CHECK:      npu.mmad %[[Q]][%c0], %[[K1]][%c0], %[[S]][%c0] {m = 16, n = 8, k = 16
// CHECK:      npu.mmad %[[P0]][%c0], %[[V0]][%c0], %[[PV0]][%c0] {m = 16, n = 16, k = 64
// Once its softmax is issued, the last product, the output.
// CHECK:      npu.vcast %[[SC]][%c0], %[[P]][%c0] {rows = 16, cols = 8
// CHECK-NOT:  npu.copy %{{.*}}, %{{.*}}[%c0] {rows = 8, cols = 16
// CHECK:      npu.mmad %{{.*}}, %{{.*}}, %[[PV1]][%c0] {m = 16, n = 16, k = 8
// CHECK:      npu.vcast %[[ACC]][%c0], %[[OUT:.*]][%c0] {rows = 16, cols = 16}
// CHECK-NEXT: npu.copy %[[OUT]][%c0]

// SYNC:      npu.mmad %{{.*}}, %{{.*}}, %s_acc[%c0] {m = 16, n = 64
// SYNC:      npu.mmad %q_l0[%c0], %k_l0_1[%c0], %s_acc[%c0] {m = 16, n = 64
// SYNC-NEXT: npu.set_flag {src = "M", dst = "V", event = [[SCORES:[0-9]]]}
// SYNC:      npu.mmad %p_l0[%c0], %v_l0[%c0], %pv_acc[%c0]
// SYNC-NEXT: npu.set_flag {src = "M", dst = "V", event = [[PRODUCT:[0-9]]]}
// SYNC:      npu.wait_flag {src = "M", dst = "V", event = [[SCORES]]}
// SYNC-NEXT: npu.fixpipe %s_acc[%c0], %scores[%c0]
// SYNC:      npu.wait_flag {src = "M", dst = "V", event = [[PRODUCT]]}
// SYNC-NEXT: npu.fixpipe %pv_acc[%c0], %acc[%c0]

// SIM: check: ok
