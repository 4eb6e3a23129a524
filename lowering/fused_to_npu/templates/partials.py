"""The second kernel of a split-K product: `fused.partials_add_layer_norm` /
`fused.partials_add_rms_norm`, `fused.partials_bias_act`, and a split-K
convolution's `fused.conv_partials_bias_act`.

`fused.matmul_partials` leaves one fp32 (M, N) plane per K slice; these row
kernels read every plane of a tile (each plane a FULL operand of its own: the
same tensor from the plane's offset), add them up in fp32 as the tile arrives,
then apply the epilogue the unsplit product would have had: bias, residual, and
a norm or an activation, rounding once. A convolution's partials are NC1HWC0
images stacked along N (`fused.conv2d_partials`): each is a FULL operand in the
result's blocked layout, from its image's offset.
"""

from __future__ import annotations

import copy
import math
from dataclasses import replace

from xdsl.dialects.builtin import f32

from ....dialects import fused, npu
from ....dialects.ge.formats import Format
from ..context import GmTensor, KernelContext, named
from .registry import kernel_for
from ..row_kernel import Role, RowOperand, RowView, blocked_view, emit_row_kernel, operand_role
from ..vector_emitter import Operand, Tile, VectorEmitter, add_rounded_terms, add_terms
from .cube import activate
from .normalization import check_row_formats, layer_norm_rows


def _view(k: KernelContext, partials: GmTensor, terms: list[GmTensor | None], params: list[GmTensor | None]) -> RowView:
    """Rows of (M, N): the planes, the terms added to their sum (residual, bias:
    any broadcast a row tile reads), then per-column parameters (gamma, beta)."""
    splits, *shape = partials.shape
    rows, cols = math.prod(shape[:-1]), shape[-1]
    if partials.format != Format.ND:  # a plane is a run of rows from its offset: ND only
        raise k.unsupported(f"partials in {partials.format.value} (convert them to ND first)")
    check_row_formats(k, k.outputs, True, "adding up partials into")
    planes = [RowOperand(partials, Role.FULL, base=s * rows * cols) for s in range(splits)]
    added = [operand_role(k, t, shape) for t in terms if t is not None]
    rowwise = [RowOperand(t, Role.ROW) for t in params if t is not None]
    return RowView(rows, cols, [*planes, *added, *rowwise], [RowOperand(t, Role.FULL) for t in k.outputs], flat=False)


def _sum(v: VectorEmitter, planes: list[Operand], terms: list[Operand]) -> Tile:
    """An fp32 temporary holding the planes' sum plus each term."""
    work = _planes_sum(v, planes)
    add_terms(v, work, terms)
    return work


def _planes_sum(v: VectorEmitter, planes: list[Operand]) -> Tile:
    """An fp32 temporary holding the planes' sum: the product."""
    work = v.temp(f32)
    v.binary(npu.VAddOp, planes[0], planes[1], work)
    for plane in planes[2:]:
        v.binary(npu.VAddOp, work, plane, work)
    return work


@kernel_for(fused.PartialsAddLayerNormOp, fused.PartialsAddRmsNormOp)
def lower_partials_add_norm(op, k: KernelContext) -> None:
    """y = norm(sum of the partials + bias + residual), and that sum unless nothing
    reads it: the sum rounded to the output type as the unfused ops (matmul, bias
    add, residual add) round it (`add_rounded_terms`), then normalised in fp32."""
    rms = isinstance(op, fused.PartialsAddRmsNormOp)
    x = named(op, k.inputs)
    splits = x.partials.shape[0]
    beta = getattr(x, "beta", None)
    view = _view(k, x.partials, [x.bias, x.residual], [x.gamma, beta])
    terms = 2 if x.bias is not None else 1
    epsilon = op.attr_value("epsilon")

    def body(v, ins, outs):
        y, *total = outs
        work = _planes_sum(v, ins[:splits])
        add_rounded_terms(v, work, ins[splits : splits + terms], y.element_type, next(iter(total), None))
        gamma, *rest = ins[splits + terms :]
        layer_norm_rows(v, work, y, gamma, None if rms else rest[0], epsilon, rms, consume=True)
        v.release(work)

    emit_row_kernel(k, view, body)


def _bias_act(k: KernelContext, view: RowView, splits: int, act: str) -> None:
    """The row kernel of act(sum of the `splits` planes + the other inputs), rounded once."""

    def body(v, ins, outs):
        work = _sum(v, ins[:splits], ins[splits:])
        activate(v, act, work)
        v.cast(work, outs[0])
        v.release(work)

    emit_row_kernel(k, view, body)


@kernel_for(fused.PartialsBiasActOp)
def lower_partials_bias_act(op: fused.PartialsBiasActOp, k: KernelContext) -> None:
    """act(sum of the partials + bias + residual), rounded once."""
    x = named(op, k.inputs)
    _bias_act(k, _view(k, x.partials, [x.bias, x.residual], []), x.partials.shape[0], op.attr_value("act"))


def _image_planes_view(k: KernelContext, partials: GmTensor, terms: list[GmTensor | None]) -> RowView:
    """The result's blocked view (`blocked_view`: bias per channel, a residual in
    the result's layout) with the partials' images first, one FULL plane each."""
    out = k.outputs[0]
    if partials.format != out.format or out.format != Format.NC1HWC0:
        raise k.unsupported(f"convolution partials in {partials.format.value} for a {out.format.value} result "
                            "(both must be NC1HWC0)")
    if partials.physical_shape[-1] != out.physical_shape[-1]:
        raise k.unsupported(f"fp32 partials in blocks of {partials.physical_shape[-1]} channels for a {out.element_type} "
                            f"result in blocks of {out.physical_shape[-1]} (the planes must share its layout)")
    of_terms = copy.copy(k)  # the view of the terms alone: the planes' shape is not the result's
    of_terms.inputs = [t for t in terms if t is not None]
    view = blocked_view(of_terms, vectors=True)
    image = out.physical_numel
    planes = [RowOperand(partials, Role.FULL, base=s * image) for s in range(partials.physical_numel // image)]
    return replace(view, inputs=[*planes, *view.inputs])


@kernel_for(fused.ConvPartialsBiasActOp)
def lower_conv_partials_bias_act(op: fused.ConvPartialsBiasActOp, k: KernelContext) -> None:
    """act(sum of the partials' images + bias + residual), rounded once."""
    x = named(op, k.inputs)
    view = _image_planes_view(k, x.partials, [x.bias, x.residual])
    _bias_act(k, view, x.partials.shape[0] // k.outputs[0].shape[0], op.attr_value("act"))
