"""ArgMax, ArgMin and TopK as reductions and comparisons.

* ArgMax: the max along the axis (`ge.reduce_max`, keepdims), `ge.compare` eq
  against it, and the first (or with select_last_index the last) position that
  holds it: a `ge.where` of the positions (a constant iota) over the hits, then a
  max of -position (first) or of position (last). ArgMin is ArgMax of the values
  flipped in order by an exact map (-x, or ~x for integers: see reduction.py).
* TopK: K rounds of ArgMax over what earlier rounds have not taken (a boolean
  mask, so values equal to the type's lowest are never confused with taken
  ones): each round's max is a value, its first position an index, so ties go
  to the lower index as ONNX asks; smallest-first is TopK of the flipped values.
  The rounds are concatenated along the axis (sorted, which `sorted=0` allows).
* Hardmax: 1 at the first position of each max along the axis (ArgMax's), 0
  elsewhere: the positions compared with that index, cast to the input's type
  (before opset 13, over the input flattened to 2-D at the axis).
"""

from __future__ import annotations

import numpy as np

from ...core import dtypes
from ...dialects.ge import AndOp, CompareOp, ConcatOp, NotOp, OrOp, ReduceMaxOp, WhereOp
from .. import ops
from ..builder import Tensor
from .context import NodeContext
from .reduction import _flip
from .registry import converts
from .shape import _axis


def _positions(x: Tensor, axis: int) -> np.ndarray:
    shape = [-1 if i == axis else 1 for i in range(x.rank)]
    return np.arange(x.shape[axis], dtype=np.int64).reshape(shape)


def _first_index(c: NodeContext, hits: Tensor, positions: np.ndarray, axis: int, last: bool = False) -> Tensor:
    """The first (or last) position along `axis` where `hits` holds, keepdims."""
    n = positions.size
    if last:
        chosen = c.g.op(WhereOp, hits, c.g.const(positions), c.g.const(np.array(-1, np.int64)))
        return c.g.op(ReduceMaxOp, chosen, axes=[axis], keepdims=True)
    chosen = c.g.op(WhereOp, hits, c.g.const(-positions), c.g.const(np.array(-n, np.int64)))
    return -c.g.op(ReduceMaxOp, chosen, axes=[axis], keepdims=True)


@converts("ArgMax", "ArgMin")
def arg_extremum(c: NodeContext):
    x = c.input(0, "data")
    if x.rank == 0:
        raise c.fail("input must have rank >= 1")
    axis = _axis(c, c.int("axis", 0), x.rank)
    keepdims = bool(c.int("keepdims", 1))
    last = bool(c.int("select_last_index", 0)) if c.opset >= 12 else False
    if x.shape[axis] == 0:
        raise c.fail(f"cannot take the arg{'max' if c.node.op_type == 'ArgMax' else 'min'} of an empty axis")
    values = x if c.node.op_type == "ArgMax" else _flip(x)
    peak = c.g.op(ReduceMaxOp, values, axes=[axis], keepdims=True)
    hits = c.g.op(CompareOp, values, peak, predicate="eq")
    index = _first_index(c, hits, _positions(x, axis), axis, last)
    return index if keepdims else ops.reshape(index, [d for i, d in enumerate(x.shape) if i != axis])


@converts("Hardmax")
def hardmax(c: NodeContext):
    x = c.input(0, "input")
    if x.rank == 0:
        raise c.fail("input must have rank >= 1")
    if c.opset < 13:  # over the input flattened to 2-D at `axis`
        axis = _axis(c, c.int("axis", 1), x.rank)
        rows = int(np.prod(x.shape[:axis], dtype=np.int64))
        flat = ops.reshape(x, [rows, int(np.prod(x.shape, dtype=np.int64)) // max(rows, 1)])
        return ops.reshape(_hardmax(c, flat, 1), list(x.shape))
    return _hardmax(c, x, _axis(c, c.int("axis", -1), x.rank))


def _hardmax(c: NodeContext, x: Tensor, axis: int) -> Tensor:
    peak = c.g.op(ReduceMaxOp, x, axes=[axis], keepdims=True)
    positions = _positions(x, axis)
    index = _first_index(c, c.g.op(CompareOp, x, peak, predicate="eq"), positions, axis)
    return ops.cast(c.g.op(CompareOp, c.g.const(positions), index, predicate="eq"), x.dtype)


@converts("TopK", static=(1,))
def top_k(c: NodeContext):
    x = c.input(0, "X")
    if x.rank == 0:
        raise c.fail("input must have rank >= 1")
    axis = _axis(c, c.int("axis", -1), x.rank)
    if c.opset >= 10:
        k_value = c.ints_input(1, "K")
        if k_value is None or len(k_value) != 1:
            raise c.fail("K must be a single integer")
        k = k_value[0]
    else:
        k = c.int("k")
    largest = bool(c.int("largest", 1)) if c.opset >= 11 else True
    c.ignore("sorted")  # the result is always sorted, which sorted=0 allows
    if not 0 <= k <= x.shape[axis]:
        raise c.fail(f"K = {k} is outside [0, {x.shape[axis]}] (dim {axis} of {x.type})")
    if k == 0:
        raise c.unsupported("K = 0 (empty outputs) is not supported")
    if dtypes.is_bool(x.dtype):
        raise c.unsupported("TopK of booleans is not supported")
    values = x if largest else _flip(x)
    positions = _positions(x, axis)
    taken = None
    lowest = c.g.const(np.array(_lowest(values), dtype=dtypes.to_numpy_dtype(values.dtype)))
    tops, indices = [], []
    for _ in range(k):
        candidates = values if taken is None else c.g.op(WhereOp, taken, lowest, values)
        peak = c.g.op(ReduceMaxOp, candidates, axes=[axis], keepdims=True)
        hits = c.g.op(CompareOp, candidates, peak, predicate="eq")
        if taken is not None:
            hits = c.g.op(AndOp, hits, c.g.op(NotOp, taken))
        index = _first_index(c, hits, positions, axis)
        chosen = c.g.op(CompareOp, c.g.const(positions), index, predicate="eq")
        taken = chosen if taken is None else c.g.op(OrOp, taken, chosen)
        tops.append(peak)
        indices.append(index)
    top = tops[0] if k == 1 else c.g.op(ConcatOp, *tops, axis=axis)
    index = indices[0] if k == 1 else c.g.op(ConcatOp, *indices, axis=axis)
    return [top if largest else _flip(top), index]


def _lowest(x: Tensor):
    dtype = dtypes.to_numpy_dtype(x.dtype)
    return np.iinfo(dtype).min if np.issubdtype(dtype, np.integer) else -np.inf
