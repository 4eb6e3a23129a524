"""The ONNX reductions and GlobalMaxPool, over ge's three reductions (reduce_sum,
reduce_mean, reduce_max) and elementwise ops.

The axes are an attribute before opset 13 (ReduceSum) or 18 (the others) and an
input after, folded at import. No axes reduce everything, unless
`noop_with_empty_axes` asks to reduce nothing: then the elementwise part of the
reduction still applies (ReduceSumSquare squares, ReduceL2 gives |x|), as in
ONNX's reference.

* ReduceL2 of fp16 / bf16 squares and sums in fp32 (onnxruntime's answer; the
  squares alone would overflow fp16 from 256 up).

* ReduceMin is the max of the values flipped in order by an exact map: -x for
  floats, ~x (-1 - x, or MAX - x unsigned) for integers, which never
  overflows; an empty set gives +inf (the type's maximum) as ONNX asks. Booleans
  ("all") go through i32.
* ReduceMax of booleans ("any") is a count of the true ones.
* ReduceLogSumExp subtracts the max first (clamped to the finite range, so an
  empty set or infinite values do not give inf - inf).
* ReduceProd is a tree of products: each reduced axis is halved by multiplying
  its two halves (an odd size padded with a 1) until it has size 1, ceil(log2 n)
  steps of slices and a `ge.mul`; integers wrap exactly as a sequential product.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.dialects.builtin import f64, i32
from xdsl.utils.exceptions import VerifyException

from ...core import dtypes
from ...dialects.ge import (
    AbsOp,
    ExpOp,
    IdentityOp,
    LogOp,
    MaximumOp,
    MinimumOp,
    MulOp,
    PadOp,
    ReduceMaxOp,
    ReduceMeanOp,
    ReduceSumOp,
    SqrtOp,
)
from ...dialects.ge.reduction import reduced_axes
from .. import ops
from ..builder import Tensor
from .context import NodeContext
from .registry import converts


class Over:
    """The axes of one reduce node (None: `noop_with_empty_axes` with no axes, so
    nothing is reduced) and its keepdims."""

    def __init__(self, c: NodeContext, x: Tensor, axes_input_since: int = 18):
        axes = c.ints_input(1, "axes") if c.opset >= axes_input_since else c.ints("axes", None)
        self.keepdims = bool(c.int("keepdims", 1))
        noop = bool(c.int("noop_with_empty_axes", 0)) and not axes
        try:
            self.axes = None if noop else reduced_axes(tuple(axes or ()), x.rank)
        except VerifyException as e:
            raise c.fail(str(e)) from None

    def __call__(self, op_class, t: Tensor, keepdims: bool | None = None) -> Tensor:
        """`op_class` (a ge reduction) of `t` over these axes, or `t` when noop."""
        if self.axes is None:
            return t
        keepdims = self.keepdims if keepdims is None else keepdims
        return t.graph.op(op_class, t, axes=self.axes, keepdims=keepdims)

    def shape(self, x: Tensor) -> tuple[int, ...]:
        """The result shape of a reduction of `x`."""
        if self.axes is None:
            return x.shape
        if self.keepdims:
            return tuple(1 if i in self.axes else d for i, d in enumerate(x.shape))
        return tuple(d for i, d in enumerate(x.shape) if i not in self.axes)


Reduction = Callable[[NodeContext, Tensor, Over], Tensor]
_REDUCTIONS: dict[str, tuple[Reduction, int]] = {}


def reduction(op_type: str, axes_input_since: int = 18):
    def register(function: Reduction) -> Reduction:
        _REDUCTIONS[op_type] = (function, axes_input_since)
        return function

    return register


@converts(
    "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceSumSquare", "ReduceL1", "ReduceL2",
    "ReduceLogSum", "ReduceLogSumExp", "ReduceProd", static=(1,),
)
def reduce(c: NodeContext):
    function, axes_input_since = _REDUCTIONS[c.node.op_type]
    x = c.input(0, "data")
    over = Over(c, x, axes_input_since)
    y = function(c, x, over)
    return c.g.op(IdentityOp, y) if y is x else y


@reduction("ReduceSum", axes_input_since=13)
def _sum(c: NodeContext, x: Tensor, over: Over) -> Tensor:
    return over(ReduceSumOp, x)


@reduction("ReduceMean")
def _mean(c: NodeContext, x: Tensor, over: Over) -> Tensor:
    return over(ReduceMeanOp, x)


@reduction("ReduceMax")
def _max(c: NodeContext, x: Tensor, over: Over) -> Tensor:
    if dtypes.is_bool(x.dtype):
        # max of booleans is "any": a count of the true ones, compared with zero
        return ops.cast(over(ReduceSumOp, ops.cast(x, i32)), x.dtype)
    return over(ReduceMaxOp, x)


@reduction("ReduceMin")
def _min(c: NodeContext, x: Tensor, over: Over) -> Tensor:
    if dtypes.is_bool(x.dtype):
        return ops.cast(_min(c, ops.cast(x, i32), over), x.dtype)
    return _flip(over(ReduceMaxOp, _flip(x)))


def _flip(x: Tensor) -> Tensor:
    """An exact order-reversing map of x's type that is its own inverse: -x for
    floats, ~x for integers (-1 - x signed, MAX - x unsigned: no overflow)."""
    if dtypes.is_float(x.dtype):
        return -x
    if dtypes.is_unsigned(x.dtype):
        return int(np.iinfo(dtypes.to_numpy_dtype(x.dtype)).max) - x
    return -1 - x


@reduction("ReduceSumSquare")
def _sum_square(c: NodeContext, x: Tensor, over: Over) -> Tensor:
    return over(ReduceSumOp, x * x)


@reduction("ReduceL1")
def _l1(c: NodeContext, x: Tensor, over: Over) -> Tensor:
    return over(ReduceSumOp, c.g.op(AbsOp, x))


@reduction("ReduceL2")
def _l2(c: NodeContext, x: Tensor, over: Over) -> Tensor:
    """sqrt of the sum of squares; integers take the square root in f64 and
    truncate back, as ONNX's reference does."""
    if dtypes.is_float(x.dtype):
        return euclidean_norm(x, lambda squares: over(ReduceSumOp, squares))
    total = over(ReduceSumOp, x * x)
    return ops.cast(c.g.op(SqrtOp, ops.cast(total, f64)), x.dtype)


