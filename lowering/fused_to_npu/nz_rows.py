"""Rows of a FRACTAL_NZ tensor, converted on the way between GM and UB.

A row-tile kernel works on logical rows; an operand held in FRACTAL_NZ,
(..., M, N) stored as (..., N1, M1, 16, 16) fractals, is moved through a
staging buffer in UB that holds its tile in NZ order, and rearranged there by
the vector unit (`vcopy` of 16-column strips), so every GM transfer stays one
2-D copy of whole fractal rows:

* rows of the view are matrix rows (a view row = N elements): a tile of t
  rows within one matrix is (N1 blocks x t rows x 16) in GM, one strided copy;
* a tile of whole matrices (a view row = one or more whole (M x N) matrices,
  or t a multiple of M) is contiguous in GM, padding rows included.

On the way out, a staging buffer whose tile has padding (columns N..N1*16 of
the last block, rows M..M1*16) is zeroed first, so the padding of the NZ image
is written as zeros, as the cube relies on; a tile without padding is not.

A strip move is one `vcopy` over one of the tile's three dims (matrices, rows
of a matrix, 16-column blocks), looped over the other two: the dim with the
most strips is the one an instruction covers, so a tile of a few rows of a wide
matrix takes a few instructions of N1 strips each (one per row), not N1
instructions of a few rows each; the looped dims must step by whole aligned
units in UB (a vector instruction starts aligned).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...core import dtypes
from ...dialects import npu
from ...dialects.ge.formats import fractal_shape
from .context import GmTensor
from .kernel_builder import Index, KernelBuilder
from .vector_emitter import UB_ALIGN_BYTES, Tile


@dataclass(frozen=True)
class NzRows:
    """How view rows of `width` elements map onto an NZ tensor (module docstring)."""

    tensor: GmTensor
    width: int

    @property
    def m(self) -> int:
        return self.tensor.shape[-2]

    @property
    def n(self) -> int:
        return self.tensor.shape[-1]

    @property
    def n0(self) -> int:
        return fractal_shape(self.tensor.element_type)[1]

    @property
    def blocks(self) -> int:
        return -(-self.n // self.n0)

    @property
    def padded_m(self) -> int:
        m0 = fractal_shape(self.tensor.element_type)[0]
        return -(-self.m // m0) * m0

    @property
    def matrix_rows(self) -> bool:
        """Whether a view row is one matrix row (else whole matrices)."""
        return self.width == self.n

    @staticmethod
    def fits(tensor: GmTensor, width: int) -> bool:
        shape = tensor.shape
        if len(shape) < 2:
            return False
        return width == shape[-1] or width % (shape[-2] * shape[-1]) == 0

    def period(self) -> int | None:
        """Tiles of matrix rows must stay within a matrix or hold whole ones (and
        whole ones when M is padded, so a tile writes its padding rows)."""
        return self.m if self.matrix_rows else None

    def tile_rows_ok(self, rows: int) -> bool:
        """Whether a tile of `rows` view rows can be converted: the layout's rule
        (`period`) and strip moves that start aligned in UB (`_moves`)."""
        if not self._strips_aligned(rows):
            return False
        if not self.matrix_rows:
            return True
        if self.padded_m != self.m:
            return rows % self.m == 0
        return rows % self.m == 0 or self.m % rows == 0

    def _dims(self, rows: int, blocks: int) -> tuple[_Dim, _Dim, _Dim]:
        """The (matrices, rows of a matrix, `blocks` column blocks) of a tile of
        `rows`, with their (tile, staging) steps: element (matrix g, row m, column
        j*n0 + c) is at g*M*N + m*N + j*n0 + c in the tile, ((g*J + j)*S + m)*n0 + c
        staged."""
        matrices, per_matrix, staged = self._geometry(rows)
        return (
            _Dim(matrices, self.m * self.n, self.blocks * staged * self.n0),
            _Dim(per_matrix, self.n, self.n0),
            _Dim(blocks, self.n0, staged * self.n0),
        )

    def _moves(self, rows: int, blocks: int) -> tuple[int, list[int]] | None:
        """(the dim an instruction covers, the looped dims) of the strip moves over
        `blocks` column blocks, the fewest instructions whose looped dims step by
        aligned units; None if no arrangement starts every move aligned (e.g.
        several 31 x 8 fp16 matrices in one tile, 496 bytes apart, and 31 rows)."""
        dims = self._dims(rows, blocks)
        align = UB_ALIGN_BYTES // dtypes.byte_width(self.tensor.element_type)
        best = None
        for covered in range(3):
            looped = [d for d in range(3) if d != covered and dims[d].count > 1]
            if any(dims[d].tile % align or dims[d].staging % align for d in looped):
                continue
            moves = math.prod(dims[d].count for d in looped)
            if best is None or moves < best[0]:
                best = (moves, covered, looped)
        return None if best is None else best[1:]

    def _strips_aligned(self, rows: int) -> bool:
        """Every strip move of the tile can start aligned in UB (`_moves`)."""
        full, partial = divmod(self.n, self.n0)
        return all(self._moves(rows, count) is not None for count in (full, 1 if partial else 0) if count)

    def _geometry(self, rows: int) -> tuple[int, int, int]:
        """(matrices, rows per matrix, staged rows per matrix) of a tile of `rows`."""
        if self.matrix_rows and rows < self.m:
            return 1, rows, rows
        per_row = 1 if self.matrix_rows else self.width // (self.m * self.n)
        matrices = rows // self.m if self.matrix_rows else rows * per_row
        return matrices, self.m, self.padded_m

    def staged_per_row(self) -> int:
        """Staged elements per view row, padding included (for UB budgets)."""
        return math.ceil(self.width * self.padded_m / self.m * self.blocks * self.n0 / self.n)

    def staging_elements(self, rows: int) -> int:
        matrices, _, staged = self._geometry(rows)
        return matrices * self.blocks * staged * self.n0

    # ---- moves ---------------------------------------------------------------------------

    def load(self, b: KernelBuilder, row0: Index, rows: int, staging, tile: Tile) -> None:
        self._gm_copy(b, row0, rows, staging, to_ub=True)
        self._strips(b, rows, staging, tile, to_nz=False)

    def store(self, b: KernelBuilder, row0: Index, rows: int, staging, tile: Tile) -> None:
        if self._padded(rows):
            b.emit(npu.VDupOp, staging, 0, cols=self.staging_elements(rows), value=0.0)
        self._strips(b, rows, staging, tile, to_nz=True)
        self._gm_copy(b, row0, rows, staging, to_ub=False)

    def _padded(self, rows: int) -> bool:
        """Whether the NZ image of a tile of `rows` has padding (columns past N in
        its last block, or rows past M in its matrices)."""
        _, per_matrix, staged = self._geometry(rows)
        return self.n % self.n0 != 0 or staged != per_matrix

    def _gm_copy(self, b: KernelBuilder, row0: Index, rows: int, staging, to_ub: bool) -> None:
        matrices, per_matrix, staged = self._geometry(rows)
        block = self.padded_m * self.n0
        gm = self.tensor.value
        if staged == self.padded_m:  # whole matrices: contiguous
            first = b.floordiv(row0, self.m) if self.matrix_rows else b.mul(row0, self.width // (self.m * self.n))
            offset, copy = b.mul(first, self.blocks * block), {"cols": matrices * self.blocks * block}
        else:
            matrix, row = b.floordiv(row0, self.m), b.rem(row0, self.m)
            offset = b.add(b.mul(matrix, self.blocks * block), b.mul(row, self.n0))
            cols = per_matrix * self.n0
            copy = {"rows": self.blocks, "cols": cols}
            if self.blocks > 1:
                copy["strides"] = [block, cols] if to_ub else [cols, block]
        if to_ub:
            b.emit(npu.CopyOp, gm, offset, staging, 0, **copy)
        else:
            b.emit(npu.CopyOp, staging, 0, gm, offset, **copy)

    def _strips(self, b: KernelBuilder, rows: int, staging, tile: Tile, to_nz: bool) -> None:
        """Move the 16-column strips between the row tile (contiguous rows of N) and
        the NZ staging (`_dims`): the full blocks, then the partial last block."""
        full, partial = divmod(self.n, self.n0)
        for first, blocks, cols in ((0, full, self.n0), (full, 1 if partial else 0, partial)):
            if blocks:
                self._strip_moves(b, rows, staging, tile, to_nz, first, blocks, cols)

    def _strip_moves(self, b: KernelBuilder, rows: int, staging, tile: Tile, to_nz: bool,
                     first: int, blocks: int, cols: int) -> None:
        """The moves of `blocks` column blocks from block `first`, `cols` columns each:
        one instruction over the covered dim, in loops over the others (`_moves`)."""
        moves = self._moves(rows, blocks)
        assert moves is not None, "tile rows the tiler should not have chosen (tile_rows_ok)"
        covered, looped = moves
        dims = self._dims(rows, blocks)
        step = dims[covered]

        def emit(at_tile: Index, at_staging: Index, rest: list[int]) -> None:
            if rest:
                d, *rest = rest
                with b.loop(0, dims[d].count, name=_LOOP_NAMES[d]) as i:
                    emit(b.affine(at_tile, (i, dims[d].tile)), b.affine(at_staging, (i, dims[d].staging)), rest)
                return
            if to_nz:
                operands, strides = (tile.buffer, at_tile, staging, at_staging), [step.tile, step.staging]
            else:
                operands, strides = (staging, at_staging, tile.buffer, at_tile), [step.staging, step.tile]
            b.emit(npu.VCopyOp, *operands, rows=step.count, cols=cols, strides=strides)

        emit(b.affine(tile.offset, (first, dims[2].tile)), first * dims[2].staging, looped)


_LOOP_NAMES = ("matrix", "strip", "block")


@dataclass(frozen=True)
class _Dim:
    """One dim of a tile's strips: how many, and its (tile, staging) steps in elements."""

    count: int
    tile: int
    staging: int
