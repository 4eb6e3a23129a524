"""Convolution on the cube: ge.conv2d and fused.conv2d_bias_act as an implicit GEMM.

Per (image, group) the convolution is a matrix product over K = C1 x KH x KW x C0
(channel blocks of C0 = 32 bytes: 16 fp16 or 8 fp32 channels, the fractal order
of FRACTAL_Z weights): the weights are an (O x K) matrix, the input an (P x K)
"img2col" matrix of P = OH x OW output pixels, each row the receptive field of
a pixel. The img2col matrix is never written to GM: it is gathered into L1 per
K chunk, in FRACTAL_NZ blocks of C0 columns (16 fp16, 8 fp32), by `ImageOperand` (the job of
Ascend's img2col / load3d):

    scf.for pairs of channel blocks of the chunk (two UB slabs in turn):
        MTE2  the input rows the pixel tile needs -> a UB slab, zero-padded, pixels
              by C0 channels (NC1HWC0 rows copy as they are; NCHW planes are
              transposed by the vector unit); rows outside the image stay zero
              (an scf.for over the rows)
        scf.for kh, scf.for output rows of the tile, each kw:
        MTE3  OW pixels (stride `strides`, dilation `dilations`) -> their L1 rows

so pixel tiles are whole output rows and K chunks whole channel blocks (and
whole 16-column blocks). fp32 FRACTAL_Z weights (8-channel blocks) are staged
into 16-column L1 blocks block by block (`FractalZWeights`); fp32 NC1HWC0
results are written in 8-channel blocks. The
orientation follows the output: an NC1HWC0 result is the FRACTAL_NZ image of
the (P x O) product (pixels as rows, weights as the transposed B); an NCHW result
is the row-major (O x P) product (weights as A) when the weights are FRACTAL_Z,
and the transposed (P x O) one otherwise (OIHW weights, whose rows of one
channel block are strided, load as B one K row at a time). The epilogue adds the
per-channel bias and the residual and applies the activation (`cube.py`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from types import SimpleNamespace

from ....dialects import fused, npu
from ....dialects.ge import formats
from ....dialects.ge.formats import Format
from ....simulator.hardware import HardwarePreset
from ....simulator.npu.costs import stream_cycles, transfer_cycles, vector_cycles
from ...tiling import FRACTAL, GemmShape, round_up
from ..context import GmTensor, KernelContext
from ..kernel_builder import Index, KernelBuilder
from .cube import RATES, bias_act_epilogue, require_cube_type
from .cube_epilogue import EpilogueInput
from .cube_kernel import CubeProblem
from .cube_operands import ND, NZ, BatchMap, MatrixView


@dataclass(frozen=True)
class ConvGeometry:
    n: int
    c: int
    h: int
    w: int
    o: int
    kh: int
    kw: int
    oh: int
    ow: int
    strides: tuple[int, int]
    pads: tuple[int, int, int, int]  # top, left, bottom, right
    dilations: tuple[int, int]
    groups: int
    c0: int = FRACTAL  # channels per block: 32 bytes of the element type

    @property
    def cg(self) -> int:
        return self.c // self.groups

    @property
    def og(self) -> int:
        return self.o // self.groups

    @property
    def c1(self) -> int:
        """Channel blocks of one group."""
        return -(-self.cg // self.c0)

    @property
    def window(self) -> int:
        return self.kh * self.kw

    @property
    def k(self) -> int:
        return self.c1 * self.window * self.c0

    @property
    def k_block(self) -> int:
        """K of one channel block: its window positions times C0."""
        return self.window * self.c0

    @property
    def p(self) -> int:
        return self.oh * self.ow

    @property
    def padded_width(self) -> int:
        return self.w + self.pads[1] + self.pads[3]

    def slab_rows(self, out_rows: int) -> int:
        """Input rows the receptive fields of `out_rows` output rows span."""
        return (out_rows - 1) * self.strides[0] + (self.kh - 1) * self.dilations[0] + 1


def geometry(op, x: GmTensor, w: GmTensor, out: GmTensor) -> ConvGeometry:
    a = op.attr_values()
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    return ConvGeometry(
        n, c, h, wd, o, kh, kw, out.shape[2], out.shape[3],
        tuple(a.strides), tuple(a.pads), tuple(a.dilations), a.groups, formats.c0(x.element_type),
    )


def if_less(b: KernelBuilder, pairs: list[tuple[Index, Index]], emit) -> None:
    """`emit()` under `scf.if` for every `lhs < rhs` of `pairs` known only at run time;
    not at all if one known at compile time is false (a branch that never runs may
    not even hold an access that would be out of bounds)."""
    dynamic = []
    for lhs, rhs in pairs:
        if isinstance(lhs, int) and isinstance(rhs, int):
            if not lhs < rhs:
                return
        else:
            dynamic.append((lhs, rhs))
    if not dynamic:
        emit()
        return
    lhs, rhs = dynamic[0]
    with b.when(b.less_than(lhs, rhs)):
        if_less(b, dynamic[1:], emit)


# ---- the img2col operand ----------------------------------------------------------------------

WHOLE_CHUNK_UB_BYTES = 96 * 1024
"""UB the slabs of whole K chunks may take (`ImageOperand._whole_chunk`), both
copies: three eighths of ascend910's UB, the rest left to the epilogue."""

WHOLE_CHUNK_COPIES = 2
"""Copies of a whole K chunk's slabs, used by chunks in turn: the next chunk's
rows land while this one's are gathered (with one, its fill waited for the
last gather to read the buffer)."""


STAGING_COPIES = 2
"""UB buffers an NCHW input's rows are loaded into before the vector unit transposes
them into the slab, used by rows in turn."""


class StagedInL1:
    """An operand the conv stages its own way, held in L1 as the matrix view `l1`
    (sizes, and the MTE1 loads to L0, are that view's)."""

    l1: MatrixView

    def l1_elements(self, rows: int, cols: int) -> int:
        return self.l1.l1_elements(rows, cols)

    def l1_stride(self, rows: int, cols: int) -> int:
        return self.l1.l1_stride(rows, cols)

    def load_cycles(self, hw: HardwarePreset, space: str, rows: int, cols: int) -> int:
        return self.l1.load_cycles(hw, space, rows, cols)

    def load_to_l0(self, b, l1, l1_stride, r0, nr, c0, nc, l0, l0_stride) -> None:
        self.l1.load_to_l0(b, l1, l1_stride, r0, nr, c0, nc, l0, l0_stride)


