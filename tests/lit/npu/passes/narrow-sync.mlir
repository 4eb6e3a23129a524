// npu-narrow-sync on a merged kernel of three phases on 2 blocks: @double writes
// t = 2x half by half (block b its half b), @own adds x to the half of t the same
// block wrote (s = t + x), @swap copies the other block's half of s to y. The
// first barrier becomes a flag set and a wait for nobody (each block reads only
// what it wrote itself); the second, a wait of each block for the other's second
// flag. The simulator checks the flags order every GM access between the blocks.
// RUN: ge-opt %s -p 'npu-merge-launches{hw=tiny},npu-narrow-sync{hw=tiny}' | filecheck %s
// RUN: ge-opt %s -p 'npu-merge-launches{hw=tiny},npu-narrow-sync{hw=tiny}' --pass-statistics 2>&1 >/dev/null | filecheck %s --check-prefix=STATS
// RUN: ge-sim %s --hw tiny --pipeline 'npu-merge-launches{hw=tiny},npu-narrow-sync{hw=tiny}' --seed 2 --report --outputs %t.npz | filecheck %s --check-prefix=SIM
// RUN: python %S/../inputs/expect.py %s %t.npz --seed 2 | filecheck %s --check-prefix=NUMERICS
// EXPECT: y = np.roll(3 * x, 256)

// CHECK:      npu.kernel @double_to_swap(
// CHECK:        npu.copy %u[%c0], %t[%o] {cols = 256}
// CHECK-NEXT:   npu.cross_set_flag
// CHECK-NEXT:   npu.cross_wait_flag {waits = []}
// CHECK:        npu.copy %v[{{.*}}], %s[{{.*}}] {cols = 256}
// CHECK-NEXT:   npu.cross_set_flag
// CHECK-NEXT:   npu.cross_wait_flag {waits = [0, 1, 2, 1, 0, 2]}
// CHECK-NOT:    npu.sync_all

// STATS: 2 barriers narrowed
// STATS: 2 block waits

// SIM: instructions: {{[0-9]+}} in 1 launches, 2 blocks
// NUMERICS: ok: y matches np.roll(3 * x, 256)

builtin.module {
  npu.kernel @double(%x: memref<512xf16, #npu.space<gm>>, %t: memref<512xf16, #npu.space<gm>>) attributes {block_dim = 2} {
    %c0 = arith.constant 0 : index
    %c256 = arith.constant 256 : index
    %b = npu.block_idx : index
    %o = arith.muli %b, %c256 : index
    %u = npu.alloc {offset = 0} : memref<256xf16, #npu.space<ub>>
    npu.copy %x[%o], %u[%c0] {cols = 256}
    npu.pipe_barrier {pipe = "ALL"}
    npu.vmuls %u[%c0], %u[%c0] {cols = 256, scalar = 2.0}
    npu.pipe_barrier {pipe = "ALL"}
    npu.copy %u[%c0], %t[%o] {cols = 256}
  }
  npu.kernel @own(%t: memref<512xf16, #npu.space<gm>>, %x: memref<512xf16, #npu.space<gm>>, %s: memref<512xf16, #npu.space<gm>>) attributes {block_dim = 2} {
    %c0 = arith.constant 0 : index
    %c256 = arith.constant 256 : index
    %b = npu.block_idx : index
    %o = arith.muli %b, %c256 : index
    %v = npu.alloc {offset = 0} : memref<256xf16, #npu.space<ub>>
    %w = npu.alloc {offset = 512} : memref<256xf16, #npu.space<ub>>
    npu.copy %t[%o], %v[%c0] {cols = 256}
    npu.copy %x[%o], %w[%c0] {cols = 256}
    npu.pipe_barrier {pipe = "ALL"}
    npu.vadd %v[%c0], %w[%c0], %v[%c0] {cols = 256}
    npu.pipe_barrier {pipe = "ALL"}
    npu.copy %v[%c0], %s[%o] {cols = 256}
  }
  npu.kernel @swap(%s: memref<512xf16, #npu.space<gm>>, %y: memref<512xf16, #npu.space<gm>>) attributes {block_dim = 2} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %b = npu.block_idx : index
    %other = arith.subi %c1, %b : index
    %from = arith.muli %other, %c256 : index
    %to = arith.muli %b, %c256 : index
    %v = npu.alloc {offset = 0} : memref<256xf16, #npu.space<ub>>
    npu.copy %s[%from], %v[%c0] {cols = 256}
    npu.pipe_barrier {pipe = "ALL"}
    npu.copy %v[%c0], %y[%to] {cols = 256}
  }
  func.func @main(%x: memref<512xf16, #npu.space<gm>> {ge.name = "x"}, %y: memref<512xf16, #npu.space<gm>> {ge.name = "y", npu.output}) {
    %t = npu.gm_buffer {offset = 0} : memref<512xf16, #npu.space<gm>>
    %s = npu.gm_buffer {offset = 1024} : memref<512xf16, #npu.space<gm>>
    npu.launch @double(%x, %t)
    npu.launch @own(%t, %x, %s)
    npu.launch @swap(%s, %y)
    func.return
  }
}
