"""Emitting vector instructions on UB tiles, and the ge elementwise ops in them.

A `Tile` is how one operand of a vector instruction sits in UB: a buffer, an
offset, a row stride (0: the same row for every row, a bias) and a column
stride (0: one element per row, a per-row scalar). A `VectorEmitter` writes
instructions over `rows x cols` elements; a float in place of a tile is a
scalar immediate (`vadds`, `vmuls`, ...).

`emit_elementwise` is the one place that knows how each ge elementwise op is
computed by the vector unit (gelu as erf and four arithmetic steps, silu as
sigmoid times x, ...). Standalone kernels, fused groups and epilogues of cube
kernels all go through it, so an op's NPU semantics are written once.

Multi-step ops on fp16 work in fp32 temporaries and round once at the end, as
the reference does; one-instruction ops run on the stored type (the vector unit
computes in fp32 and rounds on store either way).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from types import SimpleNamespace

from xdsl.dialects.builtin import MemRefType, f32, f64, i1, i32
from xdsl.ir import Attribute, SSAValue

from ...core import dtypes
from ...core.dtypes import f8E8M0FNU
from ...dialects import ge, npu
from .kernel_builder import Index, KernelBuilder


@dataclass(frozen=True)
class Tile:
    buffer: SSAValue
    offset: Index = 0
    row_stride: int = 0  # 0 with rows > 1: broadcast one row
    col_stride: int = 1  # 0: one element per row

    @property
    def element_type(self) -> Attribute:
        t = self.buffer.type
        assert isinstance(t, MemRefType)
        return t.element_type

    def at(self, row: Index, b: KernelBuilder) -> "Tile":
        """The tile starting `row` rows further down."""
        if self.row_stride == 0 or row == 0:
            return self
        return replace(self, offset=b.add(self.offset, b.mul(row, self.row_stride)))


Operand = Tile | float

UB_ALIGN_BYTES = 32
"""Every vector operand must start on a 32-byte boundary of UB."""

REPEAT_BYTES = 256
"""Bytes one vector repeat processes (8 blocks of 32 B); folds stop at one repeat a row."""

_BINARY: dict[str, type] = {
    "ge.add": npu.VAddOp,
    "ge.sub": npu.VSubOp,
    "ge.mul": npu.VMulOp,
    "ge.div": npu.VDivOp,
    "ge.maximum": npu.VMaxOp,
    "ge.minimum": npu.VMinOp,
}
_WITH_SCALAR: dict[type, type] = {
    npu.VAddOp: npu.VAddsOp,
    npu.VMulOp: npu.VMulsOp,
    npu.VMaxOp: npu.VMaxsOp,
    npu.VMinOp: npu.VMinsOp,
}
_UNARY: dict[str, type] = {
    "ge.exp": npu.VExpOp,
    "ge.log": npu.VLnOp,
    "ge.sqrt": npu.VSqrtOp,
    "ge.rsqrt": npu.VRsqrtOp,
    "ge.reciprocal": npu.VRecOp,
    "ge.tanh": npu.VTanhOp,
    "ge.sigmoid": npu.VSigmoidOp,
    "ge.erf": npu.VErfOp,
    "ge.sin": npu.VSinOp,
    "ge.cos": npu.VCosOp,
    "ge.tan": npu.VTanOp,
    "ge.asin": npu.VAsinOp,
    "ge.acos": npu.VAcosOp,
    "ge.atan": npu.VAtanOp,
    "ge.sinh": npu.VSinhOp,
    "ge.cosh": npu.VCoshOp,
    "ge.asinh": npu.VAsinhOp,
    "ge.acosh": npu.VAcoshOp,
    "ge.atanh": npu.VAtanhOp,
    "ge.relu": npu.VReluOp,
    "ge.abs": npu.VAbsOp,
    "ge.identity": npu.VCopyOp,
    "ge.dropout": npu.VCopyOp,
}
_BITWISE: dict[str, type] = {
    "ge.bitwise_and": npu.VAndOp,
    "ge.bitwise_or": npu.VOrOp,
    "ge.bitwise_xor": npu.VXorOp,
}
"""Integer bit operations: no immediate forms, a constant operand is a filled tile."""
_LOGICAL: dict[str, type] = {"ge.and": npu.VMinOp, "ge.or": npu.VMaxOp}
"""On i1 masks (one byte each, 0 or 1) `and` is the minimum and `or` the maximum."""
_SWAPPED = {"eq": "eq", "ne": "ne", "lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}
"""The predicate of `b <p> a` that is `a <p> b`, to put an immediate on the right."""


class VectorEmitter:
    """Vector instructions over `rows x cols`; temporaries come from `temp`.

    `temp(element_type)` gives a rows x cols scratch tile; `col_temp(element_type)`
    (optional) one value per row; `release(tile)` (optional) hands a temporary
    back so a later `temp` call of the same body may reuse it. Kernels that do
    not pass them still work: a full temporary then also serves as a per-row
    one, and nothing is reused.
    """

    def __init__(
        self,
        b: KernelBuilder,
        rows: int,
        cols: int,
        temp: Callable[[Attribute], Tile],
        col_temp: Callable[[Attribute], Tile] | None = None,
        release: Callable[[Tile], None] | None = None,
    ):
        self.b = b
        self.rows = rows
        self.cols = cols
        self.temp = temp
        self._col_temp = col_temp
        self._release = release

    # ---- shapes ----------------------------------------------------------------------

    def with_cols(self, cols: int) -> "VectorEmitter":
        """The same rows and temporaries, `cols` columns (a slice of each row)."""
        return VectorEmitter(self.b, self.rows, cols, self.temp, self._col_temp, self._release)

    def per_row(self) -> "VectorEmitter":
        """An emitter over the per-row values: one row of `rows` elements. Per-row
        tiles (column stride 0) given to it are read as that row."""
        emitter = _PerRowEmitter(self.b, 1, self.rows, lambda t: as_row(self.col_temp(t)), None, self.release)
        return emitter

    def col_temp(self, element_type: Attribute) -> Tile:
        """A temporary holding one value per row."""
        if self._col_temp is not None:
            return self._col_temp(element_type)
        full = self.temp(element_type)
        return Tile(full.buffer, full.offset, 1, col_stride=0)

    def release(self, tile: Operand) -> None:
        """`tile` (a temporary) is dead: a later temporary may reuse its buffer."""
        if self._release is not None and isinstance(tile, Tile):
            self._release(tile)

    # ---- instructions -------------------------------------------------------------------

    def instr(self, cls: type, *tiles: Tile, **attrs) -> None:
        operands: list = []
        for t in tiles:
            operands += [t.buffer, t.offset]
        strides = [t.row_stride if self.rows > 1 else self.cols for t in tiles]
        # Over one column a per-row tile (column stride 0) is a plain column: a
        # softmax or norm over a size-1 axis writes its per-row destination.
        col_strides = [t.col_stride if self.cols > 1 else 1 for t in tiles]
        explicit = {}
        if any(s != self.cols for s in strides):
            explicit["strides"] = strides
        if any(c != 1 for c in col_strides):
            explicit["col_strides"] = col_strides
        self.b.emit(cls, *operands, rows=self.rows, cols=self.cols, **explicit, **attrs)

    # ---- arithmetic with immediates ---------------------------------------------------

    def binary(self, cls: type, a: Operand, c: Operand, dst: Tile) -> None:
        """dst = a <cls> c, where either side may be a Python float."""
        if isinstance(a, Tile) and isinstance(c, Tile):
            self.instr(cls, a, c, dst)
        elif isinstance(c, float | int):
            self._with_scalar(cls, a, float(c), dst)
        elif cls in _WITH_SCALAR:  # commutative: swap
            self._with_scalar(cls, c, float(a), dst)
        elif cls is npu.VSubOp:  # s - x = (x * -1) + s
            self.instr(npu.VMulsOp, c, dst, scalar=-1.0)
            self.instr(npu.VAddsOp, dst, dst, scalar=float(a))
        else:  # s / x = (1 / x) * s
            self.instr(npu.VRecOp, c, dst)
            self.instr(npu.VMulsOp, dst, dst, scalar=float(a))

    def _with_scalar(self, cls: type, a: Tile, s: float, dst: Tile) -> None:
        if cls is npu.VSubOp:
            self.instr(npu.VAddsOp, a, dst, scalar=-s)
        elif cls is npu.VDivOp:
            self.instr(npu.VMulsOp, a, dst, scalar=1.0 / s)
        else:
            self.instr(_WITH_SCALAR[cls], a, dst, scalar=s)

    def fill(self, dst: Tile, value: float) -> None:
        self.instr(npu.VDupOp, dst, value=value)

    def cast(self, src: Tile, dst: Tile, rounding: str = "rint", saturate: bool = False) -> None:
        if src.element_type == dst.element_type:
            if src != dst:
                self.instr(npu.VCopyOp, src, dst)
            return
        attrs = {"round": rounding} if rounding != "rint" else {}
        if saturate:
            attrs["saturate"] = True
        self.instr(npu.VCastOp, src, dst, **attrs)

    def widened_any(self, src: Tile) -> Tile:
        """`src` converted to fp32 whatever its type (a temporary unless it is fp32)."""
        return self.widened_to(src, f32)

    def widened_to(self, src: Tile, element_type: Attribute) -> Tile:
        """`src` converted to `element_type` (a temporary unless it has that type).
        A row broadcast down the rows (a bias) is converted once, as one row, and
        stays broadcast."""
        if src.element_type == element_type:
            return src
        wide = self.temp(element_type)
        if src.row_stride == 0 and self.rows > 1:
            VectorEmitter(self.b, 1, self.cols, self.temp, self._col_temp, self._release).cast(src, wide)
            return replace(wide, row_stride=0)
        self.cast(src, wide)
        return wide

    def widened(self, src: Tile) -> Tile:
        """`src` in fp32 (a temporary when it is a narrower float: f16, bf16, float8...)."""
        if not dtypes.is_narrow_float(src.element_type):
            return src
        return self.widened_to(src, f32)

    # ---- row reductions -----------------------------------------------------------------

    def reduce_rows(self, kind: str, src: Tile, dst: Tile, consume: bool = False, fold: bool = True) -> None:
        """`dst[r]` = sum / max / min of row r of `src` (`dst` holds one value per row,
        in `src`'s element type; the vector unit accumulates in fp32 and rounds once).

        Rows of 2 repeats or more are first folded in halves with
        full-width `vadd` / `vmax` (2 cycles a repeat) down to one repeat per
        row, then reduced across the lanes (`vreduce_*`, 7 cycles a repeat):
        1.6x cheaper than reducing the whole row across lanes at 2 repeats, about
        3x at 8 and more. Every fold keeps its offsets 32-byte aligned;
        columns beyond the last aligned block are reduced on their own. The
        folds write a temporary, or `src` itself if `consume` (it is dead after).
        Folded partial sums are rounded to `src`'s type: `fold=False` reduces
        each row in one instruction (one rounding, e.g. an fp16 sum that may
        cancel).
        """
        combine, across = _REDUCTIONS[kind]
        width = dtypes.byte_width(src.element_type)
        align, lanes = UB_ALIGN_BYTES // width, REPEAT_BYTES // width
        aligned = self.cols - self.cols % align
        if not fold or aligned < 2 * lanes or src.row_stride == 0:
            self._across(across, src, self.cols, dst)
            return
        scratch = src if consume else self.temp(src.element_type)
        n = self._fold(combine, src, scratch, aligned, align, lanes)
        self._across(across, scratch, n, dst)
        if not consume:
            self.release(scratch)
        if aligned < self.cols:
            rest = self.col_temp(dst.element_type)
            tail = replace(src, offset=self.b.add(src.offset, aligned))
            self._across(across, tail, self.cols - aligned, rest)
            self.per_row().instr(combine, dst, rest, dst)
            self.release(rest)

    def _fold(self, combine: type, src: Tile, scratch: Tile, n: int, align: int, lanes: int) -> int:
        """Fold the first `n` columns of `src` into `scratch` until at most `lanes`
        remain; returns how many."""
        current = src
        while n > lanes:
            kept = -(-((n + 1) // 2) // align) * align
            folded = n - kept
            self.with_cols(folded).instr(combine, current, self._shifted(current, kept), scratch)
            if current is not scratch and kept > folded:
                self.with_cols(kept - folded).instr(npu.VCopyOp, self._shifted(current, folded), self._shifted(scratch, folded))
            current, n = scratch, kept
        return n

    def _shifted(self, tile: Tile, columns: int) -> Tile:
        return replace(tile, offset=self.b.add(tile.offset, columns))

    def _across(self, cls: type, src: Tile, cols: int, dst: Tile) -> None:
        """One `vreduce_*` over `cols` columns of every row into a per-row tile."""
        explicit = {}
        stride = src.row_stride if self.rows > 1 else cols
        if stride != cols:
            explicit["strides"] = [stride, 1]
        self.b.emit(cls, src.buffer, src.offset, dst.buffer, dst.offset, rows=self.rows, cols=cols, **explicit)


class _PerRowEmitter(VectorEmitter):
    """`VectorEmitter.per_row`: per-row tiles are read as one contiguous row."""

    def instr(self, cls: type, *tiles: Tile, **attrs) -> None:
        super().instr(cls, *(as_row(t) for t in tiles), **attrs)


def as_row(tile: Tile) -> Tile:
    """A per-row tile (one value per row) as a contiguous row of those values."""
    if tile.col_stride == 0 and tile.row_stride == 1:
        return Tile(tile.buffer, tile.offset, 0, 1)
    return tile


def as_col(tile: Tile) -> Tile:
    """A contiguous row of values read as one value per row (the inverse of `as_row`)."""
    return Tile(tile.buffer, tile.offset, 1, col_stride=0)


_REDUCTIONS: dict[str, tuple[type, type]] = {
    "sum": (npu.VAddOp, npu.VReduceSumOp),
    "max": (npu.VMaxOp, npu.VReduceMaxOp),
    "min": (npu.VMinOp, npu.VReduceMinOp),
}
"""Reduction kind -> (the elementwise op that folds two halves, the across-lanes op)."""


class VectorUnsupported(NotImplementedError):
    """An op (or operand kind) the vector unit has no way to compute; templates turn
    it into a located `k.unsupported` error."""


def emit_elementwise(v: VectorEmitter, name: str, a: SimpleNamespace, inputs: Sequence[Operand], dst: Tile) -> None:
    """`dst = <ge op name>(inputs)` over the emitter's rows x cols."""
    if name == "ge.div" and not dtypes.is_float(dst.element_type):
        _emit_integer_divide(v, inputs[0], inputs[1], dst)
    elif name in _BINARY:
        v.binary(_BINARY[name], inputs[0], inputs[1], dst)
    elif name in _UNARY:
        v.instr(_UNARY[name], _tile(inputs[0]), dst)
    elif name == "ge.compare":
        _emit_compare(v, a.predicate, inputs[0], inputs[1], dst)
    elif name in _LOGICAL:
        v.binary(_LOGICAL[name], inputs[0], inputs[1], dst)
    elif name in _BITWISE or name == "ge.bit_shift":
        shift = npu.VShlOp if getattr(a, "direction", "left") == "left" else npu.VShrOp
        lhs, rhs = (_materialized(v, t, dst.element_type) for t in inputs)
        v.instr(_BITWISE.get(name, shift), lhs, rhs, dst)
    elif name == "ge.bitwise_not":
        v.instr(npu.VNotOp, _tile(inputs[0]), dst)
    elif name == "ge.not":
        v.instr(npu.VCmpsOp, _tile(inputs[0]), dst, cmp="eq", scalar=0.0)
    elif name == "ge.sign":
        _emit_sign(v, _tile(inputs[0]), dst)
    elif name in _ROUNDINGS:
        _emit_rounding(v, _tile(inputs[0]), dst, _ROUNDINGS[name])
    elif name == "ge.mod":
        _emit_mod(v, inputs[0], inputs[1], dst, a.fmod)
    elif name == "ge.neg":
        v.instr(npu.VMulsOp, _tile(inputs[0]), dst, scalar=-1.0)
    elif name == "ge.leaky_relu":
        x = _tile(inputs[0])
        scaled = v.temp(dst.element_type)
        v.instr(npu.VMulsOp, x, scaled, scalar=a.alpha)
        v.instr(npu.VMaxOp if a.alpha <= 1 else npu.VMinOp, x, scaled, dst)
    elif name in ("ge.gelu", "ge.silu"):
        _emit_in_fp32(v, dst, inputs[0], _GELU[a.approximate] if name == "ge.gelu" else _silu)
    elif name == "ge.pow":
        _emit_pow(v, inputs[0], inputs[1], dst)
    elif name == "ge.cast":
        _emit_cast(v, _tile(inputs[0]), dst, a)
    elif name == "ge.where":
        cond, x, y = inputs
        x, y = (_materialized(v, t, dst.element_type) for t in (x, y))
        v.instr(npu.VSelOp, _tile(cond), x, y, dst)
    else:
        raise VectorUnsupported(f"'{name}' has no vector form")


def _tile(operand: Operand) -> Tile:
    if not isinstance(operand, Tile):
        raise VectorUnsupported("a scalar immediate where the instruction needs a tile")
    return operand


def _materialized(v: VectorEmitter, operand: Operand, element_type: Attribute) -> Tile:
    if isinstance(operand, Tile):
        return operand
    t = v.temp(element_type)
    v.fill(t, float(operand))
    return t


def _emit_compare(v: VectorEmitter, predicate: str, a: Operand, b: Operand, dst: Tile) -> None:
    """dst = a <predicate> b: `vcmp` on two tiles, `vcmps` with an immediate (moved
    to the right-hand side, the predicate mirrored)."""
    if not isinstance(a, Tile):
        a, b, predicate = b, a, _SWAPPED[predicate]
    if isinstance(b, Tile):
        v.instr(npu.VCmpOp, a, b, dst, cmp=predicate)
    else:
        v.instr(npu.VCmpsOp, _tile(a), dst, cmp=predicate, scalar=float(b))


def _emit_sign(v: VectorEmitter, x: Tile, dst: Tile) -> None:
    """dst = 1 where x > 0, -1 where x < 0, else x * 0 (0, or NaN for NaN as the
    reference's), in x's own type: integers get integer instructions. The masks
    are taken before `dst` (which may be x's buffer) is written."""
    positive, negative = v.temp(i1), v.temp(i1)
    one, minus_one = v.temp(dst.element_type), v.temp(dst.element_type)
    v.instr(npu.VCmpsOp, x, positive, cmp="gt", scalar=0.0)
    v.instr(npu.VCmpsOp, x, negative, cmp="lt", scalar=0.0)
    v.fill(one, 1.0)
    v.fill(minus_one, -1.0)
    v.instr(npu.VMulsOp, x, dst, scalar=0.0)
    v.instr(npu.VSelOp, positive, one, dst, dst)
    v.instr(npu.VSelOp, negative, minus_one, dst, dst)
    for t in (positive, negative, one, minus_one):
        v.release(t)


_ROUNDINGS = {"ge.floor": "floor", "ge.ceil": "ceil", "ge.round": "rint"}
"""ge op -> the `vcast` rounding (float to integer) it is computed with."""


def _emit_rounding(v: VectorEmitter, x: Tile, dst: Tile, rounding: str) -> None:
    """Floor, ceil or round-half-to-even as a `vcast` to an integer with that rounding
    and back, in fp32 (fp64 for fp64 data, through i64). Values at or beyond the
    float's 2^(mantissa bits) are integers already, and so are infinities; they,
    and NaN, are kept as they are (the integer cast would overflow)."""
    wide_type, int_type, limit = (f64, dtypes.i64, 2.0**52) if dst.element_type == f64 else (f32, i32, 2.0**23)
    wide = v.widened_to(x, wide_type)
    as_int, rounded, magnitude, small = v.temp(int_type), v.temp(wide_type), v.temp(wide_type), v.temp(i1)
    v.instr(npu.VAbsOp, wide, magnitude)
    v.instr(npu.VCmpsOp, magnitude, small, cmp="lt", scalar=limit)
    v.instr(npu.VMinsOp, wide, rounded, scalar=limit)  # keep the cast in range
    v.instr(npu.VMaxsOp, rounded, rounded, scalar=-limit)
    v.cast(rounded, as_int, rounding)
    v.cast(as_int, rounded)
    v.instr(npu.VSelOp, small, rounded, wide, rounded)
    v.cast(rounded, dst)
    for t in (as_int, rounded, magnitude, small, *([wide] if wide is not x else [])):
        v.release(t)


def _emit_integer_divide(v: VectorEmitter, x: Operand, y: Operand, dst: Tile) -> None:
    """ONNX integer Div (truncating towards zero) through a float quotient: fp32 for
    integers of up to 16 bits, fp64 for wider ones, exact while |x| fits the
    float's mantissa (every 32-bit integer; |x| < 2**53 for 64-bit ones), where
    a correctly rounded quotient never crosses an integer."""
    wide_type = f32 if dtypes.byte_width(dst.element_type) <= 2 else f64
    wide = [_materialized(v, o, wide_type) if not isinstance(o, Tile) else v.widened_to(o, wide_type) for o in (x, y)]
    quotient = v.temp(wide_type)
    v.instr(npu.VDivOp, wide[0], wide[1], quotient)
    v.cast(quotient, dst, "trunc")
    for t in (*wide, quotient):
        if t is not x and t is not y:
            v.release(t)


def _emit_mod(v: VectorEmitter, x: Operand, y: Operand, dst: Tile, c_semantics: bool) -> None:
    """ONNX Mod as x - trunc(x / y) * y (C's fmod), then, unless `c_semantics`, y
    added where that remainder is non-zero with a sign other than y's (the
    divisor's sign, numpy's mod). Integers stay integers (the quotient as
    `ge.div` computes it, the rest in the integer type); floats work in fp64,
    exact while |x / y| < 2^29 for fp32 and fp16 data, and follow the
    reference's fmod(x, +-inf) = x for finite x and NaN for a zero divisor."""
    if not dtypes.is_float(dst.element_type):
        remainder = v.temp(dst.element_type)
        _emit_integer_divide(v, x, y, remainder)
        v.binary(npu.VMulOp, remainder, y, remainder)
        v.binary(npu.VSubOp, x, remainder, remainder)
        if not c_semantics and not dtypes.is_unsigned(dst.element_type):
            y_tile = _materialized(v, y, dst.element_type)
            _to_divisor_sign(v, remainder, y_tile)
            if y_tile is not y:
                v.release(y_tile)
        v.cast(remainder, dst)
        v.release(remainder)
        return
    xw, yw = (_materialized(v, o, f64) if not isinstance(o, Tile) else v.widened_to(o, f64) for o in (x, y))
    quotient, remainder, finite, infinite = v.temp(f64), v.temp(f64), v.temp(i1), v.temp(i1)
    v.instr(npu.VDivOp, xw, yw, quotient)
    _emit_rounding(v, quotient, quotient, "trunc")
    v.instr(npu.VMulOp, quotient, yw, quotient)
    v.instr(npu.VSubOp, xw, quotient, remainder)
    v.instr(npu.VSubOp, xw, xw, quotient)  # 0 for finite x, NaN for inf or NaN
    v.instr(npu.VCmpsOp, quotient, finite, cmp="eq", scalar=0.0)
    v.instr(npu.VAbsOp, yw, quotient)
    v.instr(npu.VCmpsOp, quotient, infinite, cmp="gt", scalar=float(dtypes.float_info(f64).max))
    v.instr(npu.VMinOp, finite, infinite, finite)
    v.instr(npu.VSelOp, finite, xw, remainder, remainder)
    if not c_semantics:
        _to_divisor_sign(v, remainder, yw)
    v.cast(remainder, dst)
    for t in (quotient, remainder, finite, infinite, *(w for w, o in ((xw, x), (yw, y)) if w is not o)):
        v.release(t)


def _to_divisor_sign(v: VectorEmitter, remainder: Tile, y: Tile) -> None:
    """remainder += y where the remainder is non-zero and its sign differs from y's."""
    differ, nonzero, shifted = v.temp(i1), v.temp(i1), v.temp(remainder.element_type)
    v.instr(npu.VCmpsOp, remainder, differ, cmp="lt", scalar=0.0)
    v.instr(npu.VCmpsOp, y, nonzero, cmp="lt", scalar=0.0)
    v.instr(npu.VCmpOp, differ, nonzero, differ, cmp="ne")
    v.instr(npu.VCmpsOp, remainder, nonzero, cmp="ne", scalar=0.0)
    v.instr(npu.VMinOp, differ, nonzero, differ)
    v.instr(npu.VAddOp, remainder, y, shifted)
    v.instr(npu.VSelOp, differ, shifted, remainder, remainder)
    for t in (differ, nonzero, shifted):
        v.release(t)


def _emit_in_fp32(v: VectorEmitter, dst: Tile, x: Operand, body: Callable[[VectorEmitter, Tile, Tile], None]) -> None:
    """Run `body(v, x32, out32)` in fp32 and round into `dst` once."""
    x32 = v.widened(_tile(x))
    out = dst if dst.element_type == f32 else v.temp(f32)
    body(v, x32, out)
    v.cast(out, dst)


def _gelu_erf(v: VectorEmitter, x: Tile, out: Tile) -> None:
    t = v.temp(f32)
    v.instr(npu.VMulsOp, x, t, scalar=1.0 / math.sqrt(2.0))
    v.instr(npu.VErfOp, t, t)
    v.instr(npu.VAddsOp, t, t, scalar=1.0)
    v.instr(npu.VMulOp, x, t, t)
    v.instr(npu.VMulsOp, t, out, scalar=0.5)


def _gelu_tanh(v: VectorEmitter, x: Tile, out: Tile) -> None:
    t = v.temp(f32)
    v.instr(npu.VMulOp, x, x, t)  # x^2
    v.instr(npu.VMulsOp, t, t, scalar=0.044715)
    v.instr(npu.VAddsOp, t, t, scalar=1.0)
    v.instr(npu.VMulOp, x, t, t)  # x + 0.044715 x^3
    v.instr(npu.VMulsOp, t, t, scalar=math.sqrt(2.0 / math.pi))
    v.instr(npu.VTanhOp, t, t)
    v.instr(npu.VAddsOp, t, t, scalar=1.0)
    v.instr(npu.VMulOp, x, t, t)
    v.instr(npu.VMulsOp, t, out, scalar=0.5)


def _silu(v: VectorEmitter, x: Tile, out: Tile) -> None:
    t = v.temp(f32)
    v.instr(npu.VSigmoidOp, x, t)
    v.instr(npu.VMulOp, x, t, out)


_GELU = {"none": _gelu_erf, "tanh": _gelu_tanh}


def _emit_pow(v: VectorEmitter, base: Operand, exponent: Operand, dst: Tile) -> None:
    """ONNX Pow with the reference's value for every base, negative ones included.

    A constant exponent picks an exact form: an integer one (0, 1, 2, -1, ...) is
    repeated squaring (and a reciprocal), 0.5 and -0.5 are one square root.
    Anything else goes through exp(y ln |x|), with the sign of a negative base
    put back for an integer y and NaN for a non-integer one. Integer tensors get
    integer kernels (`_emit_integer_pow`), never float instructions."""
    if not dtypes.is_float(dst.element_type):
        _emit_integer_pow(v, _tile(base), exponent, dst)
        return
    if isinstance(exponent, Tile):
        _emit_in_fp32(v, dst, base, lambda v, x, out: _pow_tensor(v, x, v.widened(exponent), out))
        return
    e = float(exponent)
    if e in (0.5, -0.5):
        v.instr(npu.VSqrtOp if e > 0 else npu.VRsqrtOp, _tile(base), dst)
    elif e.is_integer() and abs(e) <= _SQUARING_LIMIT:
        _emit_in_fp32(v, dst, base, lambda v, x, out: _pow_integer(v, x, int(e), out))
    else:
        _emit_in_fp32(v, dst, base, lambda v, x, out: _pow_constant(v, x, e, out))


_SQUARING_LIMIT = 1 << 16
"""Integer exponents up to this magnitude are computed by repeated squaring (at
most 32 multiplies); larger ones, whose results are 0, 1 or inf for every fp32
base anyway, go through exp / ln."""

_EVEN_BEYOND = float(1 << 24)
"""Every fp32 of at least this magnitude is an even integer."""


def _pow_integer(v: VectorEmitter, x: Tile, n: int, out: Tile) -> None:
    """out = x^n for an integer n: 1 for n = 0 (even for NaN, 0 or inf bases, as the
    reference), x^|n| by squaring, its reciprocal for n < 0."""
    if n == 0:
        v.fill(out, 1.0)
        return
    _multiply_power(v, x, abs(n), out)
    if n < 0:
        v.instr(npu.VRecOp, out, out)


def _multiply_power(v: VectorEmitter, x: Tile, n: int, out: Tile) -> None:
    """out = x^n (n >= 1) by binary exponentiation, in the tiles' own type (integers
    wrap as the reference's do). `out` may be `x`'s buffer: x is only read before
    `out` is first written or while both still hold x."""
    power, square, written = x, None, False
    while True:
        if n & 1:
            if written:
                v.instr(npu.VMulOp, out, power, out)
            else:
                v.cast(power, out)
            written = True
        n >>= 1
        if not n:
            break
        square = square or v.temp(out.element_type)
        v.instr(npu.VMulOp, power, power, square)
        power = square
    if square is not None:
        v.release(square)


def _pow_constant(v: VectorEmitter, x: Tile, e: float, out: Tile) -> None:
    """out = x^e for a constant e that is not a small integer: exp(e ln x), NaN for
    a negative base (ln's NaN) unless e is an integer, whose sign rule is kept."""
    magnitude = v.temp(f32)
    v.instr(npu.VAbsOp if e.is_integer() else npu.VCopyOp, x, magnitude)
    v.instr(npu.VLnOp, magnitude, magnitude)
    v.instr(npu.VMulsOp, magnitude, magnitude, scalar=e)
    v.instr(npu.VExpOp, magnitude, magnitude)
    if e.is_integer() and abs(e) < _EVEN_BEYOND and e % 2 == 1:
        _negate_where_negative(v, x, magnitude, out)
    else:
        v.cast(magnitude, out)
    v.release(magnitude)


def _negate_where_negative(v: VectorEmitter, x: Tile, value: Tile, out: Tile) -> None:
    """out = -value where x < 0, value elsewhere."""
    negative, negated = v.temp(i1), v.temp(f32)
    v.instr(npu.VCmpsOp, x, negative, cmp="lt", scalar=0.0)
    v.instr(npu.VMulsOp, value, negated, scalar=-1.0)
    v.instr(npu.VSelOp, negative, negated, value, out)
    v.release(negative)
    v.release(negated)


def _pow_tensor(v: VectorEmitter, x: Tile, y: Tile, out: Tile) -> None:
    """out = x^y for a tensor y (fp32 tiles): |x|^y through exp / ln; for x < 0 the
    sign of an odd y, NaN for a non-integer y; 1 where y = 0. `out` is written
    last (it may be x's or y's buffer)."""
    magnitude, signed, nan_if_negative = v.temp(f32), v.temp(f32), v.temp(f32)
    v.instr(npu.VAbsOp, x, magnitude)
    v.instr(npu.VLnOp, magnitude, magnitude)
    v.instr(npu.VMulOp, magnitude, y, magnitude)
    v.instr(npu.VExpOp, magnitude, magnitude)
    is_integer, is_odd = _integer_and_odd(v, y)
    v.instr(npu.VMulsOp, magnitude, signed, scalar=-1.0)
    v.instr(npu.VSelOp, is_odd, signed, magnitude, signed)
    v.instr(npu.VLnOp, x, nan_if_negative)
    v.instr(npu.VSelOp, is_integer, signed, nan_if_negative, signed)  # the value for a negative base
    mask = is_odd
    v.instr(npu.VCmpsOp, x, mask, cmp="lt", scalar=0.0)
    v.instr(npu.VSelOp, mask, signed, magnitude, magnitude)
    v.instr(npu.VCmpsOp, y, mask, cmp="eq", scalar=0.0)
    v.fill(signed, 1.0)
    v.instr(npu.VSelOp, mask, signed, magnitude, out)
    for t in (magnitude, signed, nan_if_negative, is_integer, is_odd):
        v.release(t)


def _integer_and_odd(v: VectorEmitter, y: Tile) -> tuple[Tile, Tile]:
    """Masks: y is an integer; y is an odd integer (fp32 y, rounded through i32
    after clamping to +-2^24, beyond which every fp32 is an even integer)."""
    clamped, rounded, as_int = v.temp(f32), v.temp(f32), v.temp(i32)
    is_integer, is_odd = v.temp(i1), v.temp(i1)
    v.instr(npu.VMinsOp, y, clamped, scalar=_EVEN_BEYOND)
    v.instr(npu.VMaxsOp, clamped, clamped, scalar=-_EVEN_BEYOND)
    for mask, cmp in ((is_integer, "eq"), (is_odd, "ne")):
        v.cast(clamped, as_int)
        v.cast(as_int, rounded)
        v.instr(npu.VCmpOp, rounded, clamped, mask, cmp=cmp)
        v.instr(npu.VMulsOp, clamped, clamped, scalar=0.5)  # an integer y is odd iff y / 2 is not one
    for t in (clamped, rounded, as_int):
        v.release(t)
    return is_integer, is_odd


def _emit_integer_pow(v: VectorEmitter, x: Tile, y: Operand, dst: Tile) -> None:
    """Integer Pow, exact and wrapping like the reference's: a constant exponent by
    squaring; a tensor one bit at a time over every value bit of its type (x^y
    is the product of x^(2^k) over the set bits of y; bit k is what is left
    over when y is halved for the k-th time, in a float that holds y exactly).
    A negative exponent has no integer result (the reference refuses it too)."""
    if not isinstance(y, Tile):
        n = float(y)
        if n < 0:
            raise VectorUnsupported(f"integer pow with the negative exponent {n:g}")
        if n == 0:
            v.fill(dst, 1.0)
        else:
            _multiply_power(v, x, int(n), dst)
        return
    wide_type = f32 if dtypes.byte_width(y.element_type) <= 2 else f64
    exponent, half, as_int = v.temp(wide_type), v.temp(wide_type), v.temp(y.element_type)
    power, product, factor, one = (v.temp(dst.element_type) for _ in range(4))
    odd = v.temp(i1)
    v.cast(y, exponent)
    v.cast(x, power)
    v.fill(product, 1.0)
    v.fill(one, 1.0)
    bits = dtypes.integer_bits(y.element_type) - (0 if dtypes.is_unsigned(y.element_type) else 1)
    for bit in range(bits):
        v.instr(npu.VMulsOp, exponent, half, scalar=0.5)
        v.cast(half, as_int, "floor")
        v.cast(as_int, exponent)
        v.instr(npu.VCmpOp, half, exponent, odd, cmp="ne")
        v.instr(npu.VSelOp, odd, power, one, factor)
        v.instr(npu.VMulOp, product, factor, product)
        if bit < bits - 1:
            v.instr(npu.VMulOp, power, power, power)
    v.cast(product, dst)
    for t in (exponent, half, as_int, power, product, factor, one, odd):
        v.release(t)


def _emit_cast(v: VectorEmitter, src: Tile, dst: Tile, a: SimpleNamespace) -> None:
    """ONNX Cast, with the rounding and saturation `ge.cast` asks for; anything ->
    i1 tests for non-zero, i1 -> anything selects 1 or 0 (through fp32 when the
    destination's conversion of 0 is not plain: f8E8M0FNU has no zero)."""
    if dst.element_type == i1:
        v.instr(npu.VCmpsOp, src, dst, cmp="ne", scalar=0.0)
        return
    if src.element_type == i1:
        if dst.element_type != f8E8M0FNU:
            _select_one_zero(v, src, dst)
            return
        ones_zeros = v.temp(f32)
        _select_one_zero(v, src, ones_zeros)
        src = ones_zeros
    v.cast(src, dst, *ge.CastOp.conversion(a, src.element_type, dst.element_type))


def _select_one_zero(v: VectorEmitter, mask: Tile, dst: Tile) -> None:
    ones, zeros = v.temp(dst.element_type), v.temp(dst.element_type)
    v.fill(ones, 1.0)
    v.fill(zeros, 0.0)
    v.instr(npu.VSelOp, mask, ones, zeros, dst)


def add_terms(v: VectorEmitter, x: Tile, terms: list[Operand]) -> None:
    """x += each term (fp32, terms widened), with ge.add's vector definition."""
    for term in terms:
        widened = v.widened(term) if isinstance(term, Tile) else term
        emit_elementwise(v, "ge.add", SimpleNamespace(), [x, widened], x)


def round_to(v: VectorEmitter, x: Tile, element_type: Attribute, through: Tile | None = None) -> None:
    """x (fp32) rounded to `element_type` and widened back, as a value of that type
    holds it; `through` (a tile of that type, optional) receives the rounded value
    (a stored sum), else a temporary carries it."""
    if element_type == f32:
        if through is not None:
            v.cast(x, through)
        return
    narrow = through if through is not None else v.temp(element_type)
    v.cast(x, narrow)
    v.cast(narrow, x)
    if through is None:
        v.release(narrow)


def add_rounded_terms(v: VectorEmitter, x: Tile, terms: list[Operand], element_type: Attribute,
                      through: Tile | None = None, widen: bool = True) -> None:
    """x (an fp32 product) + each term as the `ge` ops a fused op stands for compute
    it in a float `element_type`: the product rounded to it, then each addition in
    it (rounding as `ge.add` does); `through` (a tile of `element_type`) receives
    the sum, and with `widen` x holds it too. A norm amplifies those roundings
    where the sum's spread is small beside its mean: summing in fp32 and rounding
    once, `fused.matmul_add_layer_norm` in f16 missed the unfused result by 40x
    the tolerance. Adding in f16 costs no more than in fp32 (the terms need no
    widening). In fp32 (or an integer type) x += the terms, as `add_terms`."""
    if element_type == f32 or not dtypes.is_float(element_type):
        if through is not None and not widen and terms and through.element_type == x.element_type:
            add_terms(v, x, terms[:-1])  # the last addition writes the sum where it goes: no copy
            last = terms[-1]
            emit_elementwise(v, "ge.add", SimpleNamespace(), [x, v.widened(last) if isinstance(last, Tile) else last], through)
            return
        add_terms(v, x, terms)
        if through is not None:
            v.cast(x, through)
        return
    total = v.temp(element_type)
    v.cast(x, total)  # the product, rounded
    out = through if through is not None else total
    for i, term in enumerate(terms):
        emit_elementwise(v, "ge.add", SimpleNamespace(), [total, term], out if i == len(terms) - 1 else total)
    if not terms:
        v.cast(total, out)  # a copy, if any
    if widen:
        v.cast(out, x)
    v.release(total)
