"""`fused-split-k-conv`: a convolution with few pixels and many input channels
(one image, one group, any window) becomes a split-K product and a kernel that
adds up its partials, when that is faster.

A convolution is a matrix product of its output pixels by its input channels
times window taps (K; a 1x1 of stride 1 is `gemm-1x1` in
`templates/conv_select.py`), and its items are blocks of output pixels and
channels: each core reads all of K for its block. Deep in a ResNet the pixels are few (14 x 14, 7 x 7) and the channels
many (1024, 2048): every core then reads hundreds of kilobytes of input and
weights through its own GM path for a small block of outputs. Cut into K
slices (`fused.conv2d_partials`, the NC1HWC0 input's channel blocks and the
weights' K read in place, slice by slice), an item reads one slice of each and
writes an fp32 partial image; `fused.conv_partials_bias_act` then adds the
images, the bias and the residual and applies the activation.

The pass estimates the convolution as `ge-to-npu` would build it (the fastest
legal implementation of `conv_select.py`, or the one `npu.conv_algorithm` pins)
and as each split-K form (the cube tiling's estimate of the sliced product, the
second kernel's row-kernel estimate, and what running a second kernel costs),
by the machinery `fused-split-k` uses for matrix products (`split_k.py`), and
keeps the fastest. (Split forms were once taken 1.2 times: while the img2col
image's staging was counted as its fill, its landing and its gathers in a
row, the whole 3x3 convolutions' estimates ran 13-60% over their simulated
cycles and the sliced ones' less; `ImageOperand.stage_cycles` now counts a
whole chunk's staging as the slower of its fill and its gathers, and the
estimates of both forms land within about 15% of the simulator.) A strided
1x1 convolution has one more form, "subsample" (`subsample_conv.py`): a
`ge.slice` of the pixels it reads, then the stride-1 convolution of them. `debug=true` prints every estimate so compared and the
verdict; `npu.form` pins a form.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.dialects.builtin import TensorType, f32
from xdsl.ir import Operation

from ...dialects import fused, ge
from ...dialects.ge.formats import format_of, with_format
from ...simulator.hardware import HardwarePreset
from .context import GmTensor
from ...simulator.npu.costs import stream_cycles
from .split_k import REDUCE_PASSES, FormChoicePass, replace_op, sliced_forms
from .subsample_conv import FORM as SUBSAMPLE, subsample_conv, subsample_cycles, subsamples
from .templates.conv import ConvCase, conv_case
from .templates.conv_select import conv_plans, pinned_algorithm, ranked, sliced_plans
from .kernel_exists import kernel_problem, scratch_context


@dataclass(frozen=True)
class SplitKConvPass(FormChoicePass):
    """Split convolutions of one image and one group along their input channels into
    a split-K product and the sum of its partials where that is estimated faster."""

    name = "fused-split-k-conv"
    target_ops = (ge.Conv2DOp, fused.Conv2DBiasActOp)
    whole = "one kernel"

    def estimates(self, op: Operation, hw: HardwarePreset, next_kernel: float) -> dict[str, float]:
        return estimates(op, hw, next_kernel, self.whole)

    def rewrite(self, op: Operation, verdict: str) -> str:
        if verdict == self.whole:
            return "convolutions kept"
        if verdict == SUBSAMPLE:
            subsample_conv(op)
            return "convolutions subsampled"
        split_k_conv(op, int(verdict.removeprefix("split-K ")))
        return "convolutions split"


def partials_type(out: TensorType, splits: int) -> TensorType:
    """`fused.conv2d_partials`'s result for a convolution of result `out`: `splits`
    blocks of its images, fp32, in its format."""
    n, *rest = out.get_shape()
    return with_format(TensorType(f32, [splits * n, *rest]), format_of(out))


def estimates(op: Operation, hw: HardwarePreset, next_kernel: float, whole: str) -> dict[str, float]:
    """Estimated cycles of `op` as `ge-to-npu` builds it and as each split-K form;
    only the former if an implementation is pinned (`npu.conv_algorithm`) or none
    is legal (`ge-to-npu` says why)."""
    c = conv_case(op, scratch_context(op, hw))
    plans = conv_plans(c)
    legal = ranked(plans)
    pinned = pinned_algorithm(op)
    if pinned is not None or not legal:
        return {whole: math.inf}
    forms = {whole: legal[0].estimate}
    if subsamples(op):
        forms[SUBSAMPLE] = subsample_cycles(op, hw, next_kernel)
    residual = c.residual is not None
    reduce_cycles = lambda splits: blocked_reduce_cycles(hw, c.out, splits, residual)  # noqa: E731
    split = sliced_forms(lambda splits: _partials_cycles(c, splits), reduce_cycles, next_kernel)
    if not split or _reduce_problem(op, hw, int(next(iter(split)).removeprefix("split-K "))) is not None:
        return forms
    return forms | split


def blocked_reduce_cycles(hw: HardwarePreset, out: GmTensor, splits: int, residual: bool) -> float:
    """`fused.conv_partials_bias_act` over an NC1HWC0 result as the row kernel tiles
    its blocked view: tiles of pixel rows, two per core (few: a deep layer's image
    is small), each copy of a tile one run of its pixels per channel block. With
    two tiles a core, double buffering hides little: a tile's loads (`splits`
    fp32 planes and the residual) land after their latency, its vector passes
    wait for them and its store for the passes, tile after tile (the simulated
    kernels of ResNet-50's 256-channel 14x14 layers: 2,053 cycles against 2,260
    so estimated; the overlapped form, `row_kernel_cycles`, said 1,280). The
    HBM's share of the traffic bounds it from below."""
    n, _, h, w = out.shape
    _, blocks, _, _, c0 = out.physical_shape
    rows = n * h * w
    tile = max(1, math.ceil(rows / hw.core_count / 2))
    tiles = math.ceil(rows / tile / hw.core_count)
    plane = stream_cycles(hw, "gm_to_ub", blocks, tile * c0 * 4)
    term = stream_cycles(hw, "gm_to_ub", blocks, tile * c0 * out.itemsize) if residual else 0
    store = stream_cycles(hw, "ub_to_gm", blocks, tile * c0 * out.itemsize)
    repeats = math.ceil(tile * blocks * c0 * 4 / hw.vector_repeat_bytes)
    vector = (splits + REDUCE_PASSES) * hw.vector_costs["binary"].cycles(repeats)
    per_tile = hw.paths["gm_to_ub"].latency + splits * plane + term + vector + store
    traffic = rows * blocks * c0 * (splits * 4 + (out.itemsize if residual else 0) + out.itemsize)
    return max(tiles * per_tile + hw.paths["ub_to_gm"].latency, traffic / hw.hbm_bytes_per_cycle)


