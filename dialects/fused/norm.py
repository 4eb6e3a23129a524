"""Fused vector ops: a residual add with the normalisation after it, softmax with
its scale / mask / dropout, and the SwiGLU gate.

These are row-wise kernels: each tile holds whole rows of the normalised axis,
so the statistics and the elementwise work around them happen in UB with one
read and one write of global memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar
from types import SimpleNamespace

import numpy as np
from xdsl.dialects.builtin import TensorType, f32
from xdsl.irdl import (
    AttrSizedOperandSegments,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    result_def,
)

from ...core import dtypes
from ..ge import AddOp, LayerNormOp, MulOp, RMSNormOp, SiluOp, SoftmaxOp
from ..ge.base import (
    Kind,
    attr,
    broadcast_shapes,
    fail,
    like,
    normalize_axis,
    require_float,
    same_element_type,
    shape_of,
)
from ..ge.normalization import require_positive_epsilon
from .base import (
    ACTIVATION_NAMES,
    FusedOp,
    activate,
    add_all,
    by_name,
    ge_compute,
    masked_softmax,
    operand,
    require_bias,
    require_broadcasts_to,
    require_dropout_ratio,
    require_mask,
    require_same_element_type,
)

NORMS = {"layer_norm": (LayerNormOp, ("gamma", "beta")), "rms_norm": (RMSNormOp, ("gamma",))}
"""Normalisation name -> the `ge` op it means and the fused op's parameter operands."""


def require_norm_parameters(norm: str, shape: Sequence[int], t: SimpleNamespace, epsilon: float, axis: int) -> None:
    """gamma (and beta) have the normalised shape, dims [axis, rank) of `shape`."""
    require_positive_epsilon(epsilon)
    normalized = tuple(shape[normalize_axis(axis, len(shape)) :])
    for name in NORMS[norm][1]:
        parameter = getattr(t, name)
        if shape_of(parameter) != normalized:
            raise fail(
                f"{name} must have the normalized shape {dtypes.format_shape(normalized)}, got {parameter}"
            )


def add_norm_results(norm: str, x: np.ndarray, t: SimpleNamespace, epsilon: float, axis: int) -> list[np.ndarray]:
    """`[norm(x + residual), x + residual]` with the `ge` ops' semantics."""
    op, parameter_names = NORMS[norm]
    total = ge_compute(AddOp, [x, t.residual])
    parameters = [getattr(t, n) for n in parameter_names]
    return [ge_compute(op, [total, *parameters], axis=axis, epsilon=epsilon), total]


class _AddNormOp(FusedOp):
    """`s = x + residual; y = norm(s)` over dims [axis, rank); results (y, s).
    Subclasses declare the operands (IRDL orders inherited fields last)."""

    result = result_def(TensorType)
    sum = result_def(TensorType)
    DROPPABLE_RESULTS: ClassVar[tuple[str, ...]] = ("sum",)
    axis = attr(Kind.INT, -1)
    epsilon = attr(Kind.FLOAT, 1e-5)

    @classmethod
    def infer(cls, types, a, declared):
        t = by_name(types, a)
        total = AddOp.infer([t.x, t.residual], a, None)
        require_float(total, "x")
        same_element_type(types)
        require_norm_parameters(cls.NORM, shape_of(total), t, a.epsilon, a.axis)
        return [like(total), like(total)]

    @classmethod
    def compute(cls, inputs, a, result_types):
        t = by_name(inputs, a)
        return add_norm_results(cls.NORM, t.x, t, a.epsilon, a.axis)


@irdl_op_definition
class AddLayerNormOp(_AddNormOp):
    """`s = x + residual; y = layer_norm(s, gamma, beta)`; results (y, s)."""

    name = "fused.add_layer_norm"
    x = operand_def(TensorType)
    residual = operand_def(TensorType)
    gamma = operand_def(TensorType)
    beta = operand_def(TensorType)
    NORM: ClassVar[str] = "layer_norm"


@irdl_op_definition
class AddRmsNormOp(_AddNormOp):
    """`s = x + residual; y = rms_norm(s, gamma)`; results (y, s)."""

    name = "fused.add_rms_norm"
    x = operand_def(TensorType)
    residual = operand_def(TensorType)
    gamma = operand_def(TensorType)
    NORM: ClassVar[str] = "rms_norm"


