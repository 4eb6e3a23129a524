"""The anatomy of a simulated phase (`simulator/npu/anatomy.py`, bench/phase_anatomy.py):
fill, work, drain, spread and barrier add up to the phase, and the parts that
come from the hardware's fixed costs are at least those costs."""

from __future__ import annotations

import pytest

from gecomp.simulator.hardware import load_preset
from gecomp.simulator.npu import simulate
from gecomp.simulator.npu.anatomy import phase_anatomy
from gecomp.simulator.npu.costs import sync_all_transfers
from gecomp.simulator.npu.hazards import PIPE_INDEX
from npu_testing import MATMUL_THEN_NORM, compiled_graph

HW = load_preset("ascend910")

COLUMNS = ("fill", "work", "drain", "spread", "barrier")


def simulated(pipeline: str, trace: bool = True):
    module, inputs = compiled_graph(MATMUL_THEN_NORM, pipeline)
    return simulate(module, inputs, hw=HW, trace=trace).report


@pytest.fixture(scope="module")
def merged():
    return simulated("ge-compile")


def test_the_columns_add_up_to_each_phase(merged):
    phases = phase_anatomy(merged)
    assert [p.name for p in phases] == [p.name for p in merged.kernels[0].phases]
    assert len(phases) == 2
    for p in phases:
        assert all(getattr(p, c) >= 0 for c in COLUMNS)
        assert sum(getattr(p, c) for c in COLUMNS) == p.cycles
        assert p.around_work == p.cycles - p.work
        assert 0 < p.mte2_busy <= 1


def test_fixed_costs_show_where_they_are_paid(merged):
    cube, norm = phase_anatomy(merged)
    # The product's first operands land before anything computes, and a barrier
    # costs at least its flag's store and the read of every flag.
    assert cube.fill >= HW.paths["gm_to_l1"].latency
    store, poll = sync_all_transfers(HW)
    assert cube.barrier >= store.cycles + poll.cycles
    # The last phase ends with its last block: no barrier after it; its blocks'
    # last stores land (the drain) before they end.
    assert norm.barrier == 0
    assert norm.drain >= HW.paths["ub_to_gm"].latency


def test_a_kernel_that_is_not_merged_is_one_phase():
    report = simulated("ge-compile{merge=false}")
    phases = phase_anatomy(report)
    assert [(p.name, p.cycles) for p in phases] == [(k.name, k.cycles) for k in report.kernels]
    assert all(p.barrier == 0 and p.spread >= 0 for p in phases)


def test_an_untraced_simulation_is_refused():
    with pytest.raises(ValueError, match="traced simulation"):
        phase_anatomy(simulated("ge-compile", trace=False))


def test_the_pipe_bound_is_a_block_s_busiest_pipe(merged):
    # No block ends before its busiest pipe has worked: a phase takes at least its
    # bound, and the busiest block's pipe works at least the blocks' mean on it.
    # (The report's busy cycles also count the barrier's flag store and read.)
    kernel = merged.kernels[0]
    blocks = len(kernel.block_spans)
    store, poll = sync_all_transfers(HW)
    for p, record in zip(phase_anatomy(merged), kernel.phases):
        assert 0 < p.pipe_bound <= p.cycles
        flags = blocks * (store.data_cycles + poll.data_cycles)
        assert p.pipe_bound * blocks >= record.busy[PIPE_INDEX[p.bound_pipe]] - flags
    cube, norm = phase_anatomy(merged)
    assert cube.bound_pipe in ("MTE2", "MTE1", "M")
    assert norm.bound_pipe in ("MTE2", "V")
