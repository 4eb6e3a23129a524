"""BatchNormalization, LayerNormalization, RMSNormalization, Softmax and LogSoftmax;
InstanceNormalization, GroupNormalization, MeanVarianceNormalization,
LpNormalization and LRN as decompositions.

* BatchNormalization in training mode (opset 14+) is deterministic: it normalises
  with the batch's own statistics (two reductions) and returns the updated running
  mean and variance.
* LayerNormalization without B gets a zero bias; scale and bias that only
  broadcast to the normalised shape are expanded to it. Its optional Mean and
  InvStdDev outputs are computed with reductions beside the `ge.layer_norm`.
* Softmax before opset 13 normalises over the input flattened to 2-D at `axis`
  (default 1): a reshape around a softmax over the last dim, unless the axis
  already is the last one.
* InstanceNormalization and GroupNormalization are a `ge.layer_norm` (unit scale,
  zero bias) over the last axis of the input reshaped to [N, groups, rest]
  (groups = C for instances), then the affine per channel (per group for
  GroupNormalization before opset 21) on a [N, C, rest] view.
* LRN sums the squares over a window of channels: the squares padded with
  zeros on the channel axis, then one channel slice per window offset, added.
* LpNormalization divides by the norm, except where the norm is 0 (then every
  element is 0 and so is the result): the divisor is 1 there.
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects.builtin import f32

from ...core import dtypes
from ...dialects.ge import (
    AbsOp,
    BatchNormOp,
    CompareOp,
    LayerNormOp,
    LogSoftmaxOp,
    PadOp,
    PowOp,
    ReduceMeanOp,
    ReduceSumOp,
    RMSNormOp,
    RsqrtOp,
    SoftmaxOp,
    SqrtOp,
    WhereOp,
)
from .. import ops
from ..builder import Tensor
from .context import NodeContext
from .reduction import euclidean_norm
from .registry import converts


@converts("BatchNormalization")
def batch_normalization(c: NodeContext):
    x = c.input(0, "X")
    training = bool(c.int("training_mode", 0))
    if not training and any(c.output_used(i) for i in range(1, 5)):
        raise c.unsupported("the running mean / variance outputs exist only in training mode")
    c.ignore("spatial", "is_test", "consumed_inputs")
    params = [c.input(i, what) for i, what in enumerate(("scale", "B", "input_mean", "input_var"), 1)]
    epsilon = c.float("epsilon", 1e-5)
    if training:
        return _training_batch_norm(c, x, params, epsilon, c.float("momentum", 0.9))
    c.ignore("momentum")
    return c.g.op(BatchNormOp, x, *(_of_type(p, x.dtype) for p in params), epsilon=epsilon)


def _of_type(t: Tensor, dtype) -> Tensor:
    return t if t.dtype == dtype else ops.cast(t, dtype)


def _training_batch_norm(c: NodeContext, x: Tensor, params: list[Tensor], epsilon: float, momentum: float):
    """BatchNormalization with training_mode=1 (opset 14+): normalise with the batch's
    own mean and (population) variance over every axis but the channels, and update
    the running statistics: running = input * momentum + batch * (1 - momentum).
    Deterministic, so it is the same ops as inference plus two reductions."""
    if x.rank < 2:
        raise c.fail(f"input must have rank >= 2 (N, C, ...), got {x.type}")
    scale, bias, input_mean, input_var = params
    axes = (0, *range(2, x.rank))
    mean = c.g.op(ReduceMeanOp, x, axes=axes, keepdims=True)
    centered = x - mean
    variance = c.g.op(ReduceMeanOp, centered * centered, axes=axes, keepdims=True)
    mean, variance = (ops.reshape(t, [x.shape[1]]) for t in (mean, variance))
    y = c.g.op(BatchNormOp, x, _of_type(scale, x.dtype), _of_type(bias, x.dtype), mean, variance, epsilon=epsilon)
    running = [
        previous * momentum + _of_type(batch, previous.dtype) * (1.0 - momentum)
        for previous, batch in ((input_mean, mean), (input_var, variance))
    ]
    return [y, *running]


def _normalized_param(c: NodeContext, p: Tensor, normalized: tuple[int, ...], dtype) -> Tensor:
    """A scale or bias shaped like the normalised dims (ONNX lets it broadcast)."""
    p = _of_type(p, dtype)
    if p.shape == normalized:
        return p
    extra = p.rank - len(normalized)
    if extra > 0 and all(d == 1 for d in p.shape[:extra]):
        p = ops.reshape(p, p.shape[extra:])
    return ops.expand(p, normalized)


def _axis(c: NodeContext, x: Tensor) -> int:
    """The `axis` attribute, checked; kept as written (ge takes negative axes too)."""
    axis = c.int("axis", -1)
    if not -x.rank <= axis < x.rank:
        raise c.fail(f"axis {axis} is out of range for {x.type}")
    return axis


@converts("LayerNormalization")
def layer_normalization(c: NodeContext):
    x = c.input(0, "X")
    axis = _axis(c, x)
    epsilon = c.float("epsilon", 1e-5)
    stash_type = c.int("stash_type", 1)
    normalized = x.shape[axis % x.rank:]
    scale = _normalized_param(c, c.input(1, "Scale"), normalized, x.dtype)
    bias = c.optional_input(2)
    if bias is None:
        bias = c.g.const(np.zeros(normalized), dtype=x.dtype)
    else:
        bias = _normalized_param(c, bias, normalized, x.dtype)
    y = c.g.op(LayerNormOp, x, scale, bias, axis=axis, epsilon=epsilon)
    if not (c.output_used(1) or c.output_used(2)):
        return [y]
    return [y, *_statistics(c, x, axis, epsilon, stash_type)]


def _statistics(c: NodeContext, x: Tensor, axis: int, epsilon: float, stash_type: int) -> list[Tensor]:
    """LayerNormalization's Mean and InvStdDev (keepdims), in the stash type."""
    if stash_type == 1 and x.dtype != f32 and dtypes.is_float(x.dtype):
        x = ops.cast(x, f32)
    axes = tuple(range(axis % x.rank, x.rank))
    mean = c.g.op(ReduceMeanOp, x, axes=axes, keepdims=True)
    centered = x - mean
    variance = c.g.op(ReduceMeanOp, centered * centered, axes=axes, keepdims=True)
    return [mean, c.g.op(RsqrtOp, variance + epsilon)]


