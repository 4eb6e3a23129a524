"""Elementwise ops: binary arithmetic with numpy broadcasting, unary math and
activations, comparisons and logic on i1 masks, rounding, trigonometry, cast,
where. ONNX semantics throughout (Div on integers truncates towards zero, Mod
takes the divisor's sign unless `fmod`, Round is half to even, Gelu's default is
the exact erf form). These are also what the importer folds static subgraphs
(attention masks, position ids, rotary tables) with, so `compute` follows ONNX's
reference to the dtype."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute
from xdsl.irdl import irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import Commutative, Pure

from ...core import conversion, dtypes, numeric
from .canonicalization import Canonicalize
from .base import (
    EvaluationError,
    GEOp,
    Kind,
    attr,
    broadcast_shapes,
    fail,
    like,
    require_float,
    require_numeric,
    same_element_type,
    shape_of,
)

# ---- binary ---------------------------------------------------------------------------


class BinaryOp(GEOp):
    """`lhs op rhs` with numpy broadcasting; both operands of one element type."""

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), Canonicalize())


    @classmethod
    def infer(cls, types, a, declared):
        lhs, rhs = types
        element_type = same_element_type(types)
        require_numeric(lhs)
        return like(lhs, broadcast_shapes(shape_of(lhs), shape_of(rhs)), element_type)

    @classmethod
    def compute(cls, inputs, a, result_types):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return cls.FN(*inputs)


def _divide(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if np.issubdtype(x.dtype, np.integer):
        if np.any(y == 0):
            raise EvaluationError("integer division by zero")
        quotient = np.floor_divide(x, y)
        # ONNX (like C) truncates towards zero; numpy floors.
        return quotient + ((np.remainder(x, y) != 0) & ((x < 0) != (y < 0)))
    return np.divide(x, y)


def _power(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if np.issubdtype(y.dtype, np.integer) and np.any(y < 0):
        raise EvaluationError("integer power with a negative exponent")
    return np.power(x, y)


def _modulo(x: np.ndarray, y: np.ndarray, c_semantics: bool) -> np.ndarray:
    if np.issubdtype(x.dtype, np.integer) and np.any(y == 0):
        raise EvaluationError("integer modulo by zero")
    return np.fmod(x, y) if c_semantics else np.mod(x, y)


@irdl_op_definition
class AddOp(BinaryOp):
    name = "ge.add"
    FN = staticmethod(np.add)
    traits = traits_def(Pure(), Commutative(), Canonicalize())


@irdl_op_definition
class SubOp(BinaryOp):
    name = "ge.sub"
    FN = staticmethod(np.subtract)


@irdl_op_definition
class MulOp(BinaryOp):
    name = "ge.mul"
    FN = staticmethod(np.multiply)
    traits = traits_def(Pure(), Commutative(), Canonicalize())


@irdl_op_definition
class DivOp(BinaryOp):
    name = "ge.div"
    FN = staticmethod(_divide)


@irdl_op_definition
class PowOp(BinaryOp):
    name = "ge.pow"
    FN = staticmethod(_power)


@irdl_op_definition
class MaximumOp(BinaryOp):
    name = "ge.maximum"
    FN = staticmethod(np.maximum)
    traits = traits_def(Pure(), Commutative(), Canonicalize())


@irdl_op_definition
class MinimumOp(BinaryOp):
    name = "ge.minimum"
    FN = staticmethod(np.minimum)
    traits = traits_def(Pure(), Commutative(), Canonicalize())


@irdl_op_definition
class ModOp(BinaryOp):
    """The remainder of `lhs / rhs` (ONNX Mod). By default it has the divisor's sign
    (Python's `%`, numpy's `mod`); `fmod = true` gives C's `fmod`, with the
    dividend's sign (what ONNX requires for floats). Integer modulo by zero is an
    evaluation error, as integer division is."""

    name = "ge.mod"
    fmod = attr(Kind.BOOL, False)

    @classmethod
    def compute(cls, inputs, a, result_types):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return _modulo(*inputs, a.fmod)


# ---- comparisons and logic --------------------------------------------------------------

COMPARISONS: dict[str, np.ufunc] = {
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
}
"""The predicates of `ge.compare` (the npu dialect's `vcmp` takes the same names)."""


def require_bool(t: TensorType, what: str = "operand") -> None:
    if not dtypes.is_bool(t.element_type):
        raise fail(f"{what} must have element type i1, got {t.element_type}")


@irdl_op_definition
class CompareOp(GEOp):
    """`lhs <predicate> rhs` per element, an i1 tensor (ONNX Equal, Less, Greater,
    LessOrEqual, GreaterOrEqual; one op with a predicate, as MLIR's `arith.cmpf`).
    Both operands have one element type (i1 included: false < true) and broadcast
    as numpy's; floats compare as IEEE does (NaN is unequal to everything)."""

    name = "ge.compare"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), Canonicalize())
    predicate = attr(Kind.STR, choices=tuple(COMPARISONS))

    @classmethod
    def infer(cls, types, a, declared):
        lhs, rhs = types
        same_element_type(types)
        return like(lhs, broadcast_shapes(shape_of(lhs), shape_of(rhs)), dtypes.i1)

    @classmethod
    def compute(cls, inputs, a, result_types):
        return COMPARISONS[a.predicate](*inputs)


