// A double-buffered vector add over a 131072-element fp16 tensor on 8 cores.
// RUN: ge-sim %s --seed 1 --report --outputs %t.npz | filecheck %s
// RUN: python %S/inputs/expect.py %s %t.npz --seed 1 | filecheck %s --check-prefix=NUMERICS
// EXPECT: z = x + y
//
// Each of the 8 blocks adds 16384 elements, in 8 tiles of 2048 (4 KB). Two
// copies of every UB buffer (ping = 0, pong = 1) let MTE2 load tile i+1 while V
// adds tile i and MTE3 stores tile i-1. The loop body handles one ping and one
// pong tile, so each buffer has its own, static event ids (event = 0 / 1).
//
// Four flags per buffer p, as Ascend C's queues use them:
//   MTE2 -> V  (p): tile p is in UB               (V may read it)
//   V -> MTE2  (p): V has read x_p, y_p           (MTE2 may overwrite them)
//   V -> MTE3  (p): z_p is computed               (MTE3 may store it)
//   MTE3 -> V  (p): z_p is stored                 (V may overwrite it)
// The "may overwrite" flags start set (before the loop) and are consumed after it,
// so every set_flag has its wait_flag when the kernel ends.

// CHECK:      z: tensor<131072xf16>
// CHECK:      npu simulation on ascend910: coupled, 32 cores at 1 GHz
// CHECK-NEXT: total: [[CYCLES:[0-9]+]] cycles = {{[0-9.]+}} us
// CHECK-NEXT: roofline: {{[0-9]+}} cycles (memory bound)
// CHECK-NEXT: gm: read 524288 B, written 262144 B, peak 786432 B (arena 0 B)
// CHECK:      MTE2 {{ +[0-9]+ +[0-9.]+}}%
// CHECK:      gm_to_ub        524288
// CHECK-NEXT: ub_to_gm        262144
// CHECK:      @vadd {{ +}}0 {{ +}}8 {{ +}}3000
// NUMERICS: ok: z matches x + y

npu.kernel @vadd(%x: memref<131072xf16, #npu.space<gm>>, %y: memref<131072xf16, #npu.space<gm>>,
                 %z: memref<131072xf16, #npu.space<gm>>) attributes {block_dim = 8} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index          // 4 ping-pong pairs = 8 tiles per block
  %tile = arith.constant 2048 : index
  %pair = arith.constant 4096 : index
  %per_block = arith.constant 16384 : index
  %b = npu.block_idx : index
  %start = arith.muli %b, %per_block : index

  // UB: x0 x1 y0 y1 z0 z1, 4 KB each (byte offsets, 32-byte aligned).
  %x0 = npu.alloc {offset = 0} : memref<2048xf16, #npu.space<ub>>
  %x1 = npu.alloc {offset = 4096} : memref<2048xf16, #npu.space<ub>>
  %y0 = npu.alloc {offset = 8192} : memref<2048xf16, #npu.space<ub>>
  %y1 = npu.alloc {offset = 12288} : memref<2048xf16, #npu.space<ub>>
  %z0 = npu.alloc {offset = 16384} : memref<2048xf16, #npu.space<ub>>
  %z1 = npu.alloc {offset = 20480} : memref<2048xf16, #npu.space<ub>>

  // Every buffer starts free.
  npu.set_flag {src = "V", dst = "MTE2", event = 0}
  npu.set_flag {src = "V", dst = "MTE2", event = 1}
  npu.set_flag {src = "MTE3", dst = "V", event = 0}
  npu.set_flag {src = "MTE3", dst = "V", event = 1}

  scf.for %i = %c0 to %c4 step %c1 {
    %pair_offset = arith.muli %i, %pair : index
    %o0 = arith.addi %start, %pair_offset : index     // the ping tile
    %o1 = arith.addi %o0, %tile : index                // the pong tile

    // ---- ping (buffers 0, events 0)
    npu.wait_flag {src = "V", dst = "MTE2", event = 0}
    npu.copy %x[%o0], %x0[%c0] {cols = 2048}
    npu.copy %y[%o0], %y0[%c0] {cols = 2048}
    npu.set_flag {src = "MTE2", dst = "V", event = 0}
    npu.wait_flag {src = "MTE2", dst = "V", event = 0}
    npu.wait_flag {src = "MTE3", dst = "V", event = 0}
    npu.vadd %x0[%c0], %y0[%c0], %z0[%c0] {cols = 2048}
    npu.set_flag {src = "V", dst = "MTE2", event = 0}
    npu.set_flag {src = "V", dst = "MTE3", event = 0}
    npu.wait_flag {src = "V", dst = "MTE3", event = 0}
    npu.copy %z0[%c0], %z[%o0] {cols = 2048}
    npu.set_flag {src = "MTE3", dst = "V", event = 0}

    // ---- pong (buffers 1, events 1): the same with the other buffers
    npu.wait_flag {src = "V", dst = "MTE2", event = 1}
    npu.copy %x[%o1], %x1[%c0] {cols = 2048}
    npu.copy %y[%o1], %y1[%c0] {cols = 2048}
    npu.set_flag {src = "MTE2", dst = "V", event = 1}
    npu.wait_flag {src = "MTE2", dst = "V", event = 1}
    npu.wait_flag {src = "MTE3", dst = "V", event = 1}
    npu.vadd %x1[%c0], %y1[%c0], %z1[%c0] {cols = 2048}
    npu.set_flag {src = "V", dst = "MTE2", event = 1}
    npu.set_flag {src = "V", dst = "MTE3", event = 1}
    npu.wait_flag {src = "V", dst = "MTE3", event = 1}
    npu.copy %z1[%c0], %z[%o1] {cols = 2048}
    npu.set_flag {src = "MTE3", dst = "V", event = 1}
  }

  // Consume the flags still set, so the next kernel starts clean.
  npu.wait_flag {src = "V", dst = "MTE2", event = 0}
  npu.wait_flag {src = "V", dst = "MTE2", event = 1}
  npu.wait_flag {src = "MTE3", dst = "V", event = 0}
  npu.wait_flag {src = "MTE3", dst = "V", event = 1}
}

func.func @main(%x: memref<131072xf16, #npu.space<gm>> {ge.name = "x"},
                %y: memref<131072xf16, #npu.space<gm>> {ge.name = "y"},
                %z: memref<131072xf16, #npu.space<gm>> {ge.name = "z", npu.output}) {
  npu.launch @vadd(%x, %y, %z) {stream = 0}
  func.return
}
