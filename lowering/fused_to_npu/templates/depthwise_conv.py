"""Depthwise convolution on the vector unit: one input and one output channel per
group (MobileNet's and EfficientNet's 3x3 / 5x5 layers).

On the cube a depthwise convolution is a product of 1-wide matrices per channel:
K = one channel block of which one channel is real, N = one output channel, so
the cube multiplies mostly zeros and the kernel is millions of tiny instructions.
Each output channel only reads its own input channel, so the vector unit does it
directly: channels along the lanes (a C0 block of NC1HWC0, 32 bytes), pixels as
the rows of each instruction, the way pooling works (`pooling.py`, whose tiling,
loads, stores and tile bodies this kernel shares):

* a tile is TOH x TOW output pixels of one plane (an image's block of C0
  channels); its input pixels sit in UB, zero-padded, with a pitch of P pixels
  per row (P a multiple of the column stride), so output pixel r = oh * Q + ow
  reads input pixel sw * r + (i * dh * P + j * dw) for window tap (i, j): every
  tap is ONE instruction over the whole tile (source row stride sw * C0, the
  tap's C0 weights read with row stride 0): a `vmul` into the accumulator for
  the first tap, a `vmla` (acc += input * weights, the product rounded as a
  `vmul` would) for each other one; a tap at which every output reads padding
  (a window wider than the padded map's image part: 5x5 over 2x2) adds zeros
  and has no instruction (`live_taps`);
* the weights of the plane's C0 channels, (C0 x KH*KW) in GM, are loaded once
  per tile and turned into (KH*KW x C0) rows by one `vtranspose`;
* bias (one C0 row, row stride 0) and the activation are applied to the whole
  tile, which is rounded once (fp16 works in fp32, as the reference does).

The tiles are numbered in groups that share one body (the same spans of rows
and columns, the same channel count: `_Group`), each core taking a contiguous
run of the numbers, and each group is one branch-free loop: npu-double-buffer
then overlaps a tile's loads with the vector work of the one before and its
store with the one after. A tile issues all its loads (input, weights, bias)
before its first vector instruction, and pads its input after the load, around
it: the vector unit waits for the transfers once, and a load never waits for
the vector unit. The tile size is the one of least estimated time (`estimate`).

With a `mean` result (`fused.conv2d_bias_act_mean`, made by
`fused-depthwise-mean`), the tiles are whole planes and each plane's output
pixels, transposed for the NCHW store, are folded in halves into its channels'
means, stored beside the output (`_plane_mean`): a squeeze-and-excitation
block's pool without a kernel of its own.

Dilation enters as the effective window (KH - 1) * dh + 1 of the shared tiling
and as the taps' offsets. A residual is not fused here (`depthwise_problem`
says so: the fusion keeps the add a separate kernel).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.dialects.builtin import f32

from ....core import dtypes
from ....dialects import npu
from ....dialects.fused.base import ACTIVATIONS
from ....dialects.ge.formats import Format, c0
from ....simulator.npu.costs import transfer_cost, vector_cycles
from ..context import GmTensor, KernelContext
from ..kernel_builder import Index
from ..vector_emitter import Tile, VectorEmitter
from .copy_layout import round_up
from .cube import activate
from .copy_kernel import copy_strides, grid_coordinates
from .pooling import _Dim, _PoolKernel, _Span, _spans, _with_tile

ACT_TEMPS = {"none": 0, "relu": 0, "relu6": 0, "sigmoid": 0, "hard_swish": 1, "silu": 1}
"""Scratch tiles each activation needs (others: `MAX_ACT_TEMPS`)."""
MAX_ACT_TEMPS = 3


def depthwise_problem(g, x: GmTensor, w: GmTensor, bias: GmTensor | None, residual: GmTensor | None,
                      out: GmTensor) -> str | None:
    """Why the vector kernel cannot compute this convolution (None if it can):
    the predicate the chooser and the builder share (the kernel's own tiling
    check comes on top, in `DepthwiseKernel`)."""
    if g.groups == 1 or g.cg != 1 or g.og != 1:
        return f"not depthwise ({g.cg} input and {g.og} output channels per group)"
    if residual is not None:
        return "a residual (the depthwise kernel fuses bias and activation only)"
    for name, t in (("input", x), ("result", out)):
        if t.format not in (Format.ND, Format.NC1HWC0):
            return f"a {t.format.value} {name}"
    if w.format != Format.ND:
        return f"{w.format.value} weights (it reads (C, 1, KH, KW) ones)"
    if bias is not None and bias.format != Format.ND:
        return f"a {bias.format.value} bias"
    return None


@dataclass(frozen=True)
class _Group:
    """Tiles that share one body: images x channel blocks [blocks) x the row and
    column tiles of one span each. `channels`: real channels of its blocks (the
    weights and bias read), `loaded`: channels its loads and stores move (NCHW:
    the real ones; NC1HWC0: whole blocks)."""

    images: int
    blocks: tuple[int, int]
    rows: tuple[int, int]
    cols: tuple[int, int]
    rs: _Span
    cs: _Span
    channels: int
    loaded: int
    planes: int = 1  # channel blocks per tile

    @property
    def counts(self) -> list[int]:
        lo, hi = self.blocks
        return [self.images, (hi - lo) // self.planes, *(hi - lo for lo, hi in (self.rows, self.cols))]

    @property
    def size(self) -> int:
        return math.prod(self.counts)


def _tile_range(span: _Span) -> tuple[int, int]:
    return span.interior if span.index is None else (span.index, span.index + 1)


def _moving(rows: _Dim) -> bool:
    """Whether the row tiles share one body (`DepthwiseKernel._load_moving`):
    there are several and each one's input rows fit in the image."""
    return rows.count > 1 and rows.extent(rows.tile) <= rows.size


