"""Elementwise ops: one row-tile kernel whose body is the op itself; and
fused.swiglu, silu(gate) * up in one pass."""

from __future__ import annotations

from xdsl.dialects.builtin import f32

from ....dialects import fused, ge, npu
from ..context import KernelContext
from .registry import kernel_for
from ..row_kernel import emit_row_kernel, row_view
from ..vector_emitter import Operand, Tile, VectorEmitter, VectorUnsupported, emit_elementwise

ELEMENTWISE = (
    ge.AddOp,
    ge.SubOp,
    ge.MulOp,
    ge.DivOp,
    ge.PowOp,
    ge.MaximumOp,
    ge.MinimumOp,
    ge.ModOp,
    ge.CompareOp,
    ge.AndOp,
    ge.OrOp,
    ge.NotOp,
    ge.BitwiseAndOp,
    ge.BitwiseOrOp,
    ge.BitwiseXorOp,
    ge.BitwiseNotOp,
    ge.BitShiftOp,
    ge.NegOp,
    ge.AbsOp,
    ge.ExpOp,
    ge.LogOp,
    ge.SqrtOp,
    ge.RsqrtOp,
    ge.ReciprocalOp,
    ge.TanhOp,
    ge.SigmoidOp,
    ge.ReluOp,
    ge.LeakyReluOp,
    ge.GeluOp,
    ge.SiluOp,
    ge.ErfOp,
    ge.SignOp,
    ge.FloorOp,
    ge.CeilOp,
    ge.RoundOp,
    *ge.TRIGONOMETRIC_OPS,
    ge.CastOp,
    ge.WhereOp,
)


@kernel_for(*ELEMENTWISE)
def lower_elementwise(op: ge.GEOp, k: KernelContext) -> None:
    attrs = op.attr_values()
    view = row_view(k)
    try:
        emit_row_kernel(k, view, lambda v, ins, outs: emit_elementwise(v, op.name, attrs, ins, outs[0]))
    except VectorUnsupported as e:
        raise k.unsupported(str(e)) from None


@kernel_for(fused.SwigluOp)
def lower_swiglu(op: fused.SwigluOp, k: KernelContext) -> None:
    emit_row_kernel(k, row_view(k), lambda v, ins, outs: swiglu(v, ins[0], ins[1], outs[0]))


def swiglu(v: VectorEmitter, gate: Operand, up: Operand, out: Tile) -> None:
    """out = silu(gate) * up in fp32, rounded once (the fused op's reference)."""
    g = v.widened(gate)
    work = out if out.element_type == f32 else v.temp(f32)
    v.instr(npu.VSigmoidOp, g, work)
    v.instr(npu.VMulOp, work, g, work)
    if g is not gate:
        v.release(g)
    v.binary(npu.VMulOp, work, v.widened(up) if isinstance(up, Tile) else up, work)
    if work is not out:
        v.cast(work, out)
