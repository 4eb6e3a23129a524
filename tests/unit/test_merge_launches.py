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
