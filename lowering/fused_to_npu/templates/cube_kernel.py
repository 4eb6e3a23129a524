"""The cube kernel: `C = epilogue(A @ B)` for every matrix-engine op.

One kernel shape serves matmul, batch_matmul, the fused matmuls, cube groups
and convolution (whose A or B is an image gathered on the fly, see conv.py).
The tiling (`lowering/tiling.py`) cuts the output into items of `mb` rows by
`n_block` columns; each core walks its range of items:

    scf.for item (this core's range):
      scf.for kpair (pairs of K chunks of kc)                  {npu.pipelined}
        MTE2  A (mb x kc), B (kc x n_block) -> L1 copy 0
        scf.for kstep (pairs of L0 steps of kb)                {npu.pipelined}
          MTE1  A (mb x kb) -> L0A copy 0, B (kb x nb) -> L0B copy 0 (per sub-tile)
          M     mmad into the L0C sub-tiles (overwriting for the item's first step:
                an scf.if on the loop variables)
          ... the same on L0 copy 1
        ... the same chunk on L1 copy 1
      the rest of K (an odd chunk, a short one), written out
      scf.for rows (groups of the epilogue's UB copies)         {npu.pipelined}
        fixpipe L0C -> UB (fp32, or cast when there is no vector work)
        MTE2 epilogue operands, V the epilogue body, MTE3 the outputs in their format
      the last row chunk (a tail, the padding of an NZ output)

With A resident (`CubeTiling.a_resident`: the core's items share their rows of
A), the first item is written out before the loop over the others: it stages
each A chunk into its place in one L1 buffer holding the whole (mb x K) panel,
the later items stage only B, and every item's L0 steps read A from there.

With products in turn (`GemmShape.turns`: each product's outputs depend on it
alone), the loop walks output blocks, and a block's body is one item per
product, written out in turn: each stages its own B into the shared buffers,
accumulates one product and runs that product's epilogue (`CubeProblem.turn`),
so one product's epilogue overlaps the next one's K loop.

The multi-buffering is written here (the two halves of a pair use different
allocations, `{npu.pipelined}` keeps npu-double-buffer off), so MTE2, MTE1, the
cube and the epilogue overlap once `npu-insert-sync` orders the accesses; no
synchronisation is emitted here. The sync pass hands the "buffer free" flags
from loop to loop and through the enclosing loops (`transforms/npu/sync_plan.py`),
so the next chunk or item loads while this one computes, as in straight-line
code.

Tails: the last row / column block of items have static sizes of their own
(a separate copy of the item body under `scf.if`), what K leaves after the
pairs is written out. Sizes that are not multiples of 16 go to the cube as they
are (`mmad` takes any m, n, k); FRACTAL_NZ operands move whole 16-column blocks,
and FRACTAL_NZ outputs get their padding written with zeros.
"""

from __future__ import annotations

from collections.abc import Sequence
from copy import copy as shallow_copy
from functools import partial
from dataclasses import dataclass, replace

from xdsl.dialects.builtin import IntegerAttr, IntegerType, f32
from xdsl.ir import Attribute

from ....core import dtypes
from ....core.diagnostics import op_error
from ....dialects import npu
from ...tiling import (
    FRACTAL, CubeTiling, GemmShape, Prefetched, best_cube_tiling, fitting_cube_tilings, rank_key, round_up, with_count,
)
from ..context import KernelContext
from ..kernel_builder import Index, KernelBuilder
from ..vector_emitter import Operand, Tile, VectorUnsupported
from .cube_epilogue import CubeEpilogue, EpilogueTiles, Role, ScratchTiles
from .cube_operands import NZ, MatrixView


@dataclass(frozen=True)
class CubeProblem:
    shape: GemmShape
    a: MatrixView  # (M x K), or any operand with the same interface
    bs: Sequence[MatrixView]  # (K x N) each; one product per B
    epilogue: CubeEpilogue
    in_type: Attribute
    # Each product's epilogue alone, when its outputs depend on that product only:
    # the products may then be computed in turn (`GemmShape.turns`).
    turn_epilogues: Sequence[CubeEpilogue] = ()
    # The B operands' first chunk loads before the kernel's barrier: constants of a
    # later phase of a merged kernel (`tiling.fitting_cube_tilings`).
    first_b_prefetched: bool = False

    def in_turns(self) -> CubeProblem | None:
        """The same products computed in turn, or None when they cannot be: the
        epilogue does not separate, or the turns would not share their buffers (B
        operands staged differently, epilogues of different forms)."""
        if len(self.bs) < 2 or len(self.turn_epilogues) != len(self.bs):
            return None
        if len({b.form for b in self.bs}) > 1 or len({e.form for e in self.turn_epilogues}) > 1:
            return None
        return replace(self, shape=replace(self.shape, products=1, turns=len(self.bs)))

    def turn(self, index: int) -> CubeProblem:
        """Product `index` with its own epilogue: what one turn computes."""
        return replace(self, bs=[self.bs[index]], epilogue=self.turn_epilogues[index])

    def fitting_tilings(self, hw) -> list[CubeTiling]:
        return self._tilings(fitting_cube_tilings, hw)

    def best_tiling(self, hw) -> tuple[CubeTiling, int]:
        """The first of `fitting_tilings` by `rank_key`, and how many fit."""
        return self._tilings(best_cube_tiling, hw)

    def _tilings(self, search, hw):
        one = self.turn(0) if self.shape.turns > 1 else self
        costs = one.epilogue.cost(self.shape.products)
        return search(hw, self.shape, one.a, one.bs, costs, self.first_b_prefetched)

    def tiling(self, hw) -> CubeTiling:
        return self.best_tiling(hw)[0]


TILING_RANK = "npu.tiling_rank"
"""A cube op's attribute pinning its tiling to the one of that rank in
`ranked_problem_tilings` (0, the default, is the estimated-fastest). It is how
`fused-tune-tilings` hands on the tilings it measured to be faster, and how a user
pins one by hand."""


def _options(hw, problem: CubeProblem, tilings=CubeProblem.fitting_tilings) -> list[tuple[CubeProblem, object]]:
    """The problem as given and with its products in turn, each with the tilings
    that fit it (or what `tilings` says of them). Raises ValueError if no tiling
    fits either."""
    options = []
    error = None
    for option in (problem, problem.in_turns()):
        if option is None:
            continue
        try:
            options.append((option, tilings(option, hw)))
        except ValueError as e:
            error = e
    if not options:
        raise error
    return options


def _estimated_fastest(options) -> tuple[CubeProblem, CubeTiling]:
    """The best tiling of each option by `rank_key`, then the faster of those by
    estimate (the problem as given on a tie)."""
    bests = [(option, min(tilings, key=rank_key)) for option, tilings in options]
    return min(bests, key=lambda pair: pair[1].estimate)


