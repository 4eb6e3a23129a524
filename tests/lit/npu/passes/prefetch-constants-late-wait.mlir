// npu-prefetch-constants moves the load of the constant %w above @add's barrier;
// the MTE2 -> V flag that ordered both of @add's loads before its vector work
// now has only %t's load to wait for, and the barrier's wait orders %w's. So the
// flag wait goes down past the vmuls that reads %w alone (its bytes apart from
// everything @add touched before it), which then runs while %t is still landing;
// it stops at the vadd that reads %t (late_waits.py).
// RUN: ge-opt %s -p 'npu-prefetch-constants{hw=tiny}' | filecheck %s
// RUN: ge-sim %s --hw tiny --pipeline 'npu-prefetch-constants{hw=tiny}' --seed 3 --outputs %t.npz | filecheck %s --check-prefix=SIM
// RUN: python %S/../inputs/expect.py %s %t.npz --seed 3 | filecheck %s --check-prefix=NUMERICS
// EXPECT: y = 2 * x + 3

// CHECK:      npu.copy %w[%o2], %w_ub[%c0_1] {cols = 256}
// CHECK-NEXT: npu.sync_all_wait
// CHECK:      npu.copy %t[%o2], %v[%c0_1] {cols = 256}
// CHECK-NEXT: npu.set_flag {src = "MTE2", dst = "V", event = 0}
// CHECK-NEXT: npu.vmuls %w_ub[%c0_1], %w2[%c0_1] {cols = 256, scalar = 2.0}
// CHECK-NEXT: npu.wait_flag {src = "MTE2", dst = "V", event = 0}
// CHECK-NEXT: npu.vadd %v[%c0_1], %w2[%c0_1], %v[%c0_1] {cols = 256}

// SIM: y: tensor<512xf16>
// NUMERICS: ok: y matches 2 * x + 3

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
    %w2 = npu.alloc {offset = 1536} : memref<256xf16, #npu.space<ub>>
    npu.copy %t[%o2], %v[%c0_1] {cols = 256}
    npu.copy %w[%o2], %w_ub[%c0_1] {cols = 256}
    npu.set_flag {src = "MTE2", dst = "V", event = 0}
    npu.wait_flag {src = "MTE2", dst = "V", event = 0}
    npu.vmuls %w_ub[%c0_1], %w2[%c0_1] {cols = 256, scalar = 2.0}
    npu.vadd %v[%c0_1], %w2[%c0_1], %v[%c0_1] {cols = 256}
    npu.set_flag {src = "V", dst = "MTE3", event = 0}
    npu.wait_flag {src = "V", dst = "MTE3", event = 0}
    npu.copy %v[%c0_1], %y[%o2] {cols = 256}
  }
  func.func @main(%x: memref<512xf16, #npu.space<gm>> {ge.name = "x"}, %y: memref<512xf16, #npu.space<gm>> {ge.name = "y", npu.output}) {
    %t = npu.gm_buffer {offset = 0} : memref<512xf16, #npu.space<gm>>
    %w = npu.gm_constant {value = dense<1.5> : tensor<512xf16>, logical = tensor<512xf16>} : memref<512xf16, #npu.space<gm>>
    npu.launch @scale_to_add(%x, %t, %w, %y) {block_dim = 2}
    func.return
  }
}
