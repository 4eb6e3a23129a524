"""Named fusion of scaled dot-product attention into `fused.flash_attention`.

Matched chain (anchor: the first batch_matmul)::

    scores = batch_matmul(q [* c], k^T [* c])   [* c | / c]   [where(mask, ., fill) | + mask]
    probs  = softmax(scores, last axis)   [dropout]
    out    = batch_matmul(probs, v)

In the BNSD layout the fused op takes q, k, v as the batch_matmuls did (a key
given already transposed gets a `ge.transpose` back). When q, k and v are all
`transpose(reshape(x))` head splits of (..., S, N*D) tensors and the output is
merged back the same way, the fused op takes the unsplit tensors in layout BSH
with `num_heads = N`, absorbing the reshapes and transposes too (CANN's
FlashAttentionScore input_layout "BSH").
"""

from __future__ import annotations

from dataclasses import dataclass

import math

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from ...dialects import ge
from ...dialects.ge.formats import Format, format_of
from ...dialects.fused import FlashAttentionOp
from .causal_mask import causal_offset
from .chains import mask_step, scale_step, transparent_tail
from .graph import producer, shape, skip_back, skip_forward, sole_user, splat_constant, through_format_changes
from .pattern import FusionPattern, Match


@dataclass
class _Heads:
    """A head split `transpose(reshape(source))` or merge, and its ops. `shape` is
    the (*b, S, N*D) the fused op sees; `source` may be another flattening of
    the same rows (a 2-D GEMM's (prod(b) S, N*D)), viewed as `shape` by a
    reshape the pattern adds."""

    source: SSAValue
    heads: int
    ops: list[Operation]
    shape: tuple[int, ...] = ()

    def viewed(self) -> tuple[list[Operation], SSAValue]:
        """(the reshape giving `source` its (*b, S, N*D) shape, or none; that value)."""
        if shape(self.source) == self.shape:
            return [], self.source
        view = ge.ReshapeOp.new(self.source, result_type=TensorType(self.source.type.element_type, self.shape))
        return [view], view.result


def _head_perm(rank: int, key_transposed: bool) -> tuple[int, ...]:
    """(*b, S, N, D) -> (*b, N, S, D), or (*b, N, D, S) for a transposed key."""
    batch = tuple(range(rank - 3))
    tail = (rank - 2, rank - 1, rank - 3) if key_transposed else (rank - 2, rank - 3, rank - 1)
    return (*batch, *tail)


def _rows_of(flat: tuple[int, ...], split: tuple[int, ...]) -> bool:
    """`flat` holds the rows of the (*b, S, N, D) `split` with heads merged:
    (*b, S, N*D) itself, or any reshaping of its rows (*b, S) as long as the
    tensor is ND (a reshape of it is then a view, no kernel)."""
    hidden = split[-2] * split[-1]
    if tuple(flat) == (*split[:-2], hidden):
        return True
    return len(flat) >= 1 and flat[-1] == hidden and math.prod(flat[:-1]) == math.prod(split[:-2])


def _split_heads(value: SSAValue, key_transposed: bool = False) -> _Heads | None:
    """`value` = transpose(reshape(source)) splitting (*b, S, N*D) into heads,
    looking through single-use format changes on the way."""
    ops: list[Operation] = []
    transpose = producer(skip_back(value, ops), ge.TransposeOp)
    if transpose is None or not transpose.result.has_one_use():
        return None
    reshape = producer(skip_back(transpose.input, ops), ge.ReshapeOp)
    if reshape is None or not reshape.result.has_one_use():
        return None
    flat, split = shape(reshape.input), shape(reshape.result)
    if len(split) < 3 or not _rows_of(flat, split) or transpose.attr_value("perm") != _head_perm(len(split), key_transposed):
        return None
    merged = (*split[:-2], split[-2] * split[-1])
    if flat != merged and not _is_nd(reshape.input):
        return None
    return _Heads(reshape.input, split[-2], [*ops, reshape, transpose], merged)


