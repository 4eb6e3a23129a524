// A 3x3 stride-2 max pool in NC1HWC0: pixels of 16 lanes, the input tile padded
// with the lowest fp16 (the pads never win) at a pitch of 10 pixels, and one
// vector instruction per window offset over the whole output tile (source row
// stride 2 pixels): a vcopy then eight vmax. The padding around the loaded
// pixels is written after the load (disjoint from it). The top band (static: it reads
// the padding row) and the interior bands (run-time row) are separate bodies.
// RUN: ge-opt %s -p 'ge-to-npu{hw=tiny}' | filecheck %s
// RUN: ge-sim %s --pipeline 'ge-lower-to-npu{hw=tiny}' --hw tiny --check | filecheck %s --check-prefix=SIM

func.func @main(%x: tensor<1x16x8x8xf16> {ge.name = "x"}) -> (tensor<1x16x4x4xf16> {ge.name = "y"}) {
  %x5 = ge.transdata %x {src_format = "ND", dst_format = "NC1HWC0"} : (tensor<1x16x8x8xf16>) -> tensor<1x16x8x8xf16, #ge.format<NC1HWC0>>
  %p = ge.max_pool2d %x5 {kernel = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1]} : (tensor<1x16x8x8xf16, #ge.format<NC1HWC0>>) -> tensor<1x16x4x4xf16, #ge.format<NC1HWC0>>
  %y = ge.transdata %p {src_format = "NC1HWC0", dst_format = "ND"} : (tensor<1x16x4x4xf16, #ge.format<NC1HWC0>>) -> tensor<1x16x4x4xf16>
  func.return %y : tensor<1x16x4x4xf16>
}

// CHECK-LABEL: npu.kernel @k1_p(%0: memref<1x1x8x8x16xf16, #npu.space<gm>>, %1: memref<1x1x4x4x16xf16, #npu.space<gm>>)
// CHECK:         %in = npu.alloc : memref<480xf16, #npu.space<ub>>
// CHECK:         %out = npu.alloc : memref<160xf16, #npu.space<ub>>
// CHECK:         scf.for %tile =
// CHECK:           scf.if
// CHECK:             npu.copy %0[{{%.*}}], %in[%c176] {rows = 2, cols = 128, strides = [128, 160]}
// CHECK-NEXT:        npu.vdup %in[%c0] {cols = 160, value = -65504.0}
// CHECK-NEXT:        npu.vdup %in[%c160] {rows = 2, cols = 16, strides = [160], value = -65504.0}
// CHECK:           scf.if
// CHECK:             npu.copy %0[{{%.*}}], %in[%c16] {rows = 3, cols = 128, strides = [128, 160]}
// CHECK-NEXT:        npu.vdup %in[%c0] {rows = 3, cols = 16, strides = [160], value = -65504.0}
// CHECK-NEXT:        npu.vcopy %in[%c0], %out[%c0] {rows = 4, cols = 16, strides = [32, 16]}
// CHECK-NEXT:        npu.vmax %out[%c0], %in[%c16], %out[%c0] {rows = 4, cols = 16, strides = [16, 32, 16]}
// CHECK-NEXT:        npu.vmax %out[%c0], %in[%c32], %out[%c0] {rows = 4, cols = 16, strides = [16, 32, 16]}
// CHECK-NEXT:        npu.vmax %out[%c0], %in[%c160], %out[%c0] {rows = 4, cols = 16, strides = [16, 32, 16]}
// CHECK-COUNT-5:     npu.vmax %out[%c0], %in[{{%c[0-9]+}}], %out[%c0] {rows = 4, cols = 16, strides = [16, 32, 16]}
// CHECK-NEXT:        arith.muli
// CHECK:             npu.copy %out[%c0], %1[{{%.*}}] {cols = 64}

// SIM: check: ok (identical)