class LogicalBinaryOp(GEOp):
    """`lhs op rhs` on i1 tensors with numpy broadcasting."""

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), Commutative(), Canonicalize())

    @classmethod
    def infer(cls, types, a, declared):
        lhs, rhs = types
        for t in types:
            require_bool(t)
        return like(lhs, broadcast_shapes(shape_of(lhs), shape_of(rhs)))

    @classmethod
    def compute(cls, inputs, a, result_types):
        return cls.FN(*inputs)


@irdl_op_definition
class AndOp(LogicalBinaryOp):
    """Logical and of two masks (ONNX And)."""

    name = "ge.and"
    FN = staticmethod(np.logical_and)


@irdl_op_definition
class OrOp(LogicalBinaryOp):
    """Logical or of two masks (ONNX Or)."""

    name = "ge.or"
    FN = staticmethod(np.logical_or)


# ---- unary ----------------------------------------------------------------------------


class UnaryOp(GEOp):
    """`op x` on any numeric tensor, shape and element type unchanged."""

    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), Canonicalize())

    @classmethod
    def infer(cls, types, a, declared):
        (x,) = types
        require_numeric(x)
        return like(x)

    @classmethod
    def compute(cls, inputs, a, result_types):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return cls.FN(inputs[0])


class FloatUnaryOp(UnaryOp):
    """`op x` on a float tensor (transcendental functions, float activations)."""

    @classmethod
    def infer(cls, types, a, declared):
        require_float(types[0])
        return super().infer(types, a, declared)


def _rsqrt(x):
    return 1.0 / np.sqrt(x)


def _reciprocal(x):
    return 1.0 / x


def _relu(x):
    return np.maximum(x, 0)


def _silu(x):
    return x * numeric.sigmoid(x)


def _identity(x):
    return x


@irdl_op_definition
class NegOp(UnaryOp):
    """`-x`."""

    name = "ge.neg"
    FN = staticmethod(np.negative)


@irdl_op_definition
class AbsOp(UnaryOp):
    """`|x|`."""

    name = "ge.abs"
    FN = staticmethod(np.abs)


@irdl_op_definition
class ExpOp(FloatUnaryOp):
    """`e^x`."""

    name = "ge.exp"
    FN = staticmethod(np.exp)


@irdl_op_definition
class LogOp(FloatUnaryOp):
    """Natural logarithm."""

    name = "ge.log"
    FN = staticmethod(np.log)


@irdl_op_definition
class SqrtOp(FloatUnaryOp):
    """Square root."""

    name = "ge.sqrt"
    FN = staticmethod(np.sqrt)


