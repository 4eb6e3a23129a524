"""npu-merge-launches joins launches next to each other on one stream, each on at
most the preset's cores, and leaves the others as they are."""

from __future__ import annotations

from pathlib import Path

import pytest

from gecomp.dialects.context import make_context
from gecomp.core.parsing import parse_module
from gecomp.dialects import npu
from gecomp.lowering.plan.merge_launches import MergeLaunchesPass

SOURCE = (Path(__file__).parents[1] / "lit" / "npu" / "passes" / "merge-launches.mlir").read_text()
"""@halves (2 blocks) then @sum (1 block), launched one after the other on stream 0."""


def launches_after_merging(first: str, second: str) -> list[str]:
    text = SOURCE.replace("npu.launch @halves(%x, %t)", f"npu.launch @halves(%x, %t) {first}")
    text = text.replace("npu.launch @sum(%t, %x, %y)", f"npu.launch @sum(%t, %x, %y) {second}")
    module = parse_module(make_context(), text, "merge.mlir")
    MergeLaunchesPass(hw="tiny").apply(make_context(), module)
    return [op.callee.string_value() for op in module.walk() if isinstance(op, npu.LaunchOp)]


@pytest.mark.parametrize(
    "first,second,launched",
    [
        ("", "", ["halves_to_sum"]),
        ("{block_dim = 3}", "", ["halves", "sum"]),  # more blocks than tiny's 2 cores
        ("", "{stream = 1}", ["halves", "sum"]),
        ("\n    npu.record_event {stream = 0, event = 0}\n    npu.wait_event {stream = 0, event = 0}", "", ["halves", "sum"]),
    ],
    ids=["merged", "too-many-blocks", "two-streams", "event-between"],
)
def test_which_launches_merge(first, second, launched):
    assert launches_after_merging(first, second) == launched


SIDE_BY_SIDE = (Path(__file__).parents[1] / "lit" / "npu" / "passes" / "merge-side-by-side.mlir").read_text()
"""@double and @negate (1 block each, independent) then @sum, on tiny's 2 cores."""


def phases_after_merging(text: str) -> list[str]:
    module = parse_module(make_context(), text, "side.mlir")
    MergeLaunchesPass(hw="tiny").apply(make_context(), module)
    (kernel,) = [op for op in module.walk() if isinstance(op, npu.KernelOp)]
    return kernel.phase_names()


@pytest.mark.parametrize(
    "edit,phases",
    [
        ({}, ["double+negate", "sum"]),
        # @negate reads what @double writes: a barrier must stand between them
        ({"npu.launch @negate(%x, %n)": "npu.launch @negate(%t, %n)",
          "npu.kernel @negate(%x: memref<512xf16": "npu.kernel @negate(%x: memref<256xf16",
          "%o = arith.addi %s, %c256 : index": "%o = arith.addi %s, %c0 : index"}, ["double", "negate", "sum"]),
        # @negate writes bytes @double writes (the plan gives them one offset)
        ({"%n = npu.gm_buffer {offset = 512}": "%n = npu.gm_buffer {offset = 0}"}, ["double", "negate", "sum"]),
        # @sum between them touches the bytes of both: neither may move past it
        ({"npu.launch @negate(%x, %n)\n    npu.launch @sum(%t, %n, %y)": "npu.launch @sum(%t, %n, %y)\n    npu.launch @negate(%x, %n)"},
         ["double", "sum", "negate"]),
    ],
    ids=["independent", "reads-its-output", "shares-bytes", "no-partner"],
)
def test_independent_launches_share_a_phase(edit, phases):
    text = SIDE_BY_SIDE
    for old, new in edit.items():
        assert old in text
        text = text.replace(old, new)
    assert phases_after_merging(text) == phases
