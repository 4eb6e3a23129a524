"""Selections whose indices are known at import: GatherND, Compress and
ReverseSequence, each one `ge.gather` of rows with a constant index table.

The data is viewed as rows (its leading dims merged, the trailing ones kept),
and the table of which row goes where is computed here from the constant
operand (GatherND's indices, Compress's condition, ReverseSequence's lengths).
Compress's result shape depends on its condition's values, so a condition
computed at run time cannot be compiled for static shapes: it is an error
naming the input (`ge-translate --bind` makes a graph input a constant).
"""

from __future__ import annotations

import math

import numpy as np

from ...dialects.ge import GatherOp
from .. import ops
from ..builder import Tensor
from .context import NodeContext
from .registry import converts


def _rows(c: NodeContext, data: Tensor, lead: int, table: np.ndarray) -> Tensor:
    """Rows of `data` (its first `lead` dims merged) picked by `table`, shaped
    table.shape + the remaining dims."""
    rows = ops.reshape(data, [math.prod(data.shape[:lead]), *data.shape[lead:]])
    return c.g.op(GatherOp, rows, c.g.const(np.asarray(table, np.int64)), axis=0)


@converts("GatherND", static=(1,))
def gather_nd(c: NodeContext):
    data = c.input(0, "data")
    indices = c.constant(1, "indices").astype(np.int64)
    b = c.int("batch_dims", 0) if c.opset >= 12 else 0
    if indices.ndim < 1 or b < 0 or b >= indices.ndim or b + indices.shape[-1] > data.rank:
        raise c.fail(f"indices of shape {list(indices.shape)} (batch_dims {b}) do not index data {data.type}")
    if tuple(indices.shape[:b]) != tuple(data.shape[:b]):
        raise c.fail(f"the batch dims of indices {list(indices.shape[:b])} differ from the data's {list(data.shape[:b])}")
    q = indices.shape[-1]
    dims = np.array(data.shape[b : b + q], np.int64)
    if np.any((indices < -dims) | (indices >= dims)):
        raise c.fail(f"an index is out of range for data {data.type}")
    inner = np.ravel_multi_index(tuple(np.moveaxis(np.where(indices < 0, indices + dims, indices), -1, 0)),
                                 tuple(dims)) if q else np.zeros(indices.shape[:-1], np.int64)
    batch = np.arange(math.prod(data.shape[:b]), dtype=np.int64).reshape(data.shape[:b])
    batch = batch.reshape(batch.shape + (1,) * (inner.ndim - b))
    return _rows(c, data, b + q, batch * int(np.prod(dims)) + inner)


@converts("Compress", static=(1,))
def compress(c: NodeContext):
    data = c.input(0, "input")
    condition = c.constant(1, "condition")
    if condition.ndim != 1:
        raise c.fail(f"condition must be 1-D, got shape {list(condition.shape)}")
    axis = c.int("axis", None)
    if axis is None:
        data, axis = ops.reshape(data, [math.prod(data.shape)]), 0
    if not -data.rank <= axis < data.rank:
        raise c.fail(f"axis {axis} is out of range for {data.type}")
    axis %= data.rank
    if condition.size > data.shape[axis]:
        raise c.fail(f"condition has {condition.size} values, more than dim {axis} of {data.type}")
    kept = np.flatnonzero(condition.astype(bool))
    return c.g.op(GatherOp, data, c.g.const(kept.astype(np.int64)), axis=axis)


@converts("ReverseSequence", static=(1,))
def reverse_sequence(c: NodeContext):
    x = c.input(0, "input")
    lengths = c.constant(1, "sequence_lens").astype(np.int64).reshape(-1)
    batch_axis, time_axis = c.int("batch_axis", 1), c.int("time_axis", 0)
    if x.rank < 2 or {batch_axis, time_axis} != {0, 1}:
        raise c.fail(f"batch_axis and time_axis must be 0 and 1 (in either order) of an input of rank >= 2, got {x.type}")
    batches, steps = x.shape[batch_axis], x.shape[time_axis]
    if lengths.size != batches or np.any((lengths < 0) | (lengths > steps)):
        raise c.fail(f"sequence_lens must hold {batches} lengths of at most {steps}, got {lengths.tolist()}")
    table = np.arange(x.shape[0] * x.shape[1], dtype=np.int64).reshape(x.shape[:2])
    for b, n in enumerate(lengths):
        lane = (slice(None), b) if time_axis == 0 else (b, slice(None))
        table[lane][:n] = table[lane][:n][::-1].copy()
    return _rows(c, x, 2, table)
