"""The one table from ATen ops to ge ops.

Every entry maps an ATen overload (the core ATen op set that PyTorch's
decompositions leave, plus the few composite ops kept whole because ge has them:
`_safe_softmax`, `_transformer_encoder_layer_fwd`) to a converter that builds ge
ops with the `GraphBuilder`. A converter takes the node's arguments as the ATen
schema names them: graph values arrive as builder `Tensor`s, literals as Python
values. It returns the result Tensor (a list for ops with several results, None
where a result is not produced). `Conversion` (convert.py) checks each result
against the shape and dtype PyTorch traced for the node, so a wrong shape rule
here is caught at the node, not as a wrong number later.

An entry may refuse a particular node (`refuse`: an argument ge cannot express,
say a training-mode batch norm): the node then runs in eager PyTorch like an op
with no entry. Ops whose inputs are all constants (arange, full, the rotary
tables, masks built from sizes) never reach this table: capture folds them.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch.fx import Node

from ...dialects.ge import (
    AbsOp,
    AddOp,
    BatchNormOp,
    BiasAddOp,
    Conv2DOp,
    DivOp,
    ErfOp,
    ExpOp,
    GatherOp,
    GeluOp,
    LayerNormOp,
    LeakyReluOp,
    LogOp,
    LogSoftmaxOp,
    MaximumOp,
    MaxPool2DOp,
    AvgPool2DOp,
    MinimumOp,
    MulOp,
    NegOp,
    PowOp,
    ReciprocalOp,
    ReduceMaxOp,
    ReduceMeanOp,
    ReduceSumOp,
    ReluOp,
    ReshapeOp,
    RsqrtOp,
    SigmoidOp,
    SiluOp,
    SoftmaxOp,
    SplitOp,
    SqrtOp,
    SubOp,
    TanhOp,
    TransposeOp,
    WhereOp,
)
from ...dialects.ge.canonicalization import splat_scalar
from .. import builder, ops
from ..converters.normalization import _group_norm
from ..builder import Tensor

aten = torch.ops.aten


@dataclass(frozen=True)
class Entry:
    """How one ATen overload becomes ge: `convert(c, *args, **kwargs)` builds it,
    `refuse(node)` names why a particular node cannot be (None: it can)."""

    convert: Callable
    refuse: Callable[[Node], str | None]


TABLE: dict[object, Entry] = {}


def _accept(node: Node) -> str | None:
    return None


def converts(*targets, refuse: Callable[[Node], str | None] = _accept):
    def register(convert: Callable) -> Callable:
        for target in targets:
            TABLE[target] = Entry(convert, refuse)
        return convert

    return register


def refusal(node: Node) -> str | None:
    """Why `node` cannot be converted (no entry, or its entry refuses), or None."""
    entry = TABLE.get(node.target)
    if entry is None:
        return "has no ge conversion"
    return entry.refuse(node)


# ---- refusals shared by several entries -------------------------------------------------


def _only_first_result(node: Node) -> str | None:
    """Ops with auxiliary results (statistics, indices) convert their main one only."""
    for user in node.users:
        if user.target is not operator.getitem or user.args[1] != 0:
            return "uses a result other than the first (only the main result converts)"
    return None


def _float_result(node: Node) -> str | None:
    val = node.meta.get("val")
    if isinstance(val, torch.Tensor) and not val.dtype.is_floating_point:
        return f"computes on {val.dtype} (ge's op is defined on floats)"
    return None


# ---- elementwise -------------------------------------------------------------------------


def _binary(op_class):
    def convert(c, a, b, alpha=1):
        a, b = c.operands(a, b)
        if alpha != 1:
            b = c.g.op(MulOp, b, c.scalar(alpha))
        return _elementwise(c, op_class, a, b)

    return convert


def _elementwise(c, op_class, a: Tensor, b: Tensor) -> Tensor:
    """`op(a, b)`; where one operand is a view that only adds leading unit dims
    to a tensor of the other's rank (not to scalars or bias vectors: GPT-2's
    `gelu_new` then fused differently from its export, 1.24x the cycles) (PyTorch's `linear` of a 3-D input
    views its 2-D product back to 3-D), the op reads the tensor before the view
    and the view moves to the result: broadcasting adds those dims anyway. The
    product and the op are then adjacent, as an ONNX export writes them (an LSTM
    step's `linear(h) + x_t` fuses as the product's residual)."""
    a_source, b_source = _before_unit_view(a), _before_unit_view(b)
    if a_source is not None and a_source.rank == b.rank:
        a = a_source
    elif b_source is not None and b_source.rank == a.rank:
        b = b_source
    y = c.g.op(op_class, a, b)
    shape = c.result_shape()
    return y if y.shape == shape else ops.reshape(y, shape)


def _before_unit_view(x: Tensor) -> Tensor | None:
    """The tensor `x` is a reshape of, when that reshape only adds leading 1s."""
    op = x.value.owner
    if not isinstance(op, ReshapeOp):
        return None
    source = Tensor(x.graph, op.input)
    extra = x.rank - source.rank
    return source if extra > 0 and x.shape == (1,) * extra + source.shape else None


converts(aten.add.Tensor, aten.add.Scalar)(_binary(AddOp))
converts(aten.sub.Tensor, aten.sub.Scalar)(_binary(SubOp))
converts(aten.mul.Tensor, aten.mul.Scalar)(_binary(MulOp))
converts(aten.maximum.default)(_binary(MaximumOp))
converts(aten.minimum.default)(_binary(MinimumOp))
converts(aten.pow.Tensor_Scalar, aten.pow.Tensor_Tensor, refuse=_float_result)(_binary(PowOp))


def _true_division(node: Node) -> str | None:
    mode = node.kwargs.get("rounding_mode")
    return None if mode is None else f"rounding_mode={mode!r} (ge.div is true division)"


@converts(aten.div.Tensor, aten.div.Scalar, aten.div.Tensor_mode, refuse=_true_division)
def div(c, a, b, rounding_mode=None):
    return _elementwise(c, DivOp, *c.operands(a, b))


def _unary(op_class):
    def convert(c, x):
        (x,) = c.operands(x)
        return c.g.op(op_class, x)

    return convert


for _target, _op_class in (
    (aten.neg.default, NegOp),
    (aten.abs.default, AbsOp),
    (aten.relu.default, ReluOp),
):
    converts(_target)(_unary(_op_class))
for _target, _op_class in (
    (aten.exp.default, ExpOp),
    (aten.log.default, LogOp),
    (aten.sqrt.default, SqrtOp),
    (aten.rsqrt.default, RsqrtOp),
    (aten.reciprocal.default, ReciprocalOp),
    (aten.tanh.default, TanhOp),
    (aten.sigmoid.default, SigmoidOp),
    (aten.silu.default, SiluOp),
    (aten.erf.default, ErfOp),
):
    converts(_target, refuse=_float_result)(_unary(_op_class))


@converts(aten.gelu.default)
def gelu(c, x, approximate="none"):
    return c.g.op(GeluOp, x, approximate=approximate)


@converts(aten.leaky_relu.default)
def leaky_relu(c, x, negative_slope=0.01):
    return c.g.op(LeakyReluOp, x, alpha=float(negative_slope))


@converts(aten.hardtanh.default, aten.clamp.default)
def clamp(c, x, low=None, high=None):
    """hardtanh (ReLU6) and clamp: a maximum with the floor, a minimum with the ceiling."""
    (x,) = c.operands(x)
    if low is not None:
        x = c.g.op(MaximumOp, x, c.scalar(low))
    if high is not None:
        x = c.g.op(MinimumOp, x, c.scalar(high))
    return x


@converts(aten.where.self)
def where(c, condition, x, y):
    x, y = c.operands(x, y)
    return c.g.op(WhereOp, condition, x, y)


@converts(aten._to_copy.default, aten.clone.default, aten.alias.default, aten.detach.default,
          aten.lift_fresh_copy.default)
def copy(c, x, dtype=None, **_layout):
    """Copies are values already (ge has value semantics); a dtype change is a cast."""
    target = c.result_element_type()
    return x if x.dtype == target else ops.cast(x, target)


# ---- matrix products and convolution ------------------------------------------------------


@converts(aten.mm.default)
def mm(c, a, b):
    return builder.matmul(*c.operands(a, b))


@converts(aten.bmm.default)
def bmm(c, a, b):
    """PyTorch's matmul of rank > 3 decomposes into views merging the batch dims, a
    3-D bmm and a view back; scaled-dot-product attention also scales q and k by
    sqrt(scale) each. Looking through both gives the product as written
    (`batch_matmul(q, k^T) * scale` on the unmerged batch), the form ONNX
    exporters emit and attention fusion recognises; the views left unused vanish."""
    a, b = c.operands(a, b)
    a4, b4 = _unmerged_batch(a), _unmerged_batch(b)
    if a4 is None or b4 is None or a4.shape[:-2] != b4.shape[:-2]:
        return builder.matmul(a, b)
    (a4, scale_a), (b4, scale_b) = _scalar_factor(a4), _scalar_factor(b4)
    y = builder.matmul(a4, b4)
    if scale_a is not None or scale_b is not None:
        y = y * c.scalar((1.0 if scale_a is None else scale_a) * (1.0 if scale_b is None else scale_b))
    return ops.reshape(y, [a.shape[0], *y.shape[-2:]])


def _unmerged_batch(x: Tensor) -> Tensor | None:
    """The tensor `x` (B, M, N) was reshaped from, when that had the batch B split
    into several dims and the same last two."""
    op = x.value.owner
    if not isinstance(op, ReshapeOp):
        return None
    source = Tensor(x.graph, op.input)
    if source.rank <= 3 or source.shape[-2:] != x.shape[-2:] or int(np.prod(source.shape[:-2])) != x.shape[0]:
        return None
    return source


def _scalar_factor(x: Tensor) -> tuple[Tensor, float | None]:
    """`x` = y * scalar constant -> (y, scalar); else (x, None)."""
    op = x.value.owner
    if isinstance(op, MulOp) and op.rhs.has_one_use():
        factor = splat_scalar(op.rhs)
        if isinstance(factor, float) and tuple(op.rhs.type.get_shape()) == ():
            return Tensor(x.graph, op.lhs), factor
    return x, None


@converts(aten.addmm.default)
def addmm(c, bias, a, b, beta=1, alpha=1):
    """`beta * bias + alpha * a @ b`: a matmul and a bias_add (the form fusion patterns
    look for) when the bias is a vector of N."""
    bias, a, b = c.operands(bias, a, b)
    y = builder.matmul(a, b)
    if alpha != 1:
        y = y * c.scalar(alpha)
    if beta == 0:
        return y
    if beta != 1:
        bias = bias * c.scalar(beta)
    if bias.shape == (y.shape[1],):
        return c.g.op(BiasAddOp, y, bias, axis=-1)
    return y + bias


def _plain_conv(node: Node) -> str | None:
    _, weight, _, stride, padding, dilation, transposed, output_padding, groups = node.args[:9]
    if transposed:
        return "is a transposed convolution (ge.conv2d is a direct one)"
    if len(stride) not in (1, 2):
        return f"is a {len(stride)}-D convolution (ge.conv2d is 2-D, 1-D goes through it)"
    return None


@converts(aten.convolution.default, refuse=_plain_conv)
def convolution(c, x, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    """`ge.conv2d` (and a bias_add); a 1-D convolution is the 2-D one over a unit
    height, as the ONNX importer converts a 1-D Conv."""
    x, weight = c.operands(x, weight)
    one_d = len(stride) == 1
    if one_d:
        x = ops.reshape(x, [*x.shape[:2], 1, x.shape[2]])
        weight = ops.reshape(weight, [*weight.shape[:2], 1, weight.shape[2]])
    stride, dilation = ([1] * one_d + [int(v) for v in a] for a in (stride, dilation))
    padding = [0] * one_d + [int(p) for p in padding]
    pads = [padding[0], padding[1], padding[0], padding[1]]
    y = c.g.op(Conv2DOp, x, weight, strides=stride, pads=pads, dilations=dilation, groups=int(groups))
    if one_d:
        y = ops.reshape(y, [y.shape[0], y.shape[1], y.shape[3]])
    if bias is None:
        return y
    (bias,) = c.operands(bias)
    return c.g.op(BiasAddOp, y, bias, axis=1)


# ---- normalisation and softmax ------------------------------------------------------------


def _softmax_convert(op_class):
    def convert(c, x, dim, half_to_float=False):
        return c.g.op(op_class, x, axis=int(dim))

    return convert


converts(aten._softmax.default)(_softmax_convert(SoftmaxOp))
converts(aten._log_softmax.default)(_softmax_convert(LogSoftmaxOp))


def _no_minus_infinity_upstream(node: Node) -> str | None:
    """`_safe_softmax` gives 0 where a whole row is -inf and plain softmax NaN; the
    two agree unless a row can be all -inf. Masks are where -inf comes from: a -inf
    literal upstream could mask anything, a constant mask only the rows it masks
    whole (a causal mask masks none). Without either the node is `ge.softmax`,
    which fuses into attention like any softmax."""
    rank = node.args[0].meta["val"].dim()
    dim = int(node.args[1]) % rank - rank  # counted from the end, where broadcasting aligns
    seen, stack = set(), [node.args[0]]
    while stack:
        n = stack.pop()
        if not isinstance(n, Node) or n in seen:
            continue
        seen.add(n)
        if _minus_infinity_literal(n) or _masks_whole_rows(n.meta.get("constant"), dim):
            return f"may see a row of -inf (from '{n.name}'), where it differs from softmax"
        stack.extend(n.all_input_nodes)
    return None


def _minus_infinity_literal(n: Node) -> bool:
    return any(isinstance(a, float) and a == float("-inf") for a in (*n.args, *n.kwargs.values()))


def _masks_whole_rows(value, dim: int) -> bool:
    """A constant with a -inf in every element of some row along `dim` (negative: the
    softmax's axis counted from the end, where broadcasting aligns it)."""
    if not isinstance(value, torch.Tensor) or not value.is_floating_point() or value.dim() == 0:
        return False
    minus_inf = torch.isneginf(value)
    if not bool(minus_inf.any()):
        return False
    if -dim > value.dim() or value.shape[dim] == 1:
        return True  # broadcast along the row: one -inf fills it
    return bool(minus_inf.all(dim=dim).any())


converts(aten._safe_softmax.default, refuse=_no_minus_infinity_upstream)(_softmax_convert(SoftmaxOp))


@converts(aten.native_layer_norm.default, refuse=_only_first_result)
def native_layer_norm(c, x, normalized_shape, weight, bias, eps):
    x, weight, bias = c.operands(x, c.ones_if_none(weight, normalized_shape), c.zeros_if_none(bias, normalized_shape))
    return [c.g.op(LayerNormOp, x, weight, bias, axis=-len(normalized_shape), epsilon=float(eps)), None, None]


def _inference_batch_norm(node: Node) -> str | None:
    training = node.args[5] if node.target == aten.native_batch_norm.default else False
    if training:
        return "is a training-mode batch norm (batch statistics); call model.eval()"
    return _only_first_result(node)


@converts(aten.native_batch_norm.default, aten._native_batch_norm_legit_no_training.default,
          refuse=_inference_batch_norm)
def native_batch_norm(c, x, weight, bias, running_mean, running_var, *rest):
    eps = rest[-1]
    channels = [x.shape[1]]
    x, weight, bias, mean, var = c.operands(
        x, c.ones_if_none(weight, channels), c.zeros_if_none(bias, channels), running_mean, running_var)
    return [c.g.op(BatchNormOp, x, weight, bias, mean, var, epsilon=float(eps)), None, None]


@converts(aten.native_group_norm.default, refuse=_only_first_result)
def native_group_norm(c, x, weight, bias, n, channels, spatial, group, eps):
    """Statistics per (instance, group of channels) over the group's channels and
    every spatial position, then a per-channel scale and shift: the ONNX
    importer's GroupNormalization (`_group_norm`)."""
    channels = int(channels)
    x, weight, bias = c.operands(x, c.ones_if_none(weight, [channels]), c.zeros_if_none(bias, [channels]))
    scale, shift = (ops.reshape(p, [channels, 1]) for p in (weight, bias))
    return [_group_norm(c, x, int(group), scale, shift, float(eps)), None, None]


# ---- pooling and reductions ---------------------------------------------------------------


def _pool_args(x: Tensor, kernel_size, stride, padding, dilation=(1, 1)):
    kernel = [int(k) for k in kernel_size] * (2 // len(kernel_size))
    stride = [int(s) for s in stride] * (2 // len(stride)) if stride else kernel
    padding = [int(p) for p in padding] * (2 // len(padding))
    return kernel, stride, [padding[0], padding[1], padding[0], padding[1]]


def _undilated_pool(node: Node) -> str | None:
    dilation = node.args[4] if len(node.args) > 4 else [1]
    if any(int(d) != 1 for d in dilation):
        return "is a dilated pooling window"
    return _only_first_result(node)


@converts(aten.max_pool2d_with_indices.default, refuse=_undilated_pool)
def max_pool2d(c, x, kernel_size, stride=(), padding=(0,), dilation=(1,), ceil_mode=False):
    kernel, stride, pads = _pool_args(x, kernel_size, stride, padding)
    return [c.g.op(MaxPool2DOp, x, kernel=kernel, strides=stride, pads=pads, ceil_mode=bool(ceil_mode)), None]


def _no_divisor_override(node: Node) -> str | None:
    return None if len(node.args) < 7 or node.args[6] is None else "has a divisor_override"


@converts(aten.avg_pool2d.default, refuse=_no_divisor_override)
def avg_pool2d(c, x, kernel_size, stride=(), padding=(0,), ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    kernel, stride, pads = _pool_args(x, kernel_size, stride, padding)
    return c.g.op(AvgPool2DOp, x, kernel=kernel, strides=stride, pads=pads, ceil_mode=bool(ceil_mode),
                  count_include_pad=bool(count_include_pad))


def _reduction(op_class):
    """The reduction as written: an image's spatial mean (`adaptive_avg_pool2d` to
    1x1) stays a `reduce_mean` over H and W, as the dynamo ONNX exporter writes it,
    so both paths reach the same graph (a `global_avg_pool` runs in NC1HWC0 and
    makes the convolution before it write NC1HWC0, ResNet-18 +5% cycles); axes
    sorted, as exporters write them (`adaptive_avg_pool2d` gives [-1, -2])."""

    def convert(c, x, dim=None, keepdim=False, dtype=None):
        axes = range(x.rank) if dim is None or len(dim) == 0 else sorted({int(d) % x.rank for d in dim})
        return c.g.op(op_class, x, axes=list(axes), keepdims=bool(keepdim))

    return convert


converts(aten.mean.dim, refuse=_float_result)(_reduction(ReduceMeanOp))
converts(aten.sum.dim_IntList)(_reduction(ReduceSumOp))
converts(aten.amax.default)(_reduction(ReduceMaxOp))


# ---- shapes -------------------------------------------------------------------------------


@converts(aten.view.default, aten._unsafe_view.default, aten.reshape.default, aten.view_copy.default,
          aten.squeeze.dim, aten.squeeze.dims, aten.squeeze.default, aten.unsqueeze.default)
def view(c, x, *_shape):
    """Every shape change that keeps the elements in order is a reshape to the traced shape."""
    shape = c.result_shape()
    return x if x.shape == shape else ops.reshape(x, shape)


@converts(aten.permute.default, aten.permute_copy.default)
def permute(c, x, dims):
    perm = [int(d) % x.rank for d in dims]
    return x if perm == list(range(x.rank)) else c.g.op(TransposeOp, x, perm=perm)


@converts(aten.t.default, aten.transpose.int)
def transpose(c, x, dim0=0, dim1=1):
    perm = list(range(x.rank))
    if x.rank >= 2:
        a, b = int(dim0) % x.rank, int(dim1) % x.rank
        perm[a], perm[b] = perm[b], perm[a]
    return x if perm == list(range(x.rank)) else c.g.op(TransposeOp, x, perm=perm)


@converts(aten.expand.default, aten.expand_copy.default)
def expand(c, x, size, implicit=False):
    shape = c.result_shape()
    return x if x.shape == shape else ops.expand(x, shape)


@converts(aten.slice.Tensor, aten.slice_copy.Tensor)
def slice_(c, x, dim=0, start=None, end=None, step=1):
    start = 0 if start is None else int(start)
    end = x.shape[int(dim)] if end is None else int(end)
    y = ops.slice(x, [start], [end], axes=[int(dim)], steps=[int(step)])
    return x if y.shape == x.shape else y


@converts(aten.select.int, aten.select_copy.int)
def select(c, x, dim, index):
    dim = int(dim) % x.rank
    index = int(index) % x.shape[dim]
    return ops.reshape(ops.slice(x, [index], [index + 1], axes=[dim]), c.result_shape())


@converts(aten.cat.default)
def cat(c, tensors, dim=0):
    tensors = c.operands(*[t for t in tensors if t.shape != (0,)])
    return tensors[0] if len(tensors) == 1 else ops.concat(tensors, axis=int(dim) % tensors[0].rank)


@converts(aten.split_with_sizes.default, aten.split_with_sizes_copy.default, aten.split.Tensor,
          aten.split_copy.Tensor)
def split(c, x, split_size, dim=0):
    dim = int(dim) % x.rank
    sizes = [int(s) for s in split_size] if isinstance(split_size, Sequence) else _chunks(x.shape[dim], int(split_size))
    pieces = c.g.op(SplitOp, x, axis=dim, sizes=sizes)
    return pieces if isinstance(pieces, list) else [pieces]


def _chunks(size: int, chunk: int) -> list[int]:
    return [min(chunk, size - start) for start in range(0, size, chunk)]


@converts(aten.embedding.default)
def embedding(c, weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """A lookup of rows: `ge.gather` on axis 0 (padding_idx only matters to gradients)."""
    (weight,) = c.operands(weight)
    return c.g.op(GatherOp, weight, indices, axis=0)


@converts(aten.index_select.default)
def index_select(c, x, dim, index):
    return c.g.op(GatherOp, x, index, axis=int(dim) % x.rank)


@converts(operator.getitem)
def getitem(c, values, index):
    return values[index]


# ---- composite modules PyTorch keeps whole ------------------------------------------------


def _unmasked_encoder_layer(node: Node) -> str | None:
    mask = node.args[18] if len(node.args) > 18 else node.kwargs.get("mask")
    return None if mask is None else "has an attention mask (the fast path's masks are not converted)"


@converts(aten._transformer_encoder_layer_fwd.default, refuse=_unmasked_encoder_layer)
def transformer_encoder_layer(c, src, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight, proj_bias,
                              use_gelu, norm_first, eps, norm_weight_1, norm_bias_1, norm_weight_2, norm_bias_2,
                              ffn_weight_1, ffn_bias_1, ffn_weight_2, ffn_bias_2, mask=None, mask_type=None):
    """`nn.TransformerEncoderLayer`'s inference fast path (taken under no_grad), as the
    layer it computes: self-attention, a residual and a norm, the feed-forward
    network, a residual and a norm (norms first when `norm_first`)."""
    src, qkv_weight, qkv_bias, proj_weight, proj_bias = c.operands(src, qkv_weight, qkv_bias, proj_weight, proj_bias)
    n1w, n1b, n2w, n2b, f1w, f1b, f2w, f2b = c.operands(norm_weight_1, norm_bias_1, norm_weight_2, norm_bias_2,
                                                        ffn_weight_1, ffn_bias_1, ffn_weight_2, ffn_bias_2)
    *lead, seq, width = src.shape
    head = width // int(num_heads)

    def linear(x, w, b):
        flat = ops.reshape(x, [-1, x.shape[-1]])
        y = c.g.op(BiasAddOp, builder.matmul(flat, w, transpose_b=True), b, axis=-1)
        return ops.reshape(y, [*x.shape[:-1], w.shape[0]])

    def norm(x, w, b):
        return c.g.op(LayerNormOp, x, w, b, axis=-1, epsilon=float(eps))

    def attention(x):
        q, k, v = ops.split(linear(x, qkv_weight, qkv_bias), axis=x.rank - 1, sizes=[width] * 3)
        heads = [*lead, seq, int(num_heads), head]
        order = [*range(len(lead)), len(lead) + 1, len(lead), len(lead) + 2]
        q, k, v = (c.g.op(TransposeOp, ops.reshape(t, heads), perm=order) for t in (q, k, v))
        scores = builder.matmul(q, k, transpose_b=True) * c.scalar(1.0 / head**0.5)
        context = builder.matmul(c.g.op(SoftmaxOp, scores, axis=-1), v)
        merged = ops.reshape(c.g.op(TransposeOp, context, perm=order), [*lead, seq, width])
        return linear(merged, proj_weight, proj_bias)

    def feed_forward(x):
        h = linear(x, f1w, f1b)
        h = c.g.op(GeluOp, h) if use_gelu else c.g.op(ReluOp, h)
        return linear(h, f2w, f2b)

    if norm_first:
        x = src + attention(norm(src, n1w, n1b))
        return x + feed_forward(norm(x, n2w, n2b))
    x = norm(src + attention(src), n1w, n1b)
    return norm(x + feed_forward(x), n2w, n2b)