def _merge_heads(value: SSAValue) -> _Heads | None:
    """`value` (*b, N, S, Dv) merged back to (*b, S, N*Dv) by transpose + reshape
    (or to another ND flattening of those rows)."""
    ops: list[Operation] = []
    transpose = sole_user(skip_forward(value, ops))
    if not isinstance(transpose, ge.TransposeOp):
        return None
    rank = len(shape(value))
    if rank < 3 or transpose.attr_value("perm") != _head_perm(rank, False):
        return None
    ops.append(transpose)
    reshape = sole_user(skip_forward(transpose.result, ops))
    if not isinstance(reshape, ge.ReshapeOp):
        return None
    result, split = shape(reshape.result), shape(transpose.result)
    merged = (*split[:-2], split[-2] * split[-1])
    if not _rows_of(result, split) or (result != merged and not _is_nd(reshape.result)):
        return None
    ops.append(reshape)
    if result != merged:  # the view after the fused op keeps the format changes after it
        return _Heads(reshape.result, split[-2], ops, merged)
    return _Heads(skip_forward(reshape.result, ops), split[-2], ops, merged)


def _is_nd(value: SSAValue) -> bool:
    return format_of(value.type) == Format.ND


@dataclass
class _Attention:
    ops: list[Operation]
    q: SSAValue
    k: SSAValue  # as the first batch_matmul's rhs
    key_transposed: bool
    v: SSAValue
    out: SSAValue
    scale: float = 1.0
    mask: SSAValue | None = None
    mask_value: float = 0.0
    dropout: float = 0.0
    scores: tuple[int, ...] = ()  # (*batch, Sq, Sk), as the mask sees them


def _prescaled(value: SSAValue, ops: list[Operation]) -> tuple[SSAValue, float]:
    """(x, c) if `value` = x * c or x / (1 / c) for a splat constant c, used only
    by the scores product (SDPA's decomposition scales q and k by sqrt(scale)
    each; some exports scale q alone), else (value, 1)."""
    absorbed: list[Operation] = []
    scaled = skip_back(value, absorbed)
    op = producer(scaled)
    if not isinstance(op, ge.MulOp | ge.DivOp) or not scaled.has_one_use():
        return value, 1.0
    for x in op.operands:
        step = scale_step(op, x)
        if step is not None and splat_constant(x) is None:
            ops += [*absorbed, op]
            return x, step.scale
    return value, 1.0


def _attention_chain(bmm1: ge.BatchMatmulOp) -> _Attention | None:
    """The chain from the scores product to the output product, looking through
    transparent ops (format changes, dropout) between the steps."""
    if bmm1.attr_value("transpose_a"):
        return None
    ops: list[Operation] = [bmm1]
    q, q_scale = _prescaled(bmm1.lhs, ops)
    k, k_scale = _prescaled(bmm1.rhs, ops)
    a = _Attention(ops, q, k, not bmm1.attr_value("transpose_b"), q, bmm1.result, scale=q_scale * k_scale)
    v = skip_forward(bmm1.result, ops)
    if (s := scale_step(sole_user(v), v)) is not None:
        ops.append(s.op)
        v, a.scale = skip_forward(s.op.results[0], ops), a.scale * s.scale
    if (m := mask_step(sole_user(v), v)) is not None:
        ops.append(m.op)
        a.scores = shape(v)
        v, a.mask, a.mask_value = skip_forward(m.op.results[0], ops), m.mask, m.mask_value
    softmax = sole_user(v)
    rank = len(shape(v))
    if not isinstance(softmax, ge.SoftmaxOp) or softmax.attr_value("axis") % rank != rank - 1:
        return None
    ops.append(softmax)
    v, tail, a.dropout = transparent_tail(softmax.result)
    ops += tail
    bmm2 = sole_user(v)
    if not isinstance(bmm2, ge.BatchMatmulOp) or bmm2.lhs is not v or bmm2.rhs is v:
        return None
    if bmm2.attr_value("transpose_a") or bmm2.attr_value("transpose_b"):
        return None
    ops.append(bmm2)
    a.v, a.out = bmm2.rhs, bmm2.result
    q, v_shape = shape(a.q), shape(a.v)
    if not q[:-2] == shape(a.k)[:-2] == v_shape[:-2]:
        return None  # broadcast batch dims: not a flash-attention shape
    return a


