// npu-prefetch-constants moves a load further back than one barrier: a merged
// kernel of three small phases (p0..p2: each scales t by 2 in UB) and one (p3)
// that loads 12 rows of 2 KB of the constant %w per block. The rows do not fit
// the MTE2 room of p3's barrier (what p2's tail and the barrier leave idle, from
// the instructions' costs): they leave it and land in two pieces, rows 0-7 at
// p2's barrier (while p1 ends) and rows 8-11 at p1's (while p0 ends). The buffer
// moves off the UB bytes p0..p2 use (offset 0 and 512) to bytes none of them
// touches; p3's barrier, where nothing is left to load, is whole again.
// RUN: ge-opt %s -p 'npu-prefetch-constants{hw=tiny}' | filecheck %s
// RUN: ge-opt %s -p 'npu-prefetch-constants{hw=tiny}' --pass-statistics 2>&1 >/dev/null | filecheck %s --check-prefix=STATS
// RUN: ge-sim %s --hw tiny --pipeline 'npu-prefetch-constants{hw=tiny}' --seed 3 --outputs %t.npz
// RUN: python %S/../inputs/expect.py %s %t.npz --seed 3 | filecheck %s --check-prefix=NUMERICS
// EXPECT: y = np.concatenate([8 * x[:256] + 3, np.full(12032, 3.0), 8 * x[256:] + 3, np.full(12032, 3.0)])

// CHECK:      npu.copy %u0[%c0], %t[%o0] {cols = 256}
// CHECK-NEXT: npu.sync_all_arrive
// CHECK-NEXT: %bw = npu.block_idx : index
// CHECK-NEXT: %cn = arith.constant 12288 : index
// CHECK-NEXT: %ow = arith.muli %bw, %cn : index
// CHECK-NEXT: %c0w = arith.constant 0 : index
// CHECK-NEXT: %w_ub = npu.alloc {offset = 1024} : memref<12288xf16, #npu.space<ub>>
// CHECK-NEXT: %0 = arith.constant 8192 : index
// CHECK-NEXT: %1 = arith.addi %ow, %0 : index
// CHECK-NEXT: %2 = arith.constant 8192 : index
// CHECK-NEXT: %3 = arith.addi %c0w, %2 : index
// CHECK-NEXT: npu.copy %w[%1], %w_ub[%3] {rows = 4, cols = 1024}
// CHECK-NEXT: npu.sync_all_wait
// CHECK:      npu.copy %u1[%c0_1], %t[%o1] {cols = 256}
// CHECK-NEXT: npu.sync_all_arrive
// CHECK-NEXT: npu.copy %w[%ow], %w_ub[%c0w] {rows = 8, cols = 1024}
// CHECK-NEXT: npu.sync_all_wait
// CHECK:      npu.copy %u2[%c0_2], %t[%o2] {cols = 256}
// CHECK-NEXT: npu.sync_all{{$}}
// CHECK-NOT:  npu.copy %w
// CHECK:      npu.vadd %w_ub[%c0w], %w_ub[%c0w], %w_ub[%c0w] {cols = 12288}

// STATS: 1 copies prefetched, 2 row pieces prefetched further back

// NUMERICS: ok: y matches

