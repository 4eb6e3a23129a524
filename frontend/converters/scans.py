"""CumSum and CumProd as log-step prefix scans (Hillis-Steele): with s = 1, 2,
4... below the axis length, y = y (+ or *) y shifted by s along the axis (a
`ge.slice` of all but the last s elements, padded in front by `ge.pad` with the
operation's identity, 0 or 1). ceil(log2 n) steps, exact for integers, and for
floats each prefix combined in a tree order. `exclusive` shifts the result by
one more; `reverse` shifts towards the front instead."""

from __future__ import annotations

import numpy as np

from ...core import dtypes
from ...dialects.ge import PadOp
from ..builder import Tensor, slice_
from .context import NodeContext
from .registry import converts


# op type -> (combine, identity)
_SCANS = {
    "CumSum": (lambda a, b: a + b, 0),
    "CumProd": (lambda a, b: a * b, 1),
}


@converts(*_SCANS, static=(1,))
def cumulative(c: NodeContext):
    x = c.input(0, "x")
    axis_value = c.ints_input(1, "axis")
    if axis_value is None or len(axis_value) != 1:
        raise c.fail("axis must be a single integer")
    if x.rank == 0:
        raise c.fail("input must have rank >= 1")
    axis = axis_value[0]
    if not -x.rank <= axis < x.rank:
        raise c.fail(f"axis {axis} is out of range for {x.type}")
    axis %= x.rank
    reverse = bool(c.int("reverse", 0))
    exclusive = bool(c.int("exclusive", 0))
    combine, identity = _SCANS[c.node.op_type]
    n = x.shape[axis]
    y = x
    step = 1
    while step < n:
        y = combine(y, _shifted(c, y, axis, step, reverse, identity))
        step *= 2
    if not exclusive:
        return y
    if n <= 1:  # nothing before any element
        return c.g.const(np.full(x.shape, identity, dtype=dtypes.to_numpy_dtype(x.dtype)))
    return _shifted(c, y, axis, 1, reverse, identity)


def _shifted(c: NodeContext, y: Tensor, axis: int, step: int, reverse: bool, identity: int) -> Tensor:
    """`y` moved `step` places along `axis` (towards the end, or the front when
    `reverse`), `identity` coming in."""
    n = y.shape[axis]
    kept = slice_(y, [step], [n], [axis]) if reverse else slice_(y, [0], [n - step], [axis])
    pads = [0] * (2 * y.rank)
    pads[axis + (y.rank if reverse else 0)] = step
    return c.g.op(PadOp, kept, pads=pads, value=float(identity))
