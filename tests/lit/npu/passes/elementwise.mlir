// The npu passes on a small elementwise kernel, z = 2x + y, written without
// sync and without buffer offsets. Block b handles b + 2 tiles of 512 elements
// (a trip count known only at run time: 2 tiles on block 0, 3 on block 1).
// RUN: ge-opt %s -p npu-double-buffer | filecheck %s --check-prefix=DB
// RUN: ge-opt %s -p npu-insert-sync | filecheck %s --check-prefix=SYNC
// RUN: ge-opt %s -p npu-plan-local-memory | filecheck %s --check-prefix=PLAN
// RUN: ge-opt %s -p 'npu-double-buffer{enable=false}' | filecheck %s --check-prefix=OFF
// RUN: ge-opt %s -p npu-double-buffer,npu-plan-local-memory,npu-insert-sync --pass-statistics 2>&1 >/dev/null | filecheck %s --check-prefix=STATS
// RUN: ge-sim %s --pipeline npu-double-buffer,npu-plan-local-memory,npu-insert-sync --seed 4 --outputs %t.npz | filecheck %s --check-prefix=SIM
// RUN: python %S/../inputs/expect.py %s %t.npz --seed 4 | filecheck %s --check-prefix=NUMERICS
// EXPECT: z = 2 * x + y

// Double buffering: the three tile buffers get a second copy; the loop runs over
// pairs of tiles (ping on the first copies, pong on the second) and the last tile
// of an odd count runs under an scf.if on the first copies.
// DB-LABEL: npu.kernel @axpy
// DB:         %xa = npu.alloc : memref<512xf16, #npu.space<ub>>
// DB-NEXT:    %xa_pong = npu.alloc : memref<512xf16, #npu.space<ub>>
// DB-NEXT:    %ya = npu.alloc
// DB-NEXT:    %ya_pong = npu.alloc
// DB-NEXT:    %za = npu.alloc
// DB-NEXT:    %za_pong = npu.alloc
// DB:         %trips = arith.maxsi %tiles, %{{.*}} : index
// DB-NEXT:    [[HALF:%.*]] = arith.divui %trips, [[TWO:%.*]] : index
// DB-NEXT:    %pairs_end = arith.muli [[HALF]], [[TWO]] : index
// DB-NEXT:    %odd = arith.cmpi slt, %pairs_end, %tiles : index
// DB-NEXT:    scf.for %i = %c0 to %pairs_end step [[TWO]] {
// DB:           npu.copy %x[%o], %xa[%c0] {cols = 512}
// DB:           npu.copy %za[%c0], %z[%o] {cols = 512}
// DB-NEXT:      %i_pong = arith.addi %i, %c1 : index
// DB:           npu.copy %x[%o_1], %xa_pong[%c0] {cols = 512}
// DB-NEXT:      npu.copy %y[%o_1], %ya_pong[%c0] {cols = 512}
// DB-NEXT:      npu.vmuls %xa_pong[%c0], %xa_pong[%c0] {cols = 512, scalar = 2.0}
// DB-NEXT:      npu.vadd %xa_pong[%c0], %ya_pong[%c0], %za_pong[%c0] {cols = 512}
// DB-NEXT:      npu.copy %za_pong[%c0], %z[%o_1] {cols = 512}
// DB-NEXT:    }
// DB-NEXT:    scf.if %odd {
// DB-NEXT:      %t_2 = arith.muli %pairs_end, %tile : index
// DB:           npu.vadd %xa[%c0], %ya[%c0], %za[%c0] {cols = 512}
// DB:         } else {
// DB-NEXT:    }
// DB-NOT:     set_flag

// OFF-NOT:    _pong
// OFF:        scf.for %i = %c0 to %tiles step %c1 {

