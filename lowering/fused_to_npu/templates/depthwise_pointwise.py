"""`fused.depthwise_pointwise`: a depthwise convolution computed on the vector
unit as the A operand of the 1x1 convolution that reads it (one kernel).

The 1x1 "project" convolution of an inverted-residual block is the matrix
product (P x C) @ (C x O) of the depthwise output's pixels and the FRACTAL_Z
weights (`conv.gemm_1x1_problem`). Here its A is not read from GM: each K
chunk of it (a tile of whole output rows x whole channel blocks) is computed
where the cube kernel would load it (`DepthwisePixels.stage_to_l1`), as the
depthwise kernel computes a tile (`depthwise_conv.py`), and moved UB -> L1:

    cube kernel (cube_kernel.py): scf.for item, scf.for K chunk:
      stage A (this operand):
        scf.for channel block of the chunk:
          MTE2  the block's depthwise weights (C0 x KH*KW) and bias -> UB
          V     weights transposed into KH*KW rows of C0 lanes (tail lanes zero)
          MTE2  the input rows the tile's output rows read -> a slab of pitch
                P pixels, zero-padded (V: zeroed first; an scf.if per row
                outside the image)
          V     a vmul / vmla per window tap over the whole tile, + bias,
                the activation
          MTE3  the tile's output rows -> L1, the NZ block of the chunk
      stage B (FRACTAL_Z weights), L0 loads, mmad, the epilogue (bias,
      residual, activation) as for any 1x1 convolution

so the depthwise output never goes to GM, and the two convolutions are one
phase. A pixel tile's depthwise output is computed again for each block of
output columns (N) the tiling cuts; the tiling's estimate counts it
(`stage_cycles` per chunk).

Legality is `DepthwisePixels`' construction and the cube tiling's fit
(`plan`): an NC1HWC0 input, (C, 1, KH, KW) weights, an ND or splat bias, an
activation the depthwise kernel's scratch covers; FRACTAL_Z pointwise
weights and an NC1HWC0 result.
"""

from __future__ import annotations

import math

from ....dialects import fused, npu
from ....dialects.ge.formats import Format, c0 as c0_of
from ....simulator.hardware import HardwarePreset
from ....simulator.npu.costs import stream_cycles, vector_cycles
from ...tiling import FRACTAL
from ..context import GmTensor, KernelContext
from ..kernel_builder import Index, KernelBuilder
from .conv import ConvCase, ConvGeometry, _cube_problem, _fz_weights, if_less
from .copy_layout import round_up
from .cube_kernel import CubeProblem, choose_problem_tiling, emit_cube_kernel
from .cube_operands import NZ, BatchMap, MatrixView
from .conv import StagedInL1
from .copy_kernel import copy_strides
from .depthwise_blocks import DepthwiseBlocks
from .registry import kernel_for