@irdl_op_definition
class RsqrtOp(FloatUnaryOp):
    """`1 / sqrt(x)`."""

    name = "ge.rsqrt"
    FN = staticmethod(_rsqrt)


@irdl_op_definition
class ReciprocalOp(FloatUnaryOp):
    """`1 / x`."""

    name = "ge.reciprocal"
    FN = staticmethod(_reciprocal)


@irdl_op_definition
class TanhOp(FloatUnaryOp):
    """Hyperbolic tangent."""

    name = "ge.tanh"
    FN = staticmethod(np.tanh)


@irdl_op_definition
class SigmoidOp(FloatUnaryOp):
    """`1 / (1 + e^-x)`."""

    name = "ge.sigmoid"
    FN = staticmethod(numeric.sigmoid)


@irdl_op_definition
class ReluOp(UnaryOp):
    """`max(x, 0)`."""

    name = "ge.relu"
    FN = staticmethod(_relu)


@irdl_op_definition
class SiluOp(FloatUnaryOp):
    """`x * sigmoid(x)` (swish)."""

    name = "ge.silu"
    FN = staticmethod(_silu)


@irdl_op_definition
class ErfOp(FloatUnaryOp):
    """The error function."""

    name = "ge.erf"
    FN = staticmethod(numeric.erf)


@irdl_op_definition
class NotOp(UnaryOp):
    """Logical negation of a mask (ONNX Not)."""

    name = "ge.not"
    FN = staticmethod(np.logical_not)

    @classmethod
    def infer(cls, types, a, declared):
        require_bool(types[0])
        return like(types[0])


# ---- bitwise ----------------------------------------------------------------------------


def require_integer(t: TensorType, what: str = "operand") -> None:
    if not dtypes.is_integer(t.element_type):
        raise fail(f"{what} must have an integer element type, got {t.element_type}")


class BitwiseBinaryOp(BinaryOp):
    """`lhs op rhs` bit by bit on integers of one type, numpy broadcasting."""

    @classmethod
    def infer(cls, types, a, declared):
        for t in types:
            require_integer(t)
        return super().infer(types, a, declared)


class BitwiseLogicOp(BitwiseBinaryOp):
    """A commutative bit operation."""

    traits = traits_def(Pure(), Commutative(), Canonicalize())


@irdl_op_definition
class BitwiseAndOp(BitwiseLogicOp):
    """Bitwise and (ONNX BitwiseAnd)."""

    name = "ge.bitwise_and"
    FN = staticmethod(np.bitwise_and)


@irdl_op_definition
class BitwiseOrOp(BitwiseLogicOp):
    """Bitwise or (ONNX BitwiseOr)."""

    name = "ge.bitwise_or"
    FN = staticmethod(np.bitwise_or)


@irdl_op_definition
class BitwiseXorOp(BitwiseLogicOp):
    """Bitwise exclusive or (ONNX BitwiseXor)."""

    name = "ge.bitwise_xor"
    FN = staticmethod(np.bitwise_xor)


@irdl_op_definition
class BitShiftOp(BitwiseBinaryOp):
    """`lhs` shifted by `rhs` bits, `direction` left or right (ONNX BitShift, on
    unsigned types; a signed right shift is arithmetic). A shift by the width or
    more gives 0 (-1 for a negative value shifted right): numpy's rule, which
    the NPU's instructions share."""

    name = "ge.bit_shift"
    direction = attr(Kind.STR, "left", choices=("left", "right"))

    @classmethod
    def compute(cls, inputs, a, result_types):
        return (np.left_shift if a.direction == "left" else np.right_shift)(*inputs)


@irdl_op_definition
class BitwiseNotOp(UnaryOp):
    """Bitwise complement (ONNX BitwiseNot)."""

    name = "ge.bitwise_not"
    FN = staticmethod(np.invert)

    @classmethod
    def infer(cls, types, a, declared):
        require_integer(types[0])
        return like(types[0])


