// Round trip of every npu op: custom form -> custom form, and through the generic form.
// Attributes equal to their default are not printed; a buffer operand prints as %buffer[%offset].
// RUN: ge-opt %s | filecheck %s
// RUN: ge-opt %s --print-op-generic | ge-opt | filecheck %s

// CHECK:      builtin.module attributes {npu.gm_arena_bytes = 8192 : i64} {
// CHECK-NEXT: npu.kernel @all(%g: memref<4096xf16, #npu.space<gm>>, %g32: memref<1024xf32, #npu.space<gm>>) attributes {block_dim = 2} {
// CHECK-NEXT: %c0 = arith.constant 0 : index
// CHECK-NEXT: %i = npu.block_idx : index
// CHECK-NEXT: %n = npu.block_dim : index
// CHECK-NEXT: %u = npu.alloc {offset = 0} : memref<2048xf16, #npu.space<ub>>
// CHECK-NEXT: %w = npu.alloc : memref<1024xf32, #npu.space<ub>>
// CHECK-NEXT: %m = npu.alloc {offset = 8192} : memref<256xi1, #npu.space<ub>>
// CHECK-NEXT: %l1 = npu.alloc {offset = 0} : memref<4096xf16, #npu.space<l1>>
// CHECK-NEXT: %a = npu.alloc {offset = 0} : memref<1024xf16, #npu.space<l0a>>
// CHECK-NEXT: %b = npu.alloc {offset = 0} : memref<1024xf16, #npu.space<l0b>>
// CHECK-NEXT: %acc = npu.alloc {offset = 0} : memref<1024xf32, #npu.space<l0c>>
// CHECK-NEXT: %q = npu.alloc {offset = 16384} : memref<256xui16, #npu.space<ub>>
// CHECK-NEXT: npu.copy %g[%i], %u[%c0] {rows = 16, cols = 64, strides = [256, 64]}
// CHECK-NEXT: npu.copy %g[%c0], %l1[%c0] {cols = 4096}
// CHECK-NEXT: npu.copy %l1[%c0], %u[%c0] {cols = 2048}
// CHECK-NEXT: npu.copy %u[%c0], %g[%c0] {cols = 2048}
// CHECK-NEXT: npu.copy %u[%c0], %l1[%c0] {cols = 2048}
// CHECK-NEXT: npu.load_l0 %l1[%c0], %a[%c0] {rows = 32, cols = 32, layout = "nz", transpose = true}
// CHECK-NEXT: npu.load_l0 %l1[%c0], %b[%c0] {rows = 32, cols = 32, strides = [64, 32]}
// CHECK-NEXT: npu.mmad %a[%c0], %b[%c0], %acc[%c0] {m = 32, n = 32, k = 32, accumulate = true}
// CHECK-NEXT: npu.fixpipe %acc[%c0], %g[%c0] {rows = 32, cols = 32, layout = "nz", relu = true}
// CHECK-NEXT: npu.fixpipe %acc[%c0], %w[%c0] {rows = 32, cols = 32}
// CHECK-NEXT: %s = npu.read_scalar %u[%n] : index
// CHECK-NEXT: npu.vadd %u[%c0], %u[%c0], %u[%c0] {cols = 256}
// CHECK-NEXT: npu.vsub %u[%c0], %u[%c0], %u[%c0] {rows = 2, cols = 128, strides = [128, 1, 128], col_strides = [1, 0, 1]}
// CHECK-NEXT: npu.vmul %u[%c0], %u[%c0], %u[%c0] {cols = 256}
// CHECK-NEXT: npu.vmla %u[%c0], %u[%c0], %u[%c0] {rows = 16, cols = 16, strides = [16, 0, 16]}
// CHECK-NEXT: npu.vdiv %u[%c0], %u[%c0], %u[%c0] {cols = 256}
// CHECK-NEXT: npu.vmax %u[%c0], %u[%c0], %u[%c0] {cols = 256}
// CHECK-NEXT: npu.vmin %u[%c0], %u[%c0], %u[%c0] {cols = 256}
// CHECK-NEXT: npu.vand %q[%c0], %q[%c0], %q[%c0] {cols = 256}
// CHECK-NEXT: npu.vor %q[%c0], %q[%c0], %q[%c0] {cols = 256}
// CHECK-NEXT: npu.vxor %q[%c0], %q[%c0], %q[%c0] {cols = 256}
// CHECK-NEXT: npu.vshl %q[%c0], %q[%c0], %q[%c0] {cols = 256}
// CHECK-NEXT: npu.vshr %q[%c0], %q[%c0], %q[%c0] {cols = 256}
// CHECK-NEXT: npu.vnot %q[%c0], %q[%c0] {cols = 256}
// CHECK-NEXT: npu.vadds %u[%c0], %u[%c0] {cols = 256, scalar = 1.5}
// CHECK-NEXT: npu.vmuls %u[%c0], %u[%c0] {cols = 256, scalar = -0.5}
// CHECK-NEXT: npu.vmaxs %u[%c0], %u[%c0] {cols = 256, scalar = 0.0}
// CHECK-NEXT: npu.vmins %u[%c0], %u[%c0] {cols = 256, scalar = 6.0}
// CHECK-NEXT: npu.vexp %u[%c0], %u[%c0] {cols = 256}
// CHECK-NEXT: npu.vln %u[%c0], %u[%c0] {cols = 256}
// CHECK-NEXT: npu.vsqrt %u[%c0], %u[%c0] {cols = 256}
// CHECK-NEXT: npu.vrsqrt %u[%c0], %u[%c0] {cols = 256}
// CHECK-NEXT: npu.vrec %u[%c0], %u[%c0] {cols = 256}
// CHECK-NEXT: npu.vtanh %u[%c0], %u[%c0] {cols = 256}
// CHECK-NEXT: npu.vsigmoid %u[%c0], %u[%c0] {cols = 256}
// CHECK-NEXT: npu.verf %u[%c0], %u[%c0] {cols = 256}
// CHECK-NEXT: npu.vsin %u[%c0], %u[%c0] {cols = 256}
// CHECK-NEXT: npu.vcos %u[%c0], %u[%c0] {cols = 256}
// CHECK-NEXT: npu.vtan %u[%c0], %u[%c0] {cols = 256}
// CHECK-NEXT: npu.vasin %u[%c0], %u[%c0] {cols = 256}
// CHECK-NEXT: npu.vacos %u[%c0], %u[%c0] {cols = 256}
// CHECK-NEXT: npu.vatan %u[%c0], %u[%c0] {cols = 256}
// CHECK-NEXT: npu.vsinh %u[%c0], %u[%c0] {cols = 256}
// CHECK-NEXT: npu.vcosh %u[%c0], %u[%c0] {cols = 256}
// CHECK-NEXT: npu.vasinh %u[%c0], %u[%c0] {cols = 256}
// CHECK-NEXT: npu.vacosh %u[%c0], %u[%c0] {cols = 256}
// CHECK-NEXT: npu.vatanh %u[%c0], %u[%c0] {cols = 256}
// CHECK-NEXT: npu.vrelu %u[%c0], %u[%c0] {cols = 256}
// CHECK-NEXT: npu.vabs %u[%c0], %u[%c0] {cols = 256}
// CHECK-NEXT: npu.vcopy %u[%c0], %u[%c0] {rows = 4, cols = 64, strides = [0, 64]}
// CHECK-NEXT: npu.vcast %u[%c0], %w[%c0] {cols = 256}
// CHECK-NEXT: npu.vcast %w[%c0], %u[%c0] {cols = 256, round = "floor"}
// CHECK-NEXT: npu.vdup %u[%c0] {cols = 256, value = 0.0}
// CHECK-NEXT: npu.vreduce_sum %w[%c0], %w[%c0] {rows = 4, cols = 64}
// CHECK-NEXT: npu.vreduce_max %w[%c0], %w[%c0] {rows = 4, cols = 64, strides = [64, 8]}
// CHECK-NEXT: npu.vreduce_min %w[%c0], %w[%c0] {rows = 4, cols = 64}
// CHECK-NEXT: npu.vcmp %u[%c0], %u[%c0], %m[%c0] {cols = 256, cmp = "lt"}
// CHECK-NEXT: npu.vcmps %u[%c0], %m[%c0] {cols = 256, cmp = "ge", scalar = 0.0}
// CHECK-NEXT: npu.vsel %m[%c0], %u[%c0], %u[%c0], %u[%c0] {cols = 256}
// CHECK-NEXT: npu.vtranspose %u[%c0], %u[%c0] {rows = 16, cols = 16}
// CHECK-NEXT: npu.set_flag {src = "MTE2", dst = "V", event = 1}
// CHECK-NEXT: npu.wait_flag {src = "MTE2", dst = "V", event = 1}
// CHECK-NEXT: npu.pipe_barrier {pipe = "V"}
// CHECK-NEXT: npu.pipe_barrier {pipe = "ALL"}
// CHECK-NEXT: npu.sync_all
// CHECK-NEXT: npu.sync_all_arrive
// CHECK-NEXT: npu.sync_all_wait
// CHECK-NEXT: npu.cross_set_flag
// CHECK-NEXT: npu.cross_wait_flag {waits = [0, 1, 1, 1, 0, 1]}
// CHECK-NEXT: %after = npu.block_idx : index
// CHECK-NEXT: }
// CHECK-NEXT: func.func @main(%x: memref<4096xf16, #npu.space<gm>> {ge.name = "x"}, %y: memref<1024xf32, #npu.space<gm>> {ge.name = "y", npu.output}) {
// CHECK-NEXT: %t = npu.gm_buffer {offset = 0} : memref<4096xf16, #npu.space<gm>>
// CHECK-NEXT: %unplanned = npu.gm_buffer : memref<1024xf32, #npu.space<gm>>
// CHECK-NEXT: %w = npu.gm_constant {value = #ge.random<normal, seed = 3, mean = 0.0, std = 0.02>, logical = tensor<16x16xf16, #ge.format<FRACTAL_NZ>>} : memref<1x1x16x16xf16, #npu.space<gm>>
// CHECK-NEXT: %b = npu.gm_constant {value = dense<1.000000e+00> : tensor<4xf32>, logical = tensor<4xf32>} : memref<4xf32, #npu.space<gm>>
// CHECK-NEXT: %flat = npu.gm_view %w : memref<256xf16, #npu.space<gm>>
// CHECK-NEXT: npu.launch @all(%x, %y) {block_dim = 2, stream = 1}
// CHECK-NEXT: npu.record_event {stream = 1, event = 3}
// CHECK-NEXT: npu.wait_event {event = 3}
// CHECK-NEXT: npu.launch @all(%t, %unplanned)
// CHECK-NEXT: func.return
// CHECK-NEXT: }
// CHECK-NEXT: }

