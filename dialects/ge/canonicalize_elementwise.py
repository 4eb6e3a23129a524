"""Canonicalization patterns of the elementwise ops: algebraic identities that
ONNX exporters leave behind (adding a zero bias, scaling by one, Dropout and
Identity at inference, Cast round trips, Not of Not or of a comparison, `Div(1, Sqrt(x))` from LayerNorm
decompositions, `Mul(x, -1)` for negation, `Pow(x, 2)` for squares).

Each rewrite is exact in the op's own reference semantics (x + 0 is x, pow(x, 2)
is x * x), except reciprocal(sqrt(x)) -> rsqrt(x), which skips one rounding of
the intermediate to the storage type.
"""

from __future__ import annotations

from xdsl.dialects.builtin import NoneAttr
from xdsl.pattern_rewriter import PatternRewriter

from ...core import dtypes
from .canonicalization import (
    GEPattern,
    defining_op,
    is_splat_of,
    new_like,
    patterns_for,
    replace_with_value,
    same_type,
    splat_constant,
    splat_scalar,
)
from .elementwise import (
    AbsOp,
    AddOp,
    CastOp,
    CompareOp,
    DivOp,
    DropoutOp,
    IdentityOp,
    MulOp,
    NegOp,
    NotOp,
    PowOp,
    ReciprocalOp,
    ReluOp,
    RsqrtOp,
    SqrtOp,
    SubOp,
    WhereOp,
)
from .const import ConstOp
from .nn import BiasAddOp
from .shape import ExpandOp, ReshapeOp


def _operand_pairs(op):
    """(x, other) both ways round, for commutative ops."""
    return ((op.lhs, op.rhs), (op.rhs, op.lhs))


@patterns_for(AddOp, SubOp, MulOp, DivOp, PowOp)
class DropNeutralOperand(GEPattern):
    """x + 0, 0 + x, x - 0, x * 1, 1 * x, x / 1, pow(x, 1) -> x (when x already has the
    result's shape: a neutral operand that broadcasts x is not a no-op)."""

    COUNTER = "neutral operands removed"
    NEUTRAL = {AddOp: (0, True), SubOp: (0, False), MulOp: (1, True), DivOp: (1, False), PowOp: (1, False)}

    def match_and_rewrite(self, op, rewriter: PatternRewriter):
        neutral, commutative = self.NEUTRAL[type(op)]
        pairs = _operand_pairs(op) if commutative else ((op.lhs, op.rhs),)
        for x, other in pairs:
            if is_splat_of(other, neutral) and replace_with_value(rewriter, op, x):
                return


@patterns_for(BiasAddOp)
class DropZeroBias(GEPattern):
    """bias_add(x, 0) -> x: a layer's zero bias (PyTorch's captured graph keeps it
    where ONNX exporters' optimisers drop the Add), as x + 0 above."""

    COUNTER = "neutral operands removed"

    def match_and_rewrite(self, op: BiasAddOp, rewriter: PatternRewriter):
        if is_splat_of(op.bias, 0):
            replace_with_value(rewriter, op, op.input)


def _plain_constant(value) -> bool:
    """A `ge.const` of a type with no layout encoding (its elements in logical order)."""
    return defining_op(value, ConstOp) is not None and isinstance(value.type.encoding, NoneAttr)


