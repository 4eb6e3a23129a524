"""Data movement kernels: ops that only move elements, each described as an
`IndexMap` (which source element lands where) and written by `copy_kernel`.

* `copy_to_output` (a result of @main written by no op: also converts a
  formatted tensor back to ND), `ge.reshape` when a side is in a physical format
  (the shapes' common refinement, cut at the format's blocks);
* `ge.transpose`, `ge.expand` (a source stride 0), `ge.slice` (steps, negative
  steps), `ge.concat` (one map per input), `ge.split` (one per output), `ge.pad`
  (constant: fills; reflect: reversed maps; edge: broadcast maps; 3^rank regions).

Inputs and outputs may be in any format: the maps are logical and the pieces
follow each tensor's layout; a formatted output's padding is zeroed by fills.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from ....dialects import ge
from ..context import KernelContext
from .registry import kernel_for
from .copy_kernel import emit_moves, moves_cycles, pieces_of
from .index_map import IndexMap, MapAxis, box_map


def copy_to_output(k: KernelContext) -> None:
    """Copy a graph result into its output argument (same logical shape; the
    source may be in a physical format, the output is ND)."""
    shape = k.outputs[0].shape
    _move(k, [(box_map(shape, [0] * len(shape), [0] * len(shape)), 0, 0)])


def _move(k: KernelContext, maps: Sequence[tuple[IndexMap, int | None, int]]) -> None:
    emit_moves(k, pieces_of(k, maps))


@kernel_for(ge.TransposeOp)
def lower_transpose(op: ge.TransposeOp, k: KernelContext) -> None:
    perm = op.attr_values().perm
    shape = k.outputs[0].shape
    zeros = [0] * len(shape)
    _move(k, [(box_map(shape, zeros, zeros, [((p, 1),) for p in perm]), 0, 0)])


@kernel_for(ge.ExpandOp)
def lower_expand(op: ge.ExpandOp, k: KernelContext) -> None:
    shape, source = k.outputs[0].shape, k.inputs[0].shape
    lead = len(shape) - len(source)
    terms = [
        () if d < lead or source[d - lead] == 1 and size != 1 else ((d - lead, 1),) for d, size in enumerate(shape)
    ]
    _move(k, [(box_map(shape, [0] * len(shape), [0] * len(source), terms), 0, 0)])


def _slice_maps(op: ge.SliceOp, k: KernelContext) -> list[tuple[IndexMap, int | None, int]]:
    a = op.attr_values()
    shape = k.outputs[0].shape
    terms = [((d, step),) for d, step in enumerate(a.steps)]
    return [(box_map(shape, [0] * len(shape), list(a.starts), terms), 0, 0)]


@kernel_for(ge.SliceOp)
def lower_slice(op: ge.SliceOp, k: KernelContext) -> None:
    _move(k, _slice_maps(op, k))


def slice_cycles(op: ge.SliceOp, k: KernelContext) -> float:
    """The estimated cycles of `lower_slice`'s kernel (`k`: a scratch context of the op)."""
    return moves_cycles(k.hw, pieces_of(k, _slice_maps(op, k)))


@kernel_for(ge.ConcatOp)
def lower_concat(op: ge.ConcatOp, k: KernelContext) -> None:
    """Input i is the box of the output starting at the sizes of the inputs before it."""
    parts = _stacked([t.shape for t in k.inputs], op.attr_values().axis)
    _move(k, [(box_map(shape, start, [0] * len(shape)), i, 0) for i, (shape, start) in enumerate(parts)])


@kernel_for(ge.SplitOp)
def lower_split(op: ge.SplitOp, k: KernelContext) -> None:
    """Output i is the box of the input starting at the sizes of the outputs before it."""
    parts = _stacked([t.shape for t in k.outputs], op.attr_values().axis)
    _move(k, [(box_map(shape, [0] * len(shape), start), 0, i) for i, (shape, start) in enumerate(parts)])


def _stacked(shapes: Sequence[Sequence[int]], axis: int) -> list[tuple[Sequence[int], list[int]]]:
    """(shape, start index) of tensors laid one after the other along `axis`."""
    rank = len(shapes[0])
    axis %= rank
    parts, offset = [], 0
    for shape in shapes:
        start = [0] * rank
        start[axis] = offset
        parts.append((shape, start))
        offset += shape[axis]
    return parts


