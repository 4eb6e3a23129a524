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

On the way out, the staging buffer is zeroed first, so the padding of the NZ
image (columns N..N1*16 of the last block, rows M..M1*16) is written as zeros,
as the cube relies on. The strips are moved by a loop over the shorter of
(blocks x matrices) and (blocks x rows), each instruction covering the other.
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
        (`period`) and strips that start aligned in UB (`_strip_steps`)."""
        if not self._strips_aligned(rows):
            return False
        if not self.matrix_rows:
            return True
        if self.padded_m != self.m:
            return rows % self.m == 0
        return rows % self.m == 0 or self.m % rows == 0

    def _strip_steps(self, rows: int) -> tuple[int, tuple[int, int], tuple[int, tuple[int, int]]]:
        """(outer count, (tile, staging) outer steps, (inner count, steps)) of the strip
        moves of a tile of `rows` (see `_strips`)."""
        matrices, per_matrix, staged = self._geometry(rows)
        matrix = (self.m * self.n, self.blocks * staged * self.n0)
        row = (self.n, self.n0)
        if per_matrix >= matrices:  # an instruction covers a matrix's rows
            return matrices, matrix, (per_matrix, row)
        return per_matrix, row, (matrices, matrix)

    def _strips_aligned(self, rows: int) -> bool:
        """Every strip move of the tile starts on a UB alignment boundary (a loop of
        them steps by whole aligned units), else the vector unit cannot address it:
        e.g. several 31 x 8 fp16 matrices in one tile, 496 bytes apart."""
        outer, steps, _ = self._strip_steps(rows)
        align = UB_ALIGN_BYTES // dtypes.byte_width(self.tensor.element_type)
        return outer <= 1 or all(step % align == 0 for step in steps)

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
        count = self.staging_elements(rows)
        b.emit(npu.VDupOp, staging, 0, cols=count, value=0.0)
        self._strips(b, rows, staging, tile, to_nz=True)
        self._gm_copy(b, row0, rows, staging, to_ub=False)

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
        the NZ staging: element (matrix g, row m, column j*n0 + c) is at
        g*M*N + m*N + j*n0 + c in the tile, ((g*J + j)*S + m)*n0 + c staged."""
        _, _, staged = self._geometry(rows)
        n0, n = self.n0, self.n
        outer, outer_step, (inner, inner_step) = self._strip_steps(rows)
        assert self._strips_aligned(rows), "tile rows the tiler should not have chosen (tile_rows_ok)"

        def strips(j: Index, cols: int) -> None:
            with b.loop(0, outer, name="strip") as i:
                at_tile = b.add(tile.offset, b.add(b.mul(i, outer_step[0]), b.mul(j, n0)))
                at_staging = b.add(b.mul(i, outer_step[1]), b.mul(j, staged * n0))
                if to_nz:
                    operands, strides = (tile.buffer, at_tile, staging, at_staging), list(inner_step)
                else:
                    operands, strides = (staging, at_staging, tile.buffer, at_tile), inner_step[::-1]
                b.emit(npu.VCopyOp, *operands, rows=inner, cols=cols, strides=list(strides))

        full, partial = divmod(n, n0)
        if full:
            with b.loop(0, full, name="block") as j:
                strips(j, n0)
        if partial:
            strips(full, partial)
