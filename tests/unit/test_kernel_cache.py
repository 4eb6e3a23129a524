"""The kernel cache of `ge-to-npu` (lowering/fused_to_npu/kernel_cache.py) and the
compile-time memos (core/memo.py): repeated identical kernels are built once, and
the compiled module is the same text, with the same simulated cycles and numbers,
whether the caches are on or off (`GECOMP_KERNEL_CACHE=0`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from cube_lowering_testing import parse

from gecomp.dialects.context import make_context
from gecomp.core.memo import ENV
from gecomp.core.passes import Instrumentation, instrumented, parse_pass_pipeline, run_pipeline
from gecomp.simulator.npu import simulate
from gecomp.simulator.reference import run_reference
from gecomp.core.signature import input_specs, main_function, random_inputs

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def layers(count: int) -> str:
    """`count` identical layers (matmul + bias + relu, then residual + layer norm)
    of distinct weights."""
    lines = []
    x = "%x"
    for i in range(count):
        lines += [
            f"%w{i} = ge.const #ge.random<normal, seed = {4 * i + 1}, mean = 0.0, std = 0.05> : tensor<128x128xf16>",
            f"%b{i} = ge.const #ge.random<normal, seed = {4 * i + 2}, mean = 0.0, std = 0.05> : tensor<128xf16>",
            f"%g{i} = ge.const #ge.random<normal, seed = {4 * i + 3}, mean = 1.0, std = 0.05> : tensor<128xf16>",
            f"%e{i} = ge.const #ge.random<normal, seed = {4 * i + 4}, mean = 0.0, std = 0.05> : tensor<128xf16>",
            f"%m{i} = ge.matmul {x}, %w{i} : (tensor<64x128xf16>, tensor<128x128xf16>) -> tensor<64x128xf16>",
            f"%h{i} = ge.bias_add %m{i}, %b{i} : (tensor<64x128xf16>, tensor<128xf16>) -> tensor<64x128xf16>",
            f"%r{i} = ge.relu %h{i} : (tensor<64x128xf16>) -> tensor<64x128xf16>",
            f"%s{i} = ge.add %r{i}, {x} : (tensor<64x128xf16>, tensor<64x128xf16>) -> tensor<64x128xf16>",
            f"%n{i} = ge.layer_norm %s{i}, %g{i}, %e{i} {{axis = -1 : i64, epsilon = 1.0e-05 : f32}} : "
            "(tensor<64x128xf16>, tensor<128xf16>, tensor<128xf16>) -> tensor<64x128xf16>",
        ]
        x = f"%n{i}"
    body = "\n  ".join(lines)
    return f"""func.func @main(%x: tensor<64x128xf16> {{ge.name = "x"}}) -> (tensor<64x128xf16> {{ge.name = "y"}}) {{
  {body}
  func.return {x} : tensor<64x128xf16>
}}"""


SCALES = """func.func @main(%x: tensor<32x256xf16> {ge.name = "x"}, %z: tensor<32x256xf16> {ge.name = "z"}) -> (tensor<32x256xf16> {ge.name = "y"}) {
  %two = ge.const dense<2.0> : tensor<32x256xf16>
  %three = ge.const dense<3.0> : tensor<32x256xf16>
  %a = ge.mul %x, %two : (tensor<32x256xf16>, tensor<32x256xf16>) -> tensor<32x256xf16>
  %b = ge.mul %x, %three : (tensor<32x256xf16>, tensor<32x256xf16>) -> tensor<32x256xf16>
  %c = ge.mul %z, %two : (tensor<32x256xf16>, tensor<32x256xf16>) -> tensor<32x256xf16>
  %ab = ge.sub %a, %b : (tensor<32x256xf16>, tensor<32x256xf16>) -> tensor<32x256xf16>
  %y = ge.add %ab, %c : (tensor<32x256xf16>, tensor<32x256xf16>) -> tensor<32x256xf16>
  func.return %y : tensor<32x256xf16>
}"""


def compiled(text: str, pipeline: str, cache: bool, monkeypatch) -> tuple[str, dict[str, dict[str, int]], object]:
    """(printed module, every pass's statistics, module) of `text` compiled with the
    caches on or off."""
    monkeypatch.setenv(ENV, "1" if cache else "0")
    module = parse(text)
    instrumentation = Instrumentation(verify_each=False)
    with instrumented(instrumentation):
        run_pipeline(parse_pass_pipeline(pipeline), make_context(), module)
    return str(module), instrumentation.statistics, module


def test_repeated_layers_lower_each_distinct_kernel_once(monkeypatch):
    """Layers 2..4 reuse layer 1's kernels: as many kernels are built for four
    layers as for one (launches not merged, so no kernel follows a barrier)."""
    pipeline = "ge-compile{merge=false}"
    one = compiled(layers(1), pipeline, True, monkeypatch)[1]["ge-to-npu"]
    four = compiled(layers(4), pipeline, True, monkeypatch)[1]["ge-to-npu"]
    assert one["kernels reused"] == 0
    assert four["kernels"] == 4 * one["kernels"]
    assert four["kernels reused"] == 3 * one["kernels"]
    assert compiled(layers(4), pipeline, False, monkeypatch)[1]["ge-to-npu"]["kernels reused"] == 0


def test_a_splat_constant_is_part_of_the_key(monkeypatch):
    """x * 2 and x * 3 fold their constants into different kernels; z * 2 reuses
    x * 2's; the numbers are the reference's."""
    _, statistics, module = compiled(SCALES, "ge-compile{fuse=false}", True, monkeypatch)
    assert statistics["ge-to-npu"]["kernels reused"] == 1
    inputs = random_inputs(input_specs(main_function(parse(SCALES))), 0)
    want = run_reference(parse(SCALES), inputs)[0]
    got = simulate(module, inputs, hw="ascend910").outputs[0]
    np.testing.assert_allclose(np.asarray(got, np.float32), np.asarray(want, np.float32), rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize(
    "source, pipeline",
    [
        ("layers", "ge-compile"),
        ("mlp.mlir", "ge-compile"),
        ("resnet_block.mlir", "ge-compile"),
        ("scales", "ge-compile{fuse=false}"),
    ],
)
def test_the_caches_change_nothing(monkeypatch, source, pipeline):
    """The same module text, simulated cycles and outputs with the caches on and off."""
    text = {"layers": layers(3), "scales": SCALES}.get(source) or (EXAMPLES / source).read_text()
    on_text, on_statistics, on = compiled(text, pipeline, True, monkeypatch)
    off_text, off_statistics, off = compiled(text, pipeline, False, monkeypatch)
    assert on_text == off_text
    # Every pass counts the same (kernels made copies count as if transformed).
    for statistics in (on_statistics, off_statistics):
        statistics["ge-to-npu"].pop("kernels reused")
    assert on_statistics == off_statistics
    inputs = random_inputs(input_specs(main_function(parse(text))), 0)
    a, b = simulate(on, inputs, hw="ascend910"), simulate(off, inputs, hw="ascend910")
    assert a.report.total_cycles == b.report.total_cycles
    for x, y in zip(a.outputs, b.outputs, strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_no_tiling_search_runs_twice(monkeypatch):
    """With the memos on, every cube tiling search of a convolutional block (the
    implicit GEMM's `ImageOperand`, the 1x1 GEMM's views, each estimated by
    conv_select and searched again when the kernel is built) runs once per key;
    with them off, searches repeat."""
    from gecomp.lowering import tiling

    searched = []
    fitting = tiling._fitting  # what every search (all tilings, or the best) starts with

    def counted(hw, shape, a, bs, epilogue, first_b_prefetched):
        searched.append(tiling._search_key(hw, shape, a, bs, epilogue, first_b_prefetched))
        return fitting(hw, shape, a, bs, epilogue, first_b_prefetched)

    monkeypatch.setattr(tiling, "_fitting", counted)
    text = (EXAMPLES / "resnet_block.mlir").read_text()
    tiling._SEARCHES.clear()
    tiling._BESTS.clear()
    compiled(text, "ge-compile", True, monkeypatch)
    keys = list(searched)
    assert keys and None not in keys, "every operand of a convolution's product has a cost_key"
    assert len(set(keys)) == len(keys)
    searched.clear()
    compiled(text, "ge-compile", False, monkeypatch)
    assert len(searched) > len(keys)


def test_in_place_proof_is_traced_once_per_kind_of_kernel(monkeypatch):
    """npu-plan-gm proves in-place reuse by tracing the kernel (lowering/plan/in_place.py);
    the launches of identical layers ask it of copies of one kernel, traced once with
    the memos on, every time with them off; the module is the same text either way."""
    from gecomp.lowering.plan import in_place

    traced = []
    trace = in_place._traced_can_share
    monkeypatch.setattr(in_place, "_traced_can_share", lambda *args: traced.append(args) or trace(*args))
    in_place._SHARES.clear()
    on_text = compiled(layers(4), "ge-compile", True, monkeypatch)[0]
    on = len(traced)
    traced.clear()
    off_text = compiled(layers(4), "ge-compile", False, monkeypatch)[0]
    assert on_text == off_text
    assert 0 < on < len(traced)
