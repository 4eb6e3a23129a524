"""`npu-insert-sync` on random kernels (tests/unit/npu_random_kernels.py): the
simulator finds no race, no deadlock and no unbalanced flag, and the numbers are
those of the fully serialised kernel (`npu-serialize`, a barrier after every
instruction), with the planner run before or after the pass."""

from __future__ import annotations

import pytest

from npu_pass_testing import assert_same_outputs, compiled, inputs_for, outputs
from npu_random_kernels import random_kernel

PLAN = "npu-plan-local-memory{hw=tiny}"
SYNC = "npu-insert-sync{hw=tiny}"

PIPELINES = {
    "placed by hand": (True, SYNC),
    "sync then plan": (False, f"{SYNC},{PLAN}"),
    "plan then sync": (False, f"{PLAN},{SYNC}"),
    "double-buffered": (False, f"npu-double-buffer{{hw=tiny}},{SYNC},{PLAN}"),
}


# Random kernels found two bugs, now tests of their own in test_npu_sync.py (a
# loop's orderings at its end applied one after the other; an ordering made
# inside a loop that may not run taken to imply others).
@pytest.mark.parametrize("seed", range(30))
@pytest.mark.parametrize("variant", list(PIPELINES))
def test_random_kernels_are_race_free_with_serialised_numbers(seed, variant):
    planned, pipeline = PIPELINES[variant]
    text = random_kernel(seed, planned)
    serial = compiled(text, "npu-serialize" if planned else f"{PLAN},npu-serialize")
    inputs = inputs_for(serial)
    expected, _ = outputs(serial, "tiny", inputs)
    actual, _ = outputs(compiled(text, pipeline), "tiny", inputs)
    assert_same_outputs(expected, actual)
