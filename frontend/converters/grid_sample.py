"""GridSample over a grid computed at run time, in ge ops (2-D and 3-D).

As ONNX's reference (PyTorch's grid_sampler): each output position takes its
normalized coordinates from the grid (last dim in reversed spatial order),
denormalized per align_corners; nearest rounds them half to even; a coordinate
outside the borders is clamped (border) or reflected (reflection). Linear and
cubic (Keys, a = -0.75) interpolate separably from the 2 or 4 neighbours per
dim around floor(x); every neighbour index is then resolved by the padding
mode (zeros: outside reads 0; border: clamped; reflection: reflected and
truncated). The input is viewed as rows of channels, (N * prod(spatial), C),
so each neighbour combination is one `ge.gather` of rows at a flat index
computed per output position; its weight is the product of the per-dim
coefficients (times 0 for a zeros-padding neighbour outside), and the
weighted rows are summed.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ...core import dtypes
from ...dialects.ge import CompareOp, FloorOp, GatherOp, MaximumOp, MinimumOp, RoundOp, TransposeOp, WhereOp
from .. import ops
from ..builder import Tensor, slice_
from .context import NodeContext
from .registry import converts

_CUBIC_A = -0.75


class _Grid:
    """Builds the element-wise pieces in the grid's type."""

    def __init__(self, c: NodeContext, like: Tensor):
        self.c, self.like = c, like
        self.numpy_type = dtypes.to_numpy_dtype(like.dtype)

    def k(self, v: float) -> Tensor:
        return self.c.g.const(np.array(v, self.numpy_type))

    def where(self, cond: Tensor, a: Tensor, b: Tensor) -> Tensor:
        return self.c.g.op(WhereOp, cond, a, b)

    def cmp(self, a: Tensor, predicate: str, v: float) -> Tensor:
        return self.c.g.op(CompareOp, a, self.k(v), predicate=predicate)

    def clamp(self, x: Tensor, lo: float, hi: float) -> Tensor:
        return self.c.g.op(MinimumOp, self.c.g.op(MaximumOp, x, self.k(lo)), self.k(hi))

    def floor(self, x: Tensor) -> Tensor:
        return self.c.g.op(FloorOp, x)

    def reflect(self, x: Tensor, lo: float, hi: float) -> Tensor:
        """The reference's _gs_reflect: folded back into [lo, hi] off either side."""
        span = hi - lo
        if span <= 0:
            return self.where(self.cmp(x, "lt", lo), self.k(lo), self.where(self.cmp(x, "gt", hi), self.k(hi), x))
        below, above = lo - x, x - hi
        result = x
        for distance, near, far, side in ((below, lo, hi, "lt"), (above, hi, lo, "gt")):
            turns = self.floor(distance / self.k(span))
            rest = distance - turns * self.k(span)
            odd = self.cmp(turns - self.floor(turns * self.k(0.5)) * self.k(2.0), "gt", 0.5)
            sign = 1.0 if near == lo else -1.0
            folded = self.where(odd, self.k(far) - rest * self.k(sign), self.k(near) + rest * self.k(sign))
            result = self.where(self.cmp(x, side, near), folded, result)
        return result


def _cubic(g: _Grid, t: Tensor) -> list[Tensor]:
    """Keys' weights of the neighbours at -1, 0, 1, 2 for a fraction t in [0, 1)."""
    a = _CUBIC_A

    def far(d: Tensor) -> Tensor:  # 1 < d < 2
        return ((g.k(a) * d - g.k(5 * a)) * d + g.k(8 * a)) * d - g.k(4 * a)

    def near(d: Tensor) -> Tensor:  # 0 <= d <= 1
        return (g.k(a + 2) * d - g.k(a + 3)) * d * d + g.k(1.0)

    one = g.k(1.0)
    return [far(t + one), near(t), near(one - t), far(g.k(2.0) - t)]


