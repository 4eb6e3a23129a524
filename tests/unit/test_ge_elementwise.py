"""Reference semantics of the elementwise `ge` ops (binary arithmetic, unary math and
activations, cast, where) against an independent computation: Python's `math` on
each element, with broadcasting done by explicit index arithmetic rather than numpy.

Each op runs through `op.evaluate` and the reference interpreter (the `run_op`
fixture); fp16 results are compared with the fp32/fp64 reference rounded once.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from xdsl.dialects.builtin import TensorType, f16, f32, i1, i32
from xdsl.ir import Block
from xdsl.utils.exceptions import VerifyException

from gecomp.core.diagnostics import CompileError
from gecomp.dialects.ge import (
    AbsOp,
    AddOp,
    CastOp,
    DivOp,
    DropoutOp,
    ErfOp,
    ExpOp,
    GeluOp,
    IdentityOp,
    LeakyReluOp,
    LogOp,
    MaximumOp,
    MinimumOp,
    MulOp,
    NegOp,
    PowOp,
    ReciprocalOp,
    ReluOp,
    RsqrtOp,
    SigmoidOp,
    SiluOp,
    SqrtOp,
    SubOp,
    TanhOp,
    WhereOp,
)

FLOATS = (np.float32, np.float16)
INTS = (np.int32, np.int64)


def sample(rng, shape, dtype, low=-3.0, high=3.0) -> np.ndarray:
    """Uniform floats in [low, high) or integers in [low, high), in `dtype`."""
    if np.issubdtype(dtype, np.integer):
        return rng.integers(int(low), int(high), size=shape).astype(dtype)
    return rng.uniform(low, high, size=shape).astype(dtype)


def tensor(shape, element_type):
    return TensorType(element_type, list(shape))


def broadcast_shape(*shapes):
    """numpy's broadcasting rule, written out: align right, 1 stretches."""
    rank = max(len(s) for s in shapes)
    padded = [(1,) * (rank - len(s)) + tuple(s) for s in shapes]
    out = []
    for dims in zip(*padded):
        sizes = {d for d in dims if d != 1}
        assert len(sizes) <= 1, f"not broadcastable: {shapes}"
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def broadcast_apply(fn, *arrays) -> np.ndarray:
    """`fn` on Python scalars at every index of the broadcast shape (float64 / int)."""
    shape = broadcast_shape(*(a.shape for a in arrays))
    out = np.empty(shape, dtype=object)
    for index in itertools.product(*(range(d) for d in shape)):
        args = []
        for a in arrays:
            offset = len(shape) - a.ndim
            source = tuple(0 if a.shape[k] == 1 else index[offset + k] for k in range(a.ndim))
            args.append(a[source].item())
        out[index] = fn(*args)
    return out


def widened(a: np.ndarray) -> np.ndarray:
    """The exact float64 values of a float array (ints and bools unchanged)."""
    return a.astype(np.float64) if np.issubdtype(a.dtype, np.floating) else a


# ---- binary ops ---------------------------------------------------------------------------


def trunc_div(a, b):
    """Integer division rounding towards zero (C, ONNX), from magnitudes."""
    q = abs(a) // abs(b)
    return -q if (a < 0) != (b < 0) else q


BROADCAST_PAIRS = [
    ((3, 1, 5), (4, 1)),
    ((1,), (2, 3)),
    ((7,), (7,)),
    ((2, 1), (1, 3)),
    ((), (3,)),
    ((1, 1), (1, 1)),
]

BINARY = {
    AddOp: lambda a, b: a + b,
    SubOp: lambda a, b: a - b,
    MulOp: lambda a, b: a * b,
    MaximumOp: max,
    MinimumOp: min,
}


@pytest.mark.parametrize("shapes", BROADCAST_PAIRS, ids=str)
@pytest.mark.parametrize("dtype", FLOATS + INTS)
@pytest.mark.parametrize("op", BINARY)
def test_binary_arithmetic_broadcasts(op, dtype, shapes, rng, run_op, close):
    a, b = (sample(rng, s, dtype, -9, 9) for s in shapes)
    close(run_op(op, a, b), broadcast_apply(BINARY[op], widened(a), widened(b)))


@pytest.mark.parametrize("shapes", BROADCAST_PAIRS[:3], ids=str)
@pytest.mark.parametrize("dtype", FLOATS)
def test_float_div(dtype, shapes, rng, run_op, close):
    a = sample(rng, shapes[0], dtype)
    b = sample(rng, shapes[1], dtype, 0.25, 3.0) * rng.choice([-1, 1], size=shapes[1]).astype(dtype)
    close(run_op(DivOp, a, b), broadcast_apply(lambda x, y: x / y, widened(a), widened(b)))


