"""Elementwise ONNX ops: arithmetic (with Pow's mixed types), Max/Min over any
number of inputs, Mod, comparisons and logic (Xor, IsNaN and IsInf as
comparisons), unary math, rounding, trigonometry and activations, Cast, Where,
Identity, Dropout (inference), and Constant."""

from __future__ import annotations

import numpy as np

from ...core import dtypes
from ...dialects.ge import (
    BitShiftOp,
    BitwiseAndOp,
    BitwiseNotOp,
    BitwiseOrOp,
    BitwiseXorOp,
    AbsOp,
    AcoshOp,
    AcosOp,
    AddOp,
    AndOp,
    AsinhOp,
    AsinOp,
    AtanhOp,
    AtanOp,
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
    SigmoidOp,
    SqrtOp,
    SubOp,
    TanhOp,
    WhereOp,
)
from .. import ops
from ..onnx_model import TensorValue
from .context import Constant, NodeContext, ge_element_type
from .registry import converts

_BINARY = {
    "Add": AddOp,
    "Sub": SubOp,
    "Mul": MulOp,
    "Div": DivOp,
    "BitwiseAnd": BitwiseAndOp,
    "BitwiseOr": BitwiseOrOp,
    "BitwiseXor": BitwiseXorOp,
}
_UNARY = {
    "Neg": NegOp,
    "Abs": AbsOp,
    "Exp": ExpOp,
    "Log": LogOp,
    "Sqrt": SqrtOp,
    "Reciprocal": ReciprocalOp,
    "Tanh": TanhOp,
    "Sigmoid": SigmoidOp,
    "Relu": ReluOp,
    "Erf": ErfOp,
    "Identity": IdentityOp,
    "Not": NotOp,
    "BitwiseNot": BitwiseNotOp,
    "Sign": SignOp,
    "Floor": FloorOp,
    "Ceil": CeilOp,
    "Round": RoundOp,
    "Sin": SinOp,
    "Cos": CosOp,
    "Tan": TanOp,
    "Asin": AsinOp,
    "Acos": AcosOp,
    "Atan": AtanOp,
    "Sinh": SinhOp,
    "Cosh": CoshOp,
    "Asinh": AsinhOp,
    "Acosh": AcoshOp,
    "Atanh": AtanhOp,
}
_COMPARISONS = {
    "Equal": "eq",
    "Less": "lt",
    "LessOrEqual": "le",
    "Greater": "gt",
    "GreaterOrEqual": "ge",
    "Xor": "ne",  # on i1: a xor b is a != b
}
_LOGICAL = {"And": AndOp, "Or": OrOp}


@converts(*_BINARY)
def binary(c: NodeContext):
    return c.g.op(_BINARY[c.node.op_type], c.input(0), c.input(1))


@converts(*_COMPARISONS)
def compare(c: NodeContext):
    return c.g.op(CompareOp, c.input(0, "A"), c.input(1, "B"), predicate=_COMPARISONS[c.node.op_type])


@converts(*_LOGICAL)
def logical(c: NodeContext):
    return c.g.op(_LOGICAL[c.node.op_type], c.input(0, "A"), c.input(1, "B"))


@converts("BitShift")
def bit_shift(c: NodeContext):
    direction = c.string("direction")
    if direction not in ("LEFT", "RIGHT"):
        raise c.fail(f"attribute 'direction' must be LEFT or RIGHT, got '{direction}'")
    return c.g.op(BitShiftOp, c.input(0, "X"), c.input(1, "Y"), direction=direction.lower())


@converts("Mod")
def mod(c: NodeContext):
    """fmod = 0 (the default) takes the divisor's sign, fmod = 1 the dividend's."""
    fmod = c.int("fmod", 0)
    if fmod not in (0, 1):
        raise c.fail(f"attribute 'fmod' must be 0 or 1, got {fmod}")
    return c.g.op(ModOp, c.input(0, "A"), c.input(1, "B"), fmod=bool(fmod))


@converts("IsNaN")
def is_nan(c: NodeContext):
    """x != x: true exactly for NaN."""
    x = c.input(0, "X")
    return c.g.op(CompareOp, x, x, predicate="ne")


@converts("IsInf")
def is_inf(c: NodeContext):
    """x > the largest finite value (+inf), x < its negation (-inf), or |x| above it
    (both): comparisons with a finite bound, false for NaN as ONNX's."""
    x = c.input(0, "X")
    positive, negative = bool(c.int("detect_positive", 1)), bool(c.int("detect_negative", 1))
    if not dtypes.is_float(x.dtype):
        raise c.fail(f"input 'X' must be a float tensor, got {x.dtype}")
    largest = float(dtypes.float_info(x.dtype).max)

    def bound(value: float):
        return c.g.const(np.array(value, dtype=dtypes.to_numpy_dtype(x.dtype)))

    if positive and negative:
        return c.g.op(CompareOp, c.g.op(AbsOp, x), bound(largest), predicate="gt")
    if positive:
        return c.g.op(CompareOp, x, bound(largest), predicate="gt")
    if negative:
        return c.g.op(CompareOp, x, bound(-largest), predicate="lt")
    return Constant(np.zeros(x.shape, dtype=np.bool_))


