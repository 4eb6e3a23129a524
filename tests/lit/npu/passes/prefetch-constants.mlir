// npu-prefetch-constants on a merged kernel of two phases: @scale doubles x into
// %t, @add adds a constant row %w to %t. The npu.sync_all splits into its arrive
// and wait, and the load of %w (an npu.gm_constant) moves between them, so MTE2
// runs it while @scale's vector work and store finish and while the flags
// travel; its UB buffer moves off the bytes of @scale's %u (offset 0) to bytes
// neither phase uses. The load of %t, which @scale writes, stays after the wait.
// RUN: ge-opt %s -p 'npu-prefetch-constants{hw=tiny}' | filecheck %s
// RUN: ge-opt %s -p 'npu-prefetch-constants{hw=tiny}' --pass-statistics 2>&1 >/dev/null | filecheck %s --check-prefix=STATS
// RUN: ge-sim %s --hw tiny --pipeline 'npu-prefetch-constants{hw=tiny}' --seed 3 --report --outputs %t.npz | filecheck %s --check-prefix=SIM
// RUN: python %S/../inputs/expect.py %s %t.npz --seed 3 | filecheck %s --check-prefix=NUMERICS
// EXPECT: y = 2 * x + 1.5

// The copy's offsets move with it.
// CHECK:      npu.copy %u[%c0], %t[%o] {cols = 256}
// CHECK-NEXT: npu.sync_all_arrive
// CHECK-NEXT: %b2 = npu.block_idx : index
// CHECK-NEXT: %c256_1 = arith.constant 256 : index
// CHECK-NEXT: %o2 = arith.muli %b2, %c256_1 : index
// CHECK-NEXT: %c0_1 = arith.constant 0 : index
// CHECK-NEXT: %w_ub = npu.alloc {offset = 1024} : memref<256xf16, #npu.space<ub>>
// CHECK-NEXT: npu.copy %w[%o2], %w_ub[%c0_1] {cols = 256}
// CHECK-NEXT: npu.sync_all_wait
// CHECK:      npu.copy %t[%o2], %v[%c0_1] {cols = 256}
// CHECK-NEXT: npu.pipe_barrier {pipe = "ALL"}
// CHECK-NEXT: npu.vadd %v[%c0_1], %w_ub[%c0_1], %v[%c0_1] {cols = 256}

// STATS: 1 copies prefetched

// SIM: @scale_to_add
// SIM-NEXT: scale 3000 {{[0-9]+}}
// SIM-NEXT: add {{[0-9]+}} {{[0-9]+}}
// NUMERICS: ok: y matches 2 * x + 1.5

builtin.module {
  npu.kernel @scale_to_add(%x: memref<512xf16, #npu.space<gm>>, %t: memref<512xf16, #npu.space<gm>>, %w: memref<512xf16, #npu.space<gm>>, %y: memref<512xf16, #npu.space<gm>>) attributes {block_dim = 2, npu.phases = ["scale", "add"]} {
    %c0 = arith.constant 0 : index
    %c256 = arith.constant 256 : index
    %b = npu.block_idx : index
    %o = arith.muli %b, %c256 : index
    %u = npu.alloc {offset = 0} : memref<256xf16, #npu.space<ub>>
    %s = npu.alloc {offset = 512} : memref<256xf16, #npu.space<ub>>
    npu.copy %x[%o], %u[%c0] {cols = 256}
    npu.set_flag {src = "MTE2", dst = "V", event = 0}
    npu.wait_flag {src = "MTE2", dst = "V", event = 0}
    npu.vmuls %u[%c0], %s[%c0] {cols = 256, scalar = 0.5}
    npu.vmuls %s[%c0], %s[%c0] {cols = 256, scalar = 2.0}
    npu.vadd %u[%c0], %s[%c0], %u[%c0] {cols = 256}
    npu.set_flag {src = "V", dst = "MTE3", event = 0}
    npu.wait_flag {src = "V", dst = "MTE3", event = 0}
    npu.copy %u[%c0], %t[%o] {cols = 256}
    npu.sync_all
    %c0_1 = arith.constant 0 : index
    %c256_1 = arith.constant 256 : index
    %b2 = npu.block_idx : index
    %o2 = arith.muli %b2, %c256_1 : index
    %v = npu.alloc {offset = 512} : memref<256xf16, #npu.space<ub>>
    %w_ub = npu.alloc {offset = 0} : memref<256xf16, #npu.space<ub>>
    npu.copy %t[%o2], %v[%c0_1] {cols = 256}
    npu.copy %w[%o2], %w_ub[%c0_1] {cols = 256}
    npu.pipe_barrier {pipe = "ALL"}
    npu.vadd %v[%c0_1], %w_ub[%c0_1], %v[%c0_1] {cols = 256}
    npu.pipe_barrier {pipe = "ALL"}
    npu.copy %v[%c0_1], %y[%o2] {cols = 256}
  }
  func.func @main(%x: memref<512xf16, #npu.space<gm>> {ge.name = "x"}, %y: memref<512xf16, #npu.space<gm>> {ge.name = "y", npu.output}) {
    %t = npu.gm_buffer {offset = 0} : memref<512xf16, #npu.space<gm>>
    %w = npu.gm_constant {value = dense<1.5> : tensor<512xf16>, logical = tensor<512xf16>} : memref<512xf16, #npu.space<gm>>
    npu.launch @scale_to_add(%x, %t, %w, %y) {block_dim = 2}
    func.return
  }
}