@pytest.mark.parametrize("dtype", INTS)
def test_integer_div_truncates_towards_zero(dtype, rng, run_op, close):
    a = np.array([7, -7, 7, -7, 6, -6, 0, 1, -1, 5], dtype=dtype)
    b = np.array([2, 2, -2, -2, 3, 3, 5, 3, 3, -5], dtype=dtype)
    y = run_op(DivOp, a, b)
    np.testing.assert_array_equal(y, np.array([3, -3, -3, 3, 2, -2, 0, 0, 0, -1], dtype=dtype))
    x = sample(rng, (3, 1, 5), dtype, -50, 50)
    d = sample(rng, (4, 1), dtype, 1, 9) * rng.choice([-1, 1], size=(4, 1)).astype(dtype)
    close(run_op(DivOp, x, d), broadcast_apply(trunc_div, x, d))


def test_integer_div_by_zero_is_an_error(run_op):
    with pytest.raises(CompileError, match="'ge.div' op integer division by zero"):
        run_op(DivOp, np.array([1, 2], np.int32), np.array([1, 0], np.int32))


def test_float_div_by_zero_is_ieee(run_op):
    y = run_op(DivOp, np.array([1.0, -1.0, 0.0], np.float32), np.zeros(3, np.float32))
    assert y[0] == np.inf and y[1] == -np.inf and np.isnan(y[2])


@pytest.mark.parametrize("shapes", BROADCAST_PAIRS[:4], ids=str)
@pytest.mark.parametrize("dtype", FLOATS)
def test_float_pow(dtype, shapes, rng, run_op, close):
    base = sample(rng, shapes[0], dtype, 0.25, 2.5)
    exponent = sample(rng, shapes[1], dtype, -2.0, 2.0)
    close(run_op(PowOp, base, exponent), broadcast_apply(math.pow, widened(base), widened(exponent)))


def test_pow_negative_base_integer_exponent(run_op, close):
    base = np.array([-2.0, -1.5, -3.0, 0.0], np.float32)
    exponent = np.array([3.0, 2.0, -1.0, 2.0], np.float32)
    close(run_op(PowOp, base, exponent), [-8.0, 2.25, -1.0 / 3.0, 0.0])


@pytest.mark.parametrize("dtype", INTS)
def test_integer_pow(dtype, rng, run_op, close):
    base = sample(rng, (2, 5), dtype, -6, 6)
    exponent = sample(rng, (5,), dtype, 0, 4)
    close(run_op(PowOp, base, exponent), broadcast_apply(lambda x, y: x**y, base, exponent))
    with pytest.raises(CompileError, match="negative exponent"):
        run_op(PowOp, base, np.full((5,), -1, dtype))


# ---- unary ops ----------------------------------------------------------------------------

SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def gelu_erf(x):
    return 0.5 * x * (1.0 + math.erf(x / math.sqrt(2.0)))


def gelu_tanh(x):
    return 0.5 * x * (1.0 + math.tanh(SQRT_2_OVER_PI * (x + 0.044715 * x**3)))


def sigmoid(x):
    return 1.0 / (1.0 + math.exp(-x))


# op -> (scalar reference, input range, attributes)
FLOAT_UNARY = {
    "exp": (ExpOp, math.exp, (-4, 4), {}),
    "log": (LogOp, math.log, (0.05, 5), {}),
    "sqrt": (SqrtOp, math.sqrt, (0, 5), {}),
    "rsqrt": (RsqrtOp, lambda x: 1.0 / math.sqrt(x), (0.1, 5), {}),
    "tanh": (TanhOp, math.tanh, (-4, 4), {}),
    "sigmoid": (SigmoidOp, sigmoid, (-8, 8), {}),
    "silu": (SiluOp, lambda x: x * sigmoid(x), (-8, 8), {}),
    "erf": (ErfOp, math.erf, (-3, 3), {}),
    "gelu": (GeluOp, gelu_erf, (-5, 5), {}),
    "gelu_tanh": (GeluOp, gelu_tanh, (-5, 5), {"approximate": "tanh"}),
    "leaky_relu": (LeakyReluOp, lambda x: x if x >= 0 else 0.01 * x, (-3, 3), {}),
    "leaky_relu_0.2": (LeakyReluOp, lambda x: x if x >= 0 else 0.2 * x, (-3, 3), {"alpha": 0.2}),
}

NUMERIC_UNARY = {
    "neg": (NegOp, lambda x: -x, (-9, 9), {}),
    "abs": (AbsOp, abs, (-9, 9), {}),
    "relu": (ReluOp, lambda x: max(x, 0), (-9, 9), {}),
    "identity": (IdentityOp, lambda x: x, (-9, 9), {}),
    "dropout": (DropoutOp, lambda x: x, (-9, 9), {"ratio": 0.3}),
}

UNARY_SHAPES = [(1,), (3, 1, 5), (2, 7), (1, 1)]


