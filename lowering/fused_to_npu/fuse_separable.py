"""`fused-depthwise-pointwise`: a depthwise convolution joined into one kernel
with the 1x1 convolution that produces its input (`fused.pointwise_depthwise`),
with the one that alone reads its output (`fused.depthwise_pointwise`), or with
both (`fused.expand_depthwise_project`), where that is estimated faster.

An inverted-residual block (MobileNetV2, EfficientNet) is an expand 1x1
convolution, a depthwise convolution and a project 1x1 convolution. As three
kernels, the expanded and the depthwise tensors go to GM and back, and each
kernel is a phase of the merged kernel (a barrier, operands loaded after it:
about 700 cycles a phase on MobileNetV2, bench/phase_anatomy.py). Joined:

* expand: the expand product's items are whole planes of a few channel blocks,
  and its store runs the depthwise convolution on them in UB
  (`templates/expand_depthwise.py`): items spread over channel blocks as the
  depthwise kernel spreads its planes, in whole-plane vector instructions;
* pointwise: the project product's A operand, the depthwise output, is computed
  a K chunk at a time on the vector unit and handed over in L1
  (`templates/depthwise_pointwise.py`); its pixel tiles cut the depthwise work
  into small instructions and repeat it per block of output columns, so it
  rarely wins on small maps, and the estimates say so;
* both (`fused.expand_depthwise_project`): the whole block, expand, depthwise
  and project, a band of output rows per item with every channel on one core
  (`templates/expand_depthwise_project.py`): where both 1x1 weights fit L0B,
  one phase for the block and nothing between the three in GM.

The form is chosen by estimate, never by shape or name: each joined kernel's
estimate (its template's plan) against the separate kernels' (the
convolutions' fastest forms: `fused-split-k-conv`'s estimates for the 1x1
ones) and what running each further kernel costs. Legality is each template's
own (`kernel_problem` of the would-be op: the plan the lowering builds from).
`npu.form` on the depthwise convolution pins a form; the pass consumes the pin,
so the convolution passes after it choose that op's own forms by estimate.
`debug=true` prints the estimates. It runs before `fused-split-k-conv`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import Operation

from ...dialects import fused
from ...simulator.hardware import HardwarePreset
from .depthwise_mean import conv_cycles, pooled_conv
from .kernel_exists import kernel_problem, scratch_context
from .split_k import FORM, FormChoicePass, replace_op
from .split_k_conv import SplitKConvPass, estimates as conv_forms
from .templates import depthwise_pointwise, expand_depthwise, expand_depthwise_project

SEPARATE = "separate kernels"
EXPAND = "with its expand convolution"
FUSED = "as the pointwise product's operand"
BLOCK = "with both 1x1 convolutions"


@dataclass(frozen=True)
class DepthwisePointwisePass(FormChoicePass):
    """Depthwise convolutions joined to a 1x1 convolution beside them where that is
    estimated faster (see the module docstring)."""

    name = "fused-depthwise-pointwise"
    target_ops = (fused.Conv2DBiasActOp,)
    whole = SEPARATE

    def targets(self, op: Operation) -> bool:
        """Depthwise convolutions with a 1x1 convolution beside them, and any other
        pinned to a form of this pass's (a pin naming no form of it and none of
        `fused-split-k-conv`'s is a located error: `choose_form`)."""
        if not is_depthwise(op) or any(pooled_conv(use.operation) is op for use in op.result.uses):
            return False  # a pooled depthwise convolution is fused-depthwise-mean's to fold
        if expand_writer(op) is not None or pointwise_reader(op) is not None:
            return True
        pin = op.attributes.get(FORM)
        return pin is not None and getattr(pin, "data", None) != SplitKConvPass.whole

    def estimates(self, op: Operation, hw: HardwarePreset, next_kernel: float) -> dict[str, float]:
        expand, pointwise = expand_writer(op), pointwise_reader(op)
        boundary = phase_boundary_cycles(hw, next_kernel)
        e = 0.0 if expand is None else _one_by_one(expand, hw, next_kernel) + boundary
        p = 0.0 if pointwise is None else _one_by_one(pointwise, hw, next_kernel) + boundary
        forms = {SEPARATE: e + conv_cycles(op, hw) + p}
        for form, other, make, template, rest in (
            (EXPAND, expand, joined_expand, expand_depthwise, p),
            (FUSED, pointwise, joined, depthwise_pointwise, e),
        ):
            if other is None:
                continue
            candidate = make(op, other)
            if kernel_problem(candidate, hw) is None:
                forms[form] = template.plan(candidate, scratch_context(candidate, hw))[1] + rest
            candidate.erase()
        if expand is not None and pointwise is not None and block_residual_ok(expand, pointwise):
            candidate = joined_block(op, expand, pointwise)
            if kernel_problem(candidate, hw) is None:
                forms[BLOCK] = expand_depthwise_project.plan(candidate, scratch_context(candidate, hw))[4]
            candidate.erase()
        return forms

    def rewrite(self, op: Operation, verdict: str) -> str:
        op.attributes.pop(FORM, None)  # consumed: the passes after this one choose the op's own forms
        if verdict == SEPARATE:
            return "depthwise convolutions kept"
        if verdict == BLOCK:
            expand, pointwise = expand_writer(op), pointwise_reader(op)
            fused_op = joined_block(op, expand, pointwise)
            replace_op(pointwise, [fused_op], [fused_op.result])
            for gone in (op, expand):
                gone.detach()
                gone.erase()
            return "joined to both 1x1 convolutions"
        if verdict == EXPAND:
            expand = expand_writer(op)
            fused_op = joined_expand(op, expand)
            replace_op(op, [fused_op], [fused_op.result])
            expand.detach()
            expand.erase()
            return "joined to their expand convolution"
        pointwise = pointwise_reader(op)
        fused_op = joined(op, pointwise)
        replace_op(pointwise, [fused_op], [fused_op.result])
        op.detach()
        op.erase()
        return "joined to their pointwise convolution"


