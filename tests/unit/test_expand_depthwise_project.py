"""`fused.expand_depthwise_project`: an inverted-residual block's three
convolutions (expand 1x1, depthwise, project 1x1, residual) as one kernel, a
band of output rows per item (`templates/expand_depthwise_project.py`).

Random blocks (channels not multiples of 8, maps, windows 3 and 5, strides 1
and 2, activations, biases absent or splat, images, residual) with the form
pinned are compiled to the simulator (race-checked), whose output must match
the reference interpreter on the module before the pass; the op's semantics
equal the three convolutions'; unpinned, the estimate joins a MobileNetV2-like
16x16 block and the joined kernel simulates faster than the separate ones;
the pass and the lowering share one predicate (`plan`, through
`kernel_problem`); pins on a lone depthwise convolution are checked."""

from __future__ import annotations

import numpy as np
import pytest

from test_depthwise_pointwise import _after_pass, _count
from vector_testing import compile_and_compare, tensor

from gecomp.core.diagnostics import CompileError
from gecomp.core.parsing import parse_module
from gecomp.dialects import fused
from gecomp.dialects.context import make_context
from gecomp.lowering.fused_to_npu.fuse_separable import BLOCK, SEPARATE, expand_writer, joined_block, pointwise_reader
from gecomp.lowering.fused_to_npu.kernel_exists import kernel_problem
from gecomp.simulator.hardware import load_preset

PIPELINE = "ge-lower-to-npu{hw=ascend910}"


