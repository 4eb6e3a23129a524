"""Element-wise indexing with indices known at import: GatherElements, ScatterElements
(and its old name Scatter), ScatterND, OneHot, and Trilu's triangle.

With the indices constant, where each element goes is known here, so every op is a
gather with a constant index table and a `ge.where` over a constant mask:

* GatherElements: data flattened, one `ge.gather` of the flat positions the
  indices name (computed here), shaped as the indices.
* ScatterElements / ScatterND: data viewed as rows (one element, or one slice of
  the trailing dims for ScatterND), updates likewise. The updates are applied in
  rounds in which no row is written twice: per round, one `ge.gather` brings each
  written row its update and a `ge.where` (or the reduction: add, mul, max, min,
  then a where) merges it. Duplicate indices take as many rounds as the most
  written row, applied in the order ONNX's reference applies them.
* OneHot: a constant mask selecting `values[1]` over `values[0]` (`ge.where`).
* Trilu: `ge.where` of a constant triangular mask, x or zero.

GatherElements also takes indices computed at run time (the flat positions are
then computed by ge ops); the other ops refuse them with an error naming the
input (they must be import-time constants).
"""

from __future__ import annotations

import math

import numpy as np

from ...core import dtypes
from ...dialects.ge import AddOp, CompareOp, ConstOp, GatherOp, MaximumOp, MinimumOp, MulOp, WhereOp
from .. import ops
from ..builder import Tensor, slice_
from .context import NodeContext
from .registry import converts
from .shape import _axis


def _normalized(c: NodeContext, indices: np.ndarray, size: int, what: str) -> np.ndarray:
    """Indices in [-size, size) made non-negative; others are an error."""
    indices = indices.astype(np.int64)
    bad = (indices < -size) | (indices >= size)
    if np.any(bad):
        raise c.fail(f"{what} {int(indices[bad].flat[0])} is out of range for a dim of size {size}")
    return np.where(indices < 0, indices + size, indices)


def _element_positions(c: NodeContext, shape: tuple[int, ...], indices: np.ndarray, axis: int) -> np.ndarray:
    """Flat positions in an array of `shape` of the elements GatherElements /
    ScatterElements address: index `indices[p]` along `axis`, p's other coordinates."""
    if indices.ndim != len(shape):
        raise c.fail(f"indices have rank {indices.ndim}, data has rank {len(shape)}")
    if any(i > d for a, (i, d) in enumerate(zip(indices.shape, shape)) if a != axis):
        raise c.fail(f"indices of shape {list(indices.shape)} reach outside data of shape {list(shape)}")
    coordinates = list(np.indices(indices.shape))
    coordinates[axis] = _normalized(c, indices, shape[axis], "index")
    return np.ravel_multi_index(coordinates, shape) if indices.size else np.zeros(indices.shape, np.int64)


@converts("GatherElements")
def gather_elements(c: NodeContext):
    """Constant indices: their flat positions computed here. Run-time ones: the
    same positions computed by ge ops (negative indices wrapped with a where,
    times the axis' stride, plus a constant of the other coordinates' part)."""
    data = c.input(0, "data")
    indices = c.input(1, "indices")
    axis = _axis(c, c.int("axis", 0), data.rank)
    flat = ops.reshape(data, [math.prod(data.shape)])
    known = _constant_value(indices)
    if known is not None:
        positions = _element_positions(c, data.shape, known, axis)
        return c.g.op(GatherOp, flat, c.g.const(positions.astype(np.int64)), axis=0)
    if indices.rank != data.rank or any(
        i > d for a, (i, d) in enumerate(zip(indices.shape, data.shape)) if a != axis
    ):
        raise c.fail(f"indices {indices.type} do not fit data {data.type}")
    zeros = np.zeros(indices.shape, dtype=np.int64)
    others = _element_positions(c, data.shape, zeros, axis)  # the index part set to 0
    stride = math.prod(data.shape[axis + 1 :])
    size = data.shape[axis]
    wide = indices if str(indices.dtype) == "i64" else ops.cast(indices, "i64")
    negative = c.g.op(CompareOp, wide, c.g.const(np.array(0, np.int64)), predicate="lt")
    wrapped = c.g.op(WhereOp, negative, wide + c.g.const(np.array(size, np.int64)), wide)
    positions = wrapped * c.g.const(np.array(stride, np.int64)) + c.g.const(others)
    return c.g.op(GatherOp, flat, positions, axis=0)


def _constant_value(t: Tensor) -> np.ndarray | None:
    """The value of `t` if it is a `ge.const` (an initializer, a folded subgraph)."""
    owner = t.value.owner
    return owner.as_array() if isinstance(owner, ConstOp) else None


_REDUCE = {"add": AddOp, "mul": MulOp, "max": MaximumOp, "min": MinimumOp}


def _reduction(c: NodeContext) -> str:
    reduction = c.string("reduction", "none") if c.opset >= 16 else "none"
    if reduction not in ("none", *_REDUCE):
        raise c.fail(f"reduction '{reduction}' is not one of none, add, mul, max, min")
    return reduction


