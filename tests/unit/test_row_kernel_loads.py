"""A row kernel's loads where each core has one tile (lowering/fused_to_npu/row_kernel.py
`_load_at_first_use`): each input's copy stands just before the first instruction
that reads it, so npu-insert-sync gives it a flag of its own and the vector unit
starts on the first input to land (MMoE's gate mix: two gates and eight planes,
one tile per core). With several tiles per core the double buffers hide the loads
and they stay together: moved, each would need a flag of its own to free its
buffer and the event ids run out (pipe barriers)."""

from __future__ import annotations

import pytest

from gecomp.core.passes import run_pipeline
from gecomp.core.signature import input_specs, main_function, random_inputs
from gecomp.dialects import npu
from gecomp.dialects.context import make_context
from gecomp.lowering.pipelines import CompilePipeline
from gecomp.simulator.npu import simulate
from gecomp.simulator.reference import run_reference

from graph_testing import assert_close, parse
from test_vector_mix import mixes

SYNC = (npu.SetFlagOp, npu.WaitFlagOp)


def _kernel(text: str, hw: str) -> tuple:
    module = parse(text)
    run_pipeline(CompilePipeline(hw=hw).stages(), make_context(), module)
    kernels = [k for k in module.walk() if isinstance(k, npu.KernelOp)]
    assert len(kernels) == 1
    return module, kernels[0]


def _is_load(op) -> bool:
    return isinstance(op, npu.CopyOp) and op.spaces() == ("gm", "ub")


def _reads(op, buffer) -> bool:
    return op is not None and any(o is buffer for o in op.operands)


def _next_instruction(op):
    """The next op after `op` in its block that is not a flag or index arithmetic."""
    op = op.next_op
    while op is not None and (isinstance(op, SYNC) or op.name.startswith("arith.")):
        op = op.next_op
    return op


def _loads_in_blocks(kernel):
    """Each block of the kernel that loads tile inputs, with its loads in order."""
    blocks = {}
    for op in kernel.walk():
        if _is_load(op):
            blocks.setdefault(id(op.parent_block()), []).append(op)
    return list(blocks.values())


@pytest.mark.parametrize("planes,batch,n,tasks", [(8, [256], 256, 2), (5, [128], 96, 2), (3, [64], 160, 1)])
def test_one_tile_per_core_loads_each_input_at_its_first_reader(planes, batch, n, tasks):
    text = mixes(planes, batch, n, tasks)
    module, kernel = _kernel(text, "ascend910")
    assert kernel.properties["block_dim"].value.data == 32 and batch[0] <= 32 * 8  # one tile per core
    executed = _loads_in_blocks(kernel)
    assert executed
    for loads in executed:
        assert len(loads) == planes + tasks
        for load in loads:
            home = load.operands[load.buffer_operands()[1]]
            assert _reads(_next_instruction(load), home), f"{load} is not followed by its first reader"
        waits = [o for o in loads[0].parent_block().ops if isinstance(o, npu.WaitFlagOp) and o.attr_values().src == "MTE2" and o.attr_values().dst == "V"]
        assert len(waits) >= planes  # a flag per plane at least
    inputs = random_inputs(input_specs(main_function(module)), 5)
    assert_close(run_reference(parse(text), inputs), simulate(module, inputs, "ascend910").outputs)  # race-checked


def test_several_tiles_per_core_keep_their_loads_together():
    text = mixes(5, [1024], 96, 2)
    module, kernel = _kernel(text, "ascend910")
    assert not any(isinstance(op, npu.PipeBarrierOp) for op in kernel.walk())
    per_tile = 5 + 2
    tiles = [loads[i : i + per_tile] for loads in _loads_in_blocks(kernel) for i in range(0, len(loads), per_tile)]
    assert tiles and all(len(loads) == per_tile for loads in tiles)  # the loop's two tiles (double buffers), the tail's
    for loads in tiles:  # each tile's loads one after another, before its body
        ops = list(loads[0].parent_block().ops)
        positions = [ops.index(load) for load in loads]
        assert all(not isinstance(o, npu.VectorOp) for o in ops[positions[0] : positions[-1]])
    inputs = random_inputs(input_specs(main_function(module)), 6)
    assert_close(run_reference(parse(text), inputs), simulate(module, inputs, "ascend910").outputs)
