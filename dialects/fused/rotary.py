"""`fused.rotary_matmul`: rotary position embeddings computed in a GEMM's epilogue.

Hugging Face's `apply_rotary_pos_emb` computes `t * cos + rotate_half(t) * sin`
on each head of `t = x W`. `rotate_half` is a signed permutation P of each
head's columns, so `ge-simplify` (`transforms/graph/exported_idioms.py`,
`RotaryOnRows`) rewrites the rotation on the rows before the head split as
`(x W) * cos + (x (W P)) * sin`: two products of one lhs, each scaled
elementwise by a constant table, summed. Fused, the kernel computes both
products on each staged x tile (an L0C accumulator each, as the gated
feed-forward does) and combines them in the epilogue, so neither product nor
the scaled halves reach global memory.

One op holds several outputs of one lhs (`ge-merge-matmuls` merges the rotated
Q and K projections and the plain V projection of a LLaMA layer into one): the
products of all outputs share each staged x tile, as `fused.multi_matmul_bias_act`'s do.
"""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType
from xdsl.irdl import irdl_op_definition, traits_def, var_operand_def, var_result_def
from xdsl.traits import Pure

from ..ge import AddOp, MatmulOp, MulOp
from ..ge.base import GEOp, Kind, attr, fail, shape_of
from .base import add_all, ge_compute, require_bias, require_broadcasts_to, require_same_element_type


@irdl_op_definition
class RotaryMatmulOp(GEOp):
    """Output i = `lhs x w_i + b_i`, rotated where `rotated[i]` is 1:
    `(lhs x w_i + b_i) * cos + (lhs x wr_i + br_i) * sin`, `wr_i` (`br_i`) being
    `w_i` (`b_i`) with each head's columns rotated by half (negated where the
    rotation negates). Operands: `lhs`, `cos`, `sin` (broadcasting to the (M, N)
    outputs), then each output's weight followed by its rotated weight if it is
    rotated, then, when `biased`, one bias ((N) or (1, N)) per weight in the same
    order. The outputs have one shape; each is computed in fp32 and rounded once::

        %q, %v = fused.rotary_matmul %x, %cos, %sin, %wq, %wqr, %wv {rotated = array<i64: 1, 0>} : (...) -> (..., ...)
    """

    name = "fused.rotary_matmul"
    inputs = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    rotated = attr(Kind.INTS, (1,))
    biased = attr(Kind.BOOL, False)
    transpose_a = attr(Kind.BOOL, False)
    transpose_b = attr(Kind.BOOL, False)
    traits = traits_def(Pure())

    @classmethod
    def outputs_of(cls, values, a) -> list[tuple[list, list]]:
        """Per output, ([weight, rotated weight?], [bias, rotated bias?] or []), from
        the flat operand list (`values[:3]` are lhs, cos, sin)."""
        weights_count = sum(1 + bool(r) for r in a.rotated)
        rest = list(values[3:])
        if not a.rotated or not any(a.rotated) or len(rest) != weights_count * (2 if a.biased else 1):
            raise fail(
                f"takes lhs, cos, sin, then {weights_count} weights{' and as many biases' if a.biased else ''} "
                f"for rotated = {list(a.rotated)} (at least one rotated output); got {len(values)} operands"
            )
        weights, biases = rest[:weights_count], rest[weights_count:]
        found, at = [], 0
        for r in a.rotated:
            n = 2 if r else 1
            found.append((weights[at : at + n], biases[at : at + n]))
            at += n
        return found

    @classmethod
    def infer(cls, types, a, declared):
        lhs, cos, sin = types[:3]
        results = []
        for weights, biases in cls.outputs_of(types, a):
            products = [MatmulOp.infer([lhs, w], a, None) for w in weights]
            n = shape_of(products[0])[1]
            for b in biases:
                require_bias(b, ((n,), (1, n)), products[0].element_type)
            results += products
        if len({(tuple(shape_of(r)), r.element_type) for r in results}) != 1:
            raise fail("the products differ in shape: " + ", ".join(str(r) for r in results))
        out = results[0]
        for name, t in (("cos", cos), ("sin", sin)):
            require_broadcasts_to(t, shape_of(out), name)
            require_same_element_type(t, out.element_type, name)
        return [out] * len(a.rotated)

    @classmethod
    def compute(cls, inputs, a, result_types):
        lhs, cos, sin = inputs[:3]
        flags = {"transpose_a": a.transpose_a, "transpose_b": a.transpose_b}
        results = []
        for weights, biases in cls.outputs_of(inputs, a):
            terms = [
                add_all(ge_compute(MatmulOp, [lhs, w], **flags), biases[i] if biases else None)
                for i, w in enumerate(weights)
            ]
            if len(terms) == 2:
                terms = [ge_compute(AddOp, [ge_compute(MulOp, [terms[0], cos]), ge_compute(MulOp, [terms[1], sin])])]
            results.append(terms[0])
        return results


ROTARY_OPS = (RotaryMatmulOp,)