@irdl_op_definition
class FusedSoftmaxOp(FusedOp):
    """`dropout(softmax(mask(input * scale)))` along `axis`. An i1 mask keeps the
    values where true and puts `mask_value` elsewhere; a float mask is added.
    Dropout is the identity at inference (the ratio is kept for training
    kernels)."""

    name = "fused.softmax"
    input = operand_def(TensorType)
    mask = opt_operand_def(TensorType)
    result = result_def(TensorType)
    axis = attr(Kind.INT, -1)
    scale = attr(Kind.FLOAT, 1.0)
    mask_value = attr(Kind.FLOAT, 0.0)
    dropout = attr(Kind.FLOAT, 0.0)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    @classmethod
    def infer(cls, types, a, declared):
        t = by_name(types, a)
        out = SoftmaxOp.infer([t.input], a, None)
        require_mask(operand(t, "mask"), shape_of(out), out.element_type)
        require_dropout_ratio(a.dropout)
        return out

    @classmethod
    def compute(cls, inputs, a, result_types):
        t = by_name(inputs, a)
        return masked_softmax(t.input, operand(t, "mask"), a, axis=a.axis)


@irdl_op_definition
class SwigluOp(FusedOp):
    """`silu(gate) * up` (the SwiGLU gate of LLaMA-style MLPs)."""

    name = "fused.swiglu"
    gate = operand_def(TensorType)
    up = operand_def(TensorType)
    result = result_def(TensorType)

    @classmethod
    def infer(cls, types, a, declared):
        gate, up = types
        SiluOp.infer([gate], a, None)
        element_type = same_element_type(types)
        return TensorType(element_type, list(broadcast_shapes(shape_of(gate), shape_of(up))))

    @classmethod
    def compute(cls, inputs, a, result_types):
        gate, up = inputs
        return ge_compute(MulOp, [ge_compute(SiluOp, [gate]), up])


def _partials_shape(partials: TensorType) -> tuple[int, ...]:
    """(M, N) of (splits, M, N) f32 partial products."""
    shape = shape_of(partials)
    if len(shape) != 3 or partials.element_type != f32:
        raise fail(f"partials must be (splits, M, N) f32, got {partials}")
    return shape[1:]


class _PartialsAddNormOp(FusedOp):
    """`s = sum(partials) + bias + residual; y = norm(s)` over the last axis;
    results (y, s). The second kernel of a split-K matmul + residual + norm
    (`fused.matmul_partials` makes the fp32 partial products): the partials
    are added up in fp32 as each row is loaded, so the split costs the norm
    kernel a read of each partial and nothing else. Their sum is the product
    of the unsplit op: rounded to the residual's type, as `ge.matmul` rounds it,
    before the bias and residual are added (a norm amplifies that rounding).
    Subclasses declare the operands (IRDL orders inherited fields last)."""

    result = result_def(TensorType)
    sum = result_def(TensorType)
    DROPPABLE_RESULTS: ClassVar[tuple[str, ...]] = ("sum",)
    epsilon = attr(Kind.FLOAT, 1e-5)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    @classmethod
    def infer(cls, types, a, declared):
        t = by_name(types, a)
        shape = _partials_shape(t.partials)
        require_float(t.residual, "residual")
        require_broadcasts_to(t.residual, shape, "residual")
        require_bias(operand(t, "bias"), ((shape[1],), (1, shape[1])), t.residual.element_type)
        require_norm_parameters(cls.NORM, shape, t, a.epsilon, -1)
        total = like(t.residual, shape)
        return [total, total]

    @classmethod
    def compute(cls, inputs, a, result_types):
        x = by_name(inputs, a)
        product = x.partials.sum(axis=0).astype(x.residual.dtype)
        return add_norm_results(cls.NORM, add_all(product, operand(x, "bias")), x, a.epsilon, -1)


@irdl_op_definition
class PartialsAddLayerNormOp(_PartialsAddNormOp):
    """`s = sum(partials) + bias + residual; y = layer_norm(s, gamma, beta)`;
    results (y, s)."""

    name = "fused.partials_add_layer_norm"
    partials = operand_def(TensorType)
    residual = operand_def(TensorType)
    gamma = operand_def(TensorType)
    beta = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    NORM: ClassVar[str] = "layer_norm"


