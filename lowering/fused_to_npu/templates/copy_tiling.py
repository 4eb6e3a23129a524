"""Tiling a strided piece: which box one tile moves, how it sits in UB, and the
instructions that move it (`copy_layout`), chosen with the simulator's own cost
formulas.

A tile of a `Piece` is a sub-box: some axes whole, one or two cut into chunks
(the last chunk may be shorter: its own tile plan), the others stepped one index
at a time (the grid, shared out among the cores). A tile travels

    GM src --(copies, MTE2)--> UB --(re-layout, V; optional)--> UB --(copies, MTE3)--> GM dst

`plan_tile` tries three ways for a tile: each side in its own UB layout with a
re-layout between them, storing straight from the load layout, and loading
straight into the store layout; a fill stores from a buffer of the constant
read with row stride 0.

`plan_piece` enumerates tiles (the innermost axes of either side whole, the next
axis of either side chunked to fill UB or to give every core two tiles, or both
in a 2-D block, as a large transpose needs), ranks them by a closed-form
estimate (tiles per core x the slowest of MTE2 / V / MTE3 / scalar per tile, or
the HBM time of all the bytes) and keeps, of the best few, the one whose
schedule replayed with the simulator's timing rules (`_schedule`: in-order
pipes, double buffering, the HBM the cores share) ends first.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from ....simulator.hardware import HardwarePreset
from ....simulator.npu.costs import transfer_cost, vector_cycles
from ....simulator.npu.hbm import SharedHbm
from .copy_layout import Copy, Relayout, TileAxis, copy_plan, relayout_plan, side_layout
from .index_map import Piece


@dataclass(frozen=True)
class TilePlan:
    """How one tile of given extents moves. Buffers: "A" (load layout), "B"
    (store layout), "Z" (a fill's constant)."""

    extents: tuple[int, ...]  # per piece axis
    load: Copy | None  # src GM -> load_into
    load_into: str
    relayout: Relayout | None  # A -> B
    store: Copy  # store_from -> dst GM
    store_from: str
    sizes: dict[str, int]  # elements of each buffer used
    cost: TileCost


@dataclass(frozen=True)
class TileCost:
    mte2: int
    vector: int
    mte3: int
    scalar: int
    load_bytes: int  # on the wire (whole bursts)
    store_bytes: int
    itemsize: int

    @property
    def hbm_bytes(self) -> int:
        return self.load_bytes + self.store_bytes

    @property
    def steady(self) -> int:
        return max(self.mte2, self.vector, self.mte3, self.scalar)

    @property
    def latency(self) -> int:
        return self.mte2 + self.vector + self.mte3


@dataclass(frozen=True)
class PiecePlan:
    piece: Piece
    plans: dict[tuple[int, ...], TilePlan]  # by the chunk axes at their last, shorter chunk
    tiles: int
    estimate: float

    @property
    def full(self) -> TilePlan:
        return self.plans[()]

    @property
    def grid(self) -> list[tuple[int, int, int]]:
        """(axis, count, tile extent) of every axis not wholly inside a tile, outermost first."""
        out = []
        for k, (axis, t) in enumerate(zip(self.piece.axes, self.full.extents)):
            if t < axis.extent:
                out.append((k, -(-axis.extent // t), t))
        return out

    def describe(self) -> str:
        shape = "x".join(str(a.extent) for a in self.piece.axes) or "1"
        tile = "x".join(str(t) for t in self.full.extents) or "1"
        f = self.full
        parts = []
        if f.load is not None:
            parts.append(f"{f.load.count} load(s) of {f.load.rows}x{f.load.cols}")
        if f.relayout is not None:
            parts.append(f"{f.relayout.count} v{f.relayout.kind}(s) of {f.relayout.rows}x{f.relayout.cols}")
        parts.append(f"{f.store.count} store(s) of {f.store.rows}x{f.store.cols}")
        what = "fill" if self.piece.src is None else "move"
        return (
            f"{what} {shape} (strides src {[a.src for a in self.piece.axes]} dst {[a.dst for a in self.piece.axes]}): "
            f"{self.tiles} tile(s) of {tile}, each {', '.join(parts)}; ~{int(self.estimate)} cycles"
        )


# ---- one tile ----------------------------------------------------------------------------------


class _Costing:
    """The hardware as one piece sees it: `cores` of them, and their share of the HBM
    (the other cores may be moving other pieces at the same time)."""

    def __init__(self, hw: HardwarePreset, itemsize: int, cores: int | None = None):
        self.hw = hw
        self.itemsize = itemsize
        self.align = max(1, hw.alignment["ub"] // itemsize)
        self.cores = cores or hw.core_count
        self.hbm_rate = hw.hbm_bytes_per_cycle * self.cores / hw.core_count

    def copy(self, copy: Copy | None, path: str) -> tuple[int, int]:
        """(cycles, HBM bytes) of the copies."""
        if copy is None:
            return 0, 0
        runs, run = copy.runs()
        cost = transfer_cost(self.hw, path, runs, run * self.itemsize)
        return copy.count * cost.cycles, copy.count * cost.moved_bytes

    def bytes(self, plan: TilePlan) -> int:
        """UB bytes of the plan's buffers, each aligned."""
        align = self.hw.alignment["ub"]
        return sum(-(-n * self.itemsize // align) * align for n in plan.sizes.values())

    def relayout(self, r: Relayout | None) -> int:
        if r is None:
            return 0
        return r.count * vector_cycles(self.hw, "data_movement", r.rows * r.cols * self.itemsize)

    def scalar(self, *patterns) -> int:
        issued = 0
        for p in patterns:
            if p is not None:
                issued += p.count * (1 + 2 * len(p.loops)) + len(p.loops) * self.hw.loop_iteration_cycles
        return (issued + 8) * self.hw.scalar_instruction_cycles

    def tile(self, extents, load, load_into, relayout, store, store_from, sizes) -> TilePlan:
        mte2, read = self.copy(load, "gm_to_ub")
        mte3, written = self.copy(store, "ub_to_gm")
        cost = TileCost(mte2, self.relayout(relayout), mte3, self.scalar(load, relayout, store), read, written, self.itemsize)
        return TilePlan(tuple(extents), load, load_into, relayout, store, store_from, sizes, cost)


def plan_tile(piece: Piece, extents: Sequence[int], costing: _Costing) -> TilePlan | None:
    """The cheapest way to move one tile of `extents` (None if no layout works)."""
    align = costing.align
    ids = [k for k, t in enumerate(extents) if t > 1]
    axes = piece.axes
    if piece.src is None:
        return _fill_tile(piece, extents, costing)
    src = [TileAxis(k, extents[k], axes[k].src) for k in ids]
    dst = [TileAxis(k, extents[k], axes[k].dst) for k in ids]
    options: list[TilePlan] = []
    must_a: frozenset[int] = frozenset()
    must_b: frozenset[int] = frozenset()
    for _ in range(3):
        a_ub, a_size = side_layout([x for x in src if x.gm != 0], align, must_a)
        b_ub, b_size = side_layout(dst, align, must_b)
        load = copy_plan([(k, extents[k], axes[k].src, a_ub[k]) for k in ids if axes[k].src != 0], False, align)
        store = copy_plan([(k, extents[k], axes[k].dst, b_ub[k]) for k in ids], True, align)
        if load is None or store is None:
            break
        if all(a_ub.get(k) == b_ub[k] for k in ids):
            options.append(costing.tile(extents, load, "A", None, store, "A", {"A": a_size}))
            break
        r = relayout_plan([(k, extents[k], a_ub.get(k, 0), b_ub[k]) for k in ids], align)
        if isinstance(r, Relayout):
            options.append(costing.tile(extents, load, "A", r, store, "B", {"A": a_size, "B": b_size}))
            break
        if r.load <= must_a and r.store <= must_b:
            break
        must_a, must_b = must_a | r.load, must_b | r.store
    # Store straight from the load layout (a broadcast axis is read with UB stride 0).
    a_ub, a_size = side_layout([x for x in src if x.gm != 0], align)
    load = copy_plan([(k, extents[k], axes[k].src, a_ub[k]) for k in ids if axes[k].src != 0], False, align)
    store = copy_plan([(k, extents[k], axes[k].dst, a_ub.get(k, 0)) for k in ids], True, align)
    if load is not None and store is not None:
        options.append(costing.tile(extents, load, "A", None, store, "A", {"A": a_size}))
    # Load straight into the store layout (a broadcast axis is read with GM stride 0).
    b_ub, b_size = side_layout(dst, align)
    load = copy_plan([(k, extents[k], axes[k].src, b_ub[k]) for k in ids], False, align)
    store = copy_plan([(k, extents[k], axes[k].dst, b_ub[k]) for k in ids], True, align)
    if load is not None and store is not None:
        options.append(costing.tile(extents, load, "B", None, store, "B", {"B": b_size}))
    if not options:
        return None
    return min(options, key=lambda p: (p.cost.steady, p.cost.latency, sum(p.sizes.values())))


def _fill_tile(piece: Piece, extents: Sequence[int], costing: _Costing) -> TilePlan | None:
    """A fill stores from a buffer of the constant, read with row stride 0: the
    buffer holds one row (the contiguous run), whatever the tile."""
    ids = [k for k, t in enumerate(extents) if t > 1]
    axes = [(k, extents[k], piece.axes[k].dst, 0) for k in ids]
    inner = [x for x in axes if x[2] == 1]
    cols = inner[0][1] if inner else 1
    rest = [x for x in axes if x not in inner[:1]]
    if len(rest) > 1:
        return None  # the grid takes the other axes
    rows, gm_stride = (rest[0][1], rest[0][2]) if rest else (1, cols)
    if rest and gm_stride < cols:
        return None
    store = Copy(rows, cols, gm_stride, 0 if rows > 1 else cols)
    return costing.tile(extents, None, "", None, store, "Z", {"Z": cols})


# ---- choosing the tile ---------------------------------------------------------------------


SCHEDULED = 8
"""Candidates (best by the closed-form estimate) whose schedule is simulated..."""

SCHEDULED_TILES = 1024
"""... when they have at most this many tiles (compile time)."""


def plan_piece(piece: Piece, hw: HardwarePreset, itemsize: int, limit: int, cores: int | None = None) -> PiecePlan:
    """The cheapest tiling of `piece` on `cores` cores (default all) whose buffers
    take at most `limit` bytes of UB (each buffer rounded up to the UB alignment):
    the candidates are ranked by a closed-form estimate, the best few by a
    simulation of their schedule."""
    costing = _Costing(hw, itemsize, cores)
    extents = [a.extent for a in piece.axes]
    ranked: dict[tuple[int, ...], tuple[float, PiecePlan]] = {}
    for tile in _candidate_tiles(piece, limit // itemsize, costing.cores):
        for plans in _fitting_plans(piece, tile, costing, limit):
            full = plans[()]
            if full.extents in ranked:
                continue
            tiles = math.prod(-(-e // t) for e, t in zip(extents, full.extents))
            ranked[full.extents] = (_estimate(full, tiles, costing), PiecePlan(piece, plans, tiles, 0.0))
    if not ranked:
        raise ValueError("no tiling fits")  # unreachable: a one-element tile always fits
    shortlist = sorted(ranked.values(), key=lambda e: (e[0], e[1].tiles))
    first = shortlist[0][0]
    scheduled = [
        (_schedule(p.full, p.tiles, costing) if p.tiles <= SCHEDULED_TILES else estimate, p)
        for estimate, p in shortlist[:SCHEDULED]
        if estimate <= 2 * first
    ]
    cycles, best = min(scheduled, key=lambda e: (e[0], e[1].tiles))
    return PiecePlan(piece, best.plans, best.tiles, cycles)


def _fitting_plans(piece: Piece, tile: tuple[int, ...], costing: _Costing, limit: int) -> list[dict]:
    """The plans of `tile`, or, when its buffers (two of them, padding) exceed
    `limit` bytes, of the tile with its longer chunk shrunk: balanced, and to a
    size giving a whole number of tiles per core."""
    for _ in range(4):
        plans = _plans_with_tails(piece, tile, costing)
        if plans is None:
            return []
        size = costing.bytes(plans[()])
        if size <= limit:
            return [plans]
        chunks = _chunk_axes(piece, tile)
        if not chunks:
            return []
        k = max(chunks, key=lambda c: tile[c])
        shrunk = tile[k] * limit // size
        if shrunk < 2:
            return []
        extent = piece.axes[k].extent
        others = math.prod(-(-a.extent // t) for m, (a, t) in enumerate(zip(piece.axes, tile)) if m != k)
        variants = {-(-extent // -(-extent // shrunk))}
        per_wave = max(1, costing.cores // math.gcd(costing.cores, others))
        waves = -(-extent // (shrunk * per_wave))
        variants.add(-(-extent // (waves * per_wave)))
        found = []
        for size_k in sorted(variants, reverse=True):
            candidate = (*tile[:k], size_k, *tile[k + 1 :])
            plans = _plans_with_tails(piece, candidate, costing)
            if plans is not None and costing.bytes(plans[()]) <= limit:
                found.append(plans)
        if found:
            return found
        tile = (*tile[:k], min(variants), *tile[k + 1 :])
    return []


def _chunk_axes(piece: Piece, tile: Sequence[int]) -> tuple[int, ...]:
    return tuple(k for k, (a, t) in enumerate(zip(piece.axes, tile)) if 1 < t < a.extent)


def _plans_with_tails(piece: Piece, tile: tuple[int, ...], costing: _Costing) -> dict | None:
    """Plans keyed by the chunk axes whose last, shorter chunk they move: () is the
    full tile, (k,) its tail along axis k, (j, k) the corner."""
    chunks = [k for k in _chunk_axes(piece, tile) if piece.axes[k].extent % tile[k]]
    plans = {}
    for n in range(len(chunks) + 1):
        for tails in itertools.combinations(chunks, n):
            extents = list(tile)
            for k in tails:
                extents[k] = piece.axes[k].extent % tile[k]
            plan = plan_tile(piece, extents, costing)
            if plan is None:
                return None
            plans[tails] = plan
    return plans


def _estimate(full: TilePlan, tiles: int, costing: _Costing) -> float:
    """A closed-form estimate: under double buffering a core's tiles cost the
    slowest pipe each plus one tile's latency, and all the bytes cross the HBM
    between the first load's latency and the last store's."""
    hw = costing.hw
    per_core = -(-tiles // min(costing.cores, tiles))
    c = full.cost
    core_time = per_core * c.steady + c.latency - c.steady
    latencies = hw.paths["gm_to_ub"].latency + c.vector + hw.paths["ub_to_gm"].latency
    return max(core_time, latencies + tiles * c.hbm_bytes / costing.hbm_rate)


def _schedule(full: TilePlan, tiles: int, costing: _Costing) -> int:
    """The cycles of the piece's tiles on the cores, replaying the simulator's
    timing: each core's pipes in order, double-buffered tiles (a load waits for
    the buffer two tiles back to be free), every GM transfer booking the shared
    HBM (`simulator/npu/hbm.py`), cores taking it in turn."""
    hw = costing.hw
    cores = min(costing.cores, tiles)
    per = -(-tiles // cores)
    hbm = SharedHbm(costing.hbm_rate)
    load = _transfers(full.load, "gm_to_ub", hw, full.cost)
    store = _transfers(full.store, "ub_to_gm", hw, full.cost)
    relayout = full.cost.vector
    end = 0
    for core in range(cores):
        count = max(0, min(per, tiles - core * per))
        mte2 = vector = mte3 = 0
        loaded, relaid, stored = [0] * count, [0] * count, [0] * count
        for i in range(count):
            free = 0 if i < 2 else (relaid[i - 2] if relayout else stored[i - 2])
            mte2 = loaded[i] = _run(hbm, max(mte2, free), load)
            vector = relaid[i] = max(vector, mte2, stored[i - 2] if i >= 2 else 0) + relayout
            mte3 = stored[i] = _run(hbm, max(mte3, vector), store)
        end = max(end, mte3)
    return end


def _transfers(copy: Copy | None, path: str, hw: HardwarePreset, cost: TileCost) -> tuple[int, int, int, int]:
    """(count, data cycles, moved bytes, latency) of a tile's copies on one path."""
    if copy is None:
        return 0, 0, 0, 0
    runs, run = copy.runs()
    t = transfer_cost(hw, path, runs, run * cost.itemsize)
    return copy.count, t.data_cycles, t.moved_bytes, t.latency


def _run(hbm: SharedHbm, start: int, transfers: tuple[int, int, int, int]) -> int:
    count, cycles, moved, latency = transfers
    for _ in range(count):
        start = hbm.transfer(start, cycles, moved) + latency
    return start


def _candidate_tiles(piece: Piece, budget: int, cores: int) -> list[tuple[int, ...]]:
    """Tiles whose whole axes are the innermost of the dst order and of the src
    order, plus chunks of the next axis of either order or of both (a 2-D block
    of a transpose)."""
    axes = piece.axes
    n = len(axes)
    dst_order = sorted(range(n), key=lambda k: axes[k].dst)  # innermost first
    src_order = sorted((k for k in range(n) if axes[k].src != 0), key=lambda k: abs(axes[k].src))
    seen: set[tuple[int, ...]] = set()
    out: list[tuple[int, ...]] = []

    def add(tile: tuple[int, ...]) -> None:
        if tile not in seen:
            seen.add(tile)
            out.append(tile)

    for i in range(n + 1):
        for j in range(len(src_order) + 1):
            whole = set(dst_order[:i]) | set(src_order[:j])
            base = math.prod(axes[k].extent for k in whole)
            if base > budget:
                continue
            room = budget // base
            nexts = sorted({next(k for k in order if k not in whole) for order in (dst_order, src_order)
                            if any(k not in whole for k in order)})
            grid = math.prod(a.extent for k, a in enumerate(axes) if k not in whole)

            def tile_of(chunks: dict[int, int]) -> tuple[int, ...]:
                return tuple(a.extent if m in whole else chunks.get(m, 1) for m, a in enumerate(axes))

            add(tile_of({}))
            for k in nexts:
                for size in _chunk_sizes(axes[k].extent, room, grid // axes[k].extent, cores):
                    add(tile_of({k: size}))
            if len(nexts) == 2:
                a, b = nexts
                for ta, tb in _block_sizes(axes[a].extent, axes[b].extent, room):
                    add(tile_of({a: ta, b: tb}))
    return out


def _chunk_sizes(extent: int, room: int, other_tiles: int, cores: int) -> list[int]:
    largest = min(extent - 1, room)
    if largest < 2:
        return []
    sizes = {largest, -(-extent // -(-extent // largest))}
    for target in (2 * cores, cores):
        chunks = -(-target // max(other_tiles, 1))
        if chunks > 1:
            size = -(-extent // chunks)
            if 1 < size < largest:
                sizes.add(size)
    return sorted(sizes)


def _block_sizes(ea: int, eb: int, room: int) -> list[tuple[int, int]]:
    """Chunks (ta, tb) of two axes filling `room` elements, from square to
    lopsided, in sizes that are multiples of 16 where the extents allow."""
    out = []
    side = math.isqrt(room)
    for ratio in (1, 2, 4, 8):
        for ta0, tb0 in ((side * ratio, side // ratio), (side // ratio, side * ratio)):
            ta = min(ea - 1, ta0 // 16 * 16 or ta0)
            tb = min(eb - 1, max(1, room // max(ta, 1)))
            tb = tb // 16 * 16 or tb
            if ta >= 2 and tb >= 2:
                out.append((-(-ea // -(-ea // ta)), -(-eb // -(-eb // tb))))
    return out
