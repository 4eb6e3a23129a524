"""Reference semantics of the cube-shaped and CNN `ge` ops (matmul, batch_matmul,
conv2d, max/avg pooling, global_avg_pool, bias_add) against naive Python loops
written from the ONNX / PyTorch definitions: output sizes from the textbook
formulas, windows walked index by index, padding by bounds checks.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from xdsl.dialects.builtin import TensorType, f16, f32, i1, i32
from xdsl.ir import Block

from gecomp.dialects.ge import (
    AvgPool2DOp,
    BatchMatmulOp,
    BiasAddOp,
    Conv2DOp,
    GlobalAvgPoolOp,
    MatmulOp,
    MaxPool2DOp,
)

DTYPES = (np.float32, np.float16)


def tensor(shape, element_type=f32):
    return TensorType(element_type, list(shape))


def sample(rng, shape, dtype):
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-5, 6, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def exact(a: np.ndarray) -> list:
    """Nested Python lists of the exact values (float64 / int), for fast scalar loops."""
    return (a.astype(np.float64) if np.issubdtype(a.dtype, np.floating) else a).tolist()


# ---- matmul ---------------------------------------------------------------------------------


def matmul_loops(a: np.ndarray, b: np.ndarray, transpose_a: bool, transpose_b: bool) -> np.ndarray:
    A, B = exact(a), exact(b)
    lhs = (lambda i, k: A[k][i]) if transpose_a else (lambda i, k: A[i][k])
    rhs = (lambda k, j: B[j][k]) if transpose_b else (lambda k, j: B[k][j])
    m = a.shape[1] if transpose_a else a.shape[0]
    k = a.shape[0] if transpose_a else a.shape[1]
    n = b.shape[0] if transpose_b else b.shape[1]
    total = math.fsum if np.issubdtype(a.dtype, np.floating) else sum
    return np.array(
        [[total(lhs(i, kk) * rhs(kk, j) for kk in range(k)) for j in range(n)] for i in range(m)]
    ).reshape(m, n)


MKN = [(3, 5, 7), (1, 4, 1), (2, 1, 3), (5, 8, 2)]


@pytest.mark.parametrize("transpose_a, transpose_b", itertools.product((False, True), repeat=2))
@pytest.mark.parametrize("mkn", MKN, ids=str)
@pytest.mark.parametrize("dtype", (*DTYPES, np.int32))
def test_matmul(dtype, mkn, transpose_a, transpose_b, rng, run_op, close):
    m, k, n = mkn
    a = sample(rng, (k, m) if transpose_a else (m, k), dtype)
    b = sample(rng, (n, k) if transpose_b else (k, n), dtype)
    y = run_op(MatmulOp, a, b, transpose_a=transpose_a, transpose_b=transpose_b)
    close(y, matmul_loops(a, b, transpose_a, transpose_b))


BATCH_SHAPES = [
    ((2, 1, 3, 4), (5, 4, 2)),
    ((3, 4), (2, 4, 5)),
    ((1, 2, 3), (1, 3, 1)),
    ((2, 3, 4), (2, 4, 3)),
]


@pytest.mark.parametrize("transpose_a, transpose_b", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("shapes", BATCH_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES)
def test_batch_matmul_broadcasts_batch_dims(dtype, shapes, transpose_a, transpose_b, rng, run_op, close):
    """Shapes are given untransposed; the operands are stored transposed when a flag
    says so. Reference: every batch index, broadcast by hand, through `matmul_loops`."""
    (ls, rs) = shapes
    a = sample(rng, (*ls[:-2], ls[-1], ls[-2]) if transpose_a else ls, dtype)
    b = sample(rng, (*rs[:-2], rs[-1], rs[-2]) if transpose_b else rs, dtype)
    batch = np.broadcast_shapes(ls[:-2], rs[:-2])
    expected = np.zeros((*batch, ls[-2], rs[-1]))
    for index in itertools.product(*(range(d) for d in batch)):
        ai = tuple(0 if d == 1 else i for d, i in zip(a.shape[:-2], index[len(batch) - (a.ndim - 2) :]))
        bi = tuple(0 if d == 1 else i for d, i in zip(b.shape[:-2], index[len(batch) - (b.ndim - 2) :]))
        expected[index] = matmul_loops(a[ai], b[bi], transpose_a, transpose_b)
    close(run_op(BatchMatmulOp, a, b, transpose_a=transpose_a, transpose_b=transpose_b), expected)


# ---- conv2d ---------------------------------------------------------------------------------


def conv_out(size, kernel, stride, pad_begin, pad_end, dilation):
    return (size + pad_begin + pad_end - dilation * (kernel - 1) - 1) // stride + 1


def conv2d_loops(x, w, strides, pads, dilations, groups) -> np.ndarray:
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    top, left, bottom, right = pads
    oh = conv_out(h, kh, strides[0], top, bottom, dilations[0])
    ow = conv_out(wd, kw, strides[1], left, right, dilations[1])
    X, W = exact(x), exact(w)
    out = np.zeros((n, o, oh, ow))
    per_group = o // groups
    for b, oc, oy, ox in itertools.product(range(n), range(o), range(oh), range(ow)):
        first_channel = (oc // per_group) * cg
        terms = []
        for ci, ky, kx in itertools.product(range(cg), range(kh), range(kw)):
            iy = oy * strides[0] - top + ky * dilations[0]
            ix = ox * strides[1] - left + kx * dilations[1]
            if 0 <= iy < h and 0 <= ix < wd:
                terms.append(X[b][first_channel + ci][iy][ix] * W[oc][ci][ky][kx])
        out[b, oc, oy, ox] = math.fsum(terms)
    return out


CONV_CASES = [
    # input, weight, strides, pads [top, left, bottom, right], dilations, groups
    ((1, 3, 7, 6), (4, 3, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
    ((2, 4, 9, 8), (6, 2, 3, 2), (2, 1), (0, 1, 2, 0), (1, 1), 2),
    ((1, 4, 8, 7), (4, 1, 3, 3), (1, 2), (2, 2, 2, 2), (2, 2), 4),
    ((1, 2, 5, 5), (3, 2, 1, 1), (2, 2), (0, 0, 0, 0), (1, 1), 1),
    ((1, 1, 1, 1), (2, 1, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    ((1, 3, 6, 6), (2, 3, 6, 6), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    ((1, 6, 7, 5), (6, 2, 2, 3), (3, 2), (1, 0, 1, 2), (1, 2), 3),
    ((1, 2, 5, 3), (2, 2, 3, 3), (1, 1), (0, 2, 0, 0), (2, 1), 1),
]


@pytest.mark.parametrize("case", CONV_CASES, ids=lambda c: f"{c[0]}*{c[1]}/s{c[2]}p{c[3]}d{c[4]}g{c[5]}")
@pytest.mark.parametrize("dtype", DTYPES)
def test_conv2d(dtype, case, rng, run_op, close):
    x_shape, w_shape, strides, pads, dilations, groups = case
    x, w = sample(rng, x_shape, dtype), sample(rng, w_shape, dtype)
    y = run_op(Conv2DOp, x, w, strides=strides, pads=pads, dilations=dilations, groups=groups)
    close(y, conv2d_loops(x, w, strides, pads, dilations, groups))


# ---- pooling --------------------------------------------------------------------------------


def pool_out(size, kernel, stride, pad_begin, pad_end, ceil_mode):
    """PyTorch's (and ONNX Runtime's) rule: floor or ceil of the window count, and in
    ceil mode no window may start inside the end padding."""
    span = size + pad_begin + pad_end - kernel
    out = (-(-span // stride) if ceil_mode else span // stride) + 1
    if ceil_mode and (out - 1) * stride >= size + pad_begin:
        out -= 1
    return out


def pool_loops(x, kernel, strides, pads, ceil_mode, kind, count_include_pad=False) -> np.ndarray:
    """Max or average over each window; a window's positions outside the input are
    padding. The average divides by the number of positions inside the input, or
    with `count_include_pad` inside the explicitly padded plane (ceil mode's
    overhang beyond it never counts)."""
    n, c, h, w = x.shape
    top, left, bottom, right = pads
    oh = pool_out(h, kernel[0], strides[0], top, bottom, ceil_mode)
    ow = pool_out(w, kernel[1], strides[1], left, right, ceil_mode)
    X = exact(x)
    out = np.zeros((n, c, oh, ow))
    for b, ch, oy, ox in itertools.product(range(n), range(c), range(oh), range(ow)):
        y0, x0 = oy * strides[0] - top, ox * strides[1] - left
        rows, cols = range(y0, y0 + kernel[0]), range(x0, x0 + kernel[1])
        values = [X[b][ch][iy][ix] for iy in rows for ix in cols if 0 <= iy < h and 0 <= ix < w]
        if kind == "max":
            out[b, ch, oy, ox] = max(values)
            continue
        if count_include_pad:
            count = sum(1 for iy in rows for ix in cols if -top <= iy < h + bottom and -left <= ix < w + right)
        else:
            count = len(values)
        out[b, ch, oy, ox] = math.fsum(values) / count
    return out


POOL_CASES = [
    # input, kernel, strides, pads, ceil_mode
    ((1, 2, 7, 7), (3, 3), (2, 2), (1, 1, 1, 1), False),
    ((1, 2, 7, 7), (3, 3), (2, 2), (1, 1, 1, 1), True),
    ((2, 3, 6, 5), (2, 2), (2, 2), (0, 0, 0, 0), True),
    ((1, 1, 5, 8), (3, 2), (2, 3), (1, 0, 0, 1), True),
    ((1, 2, 1, 1), (1, 1), (1, 1), (0, 0, 0, 0), False),
    ((1, 1, 4, 4), (2, 2), (3, 3), (1, 1, 1, 1), True),  # the last ceil window would start in padding
    ((1, 3, 9, 4), (3, 1), (1, 1), (0, 0, 2, 0), False),
    ((1, 1, 6, 6), (4, 3), (1, 2), (3, 2, 3, 2), False),
]


def pool_id(case) -> str:
    return f"{case[0]}k{case[1]}s{case[2]}p{case[3]}{'ceil' if case[4] else ''}"


@pytest.mark.parametrize("case", POOL_CASES, ids=pool_id)
@pytest.mark.parametrize("dtype", DTYPES)
def test_max_pool2d(dtype, case, rng, run_op, close):
    x_shape, kernel, strides, pads, ceil_mode = case
    x = sample(rng, x_shape, dtype) - 3.0  # all negative: padding (0 or -inf) must never win
    x = x.astype(dtype)
    y = run_op(MaxPool2DOp, x, kernel=kernel, strides=strides, pads=pads, ceil_mode=ceil_mode)
    close(y, pool_loops(x, kernel, strides, pads, ceil_mode, "max"))


@pytest.mark.parametrize("count_include_pad", (False, True))
@pytest.mark.parametrize("case", POOL_CASES, ids=pool_id)
@pytest.mark.parametrize("dtype", DTYPES)
def test_avg_pool2d(dtype, case, count_include_pad, rng, run_op, close):
    x_shape, kernel, strides, pads, ceil_mode = case
    x = sample(rng, x_shape, dtype)
    y = run_op(
        AvgPool2DOp, x, kernel=kernel, strides=strides, pads=pads, ceil_mode=ceil_mode,
        count_include_pad=count_include_pad,
    )
    close(y, pool_loops(x, kernel, strides, pads, ceil_mode, "avg", count_include_pad))


def test_avg_pool2d_divisors_by_hand(run_op, close):
    """A 4x4 all-ones input, kernel 3, stride 2, pad 1 on each side, ceil mode: the
    last window (rows 3..5) covers one input row, one pad row and one row of ceil
    overhang. Only the padded plane counts with `count_include_pad`."""
    x = np.ones((1, 1, 4, 4), np.float32)
    common = dict(kernel=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1), ceil_mode=True)
    close(run_op(AvgPool2DOp, x, **common), np.ones((1, 1, 3, 3)))
    including_pad = [[4 / 9, 2 / 3, 1 / 3], [2 / 3, 1, 1 / 2], [1 / 3, 1 / 2, 1 / 4]]
    close(run_op(AvgPool2DOp, x, count_include_pad=True, **common), np.array([[including_pad]]))


@pytest.mark.parametrize("shape", [(2, 3, 5), (1, 2, 3, 4), (1, 1, 2, 3, 1), (2, 1, 1, 1)], ids=str)
@pytest.mark.parametrize("dtype", DTYPES)
def test_global_avg_pool(dtype, shape, rng, run_op, close):
    x = sample(rng, shape, dtype)
    X = x.astype(np.float64)
    expected = np.zeros((*shape[:2], *([1] * (len(shape) - 2))))
    for b, c in itertools.product(range(shape[0]), range(shape[1])):
        values = X[b, c].ravel().tolist()
        expected[b, c] = math.fsum(values) / len(values)
    close(run_op(GlobalAvgPoolOp, x), expected)


# ---- bias_add -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "shape, axis",
    [((2, 3, 4, 5), 1), ((4, 7), -1), ((3,), 0), ((1, 1, 5), 2), ((2, 3, 1), -2)],
    ids=str,
)
@pytest.mark.parametrize("dtype", (*DTYPES, np.int32))
def test_bias_add(dtype, shape, axis, rng, run_op, close):
    x = sample(rng, shape, dtype)
    bias = sample(rng, (shape[axis],), dtype)
    X, B = exact(x.reshape(-1)), exact(bias)
    axis_n = axis % len(shape)
    expected = np.array(
        [X[flat] + B[index[axis_n]] for flat, index in enumerate(np.ndindex(*shape))]
    ).reshape(shape)
    close(run_op(BiasAddOp, x, bias, axis=axis), expected)


# ---- shape inference and verifiers ------------------------------------------------------------


@pytest.mark.parametrize(
    "op, types, result, attrs, message",
    [
        (MatmulOp, [tensor((2, 3, 4)), tensor((4, 5))], None, {}, "lhs must have rank 2, got tensor<2x3x4xf32>"),
        (MatmulOp, [tensor((8, 64)), tensor((32, 16))], None, {}, "contraction dims differ: lhs K=64, rhs K=32"),
        (
            MatmulOp,
            [tensor((8, 64)), tensor((16, 32))],
            None,
            {"transpose_b": True},
            "contraction dims differ: lhs K=64, rhs K=32",
        ),
        (MatmulOp, [tensor((4, 8)), tensor((4, 5))], None, {"transpose_a": True}, "result type tensor<4x8xf32> does not match the inferred type tensor<8x5xf32>"),
        (MatmulOp, [tensor((2, 3)), tensor((3, 2), f16)], None, {}, "operand element types differ: f32 vs f16"),
        (MatmulOp, [tensor((2, 3), i1), tensor((3, 2), i1)], None, {}, "must be numeric"),
        (BatchMatmulOp, [tensor((3,)), tensor((3, 2))], None, {}, "operands must have rank >= 2"),
        (BatchMatmulOp, [tensor((2, 3, 4)), tensor((3, 4, 5))], None, {}, "operands are not broadcast-compatible: 2 vs 3"),
        (Conv2DOp, [tensor((1, 4, 5, 5)), tensor((6, 2, 3, 3))], None, {"groups": 3}, "groups=3 must divide input channels 4 and output channels 6"),
        (Conv2DOp, [tensor((1, 4, 5, 5)), tensor((6, 3, 3, 3))], None, {}, "weight expects 3 input channels (3 x 1 groups), input has 4"),
        (Conv2DOp, [tensor((1, 1, 3, 3)), tensor((1, 1, 5, 5))], None, {}, "window of 5 does not fit an input of 3 padded to 3"),
        (Conv2DOp, [tensor((1, 1, 3, 3)), tensor((1, 1, 3, 3))], None, {"dilations": (2, 1)}, "window of 5 does not fit"),
        (Conv2DOp, [tensor((1, 1, 5, 5)), tensor((1, 1, 3, 3))], None, {"strides": (0, 1)}, "attribute 'strides' must be positive, got [0, 1]"),
        (Conv2DOp, [tensor((1, 1, 5, 5)), tensor((1, 1, 3, 3))], None, {"pads": (1, 1)}, "attribute 'pads' must have 4 values, got 2"),
        (Conv2DOp, [tensor((1, 1, 5, 5)), tensor((1, 1, 3, 3))], None, {"dilations": (1,)}, "attribute 'dilations' must have 2 values, got 1"),
        (Conv2DOp, [tensor((1, 1, 5, 5), i32), tensor((1, 1, 3, 3), i32)], None, {}, "input must have a float element type, got i32"),
        (Conv2DOp, [tensor((1, 5, 5)), tensor((1, 1, 3, 3))], None, {}, "input must have rank 4"),
        (MaxPool2DOp, [tensor((1, 1, 5, 5))], None, {"kernel": (2, 2), "pads": (2, 0, 0, 0)}, "pads [2, 0, 0, 0] must be smaller than the kernel [2, 2]"),
        (AvgPool2DOp, [tensor((1, 1, 5, 5))], None, {"kernel": (2,)}, "attribute 'kernel' must have 2 values, got 1"),
        (AvgPool2DOp, [tensor((1, 1, 5, 5))], None, {"kernel": (2, 2), "strides": (1, -1)}, "attribute 'strides' must be positive"),
        (MaxPool2DOp, [tensor((1, 1, 5, 5))], None, {"kernel": (2, 2)}, "does not match the inferred type tensor<1x1x4x4xf32>"),
        (MaxPool2DOp, [tensor((1, 1, 2, 2))], None, {"kernel": (3, 3)}, "window of 3 does not fit an input of 2 padded to 2"),
        (AvgPool2DOp, [tensor((1, 1, 5, 5), i32)], None, {"kernel": (2, 2)}, "input must have a float element type"),
        (GlobalAvgPoolOp, [tensor((2, 3))], None, {}, "input must have rank >= 3 (N, C, spatial...)"),
        (BiasAddOp, [tensor((2, 4, 3)), tensor((3,))], None, {"axis": 1}, "bias has 3 values, dim 1 of the input is 4"),
        (BiasAddOp, [tensor((2, 3)), tensor((1, 3))], None, {}, "bias must have rank 1"),
        (BiasAddOp, [tensor((2, 3)), tensor((3,))], None, {"axis": 2}, "axis 2 is out of range for rank 2"),
        (BiasAddOp, [tensor((2, 3)), tensor((3,), f16)], None, {}, "operand element types differ"),
    ],
)
def test_nn_verifier_messages(op, types, result, attrs, message, verify_message):
    assert message in verify_message(op, types, result, **attrs)


def test_pool_needs_a_kernel():
    block = Block(arg_types=[tensor((1, 1, 4, 4))])
    with pytest.raises(TypeError, match="needs attribute 'kernel'"):
        MaxPool2DOp.new(block.args[0])


def test_conv2d_infers_the_onnx_output_shape():
    block = Block(arg_types=[tensor((2, 6, 13, 11), f16), tensor((8, 3, 3, 5), f16)])
    op = Conv2DOp.new(*block.args, strides=(2, 3), pads=(1, 2, 0, 1), dilations=(2, 1), groups=2)
    # H: (13 + 1 + 0 - 2*2 - 1) // 2 + 1 = 5; W: (11 + 2 + 1 - 4 - 1) // 3 + 1 = 4
    assert op.result_types[0] == tensor((2, 8, 5, 4), f16)


def test_products_are_summed_exactly_then_rounded_once(run_op):
    """The reference's matmul and conv sums are correctly rounded f32 values, not
    whatever an f32 accumulation in the BLAS's order gives: large terms that
    cancel (1e8 + 1 - 1e8 ...) are summed as the exact value would be."""
    k = 4096
    rng = np.random.default_rng(3)
    a = rng.standard_normal((2, k)).astype(np.float32) * np.float32(1e4)
    b = rng.standard_normal((k, 3)).astype(np.float32)
    exact = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)
    assert np.array_equal(run_op(MatmulOp, a, b), exact)
    x = a.reshape(2, k, 1, 1)
    w = np.ascontiguousarray(b.T).reshape(3, k, 1, 1)
    assert np.array_equal(run_op(Conv2DOp, x, w).reshape(2, 3), exact)
