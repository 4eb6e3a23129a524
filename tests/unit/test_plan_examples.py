"""Every example computes exactly the same outputs whatever the execution plan:
without and with GM reuse, on one stream and on automatic streams, with the
launches of a stream merged into phases or not (same kernels, same numbers; only
addresses, streams, events and launches change), and the planned arena is never
below its lower bound."""

from __future__ import annotations

import glob
import os

import numpy as np
import pytest
from plan_testing import lower_without_plan

from gecomp.dialects.context import make_context
from gecomp.core.parsing import load_module
from gecomp.lowering.pipelines import CompilePipeline
from gecomp.lowering.plan.memory import plan_gm
from gecomp.lowering.plan.merge_launches import MergeLaunchesPass
from gecomp.lowering.plan.streams import assign_streams
from gecomp.simulator.npu import simulate
from gecomp.core.signature import input_specs, main_function, random_inputs

EXAMPLES = sorted(glob.glob(os.path.join(os.path.dirname(__file__), "..", "..", "examples", "*.mlir")))
PLANS = [(1, False, False), (1, True, False), (0, True, False), (0, True, True)]
"""(streams, reuse, merge): the first is eager mode's plan, the last ge-compile's."""


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: os.path.splitext(os.path.basename(p))[0])
def test_outputs_identical_under_every_plan(path):
    base = load_module(make_context(), path)
    lower_without_plan(base, pipeline=CompilePipeline())
    inputs = random_inputs(input_specs(main_function(base)), 0)
    results = []
    for streams, reuse, merge in PLANS:
        module = base.clone()
        assign_streams(module, streams)
        plan = plan_gm(module, "ascend910", reuse)
        assert plan.lower_bound_bytes <= plan.arena_bytes <= plan.no_reuse_bytes
        if merge:
            MergeLaunchesPass().apply(make_context(), module)
        results.append(simulate(module, inputs, "ascend910").outputs)
    for outputs in results[1:]:
        for expected, got in zip(results[0], outputs):
            assert np.array_equal(expected, got, equal_nan=True)
