"""QuantizeLinear and DequantizeLinear as casts and arithmetic.

* The scale and zero point apply per tensor (one value), per axis (a vector
  along `axis`) or per block (opset 21+: the input's shape with `axis` divided
  into blocks of `block_size`, each value repeated over its block, the last
  block cut short): `_broadcastable` reshapes, or expands and slices, them to
  broadcast against the input.
* QuantizeLinear to an integer type: x / scale (in `precision`'s type if given),
  rounded half to even (`ge.round`), plus the zero point, clamped to the type's
  range, cast; to a float8 type: x / scale cast with `saturate`; to float4:
  x / scale plus the zero point, cast. The result type is the zero point's, else
  `output_dtype`, else uint8.
* DequantizeLinear: (x - zero point) * scale in float32, cast to the scale's type
  (or `output_dtype`); float8 and float4 zero points are zero, as ONNX requires.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from ...core import dtypes
from ...dialects.ge import BiasAddOp, Conv2DOp, MaximumOp, MinimumOp, RoundOp
from .. import ops
from ..builder import Tensor, slice_
from .context import NodeContext, ge_element_type
from .linear import numpy_matmul
from .registry import converts
from .windows import read_window


def _broadcastable(c: NodeContext, value: Tensor, x: Tensor, axis: int, block_size: int) -> Tensor:
    """`value` (a scale or zero point) shaped to broadcast against `x`."""
    if value.rank == 0 or int(np.prod(value.shape)) == 1:
        return ops.reshape(value, []) if value.rank else value
    if not -x.rank <= axis < x.rank:
        raise c.fail(f"axis {axis} is out of range for {x.type}")
    axis %= x.rank
    if not block_size:
        if value.rank != 1 or value.shape[0] != x.shape[axis]:
            raise c.fail(f"a per-axis scale or zero point must be a vector of {x.shape[axis]} (dim {axis} of {x.type}), got {value.type}")
        return ops.reshape(value, [value.shape[0] if i == axis else 1 for i in range(x.rank)])
    blocks = -(-x.shape[axis] // block_size)
    expected = tuple(blocks if i == axis else d for i, d in enumerate(x.shape))
    if value.shape != expected:
        raise c.fail(f"a blocked scale or zero point must be {list(expected)} for block_size {block_size}, got {value.type}")
    repeated = list(value.shape[: axis + 1]) + [block_size] + list(value.shape[axis + 1 :])
    spread = ops.expand(ops.reshape(value, [*value.shape[: axis + 1], 1, *value.shape[axis + 1 :]]), repeated)
    merged = ops.reshape(spread, [blocks * block_size if i == axis else d for i, d in enumerate(x.shape)])
    return merged if blocks * block_size == x.shape[axis] else slice_(merged, [0], [x.shape[axis]], [axis])


def _layout(c: NodeContext, x: Tensor) -> tuple[int, int]:
    """(axis, block_size) as the opset has them (the axis is checked where a
    per-axis or blocked scale uses it)."""
    axis = c.int("axis", 1) if c.opset >= 13 else 1
    block_size = c.int("block_size", 0) if c.opset >= 21 else 0
    if block_size < 0:
        raise c.fail(f"block_size must be positive, got {block_size}")
    return axis, block_size


def _declared_type(c: NodeContext, since: int):
    """The element type of the `output_dtype` attribute (from opset `since`), or None."""
    declared = c.int("output_dtype", 0) if c.opset >= since else 0
    return ge_element_type(declared, "attribute 'output_dtype'", c.unsupported) if declared else None


@converts("QuantizeLinear")
def quantize_linear(c: NodeContext):
    x, scale = c.input(0, "x"), c.input(1, "y_scale")
    zero = c.optional_input(2)
    axis, block_size = _layout(c, x)
    declared = _declared_type(c, since=21)
    target = zero.dtype if zero is not None else declared or dtypes.from_numpy_dtype(np.uint8)
    if declared is not None and declared != target:
        raise c.fail(f"output_dtype {declared} differs from the zero point's type {target}")
    saturate = bool(c.int("saturate", 1)) if c.opset >= 19 else True
    precision = c.int("precision", 0) if c.opset >= 23 else 0
    scale = _broadcastable(c, scale, x, axis, block_size)
    if precision:
        compute = ge_element_type(precision, "attribute 'precision'", c.unsupported)
        x, scale = ops.cast(x, compute), ops.cast(scale, compute)
    scaled = x / scale
    if dtypes.is_integer(target):
        info = ml_dtypes.iinfo(dtypes.to_numpy_dtype(target))
        y = c.g.op(RoundOp, scaled)
        if zero is not None:
            y = y + ops.cast(_broadcastable(c, zero, x, axis, block_size), scaled.dtype)
        y = c.g.op(MinimumOp, c.g.op(MaximumOp, y, float(info.min)), float(info.max))
        return ops.cast(y, target)
    if dtypes.is_float8(target):
        return ops.cast(scaled, target, saturate=saturate)
    if zero is not None:
        scaled = scaled + ops.cast(_broadcastable(c, zero, x, axis, block_size), scaled.dtype)
    return ops.cast(scaled, target)


@converts("DequantizeLinear")
def dequantize_linear(c: NodeContext):
    x, scale = c.input(0, "x"), c.input(1, "x_scale")
    zero = c.optional_input(2)
    axis, block_size = _layout(c, x)
    result = _declared_type(c, since=23) or scale.dtype
    value = ops.cast(x, dtypes.f32)
    if zero is not None:
        value = value - ops.cast(_broadcastable(c, zero, x, axis, block_size), dtypes.f32)
    return ops.cast(value * ops.cast(_broadcastable(c, scale, x, axis, block_size), dtypes.f32), result)


def _centred(x: Tensor, zero: Tensor | None, shaped) -> Tensor:
    """x - zero in float32 (exact for 8-bit values); `shaped` lays a zero
    point that is a vector out to broadcast against x."""
    value = ops.cast(x, dtypes.f32)
    if zero is None:
        return value
    if int(np.prod(zero.shape)) == 1:
        return value - ops.cast(ops.reshape(zero, []), dtypes.f32)
    return value - ops.cast(shaped(zero), dtypes.f32)


# ---- integer matrix products ------------------------------------------------------------------

_EXACT_F32 = 1 << 24
"""Integers up to this magnitude are exact in float32."""


def _integer_matmul(c: NodeContext, a: Tensor, b: Tensor, a_zero: Tensor | None, b_zero: Tensor | None) -> Tensor:
    """(a - a_zero) @ (b - b_zero) in int32, exactly. The cube multiplies floats,
    so the operands go as float32 and K is cut into chunks short enough that
    no partial sum can exceed 2^24 (where float32 stops being exact: 8-bit
    operands less their zero points are at most 255 in magnitude); each chunk's
    product is cast to int32 and the chunks are added in int32."""
    if a.rank == 0 or b.rank == 0:
        raise c.fail(f"operands must have rank >= 1, got {a.type} and {b.type}")
    for x in (a, b):
        if not (dtypes.is_integer(x.dtype) and np.dtype(dtypes.to_numpy_dtype(x.dtype)).itemsize == 1):
            raise c.unsupported(f"operands must be 8-bit integers, got {x.type}")

    def per_row(zero: Tensor) -> Tensor:  # a's zero point per row
        return ops.reshape(zero, [zero.shape[0], 1]) if zero.rank == 1 and a.rank >= 2 else zero

    fa, fb = _centred(a, a_zero, per_row), _centred(b, b_zero, lambda zero: zero)
    k = a.shape[-1]
    chunk = _EXACT_F32 // (255 * 255)

    def part(start: int, end: int) -> Tensor:
        pa = fa if (start, end) == (0, k) else slice_(fa, [start], [end], [a.rank - 1])
        pb = fb if (start, end) == (0, k) else slice_(fb, [start], [end], [max(b.rank - 2, 0)])
        return numpy_matmul(c, pa, pb)

    return _int32_sum_of_parts(k, chunk, part)


def _int32_sum_of_parts(length: int, chunk: int, part) -> Tensor:
    """The int32 sum of `part(start, end)` over consecutive chunks of [0, length):
    each part is exact in float32, so it is cast before the parts are added."""
    total = None
    for start in range(0, length, chunk):
        piece = ops.cast(part(start, min(length, start + chunk)), dtypes.from_numpy_dtype(np.int32))
        total = piece if total is None else total + piece
    return total


@converts("MatMulInteger")
def matmul_integer(c: NodeContext):
    return _integer_matmul(c, c.input(0, "A"), c.input(1, "B"), c.optional_input(2), c.optional_input(3))


@converts("QLinearMatMul")
def qlinear_matmul(c: NodeContext):
    """As ONNX's reference: the exact integer product, times a_scale * b_scale /
    y_scale, rounded half to even, plus y's zero point, clamped to y's type."""
    a, a_scale, a_zero = c.input(0, "a"), c.input(1, "a_scale"), c.optional_input(2)
    b, b_scale, b_zero = c.input(3, "b"), c.input(4, "b_scale"), c.optional_input(5)
    y_scale, y_zero = c.input(6, "y_scale"), c.optional_input(7)
    product = ops.cast(_integer_matmul(c, a, b, a_zero, b_zero), dtypes.f32)
    for s in (a_scale, b_scale, y_scale):
        if int(np.prod(s.shape)) != 1:
            raise c.unsupported(f"only per-tensor scales are supported, got {s.type}")
    scale = ops.cast(ops.reshape(a_scale, []), dtypes.f32) * ops.cast(ops.reshape(b_scale, []), dtypes.f32)
    y = c.g.op(RoundOp, product * (scale / ops.cast(ops.reshape(y_scale, []), dtypes.f32)))
    target = y_zero.dtype if y_zero is not None else a.dtype
    if y_zero is not None:
        y = y + ops.cast(ops.reshape(y_zero, []) if int(np.prod(y_zero.shape)) == 1 else y_zero, dtypes.f32)
    return _saturate(c, y, target)


def _saturate(c: NodeContext, y: Tensor, target) -> Tensor:
    """Integral float values `y` clamped to integer type `target`'s range, then cast
    to it (QLinearMatMul's and QLinearConv's last step)."""
    info = ml_dtypes.iinfo(dtypes.to_numpy_dtype(target))
    return ops.cast(c.g.op(MinimumOp, c.g.op(MaximumOp, y, float(info.min)), float(info.max)), target)


def _integer_conv(c: NodeContext, x: Tensor, w: Tensor, x_zero: Tensor | None, w_zero: Tensor | None) -> Tensor:
    """The 2-D convolution of x - x_zero by w - w_zero in int32, exactly: float32
    convolutions over chunks of input channels whose products per output sum
    to at most 2^24 in magnitude, cast to int32 and added (as _integer_matmul).
    Padding reads zeros of x - x_zero, as ONNX's reference pads."""
    if x.rank != 4 or w.rank != 4:
        raise c.unsupported(f"only 2-D integer convolutions are supported, got {x.type} and {w.type}")
    for t in (x, w):
        if not (dtypes.is_integer(t.dtype) and np.dtype(dtypes.to_numpy_dtype(t.dtype)).itemsize == 1):
            raise c.unsupported(f"operands must be 8-bit integers, got {t.type}")
    groups = c.int("group", 1)
    window = read_window(c, x.shape[2:], w.shape[2:])
    fx = _centred(x, x_zero, lambda zero: zero)
    fw = _centred(w, w_zero, lambda zero: ops.reshape(zero, [zero.shape[0], 1, 1, 1]))
    per_output = w.shape[1] * w.shape[2] * w.shape[3]
    chunk = max(1, (_EXACT_F32 // (255 * 255)) // (w.shape[2] * w.shape[3]))
    if per_output * 255 * 255 > _EXACT_F32 and (groups != 1 or w.shape[2] * w.shape[3] * 255 * 255 > _EXACT_F32):
        raise c.unsupported(f"a grouped or very large-kernel integer convolution ({w.type}) cannot be split "
                            "into exact float32 parts")
    channels = w.shape[1]

    def part(start: int, end: int) -> Tensor:
        px = fx if (start, end) == (0, channels) else slice_(fx, [start], [end], [1])
        pw = fw if (start, end) == (0, channels) else slice_(fw, [start], [end], [1])
        return c.g.op(Conv2DOp, px, pw, strides=window.strides, pads=window.pads, dilations=window.dilations,
                      groups=groups)

    return _int32_sum_of_parts(channels, chunk if groups == 1 else channels, part)


@converts("ConvInteger")
def conv_integer(c: NodeContext):
    return _integer_conv(c, c.input(0, "x"), c.input(1, "w"), c.optional_input(2), c.optional_input(3))


@converts("QLinearConv")
def qlinear_conv(c: NodeContext):
    """As ONNX's reference: the exact integer convolution plus the int32 bias,
    times x_scale * w_scale / y_scale (w_scale per output channel or not),
    plus y's zero point, clamped to y's type, rounded half to even."""
    x, x_scale, x_zero = c.input(0, "x"), c.input(1, "x_scale"), c.input(2, "x_zero_point")
    w, w_scale, w_zero = c.input(3, "w"), c.input(4, "w_scale"), c.input(5, "w_zero_point")
    y_scale, y_zero = c.input(6, "y_scale"), c.input(7, "y_zero_point")
    total = _integer_conv(c, x, w, x_zero, w_zero)
    bias = c.optional_input(8)
    if bias is not None:
        total = c.g.op(BiasAddOp, total, bias, axis=1)
    if int(np.prod(x_scale.shape)) != 1 or int(np.prod(y_scale.shape)) != 1:
        raise c.unsupported("only per-tensor x_scale and y_scale are supported")
    per_channel = int(np.prod(w_scale.shape)) > 1
    if per_channel and (w_scale.rank != 1 or w_scale.shape[0] != w.shape[0]):
        raise c.fail(f"w_scale must be a scalar or one value per output channel, got {w_scale.type}")
    scale = ops.cast(ops.reshape(w_scale, [w_scale.shape[0], 1, 1] if per_channel else []), dtypes.f32)
    scale = scale * ops.cast(ops.reshape(x_scale, []), dtypes.f32) / ops.cast(ops.reshape(y_scale, []), dtypes.f32)
    y = ops.cast(total, dtypes.f32) * scale + ops.cast(ops.reshape(y_zero, []), dtypes.f32)
    # Rounding before clamping to integer bounds gives what clamping first does.
    return _saturate(c, c.g.op(RoundOp, y), y_zero.dtype)
