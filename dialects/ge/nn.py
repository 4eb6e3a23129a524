"""Cube-shaped ops (matmul, batch_matmul, conv2d) and the ops that live beside them
in CNNs (pooling, bias_add). Layouts are the frameworks' logical ones: NCHW
activations, OIHW weights; pads in ONNX order [top, left, bottom, right]."""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from xdsl.dialects.builtin import TensorType
from xdsl.irdl import irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import Pure

from ...core import dtypes
from .canonicalization import Canonicalize
from .base import (
    GEOp,
    Kind,
    attr,
    broadcast_shapes,
    fail,
    like,
    normalize_axis,
    require_float,
    require_length,
    require_non_negative,
    require_numeric,
    require_positive,
    require_rank,
    same_element_type,
    shape_of,
)

# ---- matrix products ----------------------------------------------------------------


def _contract(lhs: tuple[int, ...], rhs: tuple[int, ...], transpose_a: bool, transpose_b: bool):
    m, k = (lhs[-1], lhs[-2]) if transpose_a else (lhs[-2], lhs[-1])
    k2, n = (rhs[-1], rhs[-2]) if transpose_b else (rhs[-2], rhs[-1])
    if k != k2:
        raise fail(f"contraction dims differ: lhs K={k}, rhs K={k2}")
    return m, n


def exact_sums(*arrays: np.ndarray) -> list[np.ndarray]:
    """Float operands widened to f64 for a contraction: the reference's sums are then
    correctly rounded once the result is stored, whatever order the BLAS adds in.
    In f32 they would depend on it (a multi-threaded BLAS and a single-threaded one
    differ in the last bits), and a model whose logits are large and nearly equal
    (the light zoo's SqueezeNet: 1000 logits of 9.5e9, its weights constants)
    turns those bits into a different softmax."""
    return [x.astype(np.float64) if x.dtype.kind == "f" else x for x in arrays]


def _matmul(a: np.ndarray, b: np.ndarray, transpose_a: bool, transpose_b: bool) -> np.ndarray:
    a, b = exact_sums(a, b)
    if transpose_a:
        a = np.swapaxes(a, -1, -2)
    if transpose_b:
        b = np.swapaxes(b, -1, -2)
    return np.matmul(a, b)


class MatrixProductOp(GEOp):
    """`lhs x rhs` over the last two dims, each optionally transposed; the
    subclasses say which ranks they take and what the leading dims become."""

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    transpose_a = attr(Kind.BOOL, False)
    transpose_b = attr(Kind.BOOL, False)
    traits = traits_def(Pure(), Canonicalize())

    @classmethod
    def compute(cls, inputs, a, result_types):
        return _matmul(*inputs, a.transpose_a, a.transpose_b)


@irdl_op_definition
class MatmulOp(MatrixProductOp):
    """`lhs x rhs` of 2-D tensors, each optionally transposed: (M, K) x (K, N) -> (M, N)."""

    name = "ge.matmul"

    @classmethod
    def infer(cls, types, a, declared):
        lhs, rhs = types
        require_rank(lhs, 2, "lhs")
        require_rank(rhs, 2, "rhs")
        element_type = same_element_type(types)
        require_numeric(lhs)
        m, n = _contract(shape_of(lhs), shape_of(rhs), a.transpose_a, a.transpose_b)
        return like(lhs, (m, n), element_type)


@irdl_op_definition
class BatchMatmulOp(MatrixProductOp):
    """Batched `lhs x rhs` over the last two dims; leading (batch) dims broadcast."""

    name = "ge.batch_matmul"

    @classmethod
    def infer(cls, types, a, declared):
        lhs, rhs = types
        ls, rs = shape_of(lhs), shape_of(rhs)
        if len(ls) < 2 or len(rs) < 2:
            raise fail(f"operands must have rank >= 2, got {lhs} and {rhs}")
        element_type = same_element_type(types)
        require_numeric(lhs)
        m, n = _contract(ls, rs, a.transpose_a, a.transpose_b)
        batch = broadcast_shapes(ls[:-2], rs[:-2])
        return like(lhs, (*batch, m, n), element_type)


# ---- windows ----------------------------------------------------------------------------


