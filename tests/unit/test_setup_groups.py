"""A vector group computed as another group's setup (`fused_to_npu/setup_groups.py`,
`templates/groups.py`): where a group reads another group's one result as one
vector for every row (a squeeze-and-excitation block's squeeze, read whole by
every channel of the excitation), the reader's kernel computes it once per core
in its prologue instead of a kernel (a phase) of its own.

Random squeeze-excitation pairs (channel counts that are no multiple of 8,
squeeze widths of 1 to 24, pixels) with the joined form pinned are rewritten
so and compiled to the simulator, whose output must match the reference
interpreter on the module before the pass; so must a setup whose value is a
scalar. The estimate and the rewrite share one predicate (the group template's
answer through `kernel_problem`), so a result the reader reads per row, or
weights that do not fit a core's UB, keep two kernels."""

from __future__ import annotations

import numpy as np
import pytest

from vector_testing import compile_and_compare

from gecomp.core.parsing import parse_module
from gecomp.dialects import fused
from gecomp.dialects.context import make_context
from gecomp.lowering.fused_to_npu.setup_groups import JOINED, SEPARATE, SetupGroupsPass, setup_source
from gecomp.lowering.fused_to_npu.split_k import next_kernel_cycles
from gecomp.lowering.fused_to_npu.templates.groups import SETUP
from gecomp.simulator.hardware import load_preset

PIPELINE = "ge-lower-to-npu{hw=ascend910}"


def _t(shape) -> str:
    return f"tensor<{'x'.join(map(str, shape))}xf32>"


def se_module(c: int, cs: int, h: int, w: int, form: str | None = JOINED) -> str:
    """EfficientNet's squeeze and excitation as fusion makes them: swish(W1 . mean)
    in one group, sigmoid(W2 . s) times the image in the next."""
    y, m, w1, w2, s4, s3 = _t([1, c, h, w]), _t([1, 1, c]), _t([cs, c]), _t([c, cs]), _t([1, cs, 1, 1]), _t([1, 1, cs])
    pin = f' {{npu.form = "{form}"}}' if form else ""
    return f"""func.func @main(%y: {y}, %mean: {m}) -> {y} {{
  %w1 = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.3> : {w1}
  %w2 = ge.const #ge.random<normal, seed = 2, mean = 0.0, std = 0.3> : {w2}
  %s = fused.group %mean, %w1 : ({m}, {w1}) -> {s4} {{
  ^bb0(%a: {m}, %q: {w1}):
    %p = ge.mul %a, %q : ({m}, {w1}) -> {_t([1, cs, c])}
    %r = ge.reduce_sum %p {{axes = [2]}} : ({_t([1, cs, c])}) -> {_t([1, cs, 1])}
    %r4 = ge.reshape %r : ({_t([1, cs, 1])}) -> {s4}
    %g = ge.sigmoid %r4 : ({s4}) -> {s4}
    %x = ge.mul %r4, %g : ({s4}, {s4}) -> {s4}
    fused.yield %x : {s4}
  }}
  %s3 = ge.reshape %s : ({s4}) -> {s3}
  %z = fused.group %s3, %w2, %y{pin} : ({s3}, {w2}, {y}) -> {y} {{
  ^bb0(%a: {s3}, %q: {w2}, %v: {y}):
    %p = ge.mul %a, %q : ({s3}, {w2}) -> {_t([1, c, cs])}
    %e = ge.reduce_sum %p {{axes = [2]}} : ({_t([1, c, cs])}) -> {_t([1, c, 1])}
    %g = ge.sigmoid %e : ({_t([1, c, 1])}) -> {_t([1, c, 1])}
    %g4 = ge.reshape %g : ({_t([1, c, 1])}) -> {_t([1, c, 1, 1])}
    %mm = ge.mul %g4, %v : ({_t([1, c, 1, 1])}, {y}) -> {y}
    fused.yield %mm : {y}
  }}
  func.return %z : {y}
}}"""


def _rewritten(text: str, hw: str = "ascend910"):
    module = parse_module(make_context(), text, "t.mlir")
    SetupGroupsPass(hw=hw).apply(make_context(), module)
    return [op for op in module.walk() if isinstance(op, fused.GroupOp)]


def _random_se(seed: int) -> dict:
    rng = np.random.default_rng(seed)
    return dict(c=int(rng.integers(3, 300)), cs=int(rng.integers(1, 25)), h=int(rng.integers(1, 9)),
                w=int(rng.integers(1, 9)))


@pytest.mark.parametrize("seed", range(6))
def test_joined_squeeze_matches_the_reference(seed):
    """Random pairs, joined form pinned: one group is left, its setup the squeeze,
    and the compiled module computes what the module before the pass does."""
    case = _random_se(seed)
    text = se_module(**case)
    groups = _rewritten(text)
    assert len(groups) == 1 and SETUP in groups[0].attributes, case
    mismatch, _, _ = compile_and_compare(text, pipeline=PIPELINE, hw="ascend910", seed=seed)
    assert mismatch is None, (case, mismatch)


