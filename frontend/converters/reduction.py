"""ReduceSum, ReduceMean, ReduceMax.

The axes are an attribute before opset 13 (ReduceSum) or 18 (the others) and an
input after, folded at import. No axes reduce everything, unless
`noop_with_empty_axes` asks for the identity. ReduceMax of booleans ("any") is
a count of the true ones."""

from __future__ import annotations

from xdsl.dialects.builtin import i32

from ...core import dtypes
from ...dialects.ge import IdentityOp, ReduceMaxOp, ReduceMeanOp, ReduceSumOp
from .. import ops
from .context import NodeContext
from .registry import converts

_REDUCTIONS = {"ReduceSum": (ReduceSumOp, 13), "ReduceMean": (ReduceMeanOp, 18), "ReduceMax": (ReduceMaxOp, 18)}


@converts(*_REDUCTIONS, static=(1,))
def reduce(c: NodeContext):
    op_class, axes_input_since = _REDUCTIONS[c.node.op_type]
    x = c.input(0, "data")
    if c.opset >= axes_input_since:
        axes = c.ints_input(1, "axes")
    else:
        axes = c.ints("axes", None)
    keepdims = bool(c.int("keepdims", 1))
    noop_with_empty_axes = bool(c.int("noop_with_empty_axes", 0))
    if not axes:
        if noop_with_empty_axes:
            return c.g.op(IdentityOp, x)
        axes = ()
    if dtypes.is_bool(x.dtype) and op_class is ReduceMaxOp:
        # max of booleans is "any": a count of the true ones, compared with zero
        count = c.g.op(ReduceSumOp, ops.cast(x, i32), axes=axes, keepdims=keepdims)
        return ops.cast(count, x.dtype)
    return c.g.op(op_class, x, axes=axes, keepdims=keepdims)