@converts("GridSample")
def grid_sample(c: NodeContext):
    x, grid = c.input(0, "X"), c.input(1, "grid")
    n = x.rank - 2
    if n not in (2, 3) or grid.rank != x.rank or grid.shape[-1] != n or grid.shape[0] != x.shape[0]:
        raise c.unsupported(f"2-D and 3-D GridSample are supported (X (N, C, ...), grid (N, ..., {max(n, 1)})), "
                            f"got {x.type} and {grid.type}")
    if not (dtypes.is_float(x.dtype) and dtypes.is_float(grid.dtype)):
        raise c.fail(f"X and grid must be floating point, got {x.type} and {grid.type}")
    mode = c.string("mode", "linear" if c.opset >= 20 else "bilinear")
    mode = {"bilinear": "linear", "bicubic": "cubic"}.get(mode, mode)
    padding = c.string("padding_mode", "zeros")
    align = bool(c.int("align_corners", 0))
    if mode not in ("nearest", "linear", "cubic") or padding not in ("zeros", "border", "reflection"):
        raise c.fail(f"mode '{mode}' or padding_mode '{padding}' is not one ONNX defines")
    if mode == "cubic" and n != 2:
        raise c.fail("cubic mode is defined for 4-D inputs only")
    g = _Grid(c, grid)
    batch, channels, *sizes = x.shape
    out = list(grid.shape[1:-1])
    per_dim = []  # per spatial dim: [(index as float, weight or None)] per neighbour
    for i, size in enumerate(sizes):
        coordinate = ops.reshape(slice_(grid, [n - 1 - i], [n - i], [grid.rank - 1]), [batch, *out])
        lo, hi = (0.0, size - 1.0) if align else (-0.5, size - 0.5)
        if align:
            p = (coordinate + g.k(1.0)) * g.k(0.5 * (size - 1))
        else:
            p = ((coordinate + g.k(1.0)) * g.k(float(size)) - g.k(1.0)) * g.k(0.5)
        if mode == "nearest":
            p = c.g.op(RoundOp, p)
        if padding == "border":
            clamped = g.clamp(p, 0, size - 1)  # only where outside [lo, hi], as the reference
            p = g.where(g.cmp(p, "lt", lo), clamped, g.where(g.cmp(p, "gt", hi), clamped, p))
        elif padding == "reflection":
            p = g.reflect(p, lo, hi)
        if mode == "nearest":
            per_dim.append([(p, None)])
            continue
        base = g.floor(p)
        t = p - base
        if mode == "linear":
            per_dim.append([(base, g.k(1.0) - t), (base + g.k(1.0), t)])
        else:
            weights = _cubic(g, t)
            per_dim.append([(base + g.k(float(d)), w) for d, w in zip((-1, 0, 1, 2), weights)])
    rows = ops.reshape(c.g.op(TransposeOp, x, perm=[0, *range(2, 2 + n), 1]), [batch * math.prod(sizes), channels])
    batch_start = c.g.const((np.arange(batch, dtype=np.int64) * math.prod(sizes)).reshape([batch] + [1] * len(out)))
    total = None
    for combination in itertools.product(*per_dim):
        flat, weight = batch_start, None
        for i, ((index, w), size) in enumerate(zip(combination, sizes)):
            index, valid = _resolve(g, index, size, padding, align)
            stride = math.prod(sizes[i + 1 :])
            flat = flat + ops.cast(index, dtypes.from_numpy_dtype(np.int64)) * c.g.const(np.array(stride, np.int64))
            if valid is not None:
                w = ops.cast(valid, grid.dtype) if w is None else w * ops.cast(valid, grid.dtype)
            if w is not None:
                weight = w if weight is None else weight * w
        picked = c.g.op(GatherOp, rows, flat, axis=0)  # (N, *out, C)
        if weight is not None:
            picked = picked * ops.cast(ops.reshape(weight, [*weight.shape, 1]), x.dtype)
        total = picked if total is None else total + picked
    return c.g.op(TransposeOp, total, perm=[0, n + 1, *range(1, n + 1)])


def _resolve(g: _Grid, index: Tensor, size: int, padding: str, align: bool):
    """(an in-range index, a validity mask or None) for a neighbour index, by the
    padding mode as the reference's _pixel_at_array resolves it."""
    if padding == "zeros":
        valid = g.c.g.op(WhereOp, g.cmp(index, "lt", 0.0), g.c.g.const(np.array(False)),
                         g.cmp(index, "le", size - 1.0))
        return g.clamp(index, 0.0, size - 1.0), valid
    if padding == "border":
        return g.clamp(index, 0.0, size - 1.0), None
    lo, hi = (0.0, size - 1.0) if align else (-0.5, size - 0.5)
    reflected = g.reflect(index, lo, hi)
    # int() truncates towards zero; a reflected index is >= lo >= -0.5
    truncated = g.where(g.cmp(reflected, "lt", 0.0), g.k(0.0) - g.floor(g.k(0.0) - reflected), g.floor(reflected))
    return g.clamp(truncated, 0.0, size - 1.0), None
