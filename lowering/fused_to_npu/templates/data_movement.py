"""Data movement kernels: copies between GM buffers."""

from __future__ import annotations

from ..context import KernelContext
from ..row_kernel import Role, RowOperand, RowView, emit_row_kernel


def copy_to_output(k: KernelContext) -> None:
    """Copy a graph result into its output argument (same shape, ND)."""
    src, dst = k.inputs[0], k.outputs[0]
    if src.format != dst.format:
        raise k.unsupported(f"returning a {src.format.value} tensor needs a format conversion")
    width = max(w for w in range(1, min(256, dst.numel) + 1) if dst.numel % w == 0)
    view = RowView(dst.numel // width, width, [RowOperand(src, Role.FULL)], [RowOperand(dst, Role.FULL)], flat=True)
    emit_row_kernel(k, view, lambda v, ins, outs: v.cast(ins[0], outs[0]))
