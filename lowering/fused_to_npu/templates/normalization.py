"""Row normalisations: softmax, log_softmax, layer_norm, rms_norm, and the fused
ops built on them (fused.softmax with scale / mask / dropout, fused.add_layer_norm,
fused.add_rms_norm; their split-K forms are in partials.py).

Each is a row-tile kernel (`row_kernel.py`) whose rows are the normalised
vectors: a tile holds whole rows, so statistics and the elementwise work around
them stay in UB and the tensor is read once and written once. The bodies are
functions of UB tiles (`softmax_rows`, `layer_norm_rows`, ...) so `fused.group`
kernels evaluate the same ops the same way.

Softmax over an axis other than the last uses the transposed row layout: the
slabs (axis x inner dims) are transposed in UB, so the body is the same.

Numerics: layer_norm and rms_norm accumulate and normalise in fp32 temporaries
and round once (sums of squares of fp16 data overflow fp16); softmax works in
the data type: its max is exact, its exponentials are at most 1 and positive,
so their sum loses no more than a few fp16 roundings, well inside the fp16
tolerance, and the kernel stays at the memory bound.
"""

from __future__ import annotations

import math

from xdsl.dialects.builtin import f32, i1

from ....dialects import fused, ge, npu
from ....dialects.ge.formats import Format
from ..context import GmTensor, KernelContext
from .registry import kernel_for
from ..row_kernel import Role, RowOperand, RowView, emit_row_kernel, operand_role
from ..vector_emitter import Operand, Tile, VectorEmitter

# ---- bodies on UB tiles (shared with fused groups) -----------------------------------------


def softmax_rows(v: VectorEmitter, x: Tile, out: Tile, log: bool = False) -> None:
    """out = softmax (or log_softmax) of each row of x, in x's element type."""
    work = out if out.element_type == x.element_type else v.temp(x.element_type)
    top = v.col_temp(x.element_type)
    v.reduce_rows("max", x, top)
    v.instr(npu.VSubOp, x, top, work)
    v.release(top)
    total = v.col_temp(x.element_type)
    if log:
        e = v.temp(x.element_type)
        v.instr(npu.VExpOp, work, e)
        v.reduce_rows("sum", e, total, consume=True)
        v.release(e)
        v.per_row().instr(npu.VLnOp, total, total)
        v.instr(npu.VSubOp, work, total, work)
    else:
        v.instr(npu.VExpOp, work, work)
        v.reduce_rows("sum", work, total)
        v.per_row().instr(npu.VRecOp, total, total)
        v.instr(npu.VMulOp, work, total, work)
    v.release(total)
    if work is not out:
        v.cast(work, out)
        v.release(work)


def layer_norm_rows(
    v: VectorEmitter,
    x: Tile,
    out: Tile,
    gamma: Operand | None,
    beta: Operand | None,
    epsilon: float,
    rms: bool,
    consume: bool = False,
) -> None:
    """out = layer_norm (or rms_norm) of each row of x: the statistics and the
    normalised rows in fp32 (sums of squares of fp16 data overflow fp16), rounded
    to out's type; gamma and beta (ROW operands of out's type) applied in that
    type, at half the vector cost of fp32 and a couple of roundings. With
    `consume`, x is an fp32 temporary of the caller's that the body works in
    (a sum the caller has just made), saving a copy."""
    work = x if consume and x.element_type == f32 and out.element_type != f32 else fp32_working_copy(v, x, out)
    n = 1.0 / v.cols
    if not rms:
        mean = v.col_temp(f32)
        v.reduce_rows("sum", work, mean)
        v.per_row().binary(npu.VMulOp, mean, n, mean)
        v.instr(npu.VSubOp, work, mean, work)
        v.release(mean)
    squares = v.temp(f32)
    v.instr(npu.VMulOp, work, work, squares)
    scale = v.col_temp(f32)
    v.reduce_rows("sum", squares, scale, consume=True)
    v.release(squares)
    rows = v.per_row()
    rows.binary(npu.VMulOp, scale, n, scale)
    rows.binary(npu.VAddOp, scale, float(epsilon), scale)
    rows.instr(npu.VRsqrtOp, scale, scale)
    v.instr(npu.VMulOp, work, scale, work)
    v.release(scale)
    if work is not out:
        v.cast(work, out)
        if work is not x:
            v.release(work)
    if gamma is not None:
        v.binary(npu.VMulOp, out, gamma, out)
    if beta is not None:
        v.binary(npu.VAddOp, out, beta, out)


