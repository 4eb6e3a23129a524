"""`ge.transdata`: a tensor converted between physical formats (ND, FRACTAL_NZ,
NC1HWC0, FRACTAL_Z, in any direction). The logical value is unchanged, so the
map is the identity on logical indices; the two tensors' layouts
(`formats.dim_layouts`) make it a re-layout, and the destination's padding is
zeroed by fills. The tiling (`copy_tiling`) turns ND <-> FRACTAL_NZ into long
contiguous GM runs on both sides with the 16-column re-layout done by `vcopy` in
UB, rather than 32-byte copies."""

from __future__ import annotations

from ....dialects import ge
from ..context import KernelContext
from .registry import kernel_for
from .copy_kernel import emit_moves, moves_cycles, pieces_of
from .index_map import box_map


def _pieces(k: KernelContext):
    shape = k.outputs[0].shape
    zeros = [0] * len(shape)
    return pieces_of(k, [(box_map(shape, zeros, zeros), 0, 0)])


@kernel_for(ge.TransDataOp)
def lower_transdata(op: ge.TransDataOp, k: KernelContext) -> None:
    emit_moves(k, _pieces(k))


def transdata_cycles(op: ge.TransDataOp, k: KernelContext) -> float:
    """The estimated cycles of `lower_transdata`'s kernel (`k`: a scratch context of the op)."""
    return moves_cycles(k.hw, _pieces(k))