def ranked_problem_tilings(hw, problem: CubeProblem) -> list[tuple[CubeProblem, CubeTiling]]:
    """Every tiling of the problem as given and with its products in turn: the
    estimated-fastest first, then the others by `rank_key`. Raises ValueError if
    no tiling fits either."""
    return _ranked(_options(hw, problem))


def _ranked(options) -> list[tuple[CubeProblem, CubeTiling]]:
    first = _estimated_fastest(options)
    rest = [(option, tiling) for option, tilings in options for tiling in tilings if tiling is not first[1]]
    return [first, *sorted(rest, key=lambda pair: rank_key(pair[1]))]


def choose_problem_tiling(hw, problem: CubeProblem, rank: int = 0) -> tuple[CubeProblem, CubeTiling]:
    """The problem (as given or with its products in turn) and its tiling of that
    rank among `ranked_problem_tilings`. Raises ValueError if no tiling fits, or
    fewer than rank + 1 do."""
    if rank == 0:  # without estimating them all (`best_cube_tiling`)
        options = _options(hw, problem, CubeProblem.best_tiling)
        option, tiling = min(((option, best) for option, (best, _) in options), key=lambda pair: pair[1].estimate)
        return option, with_count(tiling, sum(count for _, (_, count) in options), rank)
    options = _options(hw, problem)
    count = sum(len(tilings) for _, tilings in options)
    if rank < count:
        option, tiling = _ranked(options)[rank]
    else:
        raise ValueError(f"{TILING_RANK} = {rank}, but only {count} tilings fit")
    return option, with_count(tiling, count, rank)


def pin_rank(op, rank: int) -> None:
    """Pin the op's tiling to the one of that rank (`npu.tiling_rank`)."""
    op.attributes[TILING_RANK] = IntegerAttr(rank, IntegerType(64))


def pinned_rank(op) -> int:
    """The op's `npu.tiling_rank` (0 when it has none)."""
    attr = op.attributes.get(TILING_RANK)
    if attr is None:
        return 0
    if not isinstance(attr, IntegerAttr) or attr.value.data < 0:
        raise op_error(op, f"'{TILING_RANK}' must be a non-negative integer, got {attr}")
    return attr.value.data


def emit_cube_kernel(k: KernelContext, problem: CubeProblem) -> CubeTiling:
    """Choose the tiling, explain it, and write the kernel."""
    if k.after_a_barrier and all(getattr(x, "is_constant", False) for x in problem.bs):
        problem = replace(problem, first_b_prefetched=Prefetched(k.prefetch_room, k.prefetch_port_room))
    try:
        problem, tiling = choose_problem_tiling(k.hw, problem, pinned_rank(k.op))
    except ValueError as e:
        raise k.unsupported(str(e)) from None
    k.explain(tiling.explain())
    k.tiling_choices = tiling.candidates
    k.block_dim = tiling.block_dim
    k.tiling = tiling
    _CubeKernel(k, problem, tiling).emit()
    return tiling


def stage_parts(hw, operand, rows: int, cols: int) -> tuple[int, int, bool]:
    """An operand's staging of a (rows x cols) tile as (MTE2 cycles, cycles of gathers
    on MTE3 after them, whether its fills wait for its gathers): an img2col image
    says (`ImageOperand.stage_parts`); a DMA-staged operand is all MTE2."""
    method = getattr(operand, "stage_parts", None)
    return method(hw, rows, cols) if method is not None else (operand.stage_cycles(hw, rows, cols), 0, False)


def staging_order(stages: list[tuple[tuple[int, int, bool], object, object]], weights_prefetched: bool = False) -> list:
    """The stagings of a K chunk (each (its `stage_parts`, what emits it, the operand)) in the order
    estimated to land the chunk first. The scalar unit issues them in program
    order and MTE2 runs its transfers in that order: an image whose slab fills
    wait for its gathers (two slabs in turn) holds MTE2 until its last gather,
    so a weight DMA issued after it waits for all of it (the DMA goes first); an
    image whose gathers do not hold MTE2 (a whole chunk's slabs) goes first, so
    MTE3 gathers while the weights stream after its fills. Ties keep the DMA
    first, then A before B. A chunk whose weights npu-prefetch-constants loads
    before the phase's barrier (`weights_prefetched`: it moves them only while
    they come before the phase's first MTE2 flag) keeps the DMA first: there
    they cost nothing."""
    def landed(order) -> int:
        mte2 = mte3 = 0
        for (fill, gather, reuses), _, _ in order:
            mte2 += fill + (gather if reuses else 0)
            mte3 = max(mte3, mte2) + (0 if reuses else gather)
        return max(mte2, mte3)

    # Operands staged by many scalar-issued copies (`gathers`: an img2col, OIHW
    # weights) after those staged by a few DMAs, unless the gathers first land sooner.
    dma_first = sorted(stages, key=lambda s: s[2].gathers)
    gathers_first = [s for s in dma_first if s[0][1] > 0] + [s for s in dma_first if not s[0][1] > 0]
    best = dma_first if weights_prefetched else min((dma_first, gathers_first), key=landed)  # min: the first of equals
    return [emit for _, emit, _ in best]


class Copies:
    """The copies of a buffer used in turn (double buffering and the like), each
    allocated when first used: a kernel whose items have one chunk never pays
    for a second L1 copy."""

    def __init__(self, b: KernelBuilder, shape: list[int], element_type: Attribute, space: str, name: str):
        self.b, self.shape, self.element_type, self.space, self.name = b, shape, element_type, space, name
        self.buffers: dict[int, object] = {}

    def __getitem__(self, index: int):
        if index not in self.buffers:
            self.buffers[index] = self.b.alloc(self.shape, self.element_type, self.space, f"{self.name}_{index}")
        return self.buffers[index]


def _then(first, second) -> None:
    """`first()`, then `second()` if there is one."""
    first()
    if second is not None:
        second()


