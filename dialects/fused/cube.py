"""Fused ops with a cube (matrix) core: a convolution or matrix product followed by
the epilogue its kernel applies to each output tile before storing it (bias,
residual add, activation, or a row normalisation).

These are the fusions GE's documentation leads with (Conv + BN + ReLU,
MatMul + Add + GELU): the epilogue runs on the output tile while it is still in
L0C / UB, so the pre-activation tensor never goes to global memory.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import TensorType, f32
from xdsl.irdl import (
    AttrSizedOperandSegments,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import Pure

from ...core import dtypes
from ..ge import BatchMatmulOp, Conv2DOp, GlobalAvgPoolOp, MatmulOp, MulOp
from ..ge.base import GEOp, Kind, attr, fail, like, same_element_type, shape_of
from ..ge.formats import FRACTAL_ROWS
from .base import (
    ACTIVATION_NAMES,
    GATED_ACTIVATION_NAMES,
    FusedOp,
    activate,
    add_all,
    apply_mask,
    by_name,
    ge_compute,
    operand,
    require_bias,
    require_broadcasts_to,
    require_mask,
    require_same_element_type,
    scale_by,
)
from .norm import add_norm_results, require_norm_parameters

def _matmul(x, a):
    return ge_compute(MatmulOp, [x.lhs, x.rhs], transpose_a=a.transpose_a, transpose_b=a.transpose_b)


def _matmul_epilogue_types(t, a) -> TensorType:
    """Shape rule shared by the matmul fusions: the product, then its bias and residual."""
    out = MatmulOp.infer([t.lhs, t.rhs], a, None)
    n = shape_of(out)[1]
    require_bias(operand(t, "bias"), ((n,), (1, n)), out.element_type)
    require_broadcasts_to(operand(t, "residual"), shape_of(out), "residual")
    require_same_element_type(operand(t, "residual"), out.element_type, "residual")
    return out


class _MatmulAttrs(FusedOp):
    transpose_a = attr(Kind.BOOL, False)
    transpose_b = attr(Kind.BOOL, False)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)


@irdl_op_definition
class MatmulBiasActOp(_MatmulAttrs):
    """`act(lhs x rhs + bias + residual)`: `ge.matmul` with its epilogue. `bias` has
    shape (N) or (1, N); `residual` broadcasts to the (M, N) result; both are
    optional."""

    name = "fused.matmul_bias_act"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    residual = opt_operand_def(TensorType)
    result = result_def(TensorType)
    act = attr(Kind.STR, "none", choices=ACTIVATION_NAMES)

    @classmethod
    def infer(cls, types, a, declared):
        return _matmul_epilogue_types(by_name(types, a), a)

    @classmethod
    def compute(cls, inputs, a, result_types):
        x = by_name(inputs, a)
        return activate(a.act, add_all(_matmul(x, a), operand(x, "bias"), operand(x, "residual")))


@irdl_op_definition
class MultiMatmulBiasActOp(GEOp):
    """`act(lhs x rhs_i + bias_i)` for several `rhs_i` of one shape sharing `lhs`:
    the `fused.matmul_bias_act` ops of a horizontal fusion (BERT's Q, K and V
    projections of one hidden state) as one kernel that stages each `lhs` tile
    once for all the products, rather than once per kernel. Operands: `lhs`, the
    weights, then one bias per weight when `biased`; one result per weight::

        %q, %k = fused.multi_matmul_bias_act %x, %wq, %wk, %bq, %bk {biased = true} : (...) -> (..., ...)
    """

    name = "fused.multi_matmul_bias_act"
    inputs = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    act = attr(Kind.STR, "none", choices=ACTIVATION_NAMES)
    biased = attr(Kind.BOOL, False)
    transpose_a = attr(Kind.BOOL, False)
    transpose_b = attr(Kind.BOOL, False)
    traits = traits_def(Pure())

    @classmethod
    def products(cls, values, a) -> list[list]:
        """[lhs, rhs_i, (bias_i)] per product, from the flat operand list."""
        lhs, rest = values[0], list(values[1:])
        count = len(rest) // 2 if a.biased else len(rest)
        if count < 1 or (a.biased and len(rest) % 2):
            raise fail(f"takes lhs, then weights{' and as many biases' if a.biased else ''}; got {len(values)} operands")
        weights, biases = rest[:count], rest[count:]
        return [[lhs, w, *([biases[i]] if a.biased else [])] for i, w in enumerate(weights)]

    @staticmethod
    def _single(a):
        """The attributes of one product's `fused.matmul_bias_act`."""
        operands = ("lhs", "rhs", "bias") if a.biased else ("lhs", "rhs")
        return SimpleNamespace(act=a.act, transpose_a=a.transpose_a, transpose_b=a.transpose_b, operands=operands)

    @classmethod
    def infer(cls, types, a, declared):
        results = [MatmulBiasActOp.infer(product, cls._single(a), None) for product in cls.products(types, a)]
        if len({(tuple(shape_of(r)), r.element_type) for r in results}) != 1:
            raise fail("the products differ in shape: " + ", ".join(str(r) for r in results))
        return results

    @classmethod
    def compute(cls, inputs, a, result_types):
        return [MatmulBiasActOp.compute(product, cls._single(a), None) for product in cls.products(inputs, a)]