class DepthwisePixels(StagedInL1):
    """The (P x C) depthwise output act(depthwise(x) + bias) of one image as the
    A operand of a cube product, computed into L1 a K chunk at a time (see the
    module docstring). Construction raises ValueError for a case it does not take."""

    gathers = True  # per channel block: its loads, a vector pass per tap, a copy per tile

    def __init__(self, x: GmTensor, w: GmTensor, bias: GmTensor | None, act: str, g: ConvGeometry):
        if x.format != Format.NC1HWC0:
            raise ValueError(f"a {x.format.value} depthwise input (NC1HWC0 is read)")
        self.d = DepthwiseBlocks(g, w, bias, act)
        self.x, self.g, self.lanes = x, g, g.c0
        self.rows, self.cols, self.transposed = g.p, self.d.blocks * g.c0, False
        self.mn_granule = g.ow  # pixel tiles are whole output rows
        self.k_granule = math.lcm(g.c0, FRACTAL)
        self.l1 = MatrixView(x, self.rows, self.cols, NZ, False, 0, block=g.c0)
        self.plane = g.h * g.w * g.c0
        self.batches = BatchMap(((g.n, self.d.blocks * self.plane),))
        self._buffers: dict | None = None

    @property
    def cost_key(self) -> tuple:
        d = self.d
        return (type(self), self.g, d.act, d.bias_t is None, d.bias_splat, self.x.element_type)

    # ---- sizes ----

    def _out_rows(self, rows: int) -> int:
        return max(1, min(rows, self.g.p) // self.g.ow)

    def _chunk_blocks(self, cols: int) -> int:
        """Channel blocks a buffer for K chunks of `cols` columns holds (L1 rounds
        chunks up to 16 columns)."""
        return -(-round_up(cols, FRACTAL) // self.lanes)

    def _sizes(self, out_rows: int, blocks: int) -> dict[str, int]:
        """Elements of each UB buffer for tiles of `out_rows` output rows of `blocks`
        channel blocks: the blocks' slabs side by side, their accumulators too."""
        g, lanes = self.g, self.lanes
        acc = blocks * self._acc_elements(out_rows)
        return {"slab": blocks * self._slab_elements(out_rows), "acc": acc, **self.d.channel_sizes(blocks, acc)}

    def _slab_elements(self, out_rows: int) -> int:
        return self.g.slab_rows(out_rows) * self.d.pitch * self.lanes

    def _acc_elements(self, out_rows: int) -> int:
        return out_rows * self.d.out_pitch * self.lanes

    def ub_bytes(self, rows: int, cols: int) -> int:
        return sum(self._sizes(self._out_rows(rows), self._chunk_blocks(cols)).values()) * self.x.itemsize

    # ---- costs ----

    def stage_parts(self, hw: HardwarePreset, rows: int, cols: int) -> tuple[int, int, bool]:
        """(MTE2 loads and the vector work, MTE3 copies into L1, True: the next
        chunk's loads wait for this one's copies, one set of buffers) of a (rows x
        cols) chunk: the chunk's weights and bias (a copy each), its slab rows (a
        copy per row, a run per block), the zeroing, per block a vector pass per
        tap and the bias, the activation over all."""
        g, lanes, itemsize = self.g, self.lanes, self.x.itemsize
        out_rows = self._out_rows(rows)
        blocks = -(-cols // lanes)
        acc_bytes = self._acc_elements(out_rows) * itemsize
        latency = hw.paths["gm_to_ub"].latency
        slab_rows = g.slab_rows(out_rows)
        loads = slab_rows * stream_cycles(hw, "gm_to_ub", blocks, g.w * lanes * itemsize)
        loads += stream_cycles(hw, "gm_to_ub", 1, blocks * lanes * g.window * itemsize)
        vector = vector_cycles(hw, "data_movement", blocks * self._slab_elements(out_rows) * itemsize)  # the zeroing
        vector += 2 * vector_cycles(hw, "data_movement", blocks * g.window * lanes * itemsize)  # weights transposed
        per_block = len(self.d.taps) * vector_cycles(hw, "binary", acc_bytes)
        if self.d.bias_t is not None:
            per_block += vector_cycles(hw, "binary", acc_bytes)
        vector += blocks * per_block
        if self.d.act != "none":
            vector += 2 * vector_cycles(hw, "scalar", blocks * acc_bytes) * (1 + self.d.temps)
        scalar = (blocks * (len(self.d.taps) + 3) + 2 * slab_rows + 12) * hw.scalar_instruction_cycles
        copy = hw.paths["ub_to_l1"].latency + blocks * stream_cycles(hw, "ub_to_l1", out_rows, g.ow * lanes * itemsize)
        return latency + max(loads + vector, scalar), copy, True

    def stage_cycles(self, hw: HardwarePreset, rows: int, cols: int) -> int:
        fill, copy, _ = self.stage_parts(hw, rows, cols)
        return fill + copy

    # ---- emission ----

    def _alloc(self, b: KernelBuilder, l1, l1_stride: int) -> dict:
        """The buffers, once, for the tiling's tiles: `l1_stride` is mb x C0 (`l1_stride`),
        the L1 buffer mb x kc rounded to 16 columns."""
        if self._buffers is None:
            mb = l1_stride // self.lanes
            kc = l1.type.get_shape()[0] // mb
            et = self.x.element_type
            sizes = self._sizes(self._out_rows(mb), self._chunk_blocks(kc))
            self._buffers = {name: b.alloc([size], et, "ub", f"dw_{name}") for name, size in sizes.items()}
        return self._buffers

    def stage_to_l1(self, b: KernelBuilder, batch_offset: Index, r0: Index, nr: int, c0: Index, nc: int, l1,
                    l1_stride: int) -> None:
        """Pixels [r0, r0 + nr) (whole output rows) x channels [c0, c0 + nc) (whole
        channel blocks) of the depthwise output into `l1`: the chunk's loads issued
        together (one latency), then each block's taps, the bias, the activation,
        and a copy per block into its NZ block of L1."""
        g, lanes = self.g, self.lanes
        if nr % g.ow and nr > g.ow:
            raise ValueError(f"a tile of {nr} pixels is not whole output rows of {g.ow}")
        out_rows = max(1, nr // g.ow)
        blocks = -(-nc // lanes)
        buf = self._alloc(b, l1, l1_stride)
        first_block = b.floordiv(c0, lanes)
        self.d.channel_values(b, buf, first_block, blocks)
        self._fill_slabs(b, buf, batch_offset, first_block, blocks, b.floordiv(r0, g.ow), out_rows)
        acc = self._acc_elements(out_rows)
        self.d.convolve(b, buf, blocks, out_rows, self._slab_elements(out_rows), acc)
        width = g.ow * lanes
        for j in range(blocks):
            b.emit(npu.CopyOp, buf["acc"], j * acc, l1, j * l1_stride, rows=out_rows, cols=width,
                   **copy_strides(out_rows, width, self.d.out_pitch * lanes, width))

    def _fill_slabs(self, b: KernelBuilder, buf: dict, batch_offset: Index, first_block: Index, blocks: int,
                    oh0: Index, out_rows: int) -> None:
        """Input rows oh0 * stride - pad_top .. of the chunk's blocks, zero where the
        window leaves the image, at a pitch of P pixels after the left padding:
        one copy per row for all the blocks (a run each)."""
        g, lanes, slab = self.g, self.lanes, buf["slab"]
        rows, size = g.slab_rows(out_rows), self._slab_elements(out_rows)
        b.emit(npu.VDupOp, slab, 0, cols=blocks * size, value=0.0)
        ih0 = b.sub(b.mul(oh0, g.strides[0]), g.pads[0])
        base = b.affine(batch_offset, (first_block, self.plane))
        width = g.w * lanes
        with b.loop(0, rows, name="dwrow") as r:
            ih = b.add(ih0, r)
            if_less(b, [(-1, ih), (ih, g.h)], lambda: b.emit(
                npu.CopyOp, self.x.value, b.affine(base, (ih, width)), slab,
                b.affine(g.pads[1] * lanes, (r, self.d.pitch * lanes)), rows=blocks, cols=width,
                **copy_strides(blocks, width, self.plane, size)))


# ---- the op's kernel ---------------------------------------------------------------------------


def separable_problem(op: fused.DepthwisePointwiseOp, k: KernelContext) -> CubeProblem:
    """The 1x1 product with the depthwise output as its A (`DepthwisePixels`);
    ValueError says why the op has no such kernel."""
    t = dict(zip(op.present_operand_names(), k.inputs))
    x, dw_w, w, out = t["input"], t["dw_weight"], t["weight"], k.outputs[0]
    a = op.attr_values()
    n, c, h, wd = x.shape
    _, _, kh, kw = dw_w.shape
    _, o, oh, ow = out.shape
    c0 = c0_of(x.element_type)
    dw = ConvGeometry(n, c, h, wd, c, kh, kw, oh, ow, tuple(a.strides), tuple(a.pads), tuple(a.dilations), c, c0)
    pw = ConvGeometry(n, c, oh, ow, o, 1, 1, oh, ow, (1, 1), (0, 0, 0, 0), (1, 1), 1, c0)
    if w.format != Format.FRACTAL_Z:
        raise ValueError(f"{w.format.value} pointwise weights (FRACTAL_Z are read)")
    image = DepthwisePixels(x, dw_w, t.get("dw_bias"), a.dw_act, dw)
    case = ConvCase(k, pw, x, w, t.get("bias"), t.get("residual"), out, a.act)
    return _cube_problem(case, True, image, _fz_weights(w, pw, transposed=True))


def plan(op: fused.DepthwisePointwiseOp, k: KernelContext) -> tuple[CubeProblem, float]:
    """(the problem, its tiling's estimated cycles): THE predicate of the form,
    asked by `fused-depthwise-pointwise` and by the lowering. ValueError: none."""
    problem = separable_problem(op, k)
    _, tiling = choose_problem_tiling(k.hw, problem)
    return problem, tiling.estimate


@kernel_for(fused.DepthwisePointwiseOp)
def lower_depthwise_pointwise(op: fused.DepthwisePointwiseOp, k: KernelContext) -> None:
    try:
        problem, estimate = plan(op, k)
    except ValueError as e:
        raise k.unsupported(str(e))
    k.explain(f"depthwise convolution staged as the 1x1 product's A on the vector unit: estimated {estimate:.0f} cycles")
    emit_cube_kernel(k, problem)