def _buffer_rows(rows: _Dim) -> int:
    """Rows of the input buffer of moving row tiles: a tile's rows and the pads
    its shift may leave above and below them."""
    return rows.before + rows.extent(rows.tile) + rows.after


def _moving_spans(rows: _Dim) -> list[_Span]:
    """Moving row tiles: the whole ones (one run-time range), and the last,
    shorter one if there is one (its own body)."""
    whole = rows.out // rows.tile
    spans = [_Span(rows.tile, (0, rows.extent(rows.tile)), None, (0, whole))]
    if rows.out > whole * rows.tile:
        n = rows.out - whole * rows.tile
        spans.append(_Span(n, (0, rows.extent(n)), whole))
    return spans


class DepthwiseKernel(_PoolKernel):
    """The plan of one depthwise convolution kernel (tiles chosen on construction:
    a ValueError-free construction means the kernel fits)."""

    def __init__(self, k: KernelContext, g, x: GmTensor, w: GmTensor, bias: GmTensor | None, out: GmTensor, act: str,
                 mean: GmTensor | None = None):
        self.k, self.b, self.g = k, k.b, g
        self.x, self.w, self.bias_t, self.out, self.act = x, w, bias, out, act
        self.mean = mean  # the output's mean over its pixels, per channel (`_plane_mean`)
        self.is_max, self.include_pad = False, True
        self.n, self.c = g.n, g.c
        self.rows = _Dim(g.h, g.oh, (g.kh - 1) * g.dilations[0] + 1, g.strides[0], g.pads[0], g.pads[2])
        self.cols = _Dim(g.w, g.ow, (g.kw - 1) * g.dilations[1] + 1, g.strides[1], g.pads[1], g.pads[3])
        self.dtype = x.element_type
        self.acc_type = f32 if dtypes.is_narrow_float(self.dtype) else self.dtype
        self.lanes = c0(self.dtype)
        self.blocks = -(-self.c // self.lanes)
        self.nchw_in = x.format == Format.ND
        self.nchw_out = out.format == Format.ND
        self.bias_splat = None if bias is None else bias.splat()
        self.temps = ACT_TEMPS.get(act, MAX_ACT_TEMPS)
        self.planes = 1
        self.taps = [
            (i, j)
            for i in live_taps(g.h, g.oh, g.kh, g.strides[0], g.dilations[0], g.pads[0])
            for j in live_taps(g.w, g.ow, g.kw, g.strides[1], g.dilations[1], g.pads[1])
        ]
        self._choose_tiles()

    def _title(self) -> str:
        g = self.g
        return f"depthwise conv {g.kh}x{g.kw} (vector unit, {len(self.taps)} instructions per tile)"

    # ---- buffers -------------------------------------------------------------------------------

    def _buffers(self, rows: _Dim, cols: _Dim) -> dict[str, tuple[int, object]]:
        buffers = super()._buffers(rows, cols)
        out_elements = buffers["out"][0]
        window, lanes = self.g.window, self.lanes
        if _moving(rows):  # rows for the shifts above and below the loaded ones
            tile = _buffer_rows(rows) * self._pitch(cols) * lanes
            buffers["in"] = (tile, self.dtype)
            if "in32" in buffers:
                buffers["in32"] = (tile, self.acc_type)
        planes = self.planes  # whole planes side by side: every tile buffer once per plane
        for name in ("in", "in32", "out", "out32", "planes_out"):
            if name in buffers:
                buffers[name] = (buffers[name][0] * planes, buffers[name][1])
        out_elements *= planes
        channels = planes * lanes
        buffers["wraw"] = (round_up(channels * window, 32 // dtypes.byte_width(self.dtype)), self.dtype)
        buffers["w"] = (window * channels, self.acc_type)
        if self.acc_type != self.dtype:
            buffers["wt"] = (window * channels, self.dtype)
        if self.bias_t is not None and self.bias_splat is None:
            buffers["bias"] = (channels, self.acc_type)
            if self.acc_type != self.dtype or self.c % lanes:  # a cast, or zeros past the last channel
                buffers["braw"] = (channels, self.dtype)
        for i in range(self.temps):
            buffers[f"t{i}"] = (out_elements, self.acc_type)
        if self.mean is not None:
            buffers["means"] = (channels, self.dtype)
        return buffers

    # ---- tiling --------------------------------------------------------------------------------

    def _choose_tiles(self) -> None:
        """Whole output rows if one fits UB (else the widest column chunk, as
        pooling chooses), then the number of rows per tile of least `estimate`
        among those that fit (ties: the larger tile)."""
        super()._choose_tiles()
        capacity = self.k.hw.capacity("ub")
        rows, cols = self.rows, self.cols
        best = None
        for parts in range(1, 2 if self.mean is not None else rows.out + 1):  # means: whole planes
            tr = -(-rows.out // parts)
            if -(-rows.out // tr) != parts:
                continue
            candidate = _with_tile(rows, tr)
            if self._ub_bytes(candidate, cols) > capacity:
                continue
            cost = self._estimate(candidate, cols)
            if best is None or cost < best[0]:
                best = (cost, candidate)
        if best is not None:
            self.rows = best[1]
        self.out_pitch = self.rows.stride * self.pitch // self.cols.stride
        if self.mean is not None:
            self._require_whole_planes(capacity)
        self._choose_planes(capacity)

    def _require_whole_planes(self, capacity: int) -> None:
        """The means are summed from the output tiles in UB: each tile must hold
        whole planes of whole channel blocks (`_planes_tile`), stored transposed into NCHW rows
        (`_store_channel_rows`), of a type the sums keep (f32)."""
        why = None
        if self.rows.count > 1 or self.cols.count > 1 or self._ub_bytes(self.rows, self.cols) > capacity:
            why = "a plane does not fit one tile"
        elif not self.nchw_out:
            why = "the means are summed from tiles stored NCHW (an NC1HWC0 result)"
        elif self.c % self.lanes:
            why = f"{self.c} channels are not whole blocks of {self.lanes}"
        elif self.dtype != f32:
            why = f"means of {self.dtype} (f32 only)"
        if why is not None:
            raise ValueError(f"no per-channel means in the depthwise kernel: {why}")

    def _choose_planes(self, capacity: int) -> None:
        """Whole planes of an NC1HWC0 input, of full channel blocks: the number of
        planes per tile of least estimate (a dividing one: every tile one body). A
        tile of several planes loads and stores them together, its instructions'
        heads and its transfers' latencies shared. An NCHW (ND) result takes them
        too: each plane's pixels are transposed to its channels' rows, and the
        planes' channels, consecutive, are one store (a squeeze-and-excitation
        block's depthwise conv feeds its pooling and scaling in ND)."""
        rows, cols = self.rows, self.cols
        if rows.count > 1 or cols.count > 1 or self.nchw_in or self.c % self.lanes:
            return
        best = (self._estimate(rows, cols), 1)
        for planes in range(2, self.blocks + 1):
            if self.blocks % planes:
                continue
            self.planes = planes
            if self._ub_bytes(rows, cols) <= capacity:
                best = min(best, (self._estimate(rows, cols), planes))
        self.planes = best[1]

    def _groups(self, rows: _Dim, cols: _Dim) -> list[_Group]:
        """The tiles by body: channel blocks of one count x row spans x column spans."""
        lanes, blocks = self.lanes, self.blocks
        tail = self.c - (blocks - 1) * lanes
        nchw = self.nchw_in or self.nchw_out
        cases = [((0, blocks), lanes)] if tail == lanes else [((0, blocks - 1), lanes), ((blocks - 1, blocks), tail)]
        groups = []
        for block_range, channels in cases:
            if block_range[1] <= block_range[0]:
                continue
            for rs in _moving_spans(rows) if _moving(rows) else _spans(rows):
                for cs in _spans(cols):
                    groups.append(_Group(self.n, block_range, _tile_range(rs), _tile_range(cs), rs, cs, channels,
                                         channels if nchw else lanes, self.planes))
        return groups

    # ---- emission ------------------------------------------------------------------------------

    def emit(self) -> None:
        """Every core takes a contiguous run of the tile numbers (the runs differ
        by one tile at most); each group of tiles is one loop over the part of
        the run that falls in it."""
        b, k, rows, cols = self.b, self.k, self.rows, self.cols
        self.buf = {name: b.alloc([size], t, "ub", name) for name, (size, t) in self._buffers(rows, cols).items()}
        groups = self._groups(rows, cols)
        total = sum(g.size for g in groups)
        cores = min(total, k.hw.core_count)
        k.block_dim = cores
        k.explain(
            f"{self._title()} {self.n}x{self.c}x{rows.size}x{cols.size} -> {rows.out}x{cols.out}: "
            f"{self.n * self.blocks} plane(s) of {self.lanes} channels x {rows.count}x{cols.count} tile(s) of "
            f"{rows.tile}x{cols.tile} outputs; UB pitch {self.pitch} pixels in, {self.out_pitch} out; "
            f"{len(groups)} tile bodies; {self.planes} plane(s) per tile; estimated {self.estimate():.0f} cycles"
        )
        if len(groups) == 1 and total == cores:  # one tile per core: no loop (its weights' loads can be prefetched)
            self._numbered_tile(groups[0], 0 if cores == 1 else b.block_idx())
            return
        if cores == 1:
            start, end = 0, total
        else:
            core = b.block_idx()
            start = b.floordiv(b.mul(core, total), cores)
            end = b.floordiv(b.add(b.mul(core, total), total), cores)
        first = 0
        for group in groups:
            last = first + group.size
            lo = start if first == 0 else b.max(start, first)
            hi = end if last == total else b.min(end, last)
            with b.loop(lo, hi, name="tile") as t:
                self._numbered_tile(group, b.sub(t, first))
            first = last

    def _numbered_tile(self, group: _Group, number: Index) -> None:
        """The tile of `number` in the group's order (images, blocks, row tiles, column tiles)."""
        b = self.b
        image, block, row_tile, col_tile = grid_coordinates(b, number, group.counts)
        image = 0 if group.images == 1 else image
        block = b.add(b.mul(block, group.planes), group.blocks[0])
        first_row = b.mul(b.add(row_tile, group.rows[0]), self.rows.tile)
        first_col = b.mul(b.add(col_tile, group.cols[0]), self.cols.tile)
        self._group_tile(group, image, block, first_row, first_col)

    def _group_tile(self, group: _Group, image: Index, block: Index, first_row: Index, first_col: Index) -> None:
        """One tile: its loads (weights and bias, then input), its vector work, its store."""
        if group.planes > 1 or self.mean is not None:
            self._planes_tile(group, image, block)
            return
        self._copy_channel_values(block, group.channels)
        if _moving(self.rows):
            base = self._load_moving(image, block, group.loaded, group.rs, group.cs, first_row, first_col)
        else:
            self._load(image, block, group.loaded, group.rs, group.cs, first_row, first_col)
            base = 0
        self._format_channel_values(group.channels)
        acc = self._convolve(group.rs, group.cs, base)
        self._epilogue(acc, group.rs, group.cs)
        self._store(image, block, group.loaded, group.rs, group.cs, first_row, first_col)

    def _planes_tile(self, group: _Group, image: Index, block: Index) -> None:
        """Whole planes of consecutive channel blocks (NC1HWC0): one load of their
        weights and one of their biases, each plane's input load and padding, a
        vmul / vmla per plane and tap, the epilogue over them all, one store (the
        planes are contiguous in GM and, whole, in the output tile)."""
        b, lanes, planes, rows, cols = self.b, self.lanes, group.planes, self.rows, self.cols
        rs, cs = group.rs, group.cs
        (r0, r1), (c0_, c1) = rs.valid, cs.valid
        height, width = rows.extent(rs.n), cols.extent(cs.n)
        plane_in = height * self.pitch * lanes
        self._copy_channel_values(block, planes * lanes)
        for p in range(planes):
            self._copy_in(image, b.add(block, p), lanes, r0 - rows.before, c0_ - cols.before, r1 - r0, c1 - c0_,
                          p * plane_in + (r0 * self.pitch + c0_) * lanes)
        for p in range(planes):
            self._pad_borders(height, width, rs.valid, cs.valid, 0.0, at=p * plane_in)
        self._format_channel_values(planes * lanes)
        acc = self._convolve(rs, cs, 0, planes)
        self._epilogue(acc, rs, cs, planes)
        if self.nchw_out:
            self._store_channel_rows(image, block, planes)
            return
        oh, ow = rows.out, cols.out
        dst = b.mul(b.add(b.mul(image, self.blocks), block), oh * ow * lanes)
        b.emit(npu.CopyOp, self.buf["out"], 0, self.out.value, dst, rows=planes * oh, cols=ow * lanes,
               **copy_strides(planes * oh, ow * lanes, self.out_pitch * lanes, ow * lanes))

    def _store_channel_rows(self, image: Index, block: Index, planes: int) -> None:
        """Whole output planes into an NCHW result: each plane's pixels (whole
        rows at the output pitch) made compact and transposed into its C0
        channels' rows, then the planes' channels, consecutive in GM, in one copy."""
        b, lanes, rows, cols = self.b, self.lanes, self.rows, self.cols
        oh, ow = rows.out, cols.out
        pixels, width, row = oh * ow, ow * lanes, self.out_pitch * lanes
        stride = round_up(pixels, 32 // dtypes.byte_width(self.dtype))
        plane_out, compact, channel_rows = rows.tile * row, self.buf["compact"], self.buf["planes_out"]
        for p in range(planes):
            b.emit(npu.VCopyOp, self.buf["out"], p * plane_out, compact, 0, rows=oh, cols=width,
                   **copy_strides(oh, width, row, width))
            b.emit(npu.VTransposeOp, compact, 0, channel_rows, p * lanes * stride, rows=pixels, cols=lanes,
                   strides=[lanes, stride])
            if self.mean is not None:
                self._plane_mean(pixels, p)
        channel = b.add(b.mul(image, self.c), b.mul(block, lanes))
        b.emit(npu.CopyOp, channel_rows, 0, self.out.value, b.mul(channel, pixels), rows=planes * lanes, cols=pixels,
               **copy_strides(planes * lanes, pixels, stride, pixels))
        if self.mean is not None:
            b.emit(npu.CopyOp, self.buf["means"], 0, self.mean.value, channel, cols=planes * lanes)

    def _plane_mean(self, pixels: int, plane: int) -> None:
        """The mean of each of the plane's C0 channels, into `means`: its compact
        pixels (rows of C0 lanes, just transposed out) folded in halves with
        `vadd` down to one pixel (log2(pixels) instructions, in place: the
        vector unit runs them after the transpose that read them), times 1 / pixels."""
        b, lanes, compact = self.b, self.lanes, self.buf["compact"]
        n = pixels
        while n > 1:
            half = n // 2
            b.emit(npu.VAddOp, compact, 0, compact, (n - half) * lanes, compact, 0, cols=half * lanes)
            n -= half
        b.emit(npu.VMulsOp, compact, 0, self.buf["means"], plane * lanes, cols=lanes, scalar=1.0 / pixels)

    def _load_moving(self, image: Index, block: Index, channels: int, rs: _Span, cs: _Span, first_row: Index,
                     first_col: Index) -> Index:
        """The tile's input rows when every row tile has the same body: the
        `extent` rows loaded are the tile's own moved down into the image
        (`start`: the tile's first row, clamped to [0, H - extent]), always at
        buffer row `top` (the rows a shift down can leave above the image); the
        rows above and below them hold zeros. Returns the element where the
        tile's first input row (a pad row or not) sits: the taps read from there."""
        b, rows, cols, lanes = self.b, self.rows, self.cols, self.lanes
        top, extent, row = rows.before, rows.extent(rs.n), self.pitch * lanes
        height = _buffer_rows(rows)
        if self.nchw_in and not self.nchw_out and channels < lanes:  # lanes past the channels: padding, zeros
            b.emit(npu.VDupOp, self.buf["in"], 0, cols=height * row, value=0.0)
        wanted = b.add(b.mul(first_row, rows.stride), -top)
        last = rows.size - extent
        start = b.min(b.max(wanted, 0), last)
        c0_, c1 = cs.valid
        in_col = b.add(b.mul(first_col, cols.stride), c0_ - cols.before)
        self._copy_in(image, block, channels, start, in_col, extent, c1 - c0_, (top * self.pitch + c0_) * lanes)
        # Zeros up to the pitch: the taps' reads at a run-time offset are then
        # covered by this iteration's writes, and npu-double-buffer alternates the buffer.
        self._pad_borders(height, self.pitch, (top, top + extent), cs.valid, 0.0)
        # wanted - start, as clamps npu-insert-sync bounds: [-top, 0] above the image, [0, bottom] below.
        above = b.max(b.min(wanted, 0), -top)
        below = b.min(b.max(b.add(wanted, -last), 0), rows.after)
        return b.mul(b.add(b.add(above, below), top), row)

    def _copy_channel_values(self, block: Index, channels: int) -> None:
        """The block's weights (C0 x KH*KW, GM order) and bias into UB."""
        b, lanes, window = self.b, self.lanes, self.g.window
        b.emit(npu.CopyOp, self.w.value, b.mul(block, lanes * window), self.buf["wraw"], 0, cols=channels * window)
        bias = self.buf.get("braw", self.buf.get("bias"))
        if bias is not None:
            b.emit(npu.CopyOp, self.bias_t.value, b.mul(block, lanes), bias, 0, cols=channels)

    def _format_channel_values(self, channels: int) -> None:
        """The weights as (KH*KW x C0) rows and the bias as one C0 row, in the
        accumulation type; the lanes past the last channel are zeros (written by
        the vector unit alone, which orders them itself)."""
        b, lanes, window = self.b, self.lanes, self.g.window
        raw, w = self.buf["wraw"], self.buf["w"]
        rows = self.buf.get("wt", w)
        if channels < lanes:
            b.emit(npu.VDupOp, rows, 0, cols=window * lanes, value=0.0)
        b.emit(npu.VTransposeOp, raw, 0, rows, 0, rows=channels, cols=window, strides=[window, max(channels, lanes)])
        if rows is not w:
            b.emit(npu.VCastOp, rows, 0, w, 0, cols=window * max(channels, lanes))
        if "braw" in self.buf:
            if channels < lanes:
                b.emit(npu.VDupOp, self.buf["bias"], 0, cols=lanes, value=0.0)
            cls = npu.VCastOp if self.acc_type != self.dtype else npu.VCopyOp
            b.emit(cls, self.buf["braw"], 0, self.buf["bias"], 0, cols=channels)

    def _convolve(self, rs: _Span, cs: _Span, base: Index, planes: int = 1):
        """acc = sum over the taps of input(tap) * weights(tap): a `vmul` into acc
        for the first tap, a `vmla` (acc += input * weights) for each other one;
        the tile's first input row at element `base` of the input buffer (of
        each of `planes` whole planes side by side)."""
        b, g, lanes = self.b, self.g, self.lanes
        source, acc = self.buf["in"], self.buf.get("out32", self.buf["out"])
        height = _buffer_rows(self.rows) if _moving(self.rows) else self.rows.extent(rs.n)
        plane_in, plane_out = height * self.pitch * lanes, self.rows.tile * self.out_pitch * lanes
        if self.acc_type != self.dtype:
            source = self.buf["in32"]
            b.emit(npu.VCastOp, self.buf["in"], 0, source, 0, cols=planes * plane_in)
        pixels, step = self._pixels(rs, cs), self.cols.stride * lanes
        for p in range(planes):
            for n, (i, j) in enumerate(self.taps):
                offset = p * plane_in + (i * g.dilations[0] * self.pitch + j * g.dilations[1]) * lanes
                tap = (i * g.kw + j) * planes * lanes + p * lanes
                b.emit(npu.VMlaOp if n else npu.VMulOp, source, b.add(base, offset), self.buf["w"], tap,
                       acc, p * plane_out, rows=pixels, cols=lanes, strides=[step, 0, lanes])
        return acc

    def _epilogue(self, acc, rs: _Span, cs: _Span, planes: int = 1) -> None:
        """acc + bias, the activation, rounded once into the output tile (of
        `planes` whole planes side by side: the bias plane by plane, the rest over all)."""
        b, lanes = self.b, self.lanes
        pixels = self._pixels(rs, cs)
        plane_out = self.rows.tile * self.out_pitch * lanes
        size = (planes - 1) * plane_out + pixels * lanes
        if "bias" in self.buf:
            for p in range(planes):
                b.emit(npu.VAddOp, acc, p * plane_out, self.buf["bias"], p * lanes, acc, p * plane_out, rows=pixels,
                       cols=lanes, strides=[lanes, 0, lanes])
        elif self.bias_splat is not None and self.bias_splat != 0.0:
            b.emit(npu.VAddsOp, acc, 0, acc, 0, cols=size, scalar=self.bias_splat)
        if self.act != "none":
            temps = [Tile(self.buf[f"t{i}"], 0, size) for i in range(self.temps)]

            def temp(element_type):
                if not temps or element_type != self.acc_type:
                    raise self.k.unsupported(f"activation {self.act!r} needs more scratch than the depthwise kernel has")
                return temps.pop()

            activate(VectorEmitter(b, 1, size, temp), self.act, Tile(acc, 0, size))
        if acc is not self.buf["out"]:
            b.emit(npu.VCastOp, acc, 0, self.buf["out"], 0, cols=size)

    # ---- estimate ------------------------------------------------------------------------------

    def estimate(self) -> float:
        """Cycles of the kernel as tiled (`_estimate`)."""
        return self._estimate(self.rows, self.cols)

    def _estimate(self, rows: _Dim, cols: _Dim) -> float:
        """Cycles of the kernel with tiles of rows.tile x cols.tile outputs, by the
        simulator's closed forms. A core's tiles form a pipeline (double
        buffering): the first tile's load, vector work and store one after the
        other, then each further tile the busiest of its load's data cycles, its
        vector work (and half its load's time, see below) and its store's data
        cycles (the transfers stream: their latency overlaps other tiles' work)."""
        hw, g, lanes, planes = self.k.hw, self.g, self.lanes, self.planes
        pitch = self._pitch(cols)
        out_pitch = rows.stride * pitch // cols.stride
        pixels = (rows.tile - 1) * out_pitch + cols.tile
        acc_bytes = dtypes.byte_width(self.acc_type)
        out_bytes = pixels * lanes * acc_bytes
        all_bytes = (planes - 1) * rows.tile * out_pitch * lanes * acc_bytes + out_bytes  # the planes' outputs
        height = rows.extent(rows.tile)
        per_plane = len(self.taps) * vector_cycles(hw, "binary", out_bytes)  # one vmul or vmla per live tap
        per_plane += 4 * vector_cycles(hw, "data_movement", 2 * height * lanes * acc_bytes)  # the padding, at most
        if self.bias_t is not None:
            per_plane += vector_cycles(hw, "binary", out_bytes)
        if self.acc_type != self.dtype:  # the input's cast
            per_plane += vector_cycles(hw, "unary", height * pitch * lanes * acc_bytes)
        if self.nchw_in or self.nchw_out:  # transposes to and from pixels of C0 lanes
            per_plane += 2 * vector_cycles(hw, "data_movement", height * pitch * lanes * acc_bytes)
        if self.mean is not None:  # the pixels folded in halves, the scaling (`_plane_mean`)
            per_plane += _fold_cycles(hw, rows.tile * cols.tile, lanes * acc_bytes)
        vector = planes * per_plane + vector_cycles(hw, "data_movement", g.window * planes * lanes * acc_bytes)
        if self.acc_type != self.dtype:  # the result's cast
            vector += vector_cycles(hw, "unary", all_bytes)
        if self.act != "none":
            steps = len(ACTIVATIONS.get(self.act, ())) or 4
            vector += steps * vector_cycles(hw, "scalar" if self.act in ("relu", "relu6") else "transcendental", all_bytes)
        itemsize = self.x.itemsize
        one_load = transfer_cost(hw, "gm_to_ub", height, cols.extent(cols.tile) * lanes * itemsize)
        load = one_load.cycles + (planes - 1) * one_load.data_cycles
        load_data = planes * one_load.data_cycles
        store = transfer_cost(hw, "ub_to_gm", planes * rows.tile, cols.tile * lanes * itemsize)
        scalar = planes * (len(self.taps) + 24) * hw.scalar_instruction_cycles + 20  # instructions and index math
        first = load + vector + store.cycles
        if self.mean is not None:  # the means' store after the tile's
            first += transfer_cost(hw, "ub_to_gm", 1, planes * lanes * itemsize).cycles
        # npu-insert-sync lets a tile's load overlap the vector work of the tile
        # before it in its loop iteration (ping, pong), but the next iteration's
        # first load waits for the last one's vector work: half a load's latency
        # per tile on top of its vector work.
        steady = max(load_data, vector + load / 2, store.data_cycles, scalar)
        return max(sum(first + (n - 1) * steady for n in runs) for runs in self._runs(rows, cols))

    def _runs(self, rows: _Dim, cols: _Dim) -> list[list[int]]:
        """Per core, its tiles in each group where it has some, as `emit` shares
        them out: a core's run in one group is one pipelined loop, its runs in
        different groups follow each other (they share its buffers)."""
        sizes = [group.size for group in self._groups(rows, cols)]
        total = sum(sizes)
        cores = min(total, self.k.hw.core_count)
        per_core = []
        for core in range(cores):
            start, end = core * total // cores, (core + 1) * total // cores
            runs, first = [], 0
            for size in sizes:
                n = min(end, first + size) - max(start, first)
                if n > 0:
                    runs.append(n)
                first += size
            per_core.append(runs)
        return per_core


def _fold_cycles(hw, pixels: int, pixel_bytes: int) -> float:
    """Vector cycles of `_plane_mean`: a `vadd` of half the pixels left per fold, one `vmuls`."""
    cycles, n = vector_cycles(hw, "scalar", pixel_bytes), pixels
    while n > 1:
        cycles += vector_cycles(hw, "binary", n // 2 * pixel_bytes)
        n -= n // 2
    return cycles


def live_taps(size: int, out: int, kernel: int, stride: int, dilation: int, before: int) -> list[int]:
    """The window positions along one dim at which some output reads inside the
    image; at the others every output reads padding (a 5x5 window over a 2x2
    map padded by 2 reads the image at 3 of its 5 rows), their products are
    zeros and their instructions are left out (one is kept if none is live: it
    initialises the accumulator)."""
    live = [i for i in range(kernel) if any(0 <= o * stride + i * dilation - before < size for o in range(out))]
    return live or [0]


def plan_depthwise(k: KernelContext, g, x, w, bias, residual, out, act: str, mean: GmTensor | None = None
                   ) -> DepthwiseKernel:
    """The depthwise kernel's plan (with the output's per-channel `mean` if given);
    ValueError says why there is none."""
    problem = depthwise_problem(g, x, w, bias, residual, out)
    if problem is not None:
        raise ValueError(problem)
    return DepthwiseKernel(k, g, x, w, bias, out, act, mean)