@kernel_for(ge.PadOp)
def lower_pad(op: ge.PadOp, k: KernelContext) -> None:
    """Each dim has three regions (before, the input, after); every product of
    regions is a box of the output: a fill of `value` in constant mode unless it
    is the input itself, else a map from the input (reflect reads backwards from
    the edge, edge repeats it)."""
    a = op.attr_values()
    shape = k.inputs[0].shape
    rank = len(shape)
    per_dim = [_pad_regions(size, a.pads[d], a.pads[d + rank], a.mode) for d, size in enumerate(shape)]
    maps = []
    for regions in itertools.product(*per_dim):
        extents = [r.extent for r in regions]
        if 0 in extents:
            continue
        dst_start = [r.dst_start for r in regions]
        if a.mode == "constant" and not all(r.inside for r in regions):
            maps.append((box_map(extents, dst_start, None, value=a.value), None, 0))
            continue
        axes = tuple(MapAxis(r.extent, ((d, 1),), ((d, r.step),) if r.step else ()) for d, r in enumerate(regions))
        maps.append((IndexMap(axes, tuple(dst_start), tuple(r.src_start for r in regions)), 0, 0))
    _move(k, maps)


@dataclass(frozen=True)
class _PadRegion:
    dst_start: int
    extent: int
    src_start: int  # the source index of the region's first element
    step: int  # source index step per destination step (0: the same element)
    inside: bool  # the input itself


def _pad_regions(size: int, before: int, after: int, mode: str) -> list[_PadRegion]:
    inner = _PadRegion(before, size, 0, 1, True)
    if mode == "reflect":
        return [_PadRegion(0, before, before, -1, False), inner, _PadRegion(before + size, after, size - 2, -1, False)]
    if mode == "edge":
        return [_PadRegion(0, before, 0, 0, False), inner, _PadRegion(before + size, after, size - 1, 0, False)]
    return [_PadRegion(0, before, 0, 0, False), inner, _PadRegion(before + size, after, 0, 0, False)]


@kernel_for(ge.ReshapeOp)
def lower_reshape(op: ge.ReshapeOp, k: KernelContext) -> None:
    """A reshape reaches a kernel only when a side is in a physical format (an ND
    reshape is a view of its input)."""
    if k.outputs[0].numel == 0:
        return
    imap = reshape_map(k.inputs[0].shape, k.outputs[0].shape)
    if imap is None:
        raise k.unsupported(
            f"reshape {list(k.inputs[0].shape)} -> {list(k.outputs[0].shape)} has no common refinement of its dims"
        )
    _move(k, [(imap, 0, 0)])


def reshape_map(src_shape: Sequence[int], dst_shape: Sequence[int]) -> IndexMap | None:
    """The reshape as a map over the common refinement of both shapes (every dim
    boundary of either side is one of the other side's or divides evenly), or None."""
    numel = math.prod(src_shape)
    src_bounds, dst_bounds = _suffix_products(src_shape), _suffix_products(dst_shape)
    bounds = sorted(set(src_bounds) | set(dst_bounds) | {1, numel})
    if any(hi % lo for lo, hi in zip(bounds, bounds[1:])):
        return None
    axes = []
    for lo, hi in reversed(list(zip(bounds, bounds[1:]))):
        axes.append(MapAxis(hi // lo, (_dim_term(dst_shape, lo),), (_dim_term(src_shape, lo),)))
    return IndexMap(tuple(axes), (0,) * len(dst_shape), (0,) * len(src_shape))


def _suffix_products(shape: Sequence[int]) -> list[int]:
    return [math.prod(shape[d:]) for d in range(len(shape) + 1)]


def _dim_term(shape: Sequence[int], flat_stride: int) -> tuple[int, int]:
    """(dim, coefficient) of the flat index step `flat_stride` in `shape`: the dim
    whose range of flat strides contains it (the innermost such non-unit dim)."""
    for d in reversed(range(len(shape))):
        inner = math.prod(shape[d + 1 :])
        if shape[d] > 1 and inner <= flat_stride < inner * shape[d]:
            return d, flat_stride // inner
    raise AssertionError("flat stride outside the shape")
