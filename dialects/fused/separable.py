"""`fused.depthwise_pointwise`: a depthwise convolution with its bias and
activation, and the 1x1 convolution that reads its output, as one op.

An inverted-residual block (MobileNetV2, EfficientNet) ends with a depthwise
3x3 / 5x5 convolution whose output only a 1x1 "project" convolution reads. As
two kernels, the depthwise output goes to GM and back and the project kernel
is a phase of its own (a barrier, its operands loaded after it). As one op,
its kernel computes the depthwise output a tile at a time on the vector unit
and hands it to the cube through L1 as the project product's A operand
(`fused-depthwise-pointwise`, `templates/depthwise_pointwise.py`).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.irdl import AttrSizedOperandSegments, irdl_op_definition, operand_def, opt_operand_def, result_def

from ...core import dtypes
from ..ge.base import Kind, attr, fail, shape_of
from .base import ACTIVATION_NAMES, FusedOp, by_name, operand
from .cube import Conv2DBiasActOp


class _SeparableAttrs(FusedOp):
    """The depthwise convolution's `strides`, `pads`, `dilations` and activation
    (`dw_act`), and the 1x1 convolution's activation (`act`)."""

    strides = attr(Kind.INTS, (1, 1))
    pads = attr(Kind.INTS, (0, 0, 0, 0))
    dilations = attr(Kind.INTS, (1, 1))
    act = attr(Kind.STR, "none", choices=ACTIVATION_NAMES)
    dw_act = attr(Kind.STR, "none", choices=ACTIVATION_NAMES)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)


@irdl_op_definition
class DepthwisePointwiseOp(_SeparableAttrs):
    """`conv2d_bias_act(conv2d_bias_act(input, dw_weight, dw_bias, groups=C,
    act=dw_act), weight, bias, residual, act=act)` with a 1x1, stride-1,
    unpadded second convolution; the depthwise result is rounded to the element
    type before the second reads it, as it would be stored between two kernels.
    `strides`, `pads`, `dilations` are the depthwise convolution's."""

    name = "fused.depthwise_pointwise"
    input = operand_def(TensorType)
    dw_weight = operand_def(TensorType)
    weight = operand_def(TensorType)
    dw_bias = opt_operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    residual = opt_operand_def(TensorType)
    result = result_def(TensorType)

    @classmethod
    def infer(cls, types, a, declared):
        t = by_name(types, a)
        middle = Conv2DBiasActOp.infer(_depthwise_operands(t), _depthwise_attrs(t.input, a, t), None)
        _require_pointwise_weight(t.weight)
        return Conv2DBiasActOp.infer(_pointwise_operands(middle, t), _pointwise_attrs(a, t), None)

    @classmethod
    def compute(cls, inputs, a, result_types):
        x = by_name(inputs, a)
        middle_type = cls.middle_type_of(result_types[0], x.input.shape, x.dw_weight.shape, a)
        y = Conv2DBiasActOp.compute(_depthwise_operands(x), _depthwise_attrs(x.input, a, x), [middle_type])
        y = y.astype(dtypes.to_numpy_dtype(middle_type.element_type)).astype(y.dtype)  # as stored between kernels
        return Conv2DBiasActOp.compute(_pointwise_operands(y, x), _pointwise_attrs(a, x), result_types)

    @staticmethod
    def middle_type_of(result: TensorType, input_shape, dw_shape, a) -> TensorType:
        """The depthwise result's type: (N, C, OH, OW) of the result's element type."""
        n, _, oh, ow = result.get_shape()
        return TensorType(result.element_type, [n, input_shape[1], oh, ow])


def _require_pointwise_weight(weight) -> None:
    w = shape_of(weight)
    if len(w) != 4 or tuple(w[2:]) != (1, 1):
        raise fail(f"the pointwise weight must be (O, C, 1, 1), got {list(w)}")


def _depthwise_operands(t) -> list:
    return [v for v in (t.input, t.dw_weight, operand(t, "dw_bias")) if v is not None]


def _depthwise_attrs(x, a, t) -> SimpleNamespace:
    channels = shape_of(x)[1] if not isinstance(x, np.ndarray) else x.shape[1]
    names = ("input", "weight", "bias") if operand(t, "dw_bias") is not None else ("input", "weight")
    return SimpleNamespace(strides=a.strides, pads=a.pads, dilations=a.dilations, groups=channels, act=a.dw_act,
                           operands=names)


def _pointwise_operands(middle, t) -> list:
    return [v for v in (middle, t.weight, operand(t, "bias"), operand(t, "residual")) if v is not None]


def _pointwise_attrs(a, t) -> SimpleNamespace:
    names = tuple(n for n, v in (("input", 1), ("weight", 1), ("bias", operand(t, "bias")),
                                 ("residual", operand(t, "residual"))) if v is not None)
    return SimpleNamespace(strides=(1, 1), pads=(0, 0, 0, 0), dilations=(1, 1), groups=1, act=a.act, operands=names)



