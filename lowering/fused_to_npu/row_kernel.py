"""The row-tile kernel: every vector kernel that works row by row.

The output is seen as a 2-D array of R rows by C columns. Each operand plays a
role in that view:

* FULL:   an R x C tensor like the output;
* ROW:    one row of C values used by every row (a bias over the last dim);
* COL:    one value per row (a per-row scalar, or the result of a row reduction);
* SCALAR: one value for everything (an immediate if it is a constant).

Rows are cut into tiles of `tile_rows`; the tiles are shared out among the cores
(`block_dim` of them), each core looping over its tiles: copy the FULL and COL
inputs of the tile into UB (MTE2), run the body on the vector unit, copy the
outputs back (MTE3). ROW and SCALAR inputs are loaded once. The body is any
function of the tiles (`emit_elementwise` for one op, a whole fused group, a
softmax...), so the tiling and data movement are written once.

When every operand is FULL (same shape and format) or a SCALAR, the physical
buffers are processed flat, whatever their format, in rows of W elements.

Tile size: the largest number of rows whose buffers fit UB, counting the FULL
and COL buffers twice (npu-double-buffer gives them a second copy), temporaries
once; then no larger than needed to give every core at least two tiles, so
loads overlap compute. `k.explain` records the decision.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum

from xdsl.ir import Attribute

from ...core import dtypes
from ...dialects import npu
from .context import GmTensor, KernelContext
from .kernel_builder import Index, KernelBuilder
from .vector_emitter import Operand, Tile, VectorEmitter


class Role(Enum):
    FULL = "full"
    ROW = "row"
    COL = "col"
    SCALAR = "scalar"


@dataclass(frozen=True)
class RowOperand:
    tensor: GmTensor
    role: Role
    immediate: float | None = None  # a SCALAR known at compile time


Body = Callable[[VectorEmitter, list[Operand], list[Tile]], None]

MIN_TILE_BYTES = 4096
"""Smallest tile worth a transfer: below it the fixed latency dominates."""

_FLAT_WIDTH = 256


# ---- the 2-D view ---------------------------------------------------------------------


@dataclass(frozen=True)
class RowView:
    rows: int
    cols: int
    inputs: list[RowOperand]
    outputs: list[RowOperand]
    flat: bool


def row_view(k: KernelContext, output_roles: Sequence[Role] | None = None) -> RowView:
    """The view of the op's tensors, or a located error if an operand fits no role."""
    out = k.outputs[0]
    if output_roles is None and all(_same_layout(t, out) or t.numel == 1 for t in k.inputs) and all(
        _same_layout(t, out) for t in k.outputs
    ):
        physical = out.physical_numel
        width = max(w for w in range(1, min(_FLAT_WIDTH, physical) + 1) if physical % w == 0)
        inputs = [_scalar(t) if t.numel == 1 and not _same_layout(t, out) else RowOperand(t, Role.FULL) for t in k.inputs]
        return RowView(physical // width, width, inputs, [RowOperand(t, Role.FULL) for t in k.outputs], flat=True)
    for t in [*k.inputs, *k.outputs]:
        if t.format.value != "ND" and t.numel != 1:
            raise k.unsupported(f"broadcasting with a {t.format.value} operand ({t.type})")
    shape = out.shape
    cols = shape[-1] if shape else 1
    rows = math.prod(shape[:-1]) if shape else 1
    inputs = [_role(t, shape, k) for t in k.inputs]
    roles = output_roles or [Role.FULL] * len(k.outputs)
    return RowView(rows, cols, inputs, [RowOperand(t, r) for t, r in zip(k.outputs, roles)], flat=False)


def _same_layout(t: GmTensor, out: GmTensor) -> bool:
    return t.shape == out.shape and t.format == out.format and t.physical_shape == out.physical_shape


def _scalar(t: GmTensor) -> RowOperand:
    return RowOperand(t, Role.SCALAR, t.splat())


def _role(t: GmTensor, shape: tuple[int, ...], k: KernelContext) -> RowOperand:
    rank = len(shape)
    padded = (1,) * (rank - len(t.shape)) + t.shape
    if t.numel == 1:
        return _scalar(t)
    if padded == shape:
        return RowOperand(t, Role.FULL)
    if padded[-1] == shape[-1] and all(d == 1 for d in padded[:-1]):
        return RowOperand(t, Role.ROW)
    if padded[-1] == 1 and padded[:-1] == shape[:-1]:
        return RowOperand(t, Role.COL)
    raise k.unsupported(f"operand of shape {list(t.shape)} broadcasts to {list(shape)} in no supported way")


# ---- tiling -----------------------------------------------------------------------------


def _row_bytes(view: RowView, temps: dict[Attribute, int]) -> tuple[int, int]:
    """(bytes per tile row, bytes loaded once) of the UB buffers."""
    per_row = fixed = 0
    for op in [*view.inputs, *view.outputs]:
        size = op.tensor.itemsize
        if op.role == Role.FULL:
            per_row += 2 * view.cols * size
        elif op.role == Role.COL:
            per_row += 2 * size
        elif op.role == Role.ROW:
            fixed += view.cols * size
        elif op.immediate is None:
            fixed += 32
    for element_type, count in temps.items():
        per_row += count * view.cols * dtypes.byte_width(element_type)
    return per_row, fixed


def choose_tile_rows(k: KernelContext, view: RowView, temps: dict[Attribute, int]) -> int:
    per_row, fixed = _row_bytes(view, temps)
    buffers = len(view.inputs) + len(view.outputs) + sum(temps.values())
    budget = k.hw.capacity("ub") - fixed - buffers * k.hw.alignment["ub"]
    fits = budget // max(per_row, 1)
    if fits < 1:
        raise k.unsupported(
            f"one row of {view.cols} elements needs {per_row} bytes of UB with its temporaries; "
            f"UB has {k.hw.capacity('ub')}"
        )
    itemsize = max(op.tensor.itemsize for op in view.outputs)
    least = max(1, math.ceil(MIN_TILE_BYTES / (view.cols * itemsize)))
    spread = math.ceil(view.rows / (2 * k.hw.core_count))
    rows = max(1, min(fits, view.rows, max(least, spread)))
    k.explain(
        f"{view.rows} x {view.cols} {'(flat)' if view.flat else ''} in tiles of {rows} rows: "
        f"{fits} rows fit UB ({per_row} B/row, {fixed} B fixed), {spread} rows give every core two tiles"
    )
    return rows


# ---- emission ---------------------------------------------------------------------------


def count_temps(view: RowView, body: Body) -> dict[Attribute, int]:
    """How many temporaries of each element type the body asks for (a dry run)."""
    counts: dict[Attribute, int] = {}
    scratch = KernelBuilder("scratch", [])

    def temp(element_type: Attribute) -> Tile:
        counts[element_type] = counts.get(element_type, 0) + 1
        return Tile(scratch.alloc([view.cols], element_type, "ub"), 0, view.cols)

    inputs = [
        op.immediate if op.immediate is not None else Tile(scratch.alloc([view.cols], op.tensor.element_type, "ub"))
        for op in view.inputs
    ]
    outputs = [Tile(scratch.alloc([view.cols], op.tensor.element_type, "ub")) for op in view.outputs]
    body(VectorEmitter(scratch, 1, view.cols, temp), inputs, outputs)
    return counts


def emit_row_kernel(k: KernelContext, view: RowView, body: Body) -> None:
    temps_needed = count_temps(view, body)
    tile_rows = choose_tile_rows(k, view, temps_needed)
    _RowKernel(k, view, body, tile_rows).emit()


class _RowKernel:
    def __init__(self, k: KernelContext, view: RowView, body: Body, tile_rows: int):
        self.k, self.b, self.view, self.body, self.tile_rows = k, k.b, view, body, tile_rows
        self.cols = view.cols
        self.full_tiles, self.tail_rows = divmod(view.rows, tile_rows)
        tiles = self.full_tiles + (1 if self.tail_rows else 0)
        self.per_core = math.ceil(tiles / k.hw.core_count)
        k.block_dim = math.ceil(tiles / self.per_core)
        self.temps: list[Tile] = []
        self.temp_cursor = 0

    def emit(self) -> None:
        b = self.b
        self.in_tiles = [self._input_buffer(op) for op in self.view.inputs]
        self.out_tiles = [self._buffer(op) for op in self.view.outputs]
        start = b.mul(b.block_idx(), self.per_core) if self.k.block_dim > 1 else 0
        stop = b.min(b.add(start, self.per_core), self.full_tiles) if self.k.block_dim > 1 else self.full_tiles
        with b.loop(start, stop, name="tile") as t:
            self._tile(b.mul(t, self.tile_rows), self.tile_rows)
        if self.tail_rows:
            owner = self.full_tiles // self.per_core
            condition = b.equals(b.block_idx(), owner) if self.k.block_dim > 1 else True
            with b.when(condition):
                self._tile(self.full_tiles * self.tile_rows, self.tail_rows)

    def _buffer(self, op: RowOperand) -> Tile:
        element_type = op.tensor.element_type
        if op.role == Role.FULL:
            return Tile(self.b.alloc([self.tile_rows * self.cols], element_type, "ub"), 0, self.cols)
        if op.role == Role.COL:
            return Tile(self.b.alloc([self.tile_rows], element_type, "ub"), 0, 1, col_stride=0)
        if op.role == Role.ROW:
            return Tile(self.b.alloc([self.cols], element_type, "ub"), 0, 0)
        return Tile(self.b.alloc([_block_elements(element_type)], element_type, "ub"), 0, 0, col_stride=0)

    def _input_buffer(self, op: RowOperand) -> Operand:
        """UB home of an input; ROW and SCALAR inputs are loaded here, once."""
        if op.immediate is not None:
            return op.immediate
        tile = self._buffer(op)
        if op.role == Role.ROW:
            self.b.emit(npu.CopyOp, op.tensor.value, 0, tile.buffer, 0, cols=self.cols)
        elif op.role == Role.SCALAR:
            self.b.emit(npu.CopyOp, op.tensor.value, 0, tile.buffer, 0, cols=1)
        return tile

    def _temp(self, element_type: Attribute) -> Tile:
        """Temporaries are allocated on first use and reused by every tile (the body
        asks for them in the same order each time)."""
        index = self.temp_cursor
        self.temp_cursor += 1
        if index == len(self.temps):
            buffer = self.b.alloc([self.tile_rows * self.cols], element_type, "ub")
            self.temps.append(Tile(buffer, 0, self.cols))
        return self.temps[index]

    def _tile(self, row0: Index, rows: int) -> None:
        b = self.b
        for op, tile in zip(self.view.inputs, self.in_tiles):
            if op.role in (Role.FULL, Role.COL) and isinstance(tile, Tile):
                self._transfer(op, row0, rows, gm_to_ub=True, tile=tile)
        self.temp_cursor = 0
        self.body(VectorEmitter(b, rows, self.cols, self._temp), self.in_tiles, self.out_tiles)
        for op, tile in zip(self.view.outputs, self.out_tiles):
            self._transfer(op, row0, rows, gm_to_ub=False, tile=tile)

    def _transfer(self, op: RowOperand, row0: Index, rows: int, gm_to_ub: bool, tile: Tile) -> None:
        """A tile of rows between GM and UB: contiguous in both for FULL and COL."""
        width = self.cols if op.role == Role.FULL else 1
        gm_offset = self.b.mul(row0, width)
        count = rows * width
        if gm_to_ub:
            self.b.emit(npu.CopyOp, op.tensor.value, gm_offset, tile.buffer, 0, cols=count)
        else:
            self.b.emit(npu.CopyOp, tile.buffer, 0, op.tensor.value, gm_offset, cols=count)


def _block_elements(element_type: Attribute) -> int:
    """Elements in one 32-byte UB block (the smallest sensible buffer)."""
    return max(1, 32 // dtypes.byte_width(element_type))
