"""Reference semantics of the normalisation, softmax and reduction `ge` ops against
their defining formulas (evaluated in float64 with `math.fsum` over each group) and
the identities they must satisfy: softmax rows sum to 1 and ignore shifts,
log_softmax is log(softmax), layer_norm gives mean 0 / variance 1 before the
affine part, rms_norm gives mean square 1, reductions follow ONNX's axes/keepdims.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from xdsl.dialects.builtin import TensorType, f16, f32, i1, i32

from gecomp.dialects.ge import (
    BatchNormOp,
    LayerNormOp,
    LogSoftmaxOp,
    ReduceMaxOp,
    ReduceMeanOp,
    ReduceSumOp,
    RMSNormOp,
    SoftmaxOp,
)
from gecomp.simulator.compare import tolerance

DTYPES = (np.float32, np.float16)


def tensor(shape, element_type=f32):
    return TensorType(element_type, list(shape))


def normal(rng, shape, dtype, scale=1.0, offset=0.0):
    return (rng.standard_normal(shape) * scale + offset).astype(dtype)


def rows(x: np.ndarray, first_axis: int) -> np.ndarray:
    """float64 view of `x` as (groups, elements): dims [first_axis, rank) flattened."""
    axis = first_axis % x.ndim
    return x.astype(np.float64).reshape(math.prod(x.shape[:axis]), -1)


def fsum_mean(values) -> float:
    values = list(values)
    return math.fsum(values) / len(values)


# ---- batch_norm -----------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(2, 3), (1, 4, 3, 5), (2, 1, 2, 2, 1), (1, 1, 1, 1)], ids=str)
@pytest.mark.parametrize("epsilon", (1e-5, 1e-2))
@pytest.mark.parametrize("dtype", DTYPES)
def test_batch_norm_formula(dtype, epsilon, shape, rng, run_op, close):
    c = shape[1]
    x = normal(rng, shape, dtype, 2.0, 0.5)
    scale, bias, mean = (normal(rng, (c,), dtype) for _ in range(3))
    var = rng.uniform(0.1, 2.0, size=(c,)).astype(dtype)
    X = x.astype(np.float64)
    S, B, M, V = (p.astype(np.float64).tolist() for p in (scale, bias, mean, var))
    expected = np.zeros(shape)
    for index in np.ndindex(*shape):
        ch = index[1]
        expected[index] = (X[index] - M[ch]) / math.sqrt(V[ch] + epsilon) * S[ch] + B[ch]
    close(run_op(BatchNormOp, x, scale, bias, mean, var, epsilon=epsilon), expected)


# ---- layer_norm and rms_norm -------------------------------------------------------------------

TRAILING_CASES = [((2, 5), -1), ((3, 4, 6), -1), ((3, 4, 6), 1), ((2, 3), 0), ((1, 1, 7), -1), ((4, 1), -1)]


def layer_norm_rows(x, axis, epsilon) -> np.ndarray:
    out = []
    for row in rows(x, axis).tolist():
        mean = fsum_mean(row)
        var = fsum_mean((v - mean) ** 2 for v in row)
        out.append([(v - mean) / math.sqrt(var + epsilon) for v in row])
    return np.array(out).reshape(x.shape)


@pytest.mark.parametrize("shape, axis", TRAILING_CASES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES)
def test_layer_norm_formula(dtype, shape, axis, rng, run_op, close):
    x = normal(rng, shape, dtype, 3.0, 1.5)
    normalized = shape[axis % len(shape) :]
    scale, bias = normal(rng, normalized, dtype), normal(rng, normalized, dtype)
    y = run_op(LayerNormOp, x, scale, bias, axis=axis, epsilon=1e-5)
    close(y, layer_norm_rows(x, axis, 1e-5) * scale.astype(np.float64) + bias.astype(np.float64))


@pytest.mark.parametrize("shape, axis", [c for c in TRAILING_CASES if math.prod(c[0][c[1] % len(c[0]) :]) > 1], ids=str)
@pytest.mark.parametrize("dtype", DTYPES)
def test_layer_norm_without_affine_has_mean_0_and_variance_1(dtype, shape, axis, rng, run_op):
    x = normal(rng, shape, dtype, 3.0, 1.5)
    normalized = shape[axis % len(shape) :]
    ones, zeros = np.ones(normalized, dtype), np.zeros(normalized, dtype)
    y = rows(run_op(LayerNormOp, x, ones, zeros, axis=axis, epsilon=1e-9), axis)
    atol = 1e-5 if dtype == np.float32 else 2e-3
    np.testing.assert_allclose(y.mean(axis=1), 0.0, atol=atol)
    np.testing.assert_allclose(y.var(axis=1), 1.0, atol=10 * atol)


@pytest.mark.parametrize("shape, axis", TRAILING_CASES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES)
def test_rms_norm_formula_and_unit_mean_square(dtype, shape, axis, rng, run_op, close):
    x = normal(rng, shape, dtype, 2.0, 0.5)
    normalized = shape[axis % len(shape) :]
    scale = normal(rng, normalized, dtype)
    expected = []
    for row in rows(x, axis).tolist():
        rms = math.sqrt(fsum_mean(v * v for v in row) + 1e-6)
        expected.append([v / rms for v in row])
    expected = np.array(expected).reshape(shape)
    close(run_op(RMSNormOp, x, scale, axis=axis, epsilon=1e-6), expected * scale.astype(np.float64))
    unit = rows(run_op(RMSNormOp, x, np.ones(normalized, dtype), axis=axis, epsilon=1e-9), axis)
    np.testing.assert_allclose((unit * unit).mean(axis=1), 1.0, rtol=1e-5 if dtype == np.float32 else 5e-3)


# ---- softmax and log_softmax --------------------------------------------------------------------

SOFTMAX_CASES = [((3, 5), -1), ((3, 5), 0), ((2, 3, 4), 1), ((1, 7), -1), ((4, 1), -1), ((5,), 0)]


def softmax_loops(x: np.ndarray, axis: int) -> np.ndarray:
    """exp(x_i) / sum_j exp(x_j) along `axis`, in float64, shifted by the row max."""
    moved = np.moveaxis(x.astype(np.float64), axis, -1)
    out = np.zeros(moved.shape)
    for index in np.ndindex(*moved.shape[:-1]):
        row = moved[index].tolist()
        top = max(row)
        exps = [math.exp(v - top) for v in row]
        total = math.fsum(exps)
        out[index] = [e / total for e in exps]
    return np.moveaxis(out, -1, axis)


@pytest.mark.parametrize("shape, axis", SOFTMAX_CASES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES)
def test_softmax(dtype, shape, axis, rng, run_op, close):
    x = normal(rng, shape, dtype, 3.0)
    y = run_op(SoftmaxOp, x, axis=axis)
    close(y, softmax_loops(x, axis))
    atol, _ = tolerance(y.dtype)
    assert np.all(y >= 0)
    np.testing.assert_allclose(y.astype(np.float64).sum(axis=axis), 1.0, atol=atol * shape[axis])
    # Adding a constant along the softmax axis (a different one per row) changes nothing.
    shift_shape = list(shape)
    shift_shape[axis] = 1
    shifted = (x.astype(np.float32) + rng.uniform(-20, 20, size=shift_shape).astype(np.float32)).astype(dtype)
    if dtype == np.float32:
        close(run_op(SoftmaxOp, shifted, axis=axis), y)


@pytest.mark.parametrize("shape, axis", SOFTMAX_CASES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES)
def test_log_softmax_is_log_of_softmax(dtype, shape, axis, rng, run_op, close):
    x = normal(rng, shape, dtype, 3.0)
    y = run_op(LogSoftmaxOp, x, axis=axis)
    close(y, np.log(softmax_loops(x, axis)))
    # exp(log_softmax) sums to 1 along the axis.
    np.testing.assert_allclose(np.exp(y.astype(np.float64)).sum(axis=axis), 1.0, atol=tolerance(y.dtype)[0] * 10)


@pytest.mark.parametrize("dtype", DTYPES)
def test_softmax_of_large_values_does_not_overflow(dtype, run_op, close):
    x = np.array([[1000.0, 0.0, -1000.0], [10000.0, 10000.0, 10000.0]], np.float32)
    if dtype == np.float16:
        x = np.array([[60000.0, 0.0, -60000.0], [60000.0, 60000.0, 60000.0]], np.float16)
    close(run_op(SoftmaxOp, x), np.array([[1.0, 0.0, 0.0], [1 / 3, 1 / 3, 1 / 3]]))
    big = float(x[0, 0])
    close(run_op(LogSoftmaxOp, x), np.array([[0.0, -big, -2 * big], [-math.log(3)] * 3]))


# ---- reductions --------------------------------------------------------------------------------

REDUCERS = {
    ReduceSumOp: lambda values: math.fsum(values) if isinstance(values[0], float) else sum(values),
    ReduceMeanOp: lambda values: (
        math.fsum(values) / len(values) if isinstance(values[0], float) else math.trunc(sum(values) / len(values))
    ),
    ReduceMaxOp: max,
}

AXES_CASES = [((2, 3, 4), ()), ((2, 3, 4), (0,)), ((2, 3, 4), (-1,)), ((2, 3, 4), (0, 2)), ((2, 3, 4), (2, -3)),
              ((2, 3, 4), (0, 1, 2)), ((5,), (0,)), ((1, 7, 1), (1,)), ((3, 1), (1,))]


def reduce_loops(x: np.ndarray, axes, keepdims, reducer) -> np.ndarray:
    """Groups every element by its index outside `axes` (all axes when empty)."""
    rank = x.ndim
    reduced = {a % rank for a in axes} if axes else set(range(rank))
    values = x.astype(np.float64) if np.issubdtype(x.dtype, np.floating) else x
    groups: dict[tuple, list] = {}
    for index in np.ndindex(*x.shape):
        key = tuple(0 if k in reduced else i for k, i in enumerate(index))
        groups.setdefault(key, []).append(values[index].item())
    kept_shape = tuple(1 if k in reduced else d for k, d in enumerate(x.shape))
    out = np.zeros(kept_shape, dtype=np.float64 if values.dtype.kind == "f" else np.int64)
    for key, group in groups.items():
        out[key] = reducer(group)
    return out if keepdims else out.reshape([d for k, d in enumerate(x.shape) if k not in reduced])


@pytest.mark.parametrize("keepdims", (True, False))
@pytest.mark.parametrize("shape, axes", AXES_CASES, ids=str)
@pytest.mark.parametrize("dtype", (*DTYPES, np.int32))
@pytest.mark.parametrize("op", REDUCERS)
def test_reduce(op, dtype, shape, axes, keepdims, rng, run_op, close):
    if np.issubdtype(dtype, np.integer):
        x = rng.integers(-20, 20, size=shape).astype(dtype)
    else:
        x = normal(rng, shape, dtype, 2.0)
    y = run_op(op, x, axes=axes, keepdims=keepdims)
    close(y, reduce_loops(x, axes, keepdims, REDUCERS[op]))


def test_reduce_defaults_are_onnx_keepdims_and_all_axes(run_op):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = run_op(ReduceSumOp, x)
    assert y.shape == (1, 1) and y[0, 0] == 15.0


def test_integer_mean_truncates_towards_zero(run_op):
    x = np.array([[1, 2], [-1, -2], [3, 4]], np.int32)
    np.testing.assert_array_equal(run_op(ReduceMeanOp, x, axes=(1,), keepdims=False), [1, -1, 3])


# ---- verifiers ----------------------------------------------------------------------------------

P3 = tensor((3,))


@pytest.mark.parametrize(
    "op, types, result, attrs, message",
    [
        (BatchNormOp, [tensor((2, 3, 4)), tensor((4,)), P3, P3, P3], None, {}, "scale must have shape (3) to match the channels, got tensor<4xf32>"),
        (BatchNormOp, [tensor((2, 3)), P3, P3, P3, tensor((3, 1))], None, {}, "variance must have shape (3)"),
        (BatchNormOp, [tensor((3,)), P3, P3, P3, P3], None, {}, "input must have rank >= 2 (N, C, ...)"),
        (BatchNormOp, [tensor((2, 3)), P3, P3, P3, P3], None, {"epsilon": 0.0}, "epsilon must be positive, got 0.0"),
        (BatchNormOp, [tensor((2, 3), i32)] + [tensor((3,), i32)] * 4, None, {}, "input must have a float element type, got i32"),
        (BatchNormOp, [tensor((2, 3)), P3, tensor((3,), f16), P3, P3], None, {}, "operand element types differ"),
        (LayerNormOp, [tensor((3, 4, 5)), tensor((5,)), tensor((5,))], None, {"axis": 1}, "scale must have the normalized shape (4, 5), got tensor<5xf32>"),
        (LayerNormOp, [tensor((3, 4)), tensor((4,)), tensor((3,))], None, {}, "bias must have the normalized shape (4), got tensor<3xf32>"),
        (LayerNormOp, [tensor((3, 4)), tensor((4,)), tensor((4,))], None, {"axis": 2}, "axis 2 is out of range for rank 2"),
        (LayerNormOp, [tensor((3, 4)), tensor((4,)), tensor((4,))], None, {"epsilon": -1.0}, "epsilon must be positive"),
        (LayerNormOp, [tensor(()), tensor(()), tensor(())], None, {"axis": 0}, "axis 0 is out of range for rank 0"),
        (RMSNormOp, [tensor((3, 4)), tensor((3, 4))], None, {}, "scale must have the normalized shape (4), got tensor<3x4xf32>"),
        (RMSNormOp, [tensor((3, 4), i32), tensor((4,), i32)], None, {}, "input must have a float element type"),
        (SoftmaxOp, [tensor((3, 4))], None, {"axis": 2}, "axis 2 is out of range for rank 2"),
        (SoftmaxOp, [tensor((3, 4))], None, {"axis": -3}, "axis -3 is out of range for rank 2"),
        (SoftmaxOp, [tensor(())], None, {"axis": 0}, "axis 0 is out of range for rank 0"),
        (LogSoftmaxOp, [tensor((3, 4), i32)], None, {}, "input must have a float element type"),
        (LogSoftmaxOp, [tensor((3, 4))], [tensor((3, 4), f16)], {}, "does not match the inferred type tensor<3x4xf32>"),
        (ReduceSumOp, [tensor((2, 3, 4))], None, {"axes": (0, -3)}, "axes [0, -3] name a dimension twice"),
        (ReduceMeanOp, [tensor((2, 3, 4))], None, {"axes": (3,)}, "axis 3 is out of range for rank 3"),
        (ReduceMaxOp, [tensor((2, 3), i1)], None, {}, "operand must be numeric, got i1"),
        (ReduceSumOp, [tensor((2, 3))], [tensor((2, 1))], {"axes": (1,), "keepdims": False}, "does not match the inferred type tensor<2xf32>"),
        (ReduceMaxOp, [tensor((2, 3))], [tensor((2, 3))], {"axes": (1,)}, "does not match the inferred type tensor<2x1xf32>"),
    ],
)
def test_normalization_and_reduction_verifier_messages(op, types, result, attrs, message, verify_message):
    assert message in verify_message(op, types, result, **attrs)
