"""`fused.rotary_matmul`: a rotary position embedding computed in a GEMM's epilogue.

Hugging Face's `apply_rotary_pos_emb` computes `t * cos + rotate_half(t) * sin`
on each head of `t = x W`. `rotate_half` is a signed permutation P of each
head's columns, so `ge-simplify` (`transforms/graph/exported_idioms.py`,
`RotaryOnRows`) rewrites the rotation on the rows before the head split as
`(x W) * cos + (x (W P)) * sin`: two products of one lhs, each scaled
elementwise by a constant table, summed. Fused, the kernel computes both
products on each staged x tile (two L0C accumulators, as the gated
feed-forward does) and combines them in the epilogue, so neither product nor
the scaled halves reach global memory: one kernel per rotated projection,
where the auto-fused form took two (the first product and its scaling, then
the second and the sum) and a format change of x.
"""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType
from xdsl.irdl import irdl_op_definition, operand_def, opt_operand_def, result_def

from ..ge import AddOp, MatmulOp, MulOp
from ..ge.base import fail, shape_of
from .base import (
    add_all,
    by_name,
    ge_compute,
    operand,
    require_bias,
    require_broadcasts_to,
    require_same_element_type,
)
from .cube import _MatmulAttrs


@irdl_op_definition
class RotaryMatmulOp(_MatmulAttrs):
    """`(lhs x rhs + bias) * cos + (lhs x rotated_rhs + rotated_bias) * sin`: the
    rotary embedding of a projection, `rotated_rhs` (`rotated_bias`) being `rhs`
    (`bias`) with each head's columns rotated by half (negated where the
    rotation negates); `cos` and `sin` broadcast to the (M, N) result; the
    biases, (N) or (1, N), are optional, both or neither. Computed in fp32 and
    rounded once::

        %q = fused.rotary_matmul %x, %w, %wr, %cos, %sin bias %b rotated_bias %br : (...) -> ...
    """

    name = "fused.rotary_matmul"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    rotated_rhs = operand_def(TensorType)
    cos = operand_def(TensorType)
    sin = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    rotated_bias = opt_operand_def(TensorType)
    result = result_def(TensorType)

    @classmethod
    def infer(cls, types, a, declared):
        t = by_name(types, a)
        out = MatmulOp.infer([t.lhs, t.rhs], a, None)
        rotated = MatmulOp.infer([t.lhs, t.rotated_rhs], a, None)
        if shape_of(out) != shape_of(rotated):
            raise fail(f"the products differ: {out} vs {rotated}")
        if (operand(t, "bias") is None) != (operand(t, "rotated_bias") is None):
            raise fail("takes both biases or neither")
        n = shape_of(out)[1]
        for name in ("bias", "rotated_bias"):
            require_bias(operand(t, name), ((n,), (1, n)), out.element_type)
        for name in ("cos", "sin"):
            require_broadcasts_to(getattr(t, name), shape_of(out), name)
            require_same_element_type(getattr(t, name), out.element_type, name)
        return out

    @classmethod
    def compute(cls, inputs, a, result_types):
        x = by_name(inputs, a)
        flags = {"transpose_a": a.transpose_a, "transpose_b": a.transpose_b}
        plain = add_all(ge_compute(MatmulOp, [x.lhs, x.rhs], **flags), operand(x, "bias"))
        rotated = add_all(ge_compute(MatmulOp, [x.lhs, x.rotated_rhs], **flags), operand(x, "rotated_bias"))
        return ge_compute(AddOp, [ge_compute(MulOp, [plain, x.cos]), ge_compute(MulOp, [rotated, x.sin])])


ROTARY_OPS = (RotaryMatmulOp,)
