"""`fused.pointwise_depthwise`: an expand 1x1 convolution on the cube whose
output tiles, whole planes of a few channel blocks, are the input of the
depthwise convolution that reads them, computed on the vector unit in UB.

The expand convolution of an inverted-residual block is the matrix product
(P x Cin) @ (Cin x C) of the block input's pixels and the FRACTAL_Z weights
(`conv.gemm_1x1_problem`). Its items here are whole planes (A's `mn_granule`
is P: one item per image and block of output columns), and its epilogue
(bias, activation) leaves each item's tile in UB in column blocks
(`CubeEpilogue.ub_block`): C0 channels of every pixel, one plane per block.
Where the cube kernel would store that tile, `DepthwiseSink.store_from_ub`
runs the depthwise convolution on it:

    cube kernel (cube_kernel.py): scf.for item (image, block of n_block channels):
      the K loop: MTE2 A and B, MTE1, mmad                 (as any 1x1 convolution)
      the epilogue: fixpipe, + bias, activation             (tile in column blocks)
      the store (this sink):
        MTE2  the item's depthwise weights (n_block x KH*KW) and bias -> UB
        V     weights transposed into KH*KW rows of n_block lanes
        V     each block's plane copied into its zero-padded slab (pitch P,
              the padding zeroed once at the kernel's top)
        V     per block a vmul / vmla per window tap over the whole plane,
              + bias; the activation over all blocks
        MTE3  each block's output plane -> GM (NC1HWC0)

so the expanded tensor never goes to GM and the two convolutions are one
phase. Items are spread over channel blocks as the depthwise kernel spreads
its planes, and each computes its planes' vector work in whole-plane
instructions.

Legality is the construction of the views and the cube tiling's fit (`plan`),
with the depthwise buffers reserved in UB by the weights' view
(`ExpandWeights.ub_bytes`), and the sink's own check that the epilogue hands
it whole planes in column blocks: NC1HWC0 input and result, FRACTAL_Z expand
weights, (C, 1, KH, KW) depthwise weights, an activation the depthwise
kernel's scratch covers.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from ....dialects import fused, npu
from ....dialects.ge.formats import Format, c0 as c0_of
from ....simulator.hardware import HardwarePreset
from ....simulator.npu.costs import transfer_cost, vector_cycles
from ...tiling import FRACTAL, CubeTiling
from ..context import GmTensor, KernelContext
from ..kernel_builder import Index, KernelBuilder
from .conv import ConvCase, ConvGeometry, _cube_problem, _fz_weights, _image_view
from .copy_layout import round_up
from .cube import bias_act_epilogue
from .cube_kernel import CubeProblem, _CubeKernel, ranked_problem_tilings
from .cube_operands import NZ, BatchMap, MatrixView
from .copy_kernel import copy_strides
from .depthwise_blocks import DepthwiseBlocks
from .registry import kernel_for


@dataclass(frozen=True)
class WholePlanes(MatrixView):
    """The expand input as A, its M tiles whole planes (`planes` pixels)."""

    planes: int = 1

    @property
    def mn_granule(self) -> int:
        return self.planes

    @property
    def cost_key(self) -> tuple:
        return (type(self), self.form, self.planes)


@dataclass(frozen=True)
class ExpandWeights(MatrixView):
    """The expand weights as B, reserving the depthwise buffers of an item of
    `cols` channels in UB (`DepthwiseSink.ub_bytes`)."""

    sink: object = None

    def ub_bytes(self, rows: int, cols: int) -> int:
        return self.sink.ub_bytes(cols)

    @property
    def cost_key(self) -> tuple:
        return (type(self), self.form, self.sink.cost_key)


def _as(cls, view: MatrixView, **extra):
    return cls(**{f.name: getattr(view, f.name) for f in fields(MatrixView)}, **extra)


class DepthwiseSink:
    """The expand product's output as the cube kernel's epilogue sees it (an NZ
    (P x C) view in blocks of C0), whose store runs the depthwise convolution on
    each item's tile (see the module docstring)."""

    layout, transposed = NZ, False

    def __init__(self, mid: ConvGeometry, dw: ConvGeometry, out: GmTensor, w: GmTensor, bias: GmTensor | None,
                 act: str, element_type):
        if out.format != Format.NC1HWC0:
            raise ValueError(f"a {out.format.value} result (NC1HWC0 is written)")
        self.d = DepthwiseBlocks(dw, w, bias, act)
        self.dw, self.tensor, self.element_type = dw, out, element_type
        self.lanes = self.block = dw.c0
        self.rows = self.padded_rows = mid.p
        self.cols = dw.c
        self.out_plane = dw.oh * dw.ow * dw.c0
        self.batches = BatchMap(((dw.n, self.d.blocks * self.out_plane),))
        self._buffers: dict | None = None
        self._zeroed = False

    @property
    def value(self):
        return self.tensor.value

    @property
    def form(self) -> tuple:
        d = self.d
        return ("depthwise sink", self.dw, d.act, d.bias_t is None, d.bias_splat, str(self.element_type))

    @property
    def cost_key(self) -> tuple:
        return self.form

    def transpose_scratch(self, rows: int, cols: int) -> int:
        return 0

    # ---- sizes and costs ----

    def _slab(self) -> int:
        return (self.dw.h + self.dw.pads[0] + self.dw.pads[2]) * self.d.pitch * self.lanes

    def _acc(self) -> int:
        return self.dw.oh * self.d.out_pitch * self.lanes

    def _sizes(self, blocks: int) -> dict[str, int]:
        acc = blocks * self._acc()
        return {"plane": blocks * self.rows * self.lanes, "slab": blocks * self._slab(), "acc": acc,
                **self.d.channel_sizes(blocks, acc)}

    def ub_bytes(self, cols: int) -> int:
        return sum(self._sizes(-(-round_up(cols, FRACTAL) // self.lanes)).values()) * self.tensor.itemsize

    def item_cycles(self, hw: HardwarePreset, cols: int) -> float:
        """The vector unit's and the stores' cycles of one item of `cols` channels
        on top of the expand product's epilogue: the loads of its weights, the
        copies into the slabs, the taps, bias and activation, the planes' stores."""
        blocks = -(-cols // self.lanes)
        itemsize = self.tensor.itemsize
        acc_bytes, plane_bytes = self._acc() * itemsize, self.rows * self.lanes * itemsize
        loads = transfer_cost(hw, "gm_to_ub", 1, blocks * self.lanes * self.dw.window * itemsize).cycles
        vector = 2 * vector_cycles(hw, "data_movement", blocks * self.lanes * self.dw.window * itemsize)
        per_block = 2 * vector_cycles(hw, "data_movement", plane_bytes) + len(self.d.taps) * vector_cycles(hw, "binary", acc_bytes)
        if self.d.bias_t is not None:
            per_block += vector_cycles(hw, "binary", acc_bytes)
        vector += blocks * per_block
        if self.d.act != "none":
            vector += 2 * vector_cycles(hw, "scalar", blocks * acc_bytes) * (1 + self.d.temps)
        store = transfer_cost(hw, "ub_to_gm", blocks * self.dw.oh, self.dw.ow * self.lanes * itemsize)
        return loads + vector + store.cycles

    # ---- emission ----

    def _alloc(self, b: KernelBuilder, blocks: int) -> dict:
        if self._buffers is None:
            self._buffers = {name: b.alloc([size], self.element_type, "ub", f"dw_{name}")
                             for name, size in self._sizes(blocks).items()}
        if not self._zeroed and not b.discarding:  # code being discarded stays where it is (`at_entry`)
            self._zeroed = True
            with b.at_entry():  # the slabs' padding: written by no copy, zeroed once
                b.emit(npu.VDupOp, self._buffers["slab"], 0, cols=self._sizes(blocks)["slab"], value=0.0)
        return self._buffers

    def store_from_ub(self, b: KernelBuilder, batch_offset: Index, r0: Index, nr: int, c0: Index, nc: int, ub,
                      ub_stride: int, scratch=None, ub_block_stride: int = 0) -> None:
        """A row chunk of the item's planes (pixels [r0, r0 + nr), channels [c0, c0 +
        nc)) held in `ub` in column blocks `ub_block_stride` apart: copied into the
        item's planes; after the last chunk, the depthwise convolution of them."""
        dw, lanes = self.dw, self.lanes
        if not ub_block_stride:
            raise ValueError("the expand epilogue's tiles are not in column blocks")
        blocks = -(-nc // lanes)
        buf = self._alloc(b, ub_stride // lanes)
        plane = self.rows * lanes
        b.emit(npu.VCopyOp, ub, 0, buf["plane"], b.mul(r0, lanes), rows=blocks, cols=nr * lanes,
               **copy_strides(blocks, nr * lanes, ub_block_stride, plane))
        with b.when(b.equals(r0, self.rows - nr)):
            self._depthwise(b, buf, batch_offset, b.floordiv(c0, lanes), blocks)

    def _depthwise(self, b: KernelBuilder, buf: dict, batch_offset: Index, first_block: Index, blocks: int) -> None:
        """The item's planes, padded into the slabs, convolved, stored (NC1HWC0)."""
        dw, lanes = self.dw, self.lanes
        self.d.channel_values(b, buf, first_block, blocks)
        slab, acc = self._slab(), self._acc()
        row = dw.w * lanes
        inner = (dw.pads[0] * self.d.pitch + dw.pads[1]) * lanes
        for j in range(blocks):
            b.emit(npu.VCopyOp, buf["plane"], j * self.rows * lanes, buf["slab"], j * slab + inner, rows=dw.h, cols=row,
                   **copy_strides(dw.h, row, row, self.d.pitch * lanes))
        self.d.convolve(b, buf, blocks, dw.oh, slab, acc)
        width = dw.ow * lanes
        for j in range(blocks):
            dst = b.affine(batch_offset, (b.add(first_block, j), self.out_plane))
            b.emit(npu.CopyOp, buf["acc"], j * acc, self.tensor.value, dst, rows=dw.oh, cols=width,
                   **copy_strides(dw.oh, width, self.d.out_pitch * lanes, width))


# ---- the op's kernel ---------------------------------------------------------------------------


def expand_problem(op: fused.PointwiseDepthwiseOp, k: KernelContext) -> tuple[CubeProblem, DepthwiseSink]:
    """The expand product with whole-plane items and the depthwise sink as its
    output; ValueError says why the op has no such kernel."""
    t = dict(zip(op.present_operand_names(), k.inputs))
    x, w, dw_w, out = t["input"], t["weight"], t["dw_weight"], k.outputs[0]
    a = op.attr_values()
    n, cin, h, wd = x.shape
    c = w.shape[0]
    _, _, kh, kw = dw_w.shape
    _, _, oh, ow = out.shape
    c0 = c0_of(x.element_type)
    if x.format != Format.NC1HWC0 or w.format != Format.FRACTAL_Z:
        raise ValueError(f"a {x.format.value} input with {w.format.value} weights (NC1HWC0 and FRACTAL_Z are read)")
    mid = ConvGeometry(n, cin, h, wd, c, 1, 1, h, wd, (1, 1), (0, 0, 0, 0), (1, 1), 1, c0)
    dw = ConvGeometry(n, c, h, wd, c, kh, kw, oh, ow, tuple(a.strides), tuple(a.pads), tuple(a.dilations), c, c0)
    sink = DepthwiseSink(mid, dw, out, dw_w, t.get("dw_bias"), a.dw_act, x.element_type)
    image = _as(WholePlanes, _image_view(x, mid, True, channels=(cin, cin)), planes=mid.p)
    weights = _as(ExpandWeights, _fz_weights(w, mid, transposed=True), sink=sink)
    case = ConvCase(k, mid, x, w, t.get("bias"), None, out, a.act)
    problem = _cube_problem(case, True, image, weights)
    inputs = problem.epilogue.inputs
    problem = CubeProblem(problem.shape, image, [weights], bias_act_epilogue([sink], list(inputs), a.act), problem.in_type)
    if not problem.epilogue.ub_block:
        raise ValueError("the expand epilogue's tiles cannot be kept in column blocks")
    return problem, sink


def whole_plane_tiling(hw: HardwarePreset, problem: CubeProblem, sink: DepthwiseSink) -> tuple[CubeProblem, CubeTiling]:
    """The estimated-fastest tiling whose epilogue hands the sink whole planes in
    column blocks (`DepthwiseSink.store_from_ub`); ValueError if none fits."""
    fitting = [(p, t) for p, t in ranked_problem_tilings(hw, problem) if t.ub_block]
    if not fitting:
        raise ValueError(f"no tiling of the expand product keeps planes of {sink.rows} pixels in UB, in column blocks")
    return min(fitting, key=lambda pair: pair[1].estimate)


def plan(op: fused.PointwiseDepthwiseOp, k: KernelContext) -> tuple[CubeProblem, float]:
    """(the problem, its estimated cycles: the tiling's, and each core's items'
    depthwise work): THE predicate of the form, asked by
    `fused-depthwise-pointwise` and by the lowering. ValueError: none."""
    problem, sink = expand_problem(op, k)
    _, tiling = whole_plane_tiling(k.hw, problem, sink)
    return problem, tiling.estimate + tiling.per_core * sink.item_cycles(k.hw, tiling.n_block)


@kernel_for(fused.PointwiseDepthwiseOp)
def lower_pointwise_depthwise(op: fused.PointwiseDepthwiseOp, k: KernelContext) -> None:
    """The cube kernel of `plan`'s problem with a whole-plane tiling (as
    `cube_kernel.emit_cube_kernel` writes one, its tiling chosen here; the
    weights' first chunk is not counted as prefetched before a barrier)."""
    try:
        problem, sink = expand_problem(op, k)
        problem, tiling = whole_plane_tiling(k.hw, problem, sink)
        estimate = tiling.estimate + tiling.per_core * sink.item_cycles(k.hw, tiling.n_block)
        k.explain(f"expand 1x1 convolution with the depthwise convolution in its store: estimated {estimate:.0f} "
                  f"cycles; {tiling.explain()}")
        k.tiling_choices = tiling.candidates
        k.block_dim = tiling.block_dim
        _CubeKernel(k, problem, tiling).emit()
    except ValueError as e:
        raise k.unsupported(str(e)) from None
