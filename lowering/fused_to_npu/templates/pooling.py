"""`ge.max_pool2d` and `ge.avg_pool2d` (strides, pads, ceil mode,
count_include_pad), from and to NCHW or NC1HWC0.

The vector unit works on pixels of C0 lanes (32 bytes: a channel block of
NC1HWC0, the layout the layout pass keeps pooling in). A tile is a block of
TOH x TOW output pixels of one plane (an image's block of C0 channels):

* its input pixels, surrounded by the pad value where the windows leave the
  image, sit in UB with a pitch of P pixels per row, P a multiple of the column
  stride sw;
* the output tile has a pitch of Q = sh * P / sw pixels, so output pixel
  r = oh * Q + ow reads input pixel sw * r + (i * P + j) for window offset (i, j):
  every window offset is ONE vector instruction over the whole tile (source row
  stride sw * C0), the pixels ow >= TOW of each row being discarded;
* max: `vcopy` of offset (0, 0), then `vmax` of the others, in the data type
  (exact); avg: `vadd` in fp32, then one `vmuls` by 1 / count per block of
  equal divisors (count = rows counted x columns counted, known statically:
  tiles in the image's interior have one block), rounded once.

NCHW input is loaded channel-major and turned into pixels by `vtranspose` (one
for a band of whole rows, one per row for column tiles); NCHW output is
transposed back the same way. Along each spatial dim, tiles
whose input leaves the image or that are shorter (the last) are separate
static cases; the interior tiles share one body with a run-time offset.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

from xdsl.dialects.builtin import f32
from xdsl.ir import SSAValue

from ....core import dtypes
from ....dialects import ge, npu
from ....dialects.ge.formats import Format, c0
from ..context import KernelContext
from .registry import kernel_for
from ..kernel_builder import Index, KernelBuilder
from .copy_kernel import copy_strides, grid_coordinates, tile_numbers
from .copy_layout import round_up


@dataclass(frozen=True)
class _Dim:
    """One spatial dim: input size, output size, window, and the tiling of the outputs."""

    size: int
    out: int
    kernel: int
    stride: int
    before: int
    after: int
    tile: int = 1

    @property
    def count(self) -> int:
        return -(-self.out // self.tile)

    def extent(self, n: int) -> int:
        """Input positions `n` consecutive outputs read."""
        return self.stride * (n - 1) + self.kernel

    def valid(self, first: int, n: int) -> tuple[int, int]:
        """Tile positions [lo, hi) inside the image, for outputs first .. first + n."""
        start = first * self.stride - self.before
        lo = max(0, -start)
        return lo, max(lo, min(self.extent(n), self.size - start))

    def counted(self, include_pad: bool) -> list[int]:
        """Positions each window counts (ceil mode's overhang never counts)."""
        lo, hi = (-self.before, self.size + self.after) if include_pad else (0, self.size)
        starts = [o * self.stride - self.before for o in range(self.out)]
        return [max(0, min(hi, s + self.kernel) - max(lo, s)) for s in starts]


@dataclass(frozen=True)
class _Span:
    """The tiles of one dim that share a body: `index` None is the interior range."""

    n: int  # outputs
    valid: tuple[int, int]
    index: int | None  # static tile index
    interior: tuple[int, int] | None = None  # [lo, hi) tile indices


def _spans(d: _Dim) -> list[_Span]:
    special, interior = [], []
    for index in range(d.count):
        first = index * d.tile
        n = min(d.tile, d.out - first)
        valid = d.valid(first, n)
        if n == d.tile and valid == (0, d.extent(n)):
            interior.append(index)
        else:
            special.append(_Span(n, valid, index))
    if interior and interior[-1] - interior[0] + 1 != len(interior):
        special = [_Span(min(d.tile, d.out - i * d.tile), d.valid(i * d.tile, min(d.tile, d.out - i * d.tile)), i)
                   for i in range(d.count)]
        interior = []
    if interior:
        special.append(_Span(d.tile, (0, d.extent(d.tile)), None, (interior[0], interior[-1] + 1)))
    return special


@kernel_for(ge.MaxPool2DOp, ge.AvgPool2DOp)
def lower_pool(op: ge.Pool2DOp, k: KernelContext) -> None:
    for t in (k.inputs[0], k.outputs[0]):
        if t.format not in (Format.ND, Format.NC1HWC0):
            raise k.unsupported(f"pooling a {t.format.value} tensor")
    _PoolKernel(op, k).emit()


class _PoolKernel:
    def __init__(self, op: ge.Pool2DOp, k: KernelContext):
        a = op.attr_values()
        self.k, self.b = k, k.b
        self.x, self.out = k.inputs[0], k.outputs[0]
        self.is_max = isinstance(op, ge.MaxPool2DOp)
        self.include_pad = bool(getattr(a, "count_include_pad", False))
        self.n, self.c, h, w = self.x.shape
        oh, ow = self.out.shape[2:]
        self.rows = _Dim(h, oh, a.kernel[0], a.strides[0], a.pads[0], a.pads[2])
        self.cols = _Dim(w, ow, a.kernel[1], a.strides[1], a.pads[1], a.pads[3])
        self.dtype = self.x.element_type
        self.acc_type = f32 if not self.is_max and dtypes.is_narrow_float(self.dtype) else self.dtype
        self.lanes = c0(self.dtype)
        self.blocks = -(-self.c // self.lanes)
        self.nchw_in = self.x.format == Format.ND
        self.nchw_out = self.out.format == Format.ND
        self._choose_tiles()

    # ---- tiling --------------------------------------------------------------------------

    def _pitch(self, cols: _Dim) -> int:
        return -(-cols.extent(cols.tile) // cols.stride) * cols.stride

    def _buffers(self, rows: _Dim, cols: _Dim) -> dict[str, tuple[int, object]]:
        """Name -> (elements, element type) of every UB buffer."""
        pitch = self._pitch(cols)
        tile = rows.extent(rows.tile) * pitch * self.lanes
        out = rows.tile * (rows.stride * pitch // cols.stride) * self.lanes
        buffers = {"in": (tile, self.dtype), "out": (out, self.dtype)}
        if self.acc_type != self.dtype:
            buffers["in32"] = (tile, self.acc_type)
            buffers["out32"] = (out, self.acc_type)
        if self.nchw_in and cols.tile == cols.out:  # whole rows: channel-major, then pixels
            pixels = rows.extent(rows.tile) * cols.size
            buffers["planes"] = (self.lanes * round_up(pixels, _block(self.dtype)), self.dtype)
            buffers["pixels"] = (pixels * self.lanes, self.dtype)
        elif self.nchw_in:  # column tiles: row by row, channel-major within a row
            row = round_up(self.lanes * cols.extent(cols.tile), _block(self.dtype))
            buffers["planes"] = (rows.extent(rows.tile) * row, self.dtype)
        if self.nchw_out and cols.tile == cols.out:  # whole rows: compact, then one transpose
            pixels = rows.tile * cols.tile
            buffers["compact"] = (pixels * self.lanes, self.dtype)
            buffers["planes_out"] = (self.lanes * round_up(pixels, _block(self.dtype)), self.dtype)
        elif self.nchw_out:  # column tiles: one transpose per output row
            buffers["planes_out"] = (rows.tile * round_up(self.lanes * cols.tile, _block(self.dtype)), self.dtype)
        return buffers

    def _ub_bytes(self, rows: _Dim, cols: _Dim) -> int:
        total = 0
        for name, (elements, element_type) in self._buffers(rows, cols).items():
            size = round_up(elements * dtypes.byte_width(element_type), 32)
            total += size * (2 if name in ("in", "out") else 1)  # npu-double-buffer's second copies
        return total

    def _choose_tiles(self) -> None:
        """Whole output rows if one fits UB (else the widest column chunk), then as
        many rows as fit, no more than needed to give every core two tiles."""
        capacity = self.k.hw.capacity("ub")
        rows, cols = self.rows, self.cols

        def fits(tr: int, tc: int) -> bool:
            return self._ub_bytes(_with_tile(rows, tr), _with_tile(cols, tc)) <= capacity

        if not fits(1, 1):
            raise self.k.unsupported(f"no tile of one output pixel fits UB ({capacity} bytes)")
        tc = _largest(cols.out, lambda t: fits(1, t))
        tc = -(-cols.out // -(-cols.out // tc))
        largest = _largest(rows.out, lambda t: fits(t, tc))
        planes = self.n * self.blocks * -(-cols.out // tc)
        spread = -(-rows.out // max(1, -(-2 * self.k.hw.core_count // planes)))
        tr = max(1, min(largest, spread))
        tr = -(-rows.out // -(-rows.out // tr))
        self.rows, self.cols = _with_tile(rows, tr), _with_tile(cols, tc)
        self.pitch = self._pitch(self.cols)
        self.out_pitch = self.rows.stride * self.pitch // self.cols.stride

    # ---- emission --------------------------------------------------------------------------

    def emit(self) -> None:
        b, k, rows, cols = self.b, self.k, self.rows, self.cols
        self.buf = {name: b.alloc([size], t, "ub", name) for name, (size, t) in self._buffers(rows, cols).items()}
        planes = self.n * self.blocks
        counts = [planes, rows.count, cols.count]
        total = math.prod(counts)
        k.block_dim = min(total, k.hw.core_count)
        row_spans, col_spans = _spans(rows), _spans(cols)
        k.explain(
            f"{self._title()} {self.n}x{self.c}x{rows.size}x{cols.size} -> {rows.out}x{cols.out}: "
            f"{planes} plane(s) of {self.lanes} channels x {rows.count}x{cols.count} tile(s) of {rows.tile}x{cols.tile} "
            f"outputs; UB pitch {self.pitch} pixels in, {self.out_pitch} out; "
            f"{len(row_spans)}x{len(col_spans)} tile bodies"
        )
        with tile_numbers(b, total, k.block_dim) as number:
            plane, row_tile, col_tile = grid_coordinates(b, number, counts)
            image, block = grid_coordinates(b, plane, [self.n, self.blocks])
            for channels, channel_cond in self._channel_cases(block):
                for rs in row_spans:
                    for cs in col_spans:
                        with b.when(channel_cond), _in_span(b, rs, row_tile, rows.count), _in_span(b, cs, col_tile, cols.count):
                            first_row = rs.index * rows.tile if rs.index is not None else b.mul(row_tile, rows.tile)
                            first_col = cs.index * cols.tile if cs.index is not None else b.mul(col_tile, cols.tile)
                            self._tile(image, block, channels, rs, cs, first_row, first_col)

    def _title(self) -> str:
        return "max pool" if self.is_max else "avg pool"

    def _channel_cases(self, block: Index) -> list[tuple[int, SSAValue | bool]]:
        """NCHW: the last block of channels may hold fewer than C0."""
        tail = self.c % self.lanes
        if not (self.nchw_in or self.nchw_out) or not tail:
            return [(self.lanes, True)]
        if self.blocks == 1:
            return [(tail, True)]
        b = self.b
        return [(self.lanes, b.less_than(block, self.blocks - 1)), (tail, b.equals(block, self.blocks - 1))]

    def _tile(self, image: Index, block: Index, channels: int, rs: _Span, cs: _Span, first_row: Index, first_col: Index) -> None:
        self._load(image, block, channels, rs, cs, first_row, first_col)
        result = self._pool(rs, cs)
        if not self.is_max:
            self._divide(result, rs, cs)
            if result is not self.buf["out"]:
                self.b.emit(npu.VCastOp, result, 0, self.buf["out"], 0, cols=self._pixels(rs, cs) * self.lanes)
        self._store(image, block, channels, rs, cs, first_row, first_col)

    def _pixels(self, rs: _Span, cs: _Span) -> int:
        """Output pixels a vector instruction covers: whole pitches but the last row's tail."""
        return (rs.n - 1) * self.out_pitch + cs.n

    # ---- load -------------------------------------------------------------------------------

    def _load(self, image: Index, block: Index, channels: int, rs: _Span, cs: _Span, first_row: Index, first_col: Index) -> None:
        b, lanes = self.b, self.lanes
        tile = self.buf["in"]
        height, width = self.rows.extent(rs.n), self.cols.extent(cs.n)
        (r0, r1), (c0_, c1) = rs.valid, cs.valid
        pad = _lowest(self.dtype) if self.is_max else 0.0
        row = self.pitch * lanes
        if self.nchw_in and not self.nchw_out and channels < lanes:
            # Lanes past the last channel become NC1HWC0 padding: they must pool to 0.
            b.emit(npu.VDupOp, tile, 0, cols=height * row, value=0.0)
        if r1 <= r0 or c1 <= c0_:
            b.emit(npu.VDupOp, tile, 0, cols=height * row, value=pad)
            return
        in_row = b.add(b.mul(first_row, self.rows.stride), r0 - self.rows.before)
        in_col = b.add(b.mul(first_col, self.cols.stride), c0_ - self.cols.before)
        self._copy_in(image, block, channels, in_row, in_col, r1 - r0, c1 - c0_, (r0 * self.pitch + c0_) * lanes)
        self._pad_borders(height, width, rs.valid, cs.valid, pad)

    def _copy_in(self, image: Index, block: Index, channels: int, in_row: Index, in_col: Index,
                 count: int, width: int, dst: int) -> None:
        """`count` input rows of `width` pixels from (in_row, in_col) of the plane
        into the tile from element `dst` on, at its pitch."""
        b, lanes = self.b, self.lanes
        if self.nchw_in:
            self._load_channels(image, block, channels, in_row, in_col, count, width, dst)
            return
        plane = b.add(b.mul(image, self.blocks), block)
        src = b.add(b.mul(b.add(b.mul(plane, self.rows.size), in_row), self.cols.size * lanes), b.mul(in_col, lanes))
        span = width * lanes
        b.emit(npu.CopyOp, self.x.value, src, self.buf["in"], dst, rows=count, cols=span,
               **copy_strides(count, span, self.cols.size * lanes, self.pitch * lanes))

    def _pad_borders(self, height: int, width: int, valid_rows: tuple[int, int], valid_cols: tuple[int, int],
                     pad: float, at: int = 0) -> None:
        """The pad value around the loaded pixels, written after the load: the
        regions are disjoint from it, so the vector unit only waits for the load
        it waits for anyway, and the next tile's load never waits for the vector
        unit's padding of its buffer."""
        b, lanes, tile, row = self.b, self.lanes, self.buf["in"], self.pitch * self.lanes
        (r0, r1), (c0_, c1) = valid_rows, valid_cols
        if r0 > 0:
            b.emit(npu.VDupOp, tile, at, cols=r0 * row, value=pad)
        if r1 < height:
            b.emit(npu.VDupOp, tile, at + r1 * row, cols=(height - r1) * row, value=pad)
        if c0_ > 0:
            b.emit(npu.VDupOp, tile, at + r0 * row, rows=r1 - r0, cols=c0_ * lanes, strides=[row], value=pad)
        if c1 < width:
            b.emit(npu.VDupOp, tile, at + r0 * row + c1 * lanes, rows=r1 - r0, cols=(width - c1) * lanes,
                   strides=[row], value=pad)

    def _load_channels(self, image: Index, block: Index, channels: int, in_row: Index, in_col: Index,
                       count: int, width: int, dst: int) -> None:
        """NCHW. Whole rows: the channels' rows in one copy, one transpose to pixels,
        one strided copy into the tile. Column tiles: one copy and one transpose
        (straight into the tile) per input row."""
        b, lanes = self.b, self.lanes
        h, w = self.rows.size, self.cols.size
        planes = self.buf["planes"]
        channel = b.add(b.mul(image, self.c), b.mul(block, lanes))
        src = b.add(b.add(b.mul(channel, h * w), b.mul(in_row, w)), in_col)
        if width < w:
            row = round_up(lanes * width, _block(self.dtype))
            with b.loop(0, count, name="r") as r:
                b.emit(npu.CopyOp, self.x.value, b.add(src, b.mul(r, w)), planes, b.mul(r, row),
                       rows=channels, cols=width, **copy_strides(channels, width, h * w, width))
                b.emit(npu.VTransposeOp, planes, b.mul(r, row), self.buf["in"], b.add(dst, b.mul(r, self.pitch * lanes)),
                       rows=channels, cols=width, strides=[width, lanes])
            return
        pixels = self.buf["pixels"]
        if not self.nchw_out and channels < lanes:  # lanes past the channels: padding, zeros
            b.emit(npu.VDupOp, pixels, 0, cols=count * w * lanes, value=0.0)
        stride = round_up(count * w, _block(self.dtype))
        b.emit(npu.CopyOp, self.x.value, src, planes, 0, rows=channels, cols=count * w,
               **copy_strides(channels, count * w, h * w, stride))
        b.emit(npu.VTransposeOp, planes, 0, pixels, 0, rows=channels, cols=count * w, strides=[stride, lanes])
        b.emit(npu.VCopyOp, pixels, 0, self.buf["in"], dst, rows=count, cols=w * lanes,
               **copy_strides(count, w * lanes, w * lanes, self.pitch * lanes))

    # ---- compute ----------------------------------------------------------------------------

    def _pool(self, rs: _Span, cs: _Span) -> SSAValue:
        """Combine the window offsets into the output tile; returns the buffer holding
        the result (fp32 for an fp16 average)."""
        b, lanes = self.b, self.lanes
        source, result = self.buf["in"], self.buf["out"]
        if self.acc_type != self.dtype:
            source, result = self.buf["in32"], self.buf["out32"]
            size = self.rows.extent(rs.n) * self.pitch * lanes
            b.emit(npu.VCastOp, self.buf["in"], 0, source, 0, cols=size)
        combine = npu.VMaxOp if self.is_max else npu.VAddOp
        pixels, step = self._pixels(rs, cs), self.cols.stride * lanes
        for i in range(self.rows.kernel):
            for j in range(self.cols.kernel):
                offset = (i * self.pitch + j) * lanes
                if i == 0 and j == 0:
                    b.emit(npu.VCopyOp, source, offset, result, 0, rows=pixels, cols=lanes, strides=[step, lanes])
                else:
                    b.emit(combine, result, 0, source, offset, result, 0, rows=pixels, cols=lanes, strides=[lanes, step, lanes])
        return result

    def _divide(self, result: SSAValue, rs: _Span, cs: _Span) -> None:
        """result /= count, one `vmuls` per block of equal (rows counted, columns counted)."""
        row = self.out_pitch * self.lanes
        for r_start, r_len, r_count in self._count_runs(self.rows, rs):
            for c_start, c_len, c_count in self._count_runs(self.cols, cs):
                offset = r_start * row + c_start * self.lanes
                self.b.emit(npu.VMulsOp, result, offset, result, offset, rows=r_len, cols=c_len * self.lanes,
                            **copy_strides(r_len, c_len * self.lanes, row, row), scalar=1.0 / (r_count * c_count))

    def _count_runs(self, d: _Dim, span: _Span) -> list[tuple[int, int, int]]:
        """(start, length, count) runs of the divisor factor over the span's outputs;
        an interior span counts every window position."""
        if span.index is None:
            return [(0, span.n, d.kernel)]
        first = span.index * d.tile
        return _runs(d.counted(self.include_pad)[first : first + span.n])

    # ---- store ------------------------------------------------------------------------------

    def _store(self, image: Index, block: Index, channels: int, rs: _Span, cs: _Span, first_row: Index, first_col: Index) -> None:
        b, lanes = self.b, self.lanes
        result = self.buf["out"]
        row = self.out_pitch * lanes
        oh, ow = self.rows.out, self.cols.out
        width = cs.n * lanes
        if not self.nchw_out:
            plane = b.add(b.mul(image, self.blocks), block)
            dst = b.add(b.mul(b.add(b.mul(plane, oh), first_row), ow * lanes), b.mul(first_col, lanes))
            b.emit(npu.CopyOp, result, 0, self.out.value, dst, rows=rs.n, cols=width,
                   **copy_strides(rs.n, width, row, ow * lanes))
            return
        channel = b.add(b.mul(image, self.c), b.mul(block, lanes))
        dst = b.add(b.add(b.mul(channel, oh * ow), b.mul(first_row, ow)), first_col)
        planes = self.buf["planes_out"]
        if cs.n < ow:
            pitch = round_up(lanes * cs.n, _block(self.dtype))
            with b.loop(0, rs.n, name="r") as r:
                b.emit(npu.VTransposeOp, result, b.mul(r, row), planes, b.mul(r, pitch), rows=cs.n, cols=lanes,
                       strides=[lanes, cs.n])
                b.emit(npu.CopyOp, planes, b.mul(r, pitch), self.out.value, b.add(dst, b.mul(r, ow)),
                       rows=channels, cols=cs.n, **copy_strides(channels, cs.n, cs.n, oh * ow))
            return
        compact = self.buf["compact"]
        pixels = rs.n * cs.n
        stride = round_up(pixels, _block(self.dtype))
        b.emit(npu.VCopyOp, result, 0, compact, 0, rows=rs.n, cols=width, **copy_strides(rs.n, width, row, width))
        b.emit(npu.VTransposeOp, compact, 0, planes, 0, rows=pixels, cols=lanes, strides=[lanes, stride])
        b.emit(npu.CopyOp, planes, 0, self.out.value, dst, rows=channels, cols=pixels,
               **copy_strides(channels, pixels, stride, oh * ow))


@contextmanager
def _in_span(b: KernelBuilder, span: _Span, coord: Index, count: int) -> Iterator[None]:
    """The body runs when the tile coordinate falls in the span."""
    with ExitStack() as stack:
        if span.index is not None:
            stack.enter_context(b.when(b.equals(coord, span.index) if count > 1 else True))
        else:
            lo, hi = span.interior
            if lo > 0:
                stack.enter_context(b.when(b.less_than(lo - 1, coord)))
            if hi < count:
                stack.enter_context(b.when(b.less_than(coord, hi)))
        yield


def _with_tile(d: _Dim, tile: int) -> _Dim:
    return _Dim(d.size, d.out, d.kernel, d.stride, d.before, d.after, tile)


def _largest(n: int, fits) -> int:
    """The largest t in [1, n] with fits(t), for a monotone `fits` true at 1."""
    lo, hi = 1, n
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
    return lo


def _runs(values: list[int]) -> list[tuple[int, int, int]]:
    """(start, length, value) of the runs of equal values."""
    runs: list[tuple[int, int, int]] = []
    for i, v in enumerate(values):
        if runs and runs[-1][2] == v:
            start, length, _ = runs[-1]
            runs[-1] = (start, length + 1, v)
        else:
            runs.append((i, 1, v))
    return runs


def _lowest(element_type) -> float:
    """Max pool's pad: the lowest finite value (pads are smaller than the kernel, so
    every window holds an input element and the pad never wins)."""
    if dtypes.is_float(element_type):
        return float(dtypes.float_info(element_type).min)
    return float(dtypes.lowest_value(dtypes.to_numpy_dtype(element_type)))


def _block(element_type) -> int:
    return 32 // dtypes.byte_width(element_type)