def euclidean_norm(x: Tensor, reduce_sum: Callable[[Tensor], Tensor]) -> Tensor:
    """sqrt(reduce_sum(x * x)) of a float tensor. A float narrower than fp32 is
    squared and summed in fp32 and its norm rounded back once, as onnxruntime
    does: the square of an fp16 value above 256 overflows, its norm need not."""
    wide = ops.cast(x, "f32") if dtypes.is_narrow_float(x.dtype) else x
    norm = x.graph.op(SqrtOp, reduce_sum(wide * wide))
    return ops.cast(norm, x.dtype) if wide is not x else norm


@reduction("ReduceLogSum")
def _log_sum(c: NodeContext, x: Tensor, over: Over) -> Tensor:
    return c.g.op(LogOp, over(ReduceSumOp, _float(c, x)))


@reduction("ReduceLogSumExp")
def _log_sum_exp(c: NodeContext, x: Tensor, over: Over) -> Tensor:
    """max + log(sum(exp(x - max))), the max clamped to the finite range: an
    empty or all -inf set gives log(0) + lowest = -inf, an infinite value inf."""
    x = _float(c, x)
    if over.axes is None:
        return x  # log(exp(x)), without overflowing exp
    info = dtypes.float_info(x.dtype)
    peak = over(ReduceMaxOp, x, keepdims=True)
    peak = c.g.op(MinimumOp, c.g.op(MaximumOp, peak, float(info.min)), float(info.max))
    total = over(ReduceSumOp, c.g.op(ExpOp, x - peak))
    if not over.keepdims:
        peak = ops.reshape(peak, total.shape)
    return c.g.op(LogOp, total) + peak


def _float(c: NodeContext, x: Tensor) -> Tensor:
    if not dtypes.is_float(x.dtype):
        raise c.fail(f"{c.node.op_type} takes floating-point data (it is defined by Log and Exp), got {x.type}")
    return x


@reduction("ReduceProd")
def _prod(c: NodeContext, x: Tensor, over: Over) -> Tensor:
    if over.axes is None:
        return x
    shape = over.shape(x)
    if any(x.shape[a] == 0 for a in over.axes):
        return c.g.const(np.ones(shape), dtype=x.dtype)  # the empty product
    y = x
    for axis in over.axes:
        y = _halve_until_one(c, y, axis)
    return y if y.shape == shape else ops.reshape(y, shape)


def _halve_until_one(c: NodeContext, x: Tensor, axis: int) -> Tensor:
    """The product along `axis` (kept, size 1): the two halves multiplied, until one
    element is left; an odd size is first padded with a 1 at the end."""
    while x.shape[axis] > 1:
        if x.shape[axis] % 2:
            pads = [0] * (2 * x.rank)
            pads[x.rank + axis] = 1
            x = c.g.op(PadOp, x, pads=pads, value=1.0)
        half = x.shape[axis] // 2
        x = c.g.op(MulOp, ops.slice(x, [0], [half], [axis]), ops.slice(x, [half], [2 * half], [axis]))
    return x


@converts("GlobalMaxPool")
def global_max_pool(c: NodeContext):
    """The max over every spatial axis, kept as size 1."""
    x = c.input(0, "X")
    if x.rank < 3:
        raise c.fail(f"input must have rank >= 3 (N, C, spatial...), got {x.type}")
    return c.g.op(ReduceMaxOp, x, axes=tuple(range(2, x.rank)), keepdims=True)
