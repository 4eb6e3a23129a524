"""`fused.flash_attention`: scaled dot-product attention as one kernel.

`softmax(mask(q k^T * scale)) v` computed block by block (the FlashAttention
scheme), so the (Sq, Sk) score matrix, the largest tensor of a transformer
layer, never reaches global memory.

Two layouts, as CANN's FlashAttentionScore / FusedInferAttentionScore have:

* `BNSD`: q (*batch, Sq, D), k (*batch, Sk, D), v (*batch, Sk, Dv) with equal
  batch dims (heads included); the result is (*batch, Sq, Dv).
* `BSH`: q (*batch, Sq, N*D), k (*batch, Sk, N*D), v (*batch, Sk, N*Dv) with
  `num_heads` = N; heads are split from the hidden dim inside the kernel and the
  result is (*batch, Sq, N*Dv). This absorbs the reshape/transpose pairs that
  exporters put around attention.

The mask broadcasts to the scores: (*batch, Sq, Sk) in BNSD, (*batch, N, Sq, Sk)
in BSH. An i1 mask keeps the scores where true and puts `mask_value` elsewhere;
a float mask is added. Dropout is the identity at inference.

`causal = true` states that the mask is lower-triangular: query row i sees the
keys j <= i + `causal_offset` and no other, in every (batch, head), and a hidden
score vanishes in the softmax (`lowering/graph_to_fused/causal_mask.py` proves
it from the mask's values). The mask still defines the result; the attribute
lets the kernel skip the key blocks above the diagonal and leave the blocks
below it unmasked.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.irdl import (
    AttrSizedOperandSegments,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    result_def,
)

from ...core import dtypes
from ..ge import BatchMatmulOp
from ..ge.base import Kind, attr, fail, like, require_float, same_element_type, shape_of
from .base import (
    FusedOp,
    by_name,
    ge_compute,
    masked_softmax,
    operand,
    require_dropout_ratio,
    require_mask,
)

LAYOUTS = ("BNSD", "BSH")


def _bnsd_shapes(q, k, v) -> tuple[int, ...]:
    """The scores' shape (*batch, Sq, Sk) after checking q, k, v in BNSD."""
    if len(q) < 2 or len(k) != len(q) or len(v) != len(q):
        raise fail(
            f"query, key and value must have one rank >= 2, got "
            f"{dtypes.format_shape(q)}, {dtypes.format_shape(k)}, {dtypes.format_shape(v)}"
        )
    if not q[:-2] == k[:-2] == v[:-2]:
        raise fail(f"batch dims differ: {q[:-2]}, {k[:-2]}, {v[:-2]}")
    if q[-1] != k[-1]:
        raise fail(f"query and key head dims differ: {q[-1]} vs {k[-1]}")
    if k[-2] != v[-2]:
        raise fail(f"key and value sequence lengths differ: {k[-2]} vs {v[-2]}")
    return (*q[:-1], k[-2])


def _split_heads(shape: tuple[int, ...], heads: int, what: str) -> tuple[int, ...]:
    """(*batch, S, N*D) -> (*batch, N, S, D), checking N divides the hidden dim."""
    if len(shape) < 2:
        raise fail(f"{what} must have rank >= 2 in layout BSH, got {dtypes.format_shape(shape)}")
    if heads <= 0 or shape[-1] % heads:
        raise fail(f"num_heads={heads} must divide the {what} hidden dim {shape[-1]}")
    return (*shape[:-2], heads, shape[-2], shape[-1] // heads)


def _to_bnsd(x: np.ndarray, heads: int) -> np.ndarray:
    return np.swapaxes(x.reshape(*x.shape[:-1], heads, x.shape[-1] // heads), -3, -2)


def _from_bnsd(x: np.ndarray) -> np.ndarray:
    x = np.swapaxes(x, -3, -2)
    return x.reshape(*x.shape[:-2], x.shape[-2] * x.shape[-1])


@irdl_op_definition
class FlashAttentionOp(FusedOp):
    """`softmax(mask(query key^T * scale)) value` (see the module docstring)."""

    name = "fused.flash_attention"
    query = operand_def(TensorType)
    key = operand_def(TensorType)
    value = operand_def(TensorType)
    mask = opt_operand_def(TensorType)
    result = result_def(TensorType)
    layout = attr(Kind.STR, "BNSD", choices=LAYOUTS)
    num_heads = attr(Kind.INT, 1)
    scale = attr(Kind.FLOAT, 1.0)
    mask_value = attr(Kind.FLOAT, 0.0)
    dropout = attr(Kind.FLOAT, 0.0)
    causal = attr(Kind.BOOL, False)
    causal_offset = attr(Kind.INT, 0)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    @classmethod
    def infer(cls, types, a, declared):
        t = by_name(types, a)
        element_type = same_element_type([t.query, t.key, t.value], "query, key and value")
        require_float(t.query, "query")
        require_dropout_ratio(a.dropout)
        q, k, v = shape_of(t.query), shape_of(t.key), shape_of(t.value)
        if a.layout == "BSH":
            q, k, v = (_split_heads(s, a.num_heads, w) for s, w in ((q, "query"), (k, "key"), (v, "value")))
        elif a.num_heads != 1:
            raise fail("num_heads applies to layout BSH only")
        scores = _bnsd_shapes(q, k, v)
        require_mask(operand(t, "mask"), scores, element_type)
        if a.causal and (operand(t, "mask") is None or a.causal_offset < 0):
            raise fail("causal needs a mask and causal_offset >= 0")
        out = (*q[:-1], v[-1])
        if a.layout == "BSH":
            out = (*out[:-3], out[-2], out[-3] * out[-1])
        return like(t.query, out)

    @classmethod
    def compute(cls, inputs, a, result_types):
        t = by_name(inputs, a)
        q, k, v = t.query, t.key, t.value
        if a.layout == "BSH":
            q, k, v = (_to_bnsd(x, a.num_heads) for x in (q, k, v))
        scores = ge_compute(BatchMatmulOp, [q, k], transpose_a=False, transpose_b=True)
        probs = masked_softmax(scores, operand(t, "mask"), a, axis=-1)
        out = ge_compute(BatchMatmulOp, [probs, v], transpose_a=False, transpose_b=False)
        return _from_bnsd(out) if a.layout == "BSH" else out


ATTENTION_OPS = (FlashAttentionOp,)