@converts("RMSNormalization")
def rms_normalization(c: NodeContext):
    x = c.input(0, "X")
    axis = _axis(c, x)
    c.ignore("stash_type")  # ge computes reduced-precision floats in fp32 anyway
    scale = _normalized_param(c, c.input(1, "scale"), x.shape[axis % x.rank:], x.dtype)
    return c.g.op(RMSNormOp, x, scale, axis=axis, epsilon=c.float("epsilon", 1e-5))


@converts("Softmax", "LogSoftmax")
def softmax(c: NodeContext):
    x = c.input(0, "input")
    op_class = SoftmaxOp if c.node.op_type == "Softmax" else LogSoftmaxOp
    if x.rank == 0:
        raise c.fail("input must have rank >= 1")
    axis = c.int("axis", -1 if c.opset >= 13 else 1)
    if not -x.rank <= axis < x.rank:
        raise c.fail(f"axis {axis} is out of range for {x.type}")
    if c.opset >= 13 or axis % x.rank == x.rank - 1:
        return c.g.op(op_class, x, axis=axis)
    axis %= x.rank
    flat = ops.reshape(x, [math.prod(x.shape[:axis]), math.prod(x.shape[axis:])])
    return ops.reshape(c.g.op(op_class, flat, axis=1), x.shape)


@converts("InstanceNormalization")
def instance_normalization(c: NodeContext):
    """Each (instance, channel) normalised over its spatial axes, then scaled and
    shifted per channel: GroupNormalization with one group per channel."""
    x = _normalized_input(c, "input")
    channels = x.shape[1]
    scale, bias = (_channel_param(c, i, what, channels, x.dtype) for i, what in ((1, "scale"), (2, "B")))
    return _group_norm(c, x, channels, scale, bias, c.float("epsilon", 1e-5))


@converts("GroupNormalization")
def group_normalization(c: NodeContext):
    """Statistics over each group of C / num_groups channels and the spatial axes;
    scale and bias are per channel since opset 21, per group before."""
    x = _normalized_input(c, "X")
    groups = c.int("num_groups")
    channels = x.shape[1]
    if groups <= 0 or channels % groups:
        raise c.fail(f"num_groups {groups} must be positive and divide the {channels} channels of {x.type}")
    c.ignore("stash_type")  # ge computes reduced-precision floats in fp32 anyway
    per = channels if c.opset >= 21 else groups
    scale, bias = (_channel_param(c, i, what, per, x.dtype) for i, what in ((1, "scale"), (2, "bias")))
    return _group_norm(c, x, groups, scale, bias, c.float("epsilon", 1e-5))


def _normalized_input(c: NodeContext, what: str) -> Tensor:
    x = c.input(0, what)
    if x.rank < 2 or not dtypes.is_float(x.dtype):
        raise c.fail(f"input must be a floating-point tensor (N, C, ...), got {x.type}")
    return x


