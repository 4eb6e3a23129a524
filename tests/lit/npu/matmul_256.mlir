// A tiled 256x256x256 fp16 matmul on the cube: C = A @ B, fp32 accumulation in L0C,
// rounded to fp16 on the way out.
// RUN: ge-sim %s --seed 2 --report --outputs %t.npz | filecheck %s
// RUN: python %S/inputs/expect.py %s %t.npz --seed 2 | filecheck %s --check-prefix=NUMERICS
// EXPECT: c = a @ b
//
// 4 blocks, each computing one 128x128 tile of C from a 128x256 row panel of A
// and a 256x128 column panel of B, in 4 steps of k = 64:
//   MTE2  gm -> l1      A[rows, k..k+64] (128x64) and B[k..k+64, cols] (64x128),
//                       2-D strided copies out of the row-major (ND) matrices
//   MTE1  l1 -> l0a/l0b load_l0: the cube's fractal re-layout, from ND in L1
//   M     mmad          L0C (128x128 fp32) = / += L0A @ L0B
//   FIX   l0c -> gm     once per tile, converting fp32 -> fp16
// Single-buffered: each stage waits for the previous one and frees its input
// buffer with a flag back (MTE1 -> MTE2: L1 free; M -> MTE1: L0A/L0B free).

// CHECK:      c: tensor<256x256xf16>
// CHECK:      total: {{[0-9]+}} cycles
// CHECK-NEXT: roofline: {{[0-9]+}} cycles
// CHECK-NEXT: gm: read 524288 B, written 131072 B
// CHECK:      M {{ +}}{{[1-9][0-9]*}}
// CHECK:      gm_to_l1        524288
// CHECK-NEXT: l0c_to_gm       131072
// CHECK-NEXT: l1_to_l0a       262144
// CHECK-NEXT: l1_to_l0b       262144
// CHECK:      @matmul {{ +}}0 {{ +}}4
// NUMERICS: ok: c matches a @ b

npu.kernel @matmul(%a: memref<256x256xf16, #npu.space<gm>>, %b: memref<256x256xf16, #npu.space<gm>>,
                   %c: memref<256x256xf16, #npu.space<gm>>) attributes {block_dim = 4} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %c256 = arith.constant 256 : index

  // Block b computes C[128*(b/2) .., 128*(b%2) ..].
  %blk = npu.block_idx : index
  %bi = arith.divui %blk, %c2 : index
  %bj = arith.remui %blk, %c2 : index
  %row0 = arith.muli %bi, %c128 : index
  %col0 = arith.muli %bj, %c128 : index
  %a_base = arith.muli %row0, %c256 : index          // flat offset of A[row0, 0]
  %c_row = arith.muli %row0, %c256 : index
  %c_base = arith.addi %c_row, %col0 : index         // flat offset of C[row0, col0]

  %a1 = npu.alloc {offset = 0} : memref<128x64xf16, #npu.space<l1>>
  %b1 = npu.alloc {offset = 16384} : memref<64x128xf16, #npu.space<l1>>
  %a0 = npu.alloc {offset = 0} : memref<128x64xf16, #npu.space<l0a>>
  %b0 = npu.alloc {offset = 0} : memref<64x128xf16, #npu.space<l0b>>
  %acc = npu.alloc {offset = 0} : memref<128x128xf32, #npu.space<l0c>>

  npu.set_flag {src = "MTE1", dst = "MTE2", event = 0}     // L1 starts free
  npu.set_flag {src = "M", dst = "MTE1", event = 0}        // L0A / L0B start free

  scf.for %k = %c0 to %c4 step %c1 {
    %k0 = arith.muli %k, %c64 : index
    %ao = arith.addi %a_base, %k0 : index              // A[row0, k0]
    %b_row = arith.muli %k0, %c256 : index
    %bo = arith.addi %b_row, %col0 : index             // B[k0, col0]

    npu.wait_flag {src = "MTE1", dst = "MTE2", event = 0}
    npu.copy %a[%ao], %a1[%c0] {rows = 128, cols = 64, strides = [256, 64]}
    npu.copy %b[%bo], %b1[%c0] {rows = 64, cols = 128, strides = [256, 128]}
    npu.set_flag {src = "MTE2", dst = "MTE1", event = 0}
    npu.wait_flag {src = "MTE2", dst = "MTE1", event = 0}

    npu.wait_flag {src = "M", dst = "MTE1", event = 0}
    npu.load_l0 %a1[%c0], %a0[%c0] {rows = 128, cols = 64}
    npu.load_l0 %b1[%c0], %b0[%c0] {rows = 64, cols = 128}
    npu.set_flag {src = "MTE1", dst = "MTE2", event = 0}   // L1 free again
    npu.set_flag {src = "MTE1", dst = "M", event = 0}
    npu.wait_flag {src = "MTE1", dst = "M", event = 0}

    %first = arith.cmpi eq, %k, %c0 : index
    scf.if %first {
      npu.mmad %a0[%c0], %b0[%c0], %acc[%c0] {m = 128, n = 128, k = 64}
    } else {
      npu.mmad %a0[%c0], %b0[%c0], %acc[%c0] {m = 128, n = 128, k = 64, accumulate = true}
    }
    npu.set_flag {src = "M", dst = "MTE1", event = 0}      // L0A / L0B free again
  }

  npu.set_flag {src = "M", dst = "FIX", event = 0}
  npu.wait_flag {src = "M", dst = "FIX", event = 0}
  npu.fixpipe %acc[%c0], %c[%c_base] {rows = 128, cols = 128, strides = [128, 256]}

  npu.wait_flag {src = "MTE1", dst = "MTE2", event = 0}
  npu.wait_flag {src = "M", dst = "MTE1", event = 0}
}

func.func @main(%a: memref<256x256xf16, #npu.space<gm>> {ge.name = "a"},
                %b: memref<256x256xf16, #npu.space<gm>> {ge.name = "b"},
                %c: memref<256x256xf16, #npu.space<gm>> {ge.name = "c", npu.output}) {
  npu.launch @matmul(%a, %b, %c)
  func.return
}
