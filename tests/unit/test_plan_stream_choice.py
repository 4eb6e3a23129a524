"""Automatic streams are weighed by estimated time (lowering/plan/timing.py) and never
end slower than one stream: where every launch fills the cores and merging joins a
stream's launches, one merged launch is kept; where launches are not merged (eager
mode), the streams hide one branch's dispatches behind the other's and are kept.
Each plan is simulated and checked against the reference interpreter."""

from __future__ import annotations

import numpy as np
import pytest

from gecomp.dialects.context import make_context
from gecomp.core.parsing import parse_module
from gecomp.core.passes import run_pipeline
from gecomp.dialects import npu
from gecomp.lowering.pipelines import CompilePipeline
from gecomp.lowering.plan import stages_before_plan
from gecomp.lowering.plan.streams import assign_streams
from gecomp.lowering.plan.timing import PlanTimer
from gecomp.simulator.compare import worst_mismatch
from gecomp.simulator.hardware import load_preset
from gecomp.simulator.npu import simulate
from gecomp.simulator.reference import run_reference
from gecomp.core.signature import input_specs, main_function, random_inputs

BRANCHES = """
builtin.module {
  func.func @main(%x: tensor<64x64xf16> {ge.name = "x"}) -> (tensor<64x64xf16> {ge.name = "y"}) {
    %w0 = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.125> : tensor<64x64xf16>
    %w1 = ge.const #ge.random<normal, seed = 2, mean = 0.0, std = 0.125> : tensor<64x64xf16>
    %w2 = ge.const #ge.random<normal, seed = 3, mean = 0.0, std = 0.125> : tensor<64x64xf16>
    %w3 = ge.const #ge.random<normal, seed = 4, mean = 0.0, std = 0.125> : tensor<64x64xf16>
    %a0 = ge.matmul %x, %w0 : (tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf16>
    %r0 = ge.relu %a0 : (tensor<64x64xf16>) -> tensor<64x64xf16>
    %b0 = ge.matmul %r0, %w1 : (tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf16>
    %a1 = ge.matmul %x, %w2 : (tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf16>
    %r1 = ge.sigmoid %a1 : (tensor<64x64xf16>) -> tensor<64x64xf16>
    %b1 = ge.matmul %r1, %w3 : (tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf16>
    %y = ge.add %b0, %b1 : (tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf16>
    func.return %y : tensor<64x64xf16>
  }
}
"""
"""Two independent branches of products, each kernel on both of tiny's cores."""


def compiled(fuse: bool, streams: int):
    module = parse_module(make_context(), BRANCHES, "branches.mlir")
    run_pipeline(CompilePipeline(hw="tiny", fuse=fuse, streams=streams).stages(), make_context(), module)
    return module


def simulated(module):
    inputs = random_inputs(input_specs(main_function(module)), 0)
    return simulate(module, inputs, "tiny"), inputs


def launch_streams(module) -> set[int]:
    return {op.attr_values().stream for op in main_function(module).walk() if isinstance(op, npu.LaunchOp)}


def check_numerics(outputs, inputs) -> None:
    reference = run_reference(parse_module(make_context(), BRANCHES, "branches.mlir"), inputs)
    for expected, got in zip(reference, outputs):
        worst = worst_mismatch("y", np.asarray(expected), np.asarray(got))
        assert worst is None or worst.ratio <= 1, str(worst)


@pytest.mark.parametrize("fuse", [True, False], ids=["fused", "eager"])
def test_automatic_streams_never_slower_than_one(fuse):
    auto, one = compiled(fuse, 0), compiled(fuse, 1)
    (auto_run, inputs), (one_run, _) = simulated(auto), simulated(one)
    assert auto_run.report.total_cycles <= one_run.report.total_cycles
    for a, b in zip(auto_run.outputs, one_run.outputs):
        assert np.array_equal(a, b, equal_nan=True)
    check_numerics(auto_run.outputs, inputs)
    if fuse:
        # every kernel fills the cores: one stream, its launches merged into one
        assert launch_streams(auto) == {0}
        assert auto_run.report.total_cycles == one_run.report.total_cycles
    else:
        # nothing is merged: the second branch's dispatches hide behind the first's
        assert len(launch_streams(auto)) > 1
        assert auto_run.report.total_cycles < one_run.report.total_cycles


@pytest.mark.parametrize("merge", [True, False])
def test_every_stream_count_is_weighed_and_the_fastest_kept(merge):
    module = parse_module(make_context(), BRANCHES, "branches.mlir")
    pipeline = CompilePipeline(hw="tiny", fuse=merge, merge=merge)
    run_pipeline(stages_before_plan(pipeline), make_context(), module)
    schedule = assign_streams(module, 0, PlanTimer(load_preset("tiny"), merge))
    counts = sorted(schedule.estimates)
    assert counts == list(range(1, max(counts) + 1)) and max(counts) > 1
    best = min(schedule.estimates.values())
    assert schedule.estimates[schedule.stream_count] == best
    assert all(schedule.estimates[c] > best for c in counts if c < schedule.stream_count)