def _block(n, cin, c, o, h, w, k, stride, act="relu6", dw_act="relu6", pw_act="none", residual=False, biases=(1, 1, 1),
           form=None, splat=False) -> str:
    """A block: expand cin -> c (1x1), depthwise k x k / stride, project c -> o (1x1).
    `biases`: per convolution, 0 none, 1 one per channel; `splat`: the expand's a splat."""
    pad = k // 2
    oh, ow = (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1
    x, mid = tensor([n, cin, h, w], "f32", "NC1HWC0"), tensor([n, c, h, w], "f32", "NC1HWC0")
    dmid, y = tensor([n, c, oh, ow], "f32", "NC1HWC0"), tensor([n, o, oh, ow], "f32", "NC1HWC0")
    ew, dw, pw = tensor([c, cin, 1, 1], "f32", "FRACTAL_Z"), tensor([c, 1, k, k], "f32"), tensor([o, c, 1, 1], "f32", "FRACTAL_Z")
    args = [f"%x: {x}"] + ([f"%r: {y}"] if residual else [])
    consts = []
    for name, size, present in (("eb", c, biases[0]), ("db", c, biases[1]), ("pb", o, biases[2])):
        if present and not (splat and name == "eb"):
            args.append(f"%{name}: tensor<{size}xf32>")
    if splat:
        consts.append(f"  %eb = ge.const dense<0.25> : tensor<{c}xf32>")
    pin = f', npu.form = "{form}"' if form is not None else ""

    def conv(result, src, weight, wtype, bias, size, in_type, out_type, attrs, extra="", extra_type=""):
        b, bt = (f" bias %{bias}", f", tensor<{size}xf32>") if bias else ("", "")
        return (f"  %{result} = fused.conv2d_bias_act %{src}, %{weight}{b}{extra} {{{attrs}}} : "
                f"({in_type}, {wtype}{bt}{extra_type}) -> {out_type}")

    eb = "eb" if biases[0] or splat else None
    res, res_type = (" residual %r", f", {y}") if residual else ("", "")
    body = "\n".join([
        *consts,
        f"  %e = ge.const #ge.random<normal, seed = 5, mean = 0.0, std = 0.3> : {ew}",
        f"  %w = ge.const #ge.random<normal, seed = 3, mean = 0.0, std = 0.3> : {dw}",
        f"  %p = ge.const #ge.random<normal, seed = 4, mean = 0.0, std = 0.3> : {pw}",
        conv("m", "x", "e", ew, eb, c, x, mid, f'act = "{act}"'),
        conv("h", "m", "w", dw, "db" if biases[1] else None, c, mid, dmid,
             f'strides = [{stride}, {stride}], pads = [{pad}, {pad}, {pad}, {pad}], groups = {c}, act = "{dw_act}"{pin}'),
        conv("y", "h", "p", pw, "pb" if biases[2] else None, o, dmid, y, f'act = "{pw_act}"', res, res_type),
    ])
    return f"""func.func @main({", ".join(args)}) -> {y} {{
{body}
  func.return %y : {y}
}}"""


def _random_block(rng) -> dict:
    stride = int(rng.integers(1, 3))
    return dict(
        n=int(rng.integers(1, 3)), cin=int(rng.integers(3, 40)), c=int(rng.integers(3, 70)), o=int(rng.integers(3, 40)),
        h=int(rng.integers(3, 12)), w=int(rng.integers(2, 12)), k=int(rng.choice([3, 5])), stride=stride,
        act=str(rng.choice(["relu6", "relu", "none", "silu"])), dw_act=str(rng.choice(["relu6", "none", "silu", "sigmoid"])),
        pw_act=str(rng.choice(["none", "relu"])), residual=stride == 1 and bool(rng.integers(2)),
        biases=tuple(int(v) for v in rng.integers(0, 2, 3)), splat=bool(rng.integers(4) == 0),
    )


@pytest.mark.parametrize("seed", range(10))
def test_the_block_kernel_matches_the_reference(seed):
    case = _random_block(np.random.default_rng(300 + seed))
    if case["k"] == 5 and case["h"] < 5:
        case["h"] = 5
    text = _block(**case, form=BLOCK)
    assert _count(_after_pass(text), fused.ExpandDepthwiseProjectOp) == 1, case
    mismatch, _, _ = compile_and_compare(text, pipeline=PIPELINE, hw="ascend910", seed=seed)
    assert mismatch is None, (case, mismatch)


@pytest.mark.parametrize("hw, case", [
    ("ascend910", dict(n=8, cin=8, c=24, o=8, h=6, w=6, k=3, stride=1, residual=True)),
    ("ascend910", dict(n=1, cin=5, c=13, o=7, h=3, w=9, k=5, stride=1)),
    ("ascend910", dict(n=2, cin=16, c=40, o=24, h=9, w=7, k=3, stride=2)),
    ("tiny", dict(n=1, cin=8, c=24, o=16, h=12, w=8, k=3, stride=1, residual=True)),
    ("tiny", dict(n=2, cin=6, c=20, o=9, h=10, w=8, k=5, stride=2)),
])
def test_edges_bands_and_halos(hw, case):
    """Bands at the top and bottom of the image (the halo's rows outside it zero,
    the expanded rows clamped inside), a window of 5 rows over 3-row images, and
    on the 2 cores of `tiny` many bands a core, one after another in the same
    buffers (a band's rows outside the image zeroed again after the band before
    wrote them)."""
    text = _block(**case, form=BLOCK)
    mismatch, _, _ = compile_and_compare(text, pipeline=f"ge-lower-to-npu{{hw={hw}}}", hw=hw)
    assert mismatch is None, (case, mismatch)


def test_the_op_computes_the_three_convolutions():
    """The op's own reference semantics: the module after the pass computes what it did before."""
    from gecomp.simulator.run import execute

    rng = np.random.default_rng(0)
    text = _block(2, 11, 20, 12, 6, 5, 3, 2, act="silu", pw_act="relu", form=BLOCK)
    after = _after_pass(text)
    assert _count(after, fused.ExpandDepthwiseProjectOp) == 1 and _count(after, fused.Conv2DBiasActOp) == 0
    before = parse_module(make_context(), text, "t.mlir")
    shapes = [[2, 11, 6, 5], [20], [20], [12]]
    inputs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    want, got = execute(before, inputs).results, execute(after, inputs).results
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=1e-6)


def test_the_estimate_joins_a_block_that_runs_faster_joined():
    """A MobileNetV2-like block (24 -> 144 -> 24 channels at 16x16, residual): the
    estimate joins it whole, and joined it simulates faster than as separate
    kernels and than with only its expand convolution joined."""
    case = dict(n=1, cin=24, c=144, o=24, h=16, w=16, k=3, stride=1, residual=True)
    after = _after_pass(_block(**case))
    assert _count(after, fused.ExpandDepthwiseProjectOp) == 1
    cycles = {}
    for form in (BLOCK, SEPARATE, "with its expand convolution"):
        mismatch, report, _ = compile_and_compare(_block(**case, form=form), pipeline=PIPELINE, hw="ascend910")
        assert mismatch is None, (form, mismatch)
        cycles[form] = report.total_cycles
    assert min(cycles, key=cycles.get) == BLOCK, cycles


def test_one_predicate_weights_too_large_for_l0b():
    """The form's legality is its template's `plan` (through `kernel_problem`, as
    the lowering builds it): 96 -> 576 channels need 442 KB of 1x1 weights in
    L0B, no band fits, and the pass does not join the block whole."""
    text = _block(1, 96, 576, 96, 4, 4, 3, 1)
    module = parse_module(make_context(), text, "t.mlir")
    (op,) = [o for o in module.walk() if isinstance(o, fused.Conv2DBiasActOp) and o.attr_value("groups") > 1]
    problem = kernel_problem(joined_block(op, expand_writer(op), pointwise_reader(op)), load_preset("ascend910"))
    assert problem is not None and "no band" in problem and "l0b" in problem, problem
    assert _count(_after_pass(text), fused.ExpandDepthwiseProjectOp) == 0