@irdl_op_definition
class PointwiseDepthwiseOp(_SeparableAttrs):
    """`conv2d_bias_act(conv2d_bias_act(input, weight, bias, act=act), dw_weight,
    dw_bias, groups=C, act=dw_act)`: an inverted-residual block's expand 1x1
    convolution (stride 1, unpadded) and the depthwise convolution that alone
    reads it; the expanded tensor is rounded to the element type before the
    depthwise convolution reads it, as it would be stored between two kernels.
    `strides`, `pads`, `dilations` are the depthwise convolution's."""

    name = "fused.pointwise_depthwise"
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    dw_weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    dw_bias = opt_operand_def(TensorType)
    result = result_def(TensorType)

    @classmethod
    def infer(cls, types, a, declared):
        t = by_name(types, a)
        _require_pointwise_weight(t.weight)
        middle = Conv2DBiasActOp.infer(_expand_operands(t.input, t), _pointwise_attrs(a, SimpleNamespace(
            bias=operand(t, "bias"))), None)
        return Conv2DBiasActOp.infer(_depthwise_operands(SimpleNamespace(input=middle, dw_weight=t.dw_weight,
                                     dw_bias=operand(t, "dw_bias"))), _depthwise_attrs(middle, a, t), None)

    @classmethod
    def compute(cls, inputs, a, result_types):
        x = by_name(inputs, a)
        n, _, h, w = x.input.shape
        middle_type = TensorType(result_types[0].element_type, [n, x.weight.shape[0], h, w])
        y = Conv2DBiasActOp.compute(_expand_operands(x.input, x), _pointwise_attrs(a, SimpleNamespace(
            bias=operand(x, "bias"))), [middle_type])
        y = y.astype(dtypes.to_numpy_dtype(middle_type.element_type)).astype(y.dtype)  # as stored between kernels
        return Conv2DBiasActOp.compute(_depthwise_operands(SimpleNamespace(input=y, dw_weight=x.dw_weight,
                                       dw_bias=operand(x, "dw_bias"))), _depthwise_attrs(y, a, x), result_types)


def _expand_operands(x, t) -> list:
    return [v for v in (x, t.weight, operand(t, "bias")) if v is not None]




@irdl_op_definition
class ExpandDepthwiseProjectOp(_SeparableAttrs):
    """`conv2d_bias_act(pointwise_depthwise(input, weight, dw_weight, bias,
    dw_bias), pw_weight, pw_bias, residual, act=pw_act)`: a whole
    inverted-residual block (MobileNetV2, EfficientNet), its expand 1x1
    convolution (stride 1, unpadded), the depthwise convolution that alone reads
    it and the project 1x1 convolution that alone reads that; the expanded and
    the depthwise tensors are rounded to the element type, as they would be
    stored between kernels. `strides`, `pads`, `dilations` are the depthwise
    convolution's; `act`, `dw_act`, `pw_act` the three activations."""

    name = "fused.expand_depthwise_project"
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    dw_weight = operand_def(TensorType)
    pw_weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    dw_bias = opt_operand_def(TensorType)
    pw_bias = opt_operand_def(TensorType)
    residual = opt_operand_def(TensorType)
    result = result_def(TensorType)
    pw_act = attr(Kind.STR, "none", choices=ACTIVATION_NAMES)

    @classmethod
    def infer(cls, types, a, declared):
        t = by_name(types, a)
        middle = PointwiseDepthwiseOp.infer(_expand_half(t), _expand_half_attrs(a, t), None)
        _require_pointwise_weight(t.pw_weight)
        return Conv2DBiasActOp.infer(_project_operands(middle, t), _project_attrs(a, t), None)

    @classmethod
    def compute(cls, inputs, a, result_types):
        x = by_name(inputs, a)
        n, _, oh, ow = result_types[0].get_shape()
        middle_type = TensorType(result_types[0].element_type, [n, x.weight.shape[0], oh, ow])
        y = PointwiseDepthwiseOp.compute(_expand_half(x), _expand_half_attrs(a, x), [middle_type])
        y = y.astype(dtypes.to_numpy_dtype(middle_type.element_type)).astype(y.dtype)  # as stored between kernels
        return Conv2DBiasActOp.compute(_project_operands(y, x), _project_attrs(a, x), result_types)


def _expand_half(t) -> list:
    return [v for v in (t.input, t.weight, t.dw_weight, operand(t, "bias"), operand(t, "dw_bias")) if v is not None]


def _expand_half_attrs(a, t) -> SimpleNamespace:
    names = ("input", "weight", "dw_weight") + tuple(n for n in ("bias", "dw_bias") if operand(t, n) is not None)
    return SimpleNamespace(strides=a.strides, pads=a.pads, dilations=a.dilations, act=a.act, dw_act=a.dw_act,
                           operands=names)


def _project_operands(middle, t) -> list:
    return [v for v in (middle, t.pw_weight, operand(t, "pw_bias"), operand(t, "residual")) if v is not None]


def _project_attrs(a, t) -> SimpleNamespace:
    return _pointwise_attrs(SimpleNamespace(act=a.pw_act), SimpleNamespace(bias=operand(t, "pw_bias"),
                                                                           residual=operand(t, "residual")))


SEPARABLE_OPS = (DepthwisePointwiseOp, PointwiseDepthwiseOp, ExpandDepthwiseProjectOp)