@irdl_op_definition
class PartialsAddRmsNormOp(_PartialsAddNormOp):
    """`s = sum(partials) + bias + residual; y = rms_norm(s, gamma)`; results (y, s)."""

    name = "fused.partials_add_rms_norm"
    partials = operand_def(TensorType)
    residual = operand_def(TensorType)
    gamma = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    NORM: ClassVar[str] = "rms_norm"


@irdl_op_definition
class PartialsBiasActOp(FusedOp):
    """`act(sum(partials) + bias + residual)` rounded to the declared result type:
    the second kernel of a split-K `fused.matmul_bias_act` (`fused-split-k`),
    adding up the fp32 partial products of `fused.matmul_partials`."""

    name = "fused.partials_bias_act"
    partials = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    residual = opt_operand_def(TensorType)
    result = result_def(TensorType)
    act = attr(Kind.STR, "none", choices=ACTIVATION_NAMES)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    @classmethod
    def infer(cls, types, a, declared):
        t = by_name(types, a)
        shape = _partials_shape(t.partials)
        if declared is None:
            raise fail("needs its result type: the partials are f32, the result need not be")
        element_type = declared[0].element_type
        require_bias(operand(t, "bias"), ((shape[1],), (1, shape[1])), element_type)
        require_broadcasts_to(operand(t, "residual"), shape, "residual")
        require_same_element_type(operand(t, "residual"), element_type, "residual")
        return TensorType(element_type, list(shape))

    @classmethod
    def compute(cls, inputs, a, result_types):
        x = by_name(inputs, a)
        return activate(a.act, add_all(x.partials.sum(axis=0), operand(x, "bias"), operand(x, "residual")))


@irdl_op_definition
class ConvPartialsBiasActOp(FusedOp):
    """`act(sum of the partials' blocks + bias + residual)` rounded to the declared
    (N, O, H, W) result type: the second kernel of a split-K convolution
    (`fused-split-k-conv`), adding up the `splits` blocks of N fp32 images that
    `fused.conv2d_partials` stacks; `bias` per output channel as
    `fused.conv2d_bias_act` takes it."""

    name = "fused.conv_partials_bias_act"
    partials = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    residual = opt_operand_def(TensorType)
    result = result_def(TensorType)
    act = attr(Kind.STR, "none", choices=ACTIVATION_NAMES)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    @classmethod
    def infer(cls, types, a, declared):
        t = by_name(types, a)
        if declared is None:
            raise fail("needs its result type: the partials are f32, the result need not be")
        shape = shape_of(declared[0])
        stacked = shape_of(t.partials)
        if (len(shape) != 4 or t.partials.element_type != f32 or len(stacked) != 4 or stacked[1:] != shape[1:]
                or stacked[0] % shape[0] or stacked[0] // shape[0] < 2):
            raise fail(f"partials must be (splits x N, O, H, W) f32 of 2 or more splits for a result {declared[0]}, "
                       f"got {t.partials}")
        element_type = declared[0].element_type
        channels = shape[1]
        require_bias(operand(t, "bias"), ((channels,), (channels, 1, 1), (1, channels, 1, 1)), element_type)
        require_broadcasts_to(operand(t, "residual"), shape, "residual")
        require_same_element_type(operand(t, "residual"), element_type, "residual")
        return TensorType(element_type, list(shape))

    @classmethod
    def compute(cls, inputs, a, result_types):
        x = by_name(inputs, a)
        n = result_types[0].get_shape()[0]
        total = x.partials.reshape(-1, n, *x.partials.shape[1:]).sum(axis=0)
        bias = operand(x, "bias")
        if bias is not None:
            bias = bias.reshape(-1, 1, 1)
        return activate(a.act, add_all(total, bias, operand(x, "residual")))


NORM_OPS = (
    AddLayerNormOp,
    AddRmsNormOp,
    PartialsAddLayerNormOp,
    PartialsAddRmsNormOp,
    PartialsBiasActOp,
    ConvPartialsBiasActOp,
    FusedSoftmaxOp,
    SwigluOp,
)