builtin.module attributes {npu.gm_arena_bytes = 8192 : i64} {
  npu.kernel @all(%g: memref<4096xf16, #npu.space<gm>>, %g32: memref<1024xf32, #npu.space<gm>>) attributes {block_dim = 2} {
    %c0 = arith.constant 0 : index
    %i = npu.block_idx : index
    %n = npu.block_dim : index
    %u = npu.alloc {offset = 0} : memref<2048xf16, #npu.space<ub>>
    %w = npu.alloc : memref<1024xf32, #npu.space<ub>>
    %m = npu.alloc {offset = 8192} : memref<256xi1, #npu.space<ub>>
    %l1 = npu.alloc {offset = 0} : memref<4096xf16, #npu.space<l1>>
    %a = npu.alloc {offset = 0} : memref<1024xf16, #npu.space<l0a>>
    %b = npu.alloc {offset = 0} : memref<1024xf16, #npu.space<l0b>>
    %acc = npu.alloc {offset = 0} : memref<1024xf32, #npu.space<l0c>>
    %q = npu.alloc {offset = 16384} : memref<256xui16, #npu.space<ub>>
    npu.copy %g[%i], %u[%c0] {rows = 16, cols = 64, strides = [256, 64]}
    npu.copy %g[%c0], %l1[%c0] {cols = 4096}
    npu.copy %l1[%c0], %u[%c0] {cols = 2048}
    npu.copy %u[%c0], %g[%c0] {cols = 2048}
    npu.copy %u[%c0], %l1[%c0] {cols = 2048}
    npu.load_l0 %l1[%c0], %a[%c0] {rows = 32, cols = 32, layout = "nz", transpose = true}
    npu.load_l0 %l1[%c0], %b[%c0] {rows = 32, cols = 32, strides = [64, 32]}
    npu.mmad %a[%c0], %b[%c0], %acc[%c0] {m = 32, n = 32, k = 32, accumulate = true}
    npu.fixpipe %acc[%c0], %g[%c0] {rows = 32, cols = 32, layout = "nz", relu = true}
    npu.fixpipe %acc[%c0], %w[%c0] {rows = 32, cols = 32}
    %s = npu.read_scalar %u[%n] : index
    npu.vadd %u[%c0], %u[%c0], %u[%c0] {cols = 256}
    npu.vsub %u[%c0], %u[%c0], %u[%c0] {rows = 2, cols = 128, strides = [128, 1, 128], col_strides = [1, 0, 1]}
    npu.vmul %u[%c0], %u[%c0], %u[%c0] {cols = 256}
    npu.vmla %u[%c0], %u[%c0], %u[%c0] {rows = 16, cols = 16, strides = [16, 0, 16]}
    npu.vdiv %u[%c0], %u[%c0], %u[%c0] {cols = 256}
    npu.vmax %u[%c0], %u[%c0], %u[%c0] {cols = 256}
    npu.vmin %u[%c0], %u[%c0], %u[%c0] {cols = 256}
    npu.vand %q[%c0], %q[%c0], %q[%c0] {cols = 256}
    npu.vor %q[%c0], %q[%c0], %q[%c0] {cols = 256}
    npu.vxor %q[%c0], %q[%c0], %q[%c0] {cols = 256}
    npu.vshl %q[%c0], %q[%c0], %q[%c0] {cols = 256}
    npu.vshr %q[%c0], %q[%c0], %q[%c0] {cols = 256}
    npu.vnot %q[%c0], %q[%c0] {cols = 256}
    npu.vadds %u[%c0], %u[%c0] {cols = 256, scalar = 1.5}
    npu.vmuls %u[%c0], %u[%c0] {cols = 256, scalar = -0.5}
    npu.vmaxs %u[%c0], %u[%c0] {cols = 256, scalar = 0.0}
    npu.vmins %u[%c0], %u[%c0] {cols = 256, scalar = 6.0}
    npu.vexp %u[%c0], %u[%c0] {cols = 256}
    npu.vln %u[%c0], %u[%c0] {cols = 256}
    npu.vsqrt %u[%c0], %u[%c0] {cols = 256}
    npu.vrsqrt %u[%c0], %u[%c0] {cols = 256}
    npu.vrec %u[%c0], %u[%c0] {cols = 256}
    npu.vtanh %u[%c0], %u[%c0] {cols = 256}
    npu.vsigmoid %u[%c0], %u[%c0] {cols = 256}
    npu.verf %u[%c0], %u[%c0] {cols = 256}
    npu.vsin %u[%c0], %u[%c0] {cols = 256}
    npu.vcos %u[%c0], %u[%c0] {cols = 256}
    npu.vtan %u[%c0], %u[%c0] {cols = 256}
    npu.vasin %u[%c0], %u[%c0] {cols = 256}
    npu.vacos %u[%c0], %u[%c0] {cols = 256}
    npu.vatan %u[%c0], %u[%c0] {cols = 256}
    npu.vsinh %u[%c0], %u[%c0] {cols = 256}
    npu.vcosh %u[%c0], %u[%c0] {cols = 256}
    npu.vasinh %u[%c0], %u[%c0] {cols = 256}
    npu.vacosh %u[%c0], %u[%c0] {cols = 256}
    npu.vatanh %u[%c0], %u[%c0] {cols = 256}
    npu.vrelu %u[%c0], %u[%c0] {cols = 256}
    npu.vabs %u[%c0], %u[%c0] {cols = 256}
    npu.vcopy %u[%c0], %u[%c0] {rows = 4, cols = 64, strides = [0, 64]}
    npu.vcast %u[%c0], %w[%c0] {cols = 256}
    npu.vcast %w[%c0], %u[%c0] {cols = 256, round = "floor"}
    npu.vdup %u[%c0] {cols = 256, value = 0.0}
    npu.vreduce_sum %w[%c0], %w[%c0] {rows = 4, cols = 64}
    npu.vreduce_max %w[%c0], %w[%c0] {rows = 4, cols = 64, strides = [64, 8]}
    npu.vreduce_min %w[%c0], %w[%c0] {rows = 4, cols = 64}
    npu.vcmp %u[%c0], %u[%c0], %m[%c0] {cols = 256, cmp = "lt"}
    npu.vcmps %u[%c0], %m[%c0] {cols = 256, cmp = "ge", scalar = 0.0}
    npu.vsel %m[%c0], %u[%c0], %u[%c0], %u[%c0] {cols = 256}
    npu.vtranspose %u[%c0], %u[%c0] {rows = 16, cols = 16}
    npu.set_flag {src = "MTE2", dst = "V", event = 1}
    npu.wait_flag {src = "MTE2", dst = "V", event = 1}
    npu.pipe_barrier {pipe = "V"}
    npu.pipe_barrier {pipe = "ALL"}
    npu.sync_all
    npu.sync_all_arrive
    npu.sync_all_wait
    npu.cross_set_flag
    npu.cross_wait_flag {waits = [0, 1, 1, 1, 0, 1]}
    %after = npu.block_idx : index
  }
  func.func @main(%x: memref<4096xf16, #npu.space<gm>> {ge.name = "x"}, %y: memref<1024xf32, #npu.space<gm>> {ge.name = "y", npu.output}) {
    %t = npu.gm_buffer {offset = 0} : memref<4096xf16, #npu.space<gm>>
    %unplanned = npu.gm_buffer : memref<1024xf32, #npu.space<gm>>
    %w = npu.gm_constant {value = #ge.random<normal, seed = 3, mean = 0.0, std = 0.02>, logical = tensor<16x16xf16, #ge.format<FRACTAL_NZ>>} : memref<1x1x16x16xf16, #npu.space<gm>>
    %b = npu.gm_constant {value = dense<1.0> : tensor<4xf32>, logical = tensor<4xf32>} : memref<4xf32, #npu.space<gm>>
    %flat = npu.gm_view %w : memref<256xf16, #npu.space<gm>>
    npu.launch @all(%x, %y) {block_dim = 2, stream = 1}
    npu.record_event {stream = 1, event = 3}
    npu.wait_event {event = 3}
    npu.launch @all(%t, %unplanned)
    func.return
  }
}