@pytest.mark.parametrize("shape", UNARY_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", FLOAT_UNARY)
def test_float_unary(case, dtype, shape, rng, run_op, close):
    op, fn, (low, high), attrs = FLOAT_UNARY[case]
    x = sample(rng, shape, dtype, low, high)
    close(run_op(op, x, **attrs), broadcast_apply(fn, widened(x)))


@pytest.mark.parametrize("dtype", FLOATS + INTS)
@pytest.mark.parametrize("case", NUMERIC_UNARY)
def test_numeric_unary(case, dtype, rng, run_op, close):
    op, fn, (low, high), attrs = NUMERIC_UNARY[case]
    for shape in ((3, 1, 5), (1,)):
        x = sample(rng, shape, dtype, low, high)
        close(run_op(op, x, **attrs), broadcast_apply(fn, widened(x)))


def test_identity_accepts_every_element_type(rng, run_op):
    """ONNX Identity is defined for all tensor types, booleans included."""
    x = rng.random((3, 1, 5)) < 0.5
    np.testing.assert_array_equal(run_op(IdentityOp, x), x, strict=True)


def test_erf_matches_math_erf_closely(run_op):
    """The erf approximation is documented as ~1.2e-7 absolute: hold it to 1e-6
    over the whole range, tails included."""
    x = np.linspace(-6.0, 6.0, 2401).astype(np.float32)
    y = run_op(ErfOp, x).astype(np.float64)
    expected = np.array([math.erf(v) for v in x.astype(np.float64)])
    assert np.max(np.abs(y - expected)) < 1e-6
    assert np.all(np.sign(y) == np.sign(expected))


def test_gelu_default_is_the_exact_erf_form(run_op):
    """The erf and tanh forms differ by up to ~5e-4 near |x| = 2: the default must be
    the exact one (ONNX Gelu, approximate = "none")."""
    x = np.linspace(-4.0, 4.0, 801).astype(np.float32)
    y = run_op(GeluOp, x).astype(np.float64)
    exact = np.array([gelu_erf(v) for v in x.astype(np.float64)])
    approx = np.array([gelu_tanh(v) for v in x.astype(np.float64)])
    assert np.max(np.abs(exact - approx)) > 1e-4
    assert np.max(np.abs(y - exact)) < 1e-5


SPECIAL_VALUES = [
    (ExpOp, [-200.0, 0.0, 200.0], [0.0, 1.0, np.inf]),
    (LogOp, [0.0, 1.0, -1.0, np.inf], [-np.inf, 0.0, np.nan, np.inf]),
    (SqrtOp, [0.0, 4.0, -1.0], [0.0, 2.0, np.nan]),
    (RsqrtOp, [0.0, 4.0, np.inf], [np.inf, 0.5, 0.0]),
    (ReciprocalOp, [0.0, -4.0, np.inf], [np.inf, -0.25, 0.0]),
    (SigmoidOp, [-200.0, 0.0, 200.0], [0.0, 0.5, 1.0]),
    (TanhOp, [-50.0, 0.0, 50.0], [-1.0, 0.0, 1.0]),
    (ErfOp, [-10.0, 0.0, 10.0], [-1.0, 0.0, 1.0]),
    (GeluOp, [-20.0, 0.0, 20.0], [0.0, 0.0, 20.0]),
    (SiluOp, [-200.0, 0.0, 200.0], [0.0, 0.0, 200.0]),
    (ReluOp, [-np.inf, -1.0, np.inf], [0.0, 0.0, np.inf]),
]


@pytest.mark.parametrize("op, x, expected", SPECIAL_VALUES)
@pytest.mark.parametrize("dtype", FLOATS)
def test_unary_special_values(op, x, expected, dtype, run_op, close):
    x = np.array(x, dtype=dtype)
    close(run_op(op, x), np.array(expected))


@pytest.mark.parametrize("dtype", FLOATS)
def test_reciprocal(dtype, rng, run_op, close):
    x = sample(rng, (3, 1, 5), dtype, 0.2, 3.0) * rng.choice([-1, 1], size=(3, 1, 5)).astype(dtype)
    close(run_op(ReciprocalOp, x), broadcast_apply(lambda v: 1.0 / v, widened(x)))


# ---- cast ---------------------------------------------------------------------------------

CAST_CASES = [
    # source dtype, target element type, scalar reference
    (np.float32, i32, math.trunc),
    (np.float16, i32, math.trunc),
    (np.float32, i1, lambda v: v != 0),
    (np.int32, i1, lambda v: v != 0),
    (np.int64, i32, int),
    (np.int32, f32, float),
    (np.bool_, f32, float),
    (np.bool_, i32, int),
    (np.float32, f16, float),
    (np.float16, f32, float),
]


@pytest.mark.parametrize(
    "source, target, fn", CAST_CASES, ids=[f"{np.dtype(s).name}->{t}" for s, t, _ in CAST_CASES]
)
def test_cast(source, target, fn, rng, run_op, close):
    if source == np.bool_:
        x = rng.random((3, 1, 5)) < 0.5
    else:
        x = sample(rng, (3, 1, 5), source, -9, 9)
        x.flat[:3] = [0, 1, -1]
    y = run_op(CastOp, x, result_type=tensor(x.shape, target))
    close(y, broadcast_apply(fn, widened(x)))


def test_cast_float_to_int_truncates_and_to_i1_tests_non_zero(run_op):
    x = np.array([-2.7, -0.5, -0.0, 0.5, 2.7, 3.0, -3.0, np.nan], np.float32)
    as_int = run_op(CastOp, x[:-1], result_type=tensor((7,), i32))
    np.testing.assert_array_equal(as_int, np.array([-2, 0, 0, 0, 2, 3, -3], np.int32))
    as_bool = run_op(CastOp, x, result_type=tensor((8,), i1))
    np.testing.assert_array_equal(as_bool, [True, True, False, True, True, True, True, True])


def test_cast_to_f16_rounds_once_and_overflows_to_inf(run_op):
    x = np.array([1.0 / 3.0, 65504.0, 1e5, -1e5, 2.0**-24], np.float32)
    y = run_op(CastOp, x, result_type=tensor((5,), f16))
    assert y.dtype == np.float16
    assert float(y[0]) == 0.333251953125  # nearest fp16 to 1/3
    assert y[1] == 65504 and y[2] == np.inf and y[3] == -np.inf
    assert float(y[4]) == 2.0**-24  # smallest subnormal survives


# ---- where --------------------------------------------------------------------------------

WHERE_SHAPES = [
    ((3, 1), (1, 4), (4,)),
    ((5,), (5,), (1,)),
    ((2, 1, 3), (1,), (4, 1)),
    ((1,), (2, 2), (2, 2)),
]


@pytest.mark.parametrize("shapes", WHERE_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", (np.float32, np.float16, np.int32))
def test_where_broadcasts(dtype, shapes, rng, run_op, close):
    cond = rng.random(shapes[0]) < 0.5
    x, y = sample(rng, shapes[1], dtype, -9, 9), sample(rng, shapes[2], dtype, -9, 9)
    close(run_op(WhereOp, cond, x, y), broadcast_apply(lambda c, a, b: a if c else b, cond, widened(x), widened(y)))


# ---- verifiers ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "op, types, result, attrs, message",
    [
        (AddOp, [tensor((3,), f32), tensor((3,), i32)], None, {}, "operand element types differ: f32 vs i32"),
        (SubOp, [tensor((3,), f32), tensor((4,), f32)], None, {}, "operands are not broadcast-compatible: 3 vs 4"),
        (MulOp, [tensor((3,), i1), tensor((3,), i1)], None, {}, "operand must be numeric, got i1"),
        (
            AddOp,
            [tensor((2, 1), f32), tensor((3,), f32)],
            [tensor((3,), f32)],
            {},
            "result type tensor<3xf32> does not match the inferred type tensor<2x3xf32>",
        ),
        (MaximumOp, [tensor((2,), f32), tensor((2,), f32)], [tensor((2,), f16)], {}, "does not match the inferred type"),
        (ExpOp, [tensor((3,), i32)], None, {}, "operand must have a float element type, got i32"),
        (GeluOp, [tensor((3,), f32)], None, {"approximate": "fast"}, "attribute 'approximate' must be one of none, tanh"),
        (NegOp, [tensor((3,), i1)], None, {}, "operand must be numeric, got i1"),
        (DropoutOp, [tensor((3,), f32)], None, {"ratio": 1.0}, "ratio must be in [0, 1), got 1.0"),
        (CastOp, [tensor((3,), f32)], [tensor((4,), i32)], {}, "does not match the inferred type tensor<3xi32>"),
        (WhereOp, [tensor((3,), f32), tensor((3,), f32), tensor((3,), f32)], None, {}, "condition must have element type i1"),
        (WhereOp, [tensor((3,), i1), tensor((3,), f32), tensor((3,), i32)], [tensor((3,), f32)], {}, "value element types differ"),
        (WhereOp, [tensor((2,), i1), tensor((3,), f32), tensor((3,), f32)], [tensor((3,), f32)], {}, "not broadcast-compatible"),
    ],
)
def test_elementwise_verifier_messages(op, types, result, attrs, message, verify_message):
    assert message in verify_message(op, types, result, **attrs)


def test_cast_needs_a_result_type():
    block = Block(arg_types=[tensor((3,), f32)])
    with pytest.raises(VerifyException, match="ge.cast needs its result type"):
        CastOp.new(block.args[0])