def test_joined_is_faster_where_chosen():
    """96 -> 4 channels: the estimate joins them, and the joined module simulates
    faster than the two kernels pinned (a phase and its barrier fewer)."""
    assert _rewritten(se_module(96, 4, 8, 8, form=None))[0].attributes.get(SETUP) is not None
    cycles = {}
    for form in (JOINED, SEPARATE):
        mismatch, report, _ = compile_and_compare(se_module(96, 4, 8, 8, form), pipeline=PIPELINE, hw="ascend910")
        assert mismatch is None, mismatch
        cycles[form] = report.total_cycles
    assert cycles[JOINED] < cycles[SEPARATE], cycles


def test_a_scalar_setup_matches_the_reference():
    """A setup reducing everything to one value, read by the rows as a scalar."""
    x, one, y = _t([1, 40]), _t([1, 1]), _t([6, 24])
    text = f"""func.func @main(%x: {x}, %y: {y}) -> {y} {{
  %s = fused.group %x : ({x}) -> {one} {{
  ^bb0(%a: {x}):
    %r = ge.reduce_sum %a {{axes = [1]}} : ({x}) -> {one}
    %g = ge.sigmoid %r : ({one}) -> {one}
    fused.yield %g : {one}
  }}
  %z = fused.group %s, %y {{npu.form = "{JOINED}"}} : ({one}, {y}) -> {y} {{
  ^bb0(%a: {one}, %v: {y}):
    %m = ge.mul %a, %v : ({one}, {y}) -> {y}
    %d = ge.add %m, %v : ({y}, {y}) -> {y}
    fused.yield %d : {y}
  }}
  func.return %z : {y}
}}"""
    groups = _rewritten(text)
    assert len(groups) == 1 and SETUP in groups[0].attributes
    # (joined first: the producer alone has no kernel, so fused-ungroup would put its ops back)
    mismatch, _, _ = compile_and_compare(text, pipeline=f"fused-setup-groups{{hw=ascend910}},{PIPELINE}", hw="ascend910")
    assert mismatch is None, mismatch


def _forms(text: str, hw: str) -> dict[str, float]:
    module = parse_module(make_context(), text, "t.mlir")
    reader = [op for op in module.walk() if isinstance(op, fused.GroupOp)][-1]
    preset = load_preset(hw)
    return SetupGroupsPass(hw=hw).estimates(reader, preset, next_kernel_cycles(preset, True))


def test_what_cannot_be_a_setup_keeps_two_kernels():
    """A result read per row (the reader's rows are its own) is no setup; 480 x 20
    weights fit ascend910's UB but not tiny's: the joined form is not offered
    there (the template's answer), and by estimate not taken on ascend910."""
    per_row = f"""func.func @main(%y: {_t([1, 32, 16])}, %x: {_t([1, 32, 16])}) -> {_t([1, 32, 16])} {{
  %e = fused.group %x : ({_t([1, 32, 16])}) -> {_t([1, 32, 1])} {{
  ^bb0(%a: {_t([1, 32, 16])}):
    %r = ge.reduce_max %a {{axes = [2]}} : ({_t([1, 32, 16])}) -> {_t([1, 32, 1])}
    fused.yield %r : {_t([1, 32, 1])}
  }}
  %z = fused.group %e, %y : ({_t([1, 32, 1])}, {_t([1, 32, 16])}) -> {_t([1, 32, 16])} {{
  ^bb0(%a: {_t([1, 32, 1])}, %v: {_t([1, 32, 16])}):
    %m = ge.mul %a, %v : ({_t([1, 32, 1])}, {_t([1, 32, 16])}) -> {_t([1, 32, 16])}
    fused.yield %m : {_t([1, 32, 16])}
  }}
  func.return %z : {_t([1, 32, 16])}
}}"""
    assert set(_forms(per_row, "ascend910")) == {SEPARATE}
    assert len(_rewritten(per_row)) == 2
    large = se_module(480, 20, 4, 4, form=None)
    assert set(_forms(large, "tiny")) == {SEPARATE}
    forms = _forms(large, "ascend910")
    assert forms[SEPARATE] < forms[JOINED]
    assert len(_rewritten(large)) == 2


def test_a_producer_read_twice_is_no_setup():
    """The squeeze's result also returned: it must stay a kernel's result."""
    text = se_module(32, 8, 4, 4, form=None).replace(
        "func.return %z : tensor<1x32x4x4xf32>", "func.return %z, %s : tensor<1x32x4x4xf32>, tensor<1x8x1x1xf32>"
    ).replace("-> tensor<1x32x4x4xf32> {\n  %w1", "-> (tensor<1x32x4x4xf32>, tensor<1x8x1x1xf32>) {\n  %w1")
    module = parse_module(make_context(), text, "t.mlir")
    reader = [op for op in module.walk() if isinstance(op, fused.GroupOp)][-1]
    assert setup_source(reader) is None
