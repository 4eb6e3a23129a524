// A local buffer larger than its space on the chosen preset (tiny: 32 KB of UB),
// and an event id beyond the preset's (4 per pipe pair).
// RUN: not ge-sim %s --hw tiny 2>&1 | filecheck %s
// RUN: not ge-sim %s --hw ascend910 2>&1 | filecheck %s --check-prefix=EVENT
// CHECK: error-capacity.mlir:[[# @LINE + 5]]:3: error: 'npu.alloc' op over capacity: a 65536-byte ub buffer at offset 0 ends at byte 65536, beyond the 32768-byte ub of preset 'tiny'
// EVENT: error-capacity.mlir:[[# @LINE + 6]]:3: error: 'npu.set_flag' op event id 4 is beyond the hardware's 4 event ids per pipe pair (0..3, preset 'ascend910')

npu.kernel @k(%x: memref<32768xf16, #npu.space<gm>>, %y: memref<32768xf16, #npu.space<gm>>) attributes {block_dim = 1} {
  %c0 = arith.constant 0 : index
  %u = npu.alloc {offset = 0} : memref<32768xf16, #npu.space<ub>>
  npu.copy %x[%c0], %u[%c0] {cols = 32768}
  npu.set_flag {src = "MTE2", dst = "V", event = 4}
  npu.wait_flag {src = "MTE2", dst = "V", event = 4}
}
func.func @main(%x: memref<32768xf16, #npu.space<gm>>, %y: memref<32768xf16, #npu.space<gm>> {npu.output}) {
  npu.launch @k(%x, %y)
  func.return
}
