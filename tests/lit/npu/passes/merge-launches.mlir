// npu-merge-launches on two launches of one stream: @halves doubles x on 2
// blocks (one half each) into %t, then @sum adds x to it on 1 block. They become
// one kernel on 2 blocks: @halves' body, an npu.sync_all, then @sum's body under
// `block_idx < 1`, its npu.block_dim replaced by its own count; `ge-sim --report`
// shows a row per phase under the kernel's.
// RUN: ge-opt %s -p 'npu-merge-launches{hw=tiny}' | filecheck %s
// RUN: ge-opt %s -p 'npu-merge-launches{hw=tiny}' --pass-statistics 2>&1 >/dev/null | filecheck %s --check-prefix=STATS
// RUN: ge-sim %s --hw tiny --pipeline 'npu-merge-launches{hw=tiny}' --seed 2 --report --outputs %t.npz | filecheck %s --check-prefix=SIM
// RUN: python %S/../inputs/expect.py %s %t.npz --seed 2 | filecheck %s --check-prefix=NUMERICS
// RUN: ge-sim %s --hw tiny --seed 2 --report | filecheck %s --check-prefix=SEPARATE
// RUN: not ge-opt %s -p 'npu-merge-launches{hw=tiny},npu-insert-sync{hw=tiny}' 2>&1 | filecheck %s --check-prefix=RESYNC
// EXPECT: y = 3 * x

// RESYNC: error: 'npu.sync_all' op npu-insert-sync cannot synchronise @halves_to_sum: its phases are joined by npu.sync_all (run npu-insert-sync before npu-merge-launches)

// CHECK:      npu.kernel @halves_to_sum(%x: memref<512xf16, #npu.space<gm>>, %t: memref<512xf16, #npu.space<gm>>, %y: memref<512xf16, #npu.space<gm>>) attributes {block_dim = 2, npu.phases = ["halves", "sum"]} {
// CHECK:        %b = npu.block_idx : index
// CHECK:        npu.vmuls %u[%c0], %u[%c0] {cols = 256, scalar = 2.0}
// CHECK:        npu.copy %u[%c0], %t[%o] {cols = 256}
// CHECK-NEXT:   npu.sync_all
// CHECK-NEXT:   [[ONE:%.*]] = arith.constant 1 : index
// CHECK-NEXT:   [[IDX:%.*]] = npu.block_idx : index
// CHECK-NEXT:   [[IN:%.*]] = arith.cmpi ult, [[IDX]], [[ONE]] : index
// CHECK-NEXT:   scf.if [[IN]] {
// CHECK:          %n = arith.constant 1 : index
// CHECK:          npu.vadd %v[%c0_1], %w[%c0_1], %v[%c0_1] {cols = 512}
// CHECK:          npu.copy %v[%c0_1], %y[%c0_1] {cols = 512}
// CHECK-NEXT:   }
// CHECK-NEXT: }
// CHECK-NOT:  npu.kernel
// CHECK:      npu.launch @halves_to_sum(%x, %t, %y) {block_dim = 2}
// CHECK-NOT:  npu.launch

// STATS: 2 launches merged
// STATS: 1 kernels made

// SIM: total: 4004 cycles
// SIM: instructions: {{[0-9]+}} in 1 launches, 2 blocks
// SIM: kernel
// SIM-NEXT: @halves_to_sum 0 2 3000 1004
// SIM-NEXT: halves 3000 {{[0-9]+}}
// SIM-NEXT: sum {{[0-9]+}} {{[0-9]+}}
// NUMERICS: ok: y matches 3 * x

// SEPARATE: total: 6698 cycles
// SEPARATE: instructions: {{[0-9]+}} in 2 launches, 3 blocks

builtin.module {
  npu.kernel @halves(%x: memref<512xf16, #npu.space<gm>>, %t: memref<512xf16, #npu.space<gm>>) attributes {block_dim = 2} {
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
  npu.kernel @sum(%t: memref<512xf16, #npu.space<gm>>, %x: memref<512xf16, #npu.space<gm>>, %y: memref<512xf16, #npu.space<gm>>) attributes {block_dim = 1} {
    %c0 = arith.constant 0 : index
    %n = npu.block_dim : index
    %v = npu.alloc {offset = 0} : memref<512xf16, #npu.space<ub>>
    %w = npu.alloc {offset = 1024} : memref<512xf16, #npu.space<ub>>
    npu.copy %t[%c0], %v[%c0] {cols = 512}
    npu.copy %x[%c0], %w[%c0] {cols = 512}
    npu.pipe_barrier {pipe = "ALL"}
    npu.vadd %v[%c0], %w[%c0], %v[%c0] {cols = 512}
    npu.pipe_barrier {pipe = "ALL"}
    npu.copy %v[%c0], %y[%c0] {cols = 512}
  }
  func.func @main(%x: memref<512xf16, #npu.space<gm>> {ge.name = "x"}, %y: memref<512xf16, #npu.space<gm>> {ge.name = "y", npu.output}) {
    %t = npu.gm_buffer {offset = 0} : memref<512xf16, #npu.space<gm>>
    npu.launch @halves(%x, %t)
    npu.launch @sum(%t, %x, %y)
    func.return
  }
}