class _Conv2DAttrs(FusedOp):
    """A convolution's attributes and its activation, as `ge.conv2d` has them."""

    strides = attr(Kind.INTS, (1, 1))
    pads = attr(Kind.INTS, (0, 0, 0, 0))
    dilations = attr(Kind.INTS, (1, 1))
    groups = attr(Kind.INT, 1)
    act = attr(Kind.STR, "none", choices=ACTIVATION_NAMES)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)


@irdl_op_definition
class Conv2DBiasActOp(_Conv2DAttrs):
    """`act(conv2d(input, weight) + bias + residual)`: `ge.conv2d` with its epilogue.
    `bias` holds one value per output channel (axis 1): shape (O), (O, 1, 1) or
    (1, O, 1, 1), as BN folding leaves it; `residual` broadcasts to the NCHW
    result (ResNet's shortcut); both are optional."""

    name = "fused.conv2d_bias_act"
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    residual = opt_operand_def(TensorType)
    result = result_def(TensorType)

    @classmethod
    def infer(cls, types, a, declared):
        t = by_name(types, a)
        out = Conv2DOp.infer([t.input, t.weight], a, None)
        channels = shape_of(out)[1]
        require_bias(operand(t, "bias"), ((channels,), (channels, 1, 1), (1, channels, 1, 1)), out.element_type)
        require_broadcasts_to(operand(t, "residual"), shape_of(out), "residual")
        require_same_element_type(operand(t, "residual"), out.element_type, "residual")
        return out

    @classmethod
    def compute(cls, inputs, a, result_types):
        x = by_name(inputs, a)
        y = ge_compute(
            Conv2DOp,
            [x.input, x.weight],
            result_types,
            strides=a.strides,
            pads=a.pads,
            dilations=a.dilations,
            groups=a.groups,
        )
        bias = operand(x, "bias")
        if bias is not None:
            bias = bias.reshape(-1, 1, 1)
        return activate(a.act, add_all(y, bias, operand(x, "residual")))


@irdl_op_definition
class Conv2DBiasActMeanOp(_Conv2DAttrs):
    """`y = conv2d_bias_act(...)` and `mean`, the mean of y over its pixels
    (`ge.global_avg_pool` of it, shape (N, O, 1, 1)): results (y, mean). A
    squeeze-and-excitation block pools the output of its depthwise convolution;
    the kernel computes the means from the output tiles while they are in UB
    (`fused-depthwise-mean`), so no pooling kernel reads y back."""

    name = "fused.conv2d_bias_act_mean"
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    result = result_def(TensorType)
    mean = result_def(TensorType)

    @classmethod
    def infer(cls, types, a, declared):
        out = Conv2DBiasActOp.infer(types, a, None)  # the same operand names, no residual
        return [out, GlobalAvgPoolOp.infer([out], a, None)]

    @classmethod
    def compute(cls, inputs, a, result_types):
        y = Conv2DBiasActOp.compute(inputs, a, result_types[:1])
        rounded = y.astype(dtypes.to_numpy_dtype(result_types[0].element_type))  # y as the pool reads it
        return [y, ge_compute(GlobalAvgPoolOp, [rounded.astype(y.dtype)])]


