// A wait_flag that no set_flag ever satisfies.
// RUN: not ge-sim %s --hw tiny 2>&1 | filecheck %s
// CHECK: error-deadlock.mlir:[[# @LINE + 7]]:3: error: deadlock: 'npu.wait_flag' (MTE2 -> V, event 1) on pipe V can never be satisfied: it waits for set_flag number 1 of this flag but only 0 execute before the kernel ends

npu.kernel @k(%x: memref<1024xf16, #npu.space<gm>>, %y: memref<1024xf16, #npu.space<gm>>) attributes {block_dim = 1} {
  %c0 = arith.constant 0 : index
  %u = npu.alloc {offset = 0} : memref<1024xf16, #npu.space<ub>>
  npu.copy %x[%c0], %u[%c0] {cols = 1024}
  npu.set_flag {src = "MTE2", dst = "V", event = 0}
  npu.wait_flag {src = "MTE2", dst = "V", event = 1}
  npu.vexp %u[%c0], %u[%c0] {cols = 1024}
}
func.func @main(%x: memref<1024xf16, #npu.space<gm>>, %y: memref<1024xf16, #npu.space<gm>> {npu.output}) {
  npu.launch @k(%x, %y)
  func.return
}
