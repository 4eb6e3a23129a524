"""Data movement: Transpose, Reshape, Flatten, Squeeze, Unsqueeze, Concat, Split,
Slice, Gather, Pad, Expand, and Shape (folded: shapes are static here).

Shape-like operands (Reshape's shape, axes, pads, splits, slice bounds) are inputs
since opsets 5-13 and attributes before; either way they are known at import, so
Flatten, Squeeze and Unsqueeze become `ge.reshape`, Slice is normalised into
`ge.slice`'s form, and Pad's negative pads (crops) become a slice first. Pad's
`wrap` mode has no ge twin: per padded axis it is a concat of the input's two
ends around it.
"""

from __future__ import annotations

import math

import numpy as np

from ...dialects.ge import ConcatOp, GatherOp, PadOp, SplitOp, TransposeOp
from .. import ops
from ..builder import Tensor, slice_
from .context import Constant, NodeContext
from .registry import converts


def _axis(c: NodeContext, axis: int, rank: int, what: str = "axis") -> int:
    if not -rank <= axis < max(rank, 1):
        raise c.fail(f"{what} {axis} is out of range for rank {rank}")
    return axis % rank if rank else 0


@converts("Transpose")
def transpose(c: NodeContext):
    x = c.input(0, "data")
    perm = c.ints("perm", None)
    return c.g.op(TransposeOp, x, perm=tuple(reversed(range(x.rank))) if perm is None else perm)


@converts("Reshape", static=(1,))
def reshape(c: NodeContext):
    x = c.input(0, "data")
    shape = c.ints_input(1, "shape") if c.opset >= 5 else c.ints("shape")
    allow_zero = bool(c.int("allowzero", 0))
    target = [x.shape[i] if d == 0 and not allow_zero else d for i, d in enumerate(shape)]
    if target.count(-1) > 1:
        raise c.fail(f"shape {list(shape)} has more than one -1")
    if -1 in target:
        known = math.prod(d for d in target if d != -1)
        size = math.prod(x.shape)
        if known == 0 or size % known:
            raise c.fail(f"cannot reshape {x.type} into {list(shape)}")
        target[target.index(-1)] = size // known
    if any(d < 0 for d in target):
        raise c.fail(f"invalid shape {list(shape)}")
    return ops.reshape(x, target)


@converts("Flatten")
def flatten(c: NodeContext):
    x = c.input(0, "input")
    axis = c.int("axis", 1)
    if not -x.rank <= axis <= x.rank:
        raise c.fail(f"axis {axis} is out of range for {x.type}")
    if axis < 0:
        axis += x.rank
    return ops.reshape(x, [math.prod(x.shape[:axis]), math.prod(x.shape[axis:])])


def _axes(c: NodeContext, since: int) -> tuple[int, ...] | None:
    """The `axes` operand: input 1 from opset `since`, an attribute before."""
    return c.ints_input(1, "axes") if c.opset >= since else c.ints("axes", None)


@converts("Squeeze", static=(1,))
def squeeze(c: NodeContext):
    x = c.input(0, "data")
    axes = _axes(c, 13)
    if axes is None:
        dropped = {i for i, d in enumerate(x.shape) if d == 1}
    else:
        dropped = {_axis(c, a, x.rank) for a in axes}
        wrong = [i for i in sorted(dropped) if x.shape[i] != 1]
        if wrong:
            raise c.fail(f"cannot squeeze dim {wrong[0]} of size {x.shape[wrong[0]]} in {x.type}")
    return ops.reshape(x, [d for i, d in enumerate(x.shape) if i not in dropped])


@converts("Unsqueeze", static=(1,))
def unsqueeze(c: NodeContext):
    x = c.input(0, "data")
    axes = _axes(c, 13)
    if axes is None:
        raise c.fail("needs axes")
    rank = x.rank + len(axes)
    inserted = {_axis(c, a, rank) for a in axes}
    if len(inserted) != len(axes):
        raise c.fail(f"axes {list(axes)} name a dimension twice")
    dims = iter(x.shape)
    return ops.reshape(x, [1 if i in inserted else next(dims) for i in range(rank)])


@converts("Concat")
def concat(c: NodeContext):
    return c.g.op(ConcatOp, *c.inputs(), axis=c.int("axis"))