class _PreviousEpilogue:
    """The epilogue of the item before, written after this item's K chunk is
    staged (`_CubeKernel._deferred_items`). Called, it is the whole epilogue. It
    reads the L0C this item's multiplies overwrite, so it must stand before the
    first of them; when the item drains first (its fixpipes ahead of the row
    chunks, `_drains_first`) it `splits`: `drain` (the fixpipes) before the first
    multiply, `rest` (constants, inputs, vector work, stores: nothing in L0C)
    anywhere after it."""

    def __init__(self, kernel: _CubeKernel, block: Index) -> None:
        self.kernel, self.block = kernel, block
        t = kernel.t
        self.splits = kernel._drains_first(-(-t.mb // t.rows))

    def __call__(self) -> None:
        self.kernel._item_epilogue(self.block)

    def drain(self) -> None:
        self.kernel._drain(self.kernel.t.mb, self.kernel.t.n_block)

    def rest(self) -> None:
        self.kernel._item_epilogue(self.block, fixpiped=True)


def for_core_items(b: KernelBuilder, items: int, per_core: int, block_dim: int, body) -> None:
    """`body(item)` for the items of this core, [block_idx x per_core, ..) up to
    `items`: an scf.for over them (constant bounds when every core has the same
    number), or the body alone when each core has one."""
    start = b.mul(b.block_idx(), per_core) if block_dim > 1 else 0
    if per_core == 1:
        body(start)
        return
    count: Index = per_core if items == per_core * block_dim else b.min(per_core, b.sub(items, start))
    with b.loop(0, count, name="item") as u:
        body(b.add(start, u))


@dataclass(frozen=True)
class KSchedule:
    """How an item walks K in chunks of kc: `pairs` pairs of full chunks (an scf.for,
    the first chunk of a pair in L1 copy 0, the second in copy 1), then the
    static `rest` chunks (k0, size, L1 copy): an odd full chunk and what remains
    of K. Chunks alternate between the two copies so that one loads while the
    other is used; every item starts on copy 0. With `copies` = 3 the last of an
    odd count of chunks takes copy 2, so the next item's first chunk need not
    wait for it (`tiling.l1_copies`)."""

    kc: int
    pairs: int
    rest: tuple[tuple[int, int, int], ...]

    @property
    def count(self) -> int:
        return 2 * self.pairs + len(self.rest)

    def chunks(self) -> list[tuple[int, int, int]]:
        """Every chunk as (k0, size, copy), in order."""
        paired = [(i * self.kc, self.kc, i % 2) for i in range(2 * self.pairs)]
        return paired + list(self.rest)


def k_schedule(k: int, kc: int, copies: int = 2) -> KSchedule:
    """Chunks of kc over K (see KSchedule)."""
    full, remainder = divmod(k, kc)
    pairs, odd = divmod(full, 2)
    rest = [((2 * pairs) * kc, kc, 0)] if odd else []
    if remainder or not full:
        rest.append((full * kc, remainder if full else k, full % 2))
    if copies == 3 and (2 * pairs + len(rest)) % 2 and rest and (pairs or len(rest) > 1):
        k0, size, _ = rest[-1]
        rest[-1] = (k0, size, 2)
    return KSchedule(kc, pairs, tuple(rest))


def _cases(b: KernelBuilder, index: Index, count: int, tile: int, total: int) -> list[tuple[object, int, bool]]:
    """(condition, size, is the last) for the blocks of a dimension: every block
    is `tile` but the last, which is what remains."""
    if count == 1:
        return [(True, total, True)]
    tail = total - (count - 1) * tile
    if tail == tile:
        return [(True, tile, False)] if not isinstance(index, int) else [(True, tile, index == count - 1)]
    if isinstance(index, int):
        last = index == count - 1
        return [(True, tail if last else tile, last)]
    return [(b.less_than(index, count - 1), tile, False), (b.equals(index, count - 1), tail, True)]


class _CubeKernel:
    def __init__(self, k: KernelContext, problem: CubeProblem, tiling: CubeTiling):
        # With products in turn, the buffers are sized for the first product: every
        # turn uses them (`_turn`).
        self.problem = problem
        self.turns = problem.shape.turns
        self.k, self.b, self.t = k, k.b, tiling
        self.p = problem.turn(0) if self.turns > 1 else problem
        s = problem.shape
        self.m_tiles = -(-s.m // tiling.mb)
        self.n_tiles = -(-s.n // tiling.n_block)
        self.n_alloc = round_up(tiling.n_block, FRACTAL)
        self._alloc_cube()
        self._alloc_epilogue()

    # ---- buffers ------------------------------------------------------------------------

    def _alloc_cube(self) -> None:
        b, t, p = self.b, self.t, self.p
        et = p.in_type
        if t.a_resident:
            k = p.shape.k
            self.a_stride = p.a.l1_stride(t.mb, k)
            self.a_l1 = [b.alloc([p.a.l1_elements(t.mb, k)], et, "l1", "a_panel")] * t.l1_copies  # one buffer
        else:
            self.a_stride = p.a.l1_stride(t.mb, t.kc)
            self.a_l1 = Copies(b, [p.a.l1_elements(t.mb, t.kc)], et, "l1", "a_l1")
        self.b_strides = [x.l1_stride(t.kc, t.n_block) for x in p.bs]
        self.b_l1 = [
            Copies(b, [x.l1_elements(t.kc, t.n_block)], et, "l1", f"b{n}_l1")
            for n, x in enumerate(p.bs)
        ]
        # The L0 copy of the last step written so far (shared with the turns' copies of
        # this object) and the current item's flip of its steps' copies (`_flip_l0`).
        self.l0_last: list[int | None] = [None]
        self.l0_flip = 0
        self.l0a = Copies(b, [round_up(t.mb, FRACTAL) * t.kb], et, "l0a", "a_l0")
        self.l0b = Copies(b, [t.kb * t.nb], et, "l0b", "b_l0")
        self.l0c = [
            [b.alloc([t.mb * t.nb], f32, "l0c", f"acc{n}_{q}") for q in range(t.n_sub)] for n in range(len(p.bs))
        ]

    def _alloc_epilogue(self) -> None:
        b, t, e = self.b, self.t, self.p.epilogue
        self.row_slots = t.row_slots  # a bias row per item when A is resident (tiling.row_slots)
        self.row_base: Index = 0
        self.copies = e.cost(len(self.p.bs)).copies
        # A chunk's rows, as the tiling counted them (EpilogueCost); an NZ output also
        # holds the zero rows padding the last chunk to whole 16-row fractals.
        self.out_rows = [round_up(t.rows, FRACTAL) if view.layout == NZ else t.rows for view in e.outputs]
        self.outs = [
            Copies(b, [rows * self.n_alloc], ty, "ub", f"out{o}")
            for o, (rows, ty) in enumerate(zip(self.out_rows, e.output_types))
        ]
        # Tiles in column blocks (`CubeEpilogue.ub_block`, where the tiling's estimate
        # found them faster: `CubeTiling.ub_block`): block j of a product or input
        # tile starts j x rows x block elements in, of an output tile j x its rows.
        self.ub_block = t.ub_block
        self.products = []
        if e.body is not None:
            self.products = [
                Copies(b, [t.rows * self.n_alloc], f32, "ub", f"prod{n}")
                for n in range(len(self.p.bs))
            ]
        self.homes: list[Copies | None] = []  # None for immediates
        for n, inp in enumerate(e.inputs):
            role = inp.role
            if inp.immediate is not None:
                self.homes.append(None)
                continue
            ty = inp.element_type
            block = max(1, 32 // dtypes.byte_width(ty))
            size = {
                Role.FULL: t.rows * self.n_alloc,
                Role.COL: round_up(t.rows, block),
                Role.ROW: self.n_alloc * self.row_slots,
                Role.SCALAR: block,
            }[role]
            self.homes.append(Copies(b, [size], ty, "ub", f"in{n}"))
        self.scratch = ScratchTiles(b, t.rows, self.n_alloc)
        # Transposed views (an image output or residual the tile sees as its transpose)
        # go through the vector unit's transpose, in a scratch tile each.
        self.out_scratch = [self._transpose_scratch(v, v.tensor.element_type, f"out{o}_t") for o, v in enumerate(e.outputs)]
        self.in_scratch = {
            id(i): self._transpose_scratch(i.view, i.element_type, f"in{n}_t")
            for n, i in enumerate(e.inputs)
            if i.view is not None and i.role == Role.FULL and i.view.transposed
        }

    def _transpose_scratch(self, view, element_type, name: str):
        size = view.transpose_scratch(self.t.rows, self.n_alloc)
        return self.b.alloc([size], element_type, "ub", name) if size else None

    # ---- items ------------------------------------------------------------------------

    def emit(self) -> None:
        """The core's output blocks (items, or groups of an item per product in turn)."""
        b, t = self.b, self.t
        for inp, home in zip(self.p.epilogue.inputs, self.homes):
            if self._scalar_per_batch(inp, home) is False:
                b.emit(npu.CopyOp, inp.view.value, inp.view.base, home[0], 0, cols=1)
        blocks, per_core = t.items // self.turns, t.per_core // self.turns
        # Only the core's first item, written out, finds its B chunk prefetched.
        self.first_item = [self.p.first_b_prefetched and (per_core == 1 or t.a_resident or self._epilogues_deferred())]
        if self._epilogues_deferred():
            self._deferred_items()
            return
        if not t.a_resident:
            for_core_items(b, blocks, per_core, t.block_dim, self._block)
            return
        start = b.mul(b.block_idx(), per_core) if t.block_dim > 1 else 0
        self._block(start, stage_a=True)
        self.first_item[0] = False
        if per_core > 1:
            with b.loop(1, per_core, name="item") as u:
                self._block(b.add(start, u), stage_a=False, slot=u, flip=1)

    def _epilogues_deferred(self) -> bool:
        """Whether each item's epilogue is written after the next item's staging
        (`_deferred_items`): items of one K chunk, several per core (every core as
        many), all of one size (no tail block, no padding rows), one product, A
        not resident."""
        t, s = self.t, self.p.shape
        if t.a_resident or self.turns > 1 or t.per_core < 2 or t.items != t.per_core * t.block_dim:
            return False
        if s.m % t.mb or s.n % t.n_block or k_schedule(s.k, t.kc, t.l1_copies).count != 1:
            return False
        return all(view.padded_rows == view.rows for view in self.p.epilogue.outputs if view.layout == NZ)

    def _deferred_items(self) -> None:
        """The core's items, each epilogue written after the next item's staging
        (in the hook right after it, `_k_loop`'s `after_last_staging`) and before
        that item's L0 steps, the last one's at the end; the items' chunks in L1
        copies 0 and 1 in turn (a loop over pairs, {npu.pipelined}). Pipes run
        their instructions in order: written after its own L0 steps, an epilogue
        (fixpipe and vector work) held back the next item's staging wherever that
        uses the vector unit too (an NCHW image's transposes, a strided window's
        de-interleaving), so items ran back to back (ResNet's 7x7 stem: four
        items a core, each its fill, gathers, K loop and epilogue in turn). The
        next item's L0 steps overwrite L0C only after the epilogue's fixpipes
        have read it (npu-insert-sync orders them)."""
        b, t = self.b, self.t
        start = b.mul(b.block_idx(), t.per_core) if t.block_dim > 1 else 0
        self._staged_item(start, 0, None)
        self.first_item[0] = False
        pairs, odd = divmod(t.per_core - 1, 2)
        with b.loop(0, pairs, name="ipair", pipelined=True) as u:
            first = b.add(start, b.add(b.mul(u, 2), 1))
            self._staged_item(first, 1, b.sub(first, 1))
            self._staged_item(b.add(first, 1), 0, first)
        if odd:
            self._staged_item(b.add(start, t.per_core - 1), 1, b.add(start, t.per_core - 2))
        self._item_epilogue(b.add(start, t.per_core - 1))

    def _item_place(self, block: Index) -> tuple[Index, Index, Index]:
        """(batch, m0, n0) of item `block` (as `_block` decodes it)."""
        b, s, t = self.b, self.p.shape, self.t
        j = b.rem(block, self.n_tiles)
        rest = b.floordiv(block, self.n_tiles)
        i = b.rem(rest, self.m_tiles)
        batch = b.floordiv(rest, self.m_tiles) if s.batch > 1 else 0
        return batch, b.mul(i, t.mb), b.mul(j, t.n_block)

    def _staged_item(self, block: Index, flip: int, previous: Index | None) -> None:
        """Item `block`'s chunk staged in L1 copy `flip`, then item `previous`'s
        epilogue (if any, `_PreviousEpilogue`), then the L0 steps."""
        b, p, t = self.b, self.p, self.t
        batch, m0, n0 = self._item_place(block)
        hook = None if previous is None else _PreviousEpilogue(self, previous)
        self._k_loop(p.a.batches.offset(b, batch), [x.batches.offset(b, batch) for x in p.bs], m0, n0, t.mb,
                     t.n_block, True, None, flip, hook)

    def _item_epilogue(self, block: Index, fixpiped: bool = False) -> None:
        batch, m0, n0 = self._item_place(block)
        self._epilogue(batch, self._input_offsets(batch), m0, n0, self.t.mb, self.t.n_block, False, None,
                       fixpiped=fixpiped)

    def _scalars_per_batch(self) -> bool:
        return any(self._scalar_per_batch(inp, home) for inp, home in zip(self.p.epilogue.inputs, self.homes))

    def _scalar_per_batch(self, inp, home) -> bool | None:
        """For a SCALAR input in a buffer: whether it is loaded per item (each batch
        has its own value, a bias of one channel per convolution group; or each
        product in turn its own) rather than once. None for any other input."""
        if inp.role != Role.SCALAR or home is None:
            return None
        return inp.view.batches.varies or self.turns > 1

    def _block(self, block: Index, stage_a: bool = True, slot: Index = 0, flip: int = 0) -> None:
        """One output block: decode (batch, i, j), then a copy of the body per tail
        case (`stage_a` False: a resident A is in L1 already; `slot`: the block's
        place among the core's, for its bias rows; `flip`: the L1 copy its first
        turn stages a lone K chunk in, see `_k_loop`)."""
        b, s, t = self.b, self.p.shape, self.t
        j = b.rem(block, self.n_tiles)
        rest = b.floordiv(block, self.n_tiles)
        i = b.rem(rest, self.m_tiles)
        batch = b.floordiv(rest, self.m_tiles) if s.batch > 1 else 0
        for ci, m_act, m_end in _cases(b, i, self.m_tiles, t.mb, s.m):
            with b.when(ci):
                for cj, n_act, _ in _cases(b, j, self.n_tiles, t.n_block, s.n):
                    with b.when(cj):
                        m0, n0 = b.mul(i, t.mb), b.mul(j, t.n_block)
                        for turn in range(self.turns):
                            kernel = self._turn(turn)
                            if self.row_slots > 1:
                                kernel.row_base = b.mul(b.add(b.mul(slot, self.turns), turn), self.n_alloc)
                            kernel._emit_item(batch, m0, n0, m_act, n_act, m_end, stage_a and turn == 0, (flip + turn) % 2)

    def _turn(self, index: int) -> _CubeKernel:
        """The kernel computing product `index` in the shared buffers (itself when
        the products are not in turn)."""
        if self.turns == 1:
            return self
        other = shallow_copy(self)
        other.p = self.problem.turn(index)
        return other

    def _emit_item(
        self, batch: Index, m0: Index, n0: Index, m_act: int, n_act: int, m_end: bool, stage_a: bool, flip: int = 0
    ) -> None:
        b, p = self.b, self.p
        a_off = p.a.batches.offset(b, batch)
        b_offs = [x.batches.offset(b, batch) for x in p.bs]
        offsets = self._input_offsets(batch)
        prefetched = []  # the item's epilogue inputs, if they load with its K loop

        def load_inputs() -> None:
            prefetched.extend(self._load_item_inputs(offsets, m0, n0, m_act, n_act))

        # After the last chunk's staging where that is outside the loop over pairs:
        # the cube's operands then go first on MTE2 (LLaMA's projections with the
        # rotary tables: eight epilogue loads stood before the first A chunk).
        with_inputs = self._prefetches(m_act)
        after_last_staging = load_inputs if with_inputs and self._last_chunk_outside_loop() else None
        if with_inputs and after_last_staging is None:
            load_inputs()

        def load_constants() -> None:
            self._load_item_constants(offsets, n0, n_act)

        own_slot = self.row_slots == self.t.per_core  # no earlier item of the core reads this item's row
        early = not with_inputs and own_slot and not self._scalars_per_batch()
        staged = self._k_loop(
            a_off, b_offs, m0, n0, m_act, n_act, stage_a, load_constants if early else None, flip, after_last_staging
        )
        self._epilogue(batch, offsets, m0, n0, m_act, n_act, m_end, prefetched if with_inputs else None,
                       constants_staged=staged)

    def _last_chunk_outside_loop(self) -> bool:
        """Whether an item's last K chunk is written out (not in an scf.for over pairs)."""
        schedule = k_schedule(self.p.shape.k, self.t.kc, self.t.l1_copies)
        return bool(schedule.rest) or schedule.pairs == 1

    def _prefetches(self, m_act: int) -> bool:
        """Whether the item's epilogue inputs load before its K loop: when a core has
        one item (no next item whose K loop the loads would hold back) and every row
        chunk has UB copies of its own. MTE2 then brings the bias and the residual
        while the cube works, instead of after the last chunk's L0 steps."""
        chunks = -(-m_act // self.t.rows)
        return self.t.per_core == 1 and chunks <= self.copies and any(h is not None for h in self.homes)

    # ---- the K loop ----------------------------------------------------------------------

    def _k_loop(
        self, a_off, b_offs, m0, n0, m_act: int, n_act: int, stage_a: bool, with_last_chunk=None, flip: int = 0,
        after_last_staging=None,
    ) -> bool:
        """The chunks of `k_schedule`: pairs of full chunks in an scf.for, then the
        static rest. The first product of the item overwrites L0C: `first` is an
        index that is 0 exactly for the item's first chunk.

        An item of one chunk stages it in L1 copy `flip`: the items (and products
        in turn) written out one after the other alternate their copies, so the
        next one's chunk lands while this one's L0 steps still read theirs (in
        one copy, its DMA waited for the last of them: the FFN projections of a
        transformer layer, two items of a resident A per core, lost 900 cycles
        a phase). A loop over items alternates by itself (npu-double-buffer).

        `with_last_chunk()` stages the item's epilogue constants (a bias row) just
        before the last chunk, if that is outside the loop (returns whether it did):
        npu-insert-sync then lets one landing of MTE2 serve both
        (`LevelPlanner.sharing_landings`), where after the K loop the bias had a
        200-cycle landing of its own.

        `after_last_staging()` is called right after the last chunk's staging, which
        must be outside the loop (`_last_chunk_outside_loop`)."""
        b, t = self.b, self.t
        schedule = k_schedule(self.p.shape.k, t.kc, t.l1_copies)
        self._flip_l0(schedule, flip)

        def chunk(k0: Index, copy: int, size: int, first: Index, staged=None) -> None:
            self._chunk(a_off, b_offs, m0, n0, m_act, n_act, k0, copy, size, first, stage_a, staged)

        with b.loop(0, schedule.pairs, name="kpair", pipelined=True) as pair:
            k0 = b.mul(pair, 2 * t.kc)
            chunk(k0, 0, t.kc, pair)
            chunk(b.add(k0, t.kc), 1, t.kc, 1, None if schedule.rest else after_last_staging)
        for i, (k0, size, copy) in enumerate(schedule.rest):
            last = i == len(schedule.rest) - 1
            if with_last_chunk is not None and last:
                with_last_chunk()
            chunk(k0, flip if schedule.count == 1 else copy, size, k0, after_last_staging if last else None)
        return with_last_chunk is not None and bool(schedule.rest)

    def _flip_l0(self, schedule: KSchedule, flip: int) -> None:
        """Choose the item's `l0_flip` so that its first L0 step uses the other L0
        copy than the step written before it, and note the copy its last step uses.
        A chunk's steps alternate the copies from `copy x (kc / kb)` on, so an item
        of an odd count of steps ended on the copy the next one started on: the
        next item's first L0 moves waited for the last mmad of the one before (a
        BERT layer's Q/K/V projections in turn, three steps each: 234 cycles a
        turn). Items in a loop keep the flip of the body's first; an item's chunks
        in the loop over pairs alternate by themselves."""
        t = self.t
        chunks = schedule.chunks()
        per_copy = t.kc // t.kb

        def copy_of(index: int) -> int:
            return flip if schedule.count == 1 else chunks[index][2]

        first = copy_of(0) * per_copy % 2
        last = self.l0_last[0]
        self.l0_flip = 0 if last is None else (last + first + 1) % 2
        size = chunks[-1][1]
        self.l0_last[0] = (copy_of(len(chunks) - 1) * per_copy + -(-size // t.kb) - 1 + self.l0_flip) % 2

    def _chunk(
        self, a_off, b_offs, m0, n0, m_act, n_act, k0: Index, copy: int, size: int, first: Index, stage_a: bool,
        staged=None,
    ) -> None:
        """MTE2 stages the chunk in L1 copy `copy` (a resident A: into its place in
        the panel, if `stage_a`), then `staged()` if given, then its L0 steps: pairs
        of full steps in an scf.for (one L0 copy each), then what remains. L0
        copies alternate from step to step across chunks too."""
        b, t, p = self.b, self.t, self.p
        a_k0 = k0 if t.a_resident else 0  # where the chunk's A starts in its L1 buffer
        stages = []
        if stage_a:
            at = {"at": (0, k0)} if t.a_resident else {}  # only a resident A is staged off offset 0
            stages.append((stage_parts(self.k.hw, p.a, m_act, size),
                           partial(p.a.stage_to_l1, b, a_off, m0, m_act, k0, size, self.a_l1[copy], self.a_stride, **at), p.a))
        for x, off, bufs, stride in zip(p.bs, b_offs, self.b_l1, self.b_strides):
            stages.append((stage_parts(self.k.hw, x, size, n_act),
                           partial(x.stage_to_l1, b, off, k0, size, n0, n_act, bufs[copy], stride), x))
        # The core's first chunk only (`first_item`, which needs the B prefetched):
        # npu-prefetch-constants moves that one's B, not a later item's.
        prefetched = self.first_item[0] and isinstance(first, int) and first == 0
        b_first = prefetched and stage_a  # its B is in L1 already
        base = copy * (t.kc // t.kb) + self.l0_flip  # steps before this chunk in its pair (+ the item's flip)

        def step(kk0: Index, kb_act: int, index: Index, parity: int, before_a=None) -> None:
            # Both are >= 0: the step is the item's first when both are 0.
            nonzero = any(isinstance(v, int) and v != 0 for v in (first, index))
            self._step(copy, a_k0, kk0, kb_act, n_act, m_act, 1 if nonzero else b.add(first, index), parity,
                       b_first or before_a is not None, before_a)

        # The item before's epilogue (`_PreviousEpilogue`) reads the L0C this chunk's
        # multiplies overwrite: its fixpipes go before the first one, the rest after
        # the last piece's staging; one whose fixpipes do not all come first keeps
        # the chunk staged whole (in the first piece, its residual load would hold
        # every later piece's copies on MTE2).
        splits = getattr(staged, "splits", None)
        if splits is not False and self._staged_in_pieces(k0, size):
            drain = None
            if splits:
                drain, staged = staged.drain, staged.rest
            pieces = self._pieces(a_off, b_offs, m0, n0, m_act, n_act, k0, a_k0, copy, size, stage_a, prefetched)
            for s, (kk0, rows, stage, stage_a_piece) in enumerate(pieces):
                stage()
                if s == 0 and drain is not None:
                    drain()
                last = s == len(pieces) - 1
                if staged is not None and last and stage_a_piece is None:
                    staged()
                after_a = staged if staged is not None and last else None
                step(kk0, rows, s, (base + s) % 2, stage_a_piece and partial(_then, stage_a_piece, after_a))
            return
        for stage in staging_order(stages, prefetched):
            stage()
        if staged is not None:
            staged()
        full, remainder = divmod(size, t.kb)
        pairs = full // 2
        written = 1 if b_first and pairs else 0  # the first pair written out: its B moves ahead of A's flag wait
        if written:
            step(0, t.kb, 0, base % 2)
            step(t.kb, t.kb, 1, (base + 1) % 2)
        with b.loop(written, pairs, name="kstep", pipelined=True) as j:
            kk0 = b.mul(j, 2 * t.kb)
            step(kk0, t.kb, j, base % 2)
            step(b.add(kk0, t.kb), t.kb, 1, (base + 1) % 2)
        for s in range(2 * pairs, full + (1 if remainder else 0)):
            step(s * t.kb, min(t.kb, size - s * t.kb), s, (base + s) % 2)

    def _staged_in_pieces(self, k0: Index, size: int) -> bool:
        """Whether this chunk is staged in pieces of one L0 step each (`_pieces`): a
        chunk written out (not in the loop over pairs), of more than one step, all
        operands DMA-staged tiles that can be staged at a place inside the chunk
        (`stays_in_l1`, no gathers).

        A chunk that overwrites an L1 copy this item has read already (chunk index
        `l1_copies` or later) needs a flag per piece and operand: each piece waits
        for the L0 move that read its own rows, one chunk before. More of those
        than the preset has event ids per pipe pair, and npu-insert-sync turns the
        excess into `pipe_barrier ALL`, which serialises every pipe: a DenseNet
        1x1 convolution (928 -> 128 at 14x14 f32, chunks of 256 in steps of 32)
        ran 1.8x slower in pieces than staged whole. Such a chunk is staged whole."""
        if not (isinstance(k0, int) and size > self.t.kb):
            return False
        operands = [self.p.a, *self.p.bs]
        flags = -(-size // self.t.kb) * len(operands)
        if k0 // self.t.kc >= self.t.l1_copies and flags > self.k.hw.event_ids:
            return False
        return all(getattr(x, "stays_in_l1", False) and not getattr(x, "gathers", True) for x in operands)

    def _pieces(
        self, a_off, b_offs, m0, n0, m_act: int, n_act: int, k0: int, a_k0: int, copy: int, size: int, stage_a: bool,
        prefetched: bool,
    ) -> list[tuple[int, int, object]]:
        """The chunk's L0 steps as (k offset in the chunk, size, what stages its piece):
        MTE2 stages the chunk one step's K range at a time (A's, then B's), each copy
        at its place in the chunk's L1 buffers, and `_chunk` writes each piece's
        copies just before its step: with MTE1 work between the copies,
        npu-insert-sync does not stretch one flag over them all, so each step's L0
        moves wait for their own piece and the cube starts once the first step's
        operands land (one copy of the whole chunk held it until the last byte: a
        BERT layer's FFN-out, K chunks of 1,024, exposed a 1,859-cycle A copy).
        MTE2 still runs the copies back to back (a wait holds its own pipe only).
        B prefetched before the phase's barrier is staged whole with the first
        piece, before A's: npu-prefetch-constants moves top-level copies standing
        before the phase's first MTE2 flag."""
        b, t, p = self.b, self.t, self.p

        def stage_b(kk0: int, rows: int) -> None:
            for x, off, bufs, stride in zip(p.bs, b_offs, self.b_l1, self.b_strides):
                x.stage_to_l1(b, off, k0 + kk0, rows, n0, n_act, bufs[copy], stride, at=(kk0, 0))

        def stage_a_piece(kk0: int, rows: int) -> None:
            p.a.stage_to_l1(b, a_off, m0, m_act, k0 + kk0, rows, self.a_l1[copy], self.a_stride, at=(0, a_k0 + kk0))

        def stage(kk0: int, rows: int) -> None:
            if prefetched:
                if kk0 == 0:
                    stage_b(0, size)
                if stage_a:
                    stage_a_piece(kk0, rows)
            else:
                stage_b(kk0, rows)

        pieces = []
        for kk0 in range(0, size, t.kb):
            rows = min(t.kb, size - kk0)
            a_apart = stage_a and not prefetched  # A's piece staged in the step, after B's first L0 move
            pieces.append((kk0, rows, partial(stage, kk0, rows), partial(stage_a_piece, kk0, rows) if a_apart else None))
        return pieces

    def _step(
        self, copy: int, a_k0: Index, kk0: Index, kb_act: int, n_act: int, m_act: int, first: Index, parity: int,
        b_prefetched: bool = False, before_a=None,
    ) -> None:
        """MTE1 moves the step's A tile (at column a_k0 + kk0 of its L1 buffer) and
        each B sub-tile into L0 copy `parity`, the cube multiplies into the L0C
        sub-tiles (overwriting where `first` is 0).

        `b_prefetched`: the chunk's B tiles are constants npu-prefetch-constants
        loads before the phase's barrier, so they are in L1 before the A tile the
        phase's first MTE2 transfer brings. MTE1 then moves the first B sub-tile
        first, while A is still landing (npu-prefetch-constants lets it go ahead
        of the flag wait for A, `late_waits`): L1 -> L0B moves half the bytes per
        cycle L1 -> L0A does, so the B tile is the longer move, 128 to 263 cycles
        of a transformer layer's phase fills."""
        b, t, p = self.b, self.t, self.p
        subtiles = [(q * t.nb, min(t.nb, n_act - q * t.nb)) for q in range(-(-n_act // t.nb))]
        l0a = self.l0a[parity]

        def load_a() -> None:
            if before_a is not None:
                before_a()
            p.a.load_to_l0(b, self.a_l1[copy], self.a_stride, 0, m_act, b.add(a_k0, kk0), kb_act, l0a, t.kb)

        b_first = b_prefetched
        if not b_first:
            load_a()
        loads = len(p.bs) * len(subtiles)
        for n, (x, bufs, stride) in enumerate(zip(p.bs, self.b_l1, self.b_strides)):
            for q, (nq0, nq_act) in enumerate(subtiles):
                l0b = self.l0b[(parity * loads + n * len(subtiles) + q) % 2]
                x.load_to_l0(b, bufs[copy], stride, kk0, kb_act, nq0, nq_act, l0b, t.nb)
                if b_first:
                    load_a()
                    b_first = False
                self._mmad(l0a, l0b, self.l0c[n][q], m_act, nq_act, kb_act, first)

    def _mmad(self, l0a, l0b, acc, m: int, n: int, k: int, first: Index) -> None:
        """acc (+)= l0a @ l0b, overwriting when `first` is 0 (an scf.if when it is only
        known at run time)."""
        t, b = self.t, self.b

        def mmad(accumulate: bool) -> None:
            b.emit(
                npu.MmadOp, l0a, 0, l0b, 0, acc, 0,
                m=m, n=n, k=k, accumulate=accumulate or None, strides=[t.kb, t.nb, t.nb],
            )

        overwrite, accumulate = b.if_else(first == 0 if isinstance(first, int) else b.equals(first, 0))
        with overwrite:
            mmad(False)
        with accumulate:
            mmad(True)

    # ---- the epilogue ----------------------------------------------------------------------

    def _input_offsets(self, batch: Index) -> dict[int, Index]:
        b = self.b
        return {id(inp): inp.view.batches.offset(b, batch) for inp in self.p.epilogue.inputs if inp.view is not None}

    def _load_item_inputs(self, offsets, m0: Index, n0: Index, m_act: int, n_act: int) -> list[list[Operand]]:
        """Every epilogue input of the item in UB (row chunk r in copy r): the tiles of
        each chunk."""
        self._load_item_constants(offsets, n0, n_act)
        rows = self.t.rows
        return [
            self._load_inputs(offsets, self.b.add(m0, r0), min(rows, m_act - r0), n0, n_act, c)
            for c, r0 in enumerate(range(0, m_act, rows))
        ]

    def _load_item_constants(self, offsets, n0: Index, n_act: int) -> None:
        """The inputs every row chunk of the item shares: a bias row, a per-batch scalar."""
        b = self.b
        for inp, home in zip(self.p.epilogue.inputs, self.homes):
            if inp.role == Role.ROW and home is not None:
                inp.view.load_to_ub(b, offsets[id(inp)], 0, 1, n0, n_act, home[0], self.n_alloc, ub_base=self.row_base)
            elif self._scalar_per_batch(inp, home):
                b.emit(npu.CopyOp, inp.view.value, b.add(inp.view.base, offsets[id(inp)]), home[0], 0, cols=1)

    def _epilogue(
        self, batch: Index, offsets, m0: Index, n0: Index, m_act: int, n_act: int, m_end: bool, prefetched,
        constants_staged: bool = False, fixpiped: bool = False,
    ) -> None:
        """The row chunks of the item: its inputs loaded chunk by chunk, or taken from
        `prefetched` (per chunk, `_load_item_inputs`); its constants loaded first
        unless staged with the last K chunk. `fixpiped`: its products left L0C
        already (`_drain`, the item drains first)."""
        b = self.b
        out_offsets = [o.batches.offset(b, batch) for o in self.p.epilogue.outputs]
        if prefetched is None and not constants_staged:
            self._load_item_constants(offsets, n0, n_act)
        rows, copies = self.t.rows, self.copies
        chunks = -(-m_act // rows)
        groups = (chunks - 1) // copies  # the last chunk (a tail, maybe padding) stays out

        drained = self._drains_first(chunks)
        if drained and not fixpiped:
            self._drain(m_act, n_act)

        def chunk(r0: Index, size: int, last: bool, parity: int, inputs=None) -> None:
            self._row_chunk(offsets, out_offsets, b.add(m0, r0), r0, size, last, n0, n_act, parity, inputs, drained)

        with b.loop(0, groups, name="rows", pipelined=True) as g:  # no groups when prefetched
            for c in range(copies):
                chunk(b.mul(b.add(b.mul(g, copies), c), rows), rows, False, c)
        for r in range(groups * copies, chunks):
            r0 = r * rows
            inputs = prefetched[r] if prefetched is not None else None
            chunk(r0, min(rows, m_act - r0), m_end and r == chunks - 1, r % copies, inputs)

    def _drains_first(self, chunks: int) -> bool:
        """Whether the item's products all leave L0C before the first chunk's vector
        work: when the next item of the core waits for L0C (it accumulates into
        the same sub-tiles) and every row chunk has UB copies of its own."""
        return self.t.per_core > 1 and self.p.epilogue.body is not None and chunks <= self.copies

    def _drain(self, m_act: int, n_act: int) -> None:
        """The fixpipes of every row chunk of an item that drains first, each into
        the UB copies of its chunk."""
        rows = self.t.rows
        for r in range(-(-m_act // rows)):
            self._fixpipe_products(r * rows, min(rows, m_act - r * rows), n_act, r)

    def _fixpipe_products(self, r0: Index, rows: int, n_act: int, parity: int) -> list[Tile]:
        products = [Tile(bufs[parity], 0, self.n_alloc) for bufs in self.products]
        for n, tile in enumerate(products):
            self._fixpipe(n, r0, rows, n_act, tile)
        return products

    def _block_stride(self, rows: int) -> int:
        """Elements between the column blocks of a UB tile of `rows` rows (0: row-major)."""
        return rows * self.ub_block

    def _row_chunk(
        self, offsets, out_offsets, row0: Index, r0: Index, rows: int, last: bool, n0, n_act: int, parity: int, inputs,
        drained: bool = False,
    ) -> None:
        """A row chunk of the epilogue (its products already in UB if `drained`)."""
        b, e = self.b, self.p.epilogue
        outs = [Tile(bufs[parity], 0, self.n_alloc) for bufs in self.outs]
        pads = [view.padded_rows - view.rows if last and view.layout == NZ else 0 for view in e.outputs]
        for view, out, pad_rows, out_rows in zip(e.outputs, outs, pads, self.out_rows):
            if view.layout == NZ:
                self._zero_padding(out, rows, pad_rows, n_act, view.block, self._block_stride(out_rows))
        if e.body is None:
            self._fixpipe(0, r0, rows, n_act, outs[0])
        else:
            if drained:
                products = [Tile(bufs[parity], 0, self.n_alloc) for bufs in self.products]
            else:
                products = self._fixpipe_products(r0, rows, n_act, parity)
            if inputs is None:
                inputs = self._load_inputs(offsets, row0, rows, n0, n_act, parity)
            try:
                if self.ub_block:
                    self._blocked_body(rows, n_act, products, inputs, outs)
                else:
                    self.scratch.reset()
                    e.body(EpilogueTiles(self.scratch.emitter(rows, n_act), products, inputs, outs))
            except VectorUnsupported as error:
                raise self.k.unsupported(str(error)) from None
        for view, out, off, pad_rows, scratch, out_rows in zip(
            e.outputs, outs, out_offsets, pads, self.out_scratch, self.out_rows
        ):
            if view.layout == NZ and not view.transposed:
                padded = round_up(n_act, view.block)
                view.store_from_ub(b, off, row0, rows + pad_rows, n0, padded, out.buffer, self.n_alloc,
                                   ub_block_stride=self._block_stride(out_rows))
            else:
                view.store_from_ub(b, off, row0, rows, n0, n_act, out.buffer, self.n_alloc, scratch)

    def _blocked_body(self, rows: int, n_act: int, products: list[Tile], inputs: list[Operand], outs: list[Tile]) -> None:
        """The body once per column block of tiles in blocks (`CubeEpilogue.ub_block`):
        an scf.for over the whole blocks, then the part of a block that ends the
        columns. A block of a tile is a (rows x block) row-major tile; a bias row's
        block and the products' (row-major as the fixpipe leaves them: it moves
        whole fractals of L0C) are their columns there; per-row values and
        scalars are the same for every block."""
        b, k, e = self.b, self.ub_block, self.p.epilogue
        out_strides = [self._block_stride(r) for r in self.out_rows]

        def at(j: Index, cols: int) -> None:
            def block(tile: Tile, stride: int) -> Tile:
                return Tile(tile.buffer, b.add(tile.offset, b.mul(j, stride)), k, tile.col_stride)

            def columns(tile: Tile) -> Tile:
                return Tile(tile.buffer, b.add(tile.offset, b.mul(j, k)), tile.row_stride, tile.col_stride)

            ins = []
            for inp, tile in zip(e.inputs, inputs):
                if isinstance(tile, float) or inp.role in (Role.COL, Role.SCALAR):
                    ins.append(tile)
                elif inp.role == Role.ROW:
                    ins.append(columns(tile))
                else:
                    ins.append(block(tile, self._block_stride(self.t.rows)))
            self.scratch.reset()
            e.body(EpilogueTiles(
                self.scratch.emitter(rows, cols),
                [columns(t) for t in products], ins, [block(t, s) for t, s in zip(outs, out_strides)],
            ))

        whole, part = divmod(n_act, k)
        with b.loop(0, whole, name="cblk") as j:
            at(j, k)
        if part:
            at(whole, part)

    def _zero_padding(self, out: Tile, rows: int, pad_rows: int, n_act: int, block: int, block_stride: int = 0) -> None:
        """The padding of an NZ output tile is zeros: the column block holding the
        end of the columns (before the real data lands on part of it) and the rows
        after the last one (`block_stride`: the tile is in column blocks)."""
        b, padded = self.b, round_up(n_act, block)
        if block_stride:
            if n_act % block:
                b.emit(npu.VDupOp, out.buffer, (padded // block - 1) * block_stride, cols=rows * block, value=0.0)
            if pad_rows:
                b.emit(npu.VDupOp, out.buffer, rows * block, rows=padded // block, cols=pad_rows * block,
                       strides=[block_stride], value=0.0)
            return
        if n_act % block:
            b.emit(npu.VDupOp, out.buffer, padded - block, rows=rows, cols=block, strides=[self.n_alloc], value=0.0)
        if pad_rows:
            b.emit(npu.VDupOp, out.buffer, rows * self.n_alloc, rows=pad_rows, cols=padded, strides=[self.n_alloc], value=0.0)

    def _fixpipe(self, product: int, r0: Index, rows: int, n_act: int, dst: Tile) -> None:
        t = self.t
        for q in range(-(-n_act // t.nb)):
            nq0 = q * t.nb
            self.b.emit(
                npu.FixpipeOp, self.l0c[product][q], self.b.mul(r0, t.nb), dst.buffer, nq0,
                rows=rows, cols=min(t.nb, n_act - nq0), strides=[t.nb, self.n_alloc],
            )

    def _load_inputs(self, offsets, row0: Index, rows: int, n0, n_act: int, parity: int) -> list[Operand]:
        b, e = self.b, self.p.epilogue
        tiles: list[Operand] = []
        for inp, home in zip(e.inputs, self.homes):
            role = inp.role
            if inp.immediate is not None:
                tiles.append(inp.immediate)
            elif role == Role.FULL:
                buf = home[parity]
                scratch = self.in_scratch.get(id(inp))
                inp.view.load_to_ub(b, offsets[id(inp)], row0, rows, n0, n_act, buf, self.n_alloc, scratch,
                                    ub_block_stride=self._block_stride(self.t.rows))
                tiles.append(Tile(buf, 0, self.n_alloc))
            elif role == Role.COL:
                buf = home[parity]
                inp.view.load_to_ub(b, offsets[id(inp)], row0, rows, n0, 1, buf, 1)
                tiles.append(Tile(buf, 0, 1, col_stride=0))
            elif role == Role.ROW:
                tiles.append(Tile(home[0], self.row_base, 0))
            else:
                tiles.append(Tile(home[0], 0, 0, col_stride=0))
        return tiles
