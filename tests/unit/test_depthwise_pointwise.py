"""`fused-depthwise-pointwise`: a depthwise convolution and the 1x1 convolution
that alone reads it as one kernel (`fused.depthwise_pointwise`), the depthwise
output computed on the vector unit as the 1x1 product's A operand.

Random pairs (channels not multiples of 8 or 16, pixels, window, stride 1 and
2, activations, images, residual) with the fused form pinned are compiled to
the simulator (race-checked), whose output must match the reference
interpreter on the module before the pass; the op's own semantics equal the
two convolutions'; unpinned, the estimates choose; the pin is honoured and
consumed; the pass and the lowering share one predicate (`kernel_problem`)."""

from __future__ import annotations

import numpy as np
import pytest

from vector_testing import compile_and_compare, tensor

from gecomp.core.parsing import parse_module
from gecomp.core.passes import parse_pass_pipeline, run_pipeline
from gecomp.dialects import fused
from gecomp.dialects.context import make_context
from gecomp.lowering.fused_to_npu.fuse_separable import BLOCK, EXPAND, FUSED, SEPARATE, DepthwisePointwisePass
from gecomp.lowering.fused_to_npu.kernel_exists import kernel_problem
from gecomp.simulator.hardware import load_preset

ACTS = ["relu6", "relu", "none", "silu"]


