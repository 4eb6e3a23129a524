// A bias over N of a FRACTAL_NZ matrix (64 x 40, three 16-column blocks): the
// bias is zero-padded to 48 and expanded once into the (blocks x rows x 16)
// shape of a tile by doubling copies; each tile is then one strided load (the
// tile's rows of every block), one vadd and one store.
// RUN: ge-opt %s -p 'ge-to-npu{hw=tiny debug=true}' 2>&1 | filecheck %s
// RUN: ge-sim %s --pipeline 'ge-lower-to-npu{hw=tiny}' --hw tiny --check | filecheck %s --check-prefix=SIM

func.func @main(%a: tensor<64x40xf16>, %b: tensor<40xf16>) -> tensor<64x40xf16, #ge.format<FRACTAL_NZ>> {
  %x = ge.transdata %a {src_format = "ND", dst_format = "FRACTAL_NZ"} : (tensor<64x40xf16>) -> tensor<64x40xf16, #ge.format<FRACTAL_NZ>>
  %r = ge.add %x, %b : (tensor<64x40xf16, #ge.format<FRACTAL_NZ>>, tensor<40xf16>) -> tensor<64x40xf16, #ge.format<FRACTAL_NZ>>
  func.return %r : tensor<64x40xf16, #ge.format<FRACTAL_NZ>>
}

// CHECK:      [ge-to-npu] @k1_r: 64 x 48 (blocked 1 x 3 x 64 x 16) in tiles of 32 rows
// CHECK:      npu.kernel @k1_r
// CHECK:        npu.copy %1[%c0], %[[RAW:[0-9]+]][%c0] {cols = 40}
// CHECK-NEXT:   npu.vdup %[[PADDED:[0-9]+]][%c0] {cols = 48, value = 0.0}
// CHECK-NEXT:   npu.vcopy %[[RAW]][%c0], %[[PADDED]][%c0] {cols = 40}
// CHECK-NEXT:   npu.vcopy %[[PADDED]][%c0], %[[BIAS:[0-9]+]][%c0] {rows = 3, cols = 16, strides = [16, 512]}
// CHECK-NEXT:   npu.vcopy %[[BIAS]][%c0], %[[BIAS]][%c16] {rows = 3, cols = 16, strides = [512, 512]}
// CHECK:        npu.vcopy %[[BIAS]][%c0], %[[BIAS]][%c256] {rows = 3, cols = 256, strides = [512, 512]}
// CHECK-NOT:  scf.for %tile
// CHECK:        npu.copy %0[%{{.*}}], %[[X:[0-9]+]][%c0] {rows = 3, cols = 512, strides = [1024, 512]}
// CHECK-NEXT:   npu.vadd %[[X]][%c0], %[[BIAS]][%c0], %[[Y:[0-9]+]][%c0] {rows = 3, cols = 512}
// CHECK:        npu.copy %[[Y]][%c0], %2[%{{.*}}] {rows = 3, cols = 512, strides = [512, 1024]}

// SIM: check: ok