@irdl_op_definition
class SignOp(UnaryOp):
    """-1, 0 or 1 by the sign of x (NaN stays NaN), in x's element type."""

    name = "ge.sign"
    FN = staticmethod(np.sign)


@irdl_op_definition
class FloorOp(FloatUnaryOp):
    """The largest integer not above x."""

    name = "ge.floor"
    FN = staticmethod(np.floor)


@irdl_op_definition
class CeilOp(FloatUnaryOp):
    """The smallest integer not below x."""

    name = "ge.ceil"
    FN = staticmethod(np.ceil)


@irdl_op_definition
class RoundOp(FloatUnaryOp):
    """The nearest integer, halves to even (ONNX Round: 2.5 -> 2, -1.5 -> -2)."""

    name = "ge.round"
    FN = staticmethod(np.round)


def _trigonometric(class_name: str, function: np.ufunc, what: str) -> type[FloatUnaryOp]:
    """A float unary op `ge.<numpy name>` computing `function` (ONNX's op of the
    same name, whose reference is that numpy function)."""
    namespace = {
        "name": f"ge.{function.__name__.replace('arc', 'a')}",
        "FN": staticmethod(function),
        "__doc__": what,
        "__module__": __name__,
        "__qualname__": class_name,
    }
    return irdl_op_definition(type(class_name, (FloatUnaryOp,), namespace))


SinOp = _trigonometric("SinOp", np.sin, "Sine (radians).")
CosOp = _trigonometric("CosOp", np.cos, "Cosine (radians).")
TanOp = _trigonometric("TanOp", np.tan, "Tangent (radians).")
AsinOp = _trigonometric("AsinOp", np.arcsin, "Arcsine, in [-pi/2, pi/2]; NaN outside [-1, 1].")
AcosOp = _trigonometric("AcosOp", np.arccos, "Arccosine, in [0, pi]; NaN outside [-1, 1].")
AtanOp = _trigonometric("AtanOp", np.arctan, "Arctangent, in (-pi/2, pi/2).")
SinhOp = _trigonometric("SinhOp", np.sinh, "Hyperbolic sine.")
CoshOp = _trigonometric("CoshOp", np.cosh, "Hyperbolic cosine.")
AsinhOp = _trigonometric("AsinhOp", np.arcsinh, "Inverse hyperbolic sine.")
AcoshOp = _trigonometric("AcoshOp", np.arccosh, "Inverse hyperbolic cosine; NaN below 1.")
AtanhOp = _trigonometric("AtanhOp", np.arctanh, "Inverse hyperbolic tangent; +-inf at +-1, NaN beyond.")
TRIGONOMETRIC_OPS = (SinOp, CosOp, TanOp, AsinOp, AcosOp, AtanOp, SinhOp, CoshOp, AsinhOp, AcoshOp, AtanhOp)


@irdl_op_definition
class IdentityOp(UnaryOp):
    """Returns its input (ONNX Identity: any element type, i1 included)."""

    name = "ge.identity"
    FN = staticmethod(_identity)

    @classmethod
    def infer(cls, types, a, declared):
        return like(types[0])


@irdl_op_definition
class GeluOp(FloatUnaryOp):
    """Gaussian error linear unit; `approximate = "tanh"` is the tanh form."""

    name = "ge.gelu"
    approximate = attr(Kind.STR, "none", choices=("none", "tanh"))

    @classmethod
    def compute(cls, inputs, a, result_types):
        return numeric.gelu(inputs[0], a.approximate)


@irdl_op_definition
class LeakyReluOp(FloatUnaryOp):
    """`x if x >= 0 else alpha * x`."""

    name = "ge.leaky_relu"
    alpha = attr(Kind.FLOAT, 0.01)

    @classmethod
    def compute(cls, inputs, a, result_types):
        x = inputs[0]
        return np.where(x >= 0, x, a.alpha * x)


