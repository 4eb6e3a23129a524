"""Canonicalization patterns of the data-movement and reduction ops: no-op
reshapes / transposes / expands / slices / pads / concats / splits, chains that
collapse into one op, and shape ops applied to constants, which become
constants without materialising anything (a reshape keeps the bytes or the
`#ge.random` seed; any shape op of a splat stays a splat, so a broadcast scalar
never turns into a dense tensor). ONNX exports are full of these: Reshape of
initializers, Unsqueeze/Squeeze pairs (reshape chains), Expand to the shape a
value already has, Pad with zero pads, Concat of a single tensor.
"""

from __future__ import annotations

from xdsl.dialects.builtin import DenseIntOrFPElementsAttr
from xdsl.pattern_rewriter import PatternRewriter

from .canonicalization import (
    GEPattern,
    defining_op,
    empty_constant,
    is_empty,
    patterns_for,
    replace_with_value,
    retyped_constant,
    same_type,
    splat_constant,
    splat_scalar,
)
from .const import ConstOp
from .reduction import ReduceMaxOp, ReduceMeanOp, ReduceSumOp, reduced_axes
from .shape import ConcatOp, ExpandOp, PadOp, ReshapeOp, SliceOp, SplitOp, TransposeOp


@patterns_for(ReshapeOp, TransposeOp, ExpandOp, SliceOp)
class ShapeOpOfSplat(GEPattern):
    """reshape / transpose / expand / slice of a splat constant -> a splat constant of
    the result type (a broadcast scalar stays one element)."""

    COUNTER = "splat constants reshaped"

    def match_and_rewrite(self, op, rewriter: PatternRewriter):
        scalar = splat_scalar(op.input)
        if scalar is not None:
            rewriter.replace(op, splat_constant(scalar, op.result.type))


@patterns_for(ReshapeOp)
class ReshapeChain(GEPattern):
    """reshape(reshape(x)) -> reshape(x)."""

    COUNTER = "reshape chains merged"

    def match_and_rewrite(self, op: ReshapeOp, rewriter: PatternRewriter):
        if (inner := defining_op(op.input, ReshapeOp)) is not None:
            new = ReshapeOp.new(inner.input, result_type=op.result.type)
            new.location = op.location
            rewriter.replace(op, new)


@patterns_for(ReshapeOp)
class ReshapeOfConstant(GEPattern):
    """reshape(constant) -> the constant with the new shape (same bytes or seed). A
    dense constant used elsewhere too is left alone rather than copied."""

    COUNTER = "constants reshaped"

    def match_and_rewrite(self, op: ReshapeOp, rewriter: PatternRewriter):
        const = defining_op(op.input, ConstOp)
        if const is None:
            return
        if not isinstance(const.value, DenseIntOrFPElementsAttr) or op.input.has_one_use():
            rewriter.replace(op, retyped_constant(const, op.result.type))


def _compose(inner: tuple[int, ...], outer: tuple[int, ...]) -> tuple[int, ...]:
    """The single permutation equal to transposing by `inner`, then by `outer`."""
    return tuple(inner[p] for p in outer)


def _is_identity(perm: tuple[int, ...]) -> bool:
    return tuple(perm) == tuple(range(len(perm)))


@patterns_for(TransposeOp)
class TransposeIdentity(GEPattern):
    """transpose(x) by the identity permutation -> x."""

    COUNTER = "identity transposes removed"

    def match_and_rewrite(self, op: TransposeOp, rewriter: PatternRewriter):
        if _is_identity(op.attr_value("perm")):
            replace_with_value(rewriter, op, op.input)


@patterns_for(TransposeOp)
class TransposeChain(GEPattern):
    """transpose(transpose(x, p), q) -> transpose(x, p o q), or x if that is the identity."""

    COUNTER = "transpose chains merged"

    def match_and_rewrite(self, op: TransposeOp, rewriter: PatternRewriter):
        inner = defining_op(op.input, TransposeOp)
        if inner is None:
            return
        perm = _compose(inner.attr_value("perm"), op.attr_value("perm"))
        if _is_identity(perm):
            replace_with_value(rewriter, op, inner.input)
            return
        new = TransposeOp.new(inner.input, perm=perm, result_type=op.result.type)
        new.location = op.location
        rewriter.replace(op, new)