def _module(n, c, o, h, w, k, stride, act="relu6", pw_act="none", residual=False, form=None, bias=True, expand=0,
            ex_act="relu6") -> str:
    pad = k // 2
    oh, ow = (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1
    x = tensor([n, c, h, w], "f32", "NC1HWC0")
    mid = tensor([n, c, oh, ow], "f32", "NC1HWC0")
    y = tensor([n, o, oh, ow], "f32", "NC1HWC0")
    dw, pw = tensor([c, 1, k, k], "f32"), tensor([o, c, 1, 1], "f32", "FRACTAL_Z")
    pin = f', npu.form = "{form}"' if form is not None else ""
    args = [f"%x: {x}", f"%b: tensor<{c}xf32>", f"%pb: tensor<{o}xf32>"] + ([f"%r: {y}"] if residual else [])
    head = ""
    if expand:  # an expand 1x1 convolution of `expand` channels writes the depthwise input
        xin, ew = tensor([n, expand, h, w], "f32", "NC1HWC0"), tensor([c, expand, 1, 1], "f32", "FRACTAL_Z")
        args[0] = f"%x0: {xin}"
        args.append(f"%eb: tensor<{c}xf32>")
        head = f"""  %e = ge.const #ge.random<normal, seed = 5, mean = 0.0, std = 0.3> : {ew}
  %x = fused.conv2d_bias_act %x0, %e bias %eb {{act = "{ex_act}"}} : ({xin}, {ew}, tensor<{c}xf32>) -> {x}
"""
    dw_bias = f" bias %b" if bias else ""
    dw_types = f"({x}, {dw}, tensor<{c}xf32>)" if bias else f"({x}, {dw})"
    res, res_type = (" residual %r", f", {y}") if residual else ("", "")
    return f"""func.func @main({", ".join(args)}) -> {y} {{
{head}  %w = ge.const #ge.random<normal, seed = 3, mean = 0.0, std = 0.3> : {dw}
  %p = ge.const #ge.random<normal, seed = 4, mean = 0.0, std = 0.3> : {pw}
  %h = fused.conv2d_bias_act %x, %w{dw_bias} {{strides = [{stride}, {stride}], pads = [{pad}, {pad}, {pad}, {pad}], groups = {c}, act = "{act}"{pin}}} : {dw_types} -> {mid}
  %y = fused.conv2d_bias_act %h, %p bias %pb{res} {{act = "{pw_act}"}} : ({mid}, {pw}, tensor<{o}xf32>{res_type}) -> {y}
  func.return %y : {y}
}}"""


def _after_pass(text: str, hw: str = "ascend910"):
    module = parse_module(make_context(), text, "test.mlir")
    run_pipeline(parse_pass_pipeline(f"fused-depthwise-pointwise{{hw={hw}}}"), make_context(), module)
    return module


def _count(module, cls) -> int:
    return sum(isinstance(op, cls) for op in module.walk())


def _random_case(rng):
    return dict(
        n=int(rng.integers(1, 3)),
        c=int(rng.integers(3, 60)),
        o=int(rng.integers(3, 40)),
        h=int(rng.integers(2, 12)),
        w=int(rng.integers(2, 12)),
        k=int(rng.choice([3, 5])),
        stride=int(rng.integers(1, 3)),
        act=str(rng.choice(ACTS)),
        pw_act=str(rng.choice(["none", "relu"])),
        residual=bool(rng.integers(2)),
        bias=bool(rng.integers(4)),
    )


@pytest.mark.parametrize("seed", range(8))
def test_the_fused_kernel_matches_the_reference(seed):
    case = _random_case(np.random.default_rng(seed))
    if case["residual"] and case["stride"] != 1:
        case["residual"] = False
    text = _module(**case, form=FUSED)
    assert _count(_after_pass(text), fused.DepthwisePointwiseOp) == 1, case
    mismatch, _, _ = compile_and_compare(text, pipeline="ge-lower-to-npu{hw=ascend910}", hw="ascend910", seed=seed)
    assert mismatch is None, (case, mismatch)


def _expand_case(rng):
    case = _random_case(rng)
    case.update(expand=int(rng.integers(3, 40)), ex_act=str(rng.choice(ACTS)), h=int(rng.integers(2, 9)),
                w=int(rng.integers(2, 9)))
    return case


@pytest.mark.parametrize("seed", range(8))
def test_the_expand_kernel_matches_the_reference(seed):
    case = _expand_case(np.random.default_rng(100 + seed))
    if case["residual"] and case["stride"] != 1:
        case["residual"] = False
    text = _module(**case, form=EXPAND)
    assert _count(_after_pass(text), fused.PointwiseDepthwiseOp) == 1, case
    mismatch, _, _ = compile_and_compare(text, pipeline="ge-lower-to-npu{hw=ascend910}", hw="ascend910", seed=seed)
    assert mismatch is None, (case, mismatch)


def test_the_joined_ops_compute_the_two_convolutions():
    """The ops' own reference semantics: the module after the pass computes what it did before."""
    from gecomp.simulator.run import execute

    rng = np.random.default_rng(0)
    for form, cls in ((EXPAND, fused.PointwiseDepthwiseOp), (FUSED, fused.DepthwisePointwiseOp)):
        text = _module(2, 20, 12, 6, 5, 3, 2, act="silu", pw_act="relu", expand=11, form=form)
        after = _after_pass(text)
        assert _count(after, cls) == 1
        before = parse_module(make_context(), text, "t.mlir")
        shapes = [[2, 11, 6, 5], [20], [12], [20]]
        inputs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        want, got = execute(before, inputs).results, execute(after, inputs).results
        np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=1e-6)


def _verdict(text: str, hw: str = "ascend910") -> str:
    from gecomp.simulator.npu.costs import next_kernel_cycles

    preset = load_preset(hw)
    module = parse_module(make_context(), text, "t.mlir")
    (op,) = [o for o in module.walk() if isinstance(o, fused.Conv2DBiasActOp) and o.attr_value("groups") > 1]
    forms = DepthwisePointwisePass(hw=hw).estimates(op, preset, next_kernel_cycles(preset, True))
    return min(forms, key=forms.get)


