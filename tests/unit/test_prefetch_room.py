"""The room a phase of a merged kernel leaves the next phase's prefetched first B
chunk: the HBM time it leaves idle (transforms/npu/prefetch_constants.py
`hbm_room` from its instructions, lowering/fused_to_npu/prefetch_room.py
`tiling_room` from a cube kernel's tiling). A phase bound by the HBM leaves none
beyond the barrier's window, so the tiling estimate of the kernel after it takes
none of that chunk's HBM share off (the mlp's first product after an f32 cast:
credited its whole chunk, it made the cast 2,466 -> 4,182 cycles)."""

from __future__ import annotations

import dataclasses

import pytest
from test_lower_cube_tiling import PLAIN, Operand
from test_prefetch_constants import module

from gecomp.core.parsing import parse_module
from gecomp.dialects import npu
from gecomp.dialects.context import make_context
from gecomp.lowering.fused_to_npu.prefetch_room import tiling_room
from gecomp.lowering.tiling import GemmShape, best_cube_tiling
from gecomp.simulator.hardware import load_preset
from gecomp.transforms.npu.prefetch_constants import barrier_window, hbm_cycles, hbm_room, phases, pipe_work


def first_phase(vector_ops: int):
    m = parse_module(make_context(), module("", vector_ops=vector_ops), "t.mlir")
    kernel = next(op for op in m.walk() if isinstance(op, npu.KernelOp))
    return phases(kernel)[0]


def test_the_hbm_time_counts_every_block_and_each_buffer_once():
    """Phase 1 loads 512 bytes of x and stores 512 of t on each of 2 blocks: 2 KB in
    all; on 8 blocks no more than x and t hold (what the blocks read again of a
    panel comes from the L2)."""
    hw = load_preset("tiny")
    ops = first_phase(0)
    assert hbm_cycles(ops, hw, 2) == 2048 / hw.hbm_bytes_per_cycle
    assert hbm_cycles(ops, hw, 8) == 2048 / hw.hbm_bytes_per_cycle


@pytest.mark.parametrize("vector_ops", [0, 40])
def test_an_hbm_bound_phase_leaves_the_window_alone(vector_ops):
    """With an HBM slower than all the phase's pipes, nothing beyond the barrier's
    window is idle, however long its vector work; with a fast HBM the room is the
    busiest pipe's work less the HBM time."""
    hw = load_preset("tiny")
    ops = first_phase(vector_ops)
    busiest = max(pipe_work(ops, hw).values())
    slow = dataclasses.replace(hw, hbm_bytes_per_cycle=2048 / (2 * busiest))
    assert hbm_room(ops, slow, 2) == barrier_window(ops, hw)
    assert hbm_room(ops, hw, 2) == pytest.approx(busiest - 2048 / hw.hbm_bytes_per_cycle + barrier_window(ops, hw))
    if vector_ops:
        assert hbm_room(ops, hw, 2) > hbm_room(first_phase(0), hw, 2)


def test_a_cube_kernel_bound_by_its_weights_leaves_little_room():
    """A few-row product streaming a large weight, on an HBM slow enough to bound
    it, leaves the HBM idle for little more than the barrier's window (its A and
    outputs' share: A comes from the L2); on the real HBM, for its estimate less its
    weight's and outputs' HBM time."""
    hw = load_preset("ascend910")
    window = max(hw.paths["gm_to_l1"].latency, hw.paths["gm_to_ub"].latency) + hw.paths["ub_to_gm"].latency
    shape = GemmShape(1, 16, 4096, 4096)
    slow = dataclasses.replace(hw, hbm_bytes_per_cycle=hw.hbm_bytes_per_cycle / 8)
    bound = best_cube_tiling(slow, shape, Operand(), [Operand()], PLAIN)[0]
    assert tiling_room(bound, slow) < window + 0.01 * bound.estimate
    fast = best_cube_tiling(hw, shape, Operand(), [Operand()], PLAIN)[0]
    weights = (4096 * 4096 + 16 * 4096) * 2 / hw.hbm_bytes_per_cycle
    assert tiling_room(fast, hw) == pytest.approx(fast.estimate - weights + window)
