"""What a data movement op copies, as strided pieces of GM memory.

A data movement op (transpose, slice, concat, pad, transdata, ...) writes every
element of its destination from one element of a source, or a constant. An
`IndexMap` says which, in LOGICAL indices: a box of iteration axes, each moving
the destination index of one or more dims (coefficient 1, or the factors of a
reshape) and the source index of one or more dims (any coefficient: a slice step,
-1 for a reversal, none for a broadcast). A fill map has no source.

Formats make a logical index's physical address piecewise affine (`DimLayout`: a
dim cut into blocks of C0 or 16), while a copy instruction addresses affine
patterns only. `strided_pieces` therefore cuts the box where block boundaries
fall and returns `Piece`s: boxes whose GM offsets are affine in the axis indices
on both sides, with at most three pieces per blocked dim (a head inside the
first block, whole blocks as a block axis times an in-block axis, a tail), or
one per block touched when a step does not divide the block.
`padding_fills` are the fills that zero a formatted destination's padding.

Everything here is plain Python over integers: kernels are built from pieces
(`copy_kernel.py`), and tests check the pieces against numpy directly.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ....dialects.ge.formats import DimLayout, dim_layouts
from ..context import GmTensor


class UnsupportedMap(Exception):
    """The map cannot be cut into affine pieces (a kernel template turns this into
    a located 'has no NPU kernel for this case' error)."""


# ---- logical maps --------------------------------------------------------------------


@dataclass(frozen=True)
class MapAxis:
    extent: int
    dst: tuple[tuple[int, int], ...]  # (dst dim, coefficient)
    src: tuple[tuple[int, int], ...] = ()  # (src dim, coefficient); () broadcasts


@dataclass(frozen=True)
class IndexMap:
    """dst[dst_start + sum_k i_k * dst terms] = src[src_start + sum_k i_k * src terms]
    for every i in the box of `axes`; a fill (src_start None) writes `value`."""

    axes: tuple[MapAxis, ...]
    dst_start: tuple[int, ...]
    src_start: tuple[int, ...] | None = None
    value: float = 0.0

    @property
    def is_fill(self) -> bool:
        return self.src_start is None

    @property
    def empty(self) -> bool:
        return any(a.extent == 0 for a in self.axes)


def box_map(extents: Sequence[int], dst_start: Sequence[int], src_start: Sequence[int] | None,
            src_dims: Sequence[tuple[tuple[int, int], ...]] | None = None, value: float = 0.0) -> IndexMap:
    """A map over a box of the destination: axis d moves dst dim d; `src_dims[d]`
    gives its source terms (default: src dim d with coefficient 1)."""
    axes = []
    for d, extent in enumerate(extents):
        src = () if src_start is None else (src_dims[d] if src_dims is not None else ((d, 1),))
        axes.append(MapAxis(extent, ((d, 1),), src))
    return IndexMap(tuple(axes), tuple(dst_start), None if src_start is None else tuple(src_start), value)


# ---- strided pieces ------------------------------------------------------------------


@dataclass(frozen=True)
class Axis:
    extent: int
    src: int  # element strides in the GM images (src 0: broadcast)
    dst: int


@dataclass(frozen=True)
class Piece:
    """dst.value[dst_base + sum i_k * dst_k] = src.value[src_base + sum i_k * src_k]
    over the box of `axes` (outermost first), or `value` where `src` is None."""

    axes: tuple[Axis, ...]
    dst: GmTensor
    dst_base: int
    src: GmTensor | None = None
    src_base: int = 0
    value: float = 0.0

    @property
    def elements(self) -> int:
        return math.prod(a.extent for a in self.axes)

    def normalized(self) -> Piece:
        """Extent-1 axes dropped, every dst stride positive, axes ordered by
        decreasing dst stride and merged where both sides allow it."""
        src_base, dst_base, axes = self.src_base, self.dst_base, []
        for a in self.axes:
            if a.extent == 1:
                continue
            if a.dst < 0:  # walk it the other way round
                src_base += a.src * (a.extent - 1)
                dst_base += a.dst * (a.extent - 1)
                a = Axis(a.extent, -a.src, -a.dst)
            axes.append(a)
        axes.sort(key=lambda a: -a.dst)
        return replace(self, axes=tuple(merge_axes(axes)), src_base=src_base, dst_base=dst_base)


def merge_axes(axes: Sequence[Axis]) -> list[Axis]:
    """Adjacent axes (outer, inner) become one where outer strides = inner extent x
    inner strides on both sides."""
    merged: list[Axis] = []
    for a in axes:
        if merged:
            outer = merged[-1]
            if outer.src == a.extent * a.src and outer.dst == a.extent * a.dst:
                merged[-1] = Axis(outer.extent * a.extent, a.src, a.dst)
                continue
        merged.append(a)
    # Merging outer into inner can enable a merge with the next outer one.
    return merged if len(merged) == len(axes) else merge_axes(merged)


# A term of an axis on one side: (dim, coefficient in logical index units, part),
# part "flat" for an unsplit dim, "lo" / "hi" for the in-block / block parts of a
# blocked dim (offset coef * stride, or coef / block * block_stride).
_Term = tuple[int, int, str]


@dataclass(frozen=True)
class _Axis:
    extent: int
    terms: tuple[tuple[_Term, ...], tuple[_Term, ...]]  # (src terms, dst terms)


@dataclass(frozen=True)
class _Box:
    axes: tuple[_Axis, ...]
    starts: tuple[tuple[int, ...], tuple[int, ...]]  # (src start, dst start) per dim


_SRC, _DST = 0, 1


def strided_pieces(imap: IndexMap, src: GmTensor | None, dst: GmTensor) -> list[Piece]:
    """The map as pieces whose GM offsets are affine on both sides."""
    if imap.empty:
        return []
    sides = (src, dst)
    layouts = (dim_layouts(src.shape, src.format, src.element_type) if src is not None else (), _layouts(dst))
    axes = tuple(
        _Axis(a.extent, (tuple((d, c, "flat") for d, c in a.src), tuple((d, c, "flat") for d, c in a.dst)))
        for a in imap.axes
    )
    boxes = [_Box(axes, (imap.src_start or (), imap.dst_start))]
    for side in (_SRC, _DST):
        if sides[side] is None:
            continue
        for dim, layout in enumerate(layouts[side]):
            if layout.block:
                boxes = [part for box in boxes for part in _split_dim(box, side, dim, layout.block)]
    return [_resolve(box, layouts, src, dst, imap.value) for box in boxes]


def padding_fills(dst: GmTensor) -> list[IndexMap]:
    """Fills zeroing the padding of `dst`'s format image (none for ND): for each
    padded dim d, the region where index d is past the logical size and the
    earlier dims are inside it (so the regions do not overlap)."""
    layouts = _layouts(dst)
    fills = []
    for d, layout in enumerate(layouts):
        if layout.padded == layout.size:
            continue
        extents = [lay.size for lay in layouts[:d]] + [layout.padded - layout.size] + [lay.padded for lay in layouts[d + 1 :]]
        start = [0] * len(layouts)
        start[d] = layout.size
        fills.append(box_map(extents, start, None))
    return fills


def _layouts(t: GmTensor) -> tuple[DimLayout, ...]:
    return dim_layouts(t.shape, t.format, t.element_type)


# ---- cutting at block boundaries -----------------------------------------------------


def _split_dim(box: _Box, side: int, dim: int, block: int) -> list[_Box]:
    touching = [(k, t) for k, a in enumerate(box.axes) for t in a.terms[side] if t[0] == dim]
    if not touching:
        return [box]
    if len(touching) == 1:
        k, (_, coef, part) = touching[0]
        if part != "flat":
            raise UnsupportedMap("a dim split twice")
        if coef < 0:
            box, coef = _flip(box, k), -coef
        return _segments(box, side, dim, block, k, coef)
    return [_exact_split(box, side, dim, block, touching)]


def _flip(box: _Box, k: int) -> _Box:
    """Axis k walked backwards: i -> extent - 1 - i."""
    axis = box.axes[k]
    starts = [list(box.starts[0]), list(box.starts[1])]
    terms = []
    for side in (_SRC, _DST):
        flipped = []
        for d, c, part in axis.terms[side]:
            if part != "flat":
                raise UnsupportedMap("a reversed axis over blocked dims on both sides")
            starts[side][d] += c * (axis.extent - 1)
            flipped.append((d, -c, part))
        terms.append(tuple(flipped))
    axes = list(box.axes)
    axes[k] = _Axis(axis.extent, (terms[0], terms[1]))
    return _Box(tuple(axes), (tuple(starts[0]), tuple(starts[1])))


def _retermed(terms: tuple[_Term, ...], side_dim: int, part: str, scale: int = 1) -> tuple[_Term, ...]:
    """Terms with every coefficient scaled, the one on `side_dim` relabelled `part`."""
    return tuple((d, c * scale, part if d == side_dim else p) for d, c, p in terms)


def _with_axis(box: _Box, k: int, new_axes: Sequence[_Axis], shift: int = 0) -> _Box:
    """Axis k replaced by `new_axes`, every start moved `shift` steps along axis k."""
    axis = box.axes[k]
    starts = [list(box.starts[0]), list(box.starts[1])]
    for side in (_SRC, _DST):
        for d, c, _ in axis.terms[side]:
            starts[side][d] += c * shift
    axes = (*box.axes[:k], *new_axes, *box.axes[k + 1 :])
    return _Box(axes, (tuple(starts[0]), tuple(starts[1])))


def _relabel(axis: _Axis, side: int, dim: int, part: str, extent: int | None = None, scale: int = 1) -> _Axis:
    terms = [axis.terms[0], axis.terms[1]]
    terms[side] = _retermed(terms[side], dim, part, scale)
    other = 1 - side
    terms[other] = tuple((d, c * scale, p) for d, c, p in terms[other])
    return _Axis(axis.extent if extent is None else extent, (terms[0], terms[1]))


def _segments(box: _Box, side: int, dim: int, block: int, k: int, coef: int) -> list[_Box]:
    """One axis (coefficient coef > 0) over a blocked dim: head, whole blocks, tail."""
    axis = box.axes[k]
    start = box.starts[side][dim]
    remaining, done = axis.extent, 0
    out: list[_Box] = []
    if start % block:
        head = min(remaining, -(-(block - start % block) // coef))
        out.append(_with_axis(box, k, [_relabel(axis, side, dim, "lo", head)]))
        remaining, done = remaining - head, head
    if remaining == 0:
        return out
    if coef >= block and coef % block == 0:
        return [*out, _with_axis(box, k, [_relabel(axis, side, dim, "hi", remaining)], done)]
    if block % coef:  # the step does not divide the block: one piece per block touched
        return out + _per_block(box, side, dim, block, k, coef, done)
    per = block // coef
    full, tail = divmod(remaining, per)
    if full:
        hi = _relabel(axis, side, dim, "hi", full, scale=per)
        lo = _relabel(axis, side, dim, "lo", per)
        out.append(_with_axis(box, k, [hi, lo] if full > 1 else [lo], done))
    if tail:
        out.append(_with_axis(box, k, [_relabel(axis, side, dim, "lo", tail)], done + full * per))
    return out


PER_BLOCK_LIMIT = 64
"""Most pieces a step that does not divide a block may cut one axis into."""


def _per_block(box: _Box, side: int, dim: int, block: int, k: int, coef: int, done: int) -> list[_Box]:
    """Axis k from step `done` on, cut where its index enters the next block."""
    axis = box.axes[k]
    start = box.starts[side][dim]
    out = []
    i = done
    while i < axis.extent:
        index = start + coef * i
        n = min(axis.extent - i, -(-((index // block + 1) * block - index) // coef))
        out.append(_with_axis(box, k, [_relabel(axis, side, dim, "lo", n)], i))
        i += n
        if len(out) > PER_BLOCK_LIMIT:
            raise UnsupportedMap(f"a step of {coef} over blocks of {block} crosses more than {PER_BLOCK_LIMIT} blocks")
    return out


def _exact_split(box: _Box, side: int, dim: int, block: int, touching: list[tuple[int, _Term]]) -> _Box:
    """Several axes over one blocked dim (a reshape): each must fall wholly inside a
    block or step whole blocks; one may straddle if it divides evenly."""
    if box.starts[side][dim] % block:
        raise UnsupportedMap("a reshape starting inside a block")
    axes = list(box.axes)
    low_span = 0
    replacements: dict[int, list[_Axis]] = {}
    for k, (_, coef, part) in sorted(touching, key=lambda kt: kt[1][1]):
        axis = axes[k]
        if part != "flat" or coef <= 0:
            raise UnsupportedMap("a reshape over a reversed or twice-split blocked dim")
        if coef % block == 0:
            replacements[k] = [_relabel(axis, side, dim, "hi")]
        elif coef * axis.extent <= block:
            replacements[k] = [_relabel(axis, side, dim, "lo")]
            low_span += coef * (axis.extent - 1)
        elif block % coef == 0 and axis.extent % (block // coef) == 0:
            per = block // coef
            replacements[k] = [
                _relabel(axis, side, dim, "hi", axis.extent // per, scale=per),
                _relabel(axis, side, dim, "lo", per),
            ]
            low_span += coef * (per - 1)
        else:
            raise UnsupportedMap(f"a reshape whose dims do not line up with blocks of {block}")
    if low_span >= block:
        raise UnsupportedMap(f"a reshape whose dims do not line up with blocks of {block}")
    new_axes: list[_Axis] = []
    for k, axis in enumerate(axes):
        new_axes.extend(replacements.get(k, [axis]))
    return _Box(tuple(new_axes), box.starts)


# ---- to physical strides -------------------------------------------------------------


def _stride(terms: tuple[_Term, ...], layouts: tuple[DimLayout, ...]) -> int:
    total = 0
    for d, c, part in terms:
        lay = layouts[d]
        if part == "hi":
            total += c // lay.block * lay.block_stride
        elif part == "lo" or not lay.block:
            total += c * lay.stride
        else:
            raise AssertionError("a blocked dim left unsplit")
    return total


def _base(starts: tuple[int, ...], layouts: tuple[DimLayout, ...]) -> int:
    return sum(lay.offset(s) for lay, s in zip(layouts, starts))


def _resolve(box: _Box, layouts, src: GmTensor | None, dst: GmTensor, value: float) -> Piece:
    src_layouts, dst_layouts = layouts
    axes = tuple(
        Axis(a.extent, _stride(a.terms[_SRC], src_layouts) if src is not None else 0, _stride(a.terms[_DST], dst_layouts))
        for a in box.axes
    )
    src_base = _base(box.starts[_SRC], src_layouts) if src is not None else 0
    return Piece(axes, dst, _base(box.starts[_DST], dst_layouts), src, src_base, value)