@irdl_op_definition
class DropoutOp(UnaryOp):
    """Dropout at inference: the identity. `ratio` is kept for fusion patterns."""

    name = "ge.dropout"
    ratio = attr(Kind.FLOAT, 0.5)

    @classmethod
    def infer(cls, types, a, declared):
        if not 0.0 <= a.ratio < 1.0:
            raise fail(f"ratio must be in [0, 1), got {a.ratio}")
        return super().infer(types, a, declared)

    @classmethod
    def compute(cls, inputs, a, result_types):
        return inputs[0]


@irdl_op_definition
class CastOp(UnaryOp):
    """Converts the element type to the result's, as ONNX Cast does
    (`core/conversion.py`): float to integer truncates towards zero and wraps,
    anything to i1 tests for non-zero, floats round to nearest even.
    `saturate` (ONNX's, default true) clamps out-of-range values, infinities
    included, to the largest finite of a float8 result; `round_mode` (`up`,
    `down`, `nearest`) picks the power of two of an f8E8M0FNU result. Both are
    ignored for other result types."""

    name = "ge.cast"
    saturate = attr(Kind.BOOL, True)
    round_mode = attr(Kind.STR, "up", choices=("up", "down", "nearest"))

    E8M0_ROUNDING: ClassVar[dict[str, str]] = {"up": "ceil", "down": "floor", "nearest": "rint"}

    @classmethod
    def infer(cls, types, a, declared):
        (x,) = types
        if declared is None:
            raise fail("ge.cast needs its result type")
        return like(x, element_type=declared[0].element_type)

    @classmethod
    def conversion(cls, a, source: Attribute, target: Attribute) -> tuple[str, bool]:
        """(rounding, saturate) of `core.conversion.convert` for this cast from
        element type `source` to `target`: what the NPU's vcast is told too."""
        if target == dtypes.f8E8M0FNU:
            return cls.E8M0_ROUNDING[a.round_mode], a.saturate
        if dtypes.is_integer(target) and dtypes.is_float(source):
            return "trunc", False
        return "rint", a.saturate and dtypes.is_float8(target)

    @classmethod
    def compute(cls, inputs, a, result_types):
        x = inputs[0]
        source = dtypes.from_numpy_dtype(x.dtype)
        target = result_types[0].element_type
        rounding, saturate = cls.conversion(a, source, target)
        return conversion.convert(x, dtypes.to_numpy_dtype(target), rounding, saturate)


# ---- where ----------------------------------------------------------------------------


@irdl_op_definition
class WhereOp(GEOp):
    """`condition ? x : y`, the three broadcast together."""

    name = "ge.where"
    condition = operand_def(TensorType)
    x = operand_def(TensorType)
    y = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), Canonicalize())

    @classmethod
    def infer(cls, types, a, declared):
        cond, x, y = types
        if not dtypes.is_bool(cond.element_type):
            raise fail(f"condition must have element type i1, got {cond.element_type}")
        element_type = same_element_type([x, y], "value")
        return like(x, broadcast_shapes(*(shape_of(t) for t in types)), element_type)

    @classmethod
    def compute(cls, inputs, a, result_types):
        cond, x, y = inputs
        return np.where(cond, x, y)


ELEMENTWISE_OPS: Sequence[type[GEOp]] = (
    AddOp,
    SubOp,
    MulOp,
    DivOp,
    PowOp,
    MaximumOp,
    MinimumOp,
    ModOp,
    CompareOp,
    AndOp,
    OrOp,
    NotOp,
    BitwiseAndOp,
    BitwiseOrOp,
    BitwiseXorOp,
    BitwiseNotOp,
    BitShiftOp,
    NegOp,
    AbsOp,
    ExpOp,
    LogOp,
    SqrtOp,
    RsqrtOp,
    ReciprocalOp,
    TanhOp,
    SigmoidOp,
    ReluOp,
    LeakyReluOp,
    GeluOp,
    SiluOp,
    ErfOp,
    SignOp,
    FloorOp,
    CeilOp,
    RoundOp,
    *TRIGONOMETRIC_OPS,
    IdentityOp,
    DropoutOp,
    CastOp,
    WhereOp,
)