def test_the_estimates_choose_the_form_that_runs_faster():
    """Unpinned, the form is the one estimated fastest, and it is the one that
    simulates faster: a MobileNetV2 block of 576 channels at 4x4 joins its expand
    convolution (its 36 items of whole planes spread over the cores as the
    depthwise kernel's planes), one of 144 channels at 16x16 joins both 1x1
    convolutions (a band of rows a core: joined to its expand convolution alone,
    an item per 16 channels of a 16x16 plane is too few items for the cube)."""
    for shape, expected in (((1, 576, 96, 4, 4, 3, 1), EXPAND), ((1, 144, 24, 16, 16, 3, 1), BLOCK)):
        text = _module(*shape, expand=96 if expected == EXPAND else 24)
        verdict = _verdict(text)
        assert verdict == expected, (shape, verdict)
        cycles = {}
        for form in {EXPAND, SEPARATE, expected}:
            mismatch, report, _ = compile_and_compare(_module(*shape, expand=96 if expected == EXPAND else 24, form=form),
                                                      pipeline="ge-lower-to-npu{hw=ascend910}", hw="ascend910")
            assert mismatch is None, (shape, form, mismatch)
            cycles[form] = report.total_cycles
        assert min(cycles, key=cycles.get) == expected, (shape, cycles)


def test_a_pin_is_honoured_and_consumed():
    """`npu.form = "separate kernels"` keeps the convolutions where the estimates
    join them; the pass removes the pin, and the lowering compiles the module."""
    text = _module(1, 576, 96, 4, 4, 3, 1, expand=96, form=SEPARATE)
    after = _after_pass(text)
    assert _count(after, fused.PointwiseDepthwiseOp) + _count(after, fused.DepthwisePointwiseOp) == 0
    assert not any("npu.form" in op.attributes for op in after.walk())
    mismatch, _, _ = compile_and_compare(text, pipeline="ge-lower-to-npu{hw=ascend910}", hw="ascend910")
    assert mismatch is None


def test_a_pooled_depthwise_convolution_is_left_to_the_means():
    """A squeeze-and-excitation block pools its depthwise output: fused-depthwise-mean
    folds the pool into the depthwise kernel, this pass leaves the convolution alone."""
    x, mid = tensor([1, 16, 6, 6], "f32", "NC1HWC0"), tensor([1, 64, 6, 6], "f32", "NC1HWC0")
    ew, dw = tensor([64, 16, 1, 1], "f32", "FRACTAL_Z"), tensor([64, 1, 3, 3], "f32")
    text = f"""func.func @main(%x: {x}) -> ({mid}, tensor<1x64x1x1xf32>) {{
  %e = ge.const #ge.random<normal, seed = 5, mean = 0.0, std = 0.3> : {ew}
  %w = ge.const #ge.random<normal, seed = 3, mean = 0.0, std = 0.3> : {dw}
  %m = fused.conv2d_bias_act %x, %e {{act = "silu"}} : ({x}, {ew}) -> {mid}
  %h = fused.conv2d_bias_act %m, %w {{pads = [1, 1, 1, 1], groups = 64, act = "silu"}} : ({mid}, {dw}) -> {mid}
  %p = ge.global_avg_pool %h : ({mid}) -> tensor<1x64x1x1xf32>
  func.return %h, %p : {mid}, tensor<1x64x1x1xf32>
}}"""
    after = _after_pass(text)
    assert _count(after, fused.PointwiseDepthwiseOp) == 0 and _count(after, fused.Conv2DBiasActOp) == 2


def test_one_predicate_a_plane_too_large_for_ub_stays_separate():
    """The joined form's legality is its template's (`kernel_problem`): on the
    `tiny` preset no tiling of a 24x24 plane's items fits (the depthwise buffers
    reserved in UB), and the pass keeps the convolutions."""
    text = _module(1, 16, 8, 24, 24, 3, 1, expand=8)
    module = parse_module(make_context(), text, "t.mlir")
    from gecomp.lowering.fused_to_npu.fuse_separable import expand_writer, joined_expand

    (op,) = [o for o in module.walk() if isinstance(o, fused.Conv2DBiasActOp) and o.attr_value("groups") > 1]
    problem = kernel_problem(joined_expand(op, expand_writer(op)), load_preset("tiny"))
    assert problem is not None and "fits" in problem, problem
    assert _count(_after_pass(text, hw="tiny"), fused.PointwiseDepthwiseOp) == 0