// Sync on the single-buffered loop: tiles in (MTE2 -> V), result out (V -> MTE3),
// and two flags that hand buffers back to the next iteration: xa / ya are free
// once V has read them (V -> MTE2, waited at the end of the body, where MTE2 has
// nothing left to do), za once MTE3 has stored it (MTE3 -> V, waited before the
// vadd of the next iteration, so set once before the loop and waited once after).
// SYNC-LABEL: npu.kernel @axpy
// SYNC:         npu.set_flag {src = "MTE3", dst = "V", event = 0}
// SYNC-NEXT:    scf.for %i = %c0 to %tiles step %c1 {
// SYNC:           npu.copy %y[%o], %ya[%c0] {cols = 512}
// SYNC-NEXT:      npu.set_flag {src = "MTE2", dst = "V", event = 0}
// SYNC-NEXT:      npu.wait_flag {src = "MTE2", dst = "V", event = 0}
// SYNC-NEXT:      npu.vmuls
// SYNC-NEXT:      npu.wait_flag {src = "MTE3", dst = "V", event = 0}
// SYNC-NEXT:      npu.vadd
// SYNC-NEXT:      npu.set_flag {src = "V", dst = "MTE3", event = 0}
// SYNC-NEXT:      npu.set_flag {src = "V", dst = "MTE2", event = 0}
// SYNC-NEXT:      npu.wait_flag {src = "V", dst = "MTE3", event = 0}
// SYNC-NEXT:      npu.copy %za[%c0], %z[%o] {cols = 512}
// SYNC-NEXT:      npu.set_flag {src = "MTE3", dst = "V", event = 0}
// SYNC-NEXT:      npu.wait_flag {src = "V", dst = "MTE2", event = 0}
// SYNC-NEXT:    }
// SYNC-NEXT:    npu.wait_flag {src = "MTE3", dst = "V", event = 0}
// SYNC-NEXT:  }

// Planning: the three buffers live through the loop, side by side.
// PLAN:       %xa = npu.alloc {offset = 0} : memref<512xf16, #npu.space<ub>>
// PLAN-NEXT:  %ya = npu.alloc {offset = 1024} : memref<512xf16, #npu.space<ub>>
// PLAN-NEXT:  %za = npu.alloc {offset = 2048} : memref<512xf16, #npu.space<ub>>

// STATS: npu-double-buffer: 1 loops double-buffered, 3 buffers copied, 0 loops left single (copies would not fit)
// STATS: npu-plan-local-memory: 6 buffers placed, 6144 bytes without reuse, 6144 bytes as placed
// STATS: npu-insert-sync: {{[0-9]+}} dependencies, 10 flags, 0 barriers for lack of event ids, 26 sync ops

// SIM: z: tensor<2560xf16>
// SIM-NOT: non-finite
// NUMERICS: ok: z matches 2 * x + y

npu.kernel @axpy(%x: memref<2560xf16, #npu.space<gm>>, %y: memref<2560xf16, #npu.space<gm>>,
                 %z: memref<2560xf16, #npu.space<gm>>) attributes {block_dim = 2} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %tile = arith.constant 512 : index
  %per_block = arith.constant 1024 : index
  %b = npu.block_idx : index
  %tiles = arith.addi %b, %c2 : index
  %start = arith.muli %b, %per_block : index
  %xa = npu.alloc : memref<512xf16, #npu.space<ub>>
  %ya = npu.alloc : memref<512xf16, #npu.space<ub>>
  %za = npu.alloc : memref<512xf16, #npu.space<ub>>
  scf.for %i = %c0 to %tiles step %c1 {
    %t = arith.muli %i, %tile : index
    %o = arith.addi %start, %t : index
    npu.copy %x[%o], %xa[%c0] {cols = 512}
    npu.copy %y[%o], %ya[%c0] {cols = 512}
    npu.vmuls %xa[%c0], %xa[%c0] {cols = 512, scalar = 2.0}
    npu.vadd %xa[%c0], %ya[%c0], %za[%c0] {cols = 512}
    npu.copy %za[%c0], %z[%o] {cols = 512}
  }
}

func.func @main(%x: memref<2560xf16, #npu.space<gm>> {ge.name = "x"},
                %y: memref<2560xf16, #npu.space<gm>> {ge.name = "y"},
                %z: memref<2560xf16, #npu.space<gm>> {ge.name = "z", npu.output}) {
  npu.launch @axpy(%x, %y, %z)
  func.return
}
