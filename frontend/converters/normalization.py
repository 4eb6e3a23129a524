"""BatchNormalization, LayerNormalization, RMSNormalization, Softmax and LogSoftmax.

* BatchNormalization in training mode (opset 14+) is deterministic: it normalises
  with the batch's own statistics (two reductions) and returns the updated running
  mean and variance.
* LayerNormalization without B gets a zero bias; scale and bias that only
  broadcast to the normalised shape are expanded to it. Its optional Mean and
  InvStdDev outputs are computed with reductions beside the `ge.layer_norm`.
* Softmax before opset 13 normalises over the input flattened to 2-D at `axis`
  (default 1): a reshape around a softmax over the last dim, unless the axis
  already is the last one.
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects.builtin import f32

from ...core import dtypes
from ...dialects.ge import (
    BatchNormOp,
    LayerNormOp,
    LogSoftmaxOp,
    ReduceMeanOp,
    RMSNormOp,
    RsqrtOp,
    SoftmaxOp,
)
from .. import ops
from ..builder import Tensor
from .context import NodeContext
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