builtin.module {
  npu.kernel @chain(%x: memref<512xf16, #npu.space<gm>>, %t: memref<512xf16, #npu.space<gm>>, %w: memref<24576xf16, #npu.space<gm>>, %y: memref<24576xf16, #npu.space<gm>>) attributes {block_dim = 2, npu.phases = ["p0", "p1", "p2", "p3"]} {
    %b0 = npu.block_idx : index
    %c256_0 = arith.constant 256 : index
    %c0_0 = arith.constant 0 : index
    %o0 = arith.muli %b0, %c256_0 : index
    %u0 = npu.alloc {offset = 0} : memref<256xf16, #npu.space<ub>>
    npu.copy %x[%o0], %u0[%c0_0] {cols = 256}
    npu.set_flag {src = "MTE2", dst = "V", event = 0}
    npu.wait_flag {src = "MTE2", dst = "V", event = 0}
    npu.vmuls %u0[%c0_0], %u0[%c0_0] {cols = 256, scalar = 1.0}
    npu.vmuls %u0[%c0_0], %u0[%c0_0] {cols = 256, scalar = 2.0}
    npu.set_flag {src = "V", dst = "MTE3", event = 0}
    npu.wait_flag {src = "V", dst = "MTE3", event = 0}
    npu.copy %u0[%c0_0], %t[%o0] {cols = 256}
    npu.sync_all
    %b1 = npu.block_idx : index
    %c256_1 = arith.constant 256 : index
    %c0_1 = arith.constant 0 : index
    %o1 = arith.muli %b1, %c256_1 : index
    %u1 = npu.alloc {offset = 512} : memref<256xf16, #npu.space<ub>>
    npu.copy %t[%o1], %u1[%c0_1] {cols = 256}
    npu.set_flag {src = "MTE2", dst = "V", event = 0}
    npu.wait_flag {src = "MTE2", dst = "V", event = 0}
    npu.vmuls %u1[%c0_1], %u1[%c0_1] {cols = 256, scalar = 1.0}
    npu.vmuls %u1[%c0_1], %u1[%c0_1] {cols = 256, scalar = 2.0}
    npu.set_flag {src = "V", dst = "MTE3", event = 0}
    npu.wait_flag {src = "V", dst = "MTE3", event = 0}
    npu.copy %u1[%c0_1], %t[%o1] {cols = 256}
    npu.sync_all
    %b2 = npu.block_idx : index
    %c256_2 = arith.constant 256 : index
    %c0_2 = arith.constant 0 : index
    %o2 = arith.muli %b2, %c256_2 : index
    %u2 = npu.alloc {offset = 0} : memref<256xf16, #npu.space<ub>>
    npu.copy %t[%o2], %u2[%c0_2] {cols = 256}
    npu.set_flag {src = "MTE2", dst = "V", event = 0}
    npu.wait_flag {src = "MTE2", dst = "V", event = 0}
    npu.vmuls %u2[%c0_2], %u2[%c0_2] {cols = 256, scalar = 1.0}
    npu.vmuls %u2[%c0_2], %u2[%c0_2] {cols = 256, scalar = 2.0}
    npu.set_flag {src = "V", dst = "MTE3", event = 0}
    npu.wait_flag {src = "V", dst = "MTE3", event = 0}
    npu.copy %u2[%c0_2], %t[%o2] {cols = 256}
    npu.sync_all
    %bw = npu.block_idx : index
    %cn = arith.constant 12288 : index
    %c256w = arith.constant 256 : index
    %c0w = arith.constant 0 : index
    %ow = arith.muli %bw, %cn : index
    %ot = arith.muli %bw, %c256w : index
    %w_ub = npu.alloc {offset = 0} : memref<12288xf16, #npu.space<ub>>
    %v = npu.alloc {offset = 25600} : memref<256xf16, #npu.space<ub>>
    npu.copy %w[%ow], %w_ub[%c0w] {rows = 12, cols = 1024}
    npu.copy %t[%ot], %v[%c0w] {cols = 256}
    npu.set_flag {src = "MTE2", dst = "V", event = 0}
    npu.wait_flag {src = "MTE2", dst = "V", event = 0}
    npu.vadd %w_ub[%c0w], %w_ub[%c0w], %w_ub[%c0w] {cols = 12288}
    npu.pipe_barrier {pipe = "V"}
    npu.vadd %w_ub[%c0w], %v[%c0w], %w_ub[%c0w] {cols = 256}
    npu.set_flag {src = "V", dst = "MTE3", event = 0}
    npu.wait_flag {src = "V", dst = "MTE3", event = 0}
    npu.copy %w_ub[%c0w], %y[%ow] {cols = 12288}
  }
  func.func @main(%x: memref<512xf16, #npu.space<gm>> {ge.name = "x"}, %y: memref<24576xf16, #npu.space<gm>> {ge.name = "y", npu.output}) {
    %t = npu.gm_buffer {offset = 0} : memref<512xf16, #npu.space<gm>>
    %w = npu.gm_constant {value = dense<1.5> : tensor<24576xf16>, logical = tensor<24576xf16>} : memref<24576xf16, #npu.space<gm>>
    npu.launch @chain(%x, %t, %w, %y) {block_dim = 2}
    func.return
  }
}
