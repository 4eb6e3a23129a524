"""The row-tile kernel: every vector kernel that works row by row.

Its operands are seen through a `RowView` (`row_view.py`: rows, columns, and
each operand's role: FULL, ROW, COL, SCALAR; plain, transposed or blocked
layouts). Rows are cut into tiles of `tile_rows`; the tiles are shared out
among the cores (`block_dim` of them), each core looping over its tiles: copy
the FULL and COL inputs of the tile into UB (MTE2), run the body on the vector
unit, copy the outputs back (MTE3). ROW, SCALAR and WHOLE inputs are loaded once (and
an optional `prologue` prepares them once, e.g. batch_norm's per-channel
factors). The body is any function of the tiles (`emit_elementwise` for one
op, a whole fused group, a softmax...), so the tiling and data movement are
written once. The tail tile (fewer rows) runs under `scf.if` with buffers of
its own, so the loop's buffers stay private to it. Where each core has one
tile there is no loop, and each input's load stands just before the body's
first reader of it (`_load_at_first_use`): nothing else hides those loads.

Tile size: the largest number of rows whose buffers fit UB, counting every
buffer private to the tile loop twice (npu-double-buffer gives them a second
copy): FULL and COL buffers and the temporaries (peak use, counted by a dry run
of the body); then no larger than needed to give every core at least two tiles,
so loads overlap compute, and even across the cores; then adjusted to what the
layout needs (whole blocks, whole periods, whole NZ matrices). `k.explain`
records it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from xdsl.ir import Attribute, Operation, SSAValue

from ...core import dtypes
from ...dialects import npu
from .context import KernelContext
from .kernel_builder import Index, KernelBuilder
from .channel_rows import ChannelRows
from .row_view import (  # noqa: F401  (the view is part of this module's API)
    Blocked,
    Role,
    RowOperand,
    RowView,
    blocked_view,
    nz_rows,
    operand_role,
    row_view,
)
from .vector_emitter import UB_ALIGN_BYTES, Operand, Tile, VectorEmitter

Body = Callable[[VectorEmitter, list[Operand], list[Tile]], None]
Prologue = Callable[[VectorEmitter, list[Operand]], list[Operand]]
"""Runs once before the tiles on an emitter of one row of C: returns the inputs
the body gets instead (e.g. a ROW operand widened to fp32), and after them any
value it computed for every tile (a group's setup value)."""

TEMP_COPIES = 2
"""`npu-double-buffer` gives every buffer private to the tile loop a second copy,
temporaries included, or none if they would not fit: budget for two."""

MIN_TILE_BYTES = 4096
"""Smallest tile worth a transfer: below it the fixed latency dominates."""


# ---- temporaries -------------------------------------------------------------------------


@dataclass
class _TempPool:
    """Temporaries of a body: full tiles and per-row ones, by element type. A
    released temporary is reused by a later request of the same kind; `reset`
    starts a new tile (the body asks in the same order every time)."""

    make: Callable[[str, Attribute], Tile]
    buffers: dict[tuple[str, Attribute], list[Tile]] = field(default_factory=dict)
    busy: set[int] = field(default_factory=set)

    def get(self, kind: str, element_type: Attribute) -> Tile:
        pool = self.buffers.setdefault((kind, element_type), [])
        for tile in pool:
            if id(tile.buffer) not in self.busy:
                self.busy.add(id(tile.buffer))
                return tile
        tile = self.make(kind, element_type)
        pool.append(tile)
        self.busy.add(id(tile.buffer))
        return tile

    def release(self, tile: Tile) -> None:
        self.busy.discard(id(tile.buffer))

    def reset(self) -> None:
        self.busy.clear()

    def emitter(self, b: KernelBuilder, rows: int, cols: int) -> VectorEmitter:
        return VectorEmitter(
            b, rows, cols, lambda t: self.get("full", t), lambda t: self.get("col", t), self.release
        )

    def counts(self) -> dict[tuple[str, Attribute], int]:
        return {key: len(tiles) for key, tiles in self.buffers.items()}


def count_temps(view: RowView, body: Body, prologue: Prologue | None = None) -> dict[tuple[str, Attribute], int]:
    """How many temporaries of each kind ("full", "col", "setup") and element type
    the body (and prologue) keep alive at once (a dry run)."""
    scratch = KernelBuilder("scratch", [])
    rows = view.chunk if view.inner > 1 else (view.blocked.blocks if view.blocked else 1)

    def make(kind: str, element_type: Attribute) -> Tile:
        if kind == "col":
            return Tile(scratch.alloc([rows], element_type, "ub"), 0, 1, col_stride=0)
        return Tile(scratch.alloc([view.cols], element_type, "ub"), 0, view.cols)

    def operand(op: RowOperand) -> Operand:
        if op.immediate is not None:
            return op.immediate
        if op.role == Role.WHOLE:
            return Tile(scratch.alloc([op.tensor.numel], op.tensor.element_type, "ub"), 0, 0)
        buffer = scratch.alloc([view.cols], op.tensor.element_type, "ub")
        if op.role == Role.FULL:
            return Tile(buffer, 0, op.columns(view.cols))
        if op.role == Role.ROW:
            return Tile(buffer, 0, 0)
        return Tile(buffer, 0, 1 if op.role == Role.COL else 0, col_stride=0)

    setup = _TempPool(make)
    inputs = [operand(op) for op in view.inputs]
    if prologue is not None:
        inputs = prologue(setup.emitter(scratch, 1, view.cols), inputs)
    pool = _TempPool(make)
    outputs = [operand(op) for op in view.outputs]
    body(pool.emitter(scratch, rows, view.cols), inputs, outputs)
    counts = pool.counts()
    for (_, element_type), n in setup.counts().items():
        counts[("setup", element_type)] = counts.get(("setup", element_type), 0) + n
    return counts


# ---- tiling -----------------------------------------------------------------------------


def _row_bytes(view: RowView, temps: dict) -> tuple[int, int]:
    """(bytes per tile row, bytes allocated once) of the UB buffers."""
    row_elements = view.cols * view.chunk
    staged = 3 if view.inner > 1 else 2  # transposed: two staging copies and the body tile
    per_row, fixed = 0, view.setup_bytes
    for op in [*view.inputs, *view.outputs]:
        size = op.tensor.itemsize
        if op.role == Role.WHOLE:
            fixed += op.tensor.numel * size
        elif op.repeat is not None:
            fixed += op.columns(view.cols) * size
        elif op.role == Role.FULL and op.period is not None:
            per_row += row_elements * size
        elif op.role == Role.FULL:
            per_row += staged * op.columns(view.cols) * view.chunk * size
        if (converter := nz_rows(view, op)) is not None:  # its NZ staging, padding included
            per_row += 2 * converter.staged_per_row() * size
        elif op.role == Role.COL and op.repeat is None:
            if op.period is not None:
                fixed += op.period * size
                per_row += size
            else:
                per_row += staged * view.chunk * size
        elif op.role == Role.ROW:
            fixed += view.cols * size
            if view.blocked is not None:
                per_row += view.cols * size  # expanded to a whole tile
                work = expansion_type(view, op.tensor.element_type)
                if work != op.tensor.element_type:  # expanded in `work`, then cast back
                    per_row += view.cols * dtypes.byte_width(work)
        elif op.immediate is None:
            fixed += UB_ALIGN_BYTES
    for (kind, element_type), count in temps.items():
        width = dtypes.byte_width(element_type)
        if kind == "full":
            per_row += TEMP_COPIES * count * row_elements * width
        elif kind == "col":
            per_row += TEMP_COPIES * count * view.chunk * width
        elif view.blocked is not None:
            per_row += count * row_elements * width  # a setup temporary is a whole tile
        else:
            fixed += count * view.cols * width
    return per_row, fixed


def expansion_type(view: RowView, element_type: Attribute) -> Attribute:
    """The type a ROW operand over the blocked dim is expanded in. The expansion
    copies c0-element runs side by side, and a vector copy must start 32-byte
    aligned: c0 elements of a one-byte type (a bool mask, int8, float8) are 16
    bytes, so those are expanded as f16, which holds each of their values exactly,
    and cast back."""
    if (view.blocked.c0 * dtypes.byte_width(element_type)) % UB_ALIGN_BYTES == 0:
        return element_type
    return dtypes.f16


def rows_that_fit(k: KernelContext, view: RowView, temps: dict) -> int:
    """How many view rows fit UB with their buffers and temporaries (0: not one)."""
    per_row, fixed = _row_bytes(view, temps)
    buffers = len(view.inputs) + len(view.outputs) + sum(temps.values())
    budget = k.hw.capacity("ub") - fixed - 2 * buffers * k.hw.alignment["ub"]
    return max(0, budget // max(per_row, 1))


def fits(k: KernelContext, view: RowView, body: Body, prologue: Prologue | None = None) -> bool:
    """Whether one row of `view` (with what `body` needs) fits UB."""
    return rows_that_fit(k, view, count_temps(view, body, prologue)) >= 1


def choose_tile_rows(k: KernelContext, view: RowView, temps: dict) -> int:
    per_row, fixed = _row_bytes(view, temps)
    fits = rows_that_fit(k, view, temps)
    if fits < 1:
        raise k.unsupported(
            f"one row of {view.cols * view.chunk} elements needs {per_row} bytes of UB with its temporaries "
            f"and {fixed} bytes of parameters; UB has {k.hw.capacity('ub')}"
        )
    total_rows = view.tile_rows_of_view
    itemsize = max(op.tensor.itemsize for op in view.outputs)
    least = max(1, math.ceil(MIN_TILE_BYTES / (view.cols * view.chunk * itemsize)))
    spread = math.ceil(total_rows / (2 * k.hw.core_count))
    wanted = max(1, min(fits, total_rows, max(least, spread)))
    rows = _legal_rows(_balanced(wanted, total_rows, k.hw.core_count), fits, view)
    if rows < 1:
        raise k.unsupported(f"a tile of whole NZ matrices does not fit UB ({fits} rows do)")
    k.explain(
        f"{view.rows} x {view.cols} {_layout_name(view)} in tiles of {rows} rows: "
        f"{fits} rows fit UB ({per_row} B/row, {fixed} B fixed), {spread} rows give every core two tiles"
    )
    return rows


def _balanced(wanted: int, total_rows: int, cores: int) -> int:
    """At most `wanted` rows such that each core's share is close to a whole number
    of tiles (so no core does a tile more than the others)."""
    share = math.ceil(total_rows / cores)
    return math.ceil(share / math.ceil(share / wanted))


def _layout_name(view: RowView) -> str:
    if view.flat:
        return "(flat)"
    if view.inner > 1:
        return f"(slabs of {view.cols} x {view.inner}, {view.chunk} columns a tile, transposed in UB)"
    if view.blocked is not None:
        b = view.blocked
        return f"(blocked {b.batch} x {b.blocks} x {b.rows} x {b.c0})"
    return ""


def _legal_rows(wanted: int, fits: int, view: RowView) -> int:
    """The tile rows closest to `wanted` (never above `fits`) that the layout allows:
    one chunk of a slab at a time; whole blocks or divisors of a block's rows;
    whole periods or divisors of a period."""
    if view.chunk < view.inner:
        return 1
    periods = [view.blocked.rows] if view.blocked is not None else []
    periods += [op.period for op in view.inputs if op.period is not None and op.repeat is None and op.period < view.rows]
    converters = [c for op in [*view.inputs, *view.outputs] if (c := nz_rows(view, op)) is not None]
    periods += [c.period() for c in converters if c.period() is not None and c.period() < view.rows]
    rows = wanted
    for p in sorted(set(periods)):
        rows = _fit_period(rows, p)
    if len(set(periods)) == 1 and any(isinstance(c, ChannelRows) for c in converters):
        p = periods[0]
        if rows % p == 0 and rows < wanted and rows + p <= fits:
            rows += p  # whole channel blocks just past `wanted`: rounded down, a core could take a tile more
    for q in {op.repeat for op in view.inputs if op.repeat}:  # a tile within one operand row
        rows = max(d for d in range(1, min(rows, q) + 1) if q % d == 0)
    if any(not (rows % p == 0 or p % rows == 0) for p in periods):
        rows = 1
    for c in converters:
        if not c.tile_rows_ok(rows) and c.period() is not None:
            rows = c.period()  # whole matrices: the padding rows go with them
    return max(1, min(rows, fits)) if all(c.tile_rows_ok(min(rows, fits)) for c in converters) else 0


def _fit_period(rows: int, period: int) -> int:
    if rows >= period:
        return rows // period * period
    return max(d for d in range(1, rows + 1) if period % d == 0)


# ---- emission ---------------------------------------------------------------------------


def emit_row_kernel(k: KernelContext, view: RowView, body: Body, prologue: Prologue | None = None) -> None:
    temps_needed = count_temps(view, body, prologue)
    tile_rows = choose_tile_rows(k, view, temps_needed)
    _RowKernel(k, view, body, tile_rows, prologue).emit()


class _RowKernel:
    def __init__(self, k: KernelContext, view: RowView, body: Body, tile_rows: int, prologue: Prologue | None):
        self.k, self.b, self.view, self.body, self.tile_rows = k, k.b, view, body, tile_rows
        self.prologue = prologue
        self.cols = view.cols
        self.full_tiles, self.tail_rows = divmod(view.tile_rows_of_view, tile_rows)
        tiles = self.full_tiles + (1 if self.tail_rows else 0)
        self.nz = {id(op): c for op in [*view.inputs, *view.outputs] if (c := nz_rows(view, op))}
        self.per_core = math.ceil(tiles / k.hw.core_count)
        k.block_dim = math.ceil(tiles / self.per_core)

    # ---- shapes of one tile ------------------------------------------------------------

    def _body_shape(self, rows: int) -> tuple[int, int]:
        """(rows, cols) the body's instructions cover for a tile of `rows` view rows."""
        view = self.view
        if view.inner > 1:
            return view.chunk * rows, self.cols
        if view.blocked is not None:
            b = view.blocked
            return b.blocks * max(1, rows // b.rows), min(rows, b.rows) * b.c0
        return rows, self.cols

    def _tile_elements(self) -> int:
        rows, cols = self._body_shape(self.tile_rows)
        return rows * cols

    def _make_temp(self, rows: int, kind: str, element_type: Attribute) -> Tile:
        rows, cols = self._body_shape(rows)
        if kind == "col":
            return Tile(self.b.alloc([rows], element_type, "ub"), 0, 1, col_stride=0)
        return Tile(self.b.alloc([rows * cols], element_type, "ub"), 0, cols)

    # ---- driving ------------------------------------------------------------------------

    def emit(self) -> None:
        """Inputs loaded once (ROW, SCALAR, whole periods) first, then the tiles: a
        loop over each core's full tiles, and the tail tile under `scf.if`. The loop
        and the tail have buffers of their own, so the loop's are private to it
        (what `npu-double-buffer` needs to give them a second copy)."""
        b = self.b
        self.once = [self._input_buffer(op) for op in self.view.inputs]
        loop_set = _TileSet(self, self.tile_rows)
        inputs = loop_set.inputs(self.once)
        if self.prologue is not None:
            self.prepared = self.prologue(self._setup_emitter(), inputs)
            self.placeholders = inputs
        start = b.mul(b.block_idx(), self.per_core) if self.k.block_dim > 1 else 0
        if self.full_tiles and self.per_core == 1 and self.k.block_dim > 1:
            # a tile per core: no loop (npu-double-buffer would pair tiles no core has)
            with b.when(True if self.full_tiles >= self.k.block_dim else b.less_than(start, self.full_tiles)):
                self._tile(loop_set, b.mul(start, self.tile_rows), self.tile_rows)
        elif self.full_tiles:
            stop = b.min(b.add(start, self.per_core), self.full_tiles) if self.k.block_dim > 1 else self.full_tiles
            with b.loop(start, stop, name="tile") as t:
                self._tile(loop_set, b.mul(t, self.tile_rows), self.tile_rows)
        if self.tail_rows:
            owner = self.full_tiles // self.per_core
            condition = b.equals(b.block_idx(), owner) if self.k.block_dim > 1 else True
            with b.when(condition):
                self._tile(_TileSet(self, self.tail_rows), self.full_tiles * self.tile_rows, self.tail_rows)

    def _setup_emitter(self) -> VectorEmitter:
        """The prologue's emitter: one row of C (ROW operands), or a whole tile in
        the blocked layout (whose ROW operands are expanded to a tile)."""
        b = self.b
        if self.view.blocked is None:
            return _TempPool(lambda kind, t: Tile(b.alloc([self.cols], t, "ub"), 0, 0)).emitter(b, 1, self.cols)
        rows, cols = self._body_shape(self.tile_rows)
        return _TempPool(lambda kind, t: Tile(b.alloc([rows * cols], t, "ub"), 0, cols)).emitter(b, rows, cols)

    def _width(self, op: RowOperand) -> int:
        return op.columns(self.cols)

    def is_staged(self, op: RowOperand, rows: int) -> bool:
        """Transposed layouts move FULL operands (and COL ones of several slabs)
        through a staging buffer in GM order."""
        if self.view.inner == 1 or op.period is not None:
            return False
        if op.role == Role.FULL:
            return self.view.chunk > 1
        return op.role == Role.COL and rows > 1

    def _buffer(self, op: RowOperand, rows: int | None = None) -> Tile:
        element_type = op.tensor.element_type
        rows, cols = self._body_shape(rows or self.tile_rows)
        if op.repeat is not None:  # one operand row per tile, read by every row of it
            count = max(op.columns(cols), _block_elements(element_type))
            return Tile(self.b.alloc([count], element_type, "ub"), 0, 0, col_stride=1 if op.role == Role.FULL else 0)
        if op.role == Role.FULL:
            cols = op.columns(cols) if op.width else cols
            return Tile(self.b.alloc([rows * cols], element_type, "ub"), 0, cols)
        if op.role == Role.COL:
            return Tile(self.b.alloc([rows], element_type, "ub"), 0, 1, col_stride=0)
        if op.role == Role.ROW:
            return Tile(self.b.alloc([self.cols], element_type, "ub"), 0, 0)
        if op.role == Role.WHOLE:
            return Tile(self.b.alloc([op.tensor.numel], element_type, "ub"), 0, 0)
        return Tile(self.b.alloc([_block_elements(element_type)], element_type, "ub"), 0, 0, col_stride=0)

    def _loaded_per_tile(self, op: RowOperand) -> bool:
        if op.role not in (Role.FULL, Role.COL):
            return False
        return op.repeat is not None or op.period is None or self.tile_rows < op.period

    def _input_buffer(self, op: RowOperand) -> Operand | None:
        """UB home of an input loaded once (ROW, SCALAR, whole periods), loaded
        here; None for those loaded with each tile."""
        if op.immediate is not None:
            return op.immediate
        if self._loaded_per_tile(op):
            return None
        tile = self._buffer(op)
        if op.role == Role.ROW and op.spread is not None:
            self._load_spread(op, tile)
        elif op.role == Role.ROW:
            self.b.emit(npu.CopyOp, op.tensor.value, 0, tile.buffer, 0, cols=op.tensor.numel)
            if self.view.blocked is not None:
                return self._expand_blocked_row(op, tile)
        elif op.role == Role.SCALAR:
            self.b.emit(npu.CopyOp, op.tensor.value, 0, tile.buffer, 0, cols=1)
        elif op.role == Role.WHOLE:
            self.b.emit(npu.CopyOp, op.tensor.value, 0, tile.buffer, 0, cols=op.tensor.numel)
        elif op.period is not None and op.repeat is None and self.tile_rows >= op.period:
            # every tile starts at a multiple of the period: the same values each time
            repeats = self.tile_rows // op.period
            count = op.period * self._width(op)
            strides = {"strides": [0, count]} if repeats > 1 else {}
            self.b.emit(npu.CopyOp, op.tensor.value, 0, tile.buffer, 0, rows=repeats, cols=count, **strides)
        return tile

    def _load_spread(self, op: RowOperand, tile: Tile) -> None:
        """A ROW operand broadcast within the row, expanded into `tile` as it is
        loaded: its copies (source stride 0 where it repeats) in its loops."""
        b, spread = self.b, op.spread
        strides = {"strides": [spread.src_stride, spread.dst_stride]} if spread.rows > 1 else {}

        def emit(loops, src: Index, dst: Index) -> None:
            if not loops:
                b.emit(npu.CopyOp, op.tensor.value, src, tile.buffer, dst, rows=spread.rows, cols=spread.cols, **strides)
                return
            (extent, src_step, dst_step), *rest = loops
            with b.loop(0, extent, name="spread") as i:
                emit(rest, b.affine(src, (i, src_step)), b.affine(dst, (i, dst_step)))

        emit(spread.loops, 0, 0)

    def _expand_blocked_row(self, op: RowOperand, raw: Tile) -> Tile:
        """A bias over the blocked dim, as (J blocks x t rows x c0) like a tile: block j
        repeats bias[j*c0 : (j+1)*c0] on each of its rows. Padded channels are zero."""
        b, blocked = self.b, self.view.blocked
        element_type = op.tensor.element_type
        work_type = expansion_type(self.view, element_type)
        rows, cols = self._body_shape(self.tile_rows)
        padded = blocked.blocks * blocked.c0
        if op.tensor.numel < padded or work_type != element_type:
            source = Tile(b.alloc([padded], work_type, "ub"), 0, 0)
            b.emit(npu.VDupOp, source.buffer, 0, cols=padded, value=0.0)
            to_work = npu.VCopyOp if work_type == element_type else npu.VCastOp
            b.emit(to_work, raw.buffer, 0, source.buffer, 0, cols=op.tensor.numel)
        else:
            source = raw
        expanded = b.alloc([rows * cols], work_type, "ub")
        c0, blocks = blocked.c0, blocked.blocks
        b.emit(npu.VCopyOp, source.buffer, 0, expanded, 0, rows=blocks, cols=c0, strides=[c0, cols])
        filled = c0
        while filled < cols:  # double the filled columns of every block row
            step = min(filled, cols - filled)
            b.emit(npu.VCopyOp, expanded, 0, expanded, filled, rows=blocks, cols=step, strides=[cols, cols])
            filled += step
        filled_rows = blocks
        while filled_rows < rows:  # whole batches in one tile: repeat the blocks
            step = min(filled_rows, rows - filled_rows)
            b.emit(npu.VCopyOp, expanded, 0, expanded, filled_rows * cols, cols=step * cols)
            filled_rows += step
        if work_type != element_type:
            narrow = b.alloc([rows * cols], element_type, "ub")
            b.emit(npu.VCastOp, expanded, 0, narrow, 0, cols=rows * cols)
            expanded = narrow
        return Tile(expanded, 0, cols)

    # ---- one tile ------------------------------------------------------------------------

    def _tile(self, tiles: "_TileSet", row0: Index, rows: int) -> None:
        b = self.b
        body_rows, body_cols = self._body_shape(rows)
        loaded = tiles.inputs(self.once)
        copies = []
        for op, tile in zip(self.view.inputs, loaded):
            if self._loaded_per_tile(op):
                copies.append(self._load(tiles, op, row0, rows, tile))
        if self.prologue is not None:  # the prologue's results, with this tile's own inputs
            mapping = {id(p): t for p, t in zip(self.placeholders, loaded)}
            loaded = [mapping.get(id(t), t) for t in self.prepared]
        tiles.pool.reset()
        outputs = [self._fitted(op, tile, rows) for op, tile in zip(self.view.outputs, tiles.outputs)]
        self.body(tiles.pool.emitter(b, body_rows, body_cols), loaded, outputs)
        for copy in copies:
            if copy is not None and self.per_core == 1:
                _load_at_first_use(copy)
        for op, tile in zip(self.view.outputs, outputs):
            self._store(tiles, op, row0, rows, tile)

    def _fitted(self, op: RowOperand, tile: Tile, rows: int) -> Tile:
        """A FULL tile's row stride follows the tile's body shape."""
        if op.role != Role.FULL or op.repeat is not None:
            return tile
        return Tile(tile.buffer, 0, op.width or self._body_shape(rows)[1])

    def _load(self, tiles: "_TileSet", op: RowOperand, row0: Index, rows: int, home: Tile) -> npu.CopyOp | None:
        """Emits the tile's load of `op` into `home`; returns the copy when it is
        one plain transfer straight into `home` (which may then move to the
        body's first use of `home`: `_load_at_first_use`)."""
        b = self.b
        if op.repeat is not None:
            row = b.floordiv(row0, op.repeat)
            width = self._width(op)
            b.emit(npu.CopyOp, op.tensor.value, b.mul(b.rem(row, op.period) if op.period else row, width), home.buffer, 0, cols=width)
            return
        if op.period is not None:
            width = self._width(op)
            b.emit(npu.CopyOp, op.tensor.value, b.mul(b.rem(row0, op.period), width), home.buffer, 0, cols=rows * width)
            return
        if id(op) in tiles.nz:
            self.nz[id(op)].load(b, row0, rows, tiles.nz[id(op)], home)
            return
        staging = tiles.staging.get(id(op))
        copy = self._transfer(op, row0, rows, staging if staging is not None else home, gm_to_ub=True)
        if staging is not None:
            self._transpose(op, rows, staging, home, into_body=True)
            return None
        return copy

    def _store(self, tiles: "_TileSet", op: RowOperand, row0: Index, rows: int, tile: Tile) -> None:
        if id(op) in tiles.nz:
            self.nz[id(op)].store(self.b, row0, rows, tiles.nz[id(op)], tile)
            return
        staging = tiles.staging.get(id(op))
        if staging is not None:
            self._transpose(op, rows, tile, staging, into_body=False)
            tile = staging
        self._transfer(op, row0, rows, tile, gm_to_ub=False)

    def _transpose(self, op: RowOperand, rows: int, src: Tile, dst: Tile, into_body: bool) -> None:
        """Between the GM order of a tile (rows of slabs: t*C x I, or t x I per-row
        values) and the body's order (I x t*C, or I x t)."""
        width = self._width(op)
        chunk = self.view.chunk
        shape = (rows * width, chunk) if into_body else (chunk, rows * width)
        self.b.emit(npu.VTransposeOp, src.buffer, 0, dst.buffer, 0, rows=shape[0], cols=shape[1])

    def _transfer(self, op: RowOperand, row0: Index, rows: int, tile: Tile, gm_to_ub: bool) -> npu.CopyOp:
        """A tile between GM and UB, in the order it has in GM."""
        gm_offset, copy_rows, copy_cols, gm_stride = self._gm_pattern(op, row0, rows)
        strides = {"strides": [gm_stride, copy_cols] if gm_to_ub else [copy_cols, gm_stride]} if copy_rows > 1 else {}
        if gm_to_ub:
            return self.b.emit(npu.CopyOp, op.tensor.value, gm_offset, tile.buffer, 0, rows=copy_rows, cols=copy_cols, **strides)
        return self.b.emit(npu.CopyOp, tile.buffer, 0, op.tensor.value, gm_offset, rows=copy_rows, cols=copy_cols, **strides)

    def _gm_pattern(self, op: RowOperand, row0: Index, rows: int) -> tuple[Index, int, int, int]:
        """(GM offset, rows, cols, GM row stride) of a tile of `rows` view rows."""
        b, view = self.b, self.view
        width = self._width(op)
        if view.inner > 1:
            chunk = view.chunk
            if chunk == view.inner:
                return b.mul(row0, width * chunk), 1, rows * width * chunk, 0
            chunks = view.inner // chunk
            slab = b.mul(b.floordiv(row0, chunks), width * view.inner)
            offset = b.add(slab, b.mul(b.rem(row0, chunks), chunk))
            return offset, width, chunk, view.inner
        if view.blocked is not None and op.role == Role.FULL:
            blocked = view.blocked
            block = blocked.rows * blocked.c0
            if rows >= blocked.rows:
                return b.affine(op.base, (row0, blocked.blocks * blocked.c0)), 1, rows * blocked.blocks * blocked.c0, 0
            batch = b.affine(op.base, (b.floordiv(row0, blocked.rows), blocked.blocks * block))
            offset = b.add(batch, b.mul(b.rem(row0, blocked.rows), blocked.c0))
            return offset, blocked.blocks, rows * blocked.c0, block
        return b.add(op.base, b.mul(row0, width)), 1, rows * width, 0


def _load_at_first_use(copy: npu.CopyOp) -> None:
    """Move a tile's load down to the first op of the body reading its buffer.
    The loads are emitted together before the body, and npu-insert-sync then
    gives them one flag: the vector unit waits for the last to land before its
    first instruction. Each load just before its first reader gets a flag of its
    own, so the body starts on the first input to land (a group reading eight
    planes casts the first while the others stream in). The scalar unit issues
    the copies as before, one MTE2 transfer after another (a vector wait between
    them does not hold MTE2), so the loads take no longer."""
    home = copy.operands[copy.buffer_operands()[1]]
    op = copy.next_op
    while op is not None and not _reads(op, home):
        op = op.next_op
    if op is not None and op is not copy.next_op:
        copy.detach()
        op.parent_block().insert_op_before(copy, op)


def _reads(op: Operation, buffer: SSAValue) -> bool:
    """Whether `op` (or an op nested in it) has `buffer` as an operand."""
    return any(o is buffer for o in op.operands) or any(_reads(inner, buffer) for r in op.regions for blk in r.blocks for inner in blk.ops)


class _TileSet:
    """The buffers one tile shape works in: homes of the inputs loaded per tile,
    the outputs, staging buffers, NZ staging and temporaries. The loop's tiles
    and the tail tile each have their own."""

    def __init__(self, kernel: _RowKernel, rows: int):
        view, b = kernel.view, kernel.b
        self.homes = {id(op): kernel._buffer(op, rows) for op in view.inputs if kernel._loaded_per_tile(op)}
        self.outputs = [kernel._buffer(op, rows) for op in view.outputs]
        operands = [*view.inputs, *view.outputs]
        self.staging = {id(op): kernel._buffer(op, rows) for op in operands if kernel.is_staged(op, rows)}
        self.nz = {
            key: b.alloc([c.staging_elements(rows)], c.tensor.element_type, "ub") for key, c in kernel.nz.items()
        }
        self.pool = _TempPool(lambda kind, t: kernel._make_temp(rows, kind, t))
        self._ops = view.inputs

    def inputs(self, once: list[Operand | None]) -> list[Operand]:
        """The body's inputs: this set's homes for those loaded per tile."""
        return [self.homes[id(op)] if tile is None else tile for op, tile in zip(self._ops, once)]


def _block_elements(element_type: Attribute) -> int:
    """Elements in one 32-byte UB block (the smallest sensible buffer)."""
    return max(1, 32 // dtypes.byte_width(element_type))
