"""A depthwise convolution over several channel blocks side by side in UB: what
the two joined forms of a depthwise convolution and a 1x1 one share
(`depthwise_pointwise.py`: the depthwise output as a product's A, a K chunk at
a time; `expand_depthwise.py`: the depthwise convolution of an expand
product's whole planes).

The blocks' zero-padded slabs lie one after another in a `slab` buffer, their
accumulators in an `acc` buffer, as the depthwise kernel lays out one plane
(`depthwise_conv.py`: pitch P pixels per slab row, output pixel r of a row of
Q = stride_h * P / stride_w reading slab pixel stride_w * r + tap); the
weights of all the blocks are one copy and one `vtranspose` into KH*KW rows
of their channels, the bias one copy; per block a `vmul` / `vmla` per window
tap and the bias, then the activation over every block at once.
"""

from __future__ import annotations

from ....dialects import npu
from ....dialects.ge.formats import Format
from ..context import GmTensor
from ..kernel_builder import Index, KernelBuilder
from ..vector_emitter import Tile, VectorEmitter
from .conv import ConvGeometry, if_less
from .copy_layout import round_up
from .cube import activate
from .depthwise_conv import ACT_TEMPS, live_taps


class DepthwiseBlocks:
    """The depthwise convolution `g` (weights `w`, `bias`, activation `act`) of
    channel blocks side by side (see the module docstring). Construction raises
    ValueError for a case it does not take."""

    def __init__(self, g: ConvGeometry, w: GmTensor, bias: GmTensor | None, act: str):
        if g.groups != g.c or g.o != g.c:
            raise ValueError(f"not depthwise ({g.c} channels in {g.groups} groups)")
        if act not in ACT_TEMPS:
            raise ValueError(f"activation {act!r} after the depthwise convolution")
        if w.format != Format.ND:
            raise ValueError(f"{w.format.value} depthwise weights ((C, 1, KH, KW) are read)")
        if bias is not None and bias.splat() is None and bias.format != Format.ND:
            raise ValueError(f"a {bias.format.value} depthwise bias")
        self.g, self.w, self.bias_t, self.act = g, w, bias, act
        self.lanes = g.c0
        self.blocks = -(-g.c // g.c0)
        sw = g.strides[1]
        self.pitch = round_up(g.w + g.pads[1] + g.pads[3], sw)  # slab pixels per row
        self.out_pitch = g.strides[0] * self.pitch // sw  # accumulator pixels per output row
        self.bias_splat = None if bias is None else bias.splat()
        self.temps = ACT_TEMPS[act]
        self.taps = [
            (i, j)
            for i in live_taps(g.h, g.oh, g.kh, g.strides[0], g.dilations[0], g.pads[0])
            for j in live_taps(g.w, g.ow, g.kw, sw, g.dilations[1], g.pads[1])
        ]

    def channel_sizes(self, blocks: int, acc: int) -> dict[str, int]:
        """Elements of the weights', bias' and activation's buffers of `blocks`
        blocks whose accumulators take `acc` elements."""
        window, width = self.g.window, blocks * self.lanes
        sizes = {"wraw": round_up(width * window, 8), "w": window * width}
        if self.bias_t is not None and self.bias_splat is None:
            sizes["bias"] = width
        for i in range(self.temps):
            sizes[f"t{i}"] = acc
        return sizes

    def channel_values(self, b: KernelBuilder, buf: dict, first_block: Index, blocks: int) -> None:
        """The weights of blocks first_block .. + blocks as KH*KW rows of their
        channels, and their bias row; lanes past the last channel are zeros (the
        last block of C channels, not a multiple of C0)."""
        g, lanes, window = self.g, self.lanes, self.g.window
        tail = g.c - (self.blocks - 1) * lanes
        width = blocks * lanes

        def load(channels: int) -> None:
            b.emit(npu.CopyOp, self.w.value, b.mul(first_block, lanes * window), buf["wraw"], 0, cols=channels * window)
            if channels < width:
                b.emit(npu.VDupOp, buf["w"], 0, cols=window * width, value=0.0)
            b.emit(npu.VTransposeOp, buf["wraw"], 0, buf["w"], 0, rows=channels, cols=window, strides=[window, width])
            if "bias" in buf:
                if channels < width:
                    b.emit(npu.VDupOp, buf["bias"], 0, cols=width, value=0.0)
                b.emit(npu.CopyOp, self.bias_t.value, b.mul(first_block, lanes), buf["bias"], 0, cols=channels)

        if tail == lanes:
            load(width)
            return
        end = b.add(first_block, blocks)
        if_less(b, [(end, self.blocks)], lambda: load(width))
        if_less(b, [(self.blocks - 1, end)], lambda: load(width - lanes + tail))

    def convolve(self, b: KernelBuilder, buf: dict, blocks: int, out_rows: int, slab: int, acc: int) -> None:
        """acc = act(sum over the taps of slab(tap) * weights(tap) + bias) for
        `out_rows` output rows of each block (slabs `slab`, accumulators `acc`
        elements apart)."""
        g, lanes = self.g, self.lanes
        pixels = (out_rows - 1) * self.out_pitch + g.ow
        step, width = g.strides[1] * lanes, blocks * lanes
        for k in range(blocks):
            for n, (i, j) in enumerate(self.taps):
                offset = k * slab + (i * g.dilations[0] * self.pitch + j * g.dilations[1]) * lanes
                b.emit(npu.VMlaOp if n else npu.VMulOp, buf["slab"], offset, buf["w"], (i * g.kw + j) * width + k * lanes,
                       buf["acc"], k * acc, rows=pixels, cols=lanes, strides=[step, 0, lanes])
            if "bias" in buf:
                b.emit(npu.VAddOp, buf["acc"], k * acc, buf["bias"], k * lanes, buf["acc"], k * acc, rows=pixels,
                       cols=lanes, strides=[lanes, 0, lanes])
        size = (blocks - 1) * acc + pixels * lanes
        if "bias" not in buf and self.bias_splat:
            b.emit(npu.VAddsOp, buf["acc"], 0, buf["acc"], 0, cols=size, scalar=self.bias_splat)
        if self.act != "none":
            temps = [Tile(buf[f"t{i}"], 0, size) for i in range(self.temps)]
            activate(VectorEmitter(b, 1, size, lambda _type: temps.pop()), self.act, Tile(buf["acc"], 0, size))

