"""Reductions: ge.reduce_sum / reduce_mean / reduce_max over any set of adjacent
axes (keepdims or not: the same data), and ge.global_avg_pool.

Size-1 dims dropped and neighbours of one kind merged, a reduction is (O, K, I):
O kept elements before the reduced K, I kept after. Then:

* I == 1 (the last axes): rows of K, a row-tile kernel with one result per row;
* I > 1: slabs of (K x I) transposed in UB (the row kernel's transposed
  layout), so the same row body reduces them;
* a row or slab too long for UB: the chunked kernel below walks K in chunks,
  accumulating in UB (the leading axes of a big tensor, or all of them).

Numerics follow the reference (fp32 accumulation, one rounding): an fp16
reduce_sum reduces each row in one instruction (the vector unit accumulates in
fp32); a mean, and any sum accumulated over chunks, works in fp32 temporaries;
max is exact in any type. Reducing several non-adjacent groups of axes is not
one of these shapes (it would need two passes over the data).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.dialects.builtin import f32

from ....core import dtypes
from ....dialects import ge, npu
from ....dialects.ge.formats import Format
from ....dialects.ge.reduction import reduced_axes
from ..context import GmTensor, KernelContext
from .registry import kernel_for
from ..kernel_builder import Index
from ..row_kernel import Body, Role, RowOperand, RowView, emit_row_kernel, fits
from ..vector_emitter import UB_ALIGN_BYTES, Tile, VectorEmitter
from .normalization import inner_chunk, slab_columns

_KINDS = {ge.ReduceSumOp: "sum", ge.ReduceMeanOp: "mean", ge.ReduceMaxOp: "max"}


@dataclass(frozen=True)
class ReductionShape:
    """(O, K, I); when the reduced axes are not adjacent, K is the innermost run
    of them and the others are walked by loops: `outer_dims` are the kept dims
    before K and `reduced_dims` the other reduced ones, each (count, element
    stride in the input)."""

    outer: int
    size: int
    inner: int
    outer_dims: tuple[tuple[int, int], ...] = ()
    reduced_dims: tuple[tuple[int, int], ...] = ()

    @property
    def count(self) -> int:
        """Elements reduced into each result."""
        return self.size * math.prod(n for n, _ in self.reduced_dims)


def reduction_shape(shape: tuple[int, ...], axes: tuple[int, ...]) -> ReductionShape:
    """The (O, K, I) of reducing `axes` of `shape` (size-1 dims dropped, neighbours
    of one kind merged; see `ReductionShape` for axes that are not adjacent)."""
    groups: list[list] = []
    for d, n in enumerate(shape):
        if n == 1:
            continue
        reduced = d in axes
        if groups and groups[-1][1] == reduced:
            groups[-1][0] *= n
        else:
            groups.append([n, reduced])
    kinds = [r for _, r in groups]
    if True not in kinds:
        return ReductionShape(math.prod(shape), 1, 1)
    at = len(kinds) - 1 - kinds[::-1].index(True)
    size, inner = groups[at][0], math.prod(n for n, _ in groups[at + 1 :])
    strides = [math.prod(n for n, _ in groups[g + 1 :]) for g in range(len(groups))]
    before = list(zip(groups[:at], strides[:at]))
    outer = math.prod(n for (n, r), _ in before if not r)
    if not any(r for (_, r), _ in before):
        return ReductionShape(outer, size, inner)
    return ReductionShape(
        outer,
        size,
        inner,
        outer_dims=tuple((n, st) for (n, r), st in before if not r),
        reduced_dims=tuple((n, st) for (n, r), st in before if r),
    )


def reduce_body(kind: str, count: int) -> Body:
    """One result per row: sum, mean (over `count` elements) or max."""

    def body(v: VectorEmitter, ins, outs) -> None:
        reduce_into(v, kind, count, ins[0], outs[0])

    return body


def reduce_into(v: VectorEmitter, kind: str, count: int, x: Tile, out: Tile) -> None:
    """out (one value per row) = the reduction of each row of x."""
    if kind == "max":
        v.reduce_rows("max", x, out)
    elif kind == "sum" and dtypes.is_narrow_float(x.element_type):
        v.reduce_rows("sum", x, out, fold=False)  # one fp32 accumulation, one rounding
    elif dtypes.is_narrow_float(x.element_type):  # a mean: the sum may exceed fp16 where the mean does not
        wide = v.widened(x)
        total = v.col_temp(f32)
        v.reduce_rows("sum", wide, total, consume=True)
        v.release(wide)
        v.per_row().binary(npu.VMulOp, total, 1.0 / count, total)
        v.per_row().cast(total, out)
        v.release(total)
    else:
        v.reduce_rows("sum", x, out)
        if kind == "mean":
            v.per_row().binary(npu.VMulOp, out, 1.0 / count, out)


# ---- templates ----------------------------------------------------------------------------


@kernel_for(ge.ReduceSumOp, ge.ReduceMeanOp, ge.ReduceMaxOp)
def lower_reduce(op: ge.ReduceOp, k: KernelContext) -> None:
    x, out = k.inputs[0], k.outputs[0]
    kind = _KINDS[type(op)]
    if kind == "mean" and not dtypes.is_float(x.element_type):
        raise k.unsupported("reduce_mean of integers")
    _require_nd(k)
    axes = reduced_axes(op.attr_value("axes"), len(x.shape))
    emit_reduction(k, kind, x, out, reduction_shape(x.shape, axes))


@kernel_for(ge.GlobalAvgPoolOp)
def lower_global_avg_pool(op: ge.GlobalAvgPoolOp, k: KernelContext) -> None:
    """The mean over the spatial dims: rows of H*W per (n, c); in NC1HWC0 the C0
    channels of a block are the slab's inner dim."""
    x, out = k.inputs[0], k.outputs[0]
    if x.format == Format.NC1HWC0 and out.format == Format.NC1HWC0:
        n, c1, h, w, c0 = x.physical_shape
        emit_reduction(k, "mean", x, out, ReductionShape(n * c1, h * w, c0))
        return
    _require_nd(k)
    emit_reduction(k, "mean", x, out, ReductionShape(math.prod(x.shape[:2]), math.prod(x.shape[2:]), 1))


