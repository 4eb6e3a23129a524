// A 3x3 convolution (pads 1) of an NCHW image with FRACTAL_Z weights and a
// per-channel bias + ReLU: an implicit GEMM (O x P) = W (O x K) . img2col (K x P)
// with K = one 16-channel block x 9 taps. Per K chunk the input rows of the pixel
// tile go to a zero-padded UB slab (the NCHW planes transposed by the vector unit
// into pixels x 16 channels; the rows' planes loaded into two buffers in turn, both
// loads of a pair before its transposes, the 5th row written out after the loop
// over pairs; a chunk of one channel block fills a slab zeroed once at the
// kernel's top, each row outside the image zeroed by its own fill), then each
// window position (kh, kw) goes to L1 in one
// MTE3 copy: a run of 6 pixels x 16 channels for each of the tile's 3 output rows.
// The staging order is the estimate's: here the image is staged before the
// weights, because its gathers land the chunk later than the weights' DMA.
// RUN: ge-opt %s -p 'ge-to-npu{hw=tiny debug=true}' 2>&1 | filecheck %s
// RUN: ge-sim %s --pipeline 'ge-lower-to-npu{hw=tiny}' --hw tiny --check | filecheck %s --check-prefix=SIM

func.func @main(%x: tensor<1x16x6x6xf16> {ge.name = "x"}, %bias: tensor<8xf16> {ge.name = "bias"}) -> (tensor<1x8x6x6xf16> {ge.name = "y"}) {
  %w = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.2> : tensor<8x16x3x3xf16, #ge.format<FRACTAL_Z>>
  %y = fused.conv2d_bias_act %x, %w bias %bias {pads = [1, 1, 1, 1], act = "relu"} : (tensor<1x16x6x6xf16>, tensor<8x16x3x3xf16, #ge.format<FRACTAL_Z>>, tensor<8xf16>) -> tensor<1x8x6x6xf16>
  func.return %y : tensor<1x8x6x6xf16>
}

// CHECK:      [ge-to-npu] @k0_y: cube 1 x (8 x 144) @ (144 x 36): items of 16 x 18 (1 x 1 x 2 = 2 items, 1 per core on 2 cores)
// CHECK:        npu.vdup %[[SLAB:.*]][%c0] {cols = {{[0-9]+}}, value = 0.0}
// CHECK:        scf.for %irow = %c0 to %c2 step %c1 {
// CHECK:            scf.if
// CHECK:              npu.copy %0[%{{.*}}], %[[PLANES0:.*]][%c0] {rows = 16, cols = 6, strides = [36, 16]}
// CHECK-NOT:          npu.vtranspose
// CHECK:              npu.copy %0[%{{.*}}], %[[PLANES1:.*]][%c0] {rows = 16, cols = 6, strides = [36, 16]}
// CHECK:              npu.vtranspose %[[PLANES0]][%c0], %[[SLAB]][%{{.*}}] {rows = 16, cols = 6, strides = [16, 16]}
// CHECK:            scf.if
// CHECK:              npu.vdup %[[SLAB]][%{{.*}}] {cols = 128, value = 0.0}
// CHECK:              npu.vtranspose %[[PLANES1]][%c0], %[[SLAB]][%{{.*}}] {rows = 16, cols = 6, strides = [16, 16]}
// CHECK:        } {npu.pipelined}
// CHECK:          npu.copy %0[%{{.*}}], %[[PLANES0]][%c0] {rows = 16, cols = 6, strides = [36, 16]}
// CHECK-NEXT:     npu.vtranspose %[[PLANES0]][%c0], %[[SLAB]][%c528] {rows = 16, cols = 6, strides = [16, 16]}
// CHECK:        scf.for %kh = %c0 to %c3 step %c1 {
// CHECK:          npu.copy %[[SLAB]][%{{.*}}], %[[IMG:.*]][%{{.*}}] {rows = 3, cols = 96, strides = [128, 96]}
// CHECK:          npu.copy %[[SLAB]][%{{.*}}], %[[IMG]][%{{.*}}] {rows = 3, cols = 96, strides = [128, 96]}
// CHECK:          npu.copy %[[SLAB]][%{{.*}}], %[[IMG]][%{{.*}}] {rows = 3, cols = 96, strides = [128, 96]}
// CHECK-NEXT:   }
// CHECK-NEXT:   npu.copy %1[%c0], %{{.*}}[%c0] {rows = 9, cols = 128, strides = [256, 256]}
// CHECK:        npu.load_l0 %[[IMG]][%{{.*}}], %{{.*}}[%c0] {{{.*}}layout = "nz", transpose = true}
// CHECK:        npu.mmad
// CHECK:        npu.fixpipe
// CHECK:        npu.vrelu
// CHECK:        npu.copy %{{.*}}, %3[%{{.*}}] {rows = 8, cols = 18, strides = [32, 36]}

// SIM: check: ok
