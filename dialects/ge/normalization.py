"""Normalisations and softmax: batch_norm (inference), layer_norm, rms_norm,
softmax, log_softmax. ONNX semantics: layer_norm and rms_norm normalise over the
dims from `axis` to the end, scale/bias have the shape of those dims; softmax is
over one axis (opset 13)."""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.irdl import irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import Pure

from .base import (
    GEOp,
    Kind,
    attr,
    fail,
    like,
    normalize_axis,
    require_float,
    same_element_type,
    shape_of,
)


def require_positive_epsilon(epsilon: float) -> None:
    """The verifier's check of every normalisation's `epsilon` (the fused ones too)."""
    if not epsilon > 0:
        raise fail(f"epsilon must be positive, got {epsilon}")


@irdl_op_definition
class BatchNormOp(GEOp):
    """Inference batch normalisation over channel axis 1:
    `(x - mean) / sqrt(var + epsilon) * scale + bias`."""

    name = "ge.batch_norm"
    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    bias = operand_def(TensorType)
    mean = operand_def(TensorType)
    variance = operand_def(TensorType)
    result = result_def(TensorType)
    epsilon = attr(Kind.FLOAT, 1e-5)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, types, a, declared):
        x = types[0]
        shape = shape_of(x)
        if len(shape) < 2:
            raise fail(f"input must have rank >= 2 (N, C, ...), got {x}")
        require_float(x, "input")
        same_element_type(types)
        require_positive_epsilon(a.epsilon)
        for what, t in zip(("scale", "bias", "mean", "variance"), types[1:]):
            if shape_of(t) != (shape[1],):
                raise fail(f"{what} must have shape ({shape[1]}) to match the channels, got {t}")
        return like(x)

    @classmethod
    def compute(cls, inputs, a, result_types):
        x, scale, bias, mean, var = inputs
        per_channel = [1, -1] + [1] * (x.ndim - 2)
        inv = scale / np.sqrt(var + a.epsilon)
        return (x - mean.reshape(per_channel)) * inv.reshape(per_channel) + bias.reshape(per_channel)


class _TrailingNormOp(GEOp):
    """Shared shape rule: normalised over dims [axis, rank); parameters shaped like them.

    IRDL collects operand definitions subclass first, so each op declares all its
    operands (`input` first) itself to keep them in order."""

    result = result_def(TensorType)
    axis = attr(Kind.INT, -1)
    epsilon = attr(Kind.FLOAT, 1e-5)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, types, a, declared):
        x = types[0]
        shape = shape_of(x)
        require_float(x, "input")
        same_element_type(types)
        require_positive_epsilon(a.epsilon)
        axis = normalize_axis(a.axis, len(shape))
        normalized = shape[axis:]
        for what, t in zip(cls._parameter_names(), types[1:]):
            if shape_of(t) != normalized:
                raise fail(
                    f"{what} must have the normalized shape {_shape(normalized)}, got {t}"
                )
        return like(x)

    @classmethod
    def _parameter_names(cls) -> tuple[str, ...]:
        return tuple(name for name, _ in cls.get_irdl_definition().operands[1:])

    @staticmethod
    def _axes(x: np.ndarray, axis: int) -> tuple[int, ...]:
        return tuple(range(axis % x.ndim, x.ndim))


def _shape(dims) -> str:
    return "(" + ", ".join(str(d) for d in dims) + ")"


@irdl_op_definition
class LayerNormOp(_TrailingNormOp):
    """`(x - mean) / sqrt(var + epsilon) * scale + bias`, statistics over [axis, rank)."""

    name = "ge.layer_norm"
    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    bias = operand_def(TensorType)

    @classmethod
    def compute(cls, inputs, a, result_types):
        x, scale, bias = inputs
        axes = cls._axes(x, a.axis)
        mean = x.mean(axis=axes, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
        return (x - mean) / np.sqrt(var + a.epsilon) * scale + bias


@irdl_op_definition
class RMSNormOp(_TrailingNormOp):
    """`x / sqrt(mean(x^2) + epsilon) * scale`, statistics over [axis, rank)."""

    name = "ge.rms_norm"
    input = operand_def(TensorType)
    scale = operand_def(TensorType)

    @classmethod
    def compute(cls, inputs, a, result_types):
        x, scale = inputs
        axes = cls._axes(x, a.axis)
        return x / np.sqrt((x * x).mean(axis=axes, keepdims=True) + a.epsilon) * scale


class _SoftmaxBase(GEOp):
    input = operand_def(TensorType)
    result = result_def(TensorType)
    axis = attr(Kind.INT, -1)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, types, a, declared):
        (x,) = types
        require_float(x, "input")
        normalize_axis(a.axis, len(shape_of(x)))
        return like(x)

    @staticmethod
    def _shifted(x: np.ndarray, axis: int) -> np.ndarray:
        return x - x.max(axis=axis, keepdims=True)


@irdl_op_definition
class SoftmaxOp(_SoftmaxBase):
    """`exp(x) / sum(exp(x))` along `axis`."""

    name = "ge.softmax"

    @classmethod
    def compute(cls, inputs, a, result_types):
        e = np.exp(cls._shifted(inputs[0], a.axis))
        return e / e.sum(axis=a.axis, keepdims=True)


@irdl_op_definition
class LogSoftmaxOp(_SoftmaxBase):
    """`x - log(sum(exp(x)))` along `axis`."""

    name = "ge.log_softmax"

    @classmethod
    def compute(cls, inputs, a, result_types):
        s = cls._shifted(inputs[0], a.axis)
        return s - np.log(np.exp(s).sum(axis=a.axis, keepdims=True))


NORMALIZATION_OPS = (BatchNormOp, LayerNormOp, RMSNormOp, SoftmaxOp, LogSoftmaxOp)
