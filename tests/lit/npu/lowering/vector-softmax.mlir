// A softmax over rows of 1024 fp16 on the tiny preset: one row-tile kernel.
// The row max and the row sum fold halves of each row with full-width vmax /
// vadd down to one repeat (128 lanes) before the across-lanes vreduce; the
// per-row results broadcast back along the rows (column stride 0).
// RUN: ge-opt %s -p 'ge-to-npu{hw=tiny debug=true}' 2>&1 | filecheck %s
// RUN: ge-sim %s --pipeline 'ge-lower-to-npu{hw=tiny}' --hw tiny --check | filecheck %s --check-prefix=SIM

func.func @main(%x: tensor<8x1024xf16>) -> tensor<8x1024xf16> {
  %r = ge.softmax %x : (tensor<8x1024xf16>) -> tensor<8x1024xf16>
  func.return %r : tensor<8x1024xf16>
}

// CHECK:      [ge-to-npu] @k0_r: 8 x 1024 in tiles of 2 rows
// CHECK:      npu.kernel @k0_r({{.*}}) attributes {block_dim = 2, npu.sources = ["ge.softmax"]}
// CHECK:      scf.for %tile
// CHECK:        npu.copy %0[%{{.*}}], %[[X:[0-9]+]][%c0] {cols = 2048}
// CHECK-NEXT:   npu.vmax %[[X]][%c0], %[[X]][%c512], %[[T:[0-9]+]][%c0] {rows = 2, cols = 512, strides = [1024, 1024, 1024]}
// CHECK-NEXT:   npu.vmax %[[T]][%c0], %[[T]][%c256], %[[T]][%c0] {rows = 2, cols = 256, strides = [1024, 1024, 1024]}
// CHECK-NEXT:   npu.vmax %[[T]][%c0], %[[T]][%c128], %[[T]][%c0] {rows = 2, cols = 128, strides = [1024, 1024, 1024]}
// CHECK-NEXT:   npu.vreduce_max %[[T]][%c0], %[[M:[0-9]+]][%c0] {rows = 2, cols = 128, strides = [1024, 1]}
// CHECK-NEXT:   npu.vsub %[[X]][%c0], %[[M]][%c0], %[[Y:[0-9]+]][%c0] {rows = 2, cols = 1024, strides = [1024, 1, 1024], col_strides = [1, 0, 1]}
// CHECK-NEXT:   npu.vexp %[[Y]][%c0], %[[Y]][%c0] {rows = 2, cols = 1024}
// CHECK-NEXT:   npu.vadd %[[Y]][%c0], %[[Y]][%c512], %[[T]][%c0]
// CHECK-NEXT:   npu.vadd %[[T]][%c0], %[[T]][%c256], %[[T]][%c0]
// CHECK-NEXT:   npu.vadd %[[T]][%c0], %[[T]][%c128], %[[T]][%c0]
// CHECK-NEXT:   npu.vreduce_sum %[[T]][%c0], %[[M]][%c0] {rows = 2, cols = 128, strides = [1024, 1]}
// CHECK-NEXT:   npu.vrec %[[M]][%c0], %[[M]][%c0] {cols = 2}
// CHECK-NEXT:   npu.vmul %[[Y]][%c0], %[[M]][%c0], %[[Y]][%c0] {rows = 2, cols = 1024, strides = [1024, 1, 1024], col_strides = [1, 0, 1]}
// CHECK:        npu.copy %[[Y]][%c0], %1[%{{.*}}] {cols = 2048}

// SIM: check: ok
