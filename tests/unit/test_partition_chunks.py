"""ge-partition{chunks=K}: the row-independent tail of each device function runs
in K chunks of rows (every device's outputs still equal the single-device
reference), a residual added to partial sums joins device 0's summand so nothing
computes after the last collective, the chunks' concatenation costs no kernel,
and the bench's bound counts only the collectives no schedule can hide."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from gecomp.core.diagnostics import CompileError
from gecomp.dialects import ge
from gecomp.lowering.plan.device_streams import device_tasks
from gecomp.simulator.devices import device_functions
from gecomp.simulator.multi_device import unhideable_collectives

from test_partition import assert_devices_match_reference, partitioned

EXAMPLES = Path(__file__).parents[2] / "examples"


def op_names(function) -> list[str]:
    return [op.name for op in function.body.block.ops if op.name != "ge.const"]


@pytest.mark.parametrize("devices, chunks", [(2, 2), (4, 2), (4, 4)])
def test_llama_layer_chunked_matches_reference(devices, chunks):
    source, module = partitioned(EXAMPLES / "llama_layer.mlir", f"ge-partition{{devices={devices} strategy=tp chunks={chunks}}}")
    counts = Counter(op.name for op in module.walk())
    # Both all_reduces of the layer (after attention, after the MLP), once per chunk.
    assert counts["ge.all_reduce"] == 2 * devices * chunks
    for f in device_functions(module):
        names = op_names(f)
        # The chunks' outputs are concatenated; nothing computes after the last collective.
        assert names[-3:] == ["ge.all_reduce", "ge.concat", "func.return"]
        # Chunk c+1's output projection stands between chunk c's all_reduce and its reader.
        ops = [op for op in f.body.block.ops if op.name != "ge.const"]
        first = names.index("ge.all_reduce")
        reader = next(i for i, op in enumerate(ops) if ops[first].results[0] in op.operands)
        assert "ge.matmul" in names[first + 1 : reader]
    assert_devices_match_reference(source, module)


def test_bert_layer_chunked_matches_reference():
    source, module = partitioned(EXAMPLES / "bert_layer.mlir", "ge-partition{devices=2 strategy=tp chunks=2}")
    assert Counter(op.name for op in module.walk())["ge.all_reduce"] == 2 * 2 * 2
    assert_devices_match_reference(source, module)


def test_output_residual_joins_device_zero_summand():
    _, module = partitioned(EXAMPLES / "llama_layer.mlir", "ge-partition{devices=2 strategy=tp token-split=never}")
    last_ops = []
    for f in device_functions(module):
        reduce = [op for op in f.body.block.ops if isinstance(op, ge.AllReduceOp)][-1]
        last_ops.append(reduce.input.owner.name)
        assert f.body.block.last_op.operands[0] is reduce.result
    # Device 0 adds the residual to its partial sum; device 1 reduces its matmul's.
    assert last_ops == ["ge.add", "ge.matmul"]


def test_residual_before_a_norm_joins_device_zero_summand():
    """The attention's residual joins device 0's summand too: every device's norm
    reads the all_reduce itself (no add repeated on each device after it)."""
    source, module = partitioned(EXAMPLES / "llama_layer.mlir", "ge-partition{devices=2 strategy=tp token-split=never}")
    for d, f in enumerate(device_functions(module)):
        first = [op for op in f.body.block.ops if isinstance(op, ge.AllReduceOp)][0]
        readers = {use.operation.name for use in first.result.uses}
        assert readers == {"ge.rms_norm"} | ({"ge.add"} if d == 0 else set())
        assert first.input.owner.name == ("ge.add" if d == 0 else "ge.matmul")


def test_chunks_concat_is_placed_by_the_collectives():
    _, module = partitioned(EXAMPLES / "llama_layer.mlir", "ge-partition{devices=2 strategy=tp chunks=2}")
    tasks = device_tasks(device_functions(module)[1], 1)
    assert [t.kind for t in tasks][-2:] == ["compute", "comm"]
    assert not any(op.name == "ge.concat" for t in tasks for op in t.ops)


@pytest.mark.parametrize("chunks, exposed", [(1, 2), (2, 1), (4, 1)])
def test_unhideable_collectives(chunks, exposed):
    """Unchunked, each all_reduce is read by the very next op; chunked, only the last
    chunk's last all_reduce has no compute left to hide behind."""
    _, module = partitioned(EXAMPLES / "llama_layer.mlir", f"ge-partition{{devices=2 strategy=tp chunks={chunks}}}")
    tasks = device_tasks(device_functions(module)[1], 1)
    found = unhideable_collectives(tasks)
    assert len(found) == exposed
    assert found[-1] is [t for t in tasks if t.kind == "comm"][-1]


@pytest.mark.parametrize(
    "example, options, message",
    [
        ("llama_layer.mlir", "devices=2 strategy=tp chunks=3", "256 output rows do not divide into 3"),
        ("mlp.mlir", "devices=2 strategy=dp chunks=2", "no tail of it whose 128 rows are independent"),
        ("llama_layer.mlir", "devices=2 strategy=tp chunks=0", "chunks must be 1 or more"),
    ],
)
def test_chunks_that_do_not_apply(example, options, message):
    with pytest.raises(CompileError, match=message):
        partitioned(EXAMPLES / example, f"ge-partition{{{options}}}")
