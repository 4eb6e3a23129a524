"""`fused-stage-conv-input`: a convolution reading an ND (NCHW) input converts it
to NC1HWC0 first (`ge.transdata`, a kernel of its own) where the estimates say
that is faster than reading it as it is.

Fusion lets a convolution read through the format change feeding it
(`pattern.read_through_format_changes`): its kernel exists for an NCHW input,
whose rows it stages in UB and turns into pixels x C0 channels with
`vtranspose` (`templates/conv.py`). Each core does that for every row of its
item: one copy per input row and channel, so with many channels and few
pixels (EfficientNet's project convolutions after the excitation's scaling,
1152 channels of 2x2 pixels) every core issues thousands of 8-byte copies for
the same input, and the layer runs at MTE2's pace on them rather than on its
weights (1152 -> 192 at 2x2: ~4,600 cycles estimated on ascend910, 12 items of
16 channels). Converted once, shared out among the cores, the input is read as
the NC1HWC0 image it is, in long runs, and the split-K forms, which slice an
NC1HWC0 input's channel blocks, become possible too. That costs a second
kernel (its launch, or its barrier in a merged launch) and the conversion's
traffic, so it is a form the estimates choose, not a rule: the convolution's forms
as `fused-split-k-conv` estimates them (one kernel, split-K, ...) against the
staged convolution's same forms, each plus the conversion's estimate and what
running a second kernel costs. Where the input is a vector group's result read by nothing else (a
squeeze-and-excitation block's scaling), the group writes the NC1HWC0 image
itself and the conversion is no kernel (`group_formats.py`): the staged forms
then count what that adds to the group instead of the conversion's kernel.
The pass runs before `fused-split-k-conv`,
which then chooses the staged convolution's form by the same estimates.
`debug=true` prints every estimate; `npu.form` pins a form.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Operation

from ...dialects import fused, ge
from ...dialects.ge.formats import Format, format_of, with_format
from ...simulator.hardware import HardwarePreset, load_preset
from .group_formats import conversion_cycles, converts_itself, fold_conversion
from .kernel_exists import kernel_problem, scratch_context
from .split_k import FORM, FormChoicePass, replace_op
from .split_k_conv import estimates as conv_forms
from .templates.layout import transdata_cycles

STAGED = "NC1HWC0 input"
"""The prefix of the staged forms' names (what `npu.form` pins: "NC1HWC0 input +
one kernel", "NC1HWC0 input + split-K 4", ...)."""

WHOLE = "one kernel"


@dataclass(frozen=True)
class StageConvInputPass(FormChoicePass):
    """Convolutions reading an ND input convert it to NC1HWC0 first (a kernel of its
    own) where that is estimated faster."""

    name = "fused-stage-conv-input"
    target_ops = (ge.Conv2DOp, fused.Conv2DBiasActOp)
    whole = WHOLE

    def targets(self, op: Operation) -> bool:
        return stages(op)

    def estimates(self, op: Operation, hw: HardwarePreset, next_kernel: float) -> dict[str, float]:
        forms = conv_forms(op, hw, next_kernel, WHOLE)
        return forms | staged_forms(op, hw, next_kernel)

    def rewrite(self, op: Operation, verdict: str) -> str:
        if not verdict.startswith(STAGED):
            return "convolutions reading ND kept"
        product = stage_conv_input(op)
        if FORM in product.attributes:  # the staged convolution's own form stays pinned
            product.attributes[FORM] = StringAttr(verdict.removeprefix(f"{STAGED} + "))
        if fold_conversion(product.operands[0].owner, load_preset(self.hw)):
            return "convolutions reading NC1HWC0 written by the group before"
        return "convolutions reading NC1HWC0"


def stages(op: Operation) -> bool:
    """Whether `op` is a convolution this form applies to: a 4-D ND input of a
    float type (the conversion writes whole C0 blocks of it)."""
    if not isinstance(op, (ge.Conv2DOp, fused.Conv2DBiasActOp)):
        return False
    x = op.operands[0].type
    return format_of(x) == Format.ND and len(x.get_shape()) == 4


def staged_ops(op: Operation) -> tuple[ge.TransDataOp, Operation]:
    """The conversion of `op`'s input to NC1HWC0 and a copy of `op` reading it, not
    inserted."""
    x = op.operands[0]
    change = ge.TransDataOp.new(x, src_format=Format.ND.value, dst_format=Format.NC1HWC0.value,
                                result_type=with_format(x.type, Format.NC1HWC0))
    product = op.clone()
    product.operands[0] = change.result
    return change, product


def staged_forms(op: Operation, hw: HardwarePreset, next_kernel: float) -> dict[str, float]:
    """The staged forms' estimates: the staged convolution's own forms, each plus
    the conversion and a second kernel; none where the conversion has no kernel."""
    change, product = staged_ops(op)
    try:
        if converts_itself(op.operands[0], [op, change], hw):  # the group computing it writes NC1HWC0
            before = conversion_cycles(op.operands[0], hw)
        elif kernel_problem(change, hw) is not None:
            return {}
        else:
            before = transdata_cycles(change, scratch_context(change, hw)) + next_kernel
        return {f"{STAGED} + {form}": before + cycles for form, cycles in conv_forms(product, hw, next_kernel, WHOLE).items()}
    finally:
        product.erase()
        change.erase()


def stage_conv_input(op: Operation) -> Operation:
    """Replace the convolution `op` by the conversion of its input and the
    convolution of that; returns the new convolution."""
    change, product = staged_ops(op)
    replace_op(op, [change, product], product.results)
    return product