def _require_nd(k: KernelContext) -> None:
    for t in [*k.inputs, *k.outputs]:
        if t.format != Format.ND:
            raise k.unsupported(f"reducing a {t.format.value} tensor (convert it to ND first)")


def emit_reduction(k: KernelContext, kind: str, x: GmTensor, out: GmTensor, shape: ReductionShape) -> None:
    if shape.reduced_dims:  # several runs of reduced axes: the chunked kernel walks them
        _ChunkedReduction(k, kind, x, out, shape).emit()
        return
    body = reduce_body(kind, shape.size)
    inputs, outputs = [RowOperand(x, Role.FULL)], [RowOperand(out, Role.COL)]
    if shape.inner == 1:
        view = RowView(shape.outer, shape.size, inputs, outputs, flat=False)
    else:
        chunk = inner_chunk(k, x, shape.size, shape.inner)
        view = RowView(shape.outer, shape.size, inputs, outputs, flat=False, inner=shape.inner, inner_chunk=chunk)
    narrow = view.chunk < view.inner and view.chunk * x.itemsize < 2 * UB_ALIGN_BYTES  # short strided GM runs
    if fits(k, view, body) and not narrow:
        emit_row_kernel(k, view, body)
    else:
        _ChunkedReduction(k, kind, x, out, shape).emit()


# ---- the chunked kernel -------------------------------------------------------------------


