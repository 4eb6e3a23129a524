"""Vector kernels of reductions: reduce_sum / reduce_mean / reduce_max over the
last axes (rows), leading and middle axes (slabs transposed in UB), all axes and
rows too long for UB (the chunked kernel), keepdims or not; global_avg_pool in
ND and NC1HWC0. Compiled for the tiny preset and simulated, against the
reference interpreter."""

from __future__ import annotations

import pytest

from gecomp.lowering.fused_to_npu.templates.reduction import ReductionShape, reduction_shape
from vector_testing import assert_matches, compile_and_compare, one_op, tensor

OPS = ["ge.reduce_sum", "ge.reduce_mean", "ge.reduce_max"]

CASES = [
    ([37, 300], [-1]),  # rows
    ([1, 1], [1]),
    ([37, 300], [0]),  # a leading axis: slabs
    ([3, 5, 7], [1]),  # a middle axis, odd sizes
    ([6, 130, 33], [1]),
    ([4, 1, 8], [0, 2]),  # adjacent once the 1 is dropped
    ([2, 3, 4], []),  # all axes
    ([300, 500], []),  # all axes, more than a UB: chunked
    ([5000, 17], [0]),  # a long leading axis: chunked, columns per core
    ([3, 20000], [1]),  # rows longer than a UB: chunked
    ([6, 7, 16], [0, 1]),
]


def _reduced(shape, axes, keepdims):
    axes = [a % len(shape) for a in axes] or list(range(len(shape)))
    if keepdims:
        return [1 if i in axes else d for i, d in enumerate(shape)]
    return [d for i, d in enumerate(shape) if i not in axes]


def _reduce(op, shape, axes, keepdims=True, dtype="f16"):
    attrs = f"axes = [{', '.join(map(str, axes))}], keepdims = {'true' if keepdims else 'false'}"
    return one_op(op, [tensor(shape, dtype)], tensor(_reduced(shape, axes, keepdims), dtype), attrs)


@pytest.mark.parametrize("shape,axes", CASES, ids=str)
@pytest.mark.parametrize("op", OPS)
def test_reduce(op, shape, axes):
    assert_matches(_reduce(op, shape, axes))


def test_keepdims_false_and_other_types():
    assert_matches(_reduce("ge.reduce_sum", [37, 300], [1], keepdims=False))
    assert_matches(_reduce("ge.reduce_mean", [37, 300], [0], keepdims=False, dtype="f32"))
    assert_matches(_reduce("ge.reduce_max", [37, 300], [0], dtype="i32"))
    assert_matches(_reduce("ge.reduce_sum", [37, 300], [1], dtype="i32"))


def test_fp16_sums_round_once():
    """A row summing to almost nothing: partial sums rounded to fp16 would be off."""
    import numpy as np

    x = np.tile(np.array([1000.0, -1000.0, 0.125, -0.0625], dtype=np.float16), (8, 256))
    assert_matches(_reduce("ge.reduce_sum", [8, 1024], [1]), inputs=[x], atol=1e-4)
    assert_matches(_reduce("ge.reduce_mean", [8, 1024], [1]), inputs=[x], atol=1e-4)


@pytest.mark.parametrize("shape,axes", [([3, 4, 5], [0, 2]), ([2, 3, 40, 7], [0, 2, 3]), ([5, 2, 3, 6, 4], [0, 2, 4])],
                         ids=str)
@pytest.mark.parametrize("op", OPS)
def test_non_adjacent_axes(op, shape, axes):
    """Batch-norm-like statistics over (N, H, W) of NCHW: the chunked kernel walks
    the outer reduced runs with loops."""
    assert_matches(_reduce(op, shape, axes))


def test_reduction_shape():
    assert reduction_shape((2, 3, 4), (1,)) == ReductionShape(2, 3, 4)
    assert reduction_shape((2, 1, 3, 4), (2, 3)) == ReductionShape(2, 12, 1)
    assert reduction_shape((4, 1, 8), (0, 2)) == ReductionShape(1, 32, 1)
    assert reduction_shape((3, 4, 5), (0, 2)) == ReductionShape(4, 5, 1, ((4, 5),), ((3, 20),))


@pytest.mark.parametrize("shape", [[2, 3, 5, 5], [1, 64, 7, 7], [2, 3, 150, 150]], ids=str)
def test_global_avg_pool(shape):
    assert_matches(one_op("ge.global_avg_pool", [tensor(shape)], tensor(shape[:2] + [1, 1])))


@pytest.mark.parametrize("shape", [[2, 40, 7, 7], [1, 8, 3, 3]], ids=str)
def test_global_avg_pool_nc1hwc0(shape):
    """The C0 channels of a 5HD block are the inner dim of the reduced slabs."""
    out = shape[:2] + [1, 1]
    assert_matches(one_op("ge.global_avg_pool", [tensor(shape, fmt="NC1HWC0")], tensor(out, fmt="NC1HWC0")))


def test_leading_axis_uses_every_core():
    t = tensor([4096, 1024])
    text = one_op("ge.reduce_sum", [t], tensor([1, 1024]), "axes = [0]")
    _, report, _ = compile_and_compare(text, pipeline="ge-lower-to-npu", hw="ascend910")
    assert report.kernels[0].block_dim == 32
