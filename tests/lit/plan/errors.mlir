// The plan passes reject what they cannot plan with a one-line located error.
// RUN: not ge-opt %s -p npu-plan-gm 2>&1 | filecheck %s --check-prefix=LEVEL
// RUN: not ge-opt %s -p npu-assign-streams 2>&1 | filecheck %s --check-prefix=LEVEL
// RUN: not ge-opt %s -p 'ge-compile{streams=-1}' 2>&1 | filecheck %s --check-prefix=STREAMS
// RUN: not ge-opt %s -p 'npu-plan-gm{strategy=magic}' 2>&1 | filecheck %s --check-prefix=STRATEGY

// LEVEL: errors.mlir:[[# @LINE + 3]]:1: error: @main is not an npu host plan (GM memref arguments): lower it with ge-to-npu first
// STREAMS: error: bad options for pass 'ge-compile': option 'streams' must be 0 or more, got -1
// STRATEGY: error: npu-plan-gm: unknown strategy 'magic' (one of greedy-by-size, best-fit-lifetime, greedy-by-breadth, hybrid)
func.func @main(%x: tensor<8x16xf16> {ge.name = "x"}) -> (tensor<8x16xf16> {ge.name = "y"}) {
  %y = ge.relu %x : (tensor<8x16xf16>) -> tensor<8x16xf16>
  func.return %y : tensor<8x16xf16>
}