@patterns_for(AddOp, MulOp)
class ReassociateConstants(GEPattern):
    """(x + c1) + c2 -> x + (c1 + c2), and likewise for *, in any operand order, when
    c1 and c2 are constants and x + c1 has no other use: ge-constant-fold then
    makes c1 + c2 one constant, and one op is left where an exporter wrote two
    (BERT's embeddings: the word embeddings plus the token-type rows plus the
    position rows, both gathers of constants, were a kernel of their own before
    the LayerNorm fused the last add). Broadcasting is associative, so the result
    has the same shape. Not exact for floats: the constants are added first,
    which changes the rounding by about an ulp of the result (integers: exact)."""

    COUNTER = "constants re-associated"

    def match_and_rewrite(self, op, rewriter: PatternRewriter):
        for inner_value, c2 in _operand_pairs(op):
            inner = defining_op(inner_value, type(op))
            if inner is None or not _plain_constant(c2) or not inner_value.has_one_use():
                continue
            for x, c1 in _operand_pairs(inner):
                if _plain_constant(c1) and not _plain_constant(x):
                    constants = type(op).new(c1, c2)
                    constants.location = inner.location
                    rewriter.replace(op, [constants, new_like(op, type(op), x, constants.result)])
                    return


@patterns_for(AddOp)
class AddNeg(GEPattern):
    """x + neg(y) -> x - y (either side)."""

    COUNTER = "x+neg(y) to x-y"

    def match_and_rewrite(self, op: AddOp, rewriter: PatternRewriter):
        for x, other in _operand_pairs(op):
            if (neg := defining_op(other, NegOp)) is not None:
                rewriter.replace(op, new_like(op, SubOp, x, neg.input))
                return


@patterns_for(SubOp)
class ZeroMinus(GEPattern):
    """0 - x -> neg(x)."""

    COUNTER = "0-x to neg"

    def match_and_rewrite(self, op: SubOp, rewriter: PatternRewriter):
        if is_splat_of(op.lhs, 0) and same_type(op.rhs, op.result.type):
            rewriter.replace(op, new_like(op, NegOp, op.rhs))


@patterns_for(MulOp)
class MulZeroInteger(GEPattern):
    """x * 0 -> 0 for integers (not for floats: NaN * 0 is NaN, inf * 0 too)."""

    COUNTER = "x*0 to 0"

    def match_and_rewrite(self, op: MulOp, rewriter: PatternRewriter):
        if not dtypes.is_integer(op.result.type.element_type):
            return
        if is_splat_of(op.lhs, 0) or is_splat_of(op.rhs, 0):
            rewriter.replace(op, splat_constant(0, op.result.type))


@patterns_for(MulOp)
class MulMinusOne(GEPattern):
    """x * -1 -> neg(x) (either side)."""

    COUNTER = "x*-1 to neg"

    def match_and_rewrite(self, op: MulOp, rewriter: PatternRewriter):
        for x, other in _operand_pairs(op):
            if is_splat_of(other, -1) and same_type(x, op.result.type):
                rewriter.replace(op, new_like(op, NegOp, x))
                return


@patterns_for(DivOp)
class OneOver(GEPattern):
    """1 / x -> reciprocal(x) for floats."""

    COUNTER = "1/x to reciprocal"

    def match_and_rewrite(self, op: DivOp, rewriter: PatternRewriter):
        if (
            dtypes.is_float(op.result.type.element_type)
            and is_splat_of(op.lhs, 1)
            and same_type(op.rhs, op.result.type)
        ):
            rewriter.replace(op, new_like(op, ReciprocalOp, op.rhs))


@patterns_for(PowOp)
class PowTwo(GEPattern):
    """pow(x, 2) -> x * x."""

    COUNTER = "pow(x,2) to x*x"

    def match_and_rewrite(self, op: PowOp, rewriter: PatternRewriter):
        if is_splat_of(op.rhs, 2) and same_type(op.lhs, op.result.type):
            rewriter.replace(op, new_like(op, MulOp, op.lhs, op.lhs))


@patterns_for(NegOp)
class NegNeg(GEPattern):
    """neg(neg(x)) -> x."""

    COUNTER = "neg(neg x) removed"

    def match_and_rewrite(self, op: NegOp, rewriter: PatternRewriter):
        if (inner := defining_op(op.input, NegOp)) is not None:
            replace_with_value(rewriter, op, inner.input)


