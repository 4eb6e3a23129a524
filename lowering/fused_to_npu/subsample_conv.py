"""The subsampled form of a strided 1x1 convolution: `ge.slice` keeping the pixels
its window reads, then the stride-1 1x1 convolution of those (`gemm-1x1`), one
of the forms `fused-split-k-conv` chooses among by estimate.

A 1x1 convolution of stride > 1 (a ResNet downsample) reads every `stride`-th
pixel. As one kernel (`strided-1x1`, `templates/conv.py`) each core stages the
pixels of its item from GM by strided copies, a 32-byte run per pixel and
channel block; when the pixels are few and the channels many (1024 -> 2048 at
14x14 -> 7x7), every core's item needs every pixel, so each core reads the whole
strided input, each run paying its descriptor, and the layer runs at MTE2's
pace on that input rather than on its weights. Subsampled first, the pixels are
read strided once, shared out among the cores, and written contiguous; the
product then reads them as the NC1HWC0 image it is, in long runs. That costs a
second kernel (its launch, or its barrier in a merged launch) and the slice's
traffic, so it is a form the estimates choose, not a rule.
"""

from __future__ import annotations

import math

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation

from ...dialects import fused, ge
from ...dialects.ge.formats import format_of, with_format
from ...simulator.hardware import HardwarePreset
from .kernel_exists import scratch_context
from .split_k import replace_op
from .templates.conv import conv_case
from .templates.conv_select import conv_plans, ranked
from .templates.data_movement import slice_cycles

FORM = "subsample"
"""The form's name among `fused-split-k-conv`'s (what `npu.form` pins)."""


def subsamples(op: Operation) -> bool:
    """Whether `op` is a convolution this form applies to: a 1x1 window of stride
    > 1 and no padding (its pixels are then exactly a strided slice of its input)."""
    a = op.attr_values()
    _, _, kh, kw = op.weight.type.get_shape()
    return (kh, kw) == (1, 1) and tuple(a.strides) != (1, 1) and not any(a.pads)


def subsample_ops(op: Operation) -> tuple[ge.SliceOp, Operation]:
    """The ge.slice of `op`'s input (every stride-th pixel, in the input's format)
    and the stride-1 convolution of it computing `op`'s result, not inserted."""
    a = op.attr_values()
    x = op.input.type
    n, c, h, w = x.get_shape()
    sh, sw = a.strides
    sliced = with_format(TensorType(x.element_type, [n, c, -(-h // sh), -(-w // sw)]), format_of(x))
    pick = ge.SliceOp.new(op.input, starts=[0, 0, 0, 0], ends=[n, c, h, w], steps=[1, 1, sh, sw], result_type=sliced)
    conv = dict(strides=[1, 1], pads=[0, 0, 0, 0], dilations=list(a.dilations), groups=a.groups)
    if isinstance(op, fused.Conv2DBiasActOp):
        optional = {name: getattr(op, name) for name in ("bias", "residual") if getattr(op, name, None) is not None}
        product = fused.Conv2DBiasActOp.new(pick.result, op.weight, **optional, **conv, act=a.act,
                                            result_type=op.results[0].type)
    else:
        product = ge.Conv2DOp.new(pick.result, op.weight, **conv, result_type=op.results[0].type)
    return pick, product


def subsample_cycles(op: Operation, hw: HardwarePreset, next_kernel: float) -> float:
    """The estimate of the subsampled form: the slice's copy kernel, running a
    second kernel (`next_kernel`), and the fastest legal implementation of the
    stride-1 convolution (inf where none is)."""
    pick, product = subsample_ops(op)
    try:
        legal = ranked(conv_plans(conv_case(product, scratch_context(product, hw))))
        if not legal:
            return math.inf
        return slice_cycles(pick, scratch_context(pick, hw)) + next_kernel + legal[0].estimate
    finally:
        product.erase()
        pick.erase()


def subsample_conv(op: Operation) -> None:
    """Replace the strided 1x1 convolution `op` by its slice and stride-1 convolution."""
    pick, product = subsample_ops(op)
    replace_op(op, [pick, product], product.results)
