"""Rows of channels of an NC1HWC0 result, converted on the way from UB to GM.

A row-tile kernel whose rows are the (image, channel) pairs of an NCHW value
(a squeeze-and-excitation group scaling each channel's H*W pixels by its own
factor) computes each channel's pixels as one row of the tile. When the value
is wanted in NC1HWC0 (the next convolution reads it so), the kernel writes
that image itself instead of leaving it to a `ge.transdata` kernel (a phase
and a barrier of its own, and a second pass over the value): every C0 rows
of the tile, one channel block, are a (C0 x H*W) matrix whose transpose
(`vtranspose`, H*W x C0) is the block's image in NC1HWC0, so a tile of whole
channel blocks is staged block by block and stored in one contiguous copy.

* C a multiple of C0: blocks follow each other across images, so a tile of
  whole blocks (t a multiple of C0) is contiguous in GM wherever it starts.
* otherwise the last block of each image has padding channels, written as
  zeros (the staging is zeroed first), so a tile holds whole images; several
  images in a tile each start 32-byte aligned in UB or the tile is one image.

Only results are converted (a group reading NC1HWC0 is not a row of channels
this module loads). `fits` is the layout's half of the group template's
legality (`templates/groups.py`), `tile_rows_ok` the tiling's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...dialects import npu
from ...dialects.ge.formats import Format
from .context import GmTensor
from .kernel_builder import Index, KernelBuilder
from .vector_emitter import UB_ALIGN_BYTES, Tile


@dataclass(frozen=True)
class ChannelRows:
    """View rows of `width` = H*W pixels, one per (image, channel), of an NC1HWC0 tensor."""

    tensor: GmTensor
    width: int

    @staticmethod
    def fits(tensor: GmTensor, rows: int, width: int) -> bool:
        """Whether view rows of (N*C, H*W) are the channels of this NC1HWC0 tensor."""
        if tensor.format != Format.NC1HWC0 or len(tensor.shape) != 4:
            return False
        n, c, h, w = tensor.shape
        return rows == n * c and width == h * w

    @property
    def channels(self) -> int:
        return self.tensor.shape[1]

    @property
    def c0(self) -> int:
        return self.tensor.physical_shape[-1]

    @property
    def blocks(self) -> int:
        return -(-self.channels // self.c0)

    @property
    def padded(self) -> bool:
        return self.channels % self.c0 != 0

    def period(self) -> int:
        """Tiles hold whole channel blocks, or whole images when the last block is padded."""
        return self.channels if self.padded else self.c0

    def tile_rows_ok(self, rows: int) -> bool:
        if not self.padded:
            return rows % self.c0 == 0
        if rows % self.channels:
            return False
        image_bytes = self.channels * self.width * self.tensor.itemsize
        return rows == self.channels or image_bytes % UB_ALIGN_BYTES == 0

    def staged_per_row(self) -> int:
        """Staged elements per view row, padding included (for UB budgets)."""
        return math.ceil(self.width * self.blocks * self.c0 / self.channels)

    def staging_elements(self, rows: int) -> int:
        if self.padded:
            return rows // self.channels * self.blocks * self.width * self.c0
        return rows * self.width

    def load(self, b: KernelBuilder, row0: Index, rows: int, staging, tile: Tile) -> None:
        raise NotImplementedError("channel rows are converted on the way out only (module docstring)")

    def store(self, b: KernelBuilder, row0: Index, rows: int, staging, tile: Tile) -> None:
        """The tile's blocks transposed into the staging, then one copy to GM."""
        if self.padded:
            b.emit(npu.VDupOp, staging, 0, cols=self.staging_elements(rows), value=0.0)
            images = rows // self.channels
            if images > 1:
                with b.loop(0, images, name="image") as i:
                    self._image(b, staging, tile, b.mul(i, self.channels * tile.row_stride),
                                b.mul(i, self.blocks * self.width * self.c0))
            else:
                self._image(b, staging, tile, 0, 0)
            offset = b.mul(b.floordiv(row0, self.channels), self.blocks * self.width * self.c0)
        else:
            self._blocks(b, staging, tile, 0, 0, rows // self.c0, self.c0)
            offset = b.mul(row0, self.width)
        b.emit(npu.CopyOp, staging, 0, self.tensor.value, offset, cols=self.staging_elements(rows))

    def _image(self, b: KernelBuilder, staging, tile: Tile, at_tile: Index, at_staging: Index) -> None:
        """One image's blocks: the whole ones, then the last with its channels only."""
        full, partial = divmod(self.channels, self.c0)
        self._blocks(b, staging, tile, at_tile, at_staging, full, self.c0)
        if partial:
            block = full * self.c0
            self._blocks(b, staging, tile, b.add(at_tile, block * tile.row_stride),
                         b.add(at_staging, full * self.width * self.c0), 1, partial)

    def _blocks(self, b: KernelBuilder, staging, tile: Tile, at_tile: Index, at_staging: Index,
                count: int, channels: int) -> None:
        """`count` blocks of `channels` rows each: (channels x H*W) -> (H*W x C0 stride)."""
        step_tile, step_staging = self.c0 * tile.row_stride, self.width * self.c0

        def emit(src: Index, dst: Index) -> None:
            b.emit(npu.VTransposeOp, tile.buffer, b.add(tile.offset, src), staging, dst,
                   rows=channels, cols=self.width, strides=[tile.row_stride, self.c0])

        if count == 1:
            emit(at_tile, at_staging)
        elif count > 1:
            with b.loop(0, count, name="block") as j:
                emit(b.affine(at_tile, (j, step_tile)), b.affine(at_staging, (j, step_staging)))
