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

A row too long for UB (with its temporaries and parameters) takes the chunked
kernel (`_ChunkedRows`): one row per item, its columns walked in chunks, once
to gather per-row statistics in fp32 scalars (layer_norm: the sum and sum of
squares of x shifted by its first element, which keeps E[x^2] - E[x]^2 from
cancelling; rms_norm: the sum of squares; softmax: the max, then the sum of
exponentials), then once more to normalise and store each chunk. The template
chooses between the two kernels, so the legality predicate that fusion and
layout ask (`kernel_exists.py`) sees the same answer as the lowering.

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
from ..kernel_builder import Index
from .registry import kernel_for
from ..row_kernel import Role, RowOperand, RowView, emit_row_kernel, fits, operand_role
from ..vector_emitter import UB_ALIGN_BYTES, Operand, Tile, VectorEmitter, round_to

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

    def body(v, ins, outs):
        softmax_rows(v, ins[0], outs[0], log)

    if fits(k, view, body):
        emit_row_kernel(k, view, body)
    else:
        _ChunkedRows(k, "log_softmax" if log else "softmax", view).emit()


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

    if fits(k, view, body):
        emit_row_kernel(k, view, body)
    else:
        _ChunkedRows(k, "rms_norm" if rms else "layer_norm", view, epsilon).emit()


@kernel_for(fused.AddLayerNormOp, fused.AddRmsNormOp)
def lower_add_norm(op: fused.AddLayerNormOp, k: KernelContext) -> None:
    """y = norm(x + residual), and the sum itself unless nothing reads it: the sum
    in fp32, rounded to the output type, then normalised, as the fused op's
    reference (`ge.add` then the norm) computes it. Normalising the unrounded sum
    is not a harmless extra precision: where the sum's spread is small beside its
    mean, its rounding is what the norm amplifies (a fuzz graph of two f16 instance
    norms missed the unfused result by 1.7x the tolerance)."""
    rms = isinstance(op, fused.AddRmsNormOp)
    x, residual, *params = k.inputs
    result = k.outputs[0]
    if x.shape != result.shape:
        x, residual = residual, x  # the full-size one first; the other may broadcast
    if x.shape != result.shape:
        raise k.unsupported("an add whose operands both broadcast")
    axis = op.attr_value("axis") % len(result.shape)
    other = operand_role(k, residual, result.shape, columns=len(result.shape) - axis)  # in the norm's rows
    view = normalized_view(k, x, axis, [other, *[RowOperand(p, Role.ROW) for p in params]])
    epsilon = op.attr_value("epsilon")

    def body(v, ins, outs):
        y, *total = outs
        work = v.temp(f32)
        v.cast(ins[0], work)
        v.binary(npu.VAddOp, work, v.widened(ins[1]) if isinstance(ins[1], Tile) else ins[1], work)
        round_to(v, work, y.element_type, next(iter(total), None))
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


# ---- rows longer than UB ------------------------------------------------------------------