class _ChunkedReduction:
    """A reduction whose rows (or slabs) do not fit UB: each *item* (one row, or
    `ic` columns of one slab) walks K in chunks: load a chunk (MTE2), reduce it
    (rows across lanes, or slab rows folded pairwise into one), combine it into
    an accumulator kept in UB; store the item's results once. Items are shared
    out among the cores; the first chunk of an item initialises the accumulator.
    """

    def __init__(self, k: KernelContext, kind: str, x: GmTensor, out: GmTensor, shape: ReductionShape):
        self.k, self.b, self.kind, self.x, self.out, self.shape = k, k.b, kind, x, out, shape
        self.dtype = x.element_type
        self.wide = kind != "max" and dtypes.is_narrow_float(self.dtype)  # accumulate fp16 / bf16 ... sums in fp32
        self.acc_type = f32 if self.wide else self.dtype
        self.combine = npu.VMaxOp if kind == "max" else npu.VAddOp
        align = UB_ALIGN_BYTES // x.itemsize
        per_element = 2 * x.itemsize + (4 if self.wide else 0)
        budget = k.hw.capacity("ub") * 3 // 4  # the rest: accumulators and alignment
        if shape.inner == 1:
            self.cols = 1
            self.stride = 1
            chunk = budget // per_element
            self.chunk = max(1, min(shape.size, chunk - chunk % max(align, 1)))
            self.items = shape.outer
        else:
            most = budget // (per_element * 16)
            self.cols = slab_columns(shape.outer, shape.inner, most, k.hw.core_count, x.itemsize)
            self.stride = -(-self.cols // align) * align
            self.chunk = max(1, min(shape.size, budget // (per_element * self.stride)))
            self.items = shape.outer * (shape.inner // self.cols)
        self.full_chunks, self.tail = divmod(shape.size, self.chunk)

    def emit(self) -> None:
        b, k = self.b, self.k
        per_core = math.ceil(self.items / k.hw.core_count)
        k.block_dim = math.ceil(self.items / per_core)
        what = "row" if self.shape.inner == 1 else f"{self.cols} columns of a slab"
        k.explain(
            f"reduce ({self.shape.outer}, {self.shape.size}, {self.shape.inner}) over K: one {what} per item, "
            f"K in chunks of {self.chunk} (+{self.tail}), {self.items} items over {k.block_dim} cores"
        )
        rows = self.chunk if self.shape.inner > 1 else 1
        cols = self.stride if self.shape.inner > 1 else self.chunk
        self.tile = b.alloc([rows * cols], self.dtype, "ub")
        self.wide_tile = b.alloc([rows * cols], f32, "ub") if self.wide else None
        width = self.cols if self.shape.inner > 1 else 1
        self.acc = b.alloc([width], self.acc_type, "ub")
        self.part = b.alloc([width], self.acc_type, "ub")
        self.rest = b.alloc([width], self.acc_type, "ub")  # a row's unaligned tail columns
        self.result = b.alloc([width], self.out.element_type, "ub")
        start = b.mul(b.block_idx(), per_core) if k.block_dim > 1 else 0
        stop = b.min(b.add(start, per_core), self.items) if k.block_dim > 1 else self.items
        with b.loop(start, stop, name="item") as item:
            self._item(item)

    def _item(self, item: Index) -> None:
        b, shape = self.b, self.shape
        if shape.inner == 1:
            base, out_offset = self._outer_offset(item), item
        else:
            slabs = shape.inner // self.cols
            o, j = b.floordiv(item, slabs), b.rem(item, slabs)
            base = b.add(self._outer_offset(o), b.mul(j, self.cols))
            out_offset = b.mul(item, self.cols)
        self._walk(base, first=True)
        others = math.prod(n for n, _ in shape.reduced_dims)
        if others > 1:  # the other runs of reduced axes, the first one peeled above
            with b.loop(1, others, name="reduced") as r:
                self._walk(b.add(base, _mixed_radix(b, r, shape.reduced_dims)), first=False)
        self._finish(out_offset)

    def _outer_offset(self, o: Index) -> Index:
        """Input offset of the o-th combination of kept dims before K."""
        shape = self.shape
        if not shape.outer_dims:
            return self.b.mul(o, shape.size * shape.inner)
        return _mixed_radix(self.b, o, shape.outer_dims)

    def _walk(self, base: Index, first: bool) -> None:
        """The chunks of K from `base`, combined into the accumulator."""
        b, shape = self.b, self.shape
        step = self.chunk * (shape.inner if shape.inner > 1 else 1)
        self._chunk(base, self.chunk, first=first)
        if self.full_chunks > 1:
            with b.loop(1, self.full_chunks, name="chunk") as c:
                self._chunk(b.add(base, b.mul(c, step)), self.chunk, first=False)
        if self.tail:
            self._chunk(b.add(base, self.full_chunks * step), self.tail, first=False)

    def _chunk(self, gm_offset: Index, count: int, first: bool) -> None:
        b, shape = self.b, self.shape
        target = self.acc if first else self.part
        if shape.inner == 1:
            b.emit(npu.CopyOp, self.x.value, gm_offset, self.tile, 0, cols=count)
            v = self._emitter(1, count)
            src = Tile(self.tile, 0, count)
            if self.wide:
                v.cast(src, Tile(self.wide_tile, 0, count))
                src = Tile(self.wide_tile, 0, count)
            v.reduce_rows(self.kind if self.kind == "max" else "sum", src, Tile(target, 0, 1, col_stride=0), consume=True)
        else:
            strides = {"strides": [shape.inner, self.stride]} if count > 1 else {}
            b.emit(npu.CopyOp, self.x.value, gm_offset, self.tile, 0, rows=count, cols=self.cols, **strides)
            src = Tile(self.tile, 0, self.stride)
            if self.wide:
                wide = Tile(self.wide_tile, 0, self.stride)
                self._emitter(count, self.cols).cast(src, wide)
                src = wide
            self._fold_rows(src, count, target)
        if not first:
            self._emitter(1, self._width()).instr(self.combine, Tile(self.acc, 0, 0), Tile(self.part, 0, 0), Tile(self.acc, 0, 0))

    def _fold_rows(self, src: Tile, rows: int, target) -> None:
        """Add (or max) the rows of a (rows x cols) chunk pairwise into its first row,
        then move that row into `target`."""
        while rows > 1:
            kept = (rows + 1) // 2
            folded = rows - kept
            shifted = Tile(src.buffer, kept * self.stride, self.stride)
            self._emitter(folded, self.cols).instr(self.combine, src, shifted, src)
            rows = kept
        self._emitter(1, self.cols).instr(npu.VCopyOp, src, Tile(target, 0, 0))

    def _width(self) -> int:
        return self.cols if self.shape.inner > 1 else 1

    def _emitter(self, rows: int, cols: int) -> VectorEmitter:
        def no_temp(_):
            raise AssertionError("the chunked reduction allocates its buffers itself")

        return VectorEmitter(self.b, rows, cols, no_temp, lambda t: Tile(self.rest, 0, 1, col_stride=0))

    def _finish(self, out_offset: Index) -> None:
        b, width = self.b, self._width()
        v = self._emitter(1, width)
        acc = Tile(self.acc, 0, 0)
        if self.kind == "mean":
            v.binary(npu.VMulOp, acc, 1.0 / self.shape.count, acc)
        v.cast(acc, Tile(self.result, 0, 0))
        b.emit(npu.CopyOp, self.result, 0, self.out.value, out_offset, cols=width)


def _mixed_radix(b, index: Index, dims: tuple[tuple[int, int], ...]) -> Index:
    """sum(digit_d * stride_d) for `index` written in the radices of `dims` (the
    last dim varying fastest)."""
    offset: Index = 0
    for position, (count, stride) in enumerate(dims):
        inner = math.prod(n for n, _ in dims[position + 1 :])
        offset = b.add(offset, b.mul(b.rem(b.floordiv(index, inner), count), stride))
    return offset