def _window_out(size: int, kernel: int, stride: int, pad_begin: int, pad_end: int, dilation: int = 1, ceil_mode: bool = False) -> int:
    span = (kernel - 1) * dilation + 1
    padded = size + pad_begin + pad_end
    if padded < span:
        raise fail(f"window of {span} does not fit an input of {size} padded to {padded}")
    if not ceil_mode:
        return (padded - span) // stride + 1
    out = -(-(padded - span) // stride) + 1
    # A window may not start in the end padding (PyTorch and ONNX agree here).
    if (out - 1) * stride >= size + pad_begin:
        out -= 1
    return out


def _check_window(kernel, strides, pads) -> None:
    require_length(kernel, 2, "kernel")
    require_positive(kernel, "kernel")
    require_length(strides, 2, "strides")
    require_positive(strides, "strides")
    require_length(pads, 4, "pads")
    require_non_negative(pads, "pads")


def _windows(x: np.ndarray, kernel, strides, dilations, out_hw) -> np.ndarray:
    """(N, C, OH, OW, KH, KW) views of an already padded NCHW array."""
    span = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
    view = sliding_window_view(x, span, axis=(2, 3))
    view = view[:, :, :: strides[0], :: strides[1], :: dilations[0], :: dilations[1]]
    return view[:, :, : out_hw[0], : out_hw[1]]


@irdl_op_definition
class Conv2DOp(GEOp):
    """2-D convolution, NCHW input, (O, C/groups, KH, KW) weight (ONNX Conv, no bias:
    the bias is a `ge.bias_add` the fusion folds back in)."""

    name = "ge.conv2d"
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    result = result_def(TensorType)
    strides = attr(Kind.INTS, (1, 1))
    pads = attr(Kind.INTS, (0, 0, 0, 0))
    dilations = attr(Kind.INTS, (1, 1))
    groups = attr(Kind.INT, 1)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, types, a, declared):
        x, w = types
        require_rank(x, 4, "input")
        require_rank(w, 4, "weight")
        element_type = same_element_type(types)
        require_float(x, "input")
        (n, c, h, wd), (o, cg, kh, kw) = shape_of(x), shape_of(w)
        _check_window((kh, kw), a.strides, a.pads)
        require_length(a.dilations, 2, "dilations")
        require_positive(a.dilations, "dilations")
        if a.groups <= 0 or c % a.groups or o % a.groups:
            raise fail(f"groups={a.groups} must divide input channels {c} and output channels {o}")
        if cg * a.groups != c:
            raise fail(f"weight expects {cg * a.groups} input channels ({cg} x {a.groups} groups), input has {c}")
        oh = _window_out(h, kh, a.strides[0], a.pads[0], a.pads[2], a.dilations[0])
        ow = _window_out(wd, kw, a.strides[1], a.pads[1], a.pads[3], a.dilations[1])
        return like(x, (n, o, oh, ow), element_type)

    @classmethod
    def compute(cls, inputs, a, result_types):
        x, w = exact_sums(*inputs)
        t, l, b, r = a.pads
        x = np.pad(x, ((0, 0), (0, 0), (t, b), (l, r)))
        n = x.shape[0]
        o, cg, kh, kw = w.shape
        oh, ow = result_types[0].get_shape()[2:]
        win = _windows(x, (kh, kw), a.strides, a.dilations, (oh, ow))
        g = a.groups
        win = win.reshape(n, g, cg, oh, ow, kh, kw)
        wg = w.reshape(g, o // g, cg, kh, kw)
        out = np.einsum("ngchwij,gocij->ngohw", win, wg, optimize=True)
        return out.reshape(n, o, oh, ow)


class Pool2DOp(GEOp):
    input = operand_def(TensorType)
    result = result_def(TensorType)
    kernel = attr(Kind.INTS)
    strides = attr(Kind.INTS, (1, 1))
    pads = attr(Kind.INTS, (0, 0, 0, 0))
    ceil_mode = attr(Kind.BOOL, False)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, types, a, declared):
        (x,) = types
        require_rank(x, 4, "input")
        cls.check_element_type(x)
        _check_window(a.kernel, a.strides, a.pads)
        if a.pads[0] >= a.kernel[0] or a.pads[1] >= a.kernel[1] or a.pads[2] >= a.kernel[0] or a.pads[3] >= a.kernel[1]:
            raise fail(f"pads {list(a.pads)} must be smaller than the kernel {list(a.kernel)}")
        n, c, h, w = shape_of(x)
        oh = _window_out(h, a.kernel[0], a.strides[0], a.pads[0], a.pads[2], 1, a.ceil_mode)
        ow = _window_out(w, a.kernel[1], a.strides[1], a.pads[1], a.pads[3], 1, a.ceil_mode)
        return like(x, (n, c, oh, ow))

    @classmethod
    def check_element_type(cls, x: TensorType) -> None:
        require_float(x, "input")

    @staticmethod
    def _padded(x: np.ndarray, a, out_hw, fill: float) -> np.ndarray:
        """Pads by `pads`, then on the bottom/right as far as ceil mode's last window reaches."""
        t, l, b, r = a.pads
        extra_h = max(0, (out_hw[0] - 1) * a.strides[0] + a.kernel[0] - (x.shape[2] + t + b))
        extra_w = max(0, (out_hw[1] - 1) * a.strides[1] + a.kernel[1] - (x.shape[3] + l + r))
        return np.pad(x, ((0, 0), (0, 0), (t, b + extra_h), (l, r + extra_w)), constant_values=fill)


