"""The cube kernel: `C = epilogue(A @ B)` for every matrix-engine op.

One kernel shape serves matmul, batch_matmul, the fused matmuls, cube groups
and convolution (whose A or B is an image gathered on the fly, see conv.py).
The tiling (`lowering/tiling.py`) cuts the output into items of `mb` rows by
`n_block` columns; each core walks its range of items:

    for each item (batch, i, j):             # written out (few per core) or scf.for
        for each K chunk of kc:              # written out (<= 8) or an scf.for over pairs
            MTE2  A (mb x kc), B (kc x n_block) -> L1        # two L1 copies, in turn
            for each step of kb in the chunk:                # written out
                MTE1  A (mb x kb) -> L0A, B (kb x nb) -> L0B  # two copies each, in turn
                M     mmad into the L0C sub-tiles (accumulate after the first)
        for each row chunk of the epilogue:  # written out, UB copies in turn
            fixpipe L0C -> UB (fp32, or cast when there is no vector work)
            MTE2 epilogue operands, V the epilogue body, MTE3 the outputs in their format

The multi-buffering is explicit (distinct allocations chosen by a parity known
at compile time), so MTE2, MTE1, the cube and the epilogue overlap once
`npu-insert-sync` orders the accesses; no synchronisation is emitted here.
Straight-line code where the counts are small keeps loop boundaries, where
the sync pass drains the pipes, out of the steady state.

Tails: the last row / column block of items have static sizes of their own
(a separate copy of the item body under `scf.if`), the last K chunk and step
are peeled. Sizes that are not multiples of 16 go to the cube as they are
(`mmad` takes any m, n, k); FRACTAL_NZ operands move whole 16-column blocks,
and FRACTAL_NZ outputs get their padding written with zeros.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import f32
from xdsl.ir import Attribute

from ....core import dtypes
from ....dialects import npu
from ...tiling import FRACTAL, CubeTiling, GemmShape, choose_cube_tiling, round_up
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


def emit_cube_kernel(k: KernelContext, problem: CubeProblem) -> CubeTiling:
    """Choose the tiling, explain it, and write the kernel."""
    s = problem.shape
    try:
        tiling = choose_cube_tiling(k.hw, s, problem.a, problem.bs, problem.epilogue.cost(s.products))
    except ValueError as e:
        raise k.unsupported(str(e)) from None
    k.explain(tiling.explain())
    k.block_dim = tiling.block_dim
    _CubeKernel(k, problem, tiling).emit()
    return tiling


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


UNROLLED_ITEMS = 4
"""Up to this many items per core are written out rather than looped over."""


def for_core_items(b: KernelBuilder, items: int, per_core: int, block_dim: int, body) -> None:
    """`body(item, position)` for the items of this core, [block_idx x per_core, ..)
    up to `items`. When every core has the same few (<= UNROLLED_ITEMS) they are
    written out one after the other (position 0, 1, ...): the next item's loads
    overlap the last one's work with no loop boundary in between, which is where
    `npu-insert-sync` has to drain the pipes. Otherwise the first is written out
    (position 0) and the others are an scf.for (position None)."""
    start = b.mul(b.block_idx(), per_core) if block_dim > 1 else 0
    body(start, 0)
    if items == per_core * block_dim and per_core <= UNROLLED_ITEMS:
        for u in range(1, per_core):
            body(b.add(start, u), u)
    elif per_core > 1:
        stop = b.min(b.add(start, per_core), items) if block_dim > 1 else items
        with b.loop(b.add(start, 1), stop, name="item") as item:
            body(item, None)


UNROLLED_CHUNKS = 8
"""Up to this many full K chunks of an item are written out rather than looped
over in pairs: a straight line lets npu-insert-sync overlap the next chunk's
staging with this one's work exactly, where a loop boundary costs a drain."""


