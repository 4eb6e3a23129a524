"""Physical data formats and `ge.transdata`, the op that converts between them.

A tensor always keeps its LOGICAL shape (what the model means: NCHW activations,
(M, N) matrices). Where the cube wants another memory layout, the layout pass
records it as the tensor type's encoding::

    tensor<1x64x56x56xf16, #ge.format<NC1HWC0>>
    tensor<128x768xf16, #ge.format<FRACTAL_NZ>>
    tensor<64x64x3x3xf16, #ge.format<FRACTAL_Z>>

No encoding means ND (plain row-major; NCHW for images). Because the logical
shape never changes, the reference interpreter sees logical arrays everywhere
and every op keeps its meaning; only `ge.transdata` moves data between formats.

This module is the single source of truth for the physical layouts (the NPU
lowering uses the same functions for GM buffers):

* C0 = 32 bytes / element size: 16 for fp16, 8 for fp32, 32 for int8 and bool.
* NC1HWC0 ("5HD"): (N, C, H, W) -> (N, C1, H, W, C0), C1 = ceil(C / C0);
  physical[n, c1, h, w, c0] = x[n, c1*C0 + c0, h, w], channels padded with zeros.
* FRACTAL_Z (conv weights): (N, C, H, W) -> (C1*H*W, N1, N0, C0), N0 = 16;
  physical[(c1*H + h)*W + w, n1, n0, c0] = x[n1*16 + n0, c1*C0 + c0, h, w].
* FRACTAL_NZ (matmul operands): (..., M, N) -> (..., N1, M1, M0, N0) with 16 x 16
  fractals (M0 = 16 rows; N0 = 16 columns, 32 for one-byte types so a fractal row
  is at least 32 bytes); physical[..., n1, m1, m0, n0] = x[..., m1*M0 + m0, n1*N0 + n0].
  Fractals are stored column-major, rows inside a fractal row-major.

Padding is always zeros (False for booleans), which the cube relies on: padded
K columns contribute nothing to a product.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
from xdsl.dialects.builtin import NoneAttr, StringAttr, TensorType
from xdsl.ir import Attribute, ParametrizedAttribute
from xdsl.irdl import irdl_attr_definition, irdl_op_definition, operand_def, result_def, traits_def
from xdsl.parser import AttrParser
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from ...core import dtypes
from .base import GEOp, Kind, attr, fail, like, shape_of
from .canonicalization import (
    Canonicalize,
    GEPattern,
    defining_op,
    patterns_for,
    replace_with_value,
    retyped_constant,
)
from .const import ConstOp


class Format(StrEnum):
    ND = "ND"
    NC1HWC0 = "NC1HWC0"
    FRACTAL_NZ = "FRACTAL_NZ"
    FRACTAL_Z = "FRACTAL_Z"


FORMAT_NAMES = tuple(f.value for f in Format)

FRACTAL_ROWS = 16
"""M0 of FRACTAL_NZ and N0 of FRACTAL_Z: the cube's 16-row block."""

_BLOCK_BYTES = 32


@irdl_attr_definition
class FormatAttr(ParametrizedAttribute):
    """`#ge.format<FRACTAL_NZ>`: the physical format of a tensor, as its encoding."""

    name = "ge.format"
    format: StringAttr

    def __init__(self, fmt: Format | str):
        super().__init__(StringAttr(str(fmt)))

    def verify(self) -> None:
        if self.format.data not in FORMAT_NAMES or self.format.data == Format.ND:
            raise VerifyException(
                f"unknown format '{self.format.data}' (expected NC1HWC0, FRACTAL_NZ or FRACTAL_Z; "
                "ND is written as no encoding)"
            )

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            name = parser.parse_identifier()
        return [StringAttr(name)]

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.format.data}>")


# ---- formats of types -----------------------------------------------------------------


def format_of(t: Attribute) -> Format:
    """The physical format a tensor type's encoding records (ND without one)."""
    encoding = getattr(t, "encoding", None)
    if encoding is None or isinstance(encoding, NoneAttr):
        return Format.ND
    if isinstance(encoding, FormatAttr):
        return Format(encoding.format.data)
    raise fail(f"unknown tensor encoding {encoding}")


def with_format(t: TensorType, fmt: Format | str) -> TensorType:
    """`t` with its encoding set to `fmt` (ND removes it)."""
    fmt = Format(fmt)
    encoding = NoneAttr() if fmt == Format.ND else FormatAttr(fmt)
    return TensorType(t.element_type, list(t.get_shape()), encoding)


