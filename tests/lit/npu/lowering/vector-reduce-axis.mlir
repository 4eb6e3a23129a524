// A mean over the middle axis of (6, 40, 24): slabs of (40 x 24) are loaded as
// they lie, transposed in UB so each of the 24 inner positions becomes a row of
// 40, reduced along rows in fp32 (one rounding), and the (24 x t) results are
// transposed back before one contiguous store.
// RUN: ge-opt %s -p 'ge-to-npu{hw=tiny debug=true}' 2>&1 | filecheck %s
// RUN: ge-sim %s --pipeline 'ge-lower-to-npu{hw=tiny}' --hw tiny --check | filecheck %s --check-prefix=SIM

func.func @main(%x: tensor<6x40x24xf16>) -> tensor<6x1x24xf16> {
  %r = ge.reduce_mean %x {axes = [1]} : (tensor<6x40x24xf16>) -> tensor<6x1x24xf16>
  func.return %r : tensor<6x1x24xf16>
}

// CHECK:      [ge-to-npu] @k0_r: 6 x 40 (slabs of 40 x 24, 24 columns a tile, transposed in UB) in tiles of 2 rows
// CHECK:      scf.for %tile
// CHECK:        npu.copy %0[%{{.*}}], %[[STAGED:[0-9]+]][%c0] {cols = 1920}
// CHECK-NEXT:   npu.vtranspose %[[STAGED]][%c0], %[[ROWS:[0-9]+]][%c0] {rows = 80, cols = 24}
// CHECK-NEXT:   npu.vcast %[[ROWS]][%c0], %[[WIDE:[0-9]+]][%c0] {rows = 48, cols = 40}
// CHECK-NEXT:   npu.vreduce_sum %[[WIDE]][%c0], %[[SUM:[0-9]+]][%c0] {rows = 48, cols = 40}
// CHECK-NEXT:   npu.vmuls %[[SUM]][%c0], %[[SUM]][%c0] {cols = 48, scalar = 0.025}
// CHECK-NEXT:   npu.vcast %[[SUM]][%c0], %[[MEAN:[0-9]+]][%c0] {cols = 48}
// CHECK-NEXT:   npu.vtranspose %[[MEAN]][%c0], %[[OUT:[0-9]+]][%c0] {rows = 24, cols = 2}
// CHECK:        npu.copy %[[OUT]][%c0], %1[%{{.*}}] {cols = 48}

// SIM: check: ok
