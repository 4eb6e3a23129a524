"""`fused-depthwise-mean`: the global average pool of a depthwise convolution's
output is computed by the convolution's kernel, from its output tiles while
they are in UB (`fused.conv2d_bias_act_mean`), instead of by a pooling kernel
that reads the output back from GM.

A squeeze-and-excitation block (EfficientNet, MobileNetV3) pools the output of
its depthwise convolution, `mean over H, W` (`GlobalAveragePool`, or a
`ReduceMean` over the spatial axes: `ge.reduce_mean`), squeezes it through
two small products and scales that same output by the result. The pool is a
kernel of its own (in a merged launch, a phase and its barrier) reading the
whole output again; the depthwise kernel holds every output pixel of its
channel blocks in UB when its tiles are whole planes, so it folds them into
per-channel means there (log2(pixels) `vadd`s per plane) and stores them beside
the output: one phase less per block, no second read of the output.

The form is chosen by estimate, never by shape or name: the depthwise kernel
with whole-plane tiles and the means (`DepthwiseKernel`'s estimate) against the
depthwise kernel as tiled today plus the pool's row kernel and what running a
second kernel costs. Its legality is the template's own (`kernel_problem` of
the would-be op, built by `templates/conv_select.mean_plan`, which the lowering
builds from too): whole planes of whole channel blocks in a tile, stored NCHW,
f32. `debug=true` prints the estimates; `npu.form` pins a form.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.ir import Operation

from ...dialects import fused, ge
from ...dialects.ge.reduction import reduced_axes
from ...simulator.hardware import HardwarePreset
from .kernel_exists import kernel_problem, scratch_context
from .split_k import FormChoicePass, replace_op, row_kernel_cycles
from .templates.conv import conv_case
from .templates.conv_select import conv_plans, mean_plan, ranked

POOL = "pool kernel"
"""The form that keeps the pool a kernel of its own."""
MEANS = "means in the depthwise kernel"

POOL_PASSES = 2
"""fp32 vector passes of the pool's row kernel over its input (the folds, the scaling)."""


@dataclass(frozen=True)
class DepthwiseMeanPass(FormChoicePass):
    """Global average pools of a depthwise convolution's output computed by the
    convolution's kernel where that is estimated faster (see the module docstring)."""

    name = "fused-depthwise-mean"
    target_ops = (ge.GlobalAvgPoolOp, ge.ReduceMeanOp)
    whole = POOL

    def targets(self, op: Operation) -> bool:
        return pooled_conv(op) is not None

    def estimates(self, op: Operation, hw: HardwarePreset, next_kernel: float) -> dict[str, float]:
        conv = pooled_conv(op)
        candidate = with_mean(conv, op)
        forms = {POOL: conv_cycles(conv, hw) + pool_cycles(op, hw) + next_kernel}
        if kernel_problem(candidate, hw) is None:
            forms[MEANS] = mean_plan(candidate, scratch_context(candidate, hw)).estimate()
        return forms

    def rewrite(self, op: Operation, verdict: str) -> str:
        if verdict != MEANS:
            return "pools kept"
        conv = pooled_conv(op)
        fused_op = with_mean(conv, op)
        replace_op(conv, [fused_op], [fused_op.result])
        fused_op.mean.name_hint = op.results[0].name_hint
        op.results[0].replace_all_uses_with(fused_op.mean)
        op.detach()
        op.erase()
        return "pools computed by their depthwise convolution"


def pooled_conv(pool: Operation) -> fused.Conv2DBiasActOp | None:
    """The grouped convolution whose output `pool` averages over all pixels (a 4-D
    `ge.global_avg_pool`, or `ge.reduce_mean` over axes 2 and 3 keeping them, as
    the dynamo exporter writes it, of a `fused.conv2d_bias_act` without
    residual), or None."""
    if not is_spatial_mean(pool):
        return None
    conv = pool.operands[0].owner
    if not isinstance(conv, fused.Conv2DBiasActOp) or conv.residual is not None:
        return None
    return conv if conv.attr_value("groups") > 1 else None


def is_spatial_mean(op: Operation) -> bool:
    """A 4-D (N, C, H, W) -> (N, C, 1, 1) mean over the pixels."""
    if not isinstance(op, ge.GlobalAvgPoolOp | ge.ReduceMeanOp) or len(op.operands[0].type.get_shape()) != 4:
        return False
    if isinstance(op, ge.ReduceMeanOp) and reduced_axes(op.attr_value("axes"), 4) != (2, 3):
        return False
    n, c, _, _ = op.operands[0].type.get_shape()
    return tuple(op.results[0].type.get_shape()) == (n, c, 1, 1)


def with_mean(conv: fused.Conv2DBiasActOp, pool: Operation) -> fused.Conv2DBiasActMeanOp:
    """`conv` with `pool`'s result as its second result (not inserted)."""
    a = conv.attr_values()
    bias = {} if conv.bias is None else {"bias": conv.bias}
    return fused.Conv2DBiasActMeanOp.new(
        conv.input, conv.weight, **bias, strides=a.strides, pads=a.pads, dilations=a.dilations, groups=a.groups, act=a.act,
        result_type=[conv.result.type, pool.results[0].type],
    )


def conv_cycles(conv: Operation, hw: HardwarePreset) -> float:
    """The convolution's kernel as `ge-to-npu` would choose it (its fastest legal plan)."""
    legal = ranked(conv_plans(conv_case(conv, scratch_context(conv, hw))))
    return legal[0].estimate if legal else math.inf


def pool_cycles(pool: Operation, hw: HardwarePreset) -> float:
    """The pool's row kernel: one row of H*W per (image, channel)."""
    x = pool.operands[0].type
    n, c, h, w = x.get_shape()
    itemsize = x.element_type.bitwidth // 8
    return row_kernel_cycles(hw, (n * c, h * w), itemsize, 0, POOL_PASSES)
