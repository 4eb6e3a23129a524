// Softmax over the rows of a 64x256 fp16 matrix, computed in fp32 in UB.
// RUN: ge-sim %s --hw tiny --seed 3 --report --outputs %t.npz | filecheck %s
// RUN: python %S/inputs/expect.py %s %t.npz --seed 3 | filecheck %s --check-prefix=NUMERICS
// EXPECT: y = softmax(x, axis=-1)
//
// 4 blocks of 16 rows, each in 2 tiles of 8 rows. Per tile, on V:
//   cast fp16 -> fp32, row max (one result per row), x - max (the max broadcast
//   along the row: column stride 0), exp, row sum, divide by the broadcast sum,
//   cast back to fp16.
// The per-row results live in their own small buffers (8 fp32 = 32 bytes).

// CHECK:      y: tensor<64x256xf16> min={{.*}} max={{.*}}
// CHECK:      npu simulation on tiny: coupled, 2 cores at 1 GHz
// CHECK:      V {{ +}}{{[1-9][0-9]*}}
// CHECK:      gm_to_ub         32768
// CHECK-NEXT: ub_to_gm         32768
// CHECK:      @softmax {{ +}}0 {{ +}}4
// NUMERICS: ok: y matches softmax(x, axis=-1)

npu.kernel @softmax(%x: memref<64x256xf16, #npu.space<gm>>, %y: memref<64x256xf16, #npu.space<gm>>)
    attributes {block_dim = 4} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %tile = arith.constant 2048 : index          // 8 rows x 256 columns
  %per_block = arith.constant 4096 : index     // 16 rows
  %b = npu.block_idx : index
  %start = arith.muli %b, %per_block : index

  %xh = npu.alloc {offset = 0} : memref<8x256xf16, #npu.space<ub>>
  %xf = npu.alloc {offset = 4096} : memref<8x256xf32, #npu.space<ub>>
  %mx = npu.alloc {offset = 12288} : memref<8xf32, #npu.space<ub>>
  %sm = npu.alloc {offset = 12320} : memref<8xf32, #npu.space<ub>>

  scf.for %i = %c0 to %c2 step %c1 {
    %t = arith.muli %i, %tile : index
    %o = arith.addi %start, %t : index
    npu.copy %x[%o], %xh[%c0] {rows = 8, cols = 256}
    npu.set_flag {src = "MTE2", dst = "V", event = 0}
    npu.wait_flag {src = "MTE2", dst = "V", event = 0}

    npu.vcast %xh[%c0], %xf[%c0] {rows = 8, cols = 256}
    npu.vreduce_max %xf[%c0], %mx[%c0] {rows = 8, cols = 256}
    npu.vsub %xf[%c0], %mx[%c0], %xf[%c0] {rows = 8, cols = 256, strides = [256, 1, 256], col_strides = [1, 0, 1]}
    npu.vexp %xf[%c0], %xf[%c0] {rows = 8, cols = 256}
    npu.vreduce_sum %xf[%c0], %sm[%c0] {rows = 8, cols = 256}
    npu.vdiv %xf[%c0], %sm[%c0], %xf[%c0] {rows = 8, cols = 256, strides = [256, 1, 256], col_strides = [1, 0, 1]}
    npu.vcast %xf[%c0], %xh[%c0] {rows = 8, cols = 256}

    npu.set_flag {src = "V", dst = "MTE3", event = 0}
    npu.wait_flag {src = "V", dst = "MTE3", event = 0}
    npu.copy %xh[%c0], %y[%o] {rows = 8, cols = 256}
    npu.set_flag {src = "MTE3", dst = "MTE2", event = 0}   // xh may be loaded again
    npu.wait_flag {src = "MTE3", dst = "MTE2", event = 0}
  }
}

func.func @main(%x: memref<64x256xf16, #npu.space<gm>> {ge.name = "x"},
                %y: memref<64x256xf16, #npu.space<gm>> {ge.name = "y", npu.output}) {
  npu.launch @softmax(%x, %y)
  func.return
}
