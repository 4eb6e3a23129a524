"""Reference semantics of ge.compare, ge.and / or / not, the bitwise ops, ge.mod, ge.sign, ge.floor /
ceil / round and the trigonometric ops against an independent computation:
Python's operators and `math` on each element, broadcasting by index arithmetic
(`broadcast_apply`). Each op runs through `op.evaluate` and the reference
interpreter (`run_op`). These ops also fold masks at import, so their dtype rules
are checked exactly: i1 results, integer Mod with the divisor's sign, halves to
even."""

from __future__ import annotations

import math

import numpy as np
import pytest
from xdsl.dialects.builtin import f32, i1, i32

from gecomp.core.diagnostics import CompileError
from gecomp.dialects.ge import (
    AcoshOp,
    AcosOp,
    AndOp,
    AsinhOp,
    AsinOp,
    AtanhOp,
    AtanOp,
    BitShiftOp,
    BitwiseAndOp,
    BitwiseNotOp,
    BitwiseOrOp,
    BitwiseXorOp,
    CeilOp,
    CompareOp,
    CoshOp,
    CosOp,
    FloorOp,
    ModOp,
    NotOp,
    OrOp,
    RoundOp,
    SignOp,
    SinhOp,
    SinOp,
    TanOp,
)
from test_ge_elementwise import BROADCAST_PAIRS, FLOATS, INTS, broadcast_apply, sample, tensor, widened

PREDICATES = {
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b,
}


@pytest.mark.parametrize("shapes", BROADCAST_PAIRS, ids=str)
@pytest.mark.parametrize("dtype", FLOATS + INTS + (np.uint8, np.bool_))
@pytest.mark.parametrize("predicate", PREDICATES)
def test_compare_broadcasts_to_i1(predicate, dtype, shapes, rng, run_op):
    a, b = (sample(rng, s, np.int64, 0, 3).astype(dtype) for s in shapes)  # ties are common
    got = run_op(CompareOp, a, b, predicate=predicate)
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, broadcast_apply(PREDICATES[predicate], a, b).astype(bool))


@pytest.mark.parametrize("predicate", PREDICATES)
def test_compare_nan_and_infinities(predicate, run_op):
    values = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0], dtype=np.float32)
    a, b = values.reshape(-1, 1), values
    expected = broadcast_apply(PREDICATES[predicate], widened(a), widened(b)).astype(bool)
    np.testing.assert_array_equal(run_op(CompareOp, a, b, predicate=predicate), expected)
    np.testing.assert_array_equal(run_op(CompareOp, a.astype(np.float16), b.astype(np.float16), predicate=predicate), expected)


@pytest.mark.parametrize("shapes", BROADCAST_PAIRS, ids=str)
@pytest.mark.parametrize("op,fn", [(AndOp, lambda a, b: a and b), (OrOp, lambda a, b: a or b)])
def test_logical_binary(op, fn, shapes, rng, run_op):
    a, b = (rng.integers(0, 2, s).astype(bool) for s in shapes)
    np.testing.assert_array_equal(run_op(op, a, b), broadcast_apply(fn, a, b).astype(bool))


def test_not(rng, run_op):
    m = rng.integers(0, 2, (3, 5)).astype(bool)
    np.testing.assert_array_equal(run_op(NotOp, m), broadcast_apply(lambda x: not x, m).astype(bool))


BITWISE = {
    BitwiseAndOp: lambda x, y: x & y,
    BitwiseOrOp: lambda x, y: x | y,
    BitwiseXorOp: lambda x, y: x ^ y,
}


@pytest.mark.parametrize("dtype", (np.uint8, np.uint16, np.int32, np.uint64))
@pytest.mark.parametrize("op_class", BITWISE, ids=lambda c: c.name)
def test_bitwise_logic(op_class, dtype, rng, run_op):
    a = sample(rng, (3, 1, 5), np.int64, 0, 250).astype(dtype)
    b = sample(rng, (4, 5), np.int64, 0, 250).astype(dtype)
    got = run_op(op_class, a, b)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, broadcast_apply(BITWISE[op_class], a, b).astype(dtype))
    np.testing.assert_array_equal(run_op(BitwiseNotOp, a), (~a.astype(np.int64)).astype(dtype))


@pytest.mark.parametrize("dtype", (np.uint8, np.uint32, np.uint64))
@pytest.mark.parametrize("direction", ["left", "right"])
def test_bit_shift_by_any_amount(direction, dtype, rng, run_op):
    """Python's shifts on each element, wrapped to the width; a shift by the width
    or more gives 0."""
    bits = np.dtype(dtype).itemsize * 8
    a = sample(rng, (2, 6), np.int64, 0, 255).astype(dtype)
    shift = np.array([0, 1, 3, bits - 1, bits, bits + 5], dtype)
    shifted = (lambda x, n: (x << n) % (1 << bits)) if direction == "left" else (lambda x, n: x >> n)
    want = broadcast_apply(shifted, a, shift)
    np.testing.assert_array_equal(run_op(BitShiftOp, a, shift, direction=direction), want.astype(dtype))