@patterns_for(ReluOp, AbsOp)
class IdempotentUnary(GEPattern):
    """relu(relu(x)) -> relu(x), abs(abs(x)) -> abs(x), abs(neg(x)) -> abs(x)."""

    COUNTER = "f(f x) to f(x)"

    def match_and_rewrite(self, op: ReluOp | AbsOp, rewriter: PatternRewriter):
        if defining_op(op.input, type(op)) is not None:
            replace_with_value(rewriter, op, op.input)
        elif isinstance(op, AbsOp) and (neg := defining_op(op.input, NegOp)) is not None:
            rewriter.replace(op, new_like(op, AbsOp, neg.input))


@patterns_for(IdentityOp, DropoutOp, CastOp, ReshapeOp, ExpandOp)
class RemoveNoOp(GEPattern):
    """identity(x) and dropout(x) (at inference), and a cast / reshape / expand of x to
    the type x already has -> x."""

    COUNTER = "no-ops removed"

    def match_and_rewrite(self, op, rewriter: PatternRewriter):
        replace_with_value(rewriter, op, op.input)


@patterns_for(CastOp)
class CastRoundTrip(GEPattern):
    """cast(cast(x: A -> B) -> A) -> x when float B holds every value of float A
    exactly (f16 -> f32 -> f16, f8E4M3FN -> f16 -> f8E4M3FN; not bf16 -> f16 -> bf16,
    whose range f16 lacks)."""

    COUNTER = "cast round trips removed"

    def match_and_rewrite(self, op: CastOp, rewriter: PatternRewriter):
        inner = defining_op(op.input, CastOp)
        if inner is None or not same_type(inner.input, op.result.type):
            return
        narrow, wide = inner.input.type.element_type, inner.result.type.element_type
        if dtypes.is_exactly_representable(narrow, wide):
            rewriter.replace(op, [], [inner.input])


@patterns_for(ReciprocalOp)
class ReciprocalOfSqrt(GEPattern):
    """reciprocal(sqrt(x)) -> rsqrt(x)."""

    COUNTER = "1/sqrt to rsqrt"

    def match_and_rewrite(self, op: ReciprocalOp, rewriter: PatternRewriter):
        if (sqrt := defining_op(op.input, SqrtOp)) is not None:
            rewriter.replace(op, new_like(op, RsqrtOp, sqrt.input))


@patterns_for(WhereOp)
class WhereConstantCondition(GEPattern):
    """where(true, x, y) -> x and where(false, x, y) -> y (broadcast to the result
    shape with ge.expand when the chosen operand is smaller)."""

    COUNTER = "constant where resolved"

    def match_and_rewrite(self, op: WhereOp, rewriter: PatternRewriter):
        condition = splat_scalar(op.condition)
        if condition is None:
            return
        chosen = op.x if condition else op.y
        if same_type(chosen, op.result.type):
            rewriter.replace(op, [], [chosen])
        else:
            rewriter.replace(op, new_like(op, ExpandOp, chosen))


@patterns_for(NotOp)
class NotOfNotOrCompare(GEPattern):
    """not(not(m)) -> m; not(a == b) -> a != b and back; on integers and i1 also
    not(a < b) -> a >= b (and the other orders). Float orders are kept: with NaN,
    not(a < b) is true where a >= b is false."""

    COUNTER = "not folded"
    INVERSE = {"eq": "ne", "ne": "eq", "lt": "ge", "ge": "lt", "le": "gt", "gt": "le"}

    def match_and_rewrite(self, op: NotOp, rewriter: PatternRewriter):
        if (inner := defining_op(op.input, NotOp)) is not None:
            replace_with_value(rewriter, op, inner.input)
            return
        compare = defining_op(op.input, CompareOp)
        if compare is None:
            return
        predicate = compare.attr_value("predicate")
        if predicate in ("eq", "ne") or not dtypes.is_float(compare.lhs.type.element_type):
            rewriter.replace(op, new_like(op, CompareOp, compare.lhs, compare.rhs, predicate=self.INVERSE[predicate]))