def test_an_expand_activation_not_zero_at_zero_is_not_joined():
    """The expand activation runs over the slab's zero padding: sigmoid (0.5 at 0) is refused."""
    text = _block(1, 8, 16, 8, 6, 6, 3, 1, act="sigmoid")
    module = parse_module(make_context(), text, "t.mlir")
    (op,) = [o for o in module.walk() if isinstance(o, fused.Conv2DBiasActOp) and o.attr_value("groups") > 1]
    problem = kernel_problem(joined_block(op, expand_writer(op), pointwise_reader(op)), load_preset("ascend910"))
    assert problem is not None and "zero at zero" in problem, problem


def test_a_pin_on_a_lone_depthwise_convolution():
    """A depthwise convolution with no 1x1 convolution beside it: `separate kernels`
    is consumed, `one kernel` (fused-split-k-conv's) is left to that pass, any
    other pin is a one-line error at the op's location."""
    x = tensor([1, 16, 8, 8], "f32", "NC1HWC0")
    dw = tensor([16, 1, 3, 3], "f32")

    def text(pin):
        return f"""func.func @main(%x: {x}) -> {x} {{
  %w = ge.const #ge.random<normal, seed = 3, mean = 0.0, std = 0.3> : {dw}
  %h = fused.conv2d_bias_act %x, %w {{pads = [1, 1, 1, 1], groups = 16, act = "relu6", npu.form = "{pin}"}} : ({x}, {dw}) -> {x}
  func.return %h : {x}
}}"""

    assert not any("npu.form" in op.attributes for op in _after_pass(text(SEPARATE)).walk())
    assert any("npu.form" in op.attributes for op in _after_pass(text("one kernel")).walk())
    with pytest.raises(CompileError) as e:
        _after_pass(text("bogus"))
    message = str(e.value)
    assert "test.mlir:3:3" in message and "separate kernels" in message and "\n" not in message.strip(), message


def test_tune_forms_knows_the_depthwise_forms():
    """fused-tune-forms tries the forms fused-depthwise-pointwise chooses among: a
    block's depthwise convolution is a candidate, its alternatives the other forms."""
    from gecomp.lowering.fused_to_npu.tune_forms import TuneFormsPass

    module = parse_module(make_context(), _block(1, 8, 24, 8, 6, 6, 3, 1), "t.mlir")
    ops = list(next(o for o in module.walk() if o.name == "func.func").body.block.ops)
    choices = TuneFormsPass(hw="ascend910", top=4).candidates(ops, load_preset("ascend910"), module)
    (position, trials), = choices
    assert isinstance(ops[position], fused.Conv2DBiasActOp) and ops[position].attr_value("groups") == 24
    forms = {SEPARATE, BLOCK, "with its expand convolution", "as the pointwise product's operand"}
    assert len(trials) >= 2 and set(trials) <= forms, trials


@pytest.mark.parametrize("segments, case", [
    (2, dict(n=1, cin=8, c=24, o=9, h=6, w=8, k=3, stride=1, residual=True)),
    (4, dict(n=2, cin=6, c=20, o=8, h=7, w=8, k=5, stride=1)),
    (3, dict(n=1, cin=8, c=16, o=8, h=8, w=11, k=3, stride=2)),
])
def test_column_segments_many_a_core(monkeypatch, segments, case):
    """Bands cut into column segments (each a static branch: its columns inside
    the image known), many a core on the 2 cores of `tiny`, so a core's segments
    take turns in its buffers (each zeroes its own padding columns again): the
    estimate's choice narrowed to `segments` segments of one row."""
    from gecomp.lowering.fused_to_npu.templates import expand_depthwise_project as template

    chosen = []
    original = template.BlockKernel.bands

    def narrowed(self, hw):
        found = [f for f in original(self, hw) if f[1].segments == segments and f[1].rows == 1]
        chosen.extend(found)
        return found

    monkeypatch.setattr(template.BlockKernel, "bands", narrowed)
    mismatch, _, _ = compile_and_compare(_block(**case, form=BLOCK), pipeline="ge-lower-to-npu{hw=tiny}", hw="tiny")
    assert mismatch is None, (case, mismatch)
    assert chosen and all(items > cores for _, _, items, cores in chosen), chosen
