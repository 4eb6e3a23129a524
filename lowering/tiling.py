"""Static tiling of cube kernels: base tiles, K staging and the multi-core split,
chosen at compile time from the shapes and the hardware preset.

A cube kernel computes `C = A @ B` (possibly several products sharing A, and a
batch of them) in *items*: an item is an output block of `mb` rows by
`n_block` columns of one batch matrix, computed by one core from start to end:

* its accumulators live in L0C for the whole K loop (`products x mb x
  n_block` fp32, held as `n_sub` sub-tiles of `nb` columns);
* K is walked in *chunks* of `kc`: MTE2 stages an (mb x kc) panel of A and a
  (kc x n_block) panel of each B in L1, two copies of each so the next chunk
  loads while this one is used (three when a core has several items and an
  item an odd number of chunks: the last takes the third, and the next item's
  first chunk loads while it is used);
* each chunk is walked in *steps* of `kb`: MTE1 moves an (mb x kb) tile of A
  into L0A and (kb x nb) tiles of B into L0B (two copies each), and the cube
  accumulates `mmad`s into L0C;
* the epilogue drains L0C through UB in row chunks of `rows` (fixpipe, vector
  work, MTE3), two copies of each UB buffer (four of a plain cast's output
  tile), while the next item starts.

When a core's items all share their A rows (they differ only in their columns)
and the whole (mb x K) panel of A fits L1, A may stay *resident*: the core's
first item stages it chunk by chunk into one L1 buffer, the others only stage B.
A core then reads A once however many items it has, so narrower items cost no
more port time, and the epilogue of one item overlaps the K loop of the next
(with one item per core it runs after the last mmad, with nothing to hide it).

When each product's outputs depend on that product alone (the Q, K and V
projections of `fused.multi_matmul_bias_act`), the products may instead be
computed *in turn* (`GemmShape.turns`): an item is one product's output block,
the turns of a block follow each other on one core, and with A resident the
core reads A once for all of them. An item then holds one product's
accumulators, and each product's epilogue overlaps the next one's K loop
instead of all of them running after the last mmad.

Items are shared out among the cores in contiguous ranges (`per_core` each,
`block_dim` cores). The choice is a search over candidate tiles that fit every
buffer, scored by a closed-form estimate of the kernel's time from the same
cost formulas the simulator uses (`simulator/npu/costs.py`): per item the
busiest of cube, MTE2, MTE1 and the epilogue (they overlap), plus what cannot
overlap (filling the pipeline, draining L0C before the next item may
accumulate). MTE2's time is the core's port's, or the shared HBM's when every
core streams its weights at once (`_weights_streamed`).
`CubeTiling.explain()` says what was chosen and why; `ge-to-npu{debug=true}`
prints it. An op may instead pin another tiling that
fits by its place in the estimate's ranking (`npu.tiling_rank`, which
`fused-tune-tilings` sets after simulating the best few).

Operands describe their own transfer costs (a row-major tile of short rows is
dearer than a FRACTAL_NZ tile of the same bytes), through `CubeOperandCost`,
and may constrain the tiles: a convolution's image wants pixel tiles of whole
output rows and K chunks of whole channel blocks, and needs UB for its slab.

Flash attention has its own, simpler rule (`choose_attention_tiling`).
"""

from __future__ import annotations

import copy
import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import NamedTuple, Protocol

from ..core import memo
from ..simulator.hardware import HardwarePreset
from ..simulator.npu.costs import mmad_cycles, stream_cycles, transfer_cycles

FRACTAL = 16
"""Rows and columns of a cube fractal: tiles are multiples of it."""

TILE_CANDIDATES = (16, 32, 48, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384, 512)
"""Sizes tried for `mb` and `n_block` (plus the whole dimension rounded up to 16
when it is smaller than the largest candidate)."""

SMALL_TILES = (1, 2, 4, 8)
"""Sizes below 16 tried for `mb` when the A operand asks (`mn_small_tiles`): the
L0 tiles are whole 16-row fractals anyway, but an image's UB slabs are as tall as
the tile's output rows (OW = 1: a row per pixel), and 16 of them may not fit."""

STEP_CANDIDATES = (16, 32, 64, 128, 256)
"""Sizes tried for the L0 step `kb`."""

CHUNK_STEPS = (1, 2, 4, 8, 16)
"""Steps per L1 chunk tried (`kc = kb x steps`)."""


def round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


class CubeOperandCost(Protocol):
    """What the tiling needs to know about an operand of the cube (A or a B)."""

    def l1_elements(self, rows: int, cols: int) -> int:
        """Elements of the L1 buffer staging a (rows x cols) tile of the logical matrix."""

    def stage_cycles(self, hw: HardwarePreset, rows: int, cols: int) -> int:
        """MTE2 cycles to stage a (rows x cols) tile of the logical matrix into L1, up to
        issuing its last transfer (GM transfers stream: the tiling adds the landing
        of the chunk's data once, `paths.gm_to_l1.latency`)."""

    def load_cycles(self, hw: HardwarePreset, space: str, rows: int, cols: int) -> int:
        """MTE1 cycles to move a (rows x cols) tile from L1 into `space` (l0a / l0b),
        up to issuing its last transfer (the tiling adds one landing per L0 step)."""

    # Optional (defaults in `granule` / `ub_reserved`):
    #   first_stage_cycles(hw, rows, cols): the first chunk's staging before the cube
    #     may start, where it is not `stage_cycles` (an img2col image's gathers, which
    #     overlap the next chunk's fill, wait for the first fill to land)
    #   mn_granule: tiles of the operand's M (A) or N (B) dim are multiples of it
    #               (an image's pixel rows: whole output rows);
    #   mn_small_tiles: M tiles below 16 are tried too (`SMALL_TILES`);
    #   k_granule:  K chunks are multiples of it (an image's channel blocks);
    #   ub_bytes(rows, cols): UB the operand's staging needs besides the epilogue's;
    #   stays_in_l1: an A that can be kept resident (`stage_to_l1(..., at=)`);
    #   cost_key:   a hashable value that determines all of the above: the search
    #               over operands that all have one is memoised (`fitting_cube_tilings`).


def granule(operand, name: str) -> int:
    return getattr(operand, name, 1)


def ub_reserved(operand, rows: int, cols: int) -> int:
    method = getattr(operand, "ub_bytes", None)
    return method(rows, cols) if method is not None else 0


@dataclass(frozen=True)
class GemmShape:
    """The matrix products of one cube kernel."""

    batch: int
    m: int
    n: int
    k: int
    products: int = 1  # B operands sharing the A tile (a gated matmul has 2)
    whole_rows: bool = False  # the epilogue needs all N columns of a row in one item
    in_bytes: int = 2  # element size of A and B
    rate: str = "fp16"  # the cube's rate key for the input type
    turns: int = 1  # products computed one after another, in items of their own (module docstring)

    @property
    def weights(self) -> int:
        """The B operands of the kernel, however they are computed."""
        return self.products * self.turns


@dataclass(frozen=True)
class EpilogueCost:
    """What the epilogue costs, to size its row chunks and to estimate its time:
    UB bytes per element of a chunk (double-buffered streams counted twice,
    temporaries once), per row (per-row values), per column (a bias row) and
    fixed; vector work on top of the fixpipe (L0C -> UB) and the store (UB -> GM)."""

    ub_bytes_per_element: int  # all copies
    ub_bytes_per_row: int = 0
    ub_bytes_per_col: int = 0
    ub_fixed_bytes: int = 0
    vector_instructions: int = 0  # vector instructions per row chunk (heads)
    vector_repeats_per_element: float = 0.0  # repeats (256 B each) per output element
    out_bytes: int = 2  # bytes stored per output element (all outputs)
    fixpipe_bytes: int = 2  # bytes written to UB per product element by the fixpipe
    copies: int = 2  # copies of the streamed UB buffers, used in turn by the row chunks
    block: int = 0  # the NZ outputs' column block, when UB tiles may be kept in such blocks (0: row-major only)
    in_bytes: int = 0  # bytes loaded per output element by the inputs with a tile per row chunk