class _ChunkedRows:
    """Softmax, log_softmax, layer_norm or rms_norm of rows that do not fit UB
    (ND). An *item* is one row (the normalised dims last and contiguous), or, for
    softmax over an axis with `inner` elements after it, `ic` columns of one
    (axis x inner) slab: `ic` rows strided by `inner` in GM, loaded as a
    (chunk x ic) tile. Items are shared out among the cores. An item walks its
    rows in chunks of elements (MTE2 a chunk of x, and of gamma and beta in the
    last walk; compute; MTE3 the result):

    * statistics, fp32 per row, combined chunk by chunk: softmax's max, then (a
      second walk) the sum of exp(x - max); layer_norm's sums of (x - x[0]) and
      of its squares; rms_norm's sum of squares;
    * the normalising walk: each chunk from x and the statistics, rounded once
      to the output type (gamma and beta applied in it, as `layer_norm_rows`).
    """

    _WALKS = {"softmax": ("max", "sum_exp"), "log_softmax": ("max", "sum_exp"),
              "layer_norm": ("moments",), "rms_norm": ("squares",)}

    def __init__(self, k: KernelContext, kind: str, view: RowView, epsilon: float = 0.0):
        self.k, self.b, self.kind, self.epsilon = k, k.b, kind, epsilon
        self.size, self.inner = view.cols, view.inner
        self.x, *self.params = k.inputs
        self.out = k.outputs[0]
        for t in [self.x, self.out]:
            if t.format != Format.ND:
                raise k.unsupported(
                    f"rows of {self.size} elements (longer than UB) in a {t.format.value} tensor "
                    "(convert it to ND first)")
        wide = self.x.element_type != f32  # x widened to fp32 in a buffer of its own
        per_element = self.x.itemsize + 4 * (1 + wide) + sum(p.itemsize for p in self.params)
        if self.out.element_type != f32:
            per_element += self.out.itemsize
        align = UB_ALIGN_BYTES // min(4, self.x.itemsize, self.out.itemsize)
        elements = (k.hw.capacity("ub") - 16 * UB_ALIGN_BYTES) // per_element  # the rest: alignment, statistics
        if self.inner == 1:
            self.ic = self.stride = 1
            most = (elements - UB_ALIGN_BYTES) // align * align
        else:  # slab rows of ic columns, each padded to a 32-byte block in UB
            self.ic = slab_columns(view.rows, self.inner, elements // (8 * align), k.hw.core_count, self.x.itemsize)
            self.stride = -(-self.ic // align) * align
            most = (elements - 5 * self.stride * 4 // per_element) // self.stride
        self.stat_elements = max(UB_ALIGN_BYTES // 4, self.stride)
        if most < 1:
            raise k.unsupported(f"not even one aligned chunk of a row of {self.size} elements fits UB")
        chunks = math.ceil(self.size / most)
        chunk = math.ceil(self.size / chunks)
        self.chunk = min(self.size, -(-chunk // align) * align if self.inner == 1 else chunk)
        self.full_chunks, self.tail = divmod(self.size, self.chunk)
        self.items = view.rows * (self.inner // self.ic)
        self.wide = wide

    # ---- driving ------------------------------------------------------------------------

    def emit(self) -> None:
        b, k = self.b, self.k
        per_core = math.ceil(self.items / k.hw.core_count)
        k.block_dim = math.ceil(self.items / per_core)
        item = "one row" if self.inner == 1 else f"{self.ic} columns of a ({self.size} x {self.inner}) slab"
        k.explain(
            f"{self.kind} of {self.items} items of {self.size} elements (longer than UB): {item} per item, "
            f"in chunks of {self.chunk} (+{self.tail}), walked {len(self._WALKS[self.kind]) + 1} times"
        )
        n = self.chunk * self.stride
        self.xt = b.alloc([n], self.x.element_type, "ub")
        self.work = b.alloc([n], f32, "ub") if self.wide else self.xt
        self.extra = b.alloc([n], f32, "ub")
        self.result = b.alloc([n], self.out.element_type, "ub") if self.out.element_type != f32 else self.work
        self.param_tiles = [b.alloc([n], p.element_type, "ub") for p in self.params]
        self.stats = {name: b.alloc([self.stat_elements], f32, "ub") for name in ("a", "b", "shift", "part", "rest")}
        start = b.mul(b.block_idx(), per_core) if k.block_dim > 1 else 0
        stop = b.min(b.add(start, per_core), self.items) if k.block_dim > 1 else self.items
        with b.loop(start, stop, name="item") as item:
            base = self._item_offset(item)
            for walk in self._WALKS[self.kind]:
                self._walk(base, walk)
                self._finish(walk)
            self._walk(base, "normalise")

    def _item_offset(self, item: Index) -> Index:
        """GM offset of an item's first element."""
        b = self.b
        if self.inner == 1:
            return b.mul(item, self.size)
        slabs = self.inner // self.ic
        return b.add(b.mul(b.floordiv(item, slabs), self.size * self.inner), b.mul(b.rem(item, slabs), self.ic))

    def _walk(self, base: Index, walk: str) -> None:
        """The chunks of one item from GM offset `base`, the first peeled (it
        starts the accumulators)."""
        b = self.b
        step = self.chunk * self.inner
        self._chunk(base, 0, self.chunk, walk, first=True)
        if self.full_chunks > 1:
            with b.loop(1, self.full_chunks, name="chunk") as c:
                self._chunk(b.add(base, b.mul(c, step)), b.mul(c, self.chunk), self.chunk, walk, first=False)
        if self.tail:
            column = self.full_chunks * self.chunk
            self._chunk(b.add(base, column * self.inner), column, self.tail, walk, first=False)

    # ---- one chunk ---------------------------------------------------------------------

    def _emitter(self, count: int) -> VectorEmitter:
        """Over a chunk of `count` elements of each item row (0: over the statistics)."""
        def no_temp(_):
            raise AssertionError("the chunked kernel allocates its buffers itself")

        if self.inner == 1:
            shape = (1, max(count, 1))
        else:
            shape = (max(count, 1), self.ic)
        return VectorEmitter(self.b, *shape, no_temp, lambda t: self._stat("rest"))

    def _stat(self, name: str) -> Tile:
        """A per-row fp32 statistic, as a chunk reads it: one value for a row, a
        row of `ic` values down a slab chunk."""
        if self.inner == 1:
            return Tile(self.stats[name], 0, 1, col_stride=0)
        return Tile(self.stats[name], 0, 0)

    def _tile(self, buffer) -> Tile:
        return Tile(buffer, 0, self.stride)

    def _copy(self, src, src_offset: Index, dst, dst_offset: Index, count: int, to_gm: bool) -> None:
        """A chunk between GM and UB: a run of a row, or `count` strided slab rows."""
        if self.inner == 1:
            self.b.emit(npu.CopyOp, src, src_offset, dst, dst_offset, cols=count)
            return
        strides = {"strides": [self.stride, self.inner] if to_gm else [self.inner, self.stride]} if count > 1 else {}
        self.b.emit(npu.CopyOp, src, src_offset, dst, dst_offset, rows=count, cols=self.ic, **strides)

    def _chunk(self, gm_offset: Index, column: Index, count: int, walk: str, first: bool) -> None:
        self._copy(self.x.value, gm_offset, self.xt, 0, count, to_gm=False)
        v = self._emitter(count)
        work = self._tile(self.work)
        v.cast(self._tile(self.xt), work)
        if walk == "normalise":
            self._normalise(v, work, column, count)
            self._copy(self.result, 0, self.out.value, gm_offset, count, to_gm=True)
            return
        extra = self._tile(self.extra)
        if walk == "max":
            self._accumulate(v, "max", work, count, "a", first)
        elif walk == "sum_exp":
            v.instr(npu.VSubOp, work, self._stat("a"), work)
            v.instr(npu.VExpOp, work, work)
            self._accumulate(v, "sum", work, count, "b", first)
        else:
            if walk == "moments":
                if first:  # the shift: the row's first element
                    self._emitter(1).instr(npu.VCopyOp, work, self._stat("shift"))
                v.instr(npu.VSubOp, work, self._stat("shift"), work)
            v.instr(npu.VMulOp, work, work, extra)
            if walk == "moments":
                self._accumulate(v, "sum", work, count, "a", first)
            self._accumulate(v, "sum", extra, count, "b", first)

    def _accumulate(self, v: VectorEmitter, how: str, src: Tile, count: int, into: str, first: bool) -> None:
        """stats[into] (op)= the `how` of each item row's chunk in src (consumed)."""
        combine = npu.VMaxOp if how == "max" else npu.VAddOp
        target = self._stat(into if first else "part")
        if self.inner == 1:
            v.reduce_rows(how, src, target, consume=True)
        else:  # fold the chunk's slab rows pairwise into its first
            rows = count
            while rows > 1:
                kept = (rows + 1) // 2
                shifted = Tile(src.buffer, kept * self.stride, self.stride)
                self._emitter(rows - kept).instr(combine, src, shifted, src)
                rows = kept
            self._emitter(0).instr(npu.VCopyOp, src, target)
        if not first:
            self._emitter(0).instr(combine, self._stat(into), target, self._stat(into))

    def _finish(self, walk: str) -> None:
        """The per-row statistics the next walk reads, from the sums."""
        one = self._emitter(0)
        a, s, shift = self._stat("a"), self._stat("b"), self._stat("shift")
        n = 1.0 / self.size
        if walk == "sum_exp":  # b: 1 / sum (softmax), or max + ln(sum) (log_softmax)
            if self.kind == "softmax":
                one.instr(npu.VRecOp, s, s)
            else:
                one.instr(npu.VLnOp, s, s)
                one.instr(npu.VAddOp, s, a, s)
        elif walk in ("moments", "squares"):  # a: the mean (layer_norm), b: 1 / sqrt(var + eps)
            one.binary(npu.VMulOp, s, n, s)
            if walk == "moments":
                one.binary(npu.VMulOp, a, n, a)  # the shifted mean m
                part = self._stat("part")
                one.instr(npu.VMulOp, a, a, part)
                one.instr(npu.VSubOp, s, part, s)  # var = E[(x-k)^2] - m^2
                one.binary(npu.VMaxOp, s, 0.0, s)
                one.instr(npu.VAddOp, a, shift, a)
            one.binary(npu.VAddOp, s, float(self.epsilon), s)
            one.instr(npu.VRsqrtOp, s, s)

    def _normalise(self, v: VectorEmitter, work: Tile, column: Index, count: int) -> None:
        """The chunk's result (into `self.result`) from its fp32 copy."""
        a, s = self._stat("a"), self._stat("b")
        if self.kind == "softmax":
            v.instr(npu.VSubOp, work, a, work)
            v.instr(npu.VExpOp, work, work)
            v.instr(npu.VMulOp, work, s, work)
        elif self.kind == "log_softmax":
            v.instr(npu.VSubOp, work, s, work)
        else:
            if self.kind == "layer_norm":
                v.instr(npu.VSubOp, work, a, work)
            v.instr(npu.VMulOp, work, s, work)
        out = self._tile(self.result)
        v.cast(work, out)
        for param, tile, op in zip(self.params, self.param_tiles, (npu.VMulOp, npu.VAddOp)):  # rows only
            self.b.emit(npu.CopyOp, param.value, column, tile, 0, cols=count)
            v.instr(op, out, Tile(tile, 0, count), out)


def slab_columns(outer: int, inner: int, most: int, cores: int, itemsize: int) -> int:
    """Columns of an (axis x inner) slab per item of a chunked kernel (`outer`
    slabs): a divisor of `inner`, at most `most`; the widest that still gives
    every core an item, but rows of at least one 32-byte burst (narrower strided
    rows waste the transfers' bandwidth)."""
    divisors = [d for d in range(1, min(inner, max(1, most)) + 1) if inner % d == 0]
    wide = [d for d in divisors if d * itemsize >= UB_ALIGN_BYTES] or divisors
    busy = [d for d in wide if outer * (inner // d) >= cores]
    return max(busy) if busy else min(wide)
