"""Elementwise ops: one row-tile kernel whose body is the op itself."""

from __future__ import annotations

from ....dialects import ge
from ..context import KernelContext, kernel_for
from ..row_kernel import emit_row_kernel, row_view
from ..vector_emitter import emit_elementwise

ELEMENTWISE = (
    ge.AddOp,
    ge.SubOp,
    ge.MulOp,
    ge.DivOp,
    ge.PowOp,
    ge.MaximumOp,
    ge.MinimumOp,
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
    ge.CastOp,
    ge.WhereOp,
)


@kernel_for(*ELEMENTWISE)
def lower_elementwise(op: ge.GEOp, k: KernelContext) -> None:
    attrs = op.attr_values()
    view = row_view(k)
    emit_row_kernel(k, view, lambda v, ins, outs: emit_elementwise(v, op.name, attrs, ins, outs[0]))