def format_error(fmt: Format | str, shape: Sequence[int]) -> str | None:
    """Why `fmt` cannot hold a tensor of `shape`, or None if it can."""
    fmt = Format(fmt)
    rank = len(shape)
    if fmt in (Format.NC1HWC0, Format.FRACTAL_Z) and rank != 4:
        return f"format {fmt} needs a rank-4 tensor, got rank {rank}"
    if fmt == Format.FRACTAL_NZ and rank < 2:
        return f"format {fmt} needs rank >= 2, got rank {rank}"
    return None


def c0(element_type: Attribute | np.dtype) -> int:
    """Channels per 32-byte block: 16 for fp16, 8 for fp32, 32 for int8 and bool."""
    return _BLOCK_BYTES // _itemsize(element_type)


def fractal_shape(element_type: Attribute | np.dtype) -> tuple[int, int]:
    """(M0, N0) of a FRACTAL_NZ fractal: 16 x 16, 16 x 32 for one-byte types."""
    return FRACTAL_ROWS, max(FRACTAL_ROWS, c0(element_type))


def block_shape(fmt: Format | str, element_type: Attribute | np.dtype) -> tuple[int, ...]:
    """The padding granule of `fmt` for this element type: two tensors of one logical
    shape have the same physical layout exactly when their block shapes agree."""
    fmt = Format(fmt)
    if fmt == Format.FRACTAL_NZ:
        return fractal_shape(element_type)
    if fmt == Format.NC1HWC0:
        return (c0(element_type),)
    if fmt == Format.FRACTAL_Z:
        return (FRACTAL_ROWS, c0(element_type))
    return ()


def _itemsize(element_type: Attribute | np.dtype) -> int:
    if isinstance(element_type, Attribute):
        return dtypes.byte_width(element_type)
    return np.dtype(element_type).itemsize


