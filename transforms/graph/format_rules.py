"""What the layout pass knows about ops and physical formats: which formats the
cube wants for its operands, and which ops can run on data in a physical format
without converting it.

An op can run in format F when its arithmetic does not care where an element
lives, only which logical element it is, and when padding cannot leak into a
result. Each operand then plays one of two roles:

* FORMATTED: it is laid out in F too. Elementwise ops need its blocked dims (the
  last two for FRACTAL_NZ, C/H/W for NC1HWC0) to equal the result's, so the two
  physical images line up block for block (leading batch dims may broadcast), and
  the same block shape (a cast f16 -> f32 in NC1HWC0 changes C0: not agnostic).
* NEUTRAL: it stays ND and is broadcast by logical index: a scalar, a 1-D vector
  along the last dim in FRACTAL_NZ (a bias after a matmul), the per-channel
  parameters of bias_add / batch_norm when the channel axis is C of NC1HWC0 or
  the last dim of FRACTAL_NZ.

Format-sensitive ops (reshape, transpose, softmax / layer_norm / reductions over
an axis whose padding would count, gather, concat, ...) have no rule: they get
ND data. Pooling and batch_norm run natively in NC1HWC0 (each channel is
independent and only H, W are reduced), as in CANN.

Only float cube ops (f16, f32) get cube formats; integer matmuls stay ND, and
so do grouped convolutions whose groups are not whole C0-channel blocks, but for
depthwise ones, which the vector unit computes in NC1HWC0 (weights in ND).
"""

from __future__ import annotations

import math
from enum import Enum

from xdsl.dialects.builtin import TensorType, f16, f32
from xdsl.ir import Operation

from ...dialects.ge import (
    AvgPool2DOp,
    BatchMatmulOp,
    BatchNormOp,
    BiasAddOp,
    BinaryOp,
    Conv2DOp,
    GlobalAvgPoolOp,
    MatmulOp,
    MaxPool2DOp,
    UnaryOp,
    WhereOp,
)
from ...dialects.ge.formats import Format, block_shape, format_error, format_of


CUBE_ELEMENT_TYPES = (f16, f32)


class Role(Enum):
    FORMATTED = "formatted"
    NEUTRAL = "neutral"


def cube_formats(op: Operation) -> tuple[tuple[Format, ...], Format] | None:
    """(operand formats, result format) the cube wants for a float cube op."""
    if not op.results or op.results[0].type.element_type not in CUBE_ELEMENT_TYPES:
        return None
    if isinstance(op, MatmulOp | BatchMatmulOp):
        return (Format.FRACTAL_NZ, Format.FRACTAL_NZ), Format.FRACTAL_NZ
    if isinstance(op, Conv2DOp):
        if _depthwise(op):
            return (Format.NC1HWC0, Format.ND), Format.NC1HWC0
        return None if _unaligned_groups(op) else ((Format.NC1HWC0, Format.FRACTAL_Z), Format.NC1HWC0)
    return None


def _depthwise(conv: Conv2DOp) -> bool:
    """One input and one output channel per group: the vector unit computes it with
    channels along its lanes, a C0 block of NC1HWC0 (the weights stay (C, 1, KH,
    KW), read per block; `lowering/fused_to_npu/templates/depthwise_conv.py`)."""
    groups = conv.attr_value("groups")
    c, o = conv.operands[0].type.get_shape()[1], conv.results[0].type.get_shape()[1]
    return groups > 1 and c == groups and o == groups


def _unaligned_groups(conv: Conv2DOp) -> bool:
    """A grouped convolution whose groups do not start on C0-channel blocks (a
    depthwise one, say): a group is not a run of whole blocks of NC1HWC0, which the
    cube kernel reads and writes block by block, so it stays ND."""
    groups = conv.attr_value("groups")
    if groups == 1:
        return False
    c0 = block_shape(Format.NC1HWC0, conv.results[0].type.element_type)[0]
    c, o = conv.operands[0].type.get_shape()[1], conv.results[0].type.get_shape()[1]
    return (c // groups) % c0 != 0 or (o // groups) % c0 != 0


def _blocked_dims(shape: tuple[int, ...], fmt: Format) -> tuple[int, ...]:
    return shape[-2:] if fmt == Format.FRACTAL_NZ else shape[1:]


def _elementwise_role(t: TensorType, result: TensorType, fmt: Format) -> Role | None:
    shape, out = tuple(t.get_shape()), tuple(result.get_shape())
    if math.prod(shape) == 1:
        return Role.NEUTRAL
    if fmt == Format.FRACTAL_NZ and len(shape) == 1:
        return Role.NEUTRAL
    if format_error(fmt, shape) is None and _blocked_dims(shape, fmt) == _blocked_dims(out, fmt):
        return Role.FORMATTED
    return None


def _channel_parameters_role(op: Operation, fmt: Format, axis: int) -> list[Role] | None:
    """The data operand formatted, per-channel parameters neutral, when the channel
    axis is the one the format keeps as a plain index."""
    rank = op.operands[0].type.get_num_dims()
    axis %= rank
    if (fmt == Format.NC1HWC0 and axis == 1) or (fmt == Format.FRACTAL_NZ and axis == rank - 1):
        return [Role.FORMATTED] + [Role.NEUTRAL] * (len(op.operands) - 1)
    return None


def operand_roles(op: Operation, fmt: Format) -> list[Role] | None:
    """How each operand of `op` is laid out if `op` runs in `fmt`, or None if it cannot."""
    if len(op.results) != 1 or format_error(fmt, tuple(op.results[0].type.get_shape())) is not None:
        return None
    result = op.results[0].type
    if isinstance(op, UnaryOp | BinaryOp | WhereOp):
        roles = [_elementwise_role(v.type, result, fmt) for v in op.operands]
    elif isinstance(op, BiasAddOp):
        roles = _channel_parameters_role(op, fmt, op.attr_value("axis"))
    elif isinstance(op, BatchNormOp):
        roles = _channel_parameters_role(op, fmt, 1)
    elif isinstance(op, MaxPool2DOp | AvgPool2DOp | GlobalAvgPoolOp) and fmt == Format.NC1HWC0:
        roles = [Role.FORMATTED]
    else:
        return None
    if roles is None or any(r is None for r in roles):
        return None
    blocks = {block_shape(fmt, result.element_type)}
    blocks |= {block_shape(fmt, v.type.element_type) for v, r in zip(op.operands, roles) if r == Role.FORMATTED}
    if len(blocks) != 1:
        return None
    if any(format_of(v.type) not in (Format.ND, fmt) for v in op.operands):
        return None
    return roles
