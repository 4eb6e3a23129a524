"""Property tests of the graph optimisations on random `ge` graphs
(`random_graphs.py`): every pass, and the whole `ge-graph-opt` pipeline, must
leave the numbers the reference interpreter computes unchanged, and running the
pipeline a second time must change nothing.

"Unchanged" is `simulator/compare.py`'s tolerance per element type, the one
`ge-sim --check` uses: |actual - expected| <= atol + rtol * |expected| with
atol = rtol = 1e-2 for f16 and 1e-4 for f32; integers and booleans exactly;
NaN matches NaN and an infinity the same infinity. Most rewrites are exact;
the ones that are not (batch_norm folded into rounded weights, a transpose
moved into a matmul flag, 1/sqrt -> rsqrt) differ by a rounding or two.

Case counts: 200 mixed graphs for numbers + idempotency, 4 graphs built around
each op kind (50 kinds), 100 graphs of cube ops for the layout pass, and 30
graphs per individual pass.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from random_graphs import GENERATED_OPS, RandomGraph, graphs, graphs_with

from gecomp.dialects.context import make_context
from gecomp.core.passes import Instrumentation, instrumented, parse_pass_pipeline, run_pipeline
from gecomp.dialects.ge import GE_OPS
from gecomp.simulator.compare import precision_floor, worst_mismatch
from gecomp.simulator.reference import run_reference

PROPERTY_SETTINGS = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def test_the_generator_covers_every_ge_op():
    missing = {op.name for op in GE_OPS} - GENERATED_OPS
    assert not missing, f"random_graphs.py has no maker for {sorted(missing)}"


def optimise(module, pipeline: str = "ge-graph-opt") -> None:
    """Run `pipeline`, verifying the IR after every pass."""
    with instrumented(Instrumentation(verify_each=True)):
        run_pipeline(parse_pass_pipeline(pipeline), make_context(), module)


def assert_same_numbers(g: RandomGraph, pipeline: str):
    module = g.module()
    expected = run_reference(module, list(g.inputs))
    floor = precision_floor(module)
    optimise(module, pipeline)
    actual = run_reference(module, list(g.inputs))
    for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
        assert a.dtype == e.dtype, f"result{i}: {a.dtype} instead of {e.dtype}"
        mismatch = worst_mismatch(f"result{i}", e, a, floor)
        assert mismatch is None or mismatch.ratio <= 1.0, f"{pipeline}: {mismatch}\n{module}"
    return module


@settings(PROPERTY_SETTINGS, max_examples=200)
@given(graphs())
def test_graph_opt_keeps_the_numbers_and_is_idempotent(g: RandomGraph):
    module = assert_same_numbers(g, "ge-graph-opt")
    once = str(module)
    optimise(module)
    assert str(module) == once, "a second ge-graph-opt changed the graph"


@pytest.mark.parametrize("op_name", sorted(GENERATED_OPS))
@settings(PROPERTY_SETTINGS, max_examples=4)
@given(data=st.data())
def test_graph_opt_on_every_op_kind(op_name, data):
    g = data.draw(graphs_with(op_name, max_ops=4))
    assert op_name in g.op_names
    module = assert_same_numbers(g, "ge-graph-opt")
    once = str(module)
    optimise(module)
    assert str(module) == once


LAYOUT_OPS = (
    "ge.matmul", "ge.batch_matmul", "ge.conv2d", "ge.add", "ge.mul", "ge.relu", "ge.gelu",
    "ge.cast", "ge.where", "ge.bias_add", "ge.batch_norm", "ge.max_pool2d", "ge.global_avg_pool",
    "ge.softmax", "ge.reshape", "ge.transpose", "ge.transdata",
)


@settings(PROPERTY_SETTINGS, max_examples=100)
@given(graphs(max_ops=8, element_types=("f16", "f32"), ops=LAYOUT_OPS))
def test_layout_on_cube_graphs(g: RandomGraph):
    """Graphs of cube ops and the ops formats flow through (or stop at), so layout
    inserts, moves and cancels conversions in most of them."""
    module = assert_same_numbers(g, "ge-graph-opt")
    once = str(module)
    optimise(module)
    assert str(module) == once


@pytest.mark.parametrize(
    "pipeline",
    [
        "ge-simplify",
        "ge-constant-fold",
        "ge-constant-fold{max-bytes=64}",
        "ge-fold-batchnorm",
        "ge-layout",
        "ge-layout{propagate=false}",
        "cse",
        "dce",
        "canonicalize",
        "ge-graph-opt{layout=false fold-bn=false}",
    ],
)
@settings(PROPERTY_SETTINGS, max_examples=30)
@given(g=graphs(max_ops=6))
def test_each_pass_keeps_the_numbers(pipeline, g):
    assert_same_numbers(g, pipeline)
