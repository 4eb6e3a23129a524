// ND <-> FRACTAL_NZ on the tiny preset. ND -> NZ: whole rows in with one copy,
// the 16-column blocks separated by vcopy in UB, one copy out per tile (both
// cores); the fill zeroing the padding rows 40..47 of every block column is a
// piece of its own, on the first core (one copy from a vdup'ed row, read with
// row stride 0). NZ -> ND the other way round.
// RUN: ge-opt %s -p 'ge-to-npu{hw=tiny}' | filecheck %s
// RUN: ge-sim %s --pipeline 'ge-lower-to-npu{hw=tiny}' --hw tiny --check | filecheck %s --check-prefix=SIM

func.func @main(%x: tensor<40x96xf16> {ge.name = "x"}) -> (tensor<40x96xf16> {ge.name = "y"}) {
  %nz = ge.transdata %x {src_format = "ND", dst_format = "FRACTAL_NZ"} : (tensor<40x96xf16>) -> tensor<40x96xf16, #ge.format<FRACTAL_NZ>>
  %y = ge.transdata %nz {src_format = "FRACTAL_NZ", dst_format = "ND"} : (tensor<40x96xf16, #ge.format<FRACTAL_NZ>>) -> tensor<40x96xf16>
  func.return %y : tensor<40x96xf16>
}

// CHECK-LABEL: npu.kernel @k0_nz(%0: memref<40x96xf16, #npu.space<gm>>, %1: memref<6x3x16x16xf16, #npu.space<gm>>) attributes {block_dim = 2, npu.sources = ["ge.transdata"]} {
// CHECK:         npu.copy %0[{{%.*}}], %a0[%c0] {cols = 1920}
// CHECK-NEXT:    npu.vcopy %a0[%c0], %b0[%c0] {rows = 20, cols = 16, strides = [96, 16]}
// CHECK-NEXT:    npu.vcopy %a0[%c16], %b0[%c320] {rows = 20, cols = 16, strides = [96, 16]}
// CHECK-COUNT-4: npu.vcopy
// CHECK-NEXT:    npu.copy %b0[%c0], %1[{{%.*}}] {rows = 6, cols = 320, strides = [320, 768]}
// CHECK-NEXT:    [[FIRST:%.*]] = arith.cmpi slt, %block, %c1 : index
// CHECK-NEXT:    scf.if [[FIRST]] {
// CHECK-NEXT:      npu.vdup %z1[%c0] {cols = 128, value = 0.0}
// CHECK-NEXT:      npu.copy %z1[%c0], %1[%c640] {rows = 6, cols = 128, strides = [0, 768]}
// CHECK-NEXT:    }

// CHECK-LABEL: npu.kernel @k1_y(%0: memref<6x3x16x16xf16, #npu.space<gm>>, %1: memref<40x96xf16, #npu.space<gm>>) attributes {block_dim = 2, npu.sources = ["ge.transdata"]} {
// CHECK:         npu.copy %0[{{%.*}}], %a0[%c0] {rows = 6, cols = 320, strides = [768, 320]}
// CHECK-COUNT-6: npu.vcopy %a0[{{%.*}}], %b0[{{%.*}}] {rows = 20, cols = 16, strides = [16, 96]}
// CHECK-NEXT:    npu.copy %b0[%c0], %1[{{%.*}}] {cols = 1920}

// SIM: check: ok (identical)
