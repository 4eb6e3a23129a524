"""The fusion kind of each `ge` op: what a kernel has to do to compute it, and so
what it can be fused with.

The classification is TVM's `OpPatternKind` (and GE AutoFuse's pointwise /
broadcast / reduce / cube split), kept with the dialect because it is a property
of the ops, shared by the `fused.group` verifier and the fusion passes:

* ELEMENTWISE: one output element from the same element of each input.
* BROADCAST: elementwise where some inputs are broadcast (bias, batch_norm).
* INJECTIVE: each output element is one input element somewhere else
  (transpose, reshape, slice, concat, pad, gather, transdata): data movement.
* REDUCE: reduces some axes (reduce_*, softmax, layer_norm, rms_norm,
  global_avg_pool); `reduced_axes` says which.
* CUBE: matrix engine ops (matmul, batch_matmul, conv2d); they can take an
  elementwise epilogue (TVM's "out-elementwise-fusable").
* OPAQUE: everything else (windowed pooling, fused ops): never fused further.
"""

from __future__ import annotations

from enum import IntEnum

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation

from .. import ge
from ..ge.reduction import reduced_axes


class PatternKind(IntEnum):
    ELEMENTWISE = 0
    BROADCAST = 1
    INJECTIVE = 2
    REDUCE = 3
    CUBE = 4
    OPAQUE = 8


_ELEMENTWISE_FAMILY = tuple(op for op in ge.ELEMENTWISE_OPS) + (ge.BiasAddOp, ge.BatchNormOp, ge.ExpandOp)
_INJECTIVE = (
    ge.TransposeOp,
    ge.ReshapeOp,
    ge.SliceOp,
    ge.ConcatOp,
    ge.SplitOp,
    ge.PadOp,
    ge.GatherOp,
)
_INJECTIVE_NAMES = ("ge.transdata",)
"""Injective ops known by name: `ge.transdata` (the layout pass's format change)."""
REDUCE_OPS = (
    ge.ReduceSumOp,
    ge.ReduceMeanOp,
    ge.ReduceMaxOp,
    ge.SoftmaxOp,
    ge.LogSoftmaxOp,
    ge.LayerNormOp,
    ge.RMSNormOp,
    ge.GlobalAvgPoolOp,
)
_CUBE = (ge.MatmulOp, ge.BatchMatmulOp, ge.Conv2DOp)


def pattern_kind(op: Operation) -> PatternKind:
    if isinstance(op, _ELEMENTWISE_FAMILY):
        return PatternKind.ELEMENTWISE if _same_shapes(op) else PatternKind.BROADCAST
    if isinstance(op, _INJECTIVE) or op.name in _INJECTIVE_NAMES:
        return PatternKind.INJECTIVE
    if isinstance(op, REDUCE_OPS):
        return PatternKind.REDUCE
    if isinstance(op, _CUBE):
        return PatternKind.CUBE
    return PatternKind.OPAQUE


def _same_shapes(op: Operation) -> bool:
    shapes = {tuple(v.type.get_shape()) for v in (*op.operands, *op.results) if isinstance(v.type, TensorType)}
    return len(shapes) <= 1 and not isinstance(op, ge.BatchNormOp | ge.BiasAddOp | ge.ExpandOp)


def reduced_axes_of(op: Operation) -> tuple[int, ...]:
    """The input axes a REDUCE op reduces, normalised and sorted."""
    rank = len(op.operands[0].type.get_shape())
    match op:
        case ge.ReduceOp():
            return reduced_axes(op.attr_value("axes"), rank)
        case ge.SoftmaxOp() | ge.LogSoftmaxOp():
            return (op.attr_value("axis") % rank,)
        case ge.LayerNormOp() | ge.RMSNormOp():
            return tuple(range(op.attr_value("axis") % rank, rank))
        case ge.GlobalAvgPoolOp():
            return tuple(range(2, rank))
    raise ValueError(f"{op.name} is not a reduction")


def is_row_reduction(op: Operation) -> bool:
    """Reduces a suffix of the axes: a tile of whole rows holds everything it needs."""
    rank = len(op.operands[0].type.get_shape())
    axes = reduced_axes_of(op)
    return axes == tuple(range(rank - len(axes), rank))