def fp32_working_copy(v: VectorEmitter, x: Tile, out: Tile) -> Tile:
    """A fp32 tile holding x that the body may overwrite (`out` itself when fp32)."""
    if out.element_type == f32:
        v.cast(x, out)
        return out
    work = v.temp(f32)
    v.cast(x, work)
    return work


# ---- views ------------------------------------------------------------------------------


def normalized_view(k: KernelContext, x: GmTensor, axis: int, parameters: list[RowOperand], extra_outputs=()) -> RowView:
    """Rows = dims before `axis`, columns = dims from `axis` on (ND tensors, or
    FRACTAL_NZ ones normalised over their last dim: converted on the way)."""
    shape = x.shape
    axis = axis % len(shape)
    check_row_formats(k, [x, *k.outputs], axis == len(shape) - 1, "normalising")
    rows, cols = math.prod(shape[:axis]), math.prod(shape[axis:])
    outputs = [RowOperand(t, Role.FULL) for t in k.outputs]
    return RowView(rows, cols, [RowOperand(x, Role.FULL), *parameters, *extra_outputs], outputs, flat=False)


def axis_view(k: KernelContext, x: GmTensor, axis: int) -> RowView:
    """Softmax-like ops along one `axis`: rows when it is the last (a FRACTAL_NZ
    operand is converted on the way), else slabs of (axis x inner dims) of ND
    tensors transposed in UB."""
    shape = x.shape
    axis = axis % len(shape)
    check_row_formats(k, [x, *k.outputs], axis == len(shape) - 1, "softmax over")
    outer, size, inner = math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1 :])
    outputs = [RowOperand(t, Role.FULL) for t in k.outputs]
    inputs = [RowOperand(x, Role.FULL)]
    if inner == 1:
        return RowView(outer, size, inputs, outputs, flat=False)
    return RowView(outer, size, inputs, outputs, flat=False, inner=inner, inner_chunk=inner_chunk(k, x, size, inner))


def check_row_formats(k: KernelContext, tensors: list[GmTensor], along_last: bool, what: str) -> None:
    """ND always; FRACTAL_NZ when the rows are its last dim (the row kernel's NZ
    conversion, `nz_rows.py`, reads and writes those)."""
    for t in tensors:
        if t.format == Format.ND or (t.format == Format.FRACTAL_NZ and along_last):
            continue
        raise k.unsupported(f"{what} a {t.format.value} tensor (convert it to ND first)")