class FlashAttentionPattern(FusionPattern):
    """batch_matmul -> [scale] -> [mask] -> softmax -> [dropout] -> batch_matmul
    -> `fused.flash_attention` (BSH layout when the head splits / merge are
    there to absorb, else BNSD)."""

    name = "flash-attention"
    anchors = (ge.BatchMatmulOp,)

    def match(self, op: ge.BatchMatmulOp) -> Match | None:
        a = _attention_chain(op)
        if a is None:
            return None
        attrs = {"scale": a.scale, "mask_value": a.mask_value, "dropout": a.dropout}
        offset = causal_offset(a.mask, a.mask_value, a.scores)
        if offset is not None:
            attrs |= {"causal": True, "causal_offset": offset}
        bsh = self._bsh(a)
        if bsh is not None:
            q, k, v, out = bsh
            ops = [*a.ops, *q.ops, *k.ops, *v.ops, *out.ops]
            viewed_out = shape(out.source) != out.shape
            return Match(ops, [out.source], lambda: self._bsh_ops(a, bsh, attrs), fused_at=-2 if viewed_out else -1)
        out = skip_forward(a.out, a.ops)
        return Match(a.ops, [out], lambda: self._bnsd(a, out, attrs))

    @staticmethod
    def _bsh(a: _Attention) -> tuple[_Heads, _Heads, _Heads, _Heads] | None:
        parts = (_split_heads(a.q), _split_heads(a.k, a.key_transposed), _split_heads(a.v), _merge_heads(a.out))
        if any(p is None for p in parts) or len({p.heads for p in parts}) != 1:
            return None
        return parts

    @staticmethod
    def _bsh_ops(a: _Attention, bsh: tuple[_Heads, _Heads, _Heads, _Heads], attrs: dict) -> list[Operation]:
        """Views of q, k, v as (*b, S, N*D) where their producers flattened the rows
        differently, the fused op, and the view of its result as the value the
        merge gave (the fused op is then last but one: `Match.fused_at`)."""
        q, k, v, out = bsh
        new_ops: list[Operation] = []
        viewed = []
        for heads in (q, k, v):
            views, value = heads.viewed()
            new_ops += views
            viewed.append(value)
        same = shape(out.source) == out.shape
        result_type = out.source.type if same else TensorType(out.source.type.element_type, out.shape)
        fused_op = FlashAttentionOp.new(*viewed, mask=a.mask, layout="BSH", num_heads=q.heads, result_type=result_type, **attrs)
        new_ops.append(fused_op)
        if not same:
            new_ops.append(ge.ReshapeOp.new(fused_op.result, result_type=out.source.type))
        return new_ops

    @staticmethod
    def _bnsd(a: _Attention, out: SSAValue, attrs: dict) -> list[Operation]:
        """The key of a scores product without transpose_b is (..., D, Sk): a
        transpose gives the fused op its (..., Sk, D)."""
        new_ops: list[Operation] = []
        key = through_format_changes(a.k)
        if a.key_transposed:
            rank = len(shape(key))
            perm = (*range(rank - 2), rank - 1, rank - 2)
            new_ops.append(ge.TransposeOp.new(key, perm=perm))
            key = new_ops[-1].results[0]
        new_ops.append(FlashAttentionOp.new(a.q, key, a.v, mask=a.mask, layout="BNSD", result_type=out.type, **attrs))
        return new_ops

