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

from xdsl.dialects.builtin import MemRefType, f16, f32, i1
from xdsl.ir import Attribute, SSAValue

from ...core import dtypes
from ...dialects import npu
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
    "ge.relu": npu.VReluOp,
    "ge.abs": npu.VAbsOp,
    "ge.identity": npu.VCopyOp,
    "ge.dropout": npu.VCopyOp,
}


class VectorEmitter:
    """Vector instructions over `rows x cols`; temporaries come from `temp`."""

    def __init__(self, b: KernelBuilder, rows: int, cols: int, temp: Callable[[Attribute], Tile]):
        self.b = b
        self.rows = rows
        self.cols = cols
        self.temp = temp

    def instr(self, cls: type, *tiles: Tile, **attrs) -> None:
        operands: list = []
        for t in tiles:
            operands += [t.buffer, t.offset]
        strides = [t.row_stride if self.rows > 1 else self.cols for t in tiles]
        col_strides = [t.col_stride for t in tiles]
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

    def cast(self, src: Tile, dst: Tile, rounding: str = "rint") -> None:
        if src.element_type == dst.element_type:
            if src != dst:
                self.instr(npu.VCopyOp, src, dst)
            return
        self.instr(npu.VCastOp, src, dst, **({"round": rounding} if rounding != "rint" else {}))

    def widened(self, src: Tile) -> Tile:
        """`src` in fp32 (a temporary when it is fp16)."""
        if src.element_type != f16:
            return src
        wide = self.temp(f32)
        self.cast(src, wide)
        return wide


def emit_elementwise(v: VectorEmitter, name: str, a: SimpleNamespace, inputs: Sequence[Operand], dst: Tile) -> None:
    """`dst = <ge op name>(inputs)` over the emitter's rows x cols."""
    if name in _BINARY:
        v.binary(_BINARY[name], inputs[0], inputs[1], dst)
    elif name in _UNARY:
        v.instr(_UNARY[name], _tile(inputs[0]), dst)
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
        _emit_cast(v, _tile(inputs[0]), dst)
    elif name == "ge.where":
        cond, x, y = inputs
        x, y = (_materialized(v, t, dst.element_type) for t in (x, y))
        v.instr(npu.VSelOp, _tile(cond), x, y, dst)
    else:
        raise NotImplementedError(name)


def _tile(operand: Operand) -> Tile:
    if not isinstance(operand, Tile):
        raise NotImplementedError("a scalar immediate where the instruction needs a tile")
    return operand


def _materialized(v: VectorEmitter, operand: Operand, element_type: Attribute) -> Tile:
    if isinstance(operand, Tile):
        return operand
    t = v.temp(element_type)
    v.fill(t, float(operand))
    return t


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
    """Small integer exponents multiply; others go through exp(y * ln x)."""
    if isinstance(exponent, float | int) and float(exponent) in (0.5, 1.0, 2.0, 3.0):
        e = float(exponent)
        x = _tile(base)
        if e == 0.5:
            v.instr(npu.VSqrtOp, x, dst)
        elif e == 1.0:
            v.instr(npu.VCopyOp, x, dst)
        elif e == 2.0:
            v.instr(npu.VMulOp, x, x, dst)
        else:
            sq = v.temp(dst.element_type)
            v.instr(npu.VMulOp, x, x, sq)
            v.instr(npu.VMulOp, sq, x, dst)
        return

    def body(v: VectorEmitter, x: Tile, out: Tile) -> None:
        v.instr(npu.VLnOp, x, out)
        y = exponent if not isinstance(exponent, Tile) else v.widened(exponent)
        v.binary(npu.VMulOp, out, y, out)
        v.instr(npu.VExpOp, out, out)

    _emit_in_fp32(v, dst, base, body)


def _emit_cast(v: VectorEmitter, src: Tile, dst: Tile) -> None:
    """ONNX Cast: float -> integer truncates; anything -> i1 tests for non-zero."""
    if dst.element_type == i1:
        v.instr(npu.VCmpsOp, src, dst, cmp="ne", scalar=0.0)
    elif src.element_type == i1:
        ones, zeros = v.temp(dst.element_type), v.temp(dst.element_type)
        v.fill(ones, 1.0)
        v.fill(zeros, 0.0)
        v.instr(npu.VSelOp, src, ones, zeros, dst)
    else:
        to_integer = not dtypes.is_float(dst.element_type) and dtypes.is_float(src.element_type)
        v.cast(src, dst, "trunc" if to_integer else "rint")
