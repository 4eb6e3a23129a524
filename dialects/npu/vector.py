"""Vector instructions (V pipe) on UB, in one 2-D form.

Every vector op works on `rows x cols` elements. Each buffer operand has a row
stride (`strides`, one per buffer operand in operand order, default `cols`) and
a column stride (`col_strides`, default 1): a source with column stride 0 reads
one element per row broadcast along the row (a per-row scalar such as a row
max), a source with row stride 0 reads one row for every row (a bias). The
destination comes last and is written densely along its rows (column stride 1,
row stride >= cols).

    npu.vadd %x[%o], %y[%o], %z[%o] {rows = 1, cols = 4096}
    npu.vsub %x[%c0], %mx[%c0], %x[%c0] {rows = 16, cols = 256, strides = [256, 1, 256], col_strides = [1, 0, 1]}
    npu.vmuls %x[%c0], %x[%c0] {cols = 1024, scalar = 0.125}
    npu.vmla %x[%c0], %w[%c0], %acc[%c0] {rows = 64, cols = 8, strides = [8, 0, 8]}   // acc += x * w
    npu.vreduce_max %x[%c0], %mx[%c0] {rows = 16, cols = 256}        // one result per row, dst row stride 1
    npu.vcmps %x[%c0], %mask[%c0] {cols = 128, cmp = "gt", scalar = 0.0}
    npu.vsel %mask[%c0], %x[%c0], %y[%c0], %z[%c0] {cols = 128}
    npu.vtranspose %x[%c0], %xt[%c0] {rows = 16, cols = 16}           // dst is cols x rows
    npu.vcast %x32[%c0], %x16[%c0] {cols = 256}                       // element types from the buffers
    npu.vdup %z[%c0] {cols = 256, value = 0.0}

Cost: head + slope x repeats of the op's instruction class in the preset
(`COST`: binary, scalar, unary, transcendental, divide, reduce, data_movement),
repeats = ceil(rows x cols x bytes of the widest element / 256). Math is
computed in fp32 for fp16 data and rounded once when stored (`core/numeric.py`
for erf and sigmoid), as the reference interpreter does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import IndexType, MemRefType, i1
from xdsl.irdl import irdl_op_definition, operand_def
from xdsl.utils.exceptions import VerifyException

from ...core import conversion, dtypes, numeric
from ...core.conversion import ROUNDINGS
from ..ge.base import Kind
from ..ge.elementwise import COMPARISONS
from .access import Strided
from .base import OPTIONAL, Space, check_buffer_type, element_bytes, field
from .instruction import Access, InstructionOp, Kernel, same_element_type

CMP_FNS: dict[str, Callable] = COMPARISONS
"""`vcmp`'s predicates: `ge.compare`'s."""

def _immediate(value: float, element_type) -> np.ndarray:
    """A scalar attribute in an operand's element type (integers wrap: `x - 3` on
    ui8 is `x + 253`)."""
    return conversion.convert(np.asarray(value, dtype=np.float64), dtypes.to_numpy_dtype(element_type))


def _widened(x: np.ndarray) -> np.ndarray:
    """`x` in its compute dtype (floats narrower than fp32 widen to fp32)."""
    return x.astype(dtypes.compute_dtype(x.dtype), copy=False)


class VectorOp(InstructionOp):
    """Base of the vector ops: buffer operands are sources then the destination."""

    rows = field(Kind.INT, 1)
    cols = field(Kind.INT)
    strides = field(Kind.INTS, OPTIONAL)
    col_strides = field(Kind.INTS, OPTIONAL)

    COST: ClassVar[str] = "binary"

    def pipe_name(self) -> str:
        return "V"

    def source_count(self) -> int:
        return len(self.buffer_operands()) - 1

    def default_strides(self, a):
        return [a.cols] * len(self.buffer_operands())

    def column_strides(self, a) -> list[int]:
        return list(a.col_strides) if a.col_strides is not None else [1] * len(self.buffer_operands())

    def destination_pattern(self, a, row_stride: int) -> Strided:
        return Strided(a.rows, a.cols, row_stride)

    def accesses(self, a):
        operands = self.buffer_operands()
        strides, cols = self.row_strides(a), self.column_strides(a)
        sources = [
            Access(i, Strided(a.rows, a.cols, s, c), reads=True, writes=False)
            for i, s, c in zip(operands[:-1], strides[:-1], cols[:-1])
        ]
        return [*sources, Access(operands[-1], self.destination_pattern(a, strides[-1]), reads=False, writes=True)]

    def vector_bytes(self, a) -> int:
        """Bytes one pass over the operands processes: rows x cols x the widest element."""
        width = max(element_bytes(self.operands[i].type) for i in self.buffer_operands())
        return a.rows * a.cols * width

    def check_operands(self, a):
        for n, i in enumerate(self.buffer_operands()):
            check_buffer_type(self.operands[i].type, f"operand #{n}", [Space.UB])
        cols = self.column_strides(a)
        if len(cols) != len(self.buffer_operands()):
            raise VerifyException(
                f"'col_strides' needs one entry per buffer operand ({len(self.buffer_operands())}), got {len(cols)}"
            )
        if any(c not in (0, 1) for c in cols):
            raise VerifyException(f"'col_strides' entries must be 0 (broadcast) or 1, got {cols}")
        if cols[-1] != 1:
            raise VerifyException("the destination (last operand) is written: its column stride must be 1")
        self.check_types()

    def check_types(self) -> None:
        same_element_type(self, *range(len(self.buffer_operands())))


class SourceToDestination(VectorOp):
    """The operand form `%src[%o], %dst[%o]`."""

    src = operand_def(MemRefType)
    src_offset = operand_def(IndexType)
    dst = operand_def(MemRefType)
    dst_offset = operand_def(IndexType)


class TwoSourcesToDestination(VectorOp):
    """The operand form `%lhs[%o], %rhs[%o], %dst[%o]`."""

    lhs = operand_def(MemRefType)
    lhs_offset = operand_def(IndexType)
    rhs = operand_def(MemRefType)
    rhs_offset = operand_def(IndexType)
    dst = operand_def(MemRefType)
    dst_offset = operand_def(IndexType)


class VBinaryOp(TwoSourcesToDestination):
    """dst = FN(a, b)."""

    FN = staticmethod(np.add)

    def kernel(self, a) -> Kernel:
        fn = self.FN

        def run(x: np.ndarray, y: np.ndarray, out: np.ndarray) -> None:
            fn(x, y, out=out)

        return run


class VScalarOp(SourceToDestination):
    """dst = FN(src, scalar)."""


    scalar = field(Kind.FLOAT)

    COST: ClassVar[str] = "scalar"
    FN = staticmethod(np.add)

    def kernel(self, a) -> Kernel:
        fn = self.FN
        scalar = _immediate(a.scalar, self.dst.type.element_type)

        def run(x: np.ndarray, out: np.ndarray) -> None:
            fn(x, scalar, out=out)

        return run


class VUnaryOp(SourceToDestination):
    """dst = FN(src), computed in fp32 for fp16 data."""


    COST: ClassVar[str] = "transcendental"
    FN = staticmethod(np.exp)

    def check_types(self) -> None:
        same_element_type(self, 0, 1)
        if not dtypes.is_float(self.src.type.element_type):
            raise VerifyException(f"needs a float element type, got {self.src.type.element_type}")

    def kernel(self, a) -> Kernel:
        fn = self.FN

        def run(x: np.ndarray, out: np.ndarray) -> None:
            np.copyto(out, fn(_widened(x)), casting="unsafe")

        return run


class VSimpleUnaryOp(VUnaryOp):
    """dst = FN(src) on the stored type directly (exact in any precision)."""

    COST: ClassVar[str] = "unary"

    def check_types(self) -> None:
        same_element_type(self, 0, 1)

    def kernel(self, a) -> Kernel:
        fn = self.FN

        def run(x: np.ndarray, out: np.ndarray) -> None:
            fn(x, out=out)

        return run


def _rsqrt(x: np.ndarray) -> np.ndarray:
    return 1.0 / np.sqrt(x)


def _reciprocal(x: np.ndarray) -> np.ndarray:
    return 1.0 / x


def _relu(x: np.ndarray, out: np.ndarray) -> None:
    np.maximum(x, 0, out=out)


def _copy(x: np.ndarray, out: np.ndarray) -> None:
    np.copyto(out, x)


def _define(base: type, class_name: str, name: str, cost: str | None = None, fn: Callable | None = None) -> type:
    namespace = {"name": name, "__module__": __name__, "__qualname__": class_name, "__annotations__": {}}
    if cost is not None:
        namespace["COST"] = cost
        namespace["__annotations__"]["COST"] = "ClassVar[str]"
    if fn is not None:
        namespace["FN"] = staticmethod(fn)
    return irdl_op_definition(type(class_name, (base,), namespace))


VAddOp = _define(VBinaryOp, "VAddOp", "npu.vadd", "binary", np.add)
VSubOp = _define(VBinaryOp, "VSubOp", "npu.vsub", "binary", np.subtract)
VMulOp = _define(VBinaryOp, "VMulOp", "npu.vmul", "binary", np.multiply)
VDivOp = _define(VBinaryOp, "VDivOp", "npu.vdiv", "divide", np.divide)
VMaxOp = _define(VBinaryOp, "VMaxOp", "npu.vmax", "binary", np.maximum)
VMinOp = _define(VBinaryOp, "VMinOp", "npu.vmin", "binary", np.minimum)



@irdl_op_definition
class VMlaOp(TwoSourcesToDestination):
    """dst = a * b + dst: the multiply-accumulate (Ascend C's MulAddDst, the `vmla`
    instruction). The product is rounded to the element type, then the sum, so
    it computes exactly what a `vmul` into a scratch tile and a `vadd` into dst
    compute, in one pass over the operands (a convolution's taps, one per window
    offset, each add into one accumulator). Cost: a binary-class pass [EST]."""

    name = "npu.vmla"

    COST: ClassVar[str] = "binary"

    def accesses(self, a):
        *sources, dst = super().accesses(a)
        return [*sources, Access(dst.operand, dst.pattern, reads=True, writes=True)]

    def kernel(self, a) -> Kernel:
        def run(x: np.ndarray, y: np.ndarray, out: np.ndarray) -> None:
            np.add(out, np.multiply(x, y), out=out)

        return run


class VBitwiseOp(VBinaryOp):
    """dst = FN(a, b) bit by bit, on integers of one type."""

    def check_types(self) -> None:
        super().check_types()
        if not dtypes.is_integer(self.dst.type.element_type):
            raise VerifyException(f"needs an integer element type, got {self.dst.type.element_type}")


# Bitwise logic and shifts: one binary-class pass each [EST] (Ascend C's And / Or /
# ShiftLeft / ShiftRight are single vector instructions; Xor is costed the same).
VAndOp = _define(VBitwiseOp, "VAndOp", "npu.vand", "binary", np.bitwise_and)
VOrOp = _define(VBitwiseOp, "VOrOp", "npu.vor", "binary", np.bitwise_or)
VXorOp = _define(VBitwiseOp, "VXorOp", "npu.vxor", "binary", np.bitwise_xor)
VShlOp = _define(VBitwiseOp, "VShlOp", "npu.vshl", "binary", np.left_shift)
VShrOp = _define(VBitwiseOp, "VShrOp", "npu.vshr", "binary", np.right_shift)
BITWISE_OPS = (VAndOp, VOrOp, VXorOp, VShlOp, VShrOp)

VAddsOp = _define(VScalarOp, "VAddsOp", "npu.vadds", "scalar", np.add)
VMulsOp = _define(VScalarOp, "VMulsOp", "npu.vmuls", "scalar", np.multiply)
VMaxsOp = _define(VScalarOp, "VMaxsOp", "npu.vmaxs", "scalar", np.maximum)
VMinsOp = _define(VScalarOp, "VMinsOp", "npu.vmins", "scalar", np.minimum)

VExpOp = _define(VUnaryOp, "VExpOp", "npu.vexp", "transcendental", np.exp)
VLnOp = _define(VUnaryOp, "VLnOp", "npu.vln", "transcendental", np.log)
VSqrtOp = _define(VUnaryOp, "VSqrtOp", "npu.vsqrt", "transcendental", np.sqrt)
VRsqrtOp = _define(VUnaryOp, "VRsqrtOp", "npu.vrsqrt", "transcendental", _rsqrt)
VRecOp = _define(VUnaryOp, "VRecOp", "npu.vrec", "divide", _reciprocal)
VTanhOp = _define(VUnaryOp, "VTanhOp", "npu.vtanh", "transcendental", np.tanh)
VSigmoidOp = _define(VUnaryOp, "VSigmoidOp", "npu.vsigmoid", "transcendental", numeric.sigmoid)
VErfOp = _define(VUnaryOp, "VErfOp", "npu.verf", "transcendental", numeric.erf)
# Trigonometric and hyperbolic functions: one instruction each, at the transcendental
# class's cost [EST] (Ascend C builds them from polynomial steps in the vector unit;
# the simulator charges them as one transcendental pass).
VSinOp = _define(VUnaryOp, "VSinOp", "npu.vsin", "transcendental", np.sin)
VCosOp = _define(VUnaryOp, "VCosOp", "npu.vcos", "transcendental", np.cos)
VTanOp = _define(VUnaryOp, "VTanOp", "npu.vtan", "transcendental", np.tan)
VAsinOp = _define(VUnaryOp, "VAsinOp", "npu.vasin", "transcendental", np.arcsin)
VAcosOp = _define(VUnaryOp, "VAcosOp", "npu.vacos", "transcendental", np.arccos)
VAtanOp = _define(VUnaryOp, "VAtanOp", "npu.vatan", "transcendental", np.arctan)
VSinhOp = _define(VUnaryOp, "VSinhOp", "npu.vsinh", "transcendental", np.sinh)
VCoshOp = _define(VUnaryOp, "VCoshOp", "npu.vcosh", "transcendental", np.cosh)
VAsinhOp = _define(VUnaryOp, "VAsinhOp", "npu.vasinh", "transcendental", np.arcsinh)
VAcoshOp = _define(VUnaryOp, "VAcoshOp", "npu.vacosh", "transcendental", np.arccosh)
VAtanhOp = _define(VUnaryOp, "VAtanhOp", "npu.vatanh", "transcendental", np.arctanh)
TRIGONOMETRIC_OPS = (VSinOp, VCosOp, VTanOp, VAsinOp, VAcosOp, VAtanOp, VSinhOp, VCoshOp, VAsinhOp, VAcoshOp, VAtanhOp)
VReluOp = _define(VSimpleUnaryOp, "VReluOp", "npu.vrelu", "unary", _relu)
VAbsOp = _define(VSimpleUnaryOp, "VAbsOp", "npu.vabs", "unary", np.abs)
VCopyOp = _define(VSimpleUnaryOp, "VCopyOp", "npu.vcopy", "data_movement", _copy)


@irdl_op_definition
class VNotOp(SourceToDestination):
    """dst = ~src, the bitwise complement of integers (Ascend C's Not)."""

    name = "npu.vnot"

    COST: ClassVar[str] = "unary"

    def check_types(self) -> None:
        same_element_type(self, 0, 1)
        if not dtypes.is_integer(self.src.type.element_type):
            raise VerifyException(f"needs an integer element type, got {self.src.type.element_type}")

    def kernel(self, a) -> Kernel:
        def run(x: np.ndarray, out: np.ndarray) -> None:
            np.invert(x, out=out)

        return run


@irdl_op_definition
class VCastOp(SourceToDestination):
    """dst = src converted to dst's element type (`core/conversion.py`, ONNX Cast's
    rules): a float becomes an integer (or an f8E8M0FNU power of two) rounded by
    `round`, integers wrap, floats round to nearest even; `saturate` clamps
    out-of-range values (infinities too) to the largest finite of a float8
    destination instead of making them inf / NaN."""

    name = "npu.vcast"


    round = field(Kind.STR, "rint", ROUNDINGS)
    saturate = field(Kind.BOOL, False)

    COST: ClassVar[str] = "unary"

    def check_types(self) -> None:
        pass  # any element types: that is what a conversion is for

    def check_operands(self, a) -> None:
        super().check_operands(a)
        if a.saturate and not dtypes.is_float8(self.dst.type.element_type):
            raise VerifyException(f"'saturate' needs a float8 destination, got {self.dst.type.element_type}")

    def kernel(self, a) -> Kernel:
        rounding, saturate = a.round, a.saturate

        def run(x: np.ndarray, out: np.ndarray) -> None:
            np.copyto(out, conversion.convert(_widened(x), out.dtype, rounding, saturate), casting="unsafe")

        return run


@irdl_op_definition
class VDupOp(VectorOp):
    """dst = value everywhere (Duplicate)."""

    name = "npu.vdup"

    dst = operand_def(MemRefType)
    dst_offset = operand_def(IndexType)

    value = field(Kind.FLOAT)

    COST: ClassVar[str] = "data_movement"

    def kernel(self, a) -> Kernel:
        value = _immediate(a.value, self.dst.type.element_type)

        def run(out: np.ndarray) -> None:
            out[...] = value

        return run


class VReduceOp(SourceToDestination):
    """dst[r] = FN over the row r of src: one result per row (dst row stride, default 1)."""


    COST: ClassVar[str] = "reduce"
    FN = staticmethod(np.sum)

    def default_strides(self, a):
        return [a.cols, 1]

    def destination_pattern(self, a, row_stride):
        return Strided(a.rows, 1, row_stride)

    def kernel(self, a) -> Kernel:
        fn = self.FN

        def run(x: np.ndarray, out: np.ndarray) -> None:
            np.copyto(out, fn(_widened(x), axis=1, keepdims=True), casting="unsafe")

        return run


VReduceSumOp = _define(VReduceOp, "VReduceSumOp", "npu.vreduce_sum", "reduce", np.sum)
VReduceMaxOp = _define(VReduceOp, "VReduceMaxOp", "npu.vreduce_max", "reduce", np.max)
VReduceMinOp = _define(VReduceOp, "VReduceMinOp", "npu.vreduce_min", "reduce", np.min)


def _check_mask(op: VectorOp, n: int) -> None:
    t = op.operands[op.buffer_operands()[n]].type.element_type
    if t != i1:
        raise VerifyException(f"the mask (operand #{n}) must be i1, got {t}")


@irdl_op_definition
class VCmpOp(TwoSourcesToDestination):
    """mask = a <cmp> b (i1 destination)."""

    name = "npu.vcmp"


    cmp = field(Kind.STR, choices=tuple(CMP_FNS))

    COST: ClassVar[str] = "data_movement"

    def check_types(self) -> None:
        same_element_type(self, 0, 1)
        _check_mask(self, 2)

    def kernel(self, a) -> Kernel:
        fn = CMP_FNS[a.cmp]

        def run(x: np.ndarray, y: np.ndarray, out: np.ndarray) -> None:
            fn(x, y, out=out)

        return run


@irdl_op_definition
class VCmpsOp(SourceToDestination):
    """mask = src <cmp> scalar (i1 destination)."""

    name = "npu.vcmps"


    cmp = field(Kind.STR, choices=tuple(CMP_FNS))
    scalar = field(Kind.FLOAT)

    COST: ClassVar[str] = "data_movement"

    def check_types(self) -> None:
        _check_mask(self, 1)

    def kernel(self, a) -> Kernel:
        fn = CMP_FNS[a.cmp]
        scalar = _immediate(a.scalar, self.src.type.element_type)

        def run(x: np.ndarray, out: np.ndarray) -> None:
            fn(x, scalar, out=out)

        return run


@irdl_op_definition
class VSelOp(VectorOp):
    """dst = mask ? a : b."""

    name = "npu.vsel"

    mask = operand_def(MemRefType)
    mask_offset = operand_def(IndexType)
    lhs = operand_def(MemRefType)
    lhs_offset = operand_def(IndexType)
    rhs = operand_def(MemRefType)
    rhs_offset = operand_def(IndexType)
    dst = operand_def(MemRefType)
    dst_offset = operand_def(IndexType)

    COST: ClassVar[str] = "data_movement"

    def check_types(self) -> None:
        _check_mask(self, 0)
        same_element_type(self, 1, 2, 3)

    def kernel(self, a) -> Kernel:
        def run(m: np.ndarray, x: np.ndarray, y: np.ndarray, out: np.ndarray) -> None:
            np.copyto(out, np.where(m, x, y))

        return run


@irdl_op_definition
class VTransposeOp(SourceToDestination):
    """dst (cols x rows, row stride default rows) = src (rows x cols) transposed."""

    name = "npu.vtranspose"


    COST: ClassVar[str] = "data_movement"

    def default_strides(self, a):
        return [a.cols, a.rows]

    def destination_pattern(self, a, row_stride):
        return Strided(a.cols, a.rows, row_stride)

    def kernel(self, a) -> Kernel:
        def run(x: np.ndarray, out: np.ndarray) -> None:
            out[...] = x.T

        return run


VECTOR_OPS = (
    VAddOp,
    VSubOp,
    VMulOp,
    VMlaOp,
    VDivOp,
    VMaxOp,
    VMinOp,
    *BITWISE_OPS,
    VNotOp,
    VAddsOp,
    VMulsOp,
    VMaxsOp,
    VMinsOp,
    VExpOp,
    VLnOp,
    VSqrtOp,
    VRsqrtOp,
    VRecOp,
    VTanhOp,
    VSigmoidOp,
    VErfOp,
    *TRIGONOMETRIC_OPS,
    VReluOp,
    VAbsOp,
    VCopyOp,
    VCastOp,
    VDupOp,
    VReduceSumOp,
    VReduceMaxOp,
    VReduceMinOp,
    VCmpOp,
    VCmpsOp,
    VSelOp,
    VTransposeOp,
)
