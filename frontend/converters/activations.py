"""Activations ONNX defines as functions of elementwise math, and Clip: each a
short decomposition into existing ge ops, so it fuses and compiles like any
other elementwise chain and needs no kernel of its own.

The forms are exact rewrites of ONNX's definitions, chosen so that no branch is
evaluated where it would overflow or lose the other branch's value:

* the two sides of zero are `relu(x) = max(x, 0)` and `min(x, 0)`; a piecewise
  f(x) = x (x > 0), g(x) (x <= 0) with g(0) = 0 is `max(x, 0) + g(min(x, 0))`,
  exact in floating point because g(0) is exactly 0 (Elu, Selu, Celu, PRelu);
* Softplus is `max(x, 0) + log(1 + exp(-|x|))`, which never overflows;
* Clip is `min(max(x, lo), hi)`, which gives `hi` when lo > hi, as ONNX asks.

ThresholdedRelu and Shrink are not continuous: they select with `ge.compare`
and `ge.where`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from xdsl.dialects.builtin import f32

from ...core import dtypes
from ...dialects.ge import (
    AbsOp,
    CompareOp,
    ExpOp,
    IdentityOp,
    LogOp,
    MaximumOp,
    MinimumOp,
    ReluOp,
    SigmoidOp,
    SiluOp,
    TanhOp,
    WhereOp,
)
from .. import ops
from ..builder import Tensor
from .context import NodeContext
from .registry import converts

SELU_ALPHA = 1.67326319217681884765625
SELU_GAMMA = 1.05070102214813232421875


def positive_part(x: Tensor) -> Tensor:
    """max(x, 0)."""
    return x.graph.op(ReluOp, x)


def negative_part(x: Tensor) -> Tensor:
    """min(x, 0)."""
    return x.graph.op(MinimumOp, x, 0)


def elu(x: Tensor, alpha: float, divisor: float = 1.0) -> Tensor:
    """x for x > 0, alpha (exp(x / divisor) - 1) otherwise; exp only sees min(x, 0),
    so a large x does not overflow the discarded branch."""
    g = x.graph
    below = negative_part(x)
    if divisor != 1.0:
        below = below / divisor
    return positive_part(x) + (g.op(ExpOp, below) - 1.0) * alpha


def softplus(x: Tensor) -> Tensor:
    """log(1 + exp(x)), in the form that never overflows: max(x, 0) + log(1 + exp(-|x|))."""
    g = x.graph
    return positive_part(x) + g.op(LogOp, g.op(ExpOp, -g.op(AbsOp, x)) + 1.0)


def hard_sigmoid(x: Tensor, alpha: float, beta: float) -> Tensor:
    """max(0, min(1, alpha x + beta))."""
    g = x.graph
    return g.op(MaximumOp, g.op(MinimumOp, x * alpha + beta, 1.0), 0.0)


def activation(*op_types: str):
    """Registers `function(c, x)` as the converter of float-only activations:
    checks X's element type, and computes formats narrower than f32 (f16, bf16,
    float8) in f32, rounding once at the end as onnxruntime does: a decomposition
    rounds after each of its ops, 1 ulp that a following norm over values a few
    ulps apart magnifies past the f16 tolerance (test_fuzz_regressions'
    f16_softsign_layer_norm_conditioning)."""

    def register(function: Callable[[NodeContext, Tensor], Tensor]):
        @converts(*op_types)
        def convert(c: NodeContext):
            x = c.input(0, "X")
            if not dtypes.is_float(x.dtype):
                raise c.fail(f"input must have a floating-point element type, got {x.type}")
            if dtypes.float_info(x.dtype).nmant >= _F32_MANTISSA:
                return function(c, x)
            return ops.cast(function(c, ops.cast(x, f32)), x.dtype)

        return function

    return register


_F32_MANTISSA = 23


@activation("Elu")
def elu_converter(c: NodeContext, x: Tensor):
    return elu(x, c.float("alpha", 1.0))


@activation("Selu")
def selu(c: NodeContext, x: Tensor):
    """gamma * elu(x, alpha)."""
    return elu(x, c.float("alpha", SELU_ALPHA)) * c.float("gamma", SELU_GAMMA)


@activation("Celu")
def celu(c: NodeContext, x: Tensor):
    """max(0, x) + min(0, alpha (exp(x / alpha) - 1)): an Elu whose exponential
    divides by alpha (for either sign of alpha, the min picks the side x <= 0)."""
    alpha = c.float("alpha", 1.0)
    if alpha == 0.0:
        raise c.fail("attribute 'alpha' must not be 0")
    return elu(x, alpha, divisor=alpha)


@activation("HardSigmoid")
def hard_sigmoid_converter(c: NodeContext, x: Tensor):
    return hard_sigmoid(x, c.float("alpha", 0.2), c.float("beta", 0.5))


@activation("HardSwish")
def hard_swish(c: NodeContext, x: Tensor):
    """x * hard_sigmoid(x, 1/6, 0.5)."""
    return x * hard_sigmoid(x, 1.0 / 6.0, 0.5)


@activation("Softplus")
def softplus_converter(c: NodeContext, x: Tensor):
    return softplus(x)


@activation("Softsign")
def softsign(c: NodeContext, x: Tensor):
    """x / (1 + |x|)."""
    return x / (c.g.op(AbsOp, x) + 1.0)


@activation("Mish")
def mish(c: NodeContext, x: Tensor):
    """x * tanh(softplus(x))."""
    return x * c.g.op(TanhOp, softplus(x))


@activation("Swish")
def swish(c: NodeContext, x: Tensor):
    """x * sigmoid(alpha x) (opset 24): `ge.silu` when alpha is 1."""
    alpha = c.float("alpha", 1.0)
    if alpha == 1.0:
        return c.g.op(SiluOp, x)
    return x * c.g.op(SigmoidOp, x * alpha)


@activation("ThresholdedRelu")
def thresholded_relu(c: NodeContext, x: Tensor):
    """x where x > alpha, else 0."""
    alpha = c.float("alpha", 1.0)
    return _select(c.g.op(CompareOp, x, alpha, predicate="gt"), x, _zero(x))


@converts("Shrink")
def shrink(c: NodeContext):
    """x + bias where x < -lambd, x - bias where x > lambd, else 0. Integer inputs
    compare with the thresholds rounded outwards (x < -0.5 is x < 0) and take an
    integral bias (ONNX's result would truncate x + bias otherwise)."""
    x = c.input(0, "input")
    lambd, bias = c.float("lambd", 0.5), c.float("bias", 0.0)
    low, high = -lambd, lambd
    if not dtypes.is_float(x.dtype):
        if bias != int(bias):
            raise c.unsupported(f"a non-integral bias ({bias}) on integer input {x.type}")
        low, high, bias = math.ceil(low), math.floor(high), int(bias)
    below = c.g.op(CompareOp, x, low, predicate="lt")
    above = c.g.op(CompareOp, x, high, predicate="gt")
    return _select(below, x + bias, _select(above, x - bias, _zero(x)))


def _select(condition: Tensor, x: Tensor, y: Tensor) -> Tensor:
    return condition.graph.op(WhereOp, condition, x, y)


def _zero(x: Tensor) -> Tensor:
    return x.graph.const(0, dtype=x.dtype)


@converts("PRelu")
def prelu(c: NodeContext):
    """max(x, 0) + slope * min(x, 0). The slope broadcasts to X one way (ONNX's
    unidirectional broadcasting): the result has X's shape."""
    x, slope = c.input(0, "X"), c.input(1, "slope")
    if slope.dtype != x.dtype:
        raise c.fail(f"slope {slope.type} must have the element type of X {x.type}")
    try:
        broadcast = np.broadcast_shapes(x.shape, slope.shape)
    except ValueError:
        broadcast = None
    if broadcast != x.shape:
        raise c.fail(f"slope {slope.type} does not broadcast to X {x.type}")
    return positive_part(x) + negative_part(x) * slope


@converts("Clip")
def clip(c: NodeContext):
    """min(max(x, lo), hi), either bound optional: attributes before opset 11,
    inputs (scalars, run-time values) after."""
    x = c.input(0, "input")
    if c.opset >= 11:
        lo, hi = (_bound(c, i, x, what) for i, what in ((1, "min"), (2, "max")))
    else:
        lo, hi = (c.float(name, None) for name in ("min", "max"))
    y = x
    if lo is not None:
        y = c.g.op(MaximumOp, y, lo)
    if hi is not None:
        y = c.g.op(MinimumOp, y, hi)
    return c.g.op(IdentityOp, y) if y is x else y


def _bound(c: NodeContext, i: int, x: Tensor, what: str) -> Tensor | None:
    """Clip's bound input `i` as a rank-0 tensor of X's type (exporters also give
    one-element vectors), or None when absent."""
    bound = c.optional_input(i)
    if bound is None:
        return None
    if bound.dtype != x.dtype:
        raise c.fail(f"input '{what}' {bound.type} must have the element type of the input {x.type}")
    if math.prod(bound.shape) != 1:
        raise c.fail(f"input '{what}' must be a scalar, got {bound.type}")
    return bound if bound.rank == 0 else ops.reshape(bound, [])
