"""Random graphs compiled through every level (`ge-compile`, with and without
fusion) compute on the NPU simulator what the reference interpreter computes.

This is the end-to-end property of the whole compiler: graph optimisation,
fusion, kernel templates, double buffering, synchronisation and memory planning
all have to be right at once. The `tiny` preset makes small tensors exercise
tiling, tails and multi-core splits.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from random_graphs import RandomGraph, graphs

from gecomp.dialects.context import make_context
from gecomp.core.passes import Instrumentation, instrumented, parse_pass_pipeline, run_pipeline
from gecomp.simulator.compare import precision_floor, worst_mismatch
from gecomp.simulator.reference import run_reference
from gecomp.simulator.run import execute

SETTINGS = settings(
    deadline=None,
    max_examples=60,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

PIPELINES = {
    "fused": "ge-compile{hw=tiny}",
    "eager": "ge-compile{fuse=false reuse=false streams=1 hw=tiny}",
}


def compile_and_compare(g: RandomGraph, pipeline: str) -> None:
    module = g.module()
    expected = run_reference(module, list(g.inputs))
    floor = precision_floor(module)
    with instrumented(Instrumentation(verify_each=True)):
        run_pipeline(parse_pass_pipeline(pipeline), make_context(), module)
    actual = execute(module, list(g.inputs), hw="tiny").results
    for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
        mismatch = worst_mismatch(f"result{i}", e, a, floor)
        assert mismatch is None or mismatch.ratio <= 1.0, f"{pipeline}: {mismatch}"


@pytest.mark.parametrize("mode", sorted(PIPELINES))
@SETTINGS
@given(graphs(max_ops=5, element_types=("f16", "f32"), max_elements=256))
def test_compiled_graphs_match_the_reference(mode: str, g: RandomGraph):
    compile_and_compare(g, PIPELINES[mode])


# Cases the property test once found (kept so they are run on every change).
FOUND = [
    # an f32 convolution: the cube kernel took f16 only
    (
        """builtin.module {
  func.func @main(%0: tensor<1x1x1x1xf32>) -> tensor<1x1x1x1xf32> {
    %1 = ge.const dense<0.125730217> : tensor<1x1x1x1xf32>
    %2 = ge.conv2d %0, %1 : (tensor<1x1x1x1xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x1xf32>
    func.return %2 : tensor<1x1x1x1xf32>
  }
}""",
        [np.array([[[[1.117622]]]], dtype=np.float32)],
    ),
    # layer_norm of a splat constant inside a group: the group took the constant for a tile
    (
        """builtin.module {
  func.func @main(%0: tensor<2xf16>, %1: tensor<2xf16>) -> tensor<2xf16> {
    %2 = ge.const dense<0.000000e+00> : tensor<2xf16>
    %3 = ge.layer_norm %2, %0, %1 {axis = 0} : (tensor<2xf16>, tensor<2xf16>, tensor<2xf16>) -> tensor<2xf16>
    %4 = ge.abs %3 : (tensor<2xf16>) -> tensor<2xf16>
    %5 = ge.abs %4 : (tensor<2xf16>) -> tensor<2xf16>
    func.return %5 : tensor<2xf16>
  }
}""",
        [np.array([1.117, -1.387], dtype=np.float16), np.array([-0.4265, -0.8037], dtype=np.float16)],
    ),
]


@pytest.mark.parametrize("mode", sorted(PIPELINES))
@pytest.mark.parametrize("index", range(len(FOUND)))
def test_graphs_found_earlier_match_the_reference(mode: str, index: int):
    text, inputs = FOUND[index]
    compile_and_compare(RandomGraph(text, tuple(inputs), frozenset()), PIPELINES[mode])
