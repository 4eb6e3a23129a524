"""K chunks staged in pieces never cost more flags than the preset has event ids.

A chunk that overwrites an L1 copy its item read before needs one MTE1 -> MTE2
flag per piece and operand; npu-insert-sync turns what does not fit the preset's
event ids into `pipe_barrier ALL` (`_CubeKernel._staged_in_pieces` says why).
The case: a DenseNet-121 1x1 convolution after its batch norm and ReLU, f32, K
928 in chunks of 256 walked in L0 steps of 32 (eight pieces, two operands).
"""

from __future__ import annotations

from cube_lowering_testing import check_lowering, compile_module, parse
from gecomp.dialects import npu

CONV = """
func.func @main(%x: tensor<1x928x14x14xf32> {ge.name = "x"}) -> (tensor<1x128x14x14xf32> {ge.name = "y"}) {
  %s = ge.const #ge.random<uniform, seed = 2, low = 0.8, high = 1.2> : tensor<928xf32>
  %bi = ge.const #ge.random<normal, seed = 3, mean = 0.0, std = 0.1> : tensor<928xf32>
  %m = ge.const #ge.random<normal, seed = 4, mean = 0.0, std = 0.1> : tensor<928xf32>
  %v = ge.const #ge.random<uniform, seed = 5, low = 0.5, high = 1.5> : tensor<928xf32>
  %bn = ge.batch_norm %x, %s, %bi, %m, %v : (tensor<1x928x14x14xf32>, tensor<928xf32>, tensor<928xf32>, tensor<928xf32>, tensor<928xf32>) -> tensor<1x928x14x14xf32>
  %r0 = ge.relu %bn : (tensor<1x928x14x14xf32>) -> tensor<1x928x14x14xf32>
  %w = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.06> : tensor<128x928x1x1xf32>
  %c = ge.conv2d %r0, %w {pads = [0, 0, 0, 0]} : (tensor<1x928x14x14xf32>, tensor<128x928x1x1xf32>) -> tensor<1x128x14x14xf32>
  %r = ge.relu %c : (tensor<1x128x14x14xf32>) -> tensor<1x128x14x14xf32>
  func.return %r : tensor<1x128x14x14xf32>
}
"""
PIPELINE = "ge-compile{hw=ascend910}"


def test_pieces_leave_no_pipe_barrier():
    """Structure: no `pipe_barrier ALL` in the kernel (44 at 3a0a140, whose chunks
    two and three were staged in eight pieces each); numbers: the reference's,
    race-checked."""
    module = compile_module(parse(CONV), PIPELINE)
    barriers = [op for op in module.walk() if isinstance(op, npu.PipeBarrierOp)]
    assert not barriers, f"{len(barriers)} pipe_barrier ops: a chunk's piece flags ran out of event ids"
    check_lowering(CONV, hw="ascend910", pipeline=PIPELINE)
