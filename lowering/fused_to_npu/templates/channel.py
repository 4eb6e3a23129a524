"""Per-channel ops: ge.bias_add (a 1-D bias along any axis) and ge.batch_norm at
inference when graph optimisation did not fold it into a convolution.

Both add (and scale by) one value per position of an axis:

* along the last axis the values are a ROW operand of the row-tile kernel;
* along another axis of an ND tensor (C of NCHW) the tensor is seen as rows of
  the dims after the axis, one row per (..., c): the values are a per-row (COL)
  operand with period C, loaded once when a tile holds whole periods;
* in NC1HWC0 (the C of 5HD) and along N of FRACTAL_NZ, the blocked layout
  expands the values once into the shape of a tile.

batch_norm computes its per-channel factors `a = scale / sqrt(var + eps)` and
`b = bias - mean * a` in fp32 on the (few) per-channel values of each tile,
then `x * a + b` in fp32, rounded once, as the reference does.
"""

from __future__ import annotations

import math

from xdsl.dialects.builtin import f32

from ....dialects import ge, npu
from ....dialects.ge.formats import Format
from ..context import KernelContext
from .registry import kernel_for
from ..row_kernel import Role, RowOperand, RowView, blocked_view, emit_row_kernel
from ..vector_emitter import Operand, Tile, VectorEmitter, as_col
from .normalization import fp32_working_copy


def channel_view(k: KernelContext, axis: int) -> RowView:
    """The view of (x, per-channel vectors...) -> result with the vectors along `axis`."""
    x, out = k.inputs[0], k.outputs[0]
    if x.format != Format.ND or out.format != Format.ND:
        if x.format == out.format and _blocked_axis(x.format, axis, len(x.shape)):
            return blocked_view(k, vectors=True)
        raise k.unsupported(f"per-channel values along axis {axis} of a {x.format.value} tensor")
    shape = x.shape
    vectors = k.inputs[1:]
    if axis == len(shape) - 1:
        roles = [RowOperand(v, Role.ROW) for v in vectors]
        return RowView(math.prod(shape[:-1]), shape[-1], [RowOperand(x, Role.FULL), *roles],
                       [RowOperand(out, Role.FULL)], flat=False)
    rows, cols = math.prod(shape[: axis + 1]), math.prod(shape[axis + 1 :])
    roles = [RowOperand(v, Role.COL, period=shape[axis]) for v in vectors]
    return RowView(rows, cols, [RowOperand(x, Role.FULL), *roles], [RowOperand(out, Role.FULL)], flat=False)


def _blocked_axis(fmt: Format, axis: int, rank: int) -> bool:
    return (fmt == Format.NC1HWC0 and axis == 1) or (fmt == Format.FRACTAL_NZ and axis == rank - 1)


@kernel_for(ge.BiasAddOp)
def lower_bias_add(op: ge.BiasAddOp, k: KernelContext) -> None:
    view = channel_view(k, op.attr_value("axis") % len(k.inputs[0].shape))
    emit_row_kernel(k, view, lambda v, ins, outs: v.binary(npu.VAddOp, ins[0], ins[1], outs[0]))


@kernel_for(ge.BatchNormOp)
def lower_batch_norm(op: ge.BatchNormOp, k: KernelContext) -> None:
    epsilon = op.attr_value("epsilon")
    view = channel_view(k, 1)
    if any(o.role == Role.COL for o in view.inputs):  # per (n, c) row: factors per tile

        def body(v: VectorEmitter, ins: list[Operand], outs: list[Tile]) -> None:
            a, b = batch_norm_factors(v.per_row(), *ins[1:], epsilon)
            _scale_shift(v, ins[0], as_col(a), as_col(b), outs[0])
            v.release(a)
            v.release(b)

        emit_row_kernel(k, view, body)
        return

    def prologue(v: VectorEmitter, ins: list[Operand]) -> list[Operand]:  # channels along the row: once
        return [ins[0], *batch_norm_factors(v, *ins[1:], epsilon)]

    emit_row_kernel(k, view, lambda v, ins, outs: _scale_shift(v, *ins, outs[0]), prologue)


def _scale_shift(v: VectorEmitter, x: Tile, a: Tile, b: Tile, out: Tile) -> None:
    """out = x * a + b in fp32, rounded once."""
    work = fp32_working_copy(v, x, out)
    v.instr(npu.VMulOp, work, a, work)
    v.instr(npu.VAddOp, work, b, work)
    if work is not out:
        v.cast(work, out)
        v.release(work)


def batch_norm_factors(v: VectorEmitter, scale, bias, mean, variance, epsilon: float) -> tuple[Tile, Tile]:
    """(a, b) in fp32 with `a = scale / sqrt(variance + epsilon)`, `b = bias - mean * a`,
    over tiles of per-channel values or immediates (splat constants), in
    temporaries from `v`."""
    a, b, t = v.temp(f32), v.temp(f32), v.temp(f32)
    _in_fp32(v, variance, a)
    v.binary(npu.VAddOp, a, float(epsilon), a)
    v.instr(npu.VRsqrtOp, a, a)
    _in_fp32(v, scale, t)
    v.instr(npu.VMulOp, a, t, a)
    _in_fp32(v, mean, t)
    v.instr(npu.VMulOp, t, a, t)
    _in_fp32(v, bias, b)
    v.instr(npu.VSubOp, b, t, b)
    v.release(t)
    return a, b


def _in_fp32(v: VectorEmitter, x: Operand, dst: Tile) -> None:
    """dst = x in fp32; the row kernel hands splat constants over as immediates."""
    if isinstance(x, Tile):
        v.cast(x, dst)
    else:
        v.fill(dst, float(x))