@converts("ScatterElements", "Scatter", static=(1,))
def scatter_elements(c: NodeContext):
    data = c.input(0, "data")
    indices = c.constant(1, "indices")
    updates = c.input(2, "updates")
    axis = _axis(c, c.int("axis", 0), data.rank)
    if updates.shape != indices.shape:
        raise c.fail(f"updates {updates.type} must have the shape of the indices {list(indices.shape)}")
    reduction = _reduction(c) if c.node.op_type == "ScatterElements" else "none"
    targets = _element_positions(c, data.shape, indices, axis).reshape(-1)
    rows = ops.reshape(data, [math.prod(data.shape), 1])
    result = _scatter_rows(c, rows, ops.reshape(updates, [math.prod(updates.shape), 1]), targets, reduction)
    return ops.reshape(result, data.shape)


@converts("ScatterND", static=(1,))
def scatter_nd(c: NodeContext):
    data = c.input(0, "data")
    indices = c.constant(1, "indices")
    updates = c.input(2, "updates")
    if indices.ndim < 1 or indices.shape[-1] > data.rank:
        raise c.fail(f"indices of shape {list(indices.shape)} do not index data {data.type}")
    q = indices.shape[-1]
    expected = (*indices.shape[:-1], *data.shape[q:])
    if updates.shape != expected:
        raise c.fail(f"updates {updates.type} must have shape {list(expected)}")
    lead = data.shape[:q]
    tuples = indices.reshape(-1, q)
    coordinates = [_normalized(c, tuples[:, i], size, "index") for i, size in enumerate(lead)]
    targets = np.ravel_multi_index(coordinates, lead) if tuples.size else np.zeros(len(tuples), np.int64)
    row = math.prod(data.shape[q:])
    rows = ops.reshape(data, [math.prod(lead), row])
    result = _scatter_rows(c, rows, ops.reshape(updates, [len(tuples), row]), targets, _reduction(c))
    return ops.reshape(result, data.shape)


def _scatter_rows(c: NodeContext, rows: Tensor, updates: Tensor, targets: np.ndarray, reduction: str) -> Tensor:
    """`rows` (R, W) with update row u merged into row targets[u], in update order."""
    result = rows
    for round_ in _rounds(targets, reduction):
        source = np.zeros(rows.shape[0], dtype=np.int64)
        written = np.zeros((rows.shape[0], 1), dtype=np.bool_)
        for u in round_:
            source[targets[u]] = u
            written[targets[u]] = True
        incoming = c.g.op(GatherOp, updates, c.g.const(source), axis=0)
        if reduction != "none":
            incoming = c.g.op(_REDUCE[reduction], result, incoming)
        result = c.g.op(WhereOp, c.g.const(written), incoming, result)
    return result


def _rounds(targets: np.ndarray, reduction: str) -> list[list[int]]:
    """The updates split into rounds writing each row at most once. Without a
    reduction a later update of a row replaces an earlier one: one round of the
    last update of each row."""
    if reduction == "none":
        last = {int(t): u for u, t in enumerate(targets)}
        return [sorted(last.values())] if last else []
    rounds: list[list[int]] = []
    written: dict[int, int] = {}  # row -> how many rounds already write it
    for u, t in enumerate(targets):
        r = written.get(int(t), 0)
        written[int(t)] = r + 1
        if r == len(rounds):
            rounds.append([])
        rounds[r].append(u)
    return rounds


@converts("OneHot", static=(0, 1))
def one_hot(c: NodeContext):
    """values[1] where the new axis' coordinate equals the index, values[0]
    elsewhere; negative indices count from `depth`, others out of range are off."""
    indices = c.constant(0, "indices")
    depth_value = c.constant(1, "depth")
    values = c.input(2, "values")
    if depth_value is None or depth_value.size != 1:
        raise c.fail("depth must be a scalar or a one-element tensor")
    depth = int(depth_value.reshape(-1)[0])
    if depth <= 0:
        raise c.fail(f"depth must be positive, got {depth}")
    if values.shape not in ((2,),):
        raise c.fail(f"values must be a 2-element tensor [off, on], got {values.type}")
    rank = indices.ndim + 1
    axis = _axis(c, c.int("axis", -1), rank)
    index = indices.astype(np.int64)
    index = np.where(index < 0, index + depth, index)
    mask = np.expand_dims(index, axis) == np.arange(depth).reshape([-1 if i == axis else 1 for i in range(rank)])
    off, on = slice_(values, [0], [1]), slice_(values, [1], [2])
    return c.g.op(WhereOp, c.g.const(mask), ops.reshape(on, [1] * rank), ops.reshape(off, [1] * rank))


@converts("Trilu", static=(1,))
def trilu(c: NodeContext):
    """Keeps the upper (j - i >= k) or lower (j - i <= k) triangle of the last two dims."""
    x = c.input(0, "input")
    if x.rank < 2:
        raise c.fail(f"input must have rank >= 2, got {x.type}")
    k = c.ints_input(1, "k")
    k = 0 if k is None else k[0]
    n, m = x.shape[-2:]
    offset = np.arange(m)[None, :] - np.arange(n)[:, None]
    keep = offset >= k if c.int("upper", 1) else offset <= k
    zero = c.g.const(np.zeros((), dtype=dtypes.to_numpy_dtype(x.dtype)))
    return c.g.op(WhereOp, c.g.const(keep), x, zero)
