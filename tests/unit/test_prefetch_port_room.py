"""The MTE2 room a phase of a merged kernel leaves the next phase's prefetched
first B chunk (`prefetch_constants.port_room`, `tiling.Prefetched.port`).
npu-prefetch-constants moves that chunk before the barrier whatever its size, and
on each core it queues behind the phase's own loads: the tiling estimate takes
its port time off the fill only as far as the phase before leaves MTE2 idle.
Credited whole, ResNet-50's 3x3 512-channel convolutions at 7x7 (split-K 4) chose
a first chunk of 1,008 of 1,152 K rows that made the MTE2-bound partials' sum
before them 1,664 -> 5,154 cycles."""

from __future__ import annotations

import math

import pytest
from test_lower_cube_tiling import PLAIN, Operand
from test_prefetch_room import first_phase

from gecomp.lowering.fused_to_npu.prefetch_room import tiling_port_room
from gecomp.lowering.tiling import GemmShape, Prefetched, best_cube_tiling
from gecomp.simulator.hardware import load_preset
from gecomp.transforms.npu.prefetch_constants import barrier_window, mte2_slack, pipe_work, port_room


@pytest.mark.parametrize("vector_ops", [0, 40])
def test_the_port_room_is_the_mte2_slack_and_the_window(vector_ops):
    """A phase whose loads outlast its other pipes leaves MTE2 the barrier's window
    alone; with more vector work, also what that work outlasts its loads."""
    hw = load_preset("tiny")
    ops = first_phase(vector_ops)
    work = pipe_work(ops, hw)
    assert port_room(ops, hw) == mte2_slack(ops, hw) + barrier_window(ops, hw)
    assert mte2_slack(ops, hw) == max(0, max(c for p, c in work.items() if p != "MTE2") - work["MTE2"])
    if vector_ops:
        assert port_room(ops, hw) > port_room(first_phase(0), hw)


SHAPE = GemmShape(1, 128, 1024, 1024)  # few rows, a large constant B: its first chunk is prefetched


def estimate(first_b_prefetched) -> float:
    hw = load_preset("ascend910")
    return best_cube_tiling(hw, SHAPE, Operand(), [Operand()], PLAIN, first_b_prefetched)[0].estimate


def test_an_unknown_port_room_credits_the_whole_port_time():
    """`port=None` (a form choice, no kernel built before) estimates as before: the
    first chunk's port time off."""
    assert estimate(Prefetched(0.0)) == estimate(Prefetched(0.0, None)) < estimate(False)


@pytest.mark.parametrize("port", [0.0, 100.0, 300.0, 1000.0])
def test_the_port_credit_is_bounded_by_the_room(port):
    """No estimate drops below the unprefetched one by more than the room (the HBM
    share kept: room 0); with no room at all, nothing comes off; more room never
    estimates slower."""
    bounded = estimate(Prefetched(0.0, port))
    assert estimate(False) - port - 1e-6 <= bounded <= estimate(False)
    if port == 0.0:
        assert bounded == estimate(False)
    assert estimate(Prefetched(0.0, math.inf)) <= bounded


def test_a_cube_kernel_leaves_its_estimate_less_its_items_mte2():
    """From a cube kernel's tiling: its estimate less its items' MTE2 time, and the
    barrier's window; never less than the window."""
    hw = load_preset("ascend910")
    tiling = best_cube_tiling(hw, SHAPE, Operand(), [Operand()], PLAIN)[0]
    window = max(hw.paths["gm_to_l1"].latency, hw.paths["gm_to_ub"].latency) + hw.paths["ub_to_gm"].latency
    mte2 = dict(tiling.terms)["mte2"]
    assert tiling_port_room(tiling, hw) == max(0.0, tiling.estimate - tiling.per_core * mte2) + window
    assert tiling_port_room(tiling, hw) >= window
