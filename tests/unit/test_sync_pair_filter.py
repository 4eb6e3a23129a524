"""npu-insert-sync tests a pair of instructions for a conflict only when the byte
ranges their accesses may touch (`sync_levels._footprint`) can meet: the filter
must never drop a pair that `KernelAccesses.conflict` finds conflicting (for any
relation of their instances), and it must drop some, or it proves nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from gecomp.dialects.context import make_context
from gecomp.core.parsing import parse_module
from gecomp.core.passes import parse_pass_pipeline, run_pipeline
from gecomp.transforms.npu import access_conflicts, sync_levels

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize("example", ["resnet_block", "bert_layer"])
def test_footprints_never_drop_a_conflicting_pair(example, monkeypatch):
    conflict = access_conflicts.KernelAccesses.conflict
    may_touch = sync_levels._may_touch_same_bytes
    pairs = {"tested": 0, "conflicting": 0, "would drop": 0}

    def checked(self, x, y, relation):
        found = conflict(self, x, y, relation)
        may = may_touch(
            [sync_levels._footprint(a, self.facts) for a in self.by_instruction[x]],
            [sync_levels._footprint(a, self.facts) for a in self.by_instruction[y]],
        )
        pairs["tested"] += 1
        pairs["conflicting"] += found
        pairs["would drop"] += not may
        assert may or not found, f"{x.name} -> {y.name} conflict, but their footprints do not meet"
        return found

    monkeypatch.setattr(access_conflicts.KernelAccesses, "conflict", checked)
    monkeypatch.setattr(sync_levels, "_may_touch_same_bytes", lambda xs, ys: True)  # test every pair
    ctx = make_context()
    path = EXAMPLES / f"{example}.mlir"
    module = parse_module(ctx, path.read_text(), str(path))
    run_pipeline(parse_pass_pipeline("ge-compile"), ctx, module)
    assert pairs["conflicting"] > 0 and pairs["would drop"] > 0, pairs