@patterns_for(ConcatOp)
class ConcatOfOne(GEPattern):
    """concat(x) of a single input -> x."""

    COUNTER = "single-input concats removed"

    def match_and_rewrite(self, op: ConcatOp, rewriter: PatternRewriter):
        if len(op.inputs) == 1:
            replace_with_value(rewriter, op, op.inputs[0])


@patterns_for(ConcatOp)
class ConcatDropEmpty(GEPattern):
    """concat(x, e, y) where e has no elements -> concat(x, y): an empty input adds
    nothing (ONNX functions leave them, e.g. RotaryEmbedding's pass-through part)."""

    COUNTER = "empty concat inputs dropped"

    def match_and_rewrite(self, op: ConcatOp, rewriter: PatternRewriter):
        kept = [v for v in op.inputs if not is_empty(v.type)]
        if kept and len(kept) < len(op.inputs):
            new = ConcatOp.new(*kept, axis=op.attr_value("axis"), result_type=op.result.type)
            new.location = op.location
            rewriter.replace(op, new)


@patterns_for(SplitOp)
class SplitDropEmpty(GEPattern):
    """Pieces of size 0 of a split -> empty constants; the others come from a split
    into them only."""

    COUNTER = "empty split pieces dropped"

    def match_and_rewrite(self, op: SplitOp, rewriter: PatternRewriter):
        sizes = op.attr_value("sizes")
        if 0 not in sizes or not any(sizes):
            return
        kept = [r for r, size in zip(op.outputs, sizes) if size]
        new = SplitOp.new(op.input, axis=op.attr_value("axis"), sizes=[s for s in sizes if s],
                          result_type=[r.type for r in kept])
        new.location = op.location
        pieces = iter(new.outputs)
        empties = [empty_constant(r.type) for r, size in zip(op.outputs, sizes) if not size]
        filled = iter(e.result for e in empties)
        rewriter.replace(op, [*empties, new], [next(pieces) if size else next(filled) for size in sizes])


@patterns_for(SplitOp)
class SplitIntoOne(GEPattern):
    """split(x) into a single piece -> x."""

    COUNTER = "single-piece splits removed"

    def match_and_rewrite(self, op: SplitOp, rewriter: PatternRewriter):
        if len(op.outputs) == 1 and same_type(op.input, op.outputs[0].type):
            rewriter.replace(op, [], [op.input])


@patterns_for(SliceOp)
class SliceOfEverything(GEPattern):
    """slice(x) over the full range of every dim with step 1 -> x."""

    COUNTER = "full slices removed"

    def match_and_rewrite(self, op: SliceOp, rewriter: PatternRewriter):
        a = op.attr_values()
        shape = tuple(op.input.type.get_shape())
        if all(s == 0 for s in a.starts) and tuple(a.ends) == shape and all(s == 1 for s in a.steps):
            replace_with_value(rewriter, op, op.input)


@patterns_for(PadOp)
class PadByNothing(GEPattern):
    """pad(x) with all pads zero -> x (any mode)."""

    COUNTER = "zero pads removed"

    def match_and_rewrite(self, op: PadOp, rewriter: PatternRewriter):
        if not any(op.attr_value("pads")):
            replace_with_value(rewriter, op, op.input)


@patterns_for(ReduceSumOp, ReduceMeanOp, ReduceMaxOp)
class ReduceOverUnitDims(GEPattern):
    """reduce_{sum,mean,max}(x) keeping dims, over dims of size 1 only -> x."""

    COUNTER = "trivial reductions removed"

    def match_and_rewrite(self, op, rewriter: PatternRewriter):
        shape = tuple(op.input.type.get_shape())
        axes = reduced_axes(op.attr_value("axes"), len(shape))
        if op.attr_value("keepdims") and all(shape[axis] == 1 for axis in axes):
            replace_with_value(rewriter, op, op.input)
