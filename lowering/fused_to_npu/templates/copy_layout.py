"""UB layouts of a tile and the instruction patterns that move it.

A tile is a box of a piece's axes. On each GM side its elements are moved by
`npu.copy`: a 2-D pattern (rows x a contiguous run, one row stride per side)
repeated over loops whose UB starts must be 32-byte aligned. `side_layout`
packs the tile in UB the way one side wants it (the axes in that side's GM
order, dense, loops padded to the alignment) so the side needs as few copies as
possible; `copy_plan` finds the copies for a given UB layout. When the two sides
want different layouts, `relayout_plan` finds the vector instructions taking
one to the other: a strided `vcopy` (a broadcasting one where the source repeats
a row or a column), a `vtranspose` when the innermost axis changes, or a strided
element gather. Plain Python over integers; `copy_tiling` costs and chooses.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

# ---- instruction patterns ----------------------------------------------------------------


@dataclass(frozen=True)
class Loop:
    extent: int
    gm: int  # per-iteration step on the GM side (the source side of a re-layout)
    ub: int  # per-iteration step on the UB side (the destination side of a re-layout)


@dataclass(frozen=True)
class Copy:
    """`count` 2-D copies between GM and UB: rows x cols, row strides gm / ub."""

    rows: int
    cols: int
    gm_stride: int
    ub_stride: int
    loops: tuple[Loop, ...] = ()

    @property
    def count(self) -> int:
        return math.prod(loop.extent for loop in self.loops)

    def runs(self) -> tuple[int, int]:
        """(contiguous runs, elements per run) on the side with more runs, as the
        simulator counts a transfer."""
        return max(_runs(self.rows, self.cols, self.gm_stride), _runs(self.rows, self.cols, self.ub_stride))


def _runs(rows: int, cols: int, stride: int) -> tuple[int, int]:
    if rows == 1 or stride == cols:
        return 1, rows * cols
    if stride == 0:
        return 1, cols
    return rows, cols


@dataclass(frozen=True)
class Relayout:
    """`count` vector instructions from the load buffer to the store buffer:
    kind "copy": rows x cols, source column stride 0 or 1 (`vcopy`);
    kind "transpose": the source is rows x cols, the destination cols x rows."""

    kind: str
    rows: int
    cols: int
    src_stride: int
    dst_stride: int
    src_col_stride: int = 1
    loops: tuple[Loop, ...] = ()  # Loop.gm: source step, Loop.ub: destination step

    @property
    def count(self) -> int:
        return math.prod(loop.extent for loop in self.loops)


# ---- UB layouts ------------------------------------------------------------------------------


@dataclass(frozen=True)
class TileAxis:
    id: int
    extent: int
    gm: int


def round_up(x: int, align: int) -> int:
    return -(-x // align) * align


def side_layout(axes: Sequence[TileAxis], align: int, must_align: frozenset[int] = frozenset()) -> tuple[dict[int, int], int]:
    """UB strides (by axis id) packing `axes` in their GM order so the side is moved
    by one 2-D pattern plus aligned loops, and the layout's extent in elements.
    Axes in `must_align` get aligned strides (a vector loop steps over them)."""
    positive = sorted((a for a in axes if a.gm > 0), key=lambda a: -a.gm)
    groups: list[list[TileAxis]] = []  # inner -> outer, each inner -> outer
    for a in reversed(positive):
        if groups and a.id not in must_align:
            last = groups[-1][-1]
            if a.gm == last.extent * last.gm:
                groups[-1].append(a)
                continue
        groups.append([a])
    groups += [[a] for a in axes if a.gm < 0]
    ub: dict[int, int] = {}
    span = 1
    contiguous = bool(groups) and groups[0][0].gm == 1
    for g, group in enumerate(groups):
        if g == 0:
            base = 1
        elif g == 1 and contiguous and not any(a.id in must_align for a in group):
            base = span  # the row stride of the 2-D pattern: no alignment needed
        else:
            base = round_up(span, align)
        stride = base
        for a in group:
            ub[a.id] = stride
            stride *= a.extent
        span = stride
    return ub, span


def copy_plan(axes: Sequence[tuple[int, int, int, int]], gm_written: bool, align: int) -> Copy | None:
    """The copies moving `axes` (id, extent, gm stride, ub stride) between GM and a
    fixed UB layout, or None if some loop would start misaligned in UB."""
    live = [(e, gm, ub) for _, e, gm, ub in axes if e > 1]
    cols = 1
    inner = [x for x in live if x[1] == 1 and x[2] == 1]
    if inner:
        live.remove(inner[0])
        cols = inner[0][0]
        grown = True
        while grown:
            grown = False
            for x in live:
                if x[1] == cols and x[2] == cols:
                    live.remove(x)
                    cols *= x[0]
                    grown = True
                    break
    rest = _merge_pairs(live)
    best: Copy | None = None
    for r in [None, *range(len(rest))]:
        loops = [x for i, x in enumerate(rest) if i != r]
        if any(ub % align for _, _, ub in loops):
            continue
        if r is None:
            rows, gm_stride, ub_stride = 1, cols, cols
        else:
            rows, gm_stride, ub_stride = rest[r]
            written = gm_stride if gm_written else ub_stride
            read = ub_stride if gm_written else gm_stride
            if written < cols or read < 0:
                continue
        copy = Copy(rows, cols, gm_stride, ub_stride, tuple(Loop(e, gm, ub) for e, gm, ub in loops))
        if best is None or copy.count < best.count:
            best = copy
    return best


def _merge_pairs(items: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """(extent, stride a, stride b) items merged where both strides continue each other."""
    items = sorted(items, key=lambda x: (-x[2], -x[1]))
    merged: list[tuple[int, int, int]] = []
    for e, a, b in items:
        if merged:
            oe, oa, ob = merged[-1]
            if oa == e * a and ob == e * b:
                merged[-1] = (oe * e, a, b)
                continue
        merged.append((e, a, b))
    return merged


@dataclass(frozen=True)
class _NeedsAlignment:
    load: frozenset[int]
    store: frozenset[int]


def relayout_plan(axes: Sequence[tuple[int, int, int, int]], align: int) -> Relayout | _NeedsAlignment:
    """Vector instructions taking the tile from layout a to layout b; `axes` are
    (id, extent, a stride (0: broadcast), b stride). Or the axes whose strides
    must be aligned for the loops around the instructions."""
    dims = _merge_ids([x for x in axes if x[1] > 1])
    if not dims:
        return Relayout("copy", 1, 1, 1, 1)
    q = min(dims, key=lambda d: d[3])
    others = [d for d in dims if d is not q]
    _, tq, aq, bq = q
    options: list[tuple[Relayout, list]] = []
    if aq in (0, 1):
        for r in [None, *others]:
            loops = [d for d in others if d is not r]
            if r is None:
                option = Relayout("copy", 1, tq, tq, tq, aq, ())
            else:
                option = Relayout("copy", r[1], tq, r[2], r[3], aq, ())
            options.append((option, loops))
    else:
        p = next((d for d in others if d[2] == 1), None)
        if p is not None:
            loops = [d for d in others if d is not p]
            options.append((Relayout("transpose", tq, p[1], aq, p[3]), loops))
        else:
            options.append((Relayout("copy", tq, 1, aq, bq), others))
    best, need = None, None
    for option, loops in options:
        bad_a = frozenset(i for ids, _, a, _ in loops if a % align for i in ids[-1:])
        bad_b = frozenset(i for ids, _, _, b in loops if b % align for i in ids[-1:])
        plan = Relayout(
            option.kind, option.rows, option.cols, option.src_stride, option.dst_stride,
            option.src_col_stride, tuple(Loop(e, a, b) for _, e, a, b in loops),
        )
        if not bad_a and not bad_b:
            if best is None or plan.count < best.count:
                best = plan
        elif need is None or len(bad_a) + len(bad_b) < len(need.load) + len(need.store):
            need = _NeedsAlignment(bad_a, bad_b)
    return best if best is not None else need


def _merge_ids(items: list[tuple[int, int, int, int]]) -> list[tuple[tuple[int, ...], int, int, int]]:
    """(ids, extent, a, b): adjacent axes (in b order) merged where a and b both allow."""
    items = sorted(items, key=lambda x: -x[3])
    merged: list[tuple[tuple[int, ...], int, int, int]] = []
    for i, e, a, b in items:
        if merged:
            ids, oe, oa, ob = merged[-1]
            if oa == e * a and ob == e * b:
                merged[-1] = ((*ids, i), oe * e, a, b)
                continue
        merged.append(((i,), e, a, b))
    return merged