@converts("Split", static=(1,))
def split(c: NodeContext):
    x = c.input(0, "input")
    axis = _axis(c, c.int("axis", 0), x.rank)
    dim = x.shape[axis]
    sizes = c.ints_input(1, "split") if c.opset >= 13 else c.ints("split", None)
    if not sizes:
        count = c.int("num_outputs", None) if c.opset >= 18 else None
        count = count or len(c.node.outputs)
        chunk = -(-dim // count)
        if c.opset < 18 and dim % count:
            raise c.fail(f"dim {axis} of size {dim} does not split into {count} equal parts")
        sizes = [chunk] * (count - 1) + [dim - chunk * (count - 1)]
        if sizes[-1] < 0:
            raise c.fail(f"dim {axis} of size {dim} cannot be split into {count} parts")
    if len(sizes) != len(c.node.outputs):
        raise c.fail(f"{len(sizes)} split sizes for {len(c.node.outputs)} outputs")
    return c.g.op(SplitOp, x, axis=axis, sizes=sizes)


@converts("Slice", static=(1, 2, 3, 4))
def slice_node(c: NodeContext):
    x = c.input(0, "data")
    if c.opset >= 10:
        starts, ends = c.ints_input(1, "starts"), c.ints_input(2, "ends")
        axes, steps = c.ints_input(3, "axes"), c.ints_input(4, "steps")
    else:
        starts, ends, axes, steps = c.ints("starts"), c.ints("ends"), c.ints("axes", None), None
    if starts is None or ends is None or len(starts) != len(ends):
        raise c.fail("starts and ends must be given, with one value per sliced axis")
    axes = tuple(range(len(starts))) if axes is None else axes
    steps = (1,) * len(starts) if steps is None else steps
    if not len(axes) == len(steps) == len(starts):
        raise c.fail("starts, ends, axes and steps must have the same length")
    normalized = [_axis(c, a, x.rank) for a in axes]
    if len(set(normalized)) != len(normalized):
        raise c.fail(f"axes {list(axes)} name a dimension twice")
    if 0 in steps:
        raise c.fail("steps cannot be zero")
    return slice_(x, starts, ends, normalized, steps)


@converts("Gather")
def gather(c: NodeContext):
    data = c.input(0, "data")
    return c.g.op(GatherOp, data, c.input(1, "indices"), axis=_axis(c, c.int("axis", 0), data.rank))


@converts("Expand", static=(1,))
def expand(c: NodeContext):
    return ops.expand(c.input(0, "input"), c.ints_input(1, "shape"))


@converts("Shape", reads_data=False)
def shape(c: NodeContext):
    x = c.input(0, "data")
    start, end = c.int("start", 0), c.int("end", None)
    return Constant(np.array(x.shape[start:end], dtype=np.int64))


# ---- Pad ------------------------------------------------------------------------------------


@converts("Pad", static=(1, 2, 3))
def pad(c: NodeContext):
    x = c.input(0, "data")
    mode = c.string("mode", "constant")
    if c.opset >= 11:
        pads, value = c.ints_input(1, "pads"), c.constant(2, "constant_value")
        axes = c.ints_input(3, "axes")
        value = 0.0 if value is None or value.size == 0 else value.reshape(-1)[0].item()
    else:
        pads, value, axes = c.ints("pads" if c.opset >= 2 else "paddings"), c.float("value", 0.0), None
    pads = _full_pads(c, x.rank, pads, axes)
    x = _crop(x, pads)
    pads = [max(p, 0) for p in pads]
    if not any(pads):
        return ops.identity(x)
    if mode == "wrap":
        return _wrap(c, x, pads)
    if mode not in ("constant", "reflect", "edge"):
        raise c.unsupported(f"mode '{mode}' is not supported (constant, reflect, edge, wrap)")
    return c.g.op(PadOp, x, pads=pads, mode=mode, value=float(value))


def _full_pads(c: NodeContext, rank: int, pads, axes) -> list[int]:
    """[begin_0..begin_n, end_0..end_n] over every dim (`axes` selects some)."""
    if pads is None:
        raise c.fail("needs pads")
    axes = range(rank) if axes is None else [_axis(c, a, rank) for a in axes]
    axes = list(axes)
    if len(pads) != 2 * len(axes):
        raise c.fail(f"pads has {len(pads)} values, expected {2 * len(axes)}")
    full = [0] * (2 * rank)
    for i, axis in enumerate(axes):
        full[axis], full[axis + rank] = pads[i], pads[i + len(axes)]
    return full


def _crop(x: Tensor, pads: list[int]) -> Tensor:
    """Negative pads remove elements."""
    rank = x.rank
    if all(p >= 0 for p in pads):
        return x
    starts = [max(-pads[i], 0) for i in range(rank)]
    ends = [d - max(-pads[i + rank], 0) for i, d in enumerate(x.shape)]
    return slice_(x, starts, ends)


def _wrap(c: NodeContext, x: Tensor, pads: list[int]) -> Tensor:
    rank = x.rank
    for axis in range(rank):
        begin, end = pads[axis], pads[axis + rank]
        size = x.shape[axis]
        if not (begin or end):
            continue
        if begin > size or end > size:
            raise c.unsupported(f"wrap padding larger than the dim ({size}) is not supported")
        parts = []
        if begin:
            parts.append(slice_(x, [size - begin], [size], [axis]))
        parts.append(x)
        if end:
            parts.append(slice_(x, [0], [end], [axis]))
        x = c.g.op(ConcatOp, *parts, axis=axis)
    return x


# ---- Tile, DepthToSpace, SpaceToDepth ---------------------------------------------------------


@converts("Tile", static=(1,))
def tile(c: NodeContext):
    """Each dim d repeated r times is a new leading unit dim expanded to r, then
    merged into d: (d0, d1) -> (1, d0, 1, d1) -> (r0, d0, r1, d1) -> (r0*d0, r1*d1)."""
    x = c.input(0, "input")
    repeats = c.ints_input(1, "repeats")
    if repeats is None or len(repeats) != x.rank:
        raise c.fail(f"repeats must have one value per dim of {x.type}, got {None if repeats is None else list(repeats)}")
    if any(r < 0 for r in repeats):
        raise c.fail(f"repeats must be non-negative, got {list(repeats)}")
    if all(r == 1 for r in repeats):
        return ops.identity(x)
    interleaved = [v for d in x.shape for v in (1, d)]
    expanded = ops.expand(ops.reshape(x, interleaved), [v for r, d in zip(repeats, x.shape) for v in (r, d)])
    return ops.reshape(expanded, [r * d for r, d in zip(repeats, x.shape)])


def _block_mode(c: NodeContext) -> str:
    mode = c.string("mode", "DCR")
    if mode not in ("DCR", "CRD"):
        raise c.fail(f"mode '{mode}' is not one of DCR, CRD")
    return mode


def _blocked_input(c: NodeContext) -> tuple[Tensor, int]:
    x = c.input(0, "input")
    block = c.int("blocksize")
    if x.rank != 4:
        raise c.fail(f"input must be 4-D (N, C, H, W), got {x.type}")
    if block <= 0:
        raise c.fail(f"blocksize must be positive, got {block}")
    return x, block


@converts("DepthToSpace")
def depth_to_space(c: NodeContext):
    """Channels moved into b x b spatial blocks: a reshape exposing the block, a
    transpose interleaving it with H and W, a reshape merging them. DCR takes the
    block from the outer channel bits, CRD from the inner ones."""
    x, b = _blocked_input(c)
    n, ch, h, w = x.shape
    if ch % (b * b):
        raise c.fail(f"channels ({ch}) are not a multiple of blocksize^2 ({b * b})")
    depth = ch // (b * b)
    if _block_mode(c) == "DCR":
        y = c.g.op(TransposeOp, ops.reshape(x, [n, b, b, depth, h, w]), perm=(0, 3, 4, 1, 5, 2))
    else:
        y = c.g.op(TransposeOp, ops.reshape(x, [n, depth, b, b, h, w]), perm=(0, 1, 4, 2, 5, 3))
    return ops.reshape(y, [n, depth, h * b, w * b])


@converts("SpaceToDepth")
def space_to_depth(c: NodeContext):
    """The inverse of DepthToSpace (DCR, or CRD where opset 25's `mode` asks)."""
    x, b = _blocked_input(c)
    n, ch, h, w = x.shape
    if h % b or w % b:
        raise c.fail(f"spatial dims {h}x{w} are not multiples of blocksize {b}")
    blocks = ops.reshape(x, [n, ch, h // b, b, w // b, b])
    perm = (0, 3, 5, 1, 2, 4) if _block_mode(c) == "DCR" else (0, 1, 3, 5, 2, 4)
    return ops.reshape(c.g.op(TransposeOp, blocks, perm=perm), [n, ch * b * b, h // b, w // b])