def _channel_param(c: NodeContext, i: int, what: str, size: int, dtype) -> Tensor:
    """A scale or bias with one value per channel (or group): `size` values."""
    p = c.input(i, what)
    if math.prod(p.shape) != size:
        raise c.fail(f"input '{what}' must have {size} values, got {p.type}")
    return _of_type(ops.reshape(p, [size, 1]), dtype)


def _group_norm(c: NodeContext, x: Tensor, groups: int, scale: Tensor, bias: Tensor, epsilon: float) -> Tensor:
    """x normalised per (instance, group) over the group's channels and every spatial
    axis, then `scale * y + bias` with `scale` and `bias` shaped [channels or groups, 1]."""
    n, channels = x.shape[:2]
    grouped = ops.reshape(x, [n, groups, math.prod(x.shape[1:]) // groups])
    size = grouped.shape[-1]
    ones, zeros = (c.g.const(np.full([size], v), dtype=x.dtype) for v in (1.0, 0.0))
    y = c.g.op(LayerNormOp, grouped, ones, zeros, axis=-1, epsilon=epsilon)
    rows = scale.shape[0]
    y = ops.reshape(y, [n, rows, math.prod(x.shape[1:]) // rows])
    return ops.reshape(y * scale + bias, x.shape)


@converts("MeanVarianceNormalization")
def mean_variance_normalization(c: NodeContext):
    """(x - mean) / (std + 1e-9) over `axes` (default N and the spatial axes of NCHW)."""
    x = c.input(0, "X")
    if not dtypes.is_float(x.dtype):
        raise c.fail(f"input must have a floating-point element type, got {x.type}")
    axes = c.ints("axes", (0, 2, 3))
    if any(not -x.rank <= a < x.rank for a in axes):
        raise c.fail(f"axes {list(axes)} are out of range for {x.type}")
    mean = c.g.op(ReduceMeanOp, x, axes=axes, keepdims=True)
    centered = x - mean
    variance = c.g.op(ReduceMeanOp, centered * centered, axes=axes, keepdims=True)
    return centered / (c.g.op(SqrtOp, variance) + 1e-9)


@converts("LpNormalization")
def lp_normalization(c: NodeContext):
    """x / ||x||_p along `axis` (p is 1 or 2), 0 where the norm is 0."""
    x = c.input(0, "input")
    if not dtypes.is_float(x.dtype):
        raise c.fail(f"input must have a floating-point element type, got {x.type}")
    axis = _axis(c, x)
    p = c.int("p", 2)
    if p not in (1, 2):
        raise c.fail(f"attribute 'p' must be 1 or 2, got {p}")
    if p == 1:
        norm = c.g.op(ReduceSumOp, c.g.op(AbsOp, x), axes=(axis,), keepdims=True)
    else:
        norm = euclidean_norm(x, lambda squares: c.g.op(ReduceSumOp, squares, axes=(axis,), keepdims=True))
    zero = c.g.op(CompareOp, norm, 0.0, predicate="eq")
    return x / c.g.op(WhereOp, zero, c.g.const(1.0, dtype=x.dtype), norm)


@converts("LRN")
def lrn(c: NodeContext):
    """x / (bias + alpha / size * square_sum) ** beta, square_sum over the channels
    c - floor((size - 1) / 2) .. c + ceil((size - 1) / 2) that exist."""
    x = c.input(0, "X")
    if x.rank < 3 or not dtypes.is_float(x.dtype):
        raise c.fail(f"input must be a floating-point tensor (N, C, spatial...), got {x.type}")
    size = c.int("size")
    if size <= 0:
        raise c.fail(f"attribute 'size' must be positive, got {size}")
    alpha, beta, bias = c.float("alpha", 1e-4), c.float("beta", 0.75), c.float("bias", 1.0)
    square_sum = _channel_window_sum(c, x * x, size)
    return x / c.g.op(PowOp, square_sum * (alpha / size) + bias, beta)


def _channel_window_sum(c: NodeContext, t: Tensor, size: int) -> Tensor:
    """For every channel, the sum of `t` over the `size` channels around it (zero
    outside): `t` padded on the channel axis, one shifted slice per offset."""
    before = (size - 1) // 2
    pads = [0] * (2 * t.rank)
    pads[1], pads[t.rank + 1] = before, size - 1 - before
    padded = c.g.op(PadOp, t, pads=pads) if size > 1 else t
    channels = t.shape[1]
    total = None
    for k in range(size):
        term = ops.slice(padded, [k], [k + channels], [1])
        total = term if total is None else total + term
    return total
