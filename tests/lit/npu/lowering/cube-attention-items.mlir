// Flash attention with five items per core (10 heads of 16 query rows on the
// tiny preset's two cores), each one key / value block: an item's end (its
// product P V, the accumulation, O / l and the store) is written into the next
// item around that item's first softmax, so the vector unit goes from one item's
// softmax to the next. 1 / l is taken before the next softmax overwrites l, V
// is staged with the next item's Q and K under one MTE2 flag, and the items walk
// in pairs (an odd number of blocks per item: consecutive items use the other
// copy of K, V and P). The last item's end follows the loop.
// RUN: ge-opt %s -p 'ge-to-npu{hw=tiny}' | filecheck %s
// RUN: ge-sim %s --pipeline 'ge-lower-to-npu{hw=tiny}' --hw tiny --check | filecheck %s --check-prefix=SIM

func.func @main(%q: tensor<10x16x16xf16> {ge.name = "q"}, %k: tensor<10x40x16xf16> {ge.name = "k"}, %v: tensor<10x40x16xf16> {ge.name = "v"}) -> (tensor<10x16x16xf16> {ge.name = "o"}) {
  %o = fused.flash_attention %q, %k, %v {scale = 0.25} : (tensor<10x16x16xf16>, tensor<10x40x16xf16>, tensor<10x40x16xf16>) -> tensor<10x16x16xf16>
  func.return %o : tensor<10x16x16xf16>
}

// Item 0: Q and K, its scores and softmax; nothing else yet.
// CHECK:      npu.copy %{{.*}}, %[[QL1:.*]][%c0] {rows = 16, cols = 16
// CHECK-NEXT: npu.copy %{{.*}}, %[[K0L1:.*]][%c0] {rows = 40, cols = 16
// CHECK:      npu.mmad %{{.*}}, %[[K0:.*]][%c0], %[[S:.*]][%c0] {m = 16, n = 40, k = 16
// CHECK:      npu.vcast %{{.*}}, %[[P:.*]][%c0] {rows = 16, cols = 40
// The pairs of items.
// CHECK:      scf.for
// Item 2p + 1 (copy 1): its Q and K with item 2p's V, its scores; then item 2p's
// 1 / l and product, its own softmax, item 2p's accumulation and output.
// CHECK:      npu.copy %{{.*}}, %[[QL1]][%c0] {rows = 16, cols = 16
// CHECK-NEXT: npu.copy %{{.*}}, %[[K1L1:.*]][%c0] {rows = 40, cols = 16
// CHECK-NEXT: npu.copy %{{.*}}, %[[V0L1:.*]][%c0] {rows = 40, cols = 16
// CHECK:      npu.mmad %{{.*}}, %[[K1:.*]][%c0], %[[S]][%c0] {m = 16, n = 40, k = 16
// CHECK-NEXT: npu.vrec
// CHECK-NEXT: npu.load_l0 %[[V0L1]][%c0]
// CHECK:      npu.mmad %{{.*}}, %{{.*}}, %[[PV0:.*]][%c0] {m = 16, n = 16, k = 40
// CHECK-NEXT: npu.fixpipe %[[S]][%c0]
// CHECK:      npu.vcast %{{.*}}, %[[P]][%c0] {rows = 16, cols = 40
// CHECK-NEXT: npu.fixpipe %[[PV0]][%c0], %[[ACC:.*]][%c0]
// CHECK-NEXT: npu.vmul %[[ACC]][%c0]
// CHECK-NEXT: npu.vcast %[[ACC]][%c0], %[[OUT:.*]][%c0]
// CHECK:      npu.copy %[[OUT]][%c0]
// Item 2p + 2 (copy 0), the same with item 2p + 1's end.
// CHECK:      npu.copy %{{.*}}, %[[QL1]][%c0] {rows = 16, cols = 16
// CHECK-NEXT: npu.copy %{{.*}}, %[[K0L1]][%c0] {rows = 40, cols = 16
// CHECK-NEXT: npu.copy %{{.*}}, %{{.*}}[%c0] {rows = 40, cols = 16
// CHECK:      npu.mmad %{{.*}}, %[[K0]][%c0], %[[S]][%c0] {m = 16, n = 40, k = 16
// CHECK:      npu.mmad %{{.*}}, %{{.*}}, %[[PV1:.*]][%c0] {m = 16, n = 16, k = 40
// CHECK:      npu.fixpipe %[[PV1]][%c0], %[[ACC]][%c0]
// CHECK:      npu.copy %[[OUT]][%c0]
// CHECK-NEXT: }
// After the loop, the last item's end: its V on a flag of its own, then the rest.
// CHECK:      npu.copy %{{.*}}, %[[V0L1]][%c0] {rows = 40, cols = 16
// CHECK-NEXT: npu.vrec
// CHECK:      npu.mmad %{{.*}}, %{{.*}}, %[[PV0]][%c0] {m = 16, n = 16, k = 40
// CHECK-NEXT: npu.fixpipe %[[PV0]][%c0], %[[ACC]][%c0]
// CHECK:      npu.copy %[[OUT]][%c0]

// SIM: check: ok
