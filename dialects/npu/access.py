"""Access patterns: which elements of a buffer an operand touches, from its flat
element offset.

Every buffer operand of an `npu` op reads or writes a 2-D pattern, described
statically by the op's attributes and placed at run time by the offset operand:

* `Strided(rows, cols, row_stride, col_stride)`: element (r, c) is at
  `offset + r * row_stride + c * col_stride`. `col_stride` is 1 (a row of
  consecutive elements) or 0 (one element per row, broadcast along the row: a
  per-row scalar such as a softmax row max); `row_stride` 0 repeats one row for
  every row (a bias).
* `Fractal(rows, cols, block_stride, n0)`: the FRACTAL_NZ layout
  (`dialects/ge/formats.py`): columns in blocks of `n0`, each block column
  stored as consecutive rows of `n0` elements, block columns `block_stride`
  elements apart: element (r, c) is at `offset + (c // n0) * block_stride +
  r * n0 + c % n0`. For a whole (M x N) NZ matrix block_stride is
  ceil(M / 16) * 16 * n0; a tile at (r0, c0) starts at
  `(c0 // n0) * block_stride + r0 * n0`.

A pattern knows its extent (`span`, for bounds checks), its contiguous runs (for
the transfer cost model and exact overlap tests) and how to view a flat numpy
array as the logical 2-D operand (`viewer`). The views are built by slicing and
reshaping, which is why the simulator keeps `slack` spare elements after every
buffer: a strided view spans whole row strides.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import as_strided

Viewer = Callable[[np.ndarray, int], np.ndarray]


@dataclass(frozen=True)
class Strided:
    rows: int
    cols: int
    row_stride: int
    col_stride: int = 1

    @property
    def elements(self) -> int:
        return self.rows * self.cols

    @property
    def span(self) -> int:
        """Elements from the offset to one past the last element touched."""
        return (self.rows - 1) * self.row_stride + (self.cols - 1) * self.col_stride + 1

    @property
    def slack(self) -> int:
        """Spare elements after `span` that `viewer` may slice over."""
        if self.col_stride == 1 and self.rows > 1 and self.row_stride > self.cols:
            return self.row_stride - self.cols
        return 0

    def runs(self) -> tuple[int, int]:
        """(number of contiguous runs, elements per run) of the distinct elements."""
        distinct_rows = 1 if self.row_stride == 0 else self.rows
        if self.col_stride == 0:
            return distinct_rows, 1
        if distinct_rows == 1 or self.row_stride == self.cols:
            return 1, distinct_rows * self.cols
        return distinct_rows, self.cols

    def run_starts(self, offset: int) -> np.ndarray:
        count, _ = self.runs()
        step = self.row_stride if count > 1 else 0
        return offset + np.arange(count, dtype=np.int64) * step

    def viewer(self) -> Viewer:
        """A function (flat array, offset) -> the operand as a (rows, cols) view, or a
        shape that broadcasts to it: (rows, 1), (1, cols) or (1, 1)."""
        r, c, rs, cs = self.rows, self.cols, self.row_stride, self.col_stride
        n = r * c
        if cs == 0:
            if rs == 0 or r == 1:
                return lambda flat, o: flat[o : o + 1].reshape(1, 1)
            end = r * rs
            return lambda flat, o: flat[o : o + end : rs].reshape(r, 1)
        if r == 1 or rs == c:
            return lambda flat, o: flat[o : o + n].reshape(r, c)
        if rs == 0:
            return lambda flat, o: flat[o : o + c].reshape(1, c)
        if rs > c:
            end = r * rs
            return lambda flat, o: flat[o : o + end].reshape(r, rs)[:, :c]
        # 0 < row_stride < cols: overlapping rows, only ever read.
        return lambda flat, o: as_strided(flat[o:], shape=(r, c), strides=(rs * flat.itemsize, flat.itemsize))


@dataclass(frozen=True)
class Fractal:
    rows: int
    cols: int
    block_stride: int
    n0: int = 16

    @property
    def elements(self) -> int:
        return self.rows * self.cols

    @property
    def blocks(self) -> int:
        return self.cols // self.n0

    @property
    def span(self) -> int:
        return (self.blocks - 1) * self.block_stride + self.rows * self.n0

    @property
    def slack(self) -> int:
        return self.block_stride - self.rows * self.n0 if self.blocks > 1 else 0

    def runs(self) -> tuple[int, int]:
        if self.blocks == 1 or self.block_stride == self.rows * self.n0:
            return 1, self.rows * self.cols
        return self.blocks, self.rows * self.n0

    def run_starts(self, offset: int) -> np.ndarray:
        count, _ = self.runs()
        step = self.block_stride if count > 1 else 0
        return offset + np.arange(count, dtype=np.int64) * step

    def viewer(self) -> Viewer:
        """(flat, offset) -> a (blocks, rows, n0) view: block column j holds columns
        j*n0 .. j*n0+n0-1 of the logical (rows x cols) tile."""
        b, r, n0, s = self.blocks, self.rows, self.n0, self.block_stride
        width = r * n0
        if b == 1 or s == width:
            n = b * width
            return lambda flat, o: flat[o : o + n].reshape(b, r, n0)
        end = b * s
        return lambda flat, o: flat[o : o + end].reshape(b, s)[:, :width].reshape(b, r, n0)


Pattern = Strided | Fractal


def fractal_to_tile(view: np.ndarray) -> np.ndarray:
    """A (blocks, rows, n0) fractal view as the logical (rows, blocks * n0) tile."""
    blocks, rows, n0 = view.shape
    return view.transpose(1, 0, 2).reshape(rows, blocks * n0)


def tile_to_fractal(tile: np.ndarray, n0: int) -> np.ndarray:
    """A logical (rows, cols) tile as (blocks, rows, n0), to assign to a fractal view."""
    rows, cols = tile.shape
    return tile.reshape(rows, cols // n0, n0).transpose(1, 0, 2)


def runs_overlap(a_starts: np.ndarray, a_len: int, b_starts: np.ndarray, b_len: int) -> bool:
    """Whether any run [a, a + a_len) meets any run [b, b + b_len) (all in one unit,
    starts ascending)."""
    b_ends = b_starts + b_len
    # For each run of a: how many runs of b start before it ends, minus how many end
    # before it starts (both counts are monotone since the runs are sorted).
    started = np.searchsorted(b_starts, a_starts + a_len, side="left")
    finished = np.searchsorted(b_ends, a_starts, side="right")
    return bool(np.any(started > finished))
