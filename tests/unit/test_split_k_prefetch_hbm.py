"""A cube kernel after another kernel of the merged launch has its constant B's
first chunk loaded before the phase's barrier (npu-prefetch-constants): the
tiling estimate takes that chunk's port time off its fill and its HBM share off
the item's B and the kernel's HBM floor, but the HBM share only as far as the
phase before leaves the HBM idle (`tiling.Prefetched.room`). Credited whole
(10d7c73), the mlp's first product after an HBM-bound f32 cast picked a tiling
whose chunk stretched the cast (2,466 -> 4,182 cycles); not credited at all, the
split-K forms of a few-row, long-K product (64 x 2816 @ 2816 x 1024, llama_layer
tp=4's down projection) are estimated at their whole weight's HBM time."""

from __future__ import annotations

import math

import pytest
from cube_lowering_testing import parse

from gecomp.core.signature import main_function
from gecomp.lowering.fused_to_npu.split_k import estimates
from gecomp.lowering.tiling import Prefetched
from gecomp.simulator.hardware import load_preset
from gecomp.simulator.npu.costs import next_kernel_cycles

M, K, N = 64, 2816, 1024
TEXT = f"""func.func @main(%x: tensor<{M}x{K}xf16> {{ge.name = "x"}}) -> (tensor<{M}x{N}xf16> {{ge.name = "out"}}) {{
  %h = ge.gelu %x : (tensor<{M}x{K}xf16>) -> tensor<{M}x{K}xf16>
  %w = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.02> : tensor<{K}x{N}xf16>
  %y = fused.matmul_bias_act %h, %w {{act = "none"}} : (tensor<{M}x{K}xf16>, tensor<{K}x{N}xf16>) -> tensor<{M}x{N}xf16>
  func.return %y : tensor<{M}x{N}xf16>
}}"""
FORMS = ("one kernel", "split-K 2", "split-K 4", "split-K 8")


def product(module):
    return next(op for op in main_function(module).body.block.ops if op.name == "fused.matmul_bias_act")


def estimated(after_barrier) -> dict[str, float]:
    hw = load_preset("ascend910")
    found = estimates(product(parse(TEXT)), hw, next_kernel_cycles(hw, True), after_barrier=after_barrier)
    return {form: found[form] for form in FORMS}


def test_the_prefetched_chunk_leaves_the_hbm_bound_split_k_estimate():
    """Split-K 4's partials (first chunk 512 of 704 rows) are bound by their weight's
    HBM time: with the HBM idle before the barrier, prefetching the first chunk
    lowers that estimate (the port time alone did not)."""
    idle, busy = estimated(Prefetched(math.inf)), estimated(Prefetched(0.0))
    assert all(idle[form] <= busy[form] for form in FORMS)
    assert idle["split-K 4"] < busy["split-K 4"] - 500


def test_no_room_known_takes_the_port_time_alone():
    """`True` (no room known) and a phase before that leaves the HBM no idle time
    estimate alike: the port time off, the HBM share kept."""
    assert estimated(True) == estimated(Prefetched(0.0))
    assert all(estimated(True)[form] < estimated(False)[form] for form in FORMS if form != "split-K 8")


@pytest.mark.parametrize("room", [100.0, 300.0, 1000.0])
def test_the_hbm_credit_is_bounded_by_the_room(room):
    """No form's estimate drops by more than the HBM time the phase before leaves
    idle (10d7c73 took the chunk's whole HBM share off, ~1,450 cycles of split-K
    4's); the HBM-bound split-K 4 drops."""
    none, some = estimated(Prefetched(0.0)), estimated(Prefetched(room))
    for form in FORMS:
        assert some[form] >= none[form] - room - 1e-6
    assert some["split-K 4"] < none["split-K 4"]