@irdl_op_definition
class MaxPool2DOp(Pool2DOp):
    """Max over `kernel` windows; padding never wins. Any numeric element type
    (ONNX MaxPool takes int8 and uint8 too)."""

    name = "ge.max_pool2d"

    @classmethod
    def check_element_type(cls, x: TensorType) -> None:
        require_numeric(x, "input")

    @classmethod
    def compute(cls, inputs, a, result_types):
        out_hw = result_types[0].get_shape()[2:]
        x = cls._padded(inputs[0], a, out_hw, dtypes.lowest_value(inputs[0].dtype))
        return _windows(x, a.kernel, a.strides, (1, 1), out_hw).max(axis=(-2, -1))


@irdl_op_definition
class AvgPool2DOp(Pool2DOp):
    """Mean over `kernel` windows. Explicit padding counts only when
    `count_include_pad`; ceil mode's overhang never counts."""

    name = "ge.avg_pool2d"
    count_include_pad = attr(Kind.BOOL, False)

    @classmethod
    def compute(cls, inputs, a, result_types):
        out_hw = result_types[0].get_shape()[2:]
        x = inputs[0]
        padded = cls._padded(x, a, out_hw, 0.0)
        total = _windows(padded, a.kernel, a.strides, (1, 1), out_hw).sum(axis=(-2, -1))
        # Which positions of the padded plane count towards the divisor.
        t, l, b, r = a.pads
        h, w = x.shape[2:]
        counted = np.zeros((1, 1, *padded.shape[2:]), dtype=x.dtype)
        if a.count_include_pad:
            counted[..., : t + h + b, : l + w + r] = 1
        else:
            counted[..., t : t + h, l : l + w] = 1
        counts = _windows(counted, a.kernel, a.strides, (1, 1), out_hw).sum(axis=(-2, -1))
        return total / counts


@irdl_op_definition
class GlobalAvgPoolOp(GEOp):
    """Mean over all spatial dims: (N, C, D1, ...) -> (N, C, 1, ...)."""

    name = "ge.global_avg_pool"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, types, a, declared):
        (x,) = types
        shape = shape_of(x)
        if len(shape) < 3:
            raise fail(f"input must have rank >= 3 (N, C, spatial...), got {x}")
        require_float(x, "input")
        return like(x, (*shape[:2], *([1] * (len(shape) - 2))))

    @classmethod
    def compute(cls, inputs, a, result_types):
        x = inputs[0]
        return x.mean(axis=tuple(range(2, x.ndim)), keepdims=True)


@irdl_op_definition
class BiasAddOp(GEOp):
    """Adds a 1-D bias along `axis` (1 for NCHW activations, -1 after a matmul)."""

    name = "ge.bias_add"
    input = operand_def(TensorType)
    bias = operand_def(TensorType)
    result = result_def(TensorType)
    axis = attr(Kind.INT, -1)
    traits = traits_def(Pure(), Canonicalize())

    @classmethod
    def infer(cls, types, a, declared):
        x, b = types
        require_rank(b, 1, "bias")
        element_type = same_element_type(types)
        require_numeric(x)
        shape = shape_of(x)
        axis = normalize_axis(a.axis, len(shape))
        if shape_of(b)[0] != shape[axis]:
            raise fail(f"bias has {shape_of(b)[0]} values, dim {axis} of the input is {shape[axis]}")
        return like(x, element_type=element_type)

    @classmethod
    def compute(cls, inputs, a, result_types):
        x, b = inputs
        axis = a.axis % x.ndim
        return x + b.reshape([-1 if i == axis else 1 for i in range(x.ndim)])


NN_OPS = (MatmulOp, BatchMatmulOp, Conv2DOp, MaxPool2DOp, AvgPool2DOp, GlobalAvgPoolOp, BiasAddOp)