@converts("Pow")
def power(c: NodeContext):
    """ONNX lets base and exponent differ in type; the result has the base's."""
    x, y = c.input(0, "X"), c.input(1, "Y")
    if x.dtype == y.dtype:
        return c.g.op(PowOp, x, y)
    if dtypes.is_float(x.dtype) or not dtypes.is_float(y.dtype):
        return c.g.op(PowOp, x, ops.cast(y, x.dtype))
    # Integer base, float exponent: compute in the exponent's type, truncate back.
    return ops.cast(c.g.op(PowOp, ops.cast(x, y.dtype), y), x.dtype)


@converts("Max", "Min")
def extremum(c: NodeContext):
    """Variadic: folded pairwise, numpy broadcasting throughout."""
    tensors = c.inputs()
    if not tensors:
        raise c.fail("needs at least one input")
    if len(tensors) == 1:
        return c.g.op(IdentityOp, tensors[0])
    op_class = MaximumOp if c.node.op_type == "Max" else MinimumOp
    result = tensors[0]
    for t in tensors[1:]:
        result = c.g.op(op_class, result, t)
    return result


@converts(*_UNARY)
def unary(c: NodeContext):
    return c.g.op(_UNARY[c.node.op_type], c.input(0))


@converts("LeakyRelu")
def leaky_relu(c: NodeContext):
    return c.g.op(LeakyReluOp, c.input(0), alpha=c.float("alpha", 0.01))


@converts("Gelu")
def gelu(c: NodeContext):
    return c.g.op(GeluOp, c.input(0), approximate=c.string("approximate", "none"))


@converts("Cast")
def cast(c: NodeContext):
    target = ge_element_type(c.int("to"), "attribute 'to'", c.unsupported)
    return _cast(c, c.input(0), target)


@converts("CastLike")
def cast_like(c: NodeContext):
    """Cast to the element type of the second input (whose values are not read)."""
    return _cast(c, c.input(0, "input"), c.input(1, "target_type").dtype)


def _cast(c: NodeContext, x, target):
    """`ge.cast` with ONNX's `saturate` (opset 19+, float8 results) and `round_mode`
    (opset 24+, f8E8M0FNU results)."""
    saturate = bool(c.int("saturate", 1)) if c.opset >= 19 else True
    round_mode = c.string("round_mode", "up") if c.opset >= 24 else "up"
    if round_mode not in ("up", "down", "nearest"):
        raise c.fail(f"attribute 'round_mode' must be up, down or nearest, got '{round_mode}'")
    attrs = {}
    if dtypes.is_float8(target):
        attrs["saturate"] = saturate
    if target == dtypes.f8E8M0FNU:
        attrs["round_mode"] = round_mode
    return ops.cast(x, target, **attrs)


@converts("Where")
def where(c: NodeContext):
    return c.g.op(WhereOp, c.input(0, "condition"), c.input(1, "X"), c.input(2, "Y"))


@converts("Dropout", static=(1, 2))
def dropout(c: NodeContext):
    """Inference: the identity (the mask, if asked for, is all true). Training mode
    draws random numbers and is refused, unless the ratio is 0 (nothing dropped)."""
    x = c.input(0, "data")
    c.ignore("seed", "is_test")
    if c.opset >= 12:
        ratio = c.constant(1, "ratio")
        training = c.constant(2, "training_mode")
        ratio = 0.5 if ratio is None else float(ratio.reshape(-1)[0])
        if training is not None and bool(training.reshape(-1)[0]) and ratio != 0.0:
            raise c.unsupported(
                "training mode is not supported: it drops a random part of the input (gecomp compiles inference graphs)"
            )
    else:
        ratio = c.float("ratio", 0.5)
    y = c.g.op(DropoutOp, x, ratio=ratio)
    if not c.output_used(1):
        return [y]
    return [y, Constant(np.ones(x.shape, dtype=np.bool_))]


@converts("Constant")
def constant(c: NodeContext):
    """The value, kept at import time; it becomes a `ge.const` where used."""
    present = [name for name in c.node.attributes]
    if len(present) != 1:
        raise c.fail(f"needs exactly one value attribute, got {len(present)}")
    (name,) = present
    if name == "value":
        return _tensor_constant(c, c.tensor("value"))
    readers = {
        "value_float": lambda: np.array(c.float(name), dtype=np.float32),
        "value_floats": lambda: np.array(c.floats(name), dtype=np.float32),
        "value_int": lambda: np.array(c.int(name), dtype=np.int64),
        "value_ints": lambda: np.array(c.ints(name), dtype=np.int64),
    }
    if name not in readers:
        raise c.unsupported(f"attribute '{name}' is not supported (only numeric tensors)")
    return Constant(readers[name]())


def _tensor_constant(c: NodeContext, value: TensorValue) -> Constant:
    ge_element_type(value.elem_type, "attribute 'value'", c.unsupported)
    return Constant(value.array, value.name, value.elem_type)
