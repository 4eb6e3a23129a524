"""A vector group writing its result in NC1HWC0 itself (`fused_to_npu/group_formats.py`,
`channel_rows.py`): where `fused-stage-conv-input` converts a convolution's
input and that input is a squeeze-and-excitation group's scaling read by
nothing else, the conversion goes inside the group and is no kernel of its own.

Random SE scalings (images, channels that are no multiple of C0, pixels) and
excitations (a squeeze vector times the excite weights, reduced, sigmoid,
times the feature map) with the staged form pinned are rewritten so and
compiled to the simulator, whose output must match the reference interpreter
on the module before the pass. The estimate and the rewrite share one
predicate (`converts_itself`: the group template's own answer), so a group
whose rows are not its channels, or whose result is read twice, keeps the
`ge.transdata`."""

from __future__ import annotations

import numpy as np
import pytest

from vector_testing import compile_and_compare

from gecomp.core.parsing import parse_module
from gecomp.dialects import fused, ge
from gecomp.dialects.context import make_context
from gecomp.dialects.ge.formats import Format, format_of
from gecomp.lowering.fused_to_npu.group_formats import conversion_cycles, converts_itself, group_converting
from gecomp.lowering.fused_to_npu.kernel_exists import kernel_problem
from gecomp.lowering.fused_to_npu.stage_conv_input import STAGED, StageConvInputPass
from gecomp.simulator.hardware import load_preset

PINNED = f"{STAGED} + one kernel"


def _t(shape, fmt=None) -> str:
    suffix = f", #ge.format<{fmt}>" if fmt else ""
    return f"tensor<{'x'.join(map(str, shape))}xf32{suffix}>"


def _conv(z: str, n, c, h, w, o, form) -> tuple[str, str]:
    """The 1x1 projection reading `z` (ND), and its NC1HWC0 result type."""
    pin = f' {{npu.form = "{form}"}}' if form else ""
    out, wt = _t([n, o, h, w], "NC1HWC0"), _t([o, c, 1, 1], "FRACTAL_Z")
    return (f"""  %w = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.1> : {wt}
  %r = fused.conv2d_bias_act {z}, %w bias %b{pin} : ({_t([n, c, h, w])}, {wt}, tensor<{o}xf32>) -> {out}""", out)


def scaling_module(n, c, h, w, o, form=PINNED, extra_use=False) -> str:
    """sigmoid(s) * y in a group, then the projection (an SE block's scaling, the
    squeeze already done: s is (N, C, 1, 1))."""
    y, s = _t([n, c, h, w]), _t([n, c, 1, 1])
    conv, out = _conv("%z", n, c, h, w, o, form)
    results = f"%r, %z : {out}, {y}" if extra_use else f"%r : {out}"
    types = f"{out}, {y}" if extra_use else out
    return f"""func.func @main(%y: {y}, %s: {s}, %b: tensor<{o}xf32>) -> ({types}) {{
  %z = fused.group %s, %y : ({s}, {y}) -> {y} {{
  ^bb0(%a: {s}, %v: {y}):
    %g = ge.sigmoid %a : ({s}) -> {s}
    %m = ge.mul %g, %v : ({s}, {y}) -> {y}
    fused.yield %m : {y}
  }}
{conv}
  func.return {results}
}}"""


def excite_module(c, cs, h, w, o, form=PINNED) -> str:
    """EfficientNet's excite group as fusion makes it: (1, 1, Cs) x (C, Cs) summed
    over Cs, sigmoid, times the (1, C, H, W) map; then the projection."""
    y, hs, w2 = _t([1, c, h, w]), _t([1, 1, cs]), _t([c, cs])
    conv, out = _conv("%z", 1, c, h, w, o, form)
    return f"""func.func @main(%y: {y}, %s: {hs}, %b: tensor<{o}xf32>) -> {out} {{
  %w2 = ge.const #ge.random<normal, seed = 2, mean = 0.0, std = 0.3> : {w2}
  %z = fused.group %s, %w2, %y : ({hs}, {w2}, {y}) -> {y} {{
  ^bb0(%a: {hs}, %q: {w2}, %v: {y}):
    %p = ge.mul %a, %q : ({hs}, {w2}) -> {_t([1, c, cs])}
    %e = ge.reduce_sum %p {{axes = [2]}} : ({_t([1, c, cs])}) -> {_t([1, c, 1])}
    %g = ge.sigmoid %e : ({_t([1, c, 1])}) -> {_t([1, c, 1])}
    %g4 = ge.reshape %g : ({_t([1, c, 1])}) -> {_t([1, c, 1, 1])}
    %m = ge.mul %g4, %v : ({_t([1, c, 1, 1])}, {y}) -> {y}
    fused.yield %m : {y}
  }}
{conv}
  func.return %r : {out}
}}"""


def _staged(text: str, hw: str = "ascend910"):
    module = parse_module(make_context(), text, "t.mlir")
    StageConvInputPass(hw=hw).apply(make_context(), module)
    return module


def _top_transdatas(module) -> int:
    return sum(isinstance(op, ge.TransDataOp) and not isinstance(op.parent_op(), fused.GroupOp) for op in module.walk())


def _converting_groups(module) -> list[fused.GroupOp]:
    return [op for op in module.walk() if isinstance(op, fused.GroupOp)
            and any(format_of(r.type) == Format.NC1HWC0 for r in op.results)]


