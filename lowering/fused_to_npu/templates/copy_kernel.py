"""The kernel of a data movement op: its strided pieces, each tiled
(`copy_tiling.plan_piece`) and written out as loops of copies.

Per piece, the tiles are numbered and shared out among the cores in contiguous
ranges; a tile's number gives its grid coordinates (div / mod), hence its GM
offsets. A chunked axis' last, shorter chunk has its own static instructions
behind an `scf.if`. The pieces of a kernel run side by side, each on a share of
the cores proportional to the bytes it moves. A piece's UB buffers are A (the load layout), B (the store
layout) or Z (a fill's constant, written once by `vdup`); A and B take at most
half of UB so that `npu-double-buffer` can give them a second copy.
"""

from __future__ import annotations

import math

from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager

from xdsl.ir import SSAValue

from ....dialects import npu
from ....simulator.hardware import HardwarePreset
from ..context import KernelContext
from ..kernel_builder import Index, KernelBuilder
from .copy_layout import Copy, Loop, Relayout
from .copy_tiling import PiecePlan, TilePlan, plan_piece
from .index_map import IndexMap, Piece, UnsupportedMap, padding_fills, strided_pieces

DOUBLE_BUFFERED = 2
"""A move's buffers take at most half of UB: npu-double-buffer gives them a second copy."""

FILL_FRACTION = 16
"""A fill's constant buffer takes at most 1/16 of UB (its rows repeat it)."""


def pieces_of(k: KernelContext, maps: Sequence[tuple[IndexMap, int | None, int]]) -> list[Piece]:
    """Pieces of (map, input index or None for a fill, output index) triples, plus
    the fills zeroing each output's format padding; a map that cannot be cut into
    affine pieces is a located error."""
    pieces: list[Piece] = []
    try:
        for imap, src, dst in maps:
            pieces += strided_pieces(imap, None if src is None else k.inputs[src], k.outputs[dst])
        for out in k.outputs:
            for fill in padding_fills(out):
                pieces += strided_pieces(fill, None, out)
    except UnsupportedMap as e:
        raise k.unsupported(str(e)) from None
    return pieces


def emit_moves(k: KernelContext, pieces: Sequence[Piece]) -> None:
    """Write the kernel moving `pieces` (all of one element type). The pieces run
    side by side: each is tiled for a share of the cores proportional to the bytes
    it moves and runs on cores of its own (the next ones, round the kernel's
    block_dim). Each piece has UB buffers of its own (npu-plan-local-memory lets
    the pieces a core runs one after the other share the bytes)."""
    pieces = [p.normalized() for p in pieces if p.elements]
    if not pieces:
        return
    element_type = pieces[0].dst.element_type
    plans, shares = _plans(k.hw, pieces)
    k.block_dim = min(k.hw.core_count, sum(min(share, plan.tiles) for share, plan in zip(shares, plans)))
    first = 0
    for i, (plan, share) in enumerate(zip(plans, shares)):
        k.explain(plan.describe())
        sizes = {name: max(tile.sizes.get(name, 0) for tile in plan.plans.values()) for name in "ABZ"}
        buffers = {name: k.b.alloc([size], element_type, "ub", f"{name.lower()}{i}") for name, size in sizes.items() if size}
        cores = min(share, plan.tiles, k.block_dim)
        _MoveWriter(k.b, buffers, k.block_dim).piece(plan, first % k.block_dim, cores)
        first += cores