def _blocks(size: int, block: int) -> int:
    return -(-size // block)


def physical_shape(
    logical_shape: Sequence[int], fmt: Format | str, element_type: Attribute | np.dtype
) -> tuple[int, ...]:
    """The shape of the data in memory for a tensor of `logical_shape` in `fmt`."""
    fmt = Format(fmt)
    shape = tuple(logical_shape)
    if (error := format_error(fmt, shape)) is not None:
        raise ValueError(error)
    if fmt == Format.ND:
        return shape
    if fmt == Format.NC1HWC0:
        n, c, h, w = shape
        k = c0(element_type)
        return (n, _blocks(c, k), h, w, k)
    if fmt == Format.FRACTAL_Z:
        n, c, h, w = shape
        k = c0(element_type)
        return (_blocks(c, k) * h * w, _blocks(n, FRACTAL_ROWS), FRACTAL_ROWS, k)
    m0, n0 = fractal_shape(element_type)
    *batch, m, n = shape
    return (*batch, _blocks(n, n0), _blocks(m, m0), m0, n0)


def _pad_to(array: np.ndarray, axis: int, size: int) -> np.ndarray:
    widths = [(0, 0)] * array.ndim
    widths[axis] = (0, size - array.shape[axis])
    return np.pad(array, widths)


def to_physical(array: np.ndarray, fmt: Format | str, element_type: Attribute | None = None) -> np.ndarray:
    """The memory image of a logical `array` in `fmt`, zero-padded. The block sizes
    follow `element_type` (default: the array's own dtype), so a value computed
    in fp32 for an fp16 tensor is laid out as the fp16 tensor is."""
    fmt = Format(fmt)
    x = np.asarray(array)
    elem = x.dtype if element_type is None else element_type
    target = physical_shape(x.shape, fmt, elem)
    if fmt == Format.ND:
        return x
    if fmt == Format.NC1HWC0:
        n, c1, h, w, k = target
        x = _pad_to(x, 1, c1 * k).reshape(n, c1, k, h, w)
        return np.ascontiguousarray(x.transpose(0, 1, 3, 4, 2))
    if fmt == Format.FRACTAL_Z:
        _, n1, n0, k = target
        _, c, h, w = x.shape
        c1 = _blocks(c, k)
        x = _pad_to(_pad_to(x, 0, n1 * n0), 1, c1 * k).reshape(n1, n0, c1, k, h, w)
        return np.ascontiguousarray(x.transpose(2, 4, 5, 0, 1, 3)).reshape(target)
    *batch, n1, m1, m0, n0 = target
    r = len(batch)
    x = _pad_to(_pad_to(x, r, m1 * m0), r + 1, n1 * n0).reshape(*batch, m1, m0, n1, n0)
    axes = (*range(r), r + 2, r, r + 1, r + 3)
    return np.ascontiguousarray(x.transpose(axes))


def from_physical(
    array: np.ndarray, fmt: Format | str, logical_shape: Sequence[int]
) -> np.ndarray:
    """The logical tensor of `logical_shape` held by the memory image `array` in
    `fmt` (the inverse of `to_physical`; padding is dropped)."""
    fmt = Format(fmt)
    x = np.asarray(array)
    shape = tuple(logical_shape)
    if fmt == Format.ND:
        return x.reshape(shape)
    if fmt == Format.NC1HWC0:
        n, c1, h, w, k = x.shape
        x = x.transpose(0, 1, 4, 2, 3).reshape(n, c1 * k, h, w)
        return np.ascontiguousarray(x[:, : shape[1]])
    if fmt == Format.FRACTAL_Z:
        _, n1, n0, k = x.shape
        n, c, h, w = shape
        c1 = _blocks(c, k)
        x = x.reshape(c1, h, w, n1, n0, k).transpose(3, 4, 0, 5, 1, 2)
        return np.ascontiguousarray(x.reshape(n1 * n0, c1 * k, h, w)[:n, :c])
    *batch, n1, m1, m0, n0 = x.shape
    r = len(batch)
    x = x.transpose(*range(r), r + 1, r + 2, r, r + 3).reshape(*batch, m1 * m0, n1 * n0)
    return np.ascontiguousarray(x[..., : shape[-2], : shape[-1]])


@dataclass(frozen=True)
class DimLayout:
    """Where index i of one logical dim lands in a format's memory image: it adds
    `i * stride` for an unsplit dim, `(i // block) * block_stride + (i % block) *
    stride` for a dim cut into blocks (the C of NC1HWC0 and FRACTAL_Z, the N of
    FRACTAL_NZ). `padded` is the dim's extent in the image (>= `size`; the
    indices in between are the zero padding). The offset of a logical index is the
    sum over its dims: the strided form of `to_physical` that kernels address with."""

    size: int
    padded: int
    stride: int
    block: int = 0  # 0: not split
    block_stride: int = 0

    def offset(self, i: int) -> int:
        if self.block:
            return (i // self.block) * self.block_stride + (i % self.block) * self.stride
        return i * self.stride


def dim_layouts(
    logical_shape: Sequence[int], fmt: Format | str, element_type: Attribute | np.dtype
) -> tuple[DimLayout, ...]:
    """Per logical dim, how it is laid out in `fmt` (see `DimLayout`); agrees with
    `physical_shape` and `to_physical`."""
    fmt = Format(fmt)
    shape = tuple(logical_shape)
    physical = physical_shape(shape, fmt, element_type)
    if fmt == Format.ND:
        strides = [math.prod(shape[d + 1 :]) for d in range(len(shape))]
        return tuple(DimLayout(s, s, st) for s, st in zip(shape, strides))
    if fmt == Format.NC1HWC0:
        n, c, h, w = shape
        _, c1, _, _, k = physical
        return (
            DimLayout(n, n, c1 * h * w * k),
            DimLayout(c, c1 * k, 1, k, h * w * k),
            DimLayout(h, h, w * k),
            DimLayout(w, w, k),
        )
    if fmt == Format.FRACTAL_Z:
        n, c, h, w = shape
        _, n1, n0, k = physical
        row = n1 * n0 * k  # one (c1, h, w) position holds every n
        return (
            DimLayout(n, n1 * n0, k),
            DimLayout(c, -(-c // k) * k, 1, k, h * w * row),
            DimLayout(h, h, w * row),
            DimLayout(w, w, row),
        )
    *batch, n1, m1, m0, n0 = physical
    matrix = n1 * m1 * m0 * n0
    batch_layouts = tuple(
        DimLayout(b, b, matrix * math.prod(batch[d + 1 :])) for d, b in enumerate(batch)
    )
    m, n = shape[-2:]
    return (*batch_layouts, DimLayout(m, m1 * m0, n0), DimLayout(n, n1 * n0, 1, n0, m1 * m0 * n0))


def same_image(logical_shape: Sequence[int], a: Format | str, b: Format | str, element_type) -> bool:
    """Whether a tensor of `logical_shape` lies in memory element for element the
    same in formats `a` and `b` (no padding either side, every logical index at
    one offset): a conversion between them moves nothing. NC1HWC0 of one pixel
    per image with whole channel blocks is ND (a pooled feature map before its
    classifier), as is FRACTAL_NZ of n0 columns and whole m0-row blocks."""
    shape = tuple(logical_shape)
    if math.prod(physical_shape(shape, a, element_type)) != math.prod(physical_shape(shape, b, element_type)):
        return False
    pairs = zip(shape, dim_layouts(shape, a, element_type), dim_layouts(shape, b, element_type))
    return all(la.offset(i) == lb.offset(i) for size, la, lb in pairs for i in range(size))


def physical_bytes(t: TensorType) -> int:
    """Bytes the tensor occupies in memory in its format, padding included."""
    shape = physical_shape(t.get_shape(), format_of(t), t.element_type)
    return math.prod(shape) * dtypes.byte_width(t.element_type)


# ---- ge.transdata ---------------------------------------------------------------------


@irdl_op_definition
class TransDataOp(GEOp):
    """Converts a tensor between physical formats (GE's TransData). The logical value
    is unchanged; the reference semantics lay the data out in both formats and read
    it back, so the conversion functions are exercised wherever it runs::

        %y = ge.transdata %x {src_format = "ND", dst_format = "FRACTAL_NZ"} : (tensor<128x768xf16>) -> tensor<128x768xf16, #ge.format<FRACTAL_NZ>>
    """

    name = "ge.transdata"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    src_format = attr(Kind.STR, choices=FORMAT_NAMES)
    dst_format = attr(Kind.STR, choices=FORMAT_NAMES)
    traits = traits_def(Pure(), Canonicalize())

    @classmethod
    def infer(cls, types, a, declared):
        (x,) = types
        shape = shape_of(x)
        if format_of(x) != a.src_format:
            raise fail(f"input format {format_of(x)} does not match src_format {a.src_format}")
        if (error := format_error(a.dst_format, shape)) is not None:
            raise fail(error)
        return with_format(like(x), a.dst_format)

    def verify_(self) -> None:
        super().verify_()
        got = format_of(self.result.type)
        if got != self.attr_value("dst_format"):
            raise VerifyException(
                f"result format {got} does not match dst_format {self.attr_value('dst_format')}"
            )

    @classmethod
    def compute(cls, inputs, a, result_types):
        (x,) = inputs
        t = result_types[0]
        for fmt in (a.src_format, a.dst_format):
            x = from_physical(to_physical(x, fmt, t.element_type), fmt, x.shape)
        return x


# ---- canonicalization: TransOpSymmetryElimination, SameTransdataBreadthFusion -----------


@patterns_for(TransDataOp)
class TransDataIdentity(GEPattern):
    """transdata(x) from a format to the same format -> x."""

    COUNTER = "identity transdata removed"

    def match_and_rewrite(self, op: TransDataOp, rewriter: PatternRewriter):
        if op.attr_value("src_format") == op.attr_value("dst_format"):
            replace_with_value(rewriter, op, op.input)


@patterns_for(TransDataOp)
class TransDataInversePair(GEPattern):
    """transdata(transdata(x, A -> B), B -> A) -> x (GE's TransOpSymmetryElimination)."""

    COUNTER = "inverse transdata pairs cancelled"

    def match_and_rewrite(self, op: TransDataOp, rewriter: PatternRewriter):
        inner = defining_op(op.input, TransDataOp)
        if inner is not None and inner.attr_value("src_format") == op.attr_value("dst_format"):
            replace_with_value(rewriter, op, inner.input)


@patterns_for(TransDataOp)
class TransDataOfConstant(GEPattern):
    """transdata(constant) -> the constant with the new format: its logical value is
    unchanged, so nothing is materialised (a `#ge.random` weight stays one)."""

    COUNTER = "constants re-typed"

    def match_and_rewrite(self, op: TransDataOp, rewriter: PatternRewriter):
        const = defining_op(op.input, ConstOp)
        if const is not None:
            rewriter.replace(op, retyped_constant(const, op.result.type))


@patterns_for(TransDataOp)
class SameTransData(GEPattern):
    """Two identical transdata of one value -> the earlier one (GE's
    SameTransdataBreadthFusion)."""

    COUNTER = "identical transdata merged"

    def match_and_rewrite(self, op: TransDataOp, rewriter: PatternRewriter):
        for use in op.input.uses:
            other = use.operation
            if (
                other is not op
                and isinstance(other, TransDataOp)
                and other.parent_block() is op.parent_block()
                and other.is_before_in_block(op)
                and other.properties == op.properties
                and other.result.type == op.result.type
            ):
                rewriter.replace(op, [], [other.result])
                return


FORMAT_OPS = (TransDataOp,)
FORMAT_ATTRS = (FormatAttr,)
