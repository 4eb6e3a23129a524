"""`fused-depthwise-mean`: the global average pool of a depthwise convolution's
output computed by the convolution's kernel (`fused.conv2d_bias_act_mean`).

Random depthwise convolutions (channels, pixels, window, stride, activation,
images, input format) followed by their pool are rewritten by the pass and
compiled to the simulator, whose outputs (the convolution's and the pool's)
must match the reference interpreter on the module before the pass; the pass
and the lowering share one predicate (`kernel_problem` of the would-be op): a
plane that does not fit one tile keeps the pool a kernel of its own, and so
does a convolution that is not grouped."""

from __future__ import annotations

import numpy as np
import pytest

from vector_testing import compile_and_compare, tensor

from gecomp.core.parsing import parse_module
from gecomp.core.passes import parse_pass_pipeline, run_pipeline
from gecomp.dialects import fused, ge
from gecomp.dialects.context import make_context
from gecomp.lowering.fused_to_npu.depthwise_mean import MEANS, POOL, pooled_conv, with_mean
from gecomp.lowering.fused_to_npu.kernel_exists import kernel_problem
from gecomp.simulator.hardware import load_preset

ACTS = ["none", "relu", "silu", "sigmoid"]


def _module(n, c, h, w, k, stride, act, in_fmt=None, groups=None, o=None, form=None, pool="ge.global_avg_pool",
            axes=(2, 3)) -> str:
    groups = c if groups is None else groups
    o = c if o is None else o
    pad = k // 2
    oh, ow = (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1
    x = tensor([n, c, h, w], "f32", in_fmt)
    y, p = tensor([n, o, oh, ow], "f32"), tensor([n, o, 1, 1], "f32")
    wt = tensor([o, c // groups, k, k], "f32")
    attrs = [f'npu.form = "{form}"'] if form is not None else []
    if pool == "ge.reduce_mean":  # the dynamo exporter's ReduceMean over the pixels
        attrs.insert(0, f"axes = {list(axes)}")
        p = tensor([n, o, *(1 if i in axes else d for i, d in ((2, oh), (3, ow)))], "f32")
    pin = f" {{{', '.join(attrs)}}}" if attrs else ""
    return f"""func.func @main(%x: {x}, %b: tensor<{o}xf32>) -> ({y}, {p}) {{
  %w = ge.const #ge.random<normal, seed = 3, mean = 0.0, std = 0.3> : {wt}
  %y = fused.conv2d_bias_act %x, %w bias %b {{strides = [{stride}, {stride}], pads = [{pad}, {pad}, {pad}, {pad}], groups = {groups}, act = "{act}"}} : ({x}, {wt}, tensor<{o}xf32>) -> {y}
  %p = {pool} %y{pin} : ({y}) -> {p}
  func.return %y, %p : {y}, {p}
}}"""


def _after_pass(text: str, hw: str = "ascend910"):
    module = parse_module(make_context(), text, "test.mlir")
    run_pipeline(parse_pass_pipeline(f"fused-depthwise-mean{{hw={hw}}}"), make_context(), module)
    return module


def _count(module, cls) -> int:
    return sum(isinstance(op, cls) for op in module.walk())


def _random_case(rng):
    k = int(rng.choice([3, 5]))
    return dict(
        n=int(rng.integers(1, 3)),
        c=8 * int(rng.integers(1, 9)),
        h=int(rng.integers(2, 13)),
        w=int(rng.integers(2, 13)),
        k=k,
        stride=int(rng.integers(1, 3)),
        act=str(rng.choice(ACTS)),
        in_fmt=None if rng.integers(2) else "NC1HWC0",
        pool=str(rng.choice(["ge.global_avg_pool", "ge.reduce_mean"])),
    )


@pytest.mark.parametrize("seed", range(8))
def test_means_in_the_depthwise_kernel_match_the_reference(seed):
    """The form pinned (`npu.form`): with one image of 8 channels the estimates
    keep the pool (one core would hold the whole plane), the numbers must match anyway."""
    case = _random_case(np.random.default_rng(seed))
    text = _module(**case, form=MEANS)
    fused_module = _after_pass(text)
    assert _count(fused_module, fused.Conv2DBiasActMeanOp) == 1, case
    assert _count(fused_module, ge.GlobalAvgPoolOp) + _count(fused_module, ge.ReduceMeanOp) == 0, case
    mismatch, _, _ = compile_and_compare(text, pipeline="ge-lower-to-npu{hw=ascend910}", hw="ascend910", seed=seed)
    assert mismatch is None, (case, mismatch)


def test_the_fused_op_computes_the_pool_of_its_output():
    """The op's own reference semantics: its second result is the pool of its first."""
    from gecomp.simulator.run import execute

    text = _module(1, 16, 7, 9, 3, 2, "silu")
    before = parse_module(make_context(), text, "t.mlir")
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal([1, 16, 7, 9]).astype(np.float32), rng.standard_normal([16]).astype(np.float32)]
    want = execute(before, inputs).results
    got = execute(_after_pass(text), inputs).results
    for w_, g_ in zip(want, got):
        np.testing.assert_allclose(g_, w_, rtol=1e-6, atol=1e-6)


def test_a_plane_larger_than_a_tile_keeps_the_pool():
    """One predicate: the template refuses the means when a plane does not fit
    one tile of UB (the `tiny` preset, 32 KiB), and the pass keeps the pool."""
    text = _module(1, 8, 40, 40, 3, 1, "relu")
    module = parse_module(make_context(), text, "t.mlir")
    (pool,) = [op for op in module.walk() if isinstance(op, ge.GlobalAvgPoolOp)]
    problem = kernel_problem(with_mean(pooled_conv(pool), pool), load_preset("tiny"))
    assert problem is not None and "a plane does not fit one tile" in problem
    after = _after_pass(text, hw="tiny")
    assert _count(after, ge.GlobalAvgPoolOp) == 1 and _count(after, fused.Conv2DBiasActMeanOp) == 0


def test_an_ungrouped_convolution_keeps_the_pool():
    text = _module(1, 8, 6, 6, 3, 1, "none", groups=1, o=16)
    assert pooled_conv(next(op for op in parse_module(make_context(), text, "t.mlir").walk()
                            if isinstance(op, ge.GlobalAvgPoolOp))) is None
    assert _count(_after_pass(text), ge.GlobalAvgPoolOp) == 1


def test_the_estimates_choose_the_form():
    """Unpinned, the form is the one estimated faster: an EfficientNet-B0 block's
    144 channels of 16x16 (18 planes, one per core) take the means into the
    depthwise kernel; a single 8-channel plane of 12x12 (one core for the whole
    plane against rows over several cores) keeps the pool."""
    from gecomp.lowering.fused_to_npu.depthwise_mean import DepthwiseMeanPass
    from gecomp.simulator.npu.costs import next_kernel_cycles

    hw = load_preset("ascend910")
    verdicts = []
    for shape in ((1, 144, 16, 16), (1, 8, 12, 12)):
        module = parse_module(make_context(), _module(*shape, 3, 1, "silu"), "t.mlir")
        (pool,) = [op for op in module.walk() if isinstance(op, ge.GlobalAvgPoolOp)]
        forms = DepthwiseMeanPass().estimates(pool, hw, next_kernel_cycles(hw, True))
        verdicts.append(min(forms, key=forms.get))
        assert _count(_after_pass(_module(*shape, 3, 1, "silu")), fused.Conv2DBiasActMeanOp) == (verdicts[-1] == MEANS)
    assert verdicts == [MEANS, POOL]


def test_a_pinned_pool_kernel_is_kept_and_compiles():
    """`npu.form = "pool kernel"` overrides the estimates, and ge-to-npu accepts the
    pin as applied (the pass is one of the form choosers it knows)."""
    text = _module(1, 144, 16, 16, 3, 1, "silu", form=POOL)
    assert _count(_after_pass(text), ge.GlobalAvgPoolOp) == 1
    mismatch, _, _ = compile_and_compare(text, pipeline="ge-lower-to-npu{hw=ascend910}", hw="ascend910")
    assert mismatch is None


def test_a_mean_over_one_axis_is_no_pool():
    text = _module(1, 16, 6, 6, 3, 1, "none", pool="ge.reduce_mean", axes=(3,))
    assert _count(_after_pass(text), ge.ReduceMeanOp) == 1