@pytest.mark.parametrize("dtype", INTS + (np.int8,))
@pytest.mark.parametrize("fmod", [False, True])
def test_integer_mod(dtype, fmod, rng, run_op):
    a = sample(rng, (4, 1, 6), dtype, -50, 50)
    b = rng.choice([-7, -2, -1, 1, 3, 8], (3, 6)).astype(dtype)
    python = (lambda x, y: int(math.fmod(x, y))) if fmod else (lambda x, y: x % y)
    got = run_op(ModOp, a, b, fmod=fmod)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, broadcast_apply(python, a, b).astype(dtype))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("fmod", [False, True])
def test_float_mod(dtype, fmod, rng, run_op, close):
    a = sample(rng, (5, 7), dtype, -20, 20)
    b = (sample(rng, (7,), dtype, 0.5, 4) * rng.choice([-1, 1], 7)).astype(dtype)
    python = math.fmod if fmod else (lambda x, y: x % y)
    close(run_op(ModOp, a, b, fmod=fmod), broadcast_apply(python, widened(a), widened(b)).astype(np.float64))


def test_integer_mod_by_zero_is_an_error(run_op):
    with pytest.raises(CompileError, match="integer modulo by zero"):
        run_op(ModOp, np.array([1, 2], np.int32), np.array([1, 0], np.int32))


@pytest.mark.parametrize("dtype", FLOATS + INTS + (np.int8,))
def test_sign(dtype, rng, run_op):
    x = sample(rng, (4, 9), dtype, -5, 5)
    x.flat[:2] = 0
    got = run_op(SignOp, x)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, broadcast_apply(lambda v: (v > 0) - (v < 0), widened(x)).astype(dtype))


def test_sign_keeps_nan(run_op):
    np.testing.assert_array_equal(run_op(SignOp, np.array([np.nan, -np.inf, -0.0], np.float32)), [np.nan, -1, 0])


ROUNDING = {FloorOp: math.floor, CeilOp: math.ceil, RoundOp: round}


@pytest.mark.parametrize("dtype", FLOATS + (np.float64,))
@pytest.mark.parametrize("op", ROUNDING)
def test_rounding(op, dtype, rng, run_op):
    x = np.concatenate([sample(rng, (20,), dtype, -9, 9), np.array([0.5, 1.5, 2.5, -0.5, -2.5, 7.0], dtype)])
    np.testing.assert_array_equal(run_op(op, x), broadcast_apply(ROUNDING[op], widened(x)).astype(dtype))


TRIGONOMETRIC = {
    SinOp: (math.sin, -7, 7), CosOp: (math.cos, -7, 7), TanOp: (math.tan, -1.5, 1.5),
    AsinOp: (math.asin, -1, 1), AcosOp: (math.acos, -1, 1), AtanOp: (math.atan, -9, 9),
    SinhOp: (math.sinh, -4, 4), CoshOp: (math.cosh, -4, 4), AsinhOp: (math.asinh, -9, 9),
    AcoshOp: (math.acosh, 1, 9), AtanhOp: (math.atanh, -0.99, 0.99),
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", TRIGONOMETRIC)
def test_trigonometric(op, dtype, rng, run_op, close):
    fn, low, high = TRIGONOMETRIC[op]
    x = sample(rng, (3, 11), dtype, low, high)
    close(run_op(op, x), broadcast_apply(fn, widened(x)).astype(np.float64))


@pytest.mark.parametrize(
    "op,types,result,attrs,message",
    [
        (CompareOp, [tensor([4], f32), tensor([4], i32)], [tensor([4], i1)], {"predicate": "eq"},
         "operand element types differ: f32 vs i32"),
        (CompareOp, [tensor([4], f32), tensor([4], f32)], [tensor([4], f32)], {"predicate": "lt"},
         "result type tensor<4xf32> does not match the inferred type tensor<4xi1>"),
        (CompareOp, [tensor([4], f32), tensor([4], f32)], [tensor([4], i1)], {"predicate": "<"},
         "attribute 'predicate' must be one of eq, ne, lt, le, gt, ge, got '<'"),
        (AndOp, [tensor([4], i1), tensor([4], f32)], [tensor([4], i1)], {}, "operand must have element type i1, got f32"),
        (OrOp, [tensor([2], i1), tensor([3], i1)], [tensor([3], i1)], {}, "operands are not broadcast-compatible: 2 vs 3"),
        (NotOp, [tensor([4], i32)], None, {}, "operand must have element type i1, got i32"),
        (ModOp, [tensor([4], i1), tensor([4], i1)], None, {}, "operand must be numeric, got i1"),
        (SignOp, [tensor([4], i1)], None, {}, "operand must be numeric, got i1"),
        (RoundOp, [tensor([4], i32)], None, {}, "operand must have a float element type, got i32"),
        (AcoshOp, [tensor([4], i32)], None, {}, "operand must have a float element type, got i32"),
    ],
)
def test_verifier_messages(op, types, result, attrs, message, verify_message):
    assert message in verify_message(op, types, result, **attrs)
