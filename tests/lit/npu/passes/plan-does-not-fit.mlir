// A tiling too large for the preset: the planner names the kernel, the space,
// the bytes live at the peak (and which buffers), what it placed and the capacity.
// RUN: not ge-opt %s -p 'npu-plan-local-memory{hw=tiny}' 2>&1 | filecheck %s
// CHECK: plan-does-not-fit.mlir:[[# @LINE + 2]]:1: error: kernel @too_big does not fit in UB: its buffers need 34816 bytes at their peak (%x_tile (16384 B), %y_tile (16384 B), %row_max (2048 B)), 34816 as placed, and preset 'tiny' has 32768

npu.kernel @too_big(%x: memref<8192xf16, #npu.space<gm>>, %y: memref<8192xf16, #npu.space<gm>>) attributes {block_dim = 1} {
  %c0 = arith.constant 0 : index
  %x_tile = npu.alloc : memref<8192xf16, #npu.space<ub>>
  %y_tile = npu.alloc : memref<8192xf16, #npu.space<ub>>
  %row_max = npu.alloc : memref<1024xf16, #npu.space<ub>>
  npu.copy %x[%c0], %x_tile[%c0] {cols = 8192}
  npu.vreduce_max %x_tile[%c0], %row_max[%c0] {rows = 1024, cols = 8}
  npu.vsub %x_tile[%c0], %row_max[%c0], %y_tile[%c0] {rows = 1024, cols = 8, strides = [8, 1, 8], col_strides = [1, 0, 1]}
  npu.copy %y_tile[%c0], %y[%c0] {cols = 8192}
}

func.func @main(%x: memref<8192xf16, #npu.space<gm>> {ge.name = "x"},
                %y: memref<8192xf16, #npu.space<gm>> {ge.name = "y", npu.output}) {
  npu.launch @too_big(%x, %y)
  func.return
}
