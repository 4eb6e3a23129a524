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
  tap is ONE `vmul` over the whole tile (source row stride sw * C0, the tap's C0
  weights read with row stride 0) and one `vadd` into the accumulator;
* the weights of the plane's C0 channels, (C0 x KH*KW) in GM, are loaded once
  per tile and turned into (KH*KW x C0) rows by one `vtranspose`;
* bias (one C0 row, row stride 0) and the activation are applied to the whole
  tile, which is rounded once (fp16 works in fp32, as the reference does).

Dilation enters as the effective window (KH - 1) * dh + 1 of the shared tiling
and as the taps' offsets. A residual is not fused here (`depthwise_problem`
says so: the fusion keeps the add a separate kernel).
"""

from __future__ import annotations

from xdsl.dialects.builtin import f32

from ....core import dtypes
from ....dialects import npu
from ....dialects.ge.formats import Format, c0
from ....simulator.npu.costs import transfer_cycles, vector_cycles
from ..context import GmTensor, KernelContext
from ..kernel_builder import Index
from ..vector_emitter import Tile, VectorEmitter
from .copy_layout import round_up
from .cube import activate
from .pooling import _Dim, _PoolKernel, _Span

ACT_TEMPS = {"none": 0, "relu": 0, "relu6": 0, "sigmoid": 0, "hard_swish": 1}
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


class DepthwiseKernel(_PoolKernel):
    """The plan of one depthwise convolution kernel (tiles chosen on construction:
    a ValueError-free construction means the kernel fits)."""

    def __init__(self, k: KernelContext, g, x: GmTensor, w: GmTensor, bias: GmTensor | None, out: GmTensor, act: str):
        self.k, self.b, self.g = k, k.b, g
        self.x, self.w, self.bias_t, self.out, self.act = x, w, bias, out, act
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
        self._choose_tiles()

    def _title(self) -> str:
        g = self.g
        return f"depthwise conv {g.kh}x{g.kw} (vector unit, {2 * g.window - 1} instructions per tile)"

    # ---- buffers -------------------------------------------------------------------------------

    def _buffers(self, rows: _Dim, cols: _Dim) -> dict[str, tuple[int, object]]:
        buffers = super()._buffers(rows, cols)
        out_elements = buffers["out"][0]
        window, lanes = self.g.window, self.lanes
        buffers["prod"] = (out_elements, self.acc_type)
        buffers["wraw"] = (lanes * round_up(window, 32 // dtypes.byte_width(self.dtype)), self.dtype)
        buffers["w"] = (window * lanes, self.acc_type)
        if self.acc_type != self.dtype:
            buffers["wt"] = (window * lanes, self.dtype)
        if self.bias_t is not None and self.bias_splat is None:
            buffers["braw"] = (lanes, self.dtype)
            buffers["bias"] = (lanes, self.acc_type)
        for i in range(self.temps):
            buffers[f"t{i}"] = (out_elements, self.acc_type)
        return buffers

    # ---- one tile ------------------------------------------------------------------------------

    def _tile(self, image: Index, block: Index, channels: int, rs: _Span, cs: _Span, first_row: Index, first_col: Index) -> None:
        self._load(image, block, channels, rs, cs, first_row, first_col)
        self._load_channel_values(block)
        acc = self._convolve(rs, cs)
        self._epilogue(acc, rs, cs)
        self._store(image, block, channels, rs, cs, first_row, first_col)

    def _load_channel_values(self, block: Index) -> None:
        """The plane's weights as (KH*KW x C0) rows and its bias as one C0 row, in
        the accumulation type; lanes past the last channel are zeros."""
        b, lanes, window = self.b, self.lanes, self.g.window
        raw, w = self.buf["wraw"], self.buf["w"]
        self._per_block_copy(self.w.value, block, window, raw)
        if self.acc_type == self.dtype:
            b.emit(npu.VTransposeOp, raw, 0, w, 0, rows=lanes, cols=window, strides=[window, lanes])
        else:
            scratch = self.buf["wt"]
            b.emit(npu.VTransposeOp, raw, 0, scratch, 0, rows=lanes, cols=window, strides=[window, lanes])
            b.emit(npu.VCastOp, scratch, 0, w, 0, cols=window * lanes)
        if "bias" not in self.buf:
            return
        braw, bias = self.buf["braw"], self.buf["bias"]
        self._per_block_copy(self.bias_t.value, block, 1, braw)
        b.emit(npu.VCastOp if self.acc_type != self.dtype else npu.VCopyOp, braw, 0, bias, 0, cols=lanes)

    def _per_block_copy(self, src, block: Index, per_channel: int, dst) -> None:
        """The `per_channel` values of each channel of `block` from GM -> `dst`; the
        last block of fewer channels is zero-filled first (a branch when the block is
        known at run time only)."""
        b, lanes = self.b, self.lanes
        tail = self.c - (self.blocks - 1) * lanes
        offset = b.mul(block, lanes * per_channel)

        def copy(channels: int) -> None:
            if channels < lanes:
                b.emit(npu.VDupOp, dst, 0, cols=lanes * per_channel, value=0.0)
            b.emit(npu.CopyOp, src, offset, dst, 0, cols=channels * per_channel)

        if tail == lanes or self.blocks == 1 or isinstance(block, int):
            last = self.blocks == 1 or (isinstance(block, int) and block == self.blocks - 1)
            copy(tail if last else lanes)
            return
        with b.when(b.less_than(block, self.blocks - 1)):
            copy(lanes)
        with b.when(b.equals(block, self.blocks - 1)):
            copy(tail)

    def _convolve(self, rs: _Span, cs: _Span):
        """acc = sum over the taps of input(tap) * weights(tap): one `vmul` per tap
        (into acc for the first, into `prod` then a `vadd` for the others)."""
        b, g, lanes = self.b, self.g, self.lanes
        source, acc, prod = self.buf["in"], self.buf.get("out32", self.buf["out"]), self.buf["prod"]
        if self.acc_type != self.dtype:
            source = self.buf["in32"]
            size = self.rows.extent(rs.n) * self.pitch * lanes
            b.emit(npu.VCastOp, self.buf["in"], 0, source, 0, cols=size)
        pixels, step = self._pixels(rs, cs), self.cols.stride * lanes
        for i in range(g.kh):
            for j in range(g.kw):
                offset = (i * g.dilations[0] * self.pitch + j * g.dilations[1]) * lanes
                tap = (i * g.kw + j) * lanes
                dst = acc if i == j == 0 else prod
                b.emit(npu.VMulOp, source, offset, self.buf["w"], tap, dst, 0,
                       rows=pixels, cols=lanes, strides=[step, 0, lanes])
                if dst is prod:
                    b.emit(npu.VAddOp, acc, 0, prod, 0, acc, 0, cols=pixels * lanes)
        return acc

    def _epilogue(self, acc, rs: _Span, cs: _Span) -> None:
        """acc + bias, the activation, rounded once into the output tile."""
        b, lanes = self.b, self.lanes
        pixels = self._pixels(rs, cs)
        if "bias" in self.buf:
            b.emit(npu.VAddOp, acc, 0, self.buf["bias"], 0, acc, 0, rows=pixels, cols=lanes, strides=[lanes, 0, lanes])
        elif self.bias_splat is not None and self.bias_splat != 0.0:
            b.emit(npu.VAddsOp, acc, 0, acc, 0, cols=pixels * lanes, scalar=self.bias_splat)
        if self.act != "none":
            temps = [Tile(self.buf[f"t{i}"], 0, pixels * lanes) for i in range(self.temps)]

            def temp(element_type):
                if not temps or element_type != self.acc_type:
                    raise self.k.unsupported(f"activation {self.act!r} needs more scratch than the depthwise kernel has")
                return temps.pop()

            activate(VectorEmitter(b, 1, pixels * lanes, temp), self.act, Tile(acc, 0, pixels * lanes))
        if acc is not self.buf["out"]:
            b.emit(npu.VCastOp, acc, 0, self.buf["out"], 0, cols=pixels * lanes)

    # ---- estimate ------------------------------------------------------------------------------

    def estimate(self) -> float:
        """Cycles of the kernel by the simulator's closed forms: per tile the busier
        of the vector pipe and the GM transfers (double buffering overlaps them),
        the tiles shared out among the cores, plus one tile's transfers (the
        pipeline's fill and drain)."""
        hw, g, lanes = self.k.hw, self.g, self.lanes
        rows, cols = self.rows, self.cols
        pixels = (rows.tile - 1) * self.out_pitch + cols.tile
        acc_bytes = dtypes.byte_width(self.acc_type)
        out_bytes = pixels * lanes * acc_bytes
        in_bytes = rows.extent(rows.tile) * self.pitch * lanes * acc_bytes
        vector = (2 * g.window - 1) * vector_cycles(hw, "binary", out_bytes)
        vector += vector_cycles(hw, "data_movement", in_bytes)  # the tile's padding
        vector += 2 * vector_cycles(hw, "binary", out_bytes)  # bias, rounding
        if self.act != "none":
            vector += 4 * vector_cycles(hw, "transcendental", out_bytes)
        itemsize = self.x.itemsize
        load = transfer_cycles(hw, "gm_to_ub", rows.extent(rows.tile), cols.extent(cols.tile) * lanes * itemsize)
        store = transfer_cycles(hw, "ub_to_gm", rows.tile, cols.tile * lanes * itemsize)
        tiles = self.n * self.blocks * rows.count * cols.count
        per_core = -(-tiles // min(tiles, hw.core_count))
        return per_core * max(vector, load, store) + load + store


def plan_depthwise(k: KernelContext, g, x, w, bias, residual, out, act: str) -> DepthwiseKernel:
    """The depthwise kernel's plan; ValueError says why there is none."""
    problem = depthwise_problem(g, x, w, bias, residual, out)
    if problem is not None:
        raise ValueError(problem)
    return DepthwiseKernel(k, g, x, w, bias, out, act)

