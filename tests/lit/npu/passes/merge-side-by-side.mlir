// npu-merge-launches puts independent launches that fit the cores together in one
// phase, side by side (lowering/plan/side_by_side.py): @double (1 block, x's first
// half -> t) and @negate (1 block, x's second half -> u) touch no common bytes, so
// on tiny's 2 cores they run at once, @double on block 0 and @negate on block 1,
// which sees itself as its block 0 (npu.block_idx minus 1); the barrier then
// orders both before @sum. With side-by-side=false each is a phase of its own.
// RUN: ge-opt %s -p 'npu-merge-launches{hw=tiny}' | filecheck %s
// RUN: ge-opt %s -p 'npu-merge-launches{hw=tiny side-by-side=false}' | filecheck %s --check-prefix=APART
// RUN: ge-sim %s --hw tiny --pipeline 'npu-merge-launches{hw=tiny}' --seed 3 --report --outputs %t.npz | filecheck %s --check-prefix=SIM
// RUN: python %S/../inputs/expect.py %s %t.npz --seed 3 | filecheck %s --check-prefix=NUMERICS
// EXPECT: y = 2 * x[:256] - x[256:]

// CHECK:      npu.kernel @double_to_sum({{.*}}) attributes {block_dim = 2, npu.phases = ["double+negate", "sum"]} {
// CHECK:        arith.cmpi ult
// CHECK:        scf.if
// CHECK:          npu.vmuls {{.*}} {cols = 256, scalar = 2.0}
// CHECK:        arith.cmpi uge
// CHECK:        arith.andi
// CHECK:        scf.if
// CHECK:          [[ONE:%.*]] = arith.constant 1 : index
// CHECK-NEXT:     [[IDX:%.*]] = npu.block_idx : index
// CHECK-NEXT:     [[B:%.*]] = arith.subi [[IDX]], [[ONE]] : index
// CHECK-NEXT:     arith.muli [[B]],
// CHECK:          npu.vmuls {{.*}} {cols = 256, scalar = -1.0}
// CHECK:        npu.sync_all
// CHECK-NOT:    npu.sync_all
// CHECK:        npu.vadd

// APART: npu.phases = ["double", "negate", "sum"]

// SIM: instructions: {{[0-9]+}} in 1 launches, 2 blocks
// SIM: double+negate
// SIM-NEXT: sum
// NUMERICS: ok: y matches

builtin.module {
  npu.kernel @double(%x: memref<512xf16, #npu.space<gm>>, %t: memref<256xf16, #npu.space<gm>>) attributes {block_dim = 1} {
    %c0 = arith.constant 0 : index
    %u = npu.alloc {offset = 0} : memref<256xf16, #npu.space<ub>>
    npu.copy %x[%c0], %u[%c0] {cols = 256}
    npu.pipe_barrier {pipe = "ALL"}
    npu.vmuls %u[%c0], %u[%c0] {cols = 256, scalar = 2.0}
    npu.pipe_barrier {pipe = "ALL"}
    npu.copy %u[%c0], %t[%c0] {cols = 256}
  }
  npu.kernel @negate(%x: memref<512xf16, #npu.space<gm>>, %n: memref<256xf16, #npu.space<gm>>) attributes {block_dim = 1} {
    %c0 = arith.constant 0 : index
    %c256 = arith.constant 256 : index
    %b = npu.block_idx : index
    %s = arith.muli %b, %c256 : index
    %o = arith.addi %s, %c256 : index
    %u = npu.alloc {offset = 0} : memref<256xf16, #npu.space<ub>>
    npu.copy %x[%o], %u[%c0] {cols = 256}
    npu.pipe_barrier {pipe = "ALL"}
    npu.vmuls %u[%c0], %u[%c0] {cols = 256, scalar = -1.0}
    npu.pipe_barrier {pipe = "ALL"}
    npu.copy %u[%c0], %n[%s] {cols = 256}
  }
  npu.kernel @sum(%t: memref<256xf16, #npu.space<gm>>, %n: memref<256xf16, #npu.space<gm>>, %y: memref<256xf16, #npu.space<gm>>) attributes {block_dim = 1} {
    %c0 = arith.constant 0 : index
    %v = npu.alloc {offset = 0} : memref<256xf16, #npu.space<ub>>
    %w = npu.alloc {offset = 512} : memref<256xf16, #npu.space<ub>>
    npu.copy %t[%c0], %v[%c0] {cols = 256}
    npu.copy %n[%c0], %w[%c0] {cols = 256}
    npu.pipe_barrier {pipe = "ALL"}
    npu.vadd %v[%c0], %w[%c0], %v[%c0] {cols = 256}
    npu.pipe_barrier {pipe = "ALL"}
    npu.copy %v[%c0], %y[%c0] {cols = 256}
  }
  func.func @main(%x: memref<512xf16, #npu.space<gm>> {ge.name = "x"}, %y: memref<256xf16, #npu.space<gm>> {ge.name = "y", npu.output}) {
    %t = npu.gm_buffer {offset = 0} : memref<256xf16, #npu.space<gm>>
    %n = npu.gm_buffer {offset = 512} : memref<256xf16, #npu.space<gm>>
    npu.launch @double(%x, %t)
    npu.launch @negate(%x, %n)
    npu.launch @sum(%t, %n, %y)
    func.return
  }
}
