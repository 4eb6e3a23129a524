"""`ge-single-pixel-conv`: a 1x1 convolution of a single pixel becomes a
matrix-vector product on the vector unit.

A squeeze-and-excitation block (MobileNetV3, EfficientNet) pools its input to
one pixel per channel and runs two 1x1 convolutions on it:
`(1, C, 1, 1) -> (1, S, 1, 1) -> (1, C, 1, 1)`. On the cube each is a product
of M = 1 row: the fractal computes 16 rows to use one, and the work spreads
over the cores only by blocks of 16 output channels, so the squeeze (S = 48 of
1152 channels) loads its whole 221 KB weight on 3 cores (4.4k cycles on
ascend910 for 1 MFLOP), and each convolution is a phase of its own between
the pooling and the scaling. Written as

    y[n, o] = sum_c x[n, c] * W[o, c]   (+ b[o])
    = reduce_sum(reshape(x, [N, 1, C]) * reshape(W, [O, C]), axes = [2])

it is one row of the weight per output channel: automatic fusion makes it a
vector group whose rows are the output channels, spread over every core, each
weight read once, and the bias, the activation and whatever per-channel work
follows (the excitation's sigmoid and its product with the block's
`(N, C, H, W)` activation, one row per channel) join the same group: the
excitation is two kernels instead of three, and the squeeze no longer waits
on one core's bandwidth.

What rewrites: `ge.conv2d` of an ND input `(1, C, 1, 1)` with a `(O, C, 1, 1)`
weight, one group, no padding (so the output is `(1, O, 1, 1)`; strides and
dilations do not matter), a float element type. A following
`ge.bias_add(axis = 1)` that is the convolution's only use becomes an add in
the row form. f16 / bf16 operands are widened to f32 for the products and
the sum, then rounded once, as the cube accumulates in L0C. Only a single
image (M = 1): each further pixel multiplies the vector work while the cube's
fractal rows were idle anyway, and that trade is not measured. Runs inside
`ge-graph-opt{single-pixel-conv=true}` (what `ge-compile` runs when it
fuses), after BatchNorm folding and before layout; eager mode keeps the
convolution, whose one kernel is cheaper than a product and a reduction
written to GM apart.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType, f32
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from ...core import dtypes
from ...core.passes import record_statistic
from ...dialects import ge
from ...dialects.ge.base import shape_of
from ...dialects.ge.formats import Format, format_of


def single_pixel_conv(op: Operation) -> bool:
    """Whether `op` is a convolution this pass rewrites (module docstring)."""
    if not isinstance(op, ge.Conv2DOp) or op.attr_value("groups") != 1 or any(op.attr_value("pads")):
        return False
    x, w = op.operands[0], op.operands[1]
    if format_of(x.type) != Format.ND or format_of(w.type) != Format.ND:
        return False
    n, c, *hw = shape_of(x.type)
    o, _, *khw = shape_of(w.type)
    return n == 1 and hw == [1, 1] and khw == [1, 1] and dtypes.is_float(x.type.element_type) and o >= 1 and c >= 1


def _bias_of(op: Operation) -> ge.BiasAddOp | None:
    """The `bias_add(axis = 1)` that is the convolution's only use, if any."""
    uses = list(op.results[0].uses)
    if len(uses) != 1 or not isinstance(user := uses[0].operation, ge.BiasAddOp):
        return None
    return user if user.input == op.results[0] and user.attr_value("axis") % 4 == 1 else None


class _Builder:
    """Inserts new ops before an anchor, at its location."""

    def __init__(self, block: Block, anchor: Operation):
        self.block, self.anchor = block, anchor

    def add(self, op: Operation) -> SSAValue:
        op.location = self.anchor.location
        self.block.insert_op_before(op, self.anchor)
        return op.results[0]

    def reshape(self, value: SSAValue, shape: tuple[int, ...]) -> SSAValue:
        return self.add(ge.ReshapeOp.new(value, result_type=TensorType(value.type.element_type, shape)))

    def cast(self, value: SSAValue, element_type) -> SSAValue:
        if value.type.element_type == element_type:
            return value
        return self.add(ge.CastOp.new(value, result_type=TensorType(element_type, shape_of(value.type))))


def rewrite(conv: ge.Conv2DOp) -> None:
    """`conv` (and its bias) as the row form of the module docstring."""
    x, w = conv.operands[0], conv.operands[1]
    n, c, _, _ = shape_of(x.type)
    o = shape_of(w.type)[0]
    element = x.type.element_type
    wide = f32 if dtypes.is_narrow_float(element) else element
    bias = _bias_of(conv)
    last = bias if bias is not None else conv
    b = _Builder(conv.parent_block(), last)
    rows = b.cast(b.reshape(x, (n, 1, c)), wide)
    weight = b.cast(b.reshape(w, (o, c)), wide)
    value = b.add(ge.ReduceSumOp.new(b.add(ge.MulOp.new(rows, weight)), axes=[2], keepdims=True))
    if bias is not None:
        value = b.add(ge.AddOp.new(value, b.cast(b.reshape(bias.bias, (o, 1)), wide)))
    value = b.reshape(b.cast(value, element), (n, o, 1, 1))
    last.results[0].replace_all_uses_with(value)
    block = conv.parent_block()
    if bias is not None:
        block.erase_op(bias)
    block.erase_op(conv)


@dataclass(frozen=True)
class SinglePixelConvPass(ModulePass):
    """1x1 convolutions of a single pixel as vector matrix-vector products (row per output channel)."""

    name = "ge-single-pixel-conv"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in op.walk():
            if not (isinstance(function, func.FuncOp) and function.body.blocks):
                continue
            convs = [o for o in function.body.block.ops if single_pixel_conv(o)]
            for conv in convs:
                rewrite(conv)
            if convs:
                record_statistic(self.name, "convolutions as vector products", len(convs))
