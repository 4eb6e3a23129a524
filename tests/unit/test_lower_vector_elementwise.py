"""Vector kernels of elementwise ops: compiled with `ge-lower-to-npu{hw=tiny}`,
simulated on the tiny preset (2 cores, 32 KB of UB: tiles, tails and the core
split show up on small tensors), equal to the reference interpreter.

Shapes: 1, odd sizes, sizes just above a tile, and every broadcast the row
kernel handles (a row, a column, a scalar, repeating rows), in ND and in the
blocked FRACTAL_NZ / NC1HWC0 layouts; integer and boolean ops.
"""

from __future__ import annotations

import numpy as np
import pytest

from vector_testing import assert_matches, compile_and_compare, one_op, tensor

SHAPES = [(1,), (7,), (33, 17), (3, 1025), (129, 257), (2, 3, 5, 7)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("op", ["ge.add", "ge.div", "ge.maximum"])
def test_binary_same_shape(op, shape):
    t = tensor(shape)
    assert_matches(one_op(op, [t, t], t))


@pytest.mark.parametrize(
    "op", ["ge.exp", "ge.tanh", "ge.sigmoid", "ge.gelu", "ge.silu", "ge.erf", "ge.neg", "ge.abs", "ge.relu"]
)
def test_unary(op):
    t = tensor([65, 33])
    assert_matches(one_op(op, [t], t))


BROADCASTS = [
    ([37, 300], [300]),  # a row
    ([37, 300], [37, 1]),  # a column
    ([37, 300], []),  # a scalar
    ([4, 6, 40], [6, 40]),  # repeating rows (a mask of (S, S) against (B, S, S))
    ([4, 6, 40], [6, 1]),  # repeating columns
    ([2, 3, 4], [3, 1]),
    ([4, 1, 8], [1, 5, 8]),  # one operand repeats each of its rows, the other repeats a block
    ([4, 1, 3, 8], [1, 5, 3, 8]),  # the same, once the common trailing dims are merged
    ([3, 1, 1], [3, 4, 64]),
]


@pytest.mark.parametrize("lhs,rhs", BROADCASTS, ids=str)
def test_broadcasting(lhs, rhs):
    out = list(np.broadcast_shapes(tuple(lhs), tuple(rhs)))
    assert_matches(one_op("ge.sub", [tensor(lhs), tensor(rhs)], tensor(out)))
    assert_matches(one_op("ge.mul", [tensor(rhs), tensor(lhs)], tensor(out)))


@pytest.mark.parametrize("lhs,rhs", [([3, 20000], [20000]), ([3, 20000], [3, 1]), ([2, 4097], [4097])], ids=str)
def test_rows_wider_than_ub_are_cut(lhs, rhs):
    """A broadcast row too wide for UB is cut into rows of a divisor of its width."""
    assert_matches(one_op("ge.add", [tensor(lhs), tensor(rhs)], tensor(lhs)))


@pytest.mark.parametrize("shape,fmt", [([128, 96], "FRACTAL_NZ"), ([3, 40, 24], "FRACTAL_NZ"), ([1, 33], "FRACTAL_NZ")])
def test_nz_bias(shape, fmt):
    """A bias over N of an NZ matrix: the blocked layout expands it once."""
    t = tensor(shape, fmt=fmt)
    assert_matches(one_op("ge.add", [t, tensor(shape[-1:])], t))


@pytest.mark.parametrize("shape", [[2, 40, 7, 7], [1, 8, 2, 3]], ids=str)
def test_nc1hwc0_bias(shape):
    t = tensor(shape, fmt="NC1HWC0")
    assert_matches(one_op("ge.add", [t, tensor([shape[1], 1, 1])], t))


@pytest.mark.parametrize("op", ["ge.add", "ge.sub", "ge.mul", "ge.maximum", "ge.minimum"])
def test_integer_binary(op):
    for lhs, rhs in [([37, 30], [37, 30]), ([37, 30], [30]), ([37, 30], [])]:
        assert_matches(one_op(op, [tensor(lhs, "i32"), tensor(rhs, "i32")], tensor([37, 30], "i32")))


def test_integer_divide_truncates():
    rng = np.random.default_rng(1)
    x = rng.integers(-1000, 1000, size=(37, 30)).astype(np.int32)
    y = rng.choice([-7, -3, -1, 1, 2, 5, 9], size=(37, 30)).astype(np.int32)
    t = tensor([37, 30], "i32")
    assert_matches(one_op("ge.div", [t, t], t), inputs=[x, y])


@pytest.mark.parametrize("op", ["ge.neg", "ge.abs", "ge.relu"])
def test_integer_unary(op):
    t = tensor([37, 30], "i32")
    assert_matches(one_op(op, [t], t))


@pytest.mark.parametrize("src,dst", [("f16", "i32"), ("i32", "f16"), ("i32", "i1"), ("i1", "f32"), ("f16", "f32")])
def test_cast(src, dst):
    assert_matches(one_op("ge.cast", [tensor([37, 30], src)], tensor([37, 30], dst)))


def test_where_broadcast():
    assert_matches(one_op("ge.where", [tensor([30], "i1"), tensor([37, 30]), tensor([37, 1])], tensor([37, 30])))
    i32 = tensor([37, 30], "i32")
    assert_matches(one_op("ge.where", [tensor([37, 30], "i1"), i32, tensor([30], "i32")], i32))


@pytest.mark.parametrize("up", [[37, 300], [300]], ids=str)
def test_swiglu(up):
    assert_matches(one_op("fused.swiglu", [tensor([37, 300]), tensor(up)], tensor([37, 300])))


@pytest.mark.parametrize("lhs,rhs", [([4, 1, 3, 8], [1, 5, 1, 8]), ([2, 1, 3, 8], [2, 5, 3, 1])], ids=str)
def test_broadcast_no_kernel_reads_is_materialized(lhs, rhs):
    """Two separate runs of broadcast dims: ge-materialize-broadcasts expands an
    operand first (an expand kernel, then the add)."""
    out = list(np.broadcast_shapes(tuple(lhs), tuple(rhs)))
    text = one_op("ge.add", [tensor(lhs), tensor(rhs)], tensor(out))
    report = assert_matches(text, pipeline="ge-lower-to-npu{hw=tiny merge=false}")
    assert len(report.kernels) == 2
    merged = assert_matches(text)
    assert len(merged.kernels) == 1


def test_elementwise_add_tiles_evenly_over_all_cores():
    """16M fp16 elements on the 910 preset: every core busy, none with an extra tile."""
    t = tensor([4096, 4096])
    _, report, _ = compile_and_compare(one_op("ge.add", [t, t], t), pipeline="ge-lower-to-npu", hw="ascend910")
    assert report.kernels[0].block_dim == 32
