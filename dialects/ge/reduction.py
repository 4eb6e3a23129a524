"""Reductions over a set of axes: reduce_sum, reduce_mean, reduce_max. ONNX
defaults: `keepdims` is true, an empty `axes` reduces every axis."""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.irdl import irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import Pure

from ...core import dtypes
from .base import GEOp, Kind, attr, fail, like, normalize_axis, require_numeric, shape_of
from .canonicalization import Canonicalize


def reduced_axes(axes: tuple[int, ...], rank: int) -> tuple[int, ...]:
    """`axes` normalised to [0, rank), sorted; empty means all."""
    if not axes:
        return tuple(range(rank))
    normalized = tuple(sorted(normalize_axis(x, rank) for x in axes))
    if len(set(normalized)) != len(normalized):
        raise fail(f"axes {list(axes)} name a dimension twice")
    return normalized


class ReduceOp(GEOp):
    input = operand_def(TensorType)
    result = result_def(TensorType)
    axes = attr(Kind.INTS, ())
    keepdims = attr(Kind.BOOL, True)
    traits = traits_def(Pure(), Canonicalize())

    @classmethod
    def infer(cls, types, a, declared):
        (x,) = types
        require_numeric(x)
        shape = shape_of(x)
        axes = reduced_axes(a.axes, len(shape))
        if a.keepdims:
            out = tuple(1 if i in axes else d for i, d in enumerate(shape))
        else:
            out = tuple(d for i, d in enumerate(shape) if i not in axes)
        return like(x, out)

    @classmethod
    def compute(cls, inputs, a, result_types):
        x = inputs[0]
        return cls.FN(x, axis=reduced_axes(a.axes, x.ndim), keepdims=a.keepdims)


@irdl_op_definition
class ReduceSumOp(ReduceOp):
    name = "ge.reduce_sum"
    FN = staticmethod(np.sum)


@irdl_op_definition
class ReduceMeanOp(ReduceOp):
    name = "ge.reduce_mean"
    FN = staticmethod(np.mean)


def _max(x: np.ndarray, axis, keepdims: bool) -> np.ndarray:
    """Max where an empty set gives the lowest value of the type (-inf), as in ONNX."""
    lowest = dtypes.lowest_value(x.dtype)
    return np.max(x, axis=axis, keepdims=keepdims, initial=lowest)


@irdl_op_definition
class ReduceMaxOp(ReduceOp):
    name = "ge.reduce_max"
    FN = staticmethod(_max)


REDUCTION_OPS = (ReduceSumOp, ReduceMeanOp, ReduceMaxOp)