@irdl_op_definition
class Conv2DPartialsOp(FusedOp):
    """The split-K form of a convolution of one group: its input channels cut into
    `splits` equal slices, images s * N .. (s + 1) * N of the result the fp32
    convolution of slice s of the input's channels by the same slice of the
    weights' (so the convolution is the sum of the result's `splits` blocks of N
    images). A 1x1 convolution with few pixels and many channels makes every
    core read all of its channels (`fused-split-k-conv`); cut along them, each
    core reads one slice, and `fused.conv_partials_bias_act` adds them up."""

    name = "fused.conv2d_partials"
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    result = result_def(TensorType)
    strides = attr(Kind.INTS, (1, 1))
    pads = attr(Kind.INTS, (0, 0, 0, 0))
    dilations = attr(Kind.INTS, (1, 1))
    groups = attr(Kind.INT, 1)
    splits = attr(Kind.INT, 2)

    @classmethod
    def infer(cls, types, a, declared):
        t = by_name(types, a)
        out = Conv2DOp.infer([t.input, t.weight], a, None)
        channels = shape_of(t.input)[1]
        if a.groups != 1:
            raise fail(f"split-K convolutions have one group, got groups = {a.groups}")
        if a.splits < 2 or channels % a.splits:
            raise fail(f"splits must be at least 2 and divide the {channels} input channels, got {a.splits}")
        n, *rest = shape_of(out)
        return like(out, (a.splits * n, *rest), f32)

    @classmethod
    def compute(cls, inputs, a, result_types):
        x = by_name(inputs, a)
        depth = x.input.shape[1] // a.splits
        n, *rest = result_types[0].get_shape()
        slice_type = TensorType(f32, [n // a.splits, *rest])
        attrs = {"strides": a.strides, "pads": a.pads, "dilations": a.dilations, "groups": 1}
        products = [
            ge_compute(
                Conv2DOp,
                [x.input[:, s * depth : (s + 1) * depth].astype(np.float32),
                 x.weight[:, s * depth : (s + 1) * depth].astype(np.float32)],
                [slice_type],
                **attrs,
            )
            for s in range(a.splits)
        ]
        return np.concatenate(products).astype(np.float32)


@irdl_op_definition
class FusedBatchMatmulOp(FusedOp):
    """`mask((lhs x rhs) * scale)`: `ge.batch_matmul` scaled and optionally masked
    (attention scores). An i1 mask keeps the scores where true and puts
    `mask_value` elsewhere; a float mask is added."""

    name = "fused.batch_matmul"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    mask = opt_operand_def(TensorType)
    result = result_def(TensorType)
    transpose_a = attr(Kind.BOOL, False)
    transpose_b = attr(Kind.BOOL, False)
    scale = attr(Kind.FLOAT, 1.0)
    mask_value = attr(Kind.FLOAT, 0.0)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    @classmethod
    def infer(cls, types, a, declared):
        t = by_name(types, a)
        out = BatchMatmulOp.infer([t.lhs, t.rhs], a, None)
        require_mask(operand(t, "mask"), shape_of(out), out.element_type)
        return out

    @classmethod
    def compute(cls, inputs, a, result_types):
        x = by_name(inputs, a)
        y = ge_compute(BatchMatmulOp, [x.lhs, x.rhs], transpose_a=a.transpose_a, transpose_b=a.transpose_b)
        return apply_mask(scale_by(y, a.scale), operand(x, "mask"), a.mask_value)


@irdl_op_definition
class GatedMatmulOp(_MatmulAttrs):
    """`act(x x w_gate) * (x x w_up)`: the gated feed-forward of LLaMA-style MLPs
    (SwiGLU when act is silu) as one kernel computing both products on the same
    `x` tile and multiplying them in the epilogue, so neither (M, N) product
    reaches global memory."""

    name = "fused.gated_matmul"
    lhs = operand_def(TensorType)
    gate_weight = operand_def(TensorType)
    up_weight = operand_def(TensorType)
    result = result_def(TensorType)
    act = attr(Kind.STR, "silu", choices=GATED_ACTIVATION_NAMES)

    @classmethod
    def infer(cls, types, a, declared):
        t = by_name(types, a)
        gate = MatmulOp.infer([t.lhs, t.gate_weight], a, None)
        up = MatmulOp.infer([t.lhs, t.up_weight], a, None)
        if shape_of(gate) != shape_of(up):
            raise fail(f"gate and up products differ: {gate} vs {up}")
        return gate

    @classmethod
    def compute(cls, inputs, a, result_types):
        x = by_name(inputs, a)
        flags = {"transpose_a": a.transpose_a, "transpose_b": a.transpose_b}
        gate = ge_compute(MatmulOp, [x.lhs, x.gate_weight], **flags)
        up = ge_compute(MatmulOp, [x.lhs, x.up_weight], **flags)
        return ge_compute(MulOp, [activate(a.act, gate), up])


@irdl_op_definition
class MatmulPartialsOp(_MatmulAttrs):
    """The split-K form of `lhs x rhs`: K cut into `splits` equal slices, result
    `s` the fp32 product of slice `s` of lhs's columns by slice `s` of rhs's rows
    (so the product is their sum). A matrix product with few rows and a long K
    makes every core read all of lhs (`fused-split-matmul-norm`); cut along K,
    each core reads one slice of lhs and of rhs, and the norm kernel that
    follows (`fused.partials_add_layer_norm`) adds the slices up. Each slice
    must be a whole number of 16-element blocks (the fractal the cube reads)."""

    name = "fused.matmul_partials"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    splits = attr(Kind.INT, 2)

    @classmethod
    def infer(cls, types, a, declared):
        t = by_name(types, a)
        out = MatmulOp.infer([t.lhs, t.rhs], a, None)
        depth = shape_of(t.lhs)[0 if a.transpose_a else 1]
        if a.splits < 2 or depth % (a.splits * FRACTAL_ROWS):
            raise fail(f"splits must be at least 2 and cut K = {depth} into whole {FRACTAL_ROWS}-element blocks, got {a.splits}")
        return like(out, (a.splits, *shape_of(out)), f32)

    @classmethod
    def compute(cls, inputs, a, result_types):
        x = by_name(inputs, a)
        lhs = x.lhs.swapaxes(-1, -2) if a.transpose_a else x.lhs
        rhs = x.rhs.swapaxes(-1, -2) if a.transpose_b else x.rhs
        depth = lhs.shape[-1] // a.splits
        slices = [slice(s * depth, (s + 1) * depth) for s in range(a.splits)]
        products = [ge_compute(MatmulOp, [lhs[:, k], rhs[k, :]], transpose_a=False, transpose_b=False) for k in slices]
        return np.stack(products).astype(np.float32)


class _MatmulAddNormOp(_MatmulAttrs):
    """`s = lhs x rhs + bias + residual; y = norm(s)` over the last axis, returning
    both: the sum is the next residual. The output tile spans whole rows.
    Subclasses declare the operands (IRDL orders inherited fields last)."""

    result = result_def(TensorType)
    sum = result_def(TensorType)
    DROPPABLE_RESULTS: ClassVar[tuple[str, ...]] = ("sum",)
    epsilon = attr(Kind.FLOAT, 1e-5)

    @classmethod
    def infer(cls, types, a, declared):
        t = by_name(types, a)
        out = _matmul_epilogue_types(t, a)
        same_element_type([out, t.residual], "product and residual")
        require_norm_parameters(cls.NORM, shape_of(out), t, a.epsilon, -1)
        return [like(out), like(out)]

    @classmethod
    def compute(cls, inputs, a, result_types):
        x = by_name(inputs, a)
        product = add_all(_matmul(x, a), operand(x, "bias"))
        return add_norm_results(cls.NORM, product, x, a.epsilon, -1)


@irdl_op_definition
class MatmulAddLayerNormOp(_MatmulAddNormOp):
    """`s = lhs x rhs + bias + residual; y = layer_norm(s, gamma, beta)` over the
    last axis; results (y, s). BERT's post-LN output projections."""

    name = "fused.matmul_add_layer_norm"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    residual = operand_def(TensorType)
    gamma = operand_def(TensorType)
    beta = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    NORM: ClassVar[str] = "layer_norm"


@irdl_op_definition
class MatmulAddRmsNormOp(_MatmulAddNormOp):
    """`s = lhs x rhs + bias + residual; y = rms_norm(s, gamma)` over the last axis;
    results (y, s). A pre-norm decoder's output projection with the next norm."""

    name = "fused.matmul_add_rms_norm"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    residual = operand_def(TensorType)
    gamma = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    NORM: ClassVar[str] = "rms_norm"


CUBE_OPS = (
    MatmulBiasActOp,
    MultiMatmulBiasActOp,
    Conv2DBiasActOp,
    Conv2DBiasActMeanOp,
    Conv2DPartialsOp,
    FusedBatchMatmulOp,
    GatedMatmulOp,
    MatmulAddLayerNormOp,
    MatmulAddRmsNormOp,
    MatmulPartialsOp,
)