def phase_boundary_cycles(hw: HardwarePreset, next_kernel: float) -> float:
    """What a kernel boundary costs besides the kernels' work: running the second
    kernel (`next_kernel`: its launch, or the merged kernel's barrier), its
    first operands loaded after it (a GM latency) and the first kernel's last
    stores landing before it (a store latency). bench/phase_anatomy.py on
    MobileNetV2: fill ~300, drain ~100, barrier 320 cycles a phase; counted as
    the barrier alone, the joined forms of its 4x4 and 2x2 blocks were estimated
    slower and ran 450-1,060 cycles faster."""
    return next_kernel + hw.paths["gm_to_ub"].latency + hw.paths["ub_to_gm"].latency


def _one_by_one(op: Operation, hw: HardwarePreset, next_kernel: float) -> float:
    """A 1x1 convolution's fastest form (one kernel, split-K, ...)."""
    return min(conv_forms(op, hw, next_kernel, SplitKConvPass.whole).values())


def is_depthwise(op: Operation) -> bool:
    """One input and output channel per group, more than one group, no residual."""
    if not isinstance(op, fused.Conv2DBiasActOp) or op.residual is not None:
        return False
    channels = op.input.type.get_shape()[1]
    return channels > 1 and op.attr_value("groups") == channels and op.weight.type.get_shape()[0] == channels


def _is_plain_1x1(op: Operation) -> bool:
    """A 1x1, stride-1, unpadded, ungrouped fused.conv2d_bias_act."""
    if not isinstance(op, fused.Conv2DBiasActOp):
        return False
    a = op.attr_values()
    return (tuple(op.weight.type.get_shape()[2:]) == (1, 1) and a.groups == 1 and tuple(a.strides) == (1, 1)
            and not any(a.pads) and tuple(a.dilations) == (1, 1))


def expand_writer(op: Operation) -> fused.Conv2DBiasActOp | None:
    """The 1x1 convolution (no residual) whose output only the depthwise `op` reads, or None."""
    if not is_depthwise(op):
        return None
    writer = op.input.owner
    if not _is_plain_1x1(writer) or writer.residual is not None or len(list(writer.result.uses)) != 1:
        return None
    return writer


def pointwise_reader(op: Operation) -> fused.Conv2DBiasActOp | None:
    """The 1x1 convolution that is the only reader of the depthwise `op`'s output, or None."""
    if not is_depthwise(op):
        return None
    uses = list(op.result.uses)
    if len(uses) != 1:
        return None
    reader = uses[0].operation
    if not _is_plain_1x1(reader) or reader.input is not op.result:
        return None
    if reader.residual is not None and reader.residual.owner is op:
        return None
    return reader


def joined(depthwise: fused.Conv2DBiasActOp, pointwise: fused.Conv2DBiasActOp) -> fused.DepthwisePointwiseOp:
    """The depthwise convolution and its pointwise reader as one op (not inserted)."""
    a, p = depthwise.attr_values(), pointwise.attr_values()
    optional = {
        name: value
        for name, value in (("dw_bias", depthwise.bias), ("bias", pointwise.bias), ("residual", pointwise.residual))
        if value is not None
    }
    return fused.DepthwisePointwiseOp.new(
        depthwise.input, depthwise.weight, pointwise.weight, **optional, strides=a.strides, pads=a.pads,
        dilations=a.dilations, dw_act=a.act, act=p.act, result_type=pointwise.result.type,
    )


def joined_expand(depthwise: fused.Conv2DBiasActOp, expand: fused.Conv2DBiasActOp) -> fused.PointwiseDepthwiseOp:
    """The expand convolution and the depthwise convolution as one op (not inserted)."""
    a, e = depthwise.attr_values(), expand.attr_values()
    optional = {name: value for name, value in (("bias", expand.bias), ("dw_bias", depthwise.bias)) if value is not None}
    return fused.PointwiseDepthwiseOp.new(
        expand.input, expand.weight, depthwise.weight, **optional, strides=a.strides, pads=a.pads,
        dilations=a.dilations, act=e.act, dw_act=a.act, result_type=depthwise.result.type,
    )


def block_residual_ok(expand: fused.Conv2DBiasActOp, pointwise: fused.Conv2DBiasActOp) -> bool:
    """Whether the project convolution's residual (if any) outlives the block's
    joining: not the expand convolution's output."""
    return pointwise.residual is None or pointwise.residual.owner is not expand


def joined_block(depthwise: fused.Conv2DBiasActOp, expand: fused.Conv2DBiasActOp,
                 pointwise: fused.Conv2DBiasActOp) -> fused.ExpandDepthwiseProjectOp:
    """The expand, depthwise and project convolutions as one op (not inserted)."""
    a, e, p = depthwise.attr_values(), expand.attr_values(), pointwise.attr_values()
    optional = {
        name: value
        for name, value in (("bias", expand.bias), ("dw_bias", depthwise.bias), ("pw_bias", pointwise.bias),
                            ("residual", pointwise.residual))
        if value is not None
    }
    return fused.ExpandDepthwiseProjectOp.new(
        expand.input, expand.weight, depthwise.weight, pointwise.weight, **optional, strides=a.strides, pads=a.pads,
        dilations=a.dilations, act=e.act, dw_act=a.act, pw_act=p.act, result_type=pointwise.result.type,
    )
