"""`fused.expand_depthwise_project`: a whole inverted-residual block (expand 1x1
convolution, depthwise convolution, project 1x1 convolution, residual) in one
kernel, a band of output rows per item, nothing between the three
convolutions leaving the core.

Where the block's maps are large and its channels few (MobileNetV2's 32x32 to
8x8 blocks: 16..32 channels expanded to 96..192), the weights of both 1x1
convolutions fit L0B together and a core can compute every channel of a band
of rows. An item is (image, band of `rows` output rows); each core loads the
weights once and walks its items:

    MTE2  (once) both 1x1 weights (FRACTAL_Z) -> L1 -> L0B; biases, depthwise weights -> UB
    per item:
      MTE2  the band's input rows, with the window's halo, clamped into the image
            (NC1HWC0) -> L1; MTE1 -> L0A
      M     expand = x @ We                                      -> L0C
      V     fixpipe -> UB (pixels x channels, row-major), + bias, activation
      V     each slab row (zero-padded, `pitch` pixels) from its expanded row,
            rows outside the image zeroed
      V     a vmul / vmla per window tap over all channels at once, + bias,
            activation (`DepthwiseBlocks` with one block of every channel)
      MTE3  the depthwise rows -> L1 (row-major); MTE1 -> L0A
      M     project = dw @ Wp                                    -> L0C
      V     fixpipe per C0 block -> UB (NC1HWC0 blocks), + bias, + residual, activation
      MTE3  -> GM

so the expanded and the depthwise tensors never go to GM and the block is one
phase instead of two or three. The rows of the halo are expanded again by the
band next to them (the estimate counts it).

Legality is `plan` (THE predicate, asked by `fused-depthwise-pointwise` and by
the lowering): fp32 NC1HWC0 input and result, FRACTAL_Z 1x1 weights, (C, 1,
KH, KW) depthwise weights, activations the depthwise kernel's scratch covers,
and the buffers of some band height dividing the output rows fitting L0A, L0B,
L0C, L1 and UB.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import f32

from ....dialects import fused, npu
from ....dialects.fused.base import activate as reference_activate
from ....dialects.ge.formats import Format, c0 as c0_of
from ....simulator.hardware import HardwarePreset
from ....simulator.npu.costs import mmad_cycles, stream_cycles, transfer_cost, vector_cycles
from ...tiling import FRACTAL, round_up
from ..context import GmTensor, KernelContext
from ..kernel_builder import Index, KernelBuilder
from ..vector_emitter import Tile, VectorEmitter
from .conv import ConvGeometry, _fz_weights, _image_view, if_less
from .cube import activate
from .cube_kernel import for_core_items
from .cube_operands import ND, MatrixView
from .depthwise_blocks import DepthwiseBlocks
from .depthwise_conv import ACT_TEMPS
from .registry import kernel_for


@dataclass(frozen=True)
class BlockShape:
    """The block's sizes: input (n, cin, h, w), expanded channels c, output
    (cout, oh, ow), and the depthwise geometry `dw` (of the whole image)."""

    n: int
    cin: int
    h: int
    w: int
    c: int
    cout: int
    oh: int
    ow: int
    c0: int
    dw: ConvGeometry

    @property
    def cpad(self) -> int:
        return round_up(self.c, self.c0)


@dataclass(frozen=True)
class Segment:
    """Output columns [first, first + width) of a band: its slab covers input
    columns [iw0, iw0 + slab width), of which [lo, hi) are inside the image."""

    first: int
    iw0: int
    lo: int
    hi: int


class Band:
    """An item's shape: `rows` output rows x `segments` column segments of the
    output, its depthwise convolution (`d`: one block of every channel, over the
    slab of one segment, whose padding columns are explicit zeros), its buffers
    and costs (sizes in elements). ValueError: a segment reads only padding."""

    def __init__(self, s: BlockShape, rows: int, segments: int, dw_w: GmTensor, dw_bias: GmTensor | None,
                 dw_act: str, acts: tuple[str, ...] = ()):
        g = s.dw
        self.s, self.rows, self.segments = s, rows, segments
        self.width = s.ow // segments  # output columns of a segment
        self.slab_width = (self.width - 1) * g.strides[1] + (g.kw - 1) * g.dilations[1] + 1
        pads = (g.pads[0], 0, g.pads[2], 0)
        seg = ConvGeometry(g.n, g.c, g.h, self.slab_width, g.c, g.kh, g.kw, g.oh, self.width, g.strides, pads,
                           g.dilations, g.c, s.cpad)
        self.d = DepthwiseBlocks(seg, dw_w, dw_bias, dw_act)
        self.temps = max(ACT_TEMPS[a] for a in (dw_act, *acts, "none")) or 1  # scratch tiles of the activations
        self.segs = []
        for i in range(segments):
            first = i * self.width
            iw0 = first * g.strides[1] - g.pads[1]
            lo, hi = max(iw0, 0), min(iw0 + self.slab_width, s.w)
            if hi <= lo:
                raise ValueError(f"output columns {first}.. read only padding")
            self.segs.append(Segment(first, iw0, lo, hi))
        self.slab_rows = seg.slab_rows(rows)
        self.in_rows = min(self.slab_rows, s.h)
        self.ew = max(x.hi - x.lo for x in self.segs)  # expanded columns, at most
        self.m1 = self.in_rows * self.ew  # expanded pixels, at most
        self.m2 = rows * self.width  # output pixels
        self.pixels = (rows - 1) * self.d.out_pitch + self.width  # accumulator pixels of the depthwise
        self.cin16, self.c16, self.o16 = (round_up(v, FRACTAL) for v in (s.cin, s.c, s.cout))
        self.oblocks = -(-s.cout // s.c0)

    def sizes(self) -> dict[str, dict[str, int]]:
        """Elements of each buffer, by memory."""
        s, d, cpad = self.s, self.d, self.s.cpad
        acc = self.pixels * cpad
        exp, out = self.m1 * cpad, self.oblocks * self.m2 * s.c0
        ub = {"exp": exp, "slab": self.slab_rows * d.pitch * cpad, "acc": acc, "out": out,
              **d.channel_sizes(1, acc), "ebias": cpad, "orow": out, "obias": self.oblocks * s.c0}
        for i in range(self.temps):
            ub[f"t{i}"] = max(ub["slab"], acc, out)
        ub["res"] = out
        return {
            "l1": {"x": -(-s.cin // s.c0) * self.m1 * s.c0, "we": self.cin16 * self.c16, "wp": self.c16 * self.o16,
                   "a2": self.m2 * cpad},
            "l0a": {"x": self.m1 * self.cin16, "a2": self.m2 * self.c16},
            "l0b": {"we": self.cin16 * self.c16, "wp": self.c16 * self.o16},
            "l0c": {"e": self.m1 * self.c16, "p": self.m2 * self.o16},
            "ub": ub,
        }

    def fits(self, hw: HardwarePreset) -> str | None:
        """Why the band's buffers do not fit (None: they do); 512 bytes of
        alignment slack per buffer."""
        for space, buffers in self.sizes().items():
            need = sum(4 * v + 512 for v in buffers.values())
            if need > hw.capacity(space):
                return f"{space} ({need} bytes for bands of {self.rows} rows)"
        return None

    def cycles(self, hw: HardwarePreset, items_per_core: int) -> float:
        """A core's cycles: the weights loaded once, then its items one after the
        other (a pipe's work waits for the one before it within an item)."""
        s, d = self.s, self.d
        lat = hw.paths["gm_to_l1"].latency
        once = lat + stream_cycles(hw, "gm_to_l1", 1, 4 * (self.cin16 * self.c16 + self.c16 * self.o16))
        once += stream_cycles(hw, "l1_to_l0b", 1, 4 * (self.cin16 * self.c16 + self.c16 * self.o16))
        once += stream_cycles(hw, "gm_to_ub", 1, 4 * s.c * s.dw.window)  # its latency under the first product
        cpad_bytes = 4 * s.cpad
        c1 = -(-s.cin // s.c0)
        item = transfer_cost(hw, "gm_to_l1", c1 * (1 if self.ew == s.w else self.in_rows), 4 * self.ew * s.c0).cycles
        item += stream_cycles(hw, "l1_to_l0a", c1, 4 * self.m1 * s.c0)
        item += mmad_cycles(hw, self.m1, s.c, s.cin, "fp32")
        item += vector_cycles(hw, "data_movement", self.m1 * cpad_bytes)  # fixpipe
        item += self.slab_rows * vector_cycles(hw, "binary", self.ew * cpad_bytes)  # + bias into the slab
        if s.dw.kh and self.segments > 1:
            item += 2 * vector_cycles(hw, "data_movement", self.slab_rows * cpad_bytes)  # padding columns zeroed
        item += 2 * vector_cycles(hw, "scalar", self.slab_rows * d.pitch * cpad_bytes)  # activation
        acc_bytes = self.pixels * cpad_bytes
        item += (len(d.taps) + 1) * vector_cycles(hw, "binary", acc_bytes)
        if d.act != "none":
            item += 2 * vector_cycles(hw, "scalar", acc_bytes) * (1 + d.temps)
        item += hw.paths["ub_to_l1"].latency + stream_cycles(hw, "ub_to_l1", self.rows, self.width * cpad_bytes)
        item += stream_cycles(hw, "l1_to_l0a", self.m2, cpad_bytes)
        item += mmad_cycles(hw, self.m2, s.cout, s.c, "fp32")
        out_bytes = 4 * self.oblocks * self.m2 * s.c0
        item += (self.oblocks + 1) * vector_cycles(hw, "data_movement", 4 * self.m2 * s.c0)  # fixpipe, into blocks
        item += 3 * vector_cycles(hw, "binary", out_bytes)
        stores = 1 if self.width == s.ow else self.rows
        item += transfer_cost(hw, "ub_to_gm", self.oblocks * stores, 4 * self.m2 * s.c0 // stores).cycles
        scalar = (len(d.taps) + 4 * self.slab_rows + 40 + self.in_rows + 2 * self.rows) * hw.scalar_instruction_cycles
        return once + items_per_core * max(item, scalar)


class BlockKernel:
    """The operands of the op seen by the kernel (see the module docstring);
    construction raises ValueError for a case it does not take."""

    def __init__(self, op: fused.ExpandDepthwiseProjectOp, k: KernelContext):
        t = dict(zip(op.present_operand_names(), k.inputs))
        x, we, dw_w, wp, out = t["input"], t["weight"], t["dw_weight"], t["pw_weight"], k.outputs[0]
        if x.element_type != f32 or out.element_type != f32:
            raise ValueError(f"{x.element_type} tensors (the block kernel computes fp32)")
        if x.format != Format.NC1HWC0 or out.format != Format.NC1HWC0:
            raise ValueError(f"a {x.format.value} input and a {out.format.value} result (NC1HWC0 are read and written)")
        if we.format != Format.FRACTAL_Z or wp.format != Format.FRACTAL_Z:
            raise ValueError(f"{we.format.value} and {wp.format.value} 1x1 weights (FRACTAL_Z are read)")
        residual = t.get("residual")
        if residual is not None and residual.format != Format.NC1HWC0:
            raise ValueError(f"a {residual.format.value} residual (NC1HWC0 is read)")
        for name in ("bias", "pw_bias"):
            v = t.get(name)
            if v is not None and v.splat() is None and v.format != Format.ND:
                raise ValueError(f"a {v.format.value} {name}")
        a = op.attr_values()
        n, cin, h, w = x.shape
        c = we.shape[0]
        _, _, kh, kw = dw_w.shape
        _, cout, oh, ow = out.shape
        c0 = c0_of(x.element_type)
        if a.act not in ACT_TEMPS or a.pw_act not in ACT_TEMPS:
            raise ValueError(f"activations {a.act!r}, {a.pw_act!r} around the depthwise convolution")
        if reference_activate(a.act, np.zeros(1, np.float32))[0] != 0:
            raise ValueError(f"an expand activation {a.act!r} not zero at zero (it runs over the slab's padding)")
        dw = ConvGeometry(n, c, h, w, c, kh, kw, oh, ow, tuple(a.strides), tuple(a.pads), tuple(a.dilations), c,
                          round_up(c, c0))
        self.s = BlockShape(n, cin, h, w, c, cout, oh, ow, c0, dw)
        self.dw_w, self.dw_bias, self.dw_act = dw_w, t.get("dw_bias"), a.dw_act
        DepthwiseBlocks(dw, dw_w, self.dw_bias, a.dw_act)  # the depthwise case is one it takes
        self.x, self.out, self.residual = x, out, residual
        self.bias, self.pw_bias = t.get("bias"), t.get("pw_bias")
        self.act, self.pw_act = a.act, a.pw_act
        mid = ConvGeometry(n, cin, h, w, c, 1, 1, h, w, (1, 1), (0, 0, 0, 0), (1, 1), 1, c0)
        proj = ConvGeometry(n, c, oh, ow, cout, 1, 1, oh, ow, (1, 1), (0, 0, 0, 0), (1, 1), 1, c0)
        self.image = _image_view(x, mid, True, channels=(cin, cin))
        self.we = _fz_weights(we, mid, transposed=True)
        self.wp = _fz_weights(wp, proj, transposed=True)

    def band(self, rows: int, segments: int) -> Band:
        return Band(self.s, rows, segments, self.dw_w, self.dw_bias, self.dw_act, (self.act, self.pw_act))

    def bands(self, hw: HardwarePreset) -> list[tuple[float, Band, int, int]]:
        """(estimated cycles, band, items, cores) of each band (output rows x column
        segments, each dividing the output's) that fits."""
        s, cores = self.s, hw.core_count
        found = []
        for rows in (r for r in range(1, s.oh + 1) if s.oh % r == 0):
            for segments in (c for c in range(1, s.ow + 1) if s.ow % c == 0):
                try:
                    band = self.band(rows, segments)
                except ValueError:
                    continue
                if band.fits(hw) is not None:
                    continue
                items = s.n * (s.oh // rows) * segments
                per_core = -(-items // cores)
                found.append((band.cycles(hw, per_core), band, items, -(-items // per_core)))
        return found


def plan(op: fused.ExpandDepthwiseProjectOp, k: KernelContext) -> tuple[BlockKernel, Band, int, int, float]:
    """(the kernel's operands, its band, items, cores, estimated cycles): THE
    predicate of the form, asked by `fused-depthwise-pointwise` and by the
    lowering. ValueError: no kernel (why)."""
    kernel = BlockKernel(op, k)
    bands = kernel.bands(k.hw)
    if not bands:
        raise ValueError(f"no band of output rows fits: {kernel.band(1, kernel.s.ow).fits(k.hw)}")
    estimate, band, items, cores = min(bands, key=lambda found: (found[0], found[2]))
    return kernel, band, items, cores, estimate


@kernel_for(fused.ExpandDepthwiseProjectOp)
def lower_expand_depthwise_project(op: fused.ExpandDepthwiseProjectOp, k: KernelContext) -> None:
    try:
        kernel, band, items, cores, estimate = plan(op, k)
    except ValueError as e:
        raise k.unsupported(str(e)) from None
    k.explain(f"inverted-residual block in one kernel, bands of {band.rows} output rows, {items} items on {cores} "
              f"cores: estimated {estimate:.0f} cycles")
    k.block_dim = cores
    _Emitter(k.b, kernel, band).emit(items, -(-items // cores), cores)


class _Emitter:
    def __init__(self, b: KernelBuilder, kernel: BlockKernel, band: Band):
        self.b, self.k, self.band, self.s, self.d = b, kernel, band, kernel.s, band.d
        self.buf = {space: {name: b.alloc([size], f32, space, f"blk_{space}_{name}") for name, size in sizes.items()}
                    for space, sizes in band.sizes().items()}
        self.rezero = False  # whether a segment's padding columns are zeroed per item (set by `emit`)

    def emit(self, items: int, per_core: int, cores: int) -> None:
        """The expand weights first, then each item; the rest of what a core loads
        once comes after its first item's input rows and expand product (MTE2
        issues in order, and a flag may hold a pipe until the transfers before
        it land: the first product waits for neither the project weights nor
        the depthwise ones). An item's column segment is a static branch (its
        columns inside the image are known at compile time)."""
        b, band = self.b, self.band
        self._weights(self.k.we, "we", self.s.cin, self.s.c, band.c16, to_l0=False)
        self._weights(self.k.we, "we", self.s.cin, self.s.c, band.c16)
        ub = self.buf["ub"]  # the vector unit is idle until the first expand product: zero what needs it now
        b.emit(npu.VDupOp, ub["slab"], 0, cols=band.sizes()["ub"]["slab"], value=0.0)
        if self.s.cout % self.s.c0:
            b.emit(npu.VDupOp, ub["out"], 0, cols=band.sizes()["ub"]["out"], value=0.0)
        first = b.mul(b.block_idx(), per_core) if cores > 1 else 0
        self.rezero = band.segments > 1 and per_core > 1  # another segment's item may have written them

        def item(index: Index) -> None:
            if band.segments == 1:
                self._item(index, band.segs[0], index, first, per_core)
                return
            which = b.rem(index, band.segments)
            for seg in band.segs:
                with b.when(b.equals(which, seg.first // band.width)):
                    self._item(b.floordiv(index, band.segments), seg, index, first, per_core)

        for_core_items(b, items, per_core, cores, item)

    # ---- once per core ----

    def _weights(self, view: MatrixView, name: str, rows: int, cols: int, l0_stride: int, to_l0: bool = True) -> None:
        """A 1x1 convolution's weights into L1 and (`to_l0`) L0B."""
        l1, l0b = self.buf["l1"], self.buf["l0b"]
        l1_stride = view.l1_stride(rows, cols)
        if not to_l0:
            view.stage_to_l1(self.b, 0, 0, rows, 0, cols, l1[name], l1_stride)
            return
        view.load_to_l0(self.b, l1[name], l1_stride, 0, rows, 0, cols, l0b[name], l0_stride)

    def _once(self) -> None:
        """The project weights into L1, the biases and depthwise weights into UB
        (lanes past the channels are zeros in the biases only where the channels
        leave some)."""
        b, s, band, k, ub = self.b, self.s, self.band, self.k, self.buf["ub"]
        self._weights(k.wp, "wp", s.c, s.cout, band.o16, to_l0=False)
        self.d.channel_values(b, ub, 0, 1)
        for name, tensor, width in (("ebias", k.bias, s.cpad), ("obias", k.pw_bias, band.oblocks * s.c0)):
            if tensor is not None and tensor.splat() is None:
                if width != tensor.shape[0]:
                    b.emit(npu.VDupOp, ub[name], 0, cols=width, value=0.0)
                b.emit(npu.CopyOp, tensor.value, 0, ub[name], 0, cols=tensor.shape[0])

    # ---- an item ----

    def _item(self, place: Index, seg: Segment, index: Index, first: Index, per_core: int) -> None:
        """Item `index` (band `place` of its image) in column segment `seg`; the
        core's one-time loads after the first item's expand product."""
        b, s, band = self.b, self.s, self.band
        bands = s.oh // band.rows
        image = b.floordiv(place, bands) if s.n > 1 else 0
        oh0 = b.mul(b.rem(place, bands), band.rows) if bands > 1 else 0
        ih0 = b.sub(b.mul(oh0, s.dw.strides[0]), s.dw.pads[0])  # the slab's first row (may be outside)
        ih_c = b.max(0, b.min(ih0, s.h - band.in_rows))  # the expanded rows' first, inside the image
        ew = seg.hi - seg.lo
        self._expand(image, ih_c, seg)
        if per_core == 1:
            self._once()
        else:
            with b.when(b.equals(index, first)):
                self._once()
        self._slabs(ih0, ih_c, seg, ew)
        self.d.convolve(b, self.buf["ub"], 1, band.rows, 0, 0)
        self._project(image, oh0, seg)

    def _expand(self, image: Index, ih_c: Index, seg: Segment) -> None:
        """The input rows ih_c.. x columns [lo, hi) into L1, x @ We into L0C, into
        `exp` (pixels x channels)."""
        b, s, band, k = self.b, self.s, self.band, self.k
        l1, ub = self.buf["l1"], self.buf["ub"]
        ew = seg.hi - seg.lo
        m1 = band.in_rows * ew
        stride = m1 * s.c0  # L1: a block of C0 channels of every pixel, one after another
        batch = k.image.batches.offset(b, image)
        if ew == s.w:
            k.image.stage_to_l1(b, batch, b.mul(ih_c, s.w), m1, 0, s.cin, l1["x"], stride)
        else:
            c1, plane = -(-s.cin // s.c0), s.h * s.w * s.c0
            for r in range(band.in_rows):
                src = b.affine(batch, (b.add(ih_c, r), s.w * s.c0), (seg.lo, s.c0))
                b.emit(npu.CopyOp, k.x.value, src, l1["x"], r * ew * s.c0, rows=c1, cols=ew * s.c0,
                       **({} if c1 == 1 else {"strides": [plane, stride]}))
        k.image.load_to_l0(b, l1["x"], stride, 0, m1, 0, s.cin, self.buf["l0a"]["x"], band.cin16)
        b.emit(npu.MmadOp, self.buf["l0a"]["x"], 0, self.buf["l0b"]["we"], 0, self.buf["l0c"]["e"], 0,
               m=m1, n=s.c, k=s.cin, strides=[band.cin16, band.c16, band.c16])
        b.emit(npu.FixpipeOp, self.buf["l0c"]["e"], 0, ub["exp"], 0, rows=m1, cols=s.c, strides=[band.c16, s.cpad])

    def _bias_act(self, buf, rows: int, width: int, bias_name: str, bias: GmTensor | None, act: str,
                  blocks: int = 1) -> None:
        """buf = act(buf + bias) over `rows` rows of `width` channels (`blocks`
        column blocks of `width` lanes, rows x width elements apart)."""
        b, ub = self.b, self.buf["ub"]
        size = blocks * rows * width
        if bias is not None and bias.splat() is not None:
            b.emit(npu.VAddsOp, buf, 0, buf, 0, cols=size, scalar=bias.splat())
        elif bias is not None:
            for j in range(blocks):
                b.emit(npu.VAddOp, buf, j * rows * width, ub[bias_name], j * width, buf, j * rows * width, rows=rows,
                       cols=width, strides=[width, 0, width])
        if self.k.residual is not None and bias_name == "obias":
            b.emit(npu.VAddOp, buf, 0, ub["res"], 0, buf, 0, cols=size)
        if act != "none":
            temps = [Tile(ub[f"t{i}"], 0, size) for i in range(self.band.temps)]
            activate(VectorEmitter(b, 1, size, lambda _type: temps.pop()), act, Tile(buf, 0, size))

    def _slabs(self, ih0: Index, ih_c: Index, seg: Segment, ew: int) -> None:
        """Slab row r is input row ih0 + r of columns iw0..: its expanded columns
        [lo, hi) + the bias, or zeros outside the image; then the activation over
        the whole slab (zero at zero: the padding stays zeros)."""
        b, s, band, d, k, ub = self.b, self.s, self.band, self.d, self.k, self.buf["ub"]
        cpad, pitch = s.cpad, d.pitch * s.cpad
        row, left = ew * cpad, (seg.lo - seg.iw0) * cpad
        splat = None if k.bias is None else k.bias.splat()
        if self.rezero:  # the padding columns of this segment, which another segment may have written
            for start, stop in ((0, seg.lo - seg.iw0), (seg.hi - seg.iw0, band.slab_width)):
                if stop > start:
                    b.emit(npu.VDupOp, ub["slab"], start * cpad, rows=band.slab_rows, cols=(stop - start) * cpad,
                           strides=[pitch], value=0.0)
        for r in range(band.slab_rows):
            ih = b.add(ih0, r)
            dst = r * pitch + left

            def fill(ih=ih, dst=dst) -> None:
                src = b.mul(b.sub(ih, ih_c), row)
                if k.bias is None:
                    b.emit(npu.VCopyOp, ub["exp"], src, ub["slab"], dst, cols=row)
                elif splat is not None:
                    b.emit(npu.VAddsOp, ub["exp"], src, ub["slab"], dst, cols=row, scalar=splat)
                else:
                    b.emit(npu.VAddOp, ub["exp"], src, ub["ebias"], 0, ub["slab"], dst, rows=ew, cols=cpad,
                           strides=[cpad, 0, cpad])

            if_less(b, [(-1, ih), (ih, s.h)], fill)
            if self._may_leave(r):
                with b.when(b.less_than(ih, 0)):
                    b.emit(npu.VDupOp, ub["slab"], dst, cols=row, value=0.0)
                with b.when(b.less_than(s.h - 1, ih)):
                    b.emit(npu.VDupOp, ub["slab"], dst, cols=row, value=0.0)
        if k.act != "none":
            size = band.slab_rows * pitch
            temps = [Tile(ub[f"t{i}"], 0, size) for i in range(self.band.temps)]
            activate(VectorEmitter(b, 1, size, lambda _type: temps.pop()), k.act, Tile(ub["slab"], 0, size))

    def _may_leave(self, r: int) -> bool:
        """Whether slab row r is outside the image for some band."""
        s, band = self.s, self.band
        first = -s.dw.pads[0] + r
        last = (s.oh - band.rows) * s.dw.strides[0] - s.dw.pads[0] + r
        return first < 0 or last >= s.h

    def _project(self, image: Index, oh0: Index, seg: Segment) -> None:
        """out = act(depthwise rows @ Wp + bias + residual), stored NC1HWC0."""
        b, s, band, d, k = self.b, self.s, self.band, self.d, self.k
        l1, ub = self.buf["l1"], self.buf["ub"]
        cpad, c0 = s.cpad, s.c0
        width = band.width * cpad
        b.emit(npu.CopyOp, ub["acc"], 0, l1["a2"], 0, rows=band.rows, cols=width,
               **({} if band.rows == 1 else {"strides": [d.out_pitch * cpad, width]}))
        self._weights(k.wp, "wp", s.c, s.cout, band.o16)  # MTE1 is idle: after the input rows' load, each item
        a2 = MatrixView(k.x, band.m2, s.c, ND, False, cpad)
        a2.load_to_l0(b, l1["a2"], cpad, 0, band.m2, 0, s.c, self.buf["l0a"]["a2"], band.c16)
        b.emit(npu.MmadOp, self.buf["l0a"]["a2"], 0, self.buf["l0b"]["wp"], 0, self.buf["l0c"]["p"], 0,
               m=band.m2, n=s.cout, k=s.c, strides=[band.c16, band.o16, band.o16])
        opad = band.oblocks * c0
        b.emit(npu.FixpipeOp, self.buf["l0c"]["p"], 0, ub["orow"], 0, rows=band.m2, cols=s.cout, strides=[band.o16, opad])
        for j in range(band.oblocks):  # row-major -> NC1HWC0 blocks
            b.emit(npu.VCopyOp, ub["orow"], j * c0, ub["out"], j * band.m2 * c0, rows=band.m2, cols=c0, strides=[opad, c0])
        if k.residual is not None:
            self._rows_gm(k.residual.value, image, oh0, seg, to_gm=False)
        self._bias_act(ub["out"], band.m2, c0, "obias", k.pw_bias, k.pw_act, band.oblocks)
        self._rows_gm(k.out.value, image, oh0, seg, to_gm=True)

    def _rows_gm(self, tensor, image: Index, oh0: Index, seg: Segment, to_gm: bool) -> None:
        """The item's output tile (its blocks in UB: `out`, or `res` read) to / from
        an NC1HWC0 tensor of the output's shape: one copy, or one per output row
        when the segment is not whole rows."""
        b, s, band = self.b, self.s, self.band
        c0, tile = s.c0, band.m2 * s.c0
        plane = s.oh * s.ow * c0
        ub = self.buf["ub"]["out" if to_gm else "res"]
        whole = band.width == s.ow
        for r in range(1 if whole else band.rows):
            gm = b.affine(b.mul(b.add(oh0, r), s.ow * c0), (image, band.oblocks * plane))
            gm = b.add(gm, seg.first * c0)
            cols = tile if whole else band.width * c0
            local = r * band.width * c0
            if band.oblocks == 1:
                strides = {}
            else:
                strides = {"strides": [tile, plane] if to_gm else [plane, tile]}
            if to_gm:
                b.emit(npu.CopyOp, ub, local, tensor, gm, rows=band.oblocks, cols=cols, **strides)
            else:
                b.emit(npu.CopyOp, tensor, gm, ub, local, rows=band.oblocks, cols=cols, **strides)
