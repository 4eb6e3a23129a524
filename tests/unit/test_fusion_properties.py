"""Property tests of fusion on random `ge` graphs (`random_graphs.py`): after
`ge-graph-opt,ge-fuse` every graph computes the same numbers as before, within
`simulator/compare.py`'s tolerance per element type (the one `ge-sim --check`
uses); the fused module verifies, every group obeys the one-kernel rules,
fusion never adds kernels or global-memory traffic, and a second `ge-fuse`
changes nothing.

Named fused ops keep their intermediates in fp32 where the unfused graph rounds
each one to f16, so f16 results may differ by a rounding or two; groups
evaluate their body op by op and are exact.

Case counts: 200 graphs over every op, 120 graphs over the ops fusion rewrites
(matmul / conv / norms / softmax / activations / data movement), 60 graphs
through `ge-fuse` alone (no layout pass), on small shapes.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from random_graphs import RandomGraph, graphs

from gecomp.dialects.context import make_context
from gecomp.core.passes import Instrumentation, instrumented, parse_pass_pipeline, run_pipeline
from gecomp.dialects import ge
from gecomp.dialects.fused import GroupOp
from gecomp.lowering.graph_to_fused.fusion_graph import make_part
from gecomp.lowering.graph_to_fused.legality import Constraints, problem
from gecomp.lowering.graph_to_fused.traffic import estimate
from gecomp.simulator.compare import precision_floor, worst_mismatch
from gecomp.simulator.reference import run_reference

PROPERTY_SETTINGS = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

FUSION_OPS = (
    "ge.matmul",
    "ge.batch_matmul",
    "ge.conv2d",
    "ge.add",
    "ge.mul",
    "ge.bias_add",
    "ge.relu",
    "ge.gelu",
    "ge.silu",
    "ge.sigmoid",
    "ge.exp",
    "ge.where",
    "ge.dropout",
    "ge.softmax",
    "ge.layer_norm",
    "ge.rms_norm",
    "ge.reduce_sum",
    "ge.transpose",
    "ge.reshape",
    "ge.transdata",
    "ge.batch_norm",
)


def compile_module(module, pipeline: str) -> None:
    with instrumented(Instrumentation(verify_each=True)):
        run_pipeline(parse_pass_pipeline(pipeline), make_context(), module)


def check_fusion(g: RandomGraph, pipeline: str) -> None:
    module = g.module()
    expected = run_reference(module, list(g.inputs))
    floor = precision_floor(module)
    before = estimate(module)
    compile_module(module, pipeline)
    actual = run_reference(module, list(g.inputs))
    for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
        assert a.dtype == e.dtype and a.shape == e.shape, f"result{i}: {a.dtype}{a.shape} vs {e.dtype}{e.shape}"
        mismatch = worst_mismatch(f"result{i}", e, a, floor)
        assert mismatch is None or mismatch.ratio <= 1.0, f"{pipeline}: {mismatch}\n{module}"
    for op in module.walk():
        if isinstance(op, GroupOp):
            kernel = [o for o in op.body_ops() if not isinstance(o, ge.ConstOp)]
            assert problem(make_part(kernel), Constraints()) is None, str(op)
    if pipeline.startswith("ge-fuse"):
        after = estimate(module)
        assert after.kernels <= before.kernels
        assert after.total_bytes <= before.total_bytes
    once = str(module)
    compile_module(module, "ge-fuse")
    assert str(module) == once, "a second ge-fuse changed the module"


@settings(PROPERTY_SETTINGS, max_examples=200)
@given(graphs())
def test_graph_opt_then_fuse_keeps_the_numbers(g: RandomGraph):
    check_fusion(g, "ge-graph-opt,ge-fuse")


@settings(PROPERTY_SETTINGS, max_examples=120)
@given(graphs(ops=FUSION_OPS, element_types=("f16", "f32")))
def test_fusion_shaped_graphs_keep_the_numbers(g: RandomGraph):
    check_fusion(g, "ge-graph-opt,ge-fuse")


@settings(PROPERTY_SETTINGS, max_examples=60)
@given(graphs(ops=FUSION_OPS, element_types=("f16", "f32")))
def test_fuse_alone_keeps_the_numbers_and_never_adds_work(g: RandomGraph):
    check_fusion(g, "ge-fuse")