def _plans(hw: HardwarePreset, pieces: Sequence[Piece]) -> tuple[list[PiecePlan], list[int]]:
    """Each (normalised, non-empty) piece's plan and its share of the cores (`emit_moves`)."""
    itemsize = pieces[0].dst.itemsize
    capacity = hw.capacity("ub")
    work = [p.elements * (2 if p.src is not None else 1) for p in pieces]
    shares = [max(1, min(hw.core_count, round(hw.core_count * w / sum(work)))) for w in work]
    limits = [capacity // DOUBLE_BUFFERED if p.src is not None else capacity // FILL_FRACTION for p in pieces]
    return [plan_piece(p, hw, itemsize, limit, cores=share) for p, limit, share in zip(pieces, limits, shares)], shares


def moves_cycles(hw: HardwarePreset, pieces: Sequence[Piece]) -> float:
    """The estimated cycles of the kernel `emit_moves` writes for `pieces`: its pieces
    run side by side, so the slowest one's plan."""
    pieces = [p.normalized() for p in pieces if p.elements]
    return max((plan.estimate for plan in _plans(hw, pieces)[0]), default=0.0)


class _MoveWriter:
    def __init__(self, b: KernelBuilder, buffers: dict[str, SSAValue], block_dim: int):
        self.b = b
        self.buffers = buffers
        self.block_dim = block_dim

    def piece(self, plan: PiecePlan, first_core: int, cores: int) -> None:
        """The piece's tiles, on `cores` cores from `first_core` on (wrapping round)."""
        piece, b = plan.piece, self.b
        prologue = None
        if piece.src is None:  # the constant, written once by each core taking part
            size = max(tile.sizes["Z"] for tile in plan.plans.values())
            prologue = lambda: b.emit(npu.VDupOp, self.buffers["Z"], 0, cols=size, value=piece.value)  # noqa: E731
        grid = plan.grid
        with tile_numbers(b, plan.tiles, self.block_dim, first_core, cores, prologue) as t:
            coords = grid_coordinates(b, t, [count for _, count, _ in grid])
            src_off: Index = piece.src_base
            dst_off: Index = piece.dst_base
            for (axis, _, size), coord in zip(grid, coords):
                src_off = b.add(src_off, b.mul(coord, size * piece.axes[axis].src))
                dst_off = b.add(dst_off, b.mul(coord, size * piece.axes[axis].dst))
            chunks = [(i, count) for i, (axis, count, size) in enumerate(grid) if 1 < size < piece.axes[axis].extent]
            self._cases(plan, chunks, coords, src_off, dst_off)

    def _cases(self, plan: PiecePlan, chunks, coords, src_off: Index, dst_off: Index) -> None:
        """One static body per combination of chunk axes at their last, shorter chunk."""
        b, grid = self.b, plan.grid
        for tails, tile in plan.plans.items():
            with ExitStack() as stack:
                for i, count in chunks:
                    axis = grid[i][0]
                    if plan.piece.axes[axis].extent % grid[i][2] == 0:
                        continue
                    last = count - 1
                    stack.enter_context(b.when(b.equals(coords[i], last) if axis in tails else b.less_than(coords[i], last)))
                self.tile(plan.piece, tile, src_off, dst_off)

    def tile(self, piece: Piece, plan: TilePlan, src_off: Index, dst_off: Index) -> None:
        if plan.load is not None:
            dst = self.buffers[plan.load_into]
            self._copies(
                plan.load, lambda gm, ub, c: self._copy(piece.src.value, gm, dst, ub, c, c.gm_stride, c.ub_stride), src_off
            )
        if plan.relayout is not None:
            self._relayout(plan.relayout)
        src = self.buffers[plan.store_from]
        self._copies(plan.store, lambda gm, ub, c: self._copy(src, ub, piece.dst.value, gm, c, c.ub_stride, c.gm_stride), dst_off)

    def _copies(self, copy: Copy, emit: Callable[[Index, Index, Copy], None], gm_off: Index) -> None:
        nest(self.b, copy.loops, gm_off, 0, lambda gm, ub: emit(gm, ub, copy))

    def _copy(self, src: SSAValue, src_off: Index, dst: SSAValue, dst_off: Index, c: Copy, s: int, d: int) -> None:
        self.b.emit(npu.CopyOp, src, src_off, dst, dst_off, rows=c.rows, cols=c.cols, **copy_strides(c.rows, c.cols, s, d))

    def _relayout(self, r: Relayout) -> None:
        a, bb = self.buffers["A"], self.buffers["B"]

        def emit(a_off: Index, b_off: Index) -> None:
            if r.kind == "transpose":
                attrs = {} if (r.src_stride, r.dst_stride) == (r.cols, r.rows) else {"strides": [r.src_stride, r.dst_stride]}
                self.b.emit(npu.VTransposeOp, a, a_off, bb, b_off, rows=r.rows, cols=r.cols, **attrs)
                return
            attrs = {}
            if r.rows > 1 and (r.src_stride, r.dst_stride) != (r.cols, r.cols):
                attrs["strides"] = [r.src_stride, r.dst_stride]
            if r.src_col_stride != 1:
                attrs["col_strides"] = [r.src_col_stride, 1]
            self.b.emit(npu.VCopyOp, a, a_off, bb, b_off, rows=r.rows, cols=r.cols, **attrs)

        nest(self.b, r.loops, 0, 0, emit)


UNROLL = 16
"""In-tile loops of at most this many instructions are unrolled: constant UB
offsets let npu-double-buffer see that each tile rewrites its whole buffer."""


def nest(b: KernelBuilder, loops: Sequence[Loop], first: Index, second: Index, emit: Callable[[Index, Index], None]) -> None:
    """`emit(first offset, second offset)` inside loops stepping both offsets
    (unrolled when there are few iterations)."""
    if not loops:
        emit(first, second)
        return
    loop, rest = loops[0], loops[1:]
    if math.prod(inner.extent for inner in loops) <= UNROLL:
        for i in range(loop.extent):
            nest(b, rest, b.add(first, i * loop.gm), b.add(second, i * loop.ub), emit)
        return
    with b.loop(0, loop.extent, name="j") as i:
        nest(b, rest, b.add(first, b.mul(i, loop.gm)), b.add(second, b.mul(i, loop.ub)), emit)


@contextmanager
def tile_numbers(b: KernelBuilder, count: int, block_dim: int, first_core: int = 0, cores: int | None = None,
                 prologue: Callable[[], object] | None = None) -> Iterator[Index]:
    """The body runs once per tile number this core owns: tiles 0 .. count - 1
    shared out in contiguous ranges among `cores` cores (default: all of the
    kernel's `block_dim`), numbered from core `first_core` on, round the kernel's
    cores. `prologue` runs first on the cores taking part."""
    cores = block_dim if cores is None else cores
    if block_dim == 1:
        if prologue:
            prologue()
        with b.loop(0, count, name="tile") as t:
            yield t
        return
    core = b.block_idx()
    if first_core:
        core = b.rem(b.add(core, block_dim - first_core), block_dim)
    per = -(-count // cores)
    with ExitStack() as inside:
        if min(cores, count) < block_dim:
            inside.enter_context(b.when(b.less_than(core, min(cores, count))))
        if prologue:
            prologue()
        if per == 1:  # one tile per core
            yield core
            return
        start = b.min(b.mul(core, per), count)
        with b.loop(start, b.min(b.add(start, per), count), name="tile") as t:
            yield t


def copy_strides(rows: int, cols: int, src: int, dst: int) -> dict:
    """The `strides` attribute of a rows x cols copy, left out when it is the default."""
    return {} if rows == 1 or (src == cols and dst == cols) else {"strides": [src, dst]}


def grid_coordinates(b: KernelBuilder, t: Index, counts: Sequence[int]) -> list[Index]:
    """Tile number -> coordinates on a grid of `counts` (outermost first)."""
    coords: list[Index] = []
    inner = 1
    for i in reversed(range(len(counts))):
        q = b.floordiv(t, inner)
        coords.append(q if i == 0 else b.rem(q, counts[i]))
        inner *= counts[i]
    return coords[::-1]
