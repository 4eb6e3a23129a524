"""GM tensors seen as batches of matrices, in whatever format they are stored.

A `MatrixView` maps a logical (rows x cols) matrix of batch `b` to the bytes of a
GM tensor: ND (row-major) or FRACTAL_NZ (16-column blocks stored one after
another, `dialects/ge/formats.py`; an NC1HWC0 image of fp32 is such a matrix
of 8-column blocks, `block`, which only the epilogue reads and writes: the
cube's L1 tiles are 16-column blocks), possibly `transposed` (memory holds the
(cols x rows) matrix: a matmul operand with a transpose flag), possibly
broadcast (a bias is a 1-row view, a per-row value a 1-column view, and batch
dims of size 1 repeat). It writes the transfers a kernel needs:

* `stage_to_l1` / `load_to_l0`: the cube's operand path. MTE2 copies the stored
  tile into L1 in the source's own layout (ND rows with a 16-element-aligned
  stride, or NZ blocks of the source's width: an fp32 NZ image keeps its 8-column
  blocks, so each block column is one contiguous run and not one 32-byte run per
  row), MTE1 (`npu.load_l0`, its `block` the source's) re-lays it out,
  transposing if needed, into L0A / L0B as a row-major matrix;
* `load_to_ub` / `store_from_ub`: the epilogue's path, between GM and a
  row-major tile in UB (NZ blocks one copy per 16 columns).

NZ tiles always start on a 16-column block and move whole blocks: the padding
of the physical image is read (never used by the math: the cube is told the
real sizes) and, for outputs, written with zeros by the caller.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import ClassVar

from ....dialects import npu
from ....dialects.ge.formats import Format
from ....simulator.hardware import HardwarePreset
from ....simulator.npu.costs import stream_cycles
from ...tiling import FRACTAL, round_up
from ..context import GmTensor
from ..kernel_builder import Index, KernelBuilder

ND = "nd"
NZ = "nz"


@dataclass(frozen=True)
class BatchMap:
    """Element offset of batch `b` (flattened over the output's batch dims): one
    (size, stride) per output batch dim, stride 0 where the tensor broadcasts."""

    dims: tuple[tuple[int, int], ...] = ()

    def offset(self, b: KernelBuilder, batch: Index) -> Index:
        total: Index = 0
        inner = 1
        for size, stride in reversed(self.dims):
            if stride and size > 1:
                total = b.add(total, b.mul(b.rem(b.floordiv(batch, inner), size), stride))
            inner *= size
        return total

    @property
    def varies(self) -> bool:
        """Whether batches see different matrices (some dim of size > 1 has a stride)."""
        return any(stride and size > 1 for size, stride in self.dims)


def batch_map(batch_shape: Sequence[int], out_batch: Sequence[int], matrix_elements: int) -> BatchMap:
    """The map of a tensor with leading dims `batch_shape` (each matrix
    `matrix_elements` apart) broadcast to the output's batch dims."""
    padded = (1,) * (len(out_batch) - len(batch_shape)) + tuple(batch_shape)
    strides = []
    stride = matrix_elements
    for size in reversed(padded):
        strides.append(stride if size > 1 else 0)
        stride *= size
    strides.reverse()
    return BatchMap(tuple(zip(out_batch, strides)))


@dataclass(frozen=True)
class MatrixView:
    tensor: GmTensor
    rows: int  # logical rows (1: broadcast along rows)
    cols: int  # logical cols (1: broadcast along cols)
    layout: str  # ND or NZ
    transposed: bool  # memory holds the (cols x rows) matrix
    row_stride: int  # ND: elements between stored rows; NZ: elements between 16-column blocks
    batches: BatchMap = field(default_factory=BatchMap)
    base: int = 0  # element offset of the first matrix (a head inside a row, ...)
    block: int = FRACTAL  # NZ: columns per stored block

    stays_in_l1: ClassVar[bool] = True  # an A panel may be staged chunk by chunk into one buffer (`at`)
    gathers: ClassVar[bool] = False  # staged by a few DMAs, not by many scalar-issued copies (`CubeKernel._chunk`)

    @property
    def value(self):
        return self.tensor.value

    @property
    def itemsize(self) -> int:
        return self.tensor.itemsize

    @property
    def is_constant(self) -> bool:
        """Whether the graph computes it from nothing (a weight: `GmTensor.is_constant`)."""
        return self.tensor.is_constant

    @property
    def form(self) -> tuple:
        """What sizes and costs its tiles, in L1 and UB alike: views of one form
        may take turns in the same buffers."""
        return (self.rows, self.cols, self.layout, self.transposed, self.row_stride, self.block, self.tensor.element_type)

    @property
    def cost_key(self) -> tuple:
        """What determines its sizes and costs in the tiling search (lowering/tiling.py
        memoises the search on it): its form and class."""
        return (type(self), self.form)

    @property
    def stored_rows(self) -> int:
        return self.cols if self.transposed else self.rows

    @property
    def stored_cols(self) -> int:
        return self.rows if self.transposed else self.cols

    def _stored(self, r0: Index, nr: int, c0: Index, nc: int) -> tuple[Index, int, Index, int]:
        """The stored tile holding the logical tile (rows r0.., cols c0..)."""
        return (c0, nc, r0, nr) if self.transposed else (r0, nr, c0, nc)

    def element(self, b: KernelBuilder, batch_offset: Index, sr: Index, sc: Index) -> Index:
        """Element offset of stored (sr, sc); for NZ, sc must start a column block."""
        start = b.add(self.base, batch_offset)
        if self.layout == ND:
            return b.affine(start, (sr, self.row_stride), (sc, 1))
        return b.affine(start, (b.floordiv(sc, self.block), self.row_stride), (sr, self.block))

    def k_slices(self, count: int, along_cols: bool) -> MatrixView:
        """The matrix as `count` batches, batch s its s-th equal slice along its
        logical columns (`along_cols`: an A operand's K) or rows (a B operand's K):
        a split-K product's operands, read in place."""
        assert not self.batches.varies, "a split-K operand is one matrix"
        size = (self.cols if along_cols else self.rows) // count
        stored_cols = along_cols != self.transposed
        if self.layout == ND:
            stride = size if stored_cols else size * self.row_stride
        else:
            stride = size // self.block * self.row_stride if stored_cols else size * self.block
        rows, cols = (self.rows, size) if along_cols else (size, self.cols)
        return replace(self, rows=rows, cols=cols, batches=BatchMap(((count, stride),)))

    # ---- the cube's path: GM -> L1 -> L0 ---------------------------------------------------

    def l1_elements(self, rows: int, cols: int) -> int:
        """Elements of an L1 buffer staging a logical (rows x cols) tile (the cube's path
        takes ND and 16-column NZ views)."""
        _, snr, _, snc = self._stored(0, rows, 0, cols)
        return snr * round_up(snc, FRACTAL)

    def l1_stride(self, rows: int, cols: int) -> int:
        """The staged tile's row stride (ND) or block stride (NZ: the source's blocks
        are kept, `block` columns each) in L1, for a buffer sized for a logical
        (rows x cols) tile."""
        _, snr, _, snc = self._stored(0, rows, 0, cols)
        return round_up(snc, FRACTAL) if self.layout == ND else snr * self.block

    def stage_runs(self, rows: int, cols: int) -> tuple[int, int]:
        """(contiguous runs, bytes per run) of staging a logical (rows x cols) tile."""
        _, snr, _, snc = self._stored(0, rows, 0, cols)
        if self.layout == ND:
            if snc == self.row_stride or snr == 1:
                return 1, snr * snc * self.itemsize
            return snr, snc * self.itemsize
        blocks = -(-snc // self.block)
        if snr * self.block == self.row_stride or blocks == 1:
            return 1, blocks * snr * self.block * self.itemsize
        return blocks, snr * self.block * self.itemsize

    def stage_cycles(self, hw: HardwarePreset, rows: int, cols: int) -> int:
        return stream_cycles(hw, "gm_to_l1", *self.stage_runs(rows, cols))

    def load_cycles(self, hw: HardwarePreset, space: str, rows: int, cols: int) -> int:
        _, snr, _, snc = self._stored(0, rows, 0, cols)
        if self.layout == NZ:
            return stream_cycles(hw, f"l1_to_{space}", -(-snc // self.block), snr * self.block * self.itemsize)
        return stream_cycles(hw, f"l1_to_{space}", snr, snc * self.itemsize)

    def l1_offset(self, b: KernelBuilder, l1_stride: int, r0: Index, c0: Index) -> Index:
        """Where logical (r0, c0) of a staged tile sits in L1 (for NZ, its stored
        column must start a block)."""
        sr0, _, sc0, _ = self._stored(r0, 0, c0, 0)
        if self.layout == ND:
            return b.affine(sc0, (sr0, l1_stride))
        assert l1_stride % self.block == 0
        return b.affine(0, (sc0, l1_stride // self.block), (sr0, self.block))

    def stage_to_l1(
        self, b: KernelBuilder, batch_offset: Index, r0: Index, nr: int, c0: Index, nc: int, l1, l1_stride: int,
        at: tuple[Index, Index] = (0, 0),
    ) -> None:
        """MTE2: the logical tile (r0.. +nr, c0.. +nc) into `l1` in the source's layout,
        as the logical tile of a larger staged one starting at its position `at`
        (an A operand kept in L1 whole, staged chunk by chunk)."""
        sr0, snr, sc0, snc = self._stored(r0, nr, c0, nc)
        src = self.element(b, batch_offset, sr0, sc0)
        dst = self.l1_offset(b, l1_stride, *at)
        if self.layout == ND:
            b.emit(npu.CopyOp, self.value, src, l1, dst, rows=snr, cols=snc, strides=[self.row_stride, l1_stride])
        else:
            b.emit(
                npu.CopyOp, self.value, src, l1, dst,
                rows=-(-snc // self.block), cols=snr * self.block, strides=[self.row_stride, l1_stride],
            )

    def load_to_l0(
        self, b: KernelBuilder, l1, l1_stride: int, r0: Index, nr: int, c0: Index, nc: int, l0, l0_stride: int
    ) -> None:
        """MTE1: the logical sub-tile (r0.. +nr, c0.. +nc) of the staged tile into L0
        as a row-major matrix with row stride `l0_stride` (NZ sources move whole
        blocks of the source's width, so the L0 tile may be rounded up to a block
        of rows or columns; sc0 must start one)."""
        _, snr, _, snc = self._stored(r0, nr, c0, nc)
        cols = snc if self.layout == ND else round_up(snc, self.block)
        block = {} if self.layout == ND or self.block == FRACTAL else {"block": self.block}
        b.emit(
            npu.LoadL0Op, l1, self.l1_offset(b, l1_stride, r0, c0), l0, 0,
            rows=snr, cols=cols, layout=self.layout, transpose=self.transposed, strides=[l1_stride, l0_stride], **block,
        )

    # ---- the epilogue's path: GM <-> UB --------------------------------------------------

    def load_to_ub(
        self, b: KernelBuilder, batch_offset: Index, r0: Index, nr: int, c0: Index, nc: int, ub, ub_stride: int, scratch=None,
        ub_base: Index = 0, written_out: bool = False, ub_block_stride: int = 0,
    ) -> None:
        """MTE2: the logical tile (broadcast dims of size 1 read once) into a
        row-major UB tile with row stride `ub_stride`, from element `ub_base` of
        `ub`. A transposed view is read as stored into `scratch` (a UB buffer of
        `transpose_scratch` elements) and transposed by the vector unit.
        `written_out`: an NZ tile's copies (one per 16-column block) are written
        out rather than looped over, so that npu-prefetch-constants may move a
        constant's before the phase's barrier (it moves top-level copies only).
        `ub_block_stride`: an NZ tile lands in UB in its column blocks, this many
        elements apart (`CubeEpilogue.ub_block`), one run per block."""
        r0, nr = (0, 1) if self.rows == 1 else (r0, nr)
        c0, nc = (0, 1) if self.cols == 1 else (c0, nc)
        if not self.transposed:
            self._move(b, batch_offset, r0, nr, c0, nc, ub, ub_stride, to_gm=False, ub_base=ub_base, written_out=written_out,
                       ub_block_stride=ub_block_stride)
            return
        stride = round_up(nr, FRACTAL)
        self._move(b, batch_offset, c0, nc, r0, nr, scratch, stride, to_gm=False)
        b.emit(npu.VTransposeOp, scratch, 0, ub, ub_base, rows=nc, cols=nr, strides=[stride, ub_stride])

    def store_from_ub(
        self, b: KernelBuilder, batch_offset: Index, r0: Index, nr: int, c0: Index, nc: int, ub, ub_stride: int, scratch=None,
        ub_block_stride: int = 0,
    ) -> None:
        """MTE3: a row-major UB tile into the logical tile (r0.. +nr, c0.. +nc). NZ
        outputs are written in whole 16-column blocks: `nc` is rounded up. A
        transposed view is transposed by the vector unit into `scratch` first.
        `ub_block_stride`: the NZ tile is in UB in its column blocks (`load_to_ub`)."""
        if not self.transposed:
            self._move(b, batch_offset, r0, nr, c0, nc, ub, ub_stride, to_gm=True, ub_block_stride=ub_block_stride)
            return
        stride = round_up(nr, FRACTAL)
        b.emit(npu.VTransposeOp, ub, 0, scratch, 0, rows=nr, cols=nc, strides=[ub_stride, stride])
        self._move(b, batch_offset, c0, nc, r0, nr, scratch, stride, to_gm=True)

    def transpose_scratch(self, rows: int, cols: int) -> int:
        """UB elements a transposed view needs to move a logical (rows x cols) tile."""
        return round_up(cols, FRACTAL) * round_up(rows, FRACTAL) if self.transposed else 0

    @property
    def padded_rows(self) -> int:
        """Rows of the stored image (an NZ matrix pads them to its block stride)."""
        return self.row_stride // self.block if self.layout == NZ and not self.transposed else self.rows

    def _move(
        self, b, batch_offset, r0, nr, c0, nc, ub, ub_stride, to_gm: bool, ub_base: Index = 0, written_out: bool = False,
        ub_block_stride: int = 0,
    ) -> None:
        def copy(gm_offset: Index, ub_offset: Index, rows: int, cols: int, gm_stride: int, local_stride: int) -> None:
            strides = None if rows == 1 else ([local_stride, gm_stride] if to_gm else [gm_stride, local_stride])
            ub_offset = b.add(ub_base, ub_offset)
            if to_gm:
                b.emit(npu.CopyOp, ub, ub_offset, self.value, gm_offset, rows=rows, cols=cols, strides=strides)
            else:
                b.emit(npu.CopyOp, self.value, gm_offset, ub, ub_offset, rows=rows, cols=cols, strides=strides)

        start = self.element(b, batch_offset, r0, c0)
        if self.layout == ND:
            copy(start, 0, nr, nc, self.row_stride, ub_stride)
            return
        k = self.block
        if ub_block_stride:  # blocks in UB too: a run of the tile's rows per block
            copy(start, 0, -(-nc // k), nr * k, self.row_stride, ub_block_stride)
            return
        if nc == 1 and self.cols == 1:  # one column of an NZ matrix: every k-th element
            copy(start, 0, nr, 1, k, 1)
            return
        blocks = -(-nc // k)
        if nr == 1:  # one row: a k-element run per block
            strides = [k, self.row_stride] if to_gm else [self.row_stride, k]
            if to_gm:
                b.emit(npu.CopyOp, ub, ub_base, self.value, start, rows=blocks, cols=k, strides=strides)
            else:
                b.emit(npu.CopyOp, self.value, start, ub, ub_base, rows=blocks, cols=k, strides=strides)
            return
        if written_out:
            for j in range(blocks):
                copy(b.add(start, j * self.row_stride), j * k, nr, k, k, ub_stride)
            return
        with b.loop(0, blocks, name="blk") as j:
            copy(b.add(start, b.mul(j, self.row_stride)), b.mul(j, k), nr, k, k, ub_stride)


def nz_block_stride(rows: int) -> int:
    """Elements between 16-column blocks of an NZ matrix with `rows` rows."""
    return round_up(rows, FRACTAL) * FRACTAL


def matrix_view(t: GmTensor, out_batch: Sequence[int], transposed: bool = False) -> MatrixView:
    """A matmul operand (..., R, C) with its batch dims broadcast to `out_batch`;
    logically (C x R) when `transposed`."""
    *batch, r, c = t.shape
    if t.format == Format.ND:
        layout, stride, size = ND, c, r * c
    elif t.format == Format.FRACTAL_NZ:
        layout, stride = NZ, nz_block_stride(r)
        size = stride * -(-c // FRACTAL)
    else:
        raise ValueError(f"a {t.format.value} matrix")
    rows, cols = (c, r) if transposed else (r, c)
    return MatrixView(t, rows, cols, layout, transposed, stride, batch_map(batch, out_batch, size))


def broadcast_view(t: GmTensor, out_shape: Sequence[int]) -> MatrixView:
    """An epilogue operand broadcasting to the output (*batch, M, N): its last two
    dims (padded with 1s) are each the output's or 1."""
    shape = (1,) * max(0, 2 - len(t.shape)) + t.shape
    *batch, r, c = shape
    m, n = out_shape[-2], out_shape[-1]
    if r not in (1, m) or c not in (1, n):
        raise ValueError(f"shape {list(t.shape)} does not broadcast to {list(out_shape)}")
    if t.format == Format.FRACTAL_NZ and len(t.shape) >= 2:
        stride = nz_block_stride(r)
        view = MatrixView(t, r, c, NZ, False, stride, batch_map(batch, out_shape[:-2], stride * -(-c // FRACTAL)))
    elif t.format == Format.ND:
        view = MatrixView(t, r, c, ND, False, c, batch_map(batch, out_shape[:-2], r * c))
    else:
        raise ValueError(f"a {t.format.value} epilogue operand")
    return view