@dataclass(frozen=True)
class CubeTiling:
    shape: GemmShape
    mb: int
    n_block: int
    nb: int
    kb: int
    kc: int
    rows: int  # epilogue row chunk
    items: int
    per_core: int
    block_dim: int
    estimate: float  # estimated cycles of the kernel
    terms: tuple[tuple[str, float], ...]  # per-item cube / mte2 / mte1 / epilogue, and overheads
    buffers: tuple[tuple[str, int], ...]  # bytes used per space (all copies)
    candidates: int  # how many tilings fitted
    a_resident: bool = False  # A staged once per core into one L1 buffer (module docstring)
    rank: int = 0  # place among the fitting tilings by estimate (0: the estimated-fastest)
    ub_block: int = 0  # the epilogue's UB tiles in column blocks of this many columns (0: row-major)

    @property
    def l1_copies(self) -> int:
        return l1_copies(self.per_core, self.shape.k, self.kc)

    @property
    def row_slots(self) -> int:
        return row_slots(self.per_core, self.a_resident)

    @property
    def n_sub(self) -> int:
        return -(-self.n_block // self.nb)

    @property
    def m_tiles(self) -> int:
        return -(-self.shape.m // self.mb)

    @property
    def n_tiles(self) -> int:
        return -(-self.shape.n // self.n_block)

    def explain(self) -> str:
        s = self.shape
        terms = ", ".join(f"{name} {value:.0f}" for name, value in self.terms)
        buffers = ", ".join(f"{space.upper()} {used}" for space, used in self.buffers)
        products = f" x {s.products} products" if s.products > 1 else ""
        if s.turns > 1:
            products = f" x {s.turns} products in turn"
        return (
            f"cube {s.batch} x ({s.m} x {s.k}) @ ({s.k} x {s.n}){products}: items of {self.mb} x {self.n_block} "
            f"({s.batch} x {self.m_tiles} x {self.n_tiles}{f' x {s.turns}' if s.turns > 1 else ''} = {self.items} items, {self.per_core} per core on "
            f"{self.block_dim} cores){', A resident in L1' if self.a_resident else ''}, K in L1 chunks of {self.kc}, L0 steps of {self.kb}, {self.n_sub} L0C "
            f"sub-tile(s) of {self.nb} columns, epilogue in row chunks of {self.rows}"
            f"{f' in UB blocks of {self.ub_block} columns' if self.ub_block else ''}; per item cycles: {terms}; "
            f"estimated {self.estimate:.0f} cycles, {self._place()}; bytes used: {buffers}"
        )

    def _place(self) -> str:
        if self.rank == 0:
            return f"best of {self.candidates} tilings that fit"
        return f"number {self.rank + 1} by estimate of {self.candidates} tilings that fit (npu.tiling_rank = {self.rank})"


class _Candidate(NamedTuple):  # a tuple: thousands are made per search
    mb: int
    n_block: int
    nb: int
    kb: int
    kc: int
    a_resident: bool = False


def _sizes(limit: int, whole: int, step: int = 1, small: bool = False) -> list[int]:
    """Candidate tile sizes for a dimension of `whole` elements: TILE_CANDIDATES and
    the whole dimension rounded up to 16, or multiples of `step` when it is > 1.
    `small`: also SMALL_TILES below 16 (the operand's staging shrinks with them)."""
    if step > 1:
        sizes = [r * step for r in range(1, limit // step + 1) if r * step < whole]
        return sizes + ([whole] if whole <= max(limit, step) else [])
    whole16 = round_up(max(whole, 1), FRACTAL)
    sizes = [s for s in SMALL_TILES if s < whole] if small else []
    sizes += [s for s in TILE_CANDIDATES if s < whole16 and s <= limit]
    if whole16 <= limit:
        sizes.append(whole16)
    return sizes


def _chunks(kb: int, k: int, k_step: int) -> list[int]:
    """Candidate K chunks for L0 steps of kb: kb x CHUNK_STEPS, or multiples of
    `k_step` (and the whole K) when it is > 1."""
    if k_step > 1:
        return [m * k_step for m in range(1, -(-k // k_step)) if m * k_step < k] + [k]
    k16 = round_up(k, FRACTAL)
    return [kb * s for s in CHUNK_STEPS if s == 1 or kb * s <= round_up(k16, kb)]


def choose_cube_tiling(
    hw: HardwarePreset, shape: GemmShape, a: CubeOperandCost, bs: Sequence[CubeOperandCost], epilogue: EpilogueCost
) -> CubeTiling:
    """The estimated-fastest tiling that fits the preset's buffers (see the module
    docstring). Raises ValueError if no tiling fits."""
    best, count = best_cube_tiling(hw, shape, a, bs, epilogue)
    return with_count(best, count)


def fitting_cube_tilings(
    hw: HardwarePreset, shape: GemmShape, a: CubeOperandCost, bs: Sequence[CubeOperandCost], epilogue: EpilogueCost,
    first_b_prefetched: bool = False,
) -> list[CubeTiling]:
    """Every tiling that fits the preset's buffers, in no particular order. Raises
    ValueError if none fits. `first_b_prefetched`: the kernel is a later phase of a
    merged kernel and its B operands are constants, so npu-prefetch-constants loads
    the first chunk of B before the barrier that opens the phase, wherever the
    kernel stages that chunk at its top level (`_first_chunk_at_top`).
    A pure function of its arguments: memoised where the operands have a `cost_key`."""
    return list(_memoised(_SEARCHES, _search, hw, shape, a, bs, epilogue, first_b_prefetched))


def best_cube_tiling(
    hw: HardwarePreset, shape: GemmShape, a: CubeOperandCost, bs: Sequence[CubeOperandCost], epilogue: EpilogueCost,
    first_b_prefetched: bool = False,
) -> tuple[CubeTiling, int]:
    """The first of `fitting_cube_tilings` by `rank_key` (the one `min` picks), and how
    many fit, without estimating the tilings that a lower bound shows cannot be it
    (`_best`). Raises ValueError if none fits. Memoised as `fitting_cube_tilings`."""
    return _memoised(_BESTS, _best, hw, shape, a, bs, epilogue, first_b_prefetched)


_SEARCHES = memo.Memo(1024)
_BESTS = memo.Memo(1024)
_FITS = memo.Memo(256)


def _memoised(memo_: memo.Memo, search, hw, shape, a, bs, epilogue, first_b_prefetched):
    """`search(...)`'s result (or its ValueError, raised again), remembered in `memo_`
    when every operand has a `cost_key`."""
    key = _search_key(hw, shape, a, bs, epilogue, first_b_prefetched)
    found = memo_.get(key) if key is not None else memo.Memo.MISSING
    if found is memo.Memo.MISSING:
        try:
            found = search(hw, shape, a, bs, epilogue, first_b_prefetched)
        except ValueError as e:
            found = e
        if key is not None:
            memo_.put(key, found)
    if isinstance(found, ValueError):
        raise ValueError(str(found))
    return found


def _search_key(hw, shape, a, bs, epilogue, first_b_prefetched) -> tuple | None:
    operands = (a, *bs)
    keys = tuple(getattr(x, "cost_key", None) for x in operands)
    if not memo.enabled() or None in keys:
        return None
    return (memo.stand_in(hw), shape, keys, epilogue, first_b_prefetched)


def _fitting(hw, shape, a, bs, epilogue, first_b_prefetched) -> tuple[_Scoring, _Fits]:
    """The search's scoring and the candidates that fit (`_Fits`: by runs of one item
    size and L0 step, each counted, its candidates made when asked). Raises
    ValueError if none fits. What fits, and every part of a score but the
    estimate's prefetch term, do not depend on `first_b_prefetched`: they are
    remembered for the search of the other value (a merged kernel's phase
    searches with it what fusion's scratch build searched without it)."""
    scoring, fits = _memoised(_FITS, _fit, hw, shape, a, bs, epilogue, None)
    return scoring.prefetching(first_b_prefetched), fits


class _Group:
    """The candidates of one item size and K chunk list whose epilogue row chunks are
    the same (every L0 step of the item size, unless its UB fits fewer than 16 rows:
    then the rows depend on the sub-tile width, `_chunk_rows`): (kc, A resident,
    rows, UB its operands reserve) each, in the order tried. What fits L1 and UB
    depends on neither the L0 step nor the sub-tile, so the runs of an item size
    share their group, and `_best` bounds its staging once for all of them."""

    __slots__ = ("members",)

    def __init__(self, members: tuple[tuple, ...]) -> None:
        self.members = members


class _Run(NamedTuple):
    """Consecutive candidates of one item size and L0 step: those of `chunks` (the K
    chunks in the order tried, up to the first whose L1 does not fit) whose
    epilogue fits, each followed by its A-resident twin when `resident` and it fits
    L1 (`group`). `start`: the index of its first candidate among all that fit."""

    mb: int
    n_block: int
    nb: int
    kb: int
    chunks: tuple[int, ...]
    resident: bool
    start: int
    count: int
    group: _Group

    @property
    def end(self) -> int:
        return self.start + self.count


class _Fits:
    """Every candidate that fits one search's buffers, in the order `_runs` makes
    them (ties of the estimate go to the earliest), as runs of one item size and
    L0 step, each with its group (`_Group`: the K chunks, residencies and epilogue
    rows that fit, shared by the runs of an item size). Counting them (the count
    is part of the answer) takes a group per item size, not a look at every
    candidate; `members` makes a run's candidates when asked."""

    def __init__(self, scoring: _Scoring) -> None:
        self.scoring = scoring  # without the prefetch term: what fits does not depend on it
        self.capacity = scoring.hw.capacity("l1")
        self.runs: list[_Run] = []
        self.count = 0
        self._chunks: dict[tuple, tuple] = {}  # (mb, n_block, chunks): (kc, reserved, UB rows, twin fits) that fit L1, narrow
        self._groups: dict[tuple, _Group] = {}  # (mb, n_block, chunks, nb when narrow): group
        self._ub_rows: dict[tuple, int] = {}  # (mb, n_block, UB reserved): rows UB fits
        self._rows: dict[tuple, int | None] = {}  # (mb, nb when narrow, UB rows): the epilogue's row chunk

    def add(self, mb: int, n_block: int, nb: int, kb: int, chunks: tuple[int, ...], resident: bool) -> None:
        group = self._group(mb, n_block, nb, chunks, resident)
        count = len(group.members)
        if count:
            self.runs.append(_Run(mb, n_block, nb, kb, chunks, resident, self.count, count, group))
            self.count += count

    def members(self, r: int) -> list[tuple]:
        """The candidates of run `r`, in order: (candidate, rows, reserved) each."""
        run = self.runs[r]
        return [(_Candidate(run.mb, run.n_block, run.nb, run.kb, kc, resident), rows, reserved)
                for kc, resident, rows, reserved in run.group.members]

    def all(self) -> list[tuple]:
        """Every candidate that fits, in order."""
        return [member for r in range(len(self.runs)) for member in self.members(r)]

    def _group(self, mb: int, n_block: int, nb: int, chunks: tuple[int, ...], resident: bool) -> _Group:
        key = (mb, n_block, chunks)
        found = self._chunks.get(key)
        if found is None:
            found = self._chunks[key] = self._fitting_chunks(mb, n_block, chunks, resident)
        fitting, narrow = found
        key = (mb, n_block, chunks, nb if narrow else 0)
        group = self._groups.get(key)
        if group is None:
            members = []
            for kc, reserved, ub_rows, twin in fitting:
                rows_key = (mb, nb if ub_rows < FRACTAL else 0, ub_rows)
                rows = self._rows.get(rows_key, _Fits)
                if rows is _Fits:
                    rows = self._rows[rows_key] = _chunk_rows(self.scoring.e, mb, nb, ub_rows)
                if rows is None:
                    continue
                members.append((kc, False, rows, reserved))
                if twin:
                    members.append((kc, True, rows, reserved))
            group = self._groups[key] = _Group(tuple(members))
        return group

    def _fitting_chunks(self, mb: int, n_block: int, chunks: tuple[int, ...], resident: bool) -> tuple:
        """((kc, reserved, rows UB fits, whether the A-resident twin fits L1) of each of
        `chunks` up to the first whose L1 does not fit, whether UB fits fewer than 16
        rows for one of them)."""
        scoring, capacity = self.scoring, self.capacity
        shape, a, bs, per_core = scoring.shape, scoring.a, scoring.bs, scoring.item(mb, n_block)[1]
        fitting = []
        narrow = False
        for kc in chunks:
            plain, with_a = _l1_bytes(shape, a, bs, per_core, mb, n_block, kc)
            if plain > capacity:
                break
            reserved = scoring.reserved(mb, kc, n_block)
            ub_key = (mb, n_block, reserved[0] + reserved[1])
            ub_rows = self._ub_rows.get(ub_key)
            if ub_rows is None:
                ub_rows = self._ub_rows[ub_key] = _ub_rows(scoring.hw, scoring.e, mb, n_block, ub_key[2])
            narrow = narrow or ub_rows < FRACTAL
            fitting.append((kc, reserved, ub_rows, resident and with_a <= capacity))
        return tuple(fitting), narrow


def _fit(hw, shape, a, bs, epilogue, _) -> tuple[_Scoring, _Fits]:
    a, bs = _KnownCosts(a), [_KnownCosts(b) for b in bs]
    scoring = _Scoring(hw, shape, a, bs, epilogue, False)
    fits = _Fits(scoring)
    for run in _runs(hw, shape, a, bs):
        fits.add(*run)
    if not fits.count:
        raise ValueError(
            f"no tiling of ({shape.m} x {shape.k}) @ ({shape.k} x {shape.n}) fits the buffers of preset '{hw.name}'"
        )
    return scoring, fits


def _search(hw, shape, a, bs, epilogue, first_b_prefetched) -> list[CubeTiling]:
    scoring, fits = _fitting(hw, shape, a, bs, epilogue, first_b_prefetched)
    return [scoring.score(cand, rows, reserved) for cand, rows, reserved in fits.all()]


def _best(hw, shape, a, bs, epilogue, first_b_prefetched) -> tuple[CubeTiling, int]:
    """Branch and bound over `_fitting`'s candidates, best bound first: a candidate's
    lower bound of its estimate is the larger of its run's (`_Scoring.bound` of its
    item size and L0 step) and `_Scoring.staging_bound` of its item size, K chunk
    and residency. A run is first taken by its own bound; when that comes first,
    its group's staging bounds are computed (once for the runs of the group) and
    sorted, and the run walks its candidates in that order, each taken when its
    bound comes first, so that only the candidates whose bound may still beat the
    best estimate are ever made and estimated. The search stops when a bound rounds
    above the best estimate found: no candidate left can rank first (`rank_key`
    compares rounded estimates first). Ties are broken by the candidates' order
    (run, then place in it), as `min` over `_search`'s list breaks them, so the
    tiling is the same as estimating every candidate."""
    scoring, fits = _fitting(hw, shape, a, bs, epilogue, first_b_prefetched)
    runs = fits.runs
    run_bounds = [scoring.bound(run) for run in runs]
    # (bound, run, step): a run by its own bound (step -1), or its candidate of that
    # step in its group's order by staging bound.
    heap = [(bound, r, -1) for r, bound in enumerate(run_bounds)]
    heapq.heapify(heap)
    staging: dict[tuple, float] = {}  # (mb, n_block, kc, A resident): staging bound
    orders: dict[_Group, list[tuple[float, int]]] = {}  # (staging bound, place) of a group's members, sorted
    best = None  # (rank key, run, place)
    while heap:
        bound, r, step = heapq.heappop(heap)
        if best is not None and round(bound) > best[0][0]:
            break
        run = runs[r]
        if step < 0:
            order = orders.get(run.group)
            if order is None:
                order = orders[run.group] = _staging_order(scoring, run, staging)
        else:
            order = orders[run.group]
            place = order[step][1]
            kc, resident, rows, _ = run.group.members[place]
            key = (scoring.rank_key(_Candidate(run.mb, run.n_block, run.nb, run.kb, kc, resident), rows), r, place)
            if best is None or key < best:
                best = key
        step += 1
        if step < len(order):
            chunk = order[step][0]
            bound = run_bounds[r]
            if chunk > bound:
                bound = chunk
            if best is None or round(bound) <= best[0][0]:  # else neither it nor the run's next can rank first
                heapq.heappush(heap, (bound, r, step))
    _, r, place = best
    run = runs[r]
    kc, resident, rows, reserved = run.group.members[place]
    return scoring.score(_Candidate(run.mb, run.n_block, run.nb, run.kb, kc, resident), rows, reserved), fits.count


def _staging_order(scoring: _Scoring, run: _Run, staging: dict) -> list[tuple[float, int]]:
    """(staging bound, place) of each member of the run's group, by bound then place.
    The staging bound depends on the item size, K chunk and residency alone
    (`_Scoring.staging_bound`): remembered in `staging` across groups."""
    order = []
    for place, (kc, resident, _, _) in enumerate(run.group.members):
        key = (run.mb, run.n_block, kc, resident)
        chunk = staging.get(key)
        if chunk is None:
            chunk = staging[key] = scoring.staging_bound(_Candidate(run.mb, run.n_block, run.nb, run.kb, kc, resident))
        order.append((chunk, place))
    order.sort()
    return order


def _no_ub_bytes(rows: int, cols: int) -> int:
    return 0


class _KnownCosts:
    """An operand whose answers (sizes and cycles of tiles, pure functions of their
    arguments) are remembered for one search: the candidates ask the same few
    thousand times. Anything else is the operand's own."""

    def __init__(self, operand) -> None:
        self._operand = operand
        self._answers: dict[tuple, int] = {}
        if hasattr(operand, "ub_bytes"):  # optional (`ub_reserved`)
            self.ub_bytes = self._ub_bytes
        else:  # `ub_reserved`'s default, without asking the operand at every call
            self.ub_bytes = _no_ub_bytes

    def __getattr__(self, name: str):
        return getattr(self._operand, name)

    # A search has one preset: it is passed on, not keyed.

    def l1_elements(self, rows: int, cols: int) -> int:
        key = ("l1", rows, cols)
        found = self._answers.get(key)
        if found is None:
            found = self._answers[key] = self._operand.l1_elements(rows, cols)
        return found

    def stage_cycles(self, hw: HardwarePreset, rows: int, cols: int) -> int:
        key = ("stage", rows, cols)
        found = self._answers.get(key)
        if found is None:
            found = self._answers[key] = self._operand.stage_cycles(hw, rows, cols)
        return found

    def _ub_bytes(self, rows: int, cols: int) -> int:
        key = ("ub", rows, cols)
        found = self._answers.get(key)
        if found is None:
            found = self._answers[key] = self._operand.ub_bytes(rows, cols)
        return found

    def load_cycles(self, hw: HardwarePreset, space: str, rows: int, cols: int) -> int:
        key = (space, rows, cols)
        found = self._answers.get(key)
        if found is None:
            found = self._answers[key] = self._operand.load_cycles(hw, space, rows, cols)
        return found


CONTENTION = 0.25
"""Share of a nearly saturated pipe's work that shows in the time of an item."""


def _steady(*pipes: float) -> float:
    """The time of an item whose pipes overlap: the busiest one, plus a share of the
    others' work above 3/4 of it (pipes that wait on each other through flags do
    not overlap perfectly when several are nearly saturated)."""
    top = max(pipes)
    others = sorted(pipes)[:-1]
    return top + CONTENTION * sum(max(0.0, p - 0.75 * top) for p in others)


def rank_key(t: CubeTiling) -> tuple:
    """Fastest estimate first; on a tie, the least work on the pipes (fewer, larger
    instructions), then the largest items."""
    work = sum(value for name, value in t.terms if name in ("cube", "mte2", "mte1"))
    return _rank(t.estimate, work, t.mb, t.n_block)


def _rank(estimate: float, work: float, mb: int, n_block: int) -> tuple:
    """`rank_key`'s order, shared with the search's `_Scoring.rank_key`."""
    return (round(estimate), work, -mb * n_block)


def with_count(t: CubeTiling, count: int, rank: int = 0) -> CubeTiling:
    """The tiling, knowing it was number `rank` of `count` that fit."""
    return CubeTiling(**{**t.__dict__, "candidates": count, "rank": rank})


def _runs(hw, shape: GemmShape, a, bs):
    """Every (mb, n_block, nb, kb, K chunks, A may stay resident) whose L0 buffers fit,
    in the order the candidates are tried (`_Fits` makes a run's candidates, those
    whose L1 and UB fit)."""
    size = shape.in_bytes
    l0c, l0a, l0b = (hw.capacity(space) for space in ("l0c", "l0a", "l0b"))
    limit = max(TILE_CANDIDATES)
    n_step = max(granule(b, "mn_granule") for b in bs)
    n_blocks = [round_up(shape.n, FRACTAL)] if shape.whole_rows else _sizes(limit, shape.n, n_step)
    mbs = _sizes(limit, shape.m, granule(a, "mn_granule"), getattr(a, "mn_small_tiles", False))
    k_step = max(granule(x, "k_granule") for x in (a, *bs))
    k16 = round_up(shape.k, FRACTAL)
    steps = [kb for kb in STEP_CANDIDATES if kb <= k16 or kb == STEP_CANDIDATES[0]]
    chunks = {}  # kb: its K chunks, one tuple per distinct list (a run's count is keyed on it)
    for kb in steps:
        found = tuple(_chunks(kb, shape.k, k_step))
        chunks[kb] = next((c for c in chunks.values() if c == found), found)
    for mb in mbs:
        for n_block in n_blocks:
            if shape.products * mb * round_up(n_block, FRACTAL) * 4 > l0c:
                continue
            resident = None
            for kb in steps:
                if 2 * round_up(mb, FRACTAL) * kb * size > l0a:
                    continue
                nb = min(round_up(n_block, FRACTAL), (l0b // (2 * kb * size)) // FRACTAL * FRACTAL)
                if nb < FRACTAL:
                    continue
                nb = _even_split(n_block, nb)
                if shape.products * mb * -(-n_block // nb) * nb * 4 > l0c:
                    continue
                if resident is None:
                    resident = _a_can_stay(hw, shape, a, mb, n_block)
                yield mb, n_block, nb, kb, chunks[kb], resident


def l1_copies(per_core: int, k: int, kc: int) -> int:
    """Copies of each chunk's L1 panels (see the module docstring)."""
    chunks = -(-k // kc)
    return 3 if per_core > 1 and chunks > 1 and chunks % 2 else 2


def row_slots(per_core: int, a_resident: bool) -> int:
    """UB copies of an epilogue's bias rows: with A resident a core's items stay in
    one static loop, and each item (each product in turn) gets a row of its own,
    staged with its last K chunk while the previous item's epilogue still reads
    its own (templates/cube_kernel.py)."""
    return per_core if a_resident else 1


def _share(hw, shape: GemmShape, mb: int, n_block: int) -> tuple[int, int]:
    """(items, items per core) of items of mb x n_block: with products in turn, a
    core has whole groups of an output block's turns."""
    items = shape.batch * -(-shape.m // mb) * -(-shape.n // n_block) * shape.turns
    return items, round_up(-(-items // hw.core_count), shape.turns)


def _a_can_stay(hw, shape: GemmShape, a, mb: int, n_block: int) -> bool:
    """Whether A may stay resident: every core has several items, all of one row
    block of one batch matrix (its items are contiguous in (batch, row block,
    column block, turn) order, so that is when its count divides the items of a
    row block)."""
    if not getattr(a, "stays_in_l1", False):
        return False
    _, per_core = _share(hw, shape, mb, n_block)
    return per_core > 1 and -(-shape.n // n_block) * shape.turns % per_core == 0


def l1_bytes(hw, shape: GemmShape, a, bs, mb: int, n_block: int, kc: int, a_resident: bool) -> int:
    """L1 of a tiling: the copies of each chunk's panels, A's whole panel once if resident."""
    return _l1_bytes(shape, a, bs, _share(hw, shape, mb, n_block)[1], mb, n_block, kc)[a_resident]


def _l1_bytes(shape: GemmShape, a, bs, per_core: int, mb: int, n_block: int, kc: int) -> tuple[int, int]:
    """(`l1_bytes` of A staged chunk by chunk, of A resident) with `per_core` items a core."""
    copies = l1_copies(per_core, shape.k, kc)
    b_elements = copies * sum(b.l1_elements(kc, n_block) for b in bs)
    return (
        (copies * a.l1_elements(mb, kc) + b_elements) * shape.in_bytes,
        (a.l1_elements(mb, shape.k) + b_elements) * shape.in_bytes,
    )


def _even_split(n_block: int, nb: int) -> int:
    """The sub-tile width: at most `nb`, splitting `n_block` into equal multiples of 16."""
    count = -(-n_block // nb)
    return round_up(-(-n_block // count), FRACTAL)


def _ub_rows(hw: HardwarePreset, e: EpilogueCost, mb: int, n_block: int, reserved: int = 0) -> int:
    """Rows of an item of mb x n_block whose epilogue tiles fit UB beside `reserved` bytes."""
    cols = round_up(n_block, FRACTAL)
    budget = hw.capacity("ub") - reserved - e.ub_fixed_bytes - e.ub_bytes_per_col * cols
    per_row = e.ub_bytes_per_element * cols + e.ub_bytes_per_row
    return budget // per_row if per_row > 0 else mb


def _chunk_rows(e: EpilogueCost, mb: int, nb: int, fit: int) -> int | None:
    """The epilogue's row chunk when UB fits `fit` rows (`_ub_rows`): chunks of equal
    multiples of 16 rows, as few as fit, but at least `copies` of them when mb
    allows, so that every chunk of an item has its own buffers and L0C drains at
    the fixpipe's pace. When 16 rows do not fit UB (long rows), fewer: a chunk must
    start on a 512-byte boundary of the fp32 L0C sub-tile (rows x nb x 4 bytes),
    the only case where the sub-tile width `nb` matters. None if not even one row fits."""
    if fit < FRACTAL:
        return next((r for r in (8, 4, 2, 1) if r <= fit and r * nb * 4 % 512 == 0), None)
    chunks = max(-(-mb // (fit // FRACTAL * FRACTAL)), min(e.copies, mb // FRACTAL))
    return round_up(-(-mb // chunks), FRACTAL)


def _last_chunk_outside_loop(k: int, kc: int) -> bool:
    """Whether an item's last K chunk is written out, not in the loop over pairs of
    full chunks (`templates/cube_kernel.py:k_schedule`)."""
    full, remainder = divmod(k, kc)
    return bool(remainder) or full % 2 == 1 or full == 2


def _first_chunk_at_top(shape: GemmShape, c: _Candidate, per_core: int, block_dim: int, hw) -> bool:
    """Whether the kernel stages its first K chunk at its top level (templates/cube_kernel.py),
    where npu-prefetch-constants can move it: the core's first item is written out
    (one item per core, or A resident), it has no tail cases (scf.if), and its
    chunks are not in a loop (`k_schedule`'s pairs of full chunks: a loop of one
    trip is not emitted). A phase on fewer blocks than its merged kernel runs under
    an scf.if, which the pass leaves alone: only one on every core is counted
    (ResNet-50's 3x3 convs on 28 of 32 cores were estimated 4.6k cycles faster
    than they ran)."""
    if block_dim < hw.core_count:
        return False
    first_item_at_top = per_core == 1 or c.a_resident
    pairs = shape.k // c.kc // 2
    return first_item_at_top and shape.m % c.mb == 0 and shape.n % c.n_block == 0 and pairs <= 1


@dataclass(frozen=True)
class Prefetched:
    """A search's `first_b_prefetched` when the kernel is a later phase of a merged
    kernel whose phase before leaves the HBM idle for `room` cycles at the barrier
    (transforms/npu/prefetch_constants.py `hbm_idle`: from that kernel's tiling,
    `prefetch_room.tiling_room`, or its instructions, `hbm_room`).
    npu-prefetch-constants loads the first B chunk before the barrier whatever its
    size; the estimate takes its port time off the fill, and its HBM share off the
    item's B and the kernel's HBM time only up to `room`: the rest crosses the HBM
    while the phase before still needs it (the mlp's first product after an
    HBM-bound f32 cast, credited its whole first chunk, picked a tiling whose chunk
    made the cast 2,466 -> 4,182 cycles and itself ran 4,380 -> 4,871). `True`
    alone: prefetched, with no room known (its HBM share not taken off).

    `port`: the MTE2 cycles the phase before leaves idle per core at its barrier
    (None: unknown). The chunk queues on each core's MTE2 behind that phase's own
    loads, so only this much of its port time comes off the fill; the rest
    stretches the phase before as much as it would have delayed this one
    (ResNet-50's 3x3 512-channel convolutions at 7x7 after the partials' sum, an
    MTE2-bound row kernel: credited their whole first chunk of 1,008 of 1,152 K
    rows, 258 KB a core, they made that kernel 1,664 -> 5,154 cycles)."""

    room: float = 0.0
    port: float | None = None

    def __bool__(self) -> bool:
        return True


def _room(first_b_prefetched) -> float:
    """The HBM time a prefetched first chunk's HBM share may take off the estimate."""
    return first_b_prefetched.room if isinstance(first_b_prefetched, Prefetched) else 0.0


def _port_credit(first_b_prefetched, port_cycles: float) -> float:
    """The part of a prefetched first chunk's `port_cycles` (its data cycles on one
    core's MTE2) that comes off the fill: up to `Prefetched.port`, where known."""
    port = first_b_prefetched.port if isinstance(first_b_prefetched, Prefetched) else None
    return port_cycles if port is None else max(0.0, min(port_cycles, port))


class _Scoring:
    """The estimate of each candidate of one search (`score`). Candidates share
    most of their parts: those of an item's size (its share of the cores), of its
    K chunk (staging), of its L0 step (loads and products) and of its epilogue's
    row chunk. Each part is computed once per search, keyed on the candidate's
    values it depends on, by the same expressions in the same order, so the
    estimates are exactly those of computing every candidate afresh."""

    def __init__(self, hw, shape: GemmShape, a, bs, e: EpilogueCost, first_b_prefetched: bool) -> None:
        self.hw, self.shape, self.a, self.bs, self.e = hw, shape, a, bs, e
        self.first_b_prefetched = first_b_prefetched
        self.gm_latency = hw.paths["gm_to_l1"].latency
        self.l0b_latency = hw.paths["l1_to_l0b"].latency
        self.hbm = (shape.batch * (shape.m * shape.k + shape.weights * shape.k * shape.n) * shape.in_bytes) / hw.hbm_bytes_per_cycle
        self._l1: dict[tuple, int] = {}
        self._reserved: dict[tuple, tuple[int, int]] = {}
        self._a_reserved: dict[tuple, int] = {}
        self._b_reserved: dict[tuple, int] = {}
        self._staging_a: dict[tuple, float] = {}  # (mb, size)
        self._first_a: dict[tuple, float] = {}  # (mb, size)
        self._staging_b: dict[tuple, float] = {}  # (n_block, size)
        self._items_a: dict[tuple, float] = {}  # (mb, kc)
        self._items_b: dict[tuple, float] = {}  # (n_block, kc)
        self._streamed: dict[tuple, float] = {}  # (n_block, cores, mb)
        self._items: dict[tuple, tuple] = {}
        self._chunks: dict[tuple, tuple] = {}
        self._steps: dict[tuple, tuple] = {}
        self._epilogues: dict[tuple, tuple] = {}
        self._staged: dict[tuple, tuple[float, float, float]] = {}  # depends on first_b_prefetched

    def prefetching(self, first_b_prefetched: bool) -> _Scoring:
        """This scoring for a search with or without the first chunk of B prefetched:
        the parts it remembers (none depends on it) shared."""
        if first_b_prefetched == self.first_b_prefetched:
            return self
        other = copy.copy(self)
        other.first_b_prefetched = first_b_prefetched
        other._staged = {}
        return other

    def l1_bytes(self, mb: int, n_block: int, kc: int, a_resident: bool) -> int:
        key = (mb, n_block, kc, a_resident)
        found = self._l1.get(key)
        if found is None:
            found = self._l1[key] = l1_bytes(self.hw, self.shape, self.a, self.bs, mb, n_block, kc, a_resident)
        return found

    def reserved(self, mb: int, kc: int, n_block: int) -> tuple[int, int]:
        """UB the operands' staging reserves: (A's, the B operands' together)."""
        key = (mb, kc, n_block)
        found = self._reserved.get(key)
        if found is None:
            a_key, b_key = (mb, kc), (kc, n_block)  # A's depends on these, the Bs' on those
            a = self._a_reserved.get(a_key)
            if a is None:
                a = self._a_reserved[a_key] = ub_reserved(self.a, mb, kc)
            b = self._b_reserved.get(b_key)
            if b is None:
                b = self._b_reserved[b_key] = sum(ub_reserved(b, kc, n_block) for b in self.bs)
            found = self._reserved[key] = (a, b)
        return found

    def staging(self, mb: int, n_block: int, size: int) -> tuple[float, float]:
        """(A, B and the landing) cycles of staging the first chunk of `size` (of a full
        item): A's `first_stage_cycles` where it has them."""
        key = (mb, size)
        first = self._first_a.get(key)
        if first is None:
            staged_first = getattr(self.a, "first_stage_cycles", None)
            first = self._first_a[key] = self._a_stage(mb, size) if staged_first is None else staged_first(self.hw, mb, size)
        return first, self._b_stage(n_block, size)

    # A's staging depends on its rows, the Bs' on their columns: each is remembered on
    # its own, so that items of every shape share them.

    def _a_stage(self, mb: int, size: int):
        key = (mb, size)
        found = self._staging_a.get(key)
        if found is None:
            found = self._staging_a[key] = self.a.stage_cycles(self.hw, mb, size)
        return found

    def _b_stage(self, n_block: int, size: int):
        key = (n_block, size)
        found = self._staging_b.get(key)
        if found is None:
            found = self._staging_b[key] = sum(b.stage_cycles(self.hw, size, n_block) for b in self.bs) + self.gm_latency
        return found

    def _a_item(self, mb: int, kc: int):
        key = (mb, kc)
        found = self._items_a.get(key)
        if found is None:
            found = self._items_a[key] = _item_staging(lambda size: self._a_stage(mb, size), self.shape.k, kc)
        return found

    def _b_item(self, n_block: int, kc: int):
        key = (n_block, kc)
        found = self._items_b.get(key)
        if found is None:
            found = self._items_b[key] = _item_staging(lambda size: self._b_stage(n_block, size), self.shape.k, kc)
        return found

    def item(self, mb: int, n_block: int) -> tuple:
        """(items, per core, cores, and a full item's rows and columns: tails are
        cheaper; the estimate is for ranking) of items of mb x n_block."""
        key = (mb, n_block)
        found = self._items.get(key)
        if found is None:
            items, per_core = _share(self.hw, self.shape, mb, n_block)
            found = self._items[key] = (
                items, per_core, -(-items // per_core),
                min(mb, round_up(self.shape.m, FRACTAL)), min(n_block, round_up(self.shape.n, FRACTAL)),
            )
        return found

    def chunk(self, c: _Candidate) -> tuple:
        """(chunks, kc, staging of the first chunk (A, B), of the item (A, B), the
        item's B from the HBM) of the candidate's K chunk."""
        key = (c.mb, c.n_block, c.kc)
        found = self._chunks.get(key)
        if found is None:
            _, _, block_dim, mb, n_block = self.item(c.mb, c.n_block)
            k = self.shape.k
            chunks = -(-k // c.kc)
            kc = min(c.kc, k)
            stage_a, stage_b = self.staging(mb, n_block, kc)
            a_item, b_item = self._a_item(mb, kc), self._b_item(n_block, kc)
            streamed_key = (n_block, block_dim, c.mb)
            streamed = self._streamed.get(streamed_key)
            if streamed is None:
                streamed = self._streamed[streamed_key] = _weights_streamed(self.hw, self.shape, self.bs, k, n_block, block_dim, c.mb)
            b_hbm = streamed + chunks * self.gm_latency
            found = self._chunks[key] = (chunks, kc, stage_a, stage_b, a_item, b_item, b_hbm)
        return found

    def step(self, c: _Candidate) -> tuple:
        """(steps, kb, sub-tiles, one L0 step's products, its loads and the landing)."""
        key = (c.mb, c.n_block, c.nb, c.kb)
        found = self._steps.get(key)
        if found is None:
            hw, shape = self.hw, self.shape
            _, _, _, mb, n_block = self.item(c.mb, c.n_block)
            steps = -(-shape.k // c.kb)
            n_sub = -(-n_block // c.nb)
            kb = min(c.kb, shape.k)
            mmad = shape.products * n_sub * mmad_cycles(hw, mb, c.nb, kb, shape.rate)
            load = (
                self.a.load_cycles(hw, "l0a", mb, kb)
                + n_sub * sum(b.load_cycles(hw, "l0b", kb, c.nb) for b in self.bs)
                + self.l0b_latency
            )
            found = self._steps[key] = (steps, kb, n_sub, mmad, load)
        return found

    def epilogue(self, c: _Candidate, rows: int, n_sub: int, blocked: bool) -> tuple:
        """(row chunks per item, fixpipe, vector, store and input-load cycles of an
        item). NZ outputs (`EpilogueCost.block`) in row-major UB tiles move a
        copy per column block, a short run per row in it (32 bytes: an NC1HWC0
        pixel's 8 fp32 channels, a 16-column f16 block's row); `blocked`: the
        tiles in column blocks move one run per block, and the body runs once per
        block (its heads repeated)."""
        key = (c.mb, c.n_block, c.nb, rows, blocked)
        found = self._epilogues.get(key)
        if found is None:
            hw, e = self.hw, self.e
            _, _, _, mb, n_block = self.item(c.mb, c.n_block)
            chunks_per_item = -(-mb // rows)
            blocks = -(-n_block // e.block) if e.block else 1
            fixpipe = chunks_per_item * self.shape.products * n_sub * transfer_cycles(
                hw, "l0c_to_ub", 1, rows * c.nb * e.fixpipe_bytes
            )
            vector = chunks_per_item * (
                (blocks if blocked else 1) * e.vector_instructions * hw.vector_costs["binary"].head
                + math.ceil(e.vector_repeats_per_element * rows * n_block)
            )

            def moves(path: str, size: int) -> float:
                if blocked:
                    return transfer_cycles(hw, path, blocks, rows * e.block * size)
                if e.block:  # a copy per block: they stream, one latency shows
                    return blocks * stream_cycles(hw, path, rows, e.block * size) + hw.paths[path].latency
                return transfer_cycles(hw, path, rows, n_block * size)

            store = chunks_per_item * moves("ub_to_gm", e.out_bytes)
            load = chunks_per_item * moves("gm_to_ub", e.in_bytes) if e.in_bytes else 0
            found = self._epilogues[key] = (chunks_per_item, fixpipe, vector, store, load)
        return found

    def bound(self, c: _Candidate) -> float:
        """A lower bound of `score(c, ...).estimate` for every K chunk, residency and
        epilogue of the candidate's item size and L0 step: two of the critical paths
        of `score` without their non-negative parts (staging, the last epilogue, the
        contention, the drains), and the HBM bound. The same expressions, so float
        rounding (monotone) keeps it below the estimate."""
        per_core = self.item(c.mb, c.n_block)[1]
        steps, _, _, mmad, load = self.step(c)
        cube = steps * mmad
        mte1 = steps * load
        return max(load + per_core * cube, per_core * mte1 + mmad, self.hbm_floor())

    def hbm_floor(self) -> float:
        """The kernel's HBM time less the most a prefetched first B chunk may take
        off it (`Prefetched.room`): a bound for every K chunk."""
        return self.hbm - _room(self.first_b_prefetched) if self.first_b_prefetched else self.hbm

    def staged(self, c: _Candidate) -> tuple[float, float, float]:
        """(the first chunk's staging before the cube may start, MTE2 cycles per item,
        the kernel's HBM time) of the candidate's item size, K chunk and residency."""
        key = (c.mb, c.n_block, c.kc, c.a_resident)
        found = self._staged.get(key)
        if found is None:
            per_core = self.item(c.mb, c.n_block)[1]
            _, _, stage_a, stage_b, a_item, b_item, b_hbm = self.chunk(c)
            # A chunk's transfers stream; the flag to MTE1 waits for the last to land.
            # A resident A is staged by the core's first item only: its share per item.
            stage = stage_a + stage_b
            # The first chunk's B loaded before the barrier leaves the first item's MTE2
            # and the fill (its landing stays: A's first chunk lands under the same flag).
            # Its HBM share too, as far as the phase before leaves the HBM idle
            # (`Prefetched`): neither the item's B from the HBM nor the kernel's HBM
            # time counts that part (llama_layer tp=4's 64 x 2816 @ 2816 x 1024 as
            # split-K 4, first chunk 512 of 704 rows, after a cube-bound phase:
            # estimated at its whole weight's HBM time, 6,308 cycles, it ran 4,750).
            prefetched, first, hbm = 0.0, 0.0, self.hbm
            _, _, block_dim, _, n_block = self.item(c.mb, c.n_block)
            if self.first_b_prefetched and _first_chunk_at_top(self.shape, c, per_core, block_dim, self.hw):
                prefetched = _port_credit(self.first_b_prefetched, stage_b - self.gm_latency)
                stage -= prefetched
                whole = _weights_streamed(self.hw, self.shape, self.bs, min(c.kc, self.shape.k), n_block, block_dim, c.mb)
                first = min(whole, _room(self.first_b_prefetched))
                hbm -= first
            # A resident: the core's first item stages A and B, the others B alone.
            # Not resident: every later item stages A again, from the L2, on every core
            # at once (the items start together), while the HBM waits for their B: A's
            # staging adds to B's HBM time (calibrated on bench/gemm_estimate.py).
            with_a = max(a_item + b_item - prefetched, b_hbm - first)
            later = max(b_item, b_hbm) if c.a_resident else a_item + max(b_item, b_hbm)
            mte2 = (with_a + (per_core - 1) * later) / per_core
            found = self._staged[key] = (stage, mte2, hbm)
        return found

    def staging_bound(self, c: _Candidate) -> float:
        """A lower bound of `score(c, ...).estimate` for every L0 step and epilogue of
        the candidate's item size, K chunk and residency: the first critical path of
        `estimate` without its non-negative parts after MTE2's, and the HBM bound
        (the same expression: see `bound`)."""
        _, mte2, hbm = self.staged(c)
        return max(self.item(c.mb, c.n_block)[1] * mte2, hbm)

    def estimate(self, c: _Candidate, rows: int) -> tuple:
        """(estimate, and the terms cube, mte2, mte1, epilogue, fill, drain, and the
        epilogue's UB column block) of the candidate with epilogue row chunks of
        `rows`: in the faster of its forms, row-major UB tiles or (where its
        outputs allow, `EpilogueCost.block`) tiles in column blocks. Blocks save
        the moves of short runs but repeat the body's heads per block: ResNet's
        expands (bias, residual, ReLU over 8-channel fp32 blocks) gain, BERT's FFN
        up projection (bias and GELU over 16-column f16 blocks) loses (BERT-4L's
        phase 3,525 cycles in rows, 4,333 in blocks)."""
        found = self._estimate(c, rows, False) + (0,)
        if self.e.block:
            blocked = self._estimate(c, rows, True) + (self.e.block,)
            if blocked[0] <= found[0]:
                found = blocked
        return found

    def _estimate(self, c: _Candidate, rows: int, blocked: bool) -> tuple:
        shape = self.shape
        per_core = self.item(c.mb, c.n_block)[1]
        k = shape.k
        chunks, kc = self.chunk(c)[:2]
        steps, kb, n_sub, mmad, load = self.step(c)  # one L0 step
        cube = steps * mmad
        stage, mte2, hbm = self.staged(c)
        mte1 = steps * load
        chunks_per_item, fixpipe, vector, store, inputs = self.epilogue(c, rows, n_sub, blocked)
        # The epilogue's input tiles load on MTE2 with the item's staging, before its
        # K loop when the core has one item and each row chunk its own UB copies
        # (`_CubeKernel._prefetches`), else after it, in the epilogue's way.
        mte2 += inputs
        waited = 0 if per_core == 1 and chunks_per_item <= self.e.copies else inputs
        epilogue = fixpipe + vector + store + waited
        # Each pipe's work per item, with what must happen before its first item and
        # after its last: the first chunk staged and loaded before the cube starts,
        # the last chunk's L0 steps after it lands, L0C drained by the fixpipes
        # before the next item accumulates, the last item's epilogue after its last
        # mmad. The pipe that finishes last sets the time.
        last_chunk_steps = -(-(k - (chunks - 1) * kc) // kb)
        fill = stage + load
        drain = fixpipe if per_core > 1 else 0
        last = fixpipe + vector + (store + waited) // max(chunks_per_item, 1)
        # Inputs loaded with the staging go after the last chunk's where that is outside
        # the loop over pairs (`_CubeKernel._emit_item`): its L0 steps do not wait for them.
        after = inputs if not waited and _last_chunk_outside_loop(k, kc) else 0
        critical = max(
            per_core * mte2 - after + last_chunk_steps * max(load, mmad) + last,
            per_core * mte2 + last,
            stage + per_core * mte1 + mmad + last,
            fill + per_core * cube + last,
            fill + cube + per_core * epilogue,
        )
        contention = _steady(cube, mte2, mte1, epilogue) - max(cube, mte2, mte1, epilogue)
        estimate = critical + per_core * contention + (per_core - 1) * drain
        return max(estimate, hbm), cube, mte2, mte1, epilogue, fill, drain

    def rank_key(self, c: _Candidate, rows: int) -> tuple:
        """`rank_key` of `score(c, rows, ...)` without making the tiling."""
        estimate, cube, mte2, mte1, *_ = self.estimate(c, rows)
        return _rank(estimate, sum((cube, mte2, mte1)), c.mb, c.n_block)

    def score(self, c: _Candidate, rows: int, reserved: tuple[int, int]) -> CubeTiling:
        shape, e = self.shape, self.e
        items, per_core, block_dim, _, _ = self.item(c.mb, c.n_block)
        estimate, cube, mte2, mte1, epilogue, fill, drain, ub_block = self.estimate(c, rows)
        buffers = (
            ("l1", self.l1_bytes(c.mb, c.n_block, c.kc, c.a_resident)),
            ("l0a", 2 * round_up(c.mb, FRACTAL) * c.kb * shape.in_bytes),
            ("l0b", 2 * c.kb * c.nb * shape.in_bytes),
            ("l0c", shape.products * c.mb * -(-c.n_block // c.nb) * c.nb * 4),
            (
                "ub",
                ub_bytes(e, rows, round_up(c.n_block, FRACTAL), row_slots(per_core, c.a_resident))
                + reserved[0]
                + reserved[1],
            ),
        )
        terms = (("cube", cube), ("mte2", mte2), ("mte1", mte1), ("epilogue", epilogue), ("fill", fill), ("drain", drain))
        return CubeTiling(
            shape, c.mb, c.n_block, c.nb, c.kb, c.kc, rows, items, per_core, block_dim, estimate, terms, buffers, 0,
            c.a_resident, ub_block=ub_block,
        )


def _item_staging(staging, k: int, kc: int) -> float:
    """Cycles of staging an item's K chunks of one operand (A, or the Bs together):
    `k // kc` full chunks and the tail, `staging(size)` each. Whole cycles (as
    every operand's are) are multiplied out; others are summed chunk by chunk,
    as they always were."""
    full, tail = divmod(k, kc)
    whole = staging(kc)
    rest = staging(tail) if tail else 0
    if isinstance(whole, int) and isinstance(rest, int):
        return full * whole + rest
    return sum(staging(size) for size in [kc] * full + ([tail] if tail else []))


def _weights_streamed(hw, shape: GemmShape, bs, k: int, n_block: int, block_dim: int, mb: int) -> float:
    """MTE2 cycles of an item's B panels (K x n_block each) when every core streams its
    own at once, before their landings (a landing per chunk, which `chunk` adds): the
    HBM serves the distinct panels (the cores of one column block, one per row block,
    read the same one: the first brings it into the L2) at its bandwidth shared by
    all. Weights come from the HBM on their first touch; when all cores stage only B
    (the later items of a resident A) this, not the core's port, bounds the item."""
    sharing = min(-(-shape.m // mb), block_dim)
    panels = sum(b.l1_elements(k, n_block) for b in bs) * shape.in_bytes
    return panels * block_dim / sharing / hw.hbm_bytes_per_cycle


def ub_bytes(e: EpilogueCost, rows: int, cols: int, row_slots: int = 1) -> int:
    """UB of an epilogue over (rows x cols) tiles; `row_slots` copies of its bias rows
    (one per item of a core whose items stay in one static loop)."""
    return e.ub_fixed_bytes + e.ub_bytes_per_col * cols * row_slots + (e.ub_bytes_per_element * cols + e.ub_bytes_per_row) * rows


# ---- flash attention -------------------------------------------------------------------------


@dataclass(frozen=True)
class AttentionShape:
    batch: int  # batch x heads
    sq: int
    sk: int
    d: int
    dv: int
    mask_bytes: int = 0  # element size of a mask tile (0: no mask tile per block)
    in_bytes: int = 2
    causal_offset: int | None = None  # query row i sees keys j <= i + offset only (None: every key)

    def visible_keys(self, q0: int, rows: int) -> int:
        """The keys the rows q0.. q0 + rows - 1 see: a prefix of the key sequence."""
        if self.causal_offset is None:
            return self.sk
        return max(1, min(self.sk, q0 + rows + self.causal_offset))


@dataclass(frozen=True)
class AttentionTiling:
    shape: AttentionShape
    mq: int  # query rows per item
    sk: int  # key / value rows per block
    items: int
    per_core: int
    block_dim: int
    buffers: tuple[tuple[str, int], ...]
    note: str = ""

    def explain(self) -> str:
        s = self.shape
        buffers = ", ".join(f"{space.upper()} {used}" for space, used in self.buffers)
        return (
            f"flash attention {s.batch} x ({s.sq} x {s.d}) against ({s.sk} x {s.d}) / ({s.sk} x {s.dv}): items of "
            f"{self.mq} query rows ({self.items} items, {self.per_core} per core on {self.block_dim} cores), key / "
            f"value blocks of {self.sk} rows with the online softmax in UB; the largest key blocks that fit, the "
            f"query rows giving the least work per core; bytes used: {buffers}"
            + (
                ""
                if s.causal_offset is None
                else f"; causal (offset {s.causal_offset}): the key blocks above the diagonal skipped, query tiles "
                f"taken in pairs (i, n-1-i) to balance the cores, {causal_work(s, self.mq, self.sk):.0%} of the blocks"
            )
            + self.note
        )


def causal_tile_order(q_tiles: int) -> list[int]:
    """The query tiles of a (batch, head) in the order items walk them under a causal
    mask: 0, n-1, 1, n-2, ...: consecutive items pair a short row of key blocks
    with a long one, so a core's contiguous items have about the same work."""
    order = []
    for i in range(q_tiles // 2):
        order += [i, q_tiles - 1 - i]
    return order + ([q_tiles // 2] if q_tiles % 2 else [])


def item_blocks(s: AttentionShape, mq: int, sk: int, qi: int) -> int:
    """Key blocks query tile qi computes (all of them unless causal)."""
    rows = min(mq, s.sq - qi * mq)
    return -(-s.visible_keys(qi * mq, rows) // sk)


def causal_work(s: AttentionShape, mq: int, sk: int) -> float:
    """The share of the key blocks a causal kernel computes."""
    q_tiles = -(-s.sq // mq)
    return sum(item_blocks(s, mq, sk, qi) for qi in range(q_tiles)) / (q_tiles * -(-s.sk // sk))


def attention_core_work(hw: HardwarePreset, s: AttentionShape, mq: int, sk: int) -> float:
    """The most work a core gets, in query rows x key blocks (an item's fixed cost
    worth ITEM_OVERHEAD_ROWS rows): per_core contiguous items, each (mq +
    overhead) x its blocks; under a causal mask the items walk `causal_tile_order`
    and the blocks above the diagonal are not computed."""
    q_tiles = -(-s.sq // mq)
    items = s.batch * q_tiles
    per_core = -(-items // hw.core_count)
    order = causal_tile_order(q_tiles)
    weight = [(mq + ITEM_OVERHEAD_ROWS) * item_blocks(s, mq, sk, qi) for qi in order]
    return max(
        sum(weight[u % q_tiles] for u in range(start, min(items, start + per_core)))
        for start in range(0, items, per_core)
    )


def attention_buffers(s: AttentionShape, mq: int, sk: int) -> dict[str, int]:
    """Bytes per space of one core's buffers (double-buffered K, V, P, the block
    product and its rescale factor)."""
    d16, dv16, sk16 = round_up(s.d, FRACTAL), round_up(s.dv, FRACTAL), round_up(sk, FRACTAL)
    e = s.in_bytes
    block = mq * sk16
    return {
        "l1": (mq * d16 + 2 * (sk * d16 + sk * dv16 + block)) * e,
        "l0a": (mq * d16 + 2 * block) * e,
        "l0b": 2 * (d16 * sk16 + sk16 * dv16) * e,
        "l0c": (block + 2 * mq * dv16) * 4,
        # scores fp32, probabilities, mask, two fp32 temporaries; accumulator, block
        # product, output; a dozen per-row values (row max and sum, 1 / l, a_j per
        # block parity, temporaries)
        "ub": block * (4 + e + s.mask_bytes + 8) + mq * dv16 * (4 + 4 + e) + 18 * mq * 4 + 1024,
    }


ITEM_OVERHEAD_ROWS = 4
"""What an item's fixed costs are worth in query rows, when weighing more, smaller
items against fewer, larger ones. Its transfers overlap the previous item's
softmax (Q, K and the previous item's V land under one flag), so what is left
is mostly the heads of its dozen vector instructions (~10 cycles each, against
~37 cycles of softmax per query row of 128 keys on ascend910): a few rows.
BERT's 12 heads x 128 rows on 32 cores: 3 items of 16 rows per core (4050
cycles when this was measured) beat 1 item of 64 rows on 24 cores (4843)."""


def choose_attention_tiling(hw: HardwarePreset, s: AttentionShape) -> AttentionTiling:
    """The largest key blocks that fit, then the query rows that give the least work
    per core (`attention_core_work`). Under a causal mask, the causal schedule
    only if it lowers the busiest core's work (with one item per core, the core
    with the last rows computes every block either way, and the per-tile bodies
    cost their dispatch): else every block, masked. ValueError if none fits."""
    if s.causal_offset is None:
        return _attention_tiling(hw, s)
    causal, full = _attention_tiling(hw, s), _attention_tiling(hw, replace(s, causal_offset=None))
    if attention_core_work(hw, s, causal.mq, causal.sk) < attention_core_work(hw, full.shape, full.mq, full.sk):
        return causal
    return replace(full, note="; the mask is causal, but skipping its blocks would not lower the busiest core's work")


def _attention_tiling(hw: HardwarePreset, s: AttentionShape) -> AttentionTiling:
    sq16, sk16 = round_up(s.sq, FRACTAL), round_up(s.sk, FRACTAL)
    for sk in [c for c in (256, 128, 64, 32, 16) if c < sk16] if sk16 > 256 else [sk16, *[c for c in (128, 64, 32, 16) if c < sk16]]:
        fitting = [
            mq
            for mq in sorted({min(c, sq16) for c in (128, 96, 64, 48, 32, 16)}, reverse=True)
            if all(used <= hw.capacity(space) for space, used in attention_buffers(s, mq, sk).items())
        ]
        if not fitting:
            continue
        mq = min(fitting, key=lambda m: (attention_core_work(hw, s, m, sk), -m))
        items = s.batch * -(-s.sq // mq)
        per_core = -(-items // hw.core_count)
        return AttentionTiling(
            s, mq, sk, items, per_core, -(-items // per_core), tuple(attention_buffers(s, mq, sk).items())
        )
    raise ValueError(f"no tiling of attention with head dims {s.d} / {s.dv} fits the buffers of preset '{hw.name}'")
