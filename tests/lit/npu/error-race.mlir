// A missing wait_flag: V reads UB that MTE2 writes, with nothing ordering them.
// The race check uses vector clocks over set/wait/barrier, so it names both
// instructions whatever the timing was.
// RUN: not ge-sim %s --hw tiny 2>&1 | filecheck %s
// With the checker skipped the run ends, and the report says what was skipped:
// RUN: ge-sim %s --hw tiny --no-race-check --report 2>&1 | filecheck %s --check-prefix=SKIPPED
// SKIPPED: race check: skipped (--no-race-check): no access was checked for a missing sync
// CHECK: error-race.mlir:[[# @LINE + 12]]:3: error: race: 'npu.vexp' on pipe V reads ub bytes [0, 2048) that 'npu.copy' at {{.*}}error-race.mlir:[[# @LINE + 9]]:3 on pipe MTE2 writes, and no set_flag/wait_flag or barrier orders them

npu.kernel @k(%x: memref<1024xf16, #npu.space<gm>>, %y: memref<1024xf16, #npu.space<gm>>) attributes {block_dim = 1} {
  %c0 = arith.constant 0 : index
  %u = npu.alloc {offset = 0} : memref<1024xf16, #npu.space<ub>>
  // The flags exist, but the set comes too late: the wait below orders the
  // store after V, not V after the load.
  npu.set_flag {src = "V", dst = "MTE3", event = 0}
  npu.wait_flag {src = "V", dst = "MTE3", event = 0}
  npu.copy %x[%c0], %u[%c0] {cols = 1024}
  npu.set_flag {src = "MTE2", dst = "MTE3", event = 0}
  npu.wait_flag {src = "MTE2", dst = "MTE3", event = 0}
  npu.vexp %u[%c0], %u[%c0] {cols = 1024}
  npu.copy %u[%c0], %y[%c0] {cols = 1024}
}
func.func @main(%x: memref<1024xf16, #npu.space<gm>>, %y: memref<1024xf16, #npu.space<gm>> {npu.output}) {
  npu.launch @k(%x, %y)
  func.return
}
