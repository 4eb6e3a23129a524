// ge-partition's one-line errors: a strategy that does not apply names the op and
// why; bad options name the option.
// RUN: not ge-opt %s -p 'ge-partition{devices=2 strategy=dp}' 2>&1 | filecheck %s --check-prefix=DP
// RUN: not ge-opt %s -p 'ge-partition{devices=2 strategy=tp}' 2>&1 | filecheck %s --check-prefix=TP
// RUN: not ge-opt %s -p 'ge-partition{devices=1}' 2>&1 | filecheck %s --check-prefix=ONE
// RUN: not ge-opt %s -p 'ge-partition{devices=2 strategy=zz}' 2>&1 | filecheck %s --check-prefix=STRATEGY
// RUN: not ge-sim %s --devices 2 2>&1 | filecheck %s --check-prefix=UNPARTITIONED

// DP: partition-errors.mlir:[[# @LINE + 10]]:3: error: 'ge.softmax' op ge-partition: strategy dp does not apply: operand #0 carries the inputs' leading dim (split on dim 0) and it normalises over dim 0, which is split, so the graph mixes values across it
// DP-NOT: Traceback
// TP: partition-errors.mlir:[[# @LINE + 5]]:1: error: ge-partition: strategy tp does not apply: no column split of a weight reaches a matmul contracting it over 2 devices without gathering a value whole
// ONE: error: ge-partition: devices must be 2 or more, got 1
// STRATEGY: error: ge-partition: strategy must be one of dp, tp, pp, got 'zz'
// UNPARTITIONED: error: --devices 2: the module is not partitioned; partition it first

func.func @main(%x: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %w = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.5> : tensor<6x6xf32>
  %y = ge.matmul %x, %w : (tensor<4x6xf32>, tensor<6x6xf32>) -> tensor<4x6xf32>
  %p = ge.softmax %y {axis = 0} : (tensor<4x6xf32>) -> tensor<4x6xf32>
  func.return %p : tensor<4x6xf32>
}
