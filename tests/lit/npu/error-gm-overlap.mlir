// Two GM buffers placed on the same arena bytes while both are live: %b is
// written (second launch) before %a is read for the last time (third launch).
// RUN: not ge-sim %s --hw tiny 2>&1 | filecheck %s
// CHECK: error-gm-overlap.mlir:[[# @LINE + 15]]:5: error: 'npu.gm_buffer' op GM buffers %a and %b overlap in the arena (bytes [1024, 2048)) while both are live: %a is used from launch #0 to #2, %b from launch #1

builtin.module attributes {npu.gm_arena_bytes = 4096 : i64} {
  npu.kernel @copy(%x: memref<1024xf16, #npu.space<gm>>, %y: memref<1024xf16, #npu.space<gm>>) attributes {block_dim = 1} {
    %c0 = arith.constant 0 : index
    %u = npu.alloc {offset = 0} : memref<1024xf16, #npu.space<ub>>
    npu.copy %x[%c0], %u[%c0] {cols = 1024}
    npu.set_flag {src = "MTE2", dst = "MTE3", event = 0}
    npu.wait_flag {src = "MTE2", dst = "MTE3", event = 0}
    npu.copy %u[%c0], %y[%c0] {cols = 1024}
  }
  func.func @main(%x: memref<1024xf16, #npu.space<gm>> {ge.name = "x"},
                  %z: memref<1024xf16, #npu.space<gm>> {ge.name = "z", npu.output},
                  %w: memref<1024xf16, #npu.space<gm>> {ge.name = "w", npu.output}) {
    %a = npu.gm_buffer {offset = 0} : memref<1024xf16, #npu.space<gm>>
    %b = npu.gm_buffer {offset = 1024} : memref<1024xf16, #npu.space<gm>>
    npu.launch @copy(%x, %a)
    npu.launch @copy(%x, %b)
    npu.launch @copy(%a, %z)
    npu.launch @copy(%b, %w)
    func.return
  }
}
