"""The rotary-embedding fusion: `(x @ W) * cos + (x @ W') * sin` -> one
`fused.rotary_matmul` (`dialects/fused/rotary.py`).

This is the form `ge-simplify` leaves Hugging Face's `apply_rotary_pos_emb` in
(the rotation by half folded into the second weight), found on the graph's
structure: an add of two products, each of a `ge.matmul` (2-D, used only there;
optionally plus a per-column bias) by a tensor that broadcasts to the product,
both matmuls reading one lhs (through format changes) with the same flags and
result type, both biased or neither. The transparent
ops after the add (the format change back to ND) go into the fused op, whose
kernel writes the format its result is read in.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import Operation, SSAValue

from ...dialects import ge
from ...dialects.fused import RotaryMatmulOp
from .chains import broadcasts_to, matmul_bias, same_element_type
from .graph import both_orders, is_transparent, producer, shape, sole_user, through_format_changes
from .pattern import FusionPattern, Match


@dataclass(frozen=True)
class _Scaled:
    """One half of the sum: `(matmul [+ bias]) * factor`."""

    ops: list[Operation]
    matmul: ge.MatmulOp
    bias: SSAValue | None
    factor: SSAValue


def _biased_matmul(value: SSAValue) -> tuple[list[Operation], ge.MatmulOp, SSAValue | None] | None:
    """(ops, matmul, bias) if value = matmul(...) [+ a per-column bias], each
    intermediate used once."""
    owner = producer(value)
    if isinstance(owner, ge.MatmulOp):
        return [owner], owner, None
    if not isinstance(owner, ge.AddOp | ge.BiasAddOp):
        return None
    for source in owner.operands:
        matmul = producer(source, ge.MatmulOp)
        bias = matmul_bias(owner, source) if matmul is not None and source.has_one_use() else None
        if bias is not None and same_element_type(bias, value):
            return [matmul, owner], matmul, bias
    return None


def _scaled_product(value: SSAValue) -> _Scaled | None:
    """value = (matmul(...) [+ bias]) * factor, each intermediate used once, the
    factor broadcasting to the 2-D product."""
    mul = producer(value, ge.MulOp)
    if mul is None or not value.has_one_use():
        return None
    for product, factor in both_orders(mul):
        if not product.has_one_use() or len(shape(product)) != 2 or shape(value) != shape(product):
            continue
        if not (broadcasts_to(factor, shape(product)) and same_element_type(factor, product)):
            continue
        found = _biased_matmul(product)
        if found is not None:
            ops, matmul, bias = found
            return _Scaled([*ops, mul], matmul, bias, factor)
    return None


def _flags(op: ge.MatmulOp) -> dict[str, bool]:
    return {"transpose_a": op.attr_value("transpose_a"), "transpose_b": op.attr_value("transpose_b")}


class RotaryMatmulPattern(FusionPattern):
    """`(x @ W [+ b]) * cos + (x @ W' [+ b']) * sin` -> `fused.rotary_matmul`
    (the rotary embedding of a projection, as `ge-simplify` writes it on the rows)."""

    name = "rotary-matmul"
    anchors = (ge.AddOp,)

    def match(self, op: ge.AddOp) -> Match | None:
        if op.lhs is op.rhs:
            return None
        plain, rotated = _scaled_product(op.lhs), _scaled_product(op.rhs)
        if plain is None or rotated is None:
            return None
        mm_p, mm_r = plain.matmul, rotated.matmul
        if through_format_changes(mm_p.lhs) is not through_format_changes(mm_r.lhs) or mm_p.lhs.type != mm_r.lhs.type:
            return None
        if _flags(mm_p) != _flags(mm_r) or mm_p.result.type != mm_r.result.type or shape(op.result) != shape(mm_p.result):
            return None
        if (plain.bias is None) != (rotated.bias is None):
            return None
        ops, value = [*plain.ops, *rotated.ops, op], op.result
        while is_transparent(user := sole_user(value)) and shape(user.results[0]) == shape(value):
            ops.append(user)
            value = user.results[0]

        def build():
            weights = [mm_p.rhs, mm_r.rhs]
            biases = [plain.bias, rotated.bias] if plain.bias is not None else []
            return [
                RotaryMatmulOp.new(
                    mm_p.lhs, plain.factor, rotated.factor, *weights, *biases,
                    rotated=(1,), biased=bool(biases), result_type=[value.type], **_flags(mm_p),
                )
            ]

        return Match(ops, [value], build)