def inner_chunk(k: KernelContext, x: GmTensor, size: int, inner: int) -> int:
    """Columns of a slab per tile: all of them if a slab fits a quarter of UB (it
    is staged, transposed and worked on), else the largest divisor that does."""
    budget = k.hw.capacity("ub") // (8 * 4)  # ~8 slab-sized buffers of up to 4-byte elements
    most = max(1, budget // max(1, size))
    if inner <= most:
        return inner
    return max(d for d in range(1, most + 1) if inner % d == 0)


# ---- templates ----------------------------------------------------------------------------


@kernel_for(ge.SoftmaxOp, ge.LogSoftmaxOp)
def lower_softmax(op: ge.SoftmaxOp, k: KernelContext) -> None:
    log = isinstance(op, ge.LogSoftmaxOp)
    view = axis_view(k, k.inputs[0], op.attr_value("axis"))
    emit_row_kernel(k, view, lambda v, ins, outs: softmax_rows(v, ins[0], outs[0], log))


@kernel_for(ge.LayerNormOp, ge.RMSNormOp)
def lower_layer_norm(op: ge.LayerNormOp, k: KernelContext) -> None:
    rms = isinstance(op, ge.RMSNormOp)
    parameters = [RowOperand(t, Role.ROW) for t in k.inputs[1:]]
    view = normalized_view(k, k.inputs[0], op.attr_value("axis"), parameters)
    epsilon = op.attr_value("epsilon")

    def body(v, ins, outs):
        gamma = ins[1]
        beta = ins[2] if not rms else None
        layer_norm_rows(v, ins[0], outs[0], gamma, beta, epsilon, rms)

    emit_row_kernel(k, view, body)


@kernel_for(fused.AddLayerNormOp, fused.AddRmsNormOp)
def lower_add_norm(op: fused.AddLayerNormOp, k: KernelContext) -> None:
    """y = norm(x + residual), and the sum itself unless nothing reads it: the sum
    in fp32, stored rounded, normalised unrounded (as the fused op's reference
    keeps it)."""
    rms = isinstance(op, fused.AddRmsNormOp)
    x, residual, *params = k.inputs
    result = k.outputs[0]
    if x.shape != result.shape:
        x, residual = residual, x  # the full-size one first; the other may broadcast
    other = operand_role(k, residual, result.shape)
    view = normalized_view(k, x, op.attr_value("axis"), [other, *[RowOperand(p, Role.ROW) for p in params]])
    if x.shape != result.shape or (other.role != Role.FULL and view.cols != result.shape[-1]):
        raise k.unsupported("a broadcast residual with a normalised shape of several dims")
    epsilon = op.attr_value("epsilon")

    def body(v, ins, outs):
        y, *total = outs
        work = v.temp(f32)
        v.cast(ins[0], work)
        v.binary(npu.VAddOp, work, v.widened(ins[1]) if isinstance(ins[1], Tile) else ins[1], work)
        for stored in total:
            v.cast(work, stored)
        layer_norm_rows(v, work, y, ins[2], None if rms else ins[3], epsilon, rms, consume=True)
        v.release(work)

    emit_row_kernel(k, view, body)


@kernel_for(fused.FusedSoftmaxOp)
def lower_fused_softmax(op: fused.FusedSoftmaxOp, k: KernelContext) -> None:
    """softmax(mask(x * scale)); dropout is the identity at inference. An i1 mask
    keeps the scores where true and puts `mask_value` elsewhere; a float one is
    added. The mask may broadcast (per row, per column, or repeating rows)."""
    scale, mask_value = op.attr_value("scale"), op.attr_value("mask_value")
    x = k.inputs[0]
    axis = op.attr_value("axis") % len(x.shape)
    view = axis_view(k, x, axis)
    if len(k.inputs) > 1:
        if view.inner > 1:
            raise k.unsupported("a mask with softmax over an axis other than the last")
        mask = operand_role(k, k.inputs[1], x.shape)
        view = RowView(view.rows, view.cols, [*view.inputs, mask], view.outputs, flat=False)

    def body(v, ins, outs):
        scores = v.temp(ins[0].element_type)
        if scale != 1.0:
            v.binary(npu.VMulOp, ins[0], float(scale), scores)
        else:
            v.cast(ins[0], scores)
        if len(ins) > 1:
            _apply_mask(v, scores, ins[1], mask_value)
        softmax_rows(v, scores, outs[0])
        v.release(scores)

    emit_row_kernel(k, view, body)


def _apply_mask(v: VectorEmitter, scores: Tile, mask: Operand, mask_value: float) -> None:
    if isinstance(mask, Tile) and mask.element_type == i1:
        fill = v.col_temp(scores.element_type)
        v.per_row().fill(fill, float(mask_value))
        v.instr(npu.VSelOp, mask, scores, fill, scores)
        v.release(fill)
    else:
        v.binary(npu.VAddOp, scores, mask, scores)