@dataclass(frozen=True)
class KSchedule:
    """How an item walks K: static `head` chunks (k0, size), `middle` full chunks of
    kc from `middle_start` (an scf.for over pairs), static `tail` chunks. Chunk i
    uses L1 copy (base + i) % 2: consecutive chunks, within an item and across
    items, alternate so that one loads while the other is used."""

    head: tuple[tuple[int, int], ...]
    middle_start: int
    middle: int
    tail: tuple[tuple[int, int], ...]
    base: int = 0

    @property
    def count(self) -> int:
        return len(self.head) + self.middle + len(self.tail)

    def parity(self, index: int) -> int:
        return (self.base + index) % 2


def k_schedule(k: int, kc: int, base: int = 0) -> KSchedule:
    """Chunks of kc over K: the first (static: it starts the accumulation), the full
    ones after it, and what remains."""
    first = min(kc, k)
    middle, remainder = divmod(k - first, kc)
    tail = ((first + middle * kc, remainder),) if remainder else ()
    return KSchedule(((0, first),), first, middle, tail, base)


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
        self.k, self.b, self.p, self.t = k, k.b, problem, tiling
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
        self.a_stride = p.a.l1_stride(t.mb, t.kc)
        self.a_l1 = Copies(b, [p.a.l1_elements(t.mb, t.kc)], et, "l1", "a_l1")
        self.b_strides = [x.l1_stride(t.kc, t.n_block) for x in p.bs]
        self.b_l1 = [
            Copies(b, [x.l1_elements(t.kc, t.n_block)], et, "l1", f"b{n}_l1")
            for n, x in enumerate(p.bs)
        ]
        self.l0a = Copies(b, [round_up(t.mb, FRACTAL) * t.kb], et, "l0a", "a_l0")
        self.l0b = Copies(b, [t.kb * t.nb], et, "l0b", "b_l0")
        self.l0c = [
            [b.alloc([t.mb * t.nb], f32, "l0c", f"acc{n}_{q}") for q in range(t.n_sub)] for n in range(len(p.bs))
        ]

    def _alloc_epilogue(self) -> None:
        b, t, e = self.b, self.t, self.p.epilogue
        rows16 = round_up(t.rows, FRACTAL)
        self.copies = e.cost(len(self.p.bs)).copies
        self.outs = [
            Copies(b, [rows16 * self.n_alloc], ty, "ub", f"out{o}")
            for o, ty in enumerate(e.output_types)
        ]
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
                Role.ROW: self.n_alloc,
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
        b, t = self.b, self.t
        for inp, home in zip(self.p.epilogue.inputs, self.homes):
            if inp.role == Role.SCALAR and home is not None:
                b.emit(npu.CopyOp, inp.view.value, inp.view.base, home[0], 0, cols=1)
        # L1 copies alternate from chunk to chunk across items too: looped items
        # all start on copy 0, so the first item (peeled) ends on copy 1.
        count = k_schedule(self.p.shape.k, t.kc).count

        def item(index: Index, position: int | None) -> None:
            self._item(index, (count * (position + 1)) % 2 if position is not None else 0)

        for_core_items(b, t.items, t.per_core, t.block_dim, item)

    def _item(self, item: Index, base: int) -> None:
        """One item: decode (batch, i, j), then a copy of the body per tail case."""
        b, s, t = self.b, self.p.shape, self.t
        j = b.rem(item, self.n_tiles)
        rest = b.floordiv(item, self.n_tiles)
        i = b.rem(rest, self.m_tiles)
        batch = b.floordiv(rest, self.m_tiles) if s.batch > 1 else 0
        schedule = k_schedule(s.k, t.kc, base)
        for ci, m_act, m_end in _cases(b, i, self.m_tiles, t.mb, s.m):
            with b.when(ci):
                for cj, n_act, _ in _cases(b, j, self.n_tiles, t.n_block, s.n):
                    with b.when(cj):
                        self._emit_item(batch, b.mul(i, t.mb), b.mul(j, t.n_block), m_act, n_act, m_end, schedule)

    def _emit_item(self, batch: Index, m0: Index, n0: Index, m_act: int, n_act: int, m_end: bool, schedule) -> None:
        b, p = self.b, self.p
        a_off = p.a.batches.offset(b, batch)
        b_offs = [x.batches.offset(b, batch) for x in p.bs]
        self._k_loop(a_off, b_offs, m0, n0, m_act, n_act, schedule)
        self._epilogue(batch, m0, n0, m_act, n_act, m_end)

    # ---- the K loop ----------------------------------------------------------------------

    def _k_loop(self, a_off, b_offs, m0, n0, m_act: int, n_act: int, schedule: "KSchedule") -> None:
        """The chunks of `schedule`: static pieces, full chunks in pairs of an scf.for
        (one per L1 copy), static pieces."""
        b, t = self.b, self.t

        def chunk(k0: Index, parity: int, size: int, first: bool) -> None:
            self._chunk(a_off, b_offs, m0, n0, m_act, n_act, k0, parity, size, first)

        for index, (k0, size) in enumerate(schedule.head):
            chunk(k0, schedule.parity(index), size, index == 0)
        first = len(schedule.head)
        if schedule.middle <= UNROLLED_CHUNKS:
            for index in range(schedule.middle):
                chunk(schedule.middle_start + index * t.kc, schedule.parity(first + index), t.kc, False)
        else:
            pairs, odd = divmod(schedule.middle, 2)
            with b.loop(0, pairs, name="kpair") as pair:
                k0 = b.add(schedule.middle_start, b.mul(pair, 2 * t.kc))
                chunk(k0, schedule.parity(first), t.kc, False)
                chunk(b.add(k0, t.kc), schedule.parity(first + 1), t.kc, False)
            if odd:
                last = schedule.middle - 1
                chunk(schedule.middle_start + last * t.kc, schedule.parity(first + last), t.kc, False)
        for index, (k0, size) in enumerate(schedule.tail):
            chunk(k0, schedule.parity(first + schedule.middle + index), size, False)

    def _chunk(self, a_off, b_offs, m0, n0, m_act, n_act, k0: Index, parity: int, size: int, first: bool) -> None:
        b, t, p = self.b, self.t, self.p
        p.a.stage_to_l1(b, a_off, m0, m_act, k0, size, self.a_l1[parity], self.a_stride)
        for x, off, bufs, stride in zip(p.bs, b_offs, self.b_l1, self.b_strides):
            x.stage_to_l1(b, off, k0, size, n0, n_act, bufs[parity], stride)
        steps_full = t.kc // t.kb
        subtiles = [(q * t.nb, min(t.nb, n_act - q * t.nb)) for q in range(-(-n_act // t.nb))]
        loads_per_step = len(p.bs) * len(subtiles)
        for s in range(-(-size // t.kb)):
            kk0, kb_act = s * t.kb, min(t.kb, size - s * t.kb)
            step = parity * steps_full + s
            l0a = self.l0a[step % 2]
            p.a.load_to_l0(b, self.a_l1[parity], self.a_stride, 0, m_act, kk0, kb_act, l0a, t.kb)
            for n, (x, bufs, stride) in enumerate(zip(p.bs, self.b_l1, self.b_strides)):
                for q, (nq0, nq_act) in enumerate(subtiles):
                    l0b = self.l0b[(step * loads_per_step + n * len(subtiles) + q) % 2]
                    x.load_to_l0(b, bufs[parity], stride, kk0, kb_act, nq0, nq_act, l0b, t.nb)
                    b.emit(
                        npu.MmadOp, l0a, 0, l0b, 0, self.l0c[n][q], 0,
                        m=m_act, n=nq_act, k=kb_act, accumulate=not (first and s == 0) or None,
                        strides=[t.kb, t.nb, t.nb],
                    )

    # ---- the epilogue ----------------------------------------------------------------------

    def _epilogue(self, batch: Index, m0: Index, n0: Index, m_act: int, n_act: int, m_end: bool) -> None:
        b, e = self.b, self.p.epilogue
        offsets = {id(inp): inp.view.batches.offset(b, batch) for inp in e.inputs if inp.view is not None}
        out_offsets = [o.batches.offset(b, batch) for o in e.outputs]
        for inp, home in zip(e.inputs, self.homes):
            if inp.role == Role.ROW and home is not None:
                inp.view.load_to_ub(b, offsets[id(inp)], 0, 1, n0, n_act, home[0], self.n_alloc)
        chunks = -(-m_act // self.t.rows)
        for r in range(chunks):
            r0 = r * self.t.rows
            rows = min(self.t.rows, m_act - r0)
            last = m_end and r == chunks - 1
            self._row_chunk(offsets, out_offsets, b.add(m0, r0), r0, rows, last, n0, n_act, r % self.copies)

    def _row_chunk(self, offsets, out_offsets, row0: Index, r0: int, rows: int, last: bool, n0, n_act: int, parity: int) -> None:
        b, t, e = self.b, self.t, self.p.epilogue
        outs = [Tile(bufs[parity], 0, self.n_alloc) for bufs in self.outs]
        n16 = round_up(n_act, FRACTAL)
        pads = [view.padded_rows - view.rows if last and view.layout == NZ else 0 for view in e.outputs]
        for view, out, pad_rows in zip(e.outputs, outs, pads):
            if view.layout == NZ:
                self._zero_padding(out, rows, pad_rows, n_act)
        if e.body is None:
            self._fixpipe(0, r0, rows, n_act, outs[0])
        else:
            products = [Tile(bufs[parity], 0, self.n_alloc) for bufs in self.products]
            for n, tile in enumerate(products):
                self._fixpipe(n, r0, rows, n_act, tile)
            inputs = self._load_inputs(offsets, row0, rows, n0, n_act, parity)
            self.scratch.reset()
            try:
                e.body(EpilogueTiles(self.scratch.emitter(rows, n_act), products, inputs, outs))
            except VectorUnsupported as error:
                raise self.k.unsupported(str(error)) from None
        for view, out, off, pad_rows, scratch in zip(e.outputs, outs, out_offsets, pads, self.out_scratch):
            if view.layout == NZ and not view.transposed:
                view.store_from_ub(b, off, row0, rows + pad_rows, n0, n16, out.buffer, self.n_alloc)
            else:
                view.store_from_ub(b, off, row0, rows, n0, n_act, out.buffer, self.n_alloc, scratch)

    def _zero_padding(self, out: Tile, rows: int, pad_rows: int, n_act: int) -> None:
        """The padding of an NZ output tile is zeros: the 16-column block holding the
        end of the columns (before the real data lands on part of it) and the rows
        after the last one."""
        b, n16 = self.b, round_up(n_act, FRACTAL)
        if n_act % FRACTAL:
            b.emit(npu.VDupOp, out.buffer, n16 - FRACTAL, rows=rows, cols=FRACTAL, strides=[self.n_alloc], value=0.0)
        if pad_rows:
            b.emit(npu.VDupOp, out.buffer, rows * self.n_alloc, rows=pad_rows, cols=n16, strides=[self.n_alloc], value=0.0)

    def _fixpipe(self, product: int, r0: int, rows: int, n_act: int, dst: Tile) -> None:
        t = self.t
        for q in range(-(-n_act // t.nb)):
            nq0 = q * t.nb
            self.b.emit(
                npu.FixpipeOp, self.l0c[product][q], r0 * t.nb, dst.buffer, nq0,
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
                inp.view.load_to_ub(b, offsets[id(inp)], row0, rows, n0, n_act, buf, self.n_alloc, scratch)
                tiles.append(Tile(buf, 0, self.n_alloc))
            elif role == Role.COL:
                buf = home[parity]
                inp.view.load_to_ub(b, offsets[id(inp)], row0, rows, n0, 1, buf, 1)
                tiles.append(Tile(buf, 0, 1, col_stride=0))
            elif role == Role.ROW:
                tiles.append(Tile(home[0], 0, 0))
            else:
                tiles.append(Tile(home[0], 0, 0, col_stride=0))
        return tiles