def _partials_cycles(c: ConvCase, splits: int) -> float:
    """The estimate of the fastest legal implementation of the convolution's split-K
    form (`conv_select.sliced_plans`); ValueError if none applies."""
    partials = GmTensor(None, partials_type(c.out.type, splits), None)
    legal = ranked(sliced_plans(c, partials, splits))
    if not legal:
        raise ValueError(f"no implementation of {splits} slices")
    return legal[0].estimate


def _reduce_problem(op: Operation, hw: HardwarePreset, splits: int) -> str | None:
    """Why the partials' kernel of `op` cannot be built (None if it can): the
    template's own answer (`kernel_problem`) on the ops of a split in `splits`,
    built beside `op` and erased."""
    partials, total = _split_ops(op, splits)
    try:
        return kernel_problem(total, hw)
    finally:
        total.erase()
        partials.erase()


def _split_ops(op: Operation, splits: int) -> tuple[fused.Conv2DPartialsOp, fused.ConvPartialsBiasActOp]:
    """fused.conv2d_partials and fused.conv_partials_bias_act computing `op`, not inserted."""
    a = op.attr_values()
    conv = {name: getattr(a, name) for name in ("strides", "pads", "dilations", "groups")}
    partials = fused.Conv2DPartialsOp.new(
        op.input, op.weight, splits=splits, **conv, result_type=partials_type(op.results[0].type, splits)
    )
    optional = {name: getattr(op, name) for name in ("bias", "residual") if getattr(op, name, None) is not None}
    act = a.act if isinstance(op, fused.Conv2DBiasActOp) else "none"
    total = fused.ConvPartialsBiasActOp.new(partials.result, **optional, act=act, result_type=op.results[0].type)
    return partials, total


def split_k_conv(op: Operation, splits: int) -> None:
    """Replace the convolution `op` by fused.conv2d_partials and fused.conv_partials_bias_act."""
    partials, total = _split_ops(op, splits)
    replace_op(op, [partials, total], total.results)