class ImageOperand(StagedInL1):
    """The (P x K) img2col matrix of one (image, group), or its (K x P) transpose,
    staged into L1 as FRACTAL_NZ blocks (see the module docstring)."""

    gathers = True  # hundreds of small copies per chunk, each issued by the scalar unit

    def __init__(self, x: GmTensor, g: ConvGeometry, transposed: bool, deinterleave: bool = True):
        self.x, self.g, self.transposed = x, g, transposed
        self.rows, self.cols = (g.k, g.p) if transposed else (g.p, g.k)
        # Pixel tiles are whole output rows; an output of one row (a 1-D convolution)
        # is tiled along it, its tiles reading row segments (`segments`).
        self.segments = g.oh == 1 and g.ow > FRACTAL
        self.mn_granule = FRACTAL if self.segments else g.ow
        # Output rows of one pixel: a tile of 16 pixels is 16 rows, whose slabs may not
        # fit UB (a tall strided window); fewer rows are tiles too.
        self.mn_small_tiles = not transposed and g.ow == 1
        self.k_granule = math.lcm(g.k_block, FRACTAL)  # K chunks: whole channel blocks and L1 blocks
        # How the staged tile sits in L1 and goes to L0: an NZ matrix of the same shape,
        # in blocks of C0 columns (an fp32 image's 8): a window position's C0 channels
        # of consecutive pixels are then consecutive in L1 as they are in the slab, so
        # a stride-1 gather copy is one run, not one 32-byte run per pixel.
        self.l1 = MatrixView(x, self.rows, self.cols, NZ, transposed, 0, block=min(g.c0, FRACTAL))
        plane, c0 = g.h * g.w, g.c0
        if x.format == Format.NC1HWC0:
            if g.groups > 1 and g.cg % c0:
                raise ValueError(f"groups of {g.cg} channels in an NC1HWC0 input (a multiple of {c0} is needed)")
            image, group, self.block = -(-g.c // c0) * plane * c0, g.cg // c0 * plane * c0, plane * c0
        elif x.format == Format.ND:
            image, group, self.block = g.c * plane, g.cg * plane, c0 * plane
        else:
            raise ValueError(f"a {x.format.value} convolution input")
        self.batches = BatchMap(((g.n, image), (g.groups, group)))
        # A strided window reads every `phases`-th pixel of a slab row: the slab is
        # de-interleaved by the vector unit (one copy per phase, `_deinterleave`)
        # so that each gather copy reads consecutive pixels, one run. That takes a
        # second copy of the slab in UB; without it (`deinterleave=False`, for a
        # window whose slab rows are too wide for two), the gathers read strided pixels.
        self.phases = g.strides[1] if deinterleave and g.strides[1] > 1 and not self.segments else 1
        self._slabs: list | None = None
        self._planes_zeroed = False  # `_fill_slab`: the staging planes no copy writes are zero
        self._chunk_slabs: dict = {}  # L1 buffer -> the slabs its chunks are staged through
        self._turns: dict = {}  # L1 buffer -> the slab its one-block chunks fill (`_l1_turn`)
        self._kept: set = set()  # slabs zeroed once, filled with `_fill_slab`'s `kept`

    # ---- sizes and costs (lowering/tiling.py) ----

    @property
    def cost_key(self) -> tuple:
        """What determines its sizes and costs in the tiling search (which memoises
        the search on it): the geometry, the side, the input's format and type."""
        return (type(self), self.g, self.transposed, self.phases, self.x.format, self.x.element_type)

    def _pixels(self, rows: int, cols: int) -> int:
        """The pixels of a (rows x cols) tile that exist: a tile never spans more than
        one image's output (pixel tiles are whole rows of one image), though the
        tiling may size it larger (16 pixels of a 5-pixel output when OW is 1)."""
        return min(cols if self.transposed else rows, self.g.p)

    def _pixel_rows(self, rows: int, cols: int) -> int:
        return max(1, self._pixels(rows, cols) // self.g.ow)

    def _slab_width(self, pixels: int) -> int:
        """Input columns the slab holds: the padded row (rounded up to whole phases),
        or the segment `pixels` outputs of one row read."""
        g = self.g
        if self.segments:
            return (pixels - 1) * g.strides[1] + (g.kw - 1) * g.dilations[1] + 1
        return round_up(g.padded_width, self.phases)

    def _staging_copies(self) -> int:
        """Staging buffers of an NCHW input's rows: `STAGING_COPIES`, but one when a
        slab is one row (a row segment of a 1-D convolution, whose whole input row
        the staging holds)."""
        return min(STAGING_COPIES, self.g.slab_rows(1)) if self.segments else STAGING_COPIES

    def _slab_copies(self) -> int:
        """UB copies of each slab: as filled, and de-interleaved when strided."""
        return 2 if self.phases > 1 else 1

    def _slab_elements(self, out_rows: int, pixels: int = 0) -> int:
        return self.g.slab_rows(out_rows) * self._slab_width(pixels) * self.g.c0

    def ub_bytes(self, rows: int, cols: int) -> int:
        out_rows = self._pixel_rows(rows, cols)
        pixels = self._pixels(rows, cols)
        if self._whole_chunk(rows, cols):
            return self._whole_chunk_bytes(rows, cols)
        staging = self._staging_copies() * self.g.c0 * round_up(self.g.w, FRACTAL) if self.x.format == Format.ND else 0
        return (2 * self._slab_copies() * self._slab_elements(out_rows, pixels) + staging) * self.x.itemsize

    def _chunk_blocks(self, rows: int, cols: int) -> int:
        return -(-(rows if self.transposed else cols) // self.g.k_block)

    def _whole_chunk(self, rows: int, cols: int) -> bool:
        """Whether the slabs of every channel block of a K chunk are filled at once
        (an NC1HWC0 input of few pixels: one copy per input row across the
        blocks, one latency per chunk) rather than two slabs in turn (a latency
        per pair of blocks, which dominates when a block's slab is a few rows of
        a few pixels)."""
        if self.x.format != Format.NC1HWC0 or self.segments:
            return False
        return self._whole_chunk_bytes(rows, cols) <= WHOLE_CHUNK_UB_BYTES

    def _whole_chunk_bytes(self, rows: int, cols: int) -> int:
        """UB of whole-chunk staging: every copy of the chunk's slabs (de-interleaved too)."""
        slabs = self._chunk_blocks(rows, cols) * self._slab_elements(self._pixel_rows(rows, cols))
        return WHOLE_CHUNK_COPIES * self._slab_copies() * slabs * self.x.itemsize

    def stage_cycles(self, hw: HardwarePreset, rows: int, cols: int) -> int:
        """The tiling's staging cycles of a (rows x cols) tile (what the chunk holds its
        pipes). With two slabs in turn the fills wait for the gathers: fill, then
        gather. A whole chunk's slabs have copies of their own (`WHOLE_CHUNK_COPIES`):
        the next chunk's fill (MTE2) runs under this one's gathers (MTE3), so the
        slower of the two, and the fill without its landing, which the tiling counts
        once per chunk for every operand (the weights' DMA lands under the same
        flag). Counted in a row, ResNet-50's strided 3x3 convolutions were estimated
        32-60% over their simulated cycles (128 channels at 56x56: 14,476 against
        10,932), the stride-1 ones 13-30%."""
        fill, gather, _ = self.stage_parts(hw, rows, cols)
        if not self._whole_chunk(rows, cols):
            return fill + gather
        fill -= hw.paths["gm_to_ub"].latency
        chunks = -(-(self.rows if self.transposed else self.cols) // (rows if self.transposed else cols))
        return max(fill, gather) + min(fill, gather) / chunks

    def first_stage_cycles(self, hw: HardwarePreset, rows: int, cols: int) -> int:
        """The first chunk's staging before the cube may start: its fill lands, then
        its gathers run (nothing before them to overlap)."""
        fill, gather, _ = self.stage_parts(hw, rows, cols)
        return fill + gather

    def stage_parts(self, hw: HardwarePreset, rows: int, cols: int) -> tuple[int, int, bool]:
        """(cycles of filling the slabs: MTE2, and de-interleaving them; cycles of the
        gathers: MTE3; whether the gathers reuse slabs within the chunk, so that the
        fills wait for them) of staging a (rows x cols) tile (`CubeKernel._chunk`
        orders a chunk's stagings by them)."""
        g = self.g
        out_rows = self._pixel_rows(rows, cols)
        positions = -(-(rows if self.transposed else cols) // g.c0)  # (channel block, kh, kw)
        channel_blocks = -(-positions // g.window)
        pixels = self._pixels(rows, cols)
        width, per_row = (self._slab_width(pixels), pixels) if self.segments else (g.w, g.ow)
        # Each copy holds its pipe for its data cycles (the simulator streams them);
        # a slab's latency is waited for once, before its gather reads it.
        copies, runs, run_bytes = self._gather_copies(out_rows, per_row)
        gather = positions * copies * stream_cycles(hw, "ub_to_l1", runs, run_bytes)
        slab_bytes = self._slab_elements(out_rows, pixels) * self.x.itemsize
        if self._whole_chunk(rows, cols):
            fill_row = stream_cycles(hw, "gm_to_ub", channel_blocks, width * g.c0 * self.x.itemsize)
            fill = hw.paths["gm_to_ub"].latency + g.slab_rows(out_rows) * fill_row
            # De-interleaved slabs (a strided window) are counted as holding MTE2: issued
            # first, their gathers made resnet's 3x3 stride-2 conv slower (512 channels,
            # 14 -> 7: 18.1k -> 20.9k cycles), where stride 1 gained (10%).
            return fill + self._deinterleave_cycles(hw, channel_blocks * slab_bytes), gather, self.phases > 1
        slab = self._slab_fill_cycles(hw, g.slab_rows(out_rows), width) + self._deinterleave_cycles(hw, slab_bytes)
        return channel_blocks * slab, gather, channel_blocks > 2

    def _slab_fill_cycles(self, hw: HardwarePreset, slab_rows: int, width: int) -> int:
        """MTE2 cycles of filling one channel block's slab of `slab_rows` input rows of
        `width` pixels (`_fill_slab`). NC1HWC0 rows are a run each and stream: one
        latency for the slab. An NCHW row is a run per channel (a row of each plane
        of the block: fewer than C0 in an image of 3 colours) whose transpose waits
        for its landing, and the flag it waits on is set only once the load has
        landed: the rows of one turn of the staging buffers (`_staging_copies`) are
        loaded before any is transposed, so they wait one latency together, and
        each turn waits its own."""
        g, itemsize = self.g, self.x.itemsize
        if self.x.format == Format.ND:
            turns = -(-slab_rows // self._staging_copies())
            row = stream_cycles(hw, "gm_to_ub", min(g.c0, g.cg), width * itemsize)
            return turns * hw.paths["gm_to_ub"].latency + slab_rows * row
        return hw.paths["gm_to_ub"].latency + slab_rows * stream_cycles(hw, "gm_to_ub", 1, width * g.c0 * itemsize)

    def _gather_rows_at_once(self) -> bool:
        """Whether a window position's pixels of one output row are consecutive in the
        slab (stride 1, or a de-interleaved slab) and in L1 (blocks of C0 columns):
        then one copy gathers them for every output row of the tile, a run per row."""
        return self.g.strides[1] == self.phases and self.l1.block == self.g.c0

    def _gather_copies(self, out_rows: int, pixels: int) -> tuple[int, int, int]:
        """(copies, runs per copy, bytes per run) gathering one window position of
        `out_rows` output rows of `pixels` pixels each."""
        run = self.g.c0 * self.x.itemsize
        if self._gather_rows_at_once():
            return 1, out_rows, pixels * run
        return out_rows, pixels, run

    def _deinterleave_cycles(self, hw: HardwarePreset, nbytes: int) -> int:
        """Vector cycles of de-interleaving slabs of `nbytes` (`_deinterleave`)."""
        if self.phases == 1:
            return 0
        return self.phases * vector_cycles(hw, "data_movement", nbytes // self.phases)

    # ---- emission ----

    def stage_to_l1(self, b: KernelBuilder, batch_offset: Index, r0, nr: int, c0, nc: int, l1, l1_stride: int) -> None:
        """The tile of pixels [p0, p0 + np) x K columns [k0, k0 + nk) into `l1`, one
        channel block at a time through a UB slab (two slabs in turn: pairs of
        blocks in an scf.for)."""
        p0, np_, k0, nk = (c0, nc, r0, nr) if self.transposed else (r0, nr, c0, nc)
        g = self.g
        out_rows = 1 if self.segments else np_ // g.ow
        oh0 = 0 if self.segments else b.floordiv(p0, g.ow)
        first_block = b.floordiv(k0, g.k_block)
        if self._whole_chunk(*((nk, np_) if self.transposed else (np_, nk))):
            self._stage_whole_chunk(b, batch_offset, first_block, -(-nk // g.k_block), oh0, out_rows, l1, l1_stride)
            return
        slabs = self._slab_buffers(b, out_rows, np_)
        columns = (p0, np_) if self.segments else None

        def block(pair: Index, j: int, slab) -> None:
            """Block 2 x pair + j of the chunk."""
            raw, phased = slab
            self._fill_slab(b, batch_offset, b.add(first_block, b.add(b.mul(pair, 2), j)), oh0, out_rows, raw, columns)
            self._deinterleave(b, raw, phased, self._slab_elements(out_rows, np_))
            self._gather(b, phased, pair, j, out_rows, l1, l1_stride, np_ if self.segments else g.ow)

        blocks = -(-nk // g.k_block)
        with b.loop(0, blocks // 2, name="cblk", pipelined=True) as pair:
            block(pair, 0, slabs[0])
            block(pair, 1, slabs[1])
        if blocks == 1 and not self.segments:
            # A chunk of one channel block (an image of few channels: a network's stem)
            # takes the slabs in turn with the L1 copies, and fills a slab kept zero
            # where no row lands (`_fill_slab`'s `kept`): its fill then waits neither
            # for the previous chunk's gathers nor for a zeroing on the vector unit
            # queued behind the previous item's epilogue, and runs under that item's
            # K loop (ResNet-50's 7x7 stem, four items a core: 21,426 -> 20,912 cycles).
            raw, phased = slabs[self._l1_turn(l1)]
            if raw not in self._kept and not b.discarding:  # zeroed once, at the kernel's top
                self._kept.add(raw)
                with b.at_entry():
                    b.emit(npu.VDupOp, raw, 0, cols=raw.type.get_shape()[0], value=0.0)
            self._fill_slab(b, batch_offset, first_block, oh0, out_rows, raw, columns, kept=True)
            self._deinterleave(b, raw, phased, self._slab_elements(out_rows, np_))
            self._gather(b, phased, 0, 0, out_rows, l1, l1_stride, g.ow)
        elif blocks % 2:
            block(blocks // 2, 0, slabs[0])

    def _l1_turn(self, l1) -> int:
        """0 or 1 by the L1 copy `l1`: the copies in turn, in the order first staged."""
        return self._turns.setdefault(l1, len(self._turns) % 2)

    def _stage_whole_chunk(self, b: KernelBuilder, batch_offset: Index, first_block: Index, blocks: int, oh0: Index,
                           out_rows: int, l1, l1_stride: int) -> None:
        """`_whole_chunk`: the slabs of the chunk's `blocks` channel blocks side by
        side in one UB buffer, filled by one copy per input row (a run per block),
        then gathered pair by pair as the two-slab staging does."""
        g = self.g
        size = self._slab_elements(out_rows)
        if l1 not in self._chunk_slabs:
            # The first chunk staged is a full one: no later chunk has more blocks. The
            # chunks of one L1 copy share slabs, L1 copies take the slab copies in turn.
            made = list(dict.fromkeys(self._chunk_slabs.values()))
            if len(made) < WHOLE_CHUNK_COPIES:
                et, n = self.x.element_type, len(made)
                raw = b.alloc([blocks * size], et, "ub", f"slabs{n}")
                phased = b.alloc([blocks * size], et, "ub", f"phased{n}") if self.phases > 1 else raw
                self._chunk_slabs[l1] = (raw, phased, blocks)
            else:
                self._chunk_slabs[l1] = made[len(self._chunk_slabs) % WHOLE_CHUNK_COPIES]
        buffer, phased, capacity = self._chunk_slabs[l1]
        if blocks > capacity:
            raise AssertionError(f"a K chunk of {blocks} channel blocks after one of {capacity}")
        b.emit(npu.VDupOp, buffer, 0, cols=blocks * size, value=0.0)
        ih0 = b.sub(b.mul(oh0, g.strides[0]), g.pads[0])
        base = b.add(batch_offset, b.mul(first_block, self.block))
        wp = self._slab_width(0)
        with b.loop(0, g.slab_rows(out_rows), name="irow") as r:
            ih = b.add(ih0, r)

            def copy_row() -> None:
                src = b.add(base, b.mul(ih, g.w * g.c0))
                dst = b.affine(g.pads[1] * g.c0, (r, wp * g.c0))
                b.emit(npu.CopyOp, self.x.value, src, buffer, dst, rows=blocks, cols=g.w * g.c0,
                       strides=[self.block, size])

            if_less(b, [(-1, ih), (ih, g.h)], copy_row)
        self._deinterleave(b, buffer, phased, blocks * size)
        part = size // self.phases  # a block's slab in each phase
        with b.loop(0, blocks // 2, name="cblk") as pair:
            for j in range(2):
                self._gather(b, phased, pair, j, out_rows, l1, l1_stride, g.ow, b.affine(j * part, (pair, 2 * part)),
                             blocks * part)
        if blocks % 2:
            self._gather(b, phased, blocks // 2, 0, out_rows, l1, l1_stride, g.ow, (blocks - 1) * part, blocks * part)

    def _deinterleave(self, b: KernelBuilder, raw, phased, elements: int) -> None:
        """The vector unit copies the slabs `raw` (rows of pixels x C0, `elements` in
        all) into `phased` phase by phase: pixel x of every row to phase x % phases,
        the phases one after another, each holding its pixels in order (a row of the
        slab is a whole number of phases, `_slab_width`). A window of stride
        `phases` then reads consecutive pixels of one phase."""
        if self.phases == 1:
            return
        c0, part = self.g.c0, elements // self.phases
        for ph in range(self.phases):
            b.emit(npu.VCopyOp, raw, ph * c0, phased, ph * part, rows=part // c0, cols=c0,
                   strides=[self.phases * c0, c0])

    def _gather(self, b: KernelBuilder, slab, pair: Index, j: int, out_rows: int, l1, l1_stride: int, pixels: int,
                at: Index = 0, phase_stride: int | None = None) -> None:
        """MTE3: for each (kh, kw) and output row, the OW pixels of the window position
        (stride `strides`, dilation `dilations`) -> their rows of the L1 tile, K
        columns ((2 x pair + j) x window + kh x KW + kw) x C0 .. + C0 (an scf.for
        over kh when C0 fills 16-column blocks, else kh written out); `pixels` per
        output row (OW, or a row segment's). A de-interleaved slab (`phases` > 1)
        holds phase after phase, `phase_stride` elements apart (the slab's own
        share by default), each a slab of rows of `wp / phases` pixels."""
        g = self.g
        wp, c0, blk, sw = self._slab_width(pixels), g.c0, self.l1.block, self.phases
        ws = wp // sw  # pixels of a slab row in one phase
        if phase_stride is None:
            phase_stride = self._slab_elements(out_rows, pixels) // sw

        row_stride = g.strides[0] * ws * c0  # between the slab rows of consecutive output rows

        def copy(i_static: int, i_dynamic: Index, kw_i: int, row: Index) -> None:
            shift, phase = divmod(kw_i * g.dilations[1], sw)
            src = b.add(at, b.affine(
                phase * phase_stride + (i_static * g.dilations[0] * ws + shift) * c0,
                (row, row_stride),
                (i_dynamic, g.dilations[0] * ws * c0),
            ))
            k = (j * g.window + i_static * g.kw + kw_i) * c0  # its K column, but for pair and i_dynamic
            dst = b.affine(
                k // blk * l1_stride + k % blk,
                (pair, 2 * g.k_block // blk * l1_stride),
                (i_dynamic, g.kw * c0 // blk * l1_stride),
                (row, g.ow * blk),
            )
            if self._gather_rows_at_once():  # every output row's pixels in one copy, a run each
                b.emit(npu.CopyOp, slab, src, l1, dst, rows=out_rows, cols=pixels * c0, strides=[row_stride, g.ow * blk])
            else:
                b.emit(npu.CopyOp, slab, src, l1, dst, rows=pixels, cols=c0, strides=[g.strides[1] // sw * c0, blk])

        def copies(i: Index) -> None:
            i_static, i_dynamic = (i, 0) if isinstance(i, int) else (0, i)
            if self._gather_rows_at_once():
                for kw_i in range(g.kw):
                    copy(i_static, i_dynamic, kw_i, 0)
                return
            with b.loop(0, out_rows, name="orow") as row:
                for kw_i in range(g.kw):
                    copy(i_static, i_dynamic, kw_i, row)

        if c0 % blk == 0:
            with b.loop(0, g.kh, name="kh") as i:
                copies(i)
        else:
            for i in range(g.kh):
                copies(i)

    def _slab_buffers(self, b: KernelBuilder, out_rows: int, pixels: int) -> list[tuple]:
        """Two slabs, each (as filled, de-interleaved: the same buffer when not strided)."""
        if self._slabs is None:
            size = self._slab_elements(out_rows, pixels)
            et = self.x.element_type
            raws = [b.alloc([size], et, "ub", f"slab{i}") for i in range(2)]
            phased = [b.alloc([size], et, "ub", f"phased{i}") for i in range(2)] if self.phases > 1 else raws
            self._slabs = list(zip(raws, phased))
            self._staging = (
                [b.alloc([self.g.c0 * round_up(self.g.w, FRACTAL)], et, "ub", f"planes{i}") for i in range(self._staging_copies())]
                if self.x.format == Format.ND
                else None
            )
        return self._slabs

    def _fill_slab(self, b: KernelBuilder, batch_offset: Index, block: Index, oh0: Index, out_rows: int, slab,
                   columns: tuple[Index, int] | None = None, kept: bool = False) -> None:
        """Input rows oh0 * stride - pad_top .. of channel block `block`, zero where
        the window leaves the image, as (rows x padded width) pixels x C0 channels
        (an scf.for over the rows, each copied if it is inside the image). With
        `columns` (p0, n): the segment of the one output row's pixels p0 .. p0 + n.
        The slab is zeroed first, or with `kept` (a slab zeroed once, every fill of
        it writing only the image's columns, `_slab_buffers`) only its rows outside
        the image are, each on its own."""
        g = self.g
        c0 = g.c0
        wp = self._slab_width(columns[1] if columns else 0)
        if not kept:
            b.emit(npu.VDupOp, slab, 0, cols=g.slab_rows(out_rows) * wp * c0, value=0.0)
        ih0 = b.sub(b.mul(oh0, g.strides[0]), g.pads[0])
        base = b.add(batch_offset, b.mul(block, self.block))
        last_channels = g.cg - (g.c1 - 1) * c0

        def row(r: Index, staging, part: str = "both") -> None:
            ih = b.add(ih0, r)

            def copy_row() -> None:
                if columns is None:
                    dst = b.affine(g.pads[1] * c0, (r, wp * c0))
                    self._copy_columns(b, base, ih, block, last_channels, slab, dst, 0, g.w, staging, part)
                else:
                    self._copy_segment(b, base, ih, block, last_channels, slab, b.mul(r, wp * c0), *columns, staging,
                                       part)

            if_less(b, [(-1, ih), (ih, g.h)], copy_row)
            if kept and part != "load":
                def zero_row() -> None:
                    b.emit(npu.VDupOp, slab, b.mul(r, wp * c0), cols=wp * c0, value=0.0)

                if_less(b, [(ih, 0)], zero_row)  # above the image
                if_less(b, [(g.h - 1, ih)], zero_row)  # below it

        rows = g.slab_rows(out_rows)
        if self._staging is None:  # NC1HWC0 rows copy straight into the slab
            with b.loop(0, rows, name="irow") as r:
                row(r, None)
            return
        # NCHW rows go through the transpose's staging buffers in turn, a turn's loads
        # issued before its transposes: a transpose's flag is set on MTE2 once its
        # row has landed, so a load issued after it waited for that landing (a
        # latency per row); loaded first, the turn's rows wait one latency together,
        # and the next turn's land while this one's are transposed. When every block
        # is the short last one (C < C0, an image's 3 colours) the planes no copy
        # writes are zeroed once per slab, not before each row: a zeroing on the
        # vector unit ahead of a row's load would wait behind the previous transpose.
        # Once per kernel, at its top: zeroed before each slab, the next item's fill
        # waited behind the vector unit's epilogue of the item before (ResNet's stem).
        if not self._planes_zeroed and not b.discarding and g.c1 == 1 and last_channels < c0:
            self._planes_zeroed = True
            with b.at_entry():
                for staging in self._staging:
                    b.emit(npu.VDupOp, staging, 0, cols=c0 * round_up(g.w, FRACTAL), value=0.0)
        copies = len(self._staging)
        with b.loop(0, rows // copies, name="irow", pipelined=copies > 1) as pair:
            for part in ("load", "transpose"):
                for j, staging in enumerate(self._staging):
                    row(b.affine(j, (pair, copies)), staging, part)
        for j in range(rows % copies):
            row(rows - rows % copies + j, self._staging[j])

    def _copy_segment(self, b: KernelBuilder, base: Index, ih: Index, block: Index, last_channels: int, slab,
                      dst: Index, p0: Index, pixels: int, staging=None, part: str = "both") -> None:
        """The input columns of output pixels p0 .. p0 + pixels of the one output row:
        clipped to the image in static cases for the few tiles at its ends (known by
        p0), one run-time-offset copy for the others."""
        g = self.g
        sw, left, width = g.strides[1], g.pads[1], self._slab_width(pixels)

        def clipped(p: int) -> None:
            start = p * sw - left
            lo, hi = max(0, start), min(g.w, start + width)
            if lo < hi:
                self._copy_columns(b, base, ih, block, last_channels, slab, b.add(dst, (lo - start) * g.c0), lo, hi - lo,
                                   staging, part)

        if isinstance(p0, int):
            clipped(p0)
            return
        first = -(-left // sw)  # the first p0 whose segment starts inside the image
        last = (g.w + left - width) // sw  # the last whose segment ends inside it
        edges = [p for p in range(0, g.p - pixels + 1, FRACTAL) if not first <= p <= last]
        for p in edges:
            with b.when(b.equals(p0, p)):
                clipped(p)
        if first <= last:
            start = b.sub(b.mul(p0, sw), left)
            if_less(b, [(first - 1, p0), (p0, last + 1)],
                    lambda: self._copy_columns(b, base, ih, block, last_channels, slab, dst, start, width, staging,
                                               part))

    def _copy_columns(self, b: KernelBuilder, base: Index, ih: Index, block: Index, last_channels: int, slab,
                      dst: Index, col: Index, count: int, staging=None, part: str = "both") -> None:
        """Input row `ih`, columns col .. col + count, of channel block `block` -> the
        slab at `dst` as pixels x C0 channels (an NCHW row through `staging`)."""
        g, c0 = self.g, self.g.c0
        if self.x.format == Format.NC1HWC0:
            src = b.add(base, b.mul(b.add(b.mul(ih, g.w), col), c0))
            b.emit(npu.CopyOp, self.x.value, src, slab, dst, cols=count * c0)
        else:
            self._transposed_row(b, b.add(base, col), ih, block, last_channels, slab, dst, count, staging, part)

    def _transposed_row(self, b: KernelBuilder, base: Index, ih: Index, block: Index, last_channels: int, slab,
                        dst: Index, count: int, staging, part: str = "both") -> None:
        """`count` pixels of one NCHW input row of C0 channels: the C0 planes' rows,
        then the vector unit's transpose into pixels x C0 channels (missing channels
        of the last block are zeros). `part`: "load" or "transpose" emits only that
        half (`_fill_slab` loads a turn's rows before transposing any), "both" both."""
        g, c0 = self.g, self.g.c0
        w16 = round_up(g.w, FRACTAL)
        src = b.add(base, b.mul(ih, g.w))
        plane = g.h * g.w
        # The last block of a group may hold fewer channels: a full block for the
        # others, the rest of the last one over zeros (decided at compile time when
        # the block is known).
        last = block == g.c1 - 1 if isinstance(block, int) else None
        if part != "transpose":
            if last_channels == c0 or last is False:
                b.emit(npu.CopyOp, self.x.value, src, staging, 0, rows=c0, cols=count, strides=[plane, w16])
            else:
                if g.c1 > 1 and last is None:
                    with b.when(b.less_than(block, g.c1 - 1)):
                        b.emit(npu.CopyOp, self.x.value, src, staging, 0, rows=c0, cols=count, strides=[plane, w16])
                with b.when(True if last or g.c1 == 1 else b.equals(block, g.c1 - 1)):
                    if not self._planes_zeroed:
                        b.emit(npu.VDupOp, staging, 0, cols=c0 * w16, value=0.0)
                    b.emit(npu.CopyOp, self.x.value, src, staging, 0, rows=last_channels, cols=count,
                           strides=[plane, w16])
        if part != "load":
            b.emit(npu.VTransposeOp, staging, 0, slab, dst, rows=c0, cols=count, strides=[w16, c0])


class OihwWeights(StagedInL1):
    """ND (O, C/groups, KH, KW) weights as the (K x O) B matrix of one group, K in
    the img2col order (channel block, kh, kw, channel): each K row is the O
    weights of one (channel, kh, kw), one strided copy per row into a row-major
    L1 tile (rows of missing channels of the last block are zeros, from UB)."""

    gathers = True  # one copy per K row

    def __init__(self, w: GmTensor, g: ConvGeometry):
        self.w, self.g = w, g
        self.rows, self.cols = g.k, g.og
        self.transposed = False
        self.l1 = MatrixView(w, self.rows, self.cols, ND, False, 0)
        self.batches = BatchMap(((g.n, 0), (g.groups, g.og * g.cg * g.window)))
        self._zeros = None

    @property
    def cost_key(self) -> tuple:
        """What determines its sizes and costs in the tiling search: the geometry and the type."""
        return (type(self), self.g, self.w.element_type)

    def ub_bytes(self, rows: int, cols: int) -> int:
        return round_up(cols, FRACTAL) * self.w.itemsize if self.g.cg % self.g.c0 else 0

    def stage_cycles(self, hw: HardwarePreset, rows: int, cols: int) -> int:
        return rows * transfer_cycles(hw, "gm_to_l1", cols, self.w.itemsize)

    def stage_to_l1(self, b: KernelBuilder, batch_offset: Index, r0, nr: int, c0, nc: int, l1, l1_stride: int) -> None:
        """K rows [k0, k0 + nk) (whole channel blocks) of output channels [o0, o0 + no):
        an scf.for over the C0 channels of each block, the window positions written
        out."""
        g = self.g
        window, k0 = g.window, g.c0
        first_block = b.floordiv(r0, g.k_block)
        row_bytes = g.cg * window
        zeros = self._zero_row(b) if g.cg % k0 else None
        for j in range(-(-nr // g.k_block)):
            block = b.add(first_block, j)
            with b.loop(0, k0, name="chan") as c:
                channel = b.add(b.mul(block, k0), c)
                real = isinstance(channel, int) and channel < g.cg or g.cg % k0 == 0
                padding = isinstance(channel, int) and channel >= g.cg
                for r in range(window):
                    src = b.add(b.affine(batch_offset, (c0, row_bytes), (channel, window)), r)
                    dst = b.affine((j * window + r) * k0 * l1_stride, (c, l1_stride))
                    if not padding:
                        with b.when(True if real else b.less_than(channel, g.cg)):
                            b.emit(npu.CopyOp, self.w.value, src, l1, dst, rows=nc, cols=1, strides=[row_bytes, 1])
                    if not real:
                        with b.when(True if padding else b.less_than(g.cg - 1, channel)):
                            b.emit(npu.CopyOp, zeros, 0, l1, dst, cols=nc)

    def _zero_row(self, b: KernelBuilder):
        """A row of zeros in UB for the rows of missing channels (filled wherever this
        staging runs: it may be in any branch of the kernel)."""
        if self._zeros is None:
            self._zeros = b.alloc([round_up(self.g.og, FRACTAL)], self.w.element_type, "ub", "zeros")
        b.emit(npu.VDupOp, self._zeros, 0, cols=round_up(self.g.og, FRACTAL), value=0.0)
        return self._zeros


class StridedPixels(StagedInL1):
    """The (P x C) input of a strided 1x1 convolution: the pixels its window reads,
    every `strides`-th of an NC1HWC0 image, staged straight from GM into L1 as the
    FRACTAL_NZ tile a stride-1 input would be (`gemm_1x1_problem`), one strided copy
    per channel block and output row: each pixel's C0 channels are a 32-byte run.
    The img2col staging of the same convolution reads whole input rows into UB,
    de-interleaves them and gathers them into L1: it moves every pixel (and every
    row) the stride skips through two pipes, and its UB slabs keep its pixel tiles
    small, so that each core re-reads most of the weights."""

    gathers = True  # a copy per channel block and output row, each issued by the scalar unit
    stays_in_l1 = True  # the core's pixel panel may stay in L1 (`stage_to_l1(..., at=)`)

    def __init__(self, x: GmTensor, g: ConvGeometry):
        if (g.kh, g.kw) != (1, 1) or g.strides == (1, 1) or any(g.pads):
            raise ValueError(f"a {g.kh}x{g.kw} window, strides {list(g.strides)}, pads {list(g.pads)} "
                             "(strided pixels are a 1x1 window of stride > 1 without padding)")
        if x.format != Format.NC1HWC0:
            raise ValueError(f"a {x.format.value} input (strided pixels are read from NC1HWC0)")
        if g.groups > 1 and g.cg % g.c0:
            raise ValueError(f"groups of {g.cg} channels in an NC1HWC0 input (a multiple of {g.c0} is needed)")
        self.x, self.g = x, g
        self.rows, self.cols, self.transposed = g.p, g.k, False
        # Pixel tiles are whole output rows (a row segment when the output is one row).
        self.segments = g.oh == 1 and g.ow > FRACTAL
        self.mn_granule = FRACTAL if self.segments else g.ow
        self.k_granule = math.lcm(g.c0, FRACTAL)
        self.l1 = MatrixView(x, self.rows, self.cols, NZ, False, 0, block=g.c0)
        self.plane = g.h * g.w * g.c0  # elements of one channel block of one image
        image = -(-g.c // g.c0) * self.plane
        self.batches = BatchMap(((g.n, image), (g.groups, g.cg // g.c0 * self.plane)))

    @property
    def cost_key(self) -> tuple:
        """What determines its sizes and costs in the tiling search: the geometry and the type."""
        return (type(self), self.g, self.x.element_type)

    def _runs(self, pixels: int) -> tuple[int, int]:
        """(copies, pixels per copy) staging a tile of `pixels` pixels of one channel block."""
        if self.segments:
            return 1, pixels
        return max(1, pixels // self.g.ow), min(pixels, self.g.ow)

    def stage_cycles(self, hw: HardwarePreset, rows: int, cols: int) -> int:
        """MTE2: a 32-byte run per pixel and channel block, the copies streaming."""
        copies, pixels = self._runs(min(rows, self.g.p))
        blocks = -(-cols // self.g.c0)
        return blocks * copies * stream_cycles(hw, "gm_to_l1", pixels, self.g.c0 * self.x.itemsize)

    def stage_to_l1(self, b: KernelBuilder, batch_offset: Index, r0: Index, nr: int, c0: Index, nc: int, l1,
                    l1_stride: int, at: tuple[Index, Index] = (0, 0)) -> None:
        """Pixels [r0, r0 + nr) x channels [c0, c0 + nc) (whole channel blocks) into
        `l1` at the logical position `at` of the staged tile: an scf.for over the
        tile's channel blocks, each output row one copy of its pixels."""
        g, c0_ = self.g, self.g.c0
        sh, sw = g.strides
        copies, pixels = self._runs(nr)
        first_block = b.floordiv(c0, c0_)
        at_offset = self.l1.l1_offset(b, l1_stride, *at)
        if self.segments:
            oh0, ow0 = 0, r0
        else:
            oh0, ow0 = b.floordiv(r0, g.ow), 0
        with b.loop(0, -(-nc // c0_), name="cblk") as j:
            block_base = b.affine(batch_offset, (b.add(first_block, j), self.plane))
            dst_block = b.affine(at_offset, (j, l1_stride))
            with b.loop(0, copies, name="orow") as i:
                src = b.affine(block_base, (b.add(oh0, i), sh * g.w * c0_), (ow0, sw * c0_))
                dst = b.affine(dst_block, (i, pixels * c0_))
                b.emit(npu.CopyOp, self.x.value, src, l1, dst, rows=pixels, cols=c0_, strides=[sw * c0_, c0_])


# ---- views of weights, bias, outputs --------------------------------------------------------------


def _fz_weights(w: GmTensor, g: ConvGeometry, transposed: bool, k_sliced: bool = False) -> MatrixView:
    """FRACTAL_Z weights: the FRACTAL_NZ image of the (O x K) matrix in blocks of C0
    columns; group i is its rows i * O/groups .. (as B: transposed). `k_sliced`
    (`sliced_case`): image s of the batch reads K slice s, the next g.k columns
    (the weights of the next C / splits input channels)."""
    stride = round_up(g.o, FRACTAL) * g.c0
    rows, cols = (g.k, g.og) if transposed else (g.og, g.k)
    images = (g.n, g.k // g.c0 * stride) if k_sliced else (g.n, 0)
    batches = BatchMap((images, (g.groups, g.og * g.c0)))
    return MatrixView(w, rows, cols, NZ, transposed, stride, batches, block=g.c0)


def _image_view(t: GmTensor, g: ConvGeometry, pixels_as_rows: bool, channels: tuple[int, int] | None = None) -> MatrixView:
    """An (N, O, OH, OW) tensor as the product tile sees it: (P x O/groups) when
    pixels are rows, else (O/groups x P); NC1HWC0 is the NZ image of (P x O) in
    blocks of C0 channels. `channels` (all, per group) other than the result's
    (O, O/groups): the input of a 1x1 convolution, whose pixels are the output's."""
    p, c0 = g.p, g.c0
    o, og = channels or (g.o, g.og)
    rows, cols = (p, og) if pixels_as_rows else (og, p)
    if t.format == Format.NC1HWC0:
        if g.groups > 1 and og % c0:
            raise ValueError(f"groups of {og} channels in an NC1HWC0 tensor (a multiple of {c0} is needed)")
        batches = BatchMap(((g.n, -(-o // c0) * p * c0), (g.groups, og // c0 * p * c0)))
        return MatrixView(t, rows, cols, NZ, not pixels_as_rows, p * c0, batches, block=c0)
    if t.format == Format.ND:
        batches = BatchMap(((g.n, o * p), (g.groups, og * p)))
        return MatrixView(t, rows, cols, ND, pixels_as_rows, p, batches)
    raise ValueError(f"a {t.format.value} convolution tensor")


def _channel_input(t: GmTensor | None, g: ConvGeometry, pixels_as_rows: bool) -> EpilogueInput | None:
    """A per-output-channel operand (bias; a residual of shape (O,1,1) ...)."""
    splat = t.splat()
    if splat is not None:
        return EpilogueInput(None, splat)
    batches = BatchMap(((g.n, 0), (g.groups, g.og)))
    if pixels_as_rows:
        return EpilogueInput(MatrixView(t, 1, g.og, ND, False, g.og, batches))
    return EpilogueInput(MatrixView(t, g.og, 1, ND, False, 1, batches))


def _residual_input(t: GmTensor | None, g: ConvGeometry, pixels_as_rows: bool, k: KernelContext) -> EpilogueInput | None:
    if t is None:
        return None
    shape = (1,) * (4 - len(t.shape)) + t.shape
    if t.splat() is not None:
        return EpilogueInput(None, t.splat())
    if shape == (g.n, g.o, g.oh, g.ow):
        return EpilogueInput(_image_view(t, g, pixels_as_rows))
    if shape[0] == 1 and shape[1] == g.o and shape[2:] == (1, 1) and t.format == Format.ND:
        return _channel_input(t, g, pixels_as_rows)
    raise k.unsupported(f"a residual of shape {list(t.shape)} (the convolution takes full or per-channel ones)")


# ---- the cube implementations ------------------------------------------------------------------


@dataclass(frozen=True)
class ConvCase:
    """One convolution as each implementation sees it (`conv_select.py`)."""

    k: KernelContext
    g: ConvGeometry
    x: GmTensor
    w: GmTensor
    bias: GmTensor | None
    residual: GmTensor | None
    out: GmTensor
    act: str
    k_sliced: bool = False  # `sliced_case`: image s of the batch is K slice s of one image

    @property
    def element_type(self):
        return self.x.element_type


def sliced_case(c: ConvCase, partials: GmTensor, splits: int) -> ConvCase:
    """The split-K form of the convolution `c` (`fused.conv2d_partials`) as a
    convolution of `splits` images of C / splits channels each: an NC1HWC0 image
    of one group IS that many images of its consecutive channel blocks, and
    FRACTAL_Z weights hold each slice's K rows one after another (`_fz_weights`
    with `k_sliced`); the results are the fp32 `partials`, image s slice s's
    product, with no epilogue. Every implementation plans the sliced case as it
    plans a convolution. ValueError says why it does not apply."""
    g = c.g
    if g.n != 1 or g.groups != 1:
        raise ValueError(f"{g.n} images and {g.groups} groups (split-K takes one image of one group)")
    if c.x.format != Format.NC1HWC0 or c.w.format != Format.FRACTAL_Z:
        raise ValueError(f"a {c.x.format.value} input with {c.w.format.value} weights (split-K reads NC1HWC0 and FRACTAL_Z)")
    if c.out.format != Format.NC1HWC0 or partials.format != Format.NC1HWC0:
        raise ValueError(f"a {c.out.format.value} result (split-K partials are NC1HWC0 images)")
    if splits < 2 or g.c % (splits * math.lcm(g.c0, FRACTAL)):
        raise ValueError(f"{g.c} input channels in {splits} slices (each a whole number of {FRACTAL}-channel blocks)")
    return replace(c, g=replace(g, n=splits, c=g.c // splits), out=partials, bias=None, residual=None, act="none",
                   k_sliced=True)


def conv_case(op, k: KernelContext) -> ConvCase:
    names = op.present_operand_names() if hasattr(op, "present_operand_names") else ("input", "weight")
    t = SimpleNamespace(**{"bias": None, "residual": None, **dict(zip(names, k.inputs))})
    act = op.attr_values().act if isinstance(op, fused.Conv2DBiasActOp) else "none"
    out = k.outputs[0]
    return ConvCase(k, geometry(op, t.input, t.weight, out), t.input, t.weight, t.bias, t.residual, out, act)


def _check_cube_types(c: ConvCase) -> None:
    """The cube's one element-type check (`require_cube_type`), so a convolution's
    refusal names the types the cube multiplies as a matmul's does."""
    require_cube_type(c.k, c.x, c.w)


def _cube_problem(c: ConvCase, pixels_as_rows: bool, image, weights) -> CubeProblem:
    """The product of `image` (P x K, or K x P) and `weights` with the bias /
    residual / activation epilogue."""
    g = c.g
    output = _image_view(c.out, g, pixels_as_rows)
    inputs = [
        i
        for i in (
            None if c.bias is None else _channel_input(c.bias, g, pixels_as_rows),
            _residual_input(c.residual, g, pixels_as_rows, c.k),
        )
        if i is not None
    ]
    epilogue = bias_act_epilogue([output], inputs, c.act)
    a, b = (image, weights) if pixels_as_rows else (weights, image)
    m, n = (g.p, g.og) if pixels_as_rows else (g.og, g.p)
    shape = GemmShape(g.n * g.groups, m, n, g.k, 1, False, c.x.itemsize, RATES[c.element_type])
    return CubeProblem(shape, a, [b], epilogue, c.element_type)


def img2col_problem(c: ConvCase, deinterleave: bool = True) -> CubeProblem:
    """The implicit GEMM: the img2col matrix gathered into L1 per K chunk
    (`ImageOperand`; `deinterleave`: a strided window's slabs de-interleaved, see
    there). ValueError says why it does not apply."""
    _check_cube_types(c)
    g = c.g
    fz = c.w.format == Format.FRACTAL_Z
    pixels_as_rows = c.out.format == Format.NC1HWC0 or not fz
    image = ImageOperand(c.x, g, transposed=not pixels_as_rows, deinterleave=deinterleave)
    if fz:
        weights = _fz_weights(c.w, g, transposed=pixels_as_rows, k_sliced=c.k_sliced)
    elif c.w.format == Format.ND and not c.k_sliced:
        weights = OihwWeights(c.w, g)
    else:
        raise ValueError(f"{c.w.format.value} weights")
    return _cube_problem(c, pixels_as_rows, image, weights)


def gemm_1x1_problem(c: ConvCase) -> CubeProblem:
    """A 1x1 convolution of stride 1 and no padding is a plain matrix product: an
    NC1HWC0 input IS the FRACTAL_NZ image of its (P x C) matrix in blocks of C0
    channels, read by the cube straight from GM (no UB slab, no img2col copies),
    and an NCHW one is its row-major (C x P) transpose (when C is whole channel
    blocks); FRACTAL_Z weights are the other operand. ValueError says why it does
    not apply."""
    _check_cube_types(c)
    g = c.g
    if (g.kh, g.kw) != (1, 1):
        raise ValueError(f"a {g.kh}x{g.kw} window (a GEMM needs 1x1)")
    if g.strides != (1, 1) or any(g.pads):
        raise ValueError(f"strides {list(g.strides)} and pads {list(g.pads)} (a GEMM needs stride 1, no padding)")
    if c.x.format not in (Format.NC1HWC0, Format.ND) or c.w.format != Format.FRACTAL_Z:
        raise ValueError(f"a {c.x.format.value} input with {c.w.format.value} weights (it reads NC1HWC0 or NCHW, and FRACTAL_Z)")
    if c.x.format == Format.ND and g.cg % g.c0:
        raise ValueError(f"an NCHW input of {g.cg} channels per group (K rows of whole {g.c0}-channel blocks are needed)")
    pixels_as_rows = c.out.format == Format.NC1HWC0
    image = _image_view(c.x, g, pixels_as_rows, channels=(g.c, g.cg))
    return _cube_problem(c, pixels_as_rows, image, _fz_weights(c.w, g, transposed=pixels_as_rows, k_sliced=c.k_sliced))


def strided_1x1_problem(c: ConvCase) -> CubeProblem:
    """A 1x1 convolution of stride > 1 (a ResNet downsample) as the matrix product
    over the pixels its window reads: `StridedPixels` as A, FRACTAL_Z weights as B,
    an NC1HWC0 result. ValueError says why it does not apply."""
    _check_cube_types(c)
    image = StridedPixels(c.x, c.g)
    if c.w.format != Format.FRACTAL_Z or c.out.format != Format.NC1HWC0:
        raise ValueError(f"{c.w.format.value} weights and a {c.out.format.value} result "
                         "(strided pixels take FRACTAL_Z weights and give NC1HWC0)")
    return _cube_problem(c, True, image, _fz_weights(c.w, c.g, transposed=True, k_sliced=c.k_sliced))