def _random_scaling(seed: int) -> dict:
    rng = np.random.default_rng(seed)
    return dict(n=int(rng.integers(1, 4)), c=int(rng.integers(3, 70)), h=int(rng.integers(1, 7)),
                w=int(rng.integers(1, 7)), o=int(rng.integers(4, 40)))


@pytest.mark.parametrize("seed", range(8))
def test_scaling_group_writes_nc1hwc0_matching_the_reference(seed):
    """Random scalings, staged form pinned: the group yields the NC1HWC0 image
    (the conversion inside it, no ge.transdata kernel left) and the compiled
    module computes what the module before the pass does."""
    case = _random_scaling(seed)
    text = scaling_module(**case)
    staged = _staged(text)
    assert _top_transdatas(staged) == 0, case
    assert len(_converting_groups(staged)) == 1, case
    mismatch, _, _ = compile_and_compare(text, pipeline="ge-lower-to-npu{hw=ascend910}", hw="ascend910", seed=seed)
    assert mismatch is None, (case, mismatch)


@pytest.mark.parametrize(("c", "cs", "h"), [(1152, 48, 2), (60, 5, 3), (44, 4, 4)])
def test_excite_group_writes_nc1hwc0_matching_the_reference(c, cs, h):
    """The excitation as EfficientNet-B0 has it (its stage-6 block, and channel
    counts that are no multiple of 8)."""
    text = excite_module(c, cs, h, h, 24)
    staged = _staged(text)
    assert _top_transdatas(staged) == 0 and len(_converting_groups(staged)) == 1
    mismatch, _, _ = compile_and_compare(text, pipeline="ge-lower-to-npu{hw=ascend910}", hw="ascend910")
    assert mismatch is None, mismatch


def test_small_ub_tiles_of_whole_images():
    """On `tiny` (32 KiB of UB) a padded channel count (C = 20, whole images per
    tile) of several images still matches the reference."""
    text = scaling_module(3, 20, 5, 5, 8)
    assert _top_transdatas(_staged(text, "tiny")) == 0
    mismatch, _, _ = compile_and_compare(text, pipeline="ge-lower-to-npu{hw=tiny}", hw="tiny")
    assert mismatch is None, mismatch


def test_a_result_read_twice_keeps_the_transdata():
    """The group's ND result is also returned: the conversion cannot replace it."""
    text = scaling_module(1, 32, 2, 2, 16, extra_use=True)
    staged = _staged(text)
    assert _top_transdatas(staged) == 1 and not _converting_groups(staged)
    mismatch, _, _ = compile_and_compare(text, pipeline="ge-lower-to-npu{hw=ascend910}", hw="ascend910")
    assert mismatch is None, mismatch


def test_rows_that_are_not_channels_keep_the_transdata():
    """A group reducing over W has rows (N, C, H): its kernel cannot write the
    NC1HWC0 image (the template says why), so the pass keeps the transdata:
    one predicate for the estimate and the rewrite."""
    n, c, h, w = 1, 16, 3, 4
    y, col = _t([n, c, h, w]), _t([n, c, h, 1])
    conv, out = _conv("%z", n, c, h, w, 8, PINNED)
    text = f"""func.func @main(%y: {y}, %b: tensor<8xf32>) -> {out} {{
  %z = fused.group %y : ({y}) -> {y} {{
  ^bb0(%v: {y}):
    %m = ge.reduce_max %v {{axes = [3]}} : ({y}) -> {col}
    %d = ge.sub %v, %m : ({y}, {col}) -> {y}
    fused.yield %d : {y}
  }}
{conv}
  func.return %r : {out}
}}"""
    module = parse_module(make_context(), text, "t.mlir")
    group = next(op for op in module.walk() if isinstance(op, fused.GroupOp))
    conv = next(op for op in module.walk() if isinstance(op, fused.Conv2DBiasActOp))
    hw = load_preset("ascend910")
    candidate = group_converting(group, group.results[0])
    try:
        problem = kernel_problem(candidate, hw)
    finally:
        candidate.erase()
    assert problem is not None and "NC1HWC0 result" in problem
    assert not converts_itself(group.results[0], [conv], hw)
    staged = _staged(text)
    assert _top_transdatas(staged) == 1 and not _converting_groups(staged)


def test_the_estimate_counts_the_conversion():
    """Few channels of many pixels (96 x 16x16: tiles of whole 8-channel blocks put
    the rows on 12 cores instead of 32) cost the group more than 1152 channels of
    2x2 pixels do."""
    hw = load_preset("ascend910")
    costs = []
    for c, cs, h in ((1152, 48, 2), (96, 4, 16)):
        module = parse_module(make_context(), excite_module(c, cs, h, h, 24), "t.mlir")
        group = next(op for op in module.walk() if isinstance(op, fused.GroupOp))
        costs.append(conversion_cycles(group.results[0], hw))
    assert 0 < costs[0] < costs[1]


@pytest.mark.parametrize("args", [(2, 20, 3, 3, 16), (3, 16, 4, 4, 8)])
def test_f16_blocks_of_sixteen_channels(args):
    """In f16 a C0 block is 16 channels (32 bytes): 20 channels pad the second block."""
    text = scaling_module(*args).replace("xf32", "xf16")
    assert _top_transdatas(_staged(text)) == 0
    mismatch, _, _ = compile_and_compare(text, pipeline="ge-lower-to-npu{hw=ascend910}", hw="ascend910")
    assert mismatch is None, mismatch
