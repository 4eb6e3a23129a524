"""Canonicalization patterns of the cube ops.

ONNX has no transpose flags on MatMul, so exporters write `MatMul(x,
Transpose(w))` (Gemm's transB, attention's K^T). The cube reads either
orientation for free, so a transpose that swaps the last two dims belongs in
the matmul's `transpose_a` / `transpose_b` flag.
"""

from __future__ import annotations

from xdsl.pattern_rewriter import PatternRewriter

from .canonicalization import GEPattern, defining_op, patterns_for
from .formats import Format, format_of
from .nn import BatchMatmulOp, MatmulOp
from .shape import TransposeOp


def _swap_last_two(perm: tuple[int, ...]) -> tuple[int, ...]:
    return (*perm[:-2], perm[-1], perm[-2])


def _absorbable(value) -> tuple[TransposeOp, tuple[int, ...]] | None:
    """If `value` is a transpose whose result equals "some cheaper transpose, then a
    swap of the last two dims", that transpose and the cheaper permutation. The
    cheaper one keeps the innermost dim in place (a batch permutation, or nothing)."""
    transpose = defining_op(value, TransposeOp)
    if transpose is None or format_of(value.type) != Format.ND:
        return None
    perm = tuple(transpose.attr_value("perm"))
    if len(perm) < 2 or perm[-2] != len(perm) - 1:
        return None
    rest = _swap_last_two(perm)
    identity = rest == tuple(range(len(rest)))
    if not identity and not value.has_one_use():
        return None  # would add a transpose rather than move one
    return transpose, rest


@patterns_for(MatmulOp, BatchMatmulOp)
class TransposeIntoMatmul(GEPattern):
    """matmul(transpose(x), y) -> matmul(x, y, transpose_a = !transpose_a) when the
    transpose swaps the last two dims (after an optional batch permutation, which
    stays); the same for the right operand and transpose_b."""

    COUNTER = "transposes folded into matmul"

    def match_and_rewrite(self, op: MatmulOp | BatchMatmulOp, rewriter: PatternRewriter):
        a = op.attr_values()
        for index, flag in ((0, "transpose_a"), (1, "transpose_b")):
            found = _absorbable(op.operands[index])
            if found is None:
                continue
            transpose, rest = found
            new_ops = []
            operand = transpose.input
            if rest != tuple(range(len(rest))):
                inner = TransposeOp.new(operand, perm=rest)
                inner.result.name_hint = transpose.result.name_hint
                new_ops.append(inner)
                operand = inner.result
            operands = list(op.operands)
            operands[index] = operand
            flags = {"transpose_a": a.transpose_a, "transpose_b": a.transpose_b}
            flags[flag] = not flags[flag]
            matmul = type(op).new(*operands, result_type=op.result.type, **flags)
            matmul.location = op.location
            rewriter.replace(op, [*new_ops, matmul])
            return
