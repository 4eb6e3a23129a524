// A fused.group (rms_norm, relu, then the FRACTAL_NZ layout the next matmul
// wants) is one kernel: each tile of rows is loaded once, normalised in fp32,
// and written straight into NZ: the tile's 16-column strips are moved into an
// NZ-ordered staging buffer (zeroed first: the padding columns 40..47 of the
// last block stay zero), then stored with one strided copy.
// RUN: ge-opt %s -p 'ge-to-npu{hw=tiny debug=true}' 2>&1 | filecheck %s
// RUN: ge-sim %s --pipeline 'ge-lower-to-npu{hw=tiny}' --hw tiny --check | filecheck %s --check-prefix=SIM

func.func @main(%x: tensor<48x40xf16>, %w: tensor<40xf16>) -> tensor<48x40xf16> {
  %g = fused.group %x, %w : (tensor<48x40xf16>, tensor<40xf16>) -> tensor<48x40xf16, #ge.format<FRACTAL_NZ>> {
  ^bb0(%0: tensor<48x40xf16>, %1: tensor<40xf16>):
    %2 = ge.rms_norm %0, %1 {epsilon = 1.0e-06} : (tensor<48x40xf16>, tensor<40xf16>) -> tensor<48x40xf16>
    %3 = ge.relu %2 : (tensor<48x40xf16>) -> tensor<48x40xf16>
    %4 = ge.transdata %3 {src_format = "ND", dst_format = "FRACTAL_NZ"} : (tensor<48x40xf16>) -> tensor<48x40xf16, #ge.format<FRACTAL_NZ>>
    fused.yield %4 : tensor<48x40xf16, #ge.format<FRACTAL_NZ>>
  }
  %r = ge.transdata %g {src_format = "FRACTAL_NZ", dst_format = "ND"} : (tensor<48x40xf16, #ge.format<FRACTAL_NZ>>) -> tensor<48x40xf16>
  func.return %r : tensor<48x40xf16>
}

// CHECK:      [ge-to-npu] @k0_g: group of 3 ops on rows [48], widest value 40
// CHECK:      npu.kernel @k0_g
// CHECK-NOT:  scf.for %tile
// CHECK:        npu.copy %0[%{{.*}}], %[[X:[0-9]+]][%c0] {cols = 960}
// CHECK-NEXT:   npu.vcast %[[X]][%c0], %[[W:[0-9]+]][%c0] {rows = 24, cols = 40}
// CHECK:        npu.vrsqrt
// CHECK:        npu.vmul %[[N:[0-9]+]][%c0], %{{[0-9]+}}[%c0], %[[N]][%c0] {rows = 24, cols = 40, strides = [40, 0, 40]}
// CHECK-NEXT:   npu.vrelu %[[N]][%c0], %[[Y:[0-9]+]][%c0] {rows = 24, cols = 40}
// CHECK-NEXT:   npu.vdup %[[NZ:[0-9]+]][%c0] {cols = 1152, value = 0.0}
// CHECK-NEXT:   scf.for %[[J:.*]] = %c0 to %c2 step %c1 {
// CHECK:          npu.vcopy %[[Y]][%{{.*}}], %[[NZ]][%{{.*}}] {rows = 24, cols = 16, strides = [40, 16]}
// CHECK:        }
// CHECK-NEXT:   npu.vcopy %[[Y]][%c32], %[[NZ]][%c768] {rows = 24, cols = 8, strides = [40, 16]}
// CHECK:        npu.copy %[[NZ]][%c0], %2[%{{.*}}] {rows = 3, cols = 384, strides = [384, 768]}

// SIM: check: ok
