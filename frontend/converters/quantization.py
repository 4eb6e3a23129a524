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
from ...dialects.ge import MaximumOp, MinimumOp, RoundOp
from .. import ops
from ..builder import Tensor, slice_
from .context import NodeContext, ge_element_type
from .registry import converts


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
