"""Data movement between address spaces, each on the pipe that owns the path.

    npu.copy %src[%so], %dst[%do] {rows = 16, cols = 64, strides = [512, 64]}
    npu.load_l0 %l1[%o], %l0a[%c0] {rows = 64, cols = 64, layout = "nz", transpose = false}
    npu.fixpipe %l0c[%c0], %out[%o] {rows = 64, cols = 64, strides = [64, 256], relu = true}
    %i = npu.read_scalar %ub[%o] : index

`npu.copy` moves a (rows x cols) tile, each side with its own row stride (in
elements); the pipe follows from the two spaces (legal: gm->l1, gm->ub on MTE2;
l1->ub on MTE1, coupled core; ub->gm, ub->l1 on MTE3). Element types must agree:
a copy never converts.

`npu.load_l0` (MTE1) is the cube's re-layout: it reads a (rows x cols) tile from
L1 in `nd` (row-major with row stride strides[0]) or `nz` (FRACTAL_NZ, block
stride strides[0]) layout and writes it, optionally transposed, into L0A or L0B
as a logical row-major matrix (row stride strides[1]).

`npu.fixpipe` moves a (rows x cols) tile of L0C (row stride strides[0]) to GM
(FIX pipe) or to UB (V pipe, coupled core), applying ReLU if asked and
converting to the destination's element type (f32 -> f16 rounds to nearest), in
`nd` (row stride strides[1]) or `nz` (block stride strides[1]) layout.

`npu.read_scalar` (S pipe) reads one element of UB or GM into an index value
(floats truncate toward zero), e.g. a gather index.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import IndexType, MemRefType, f16, f32, i32
from xdsl.irdl import irdl_op_definition, operand_def, result_def
from xdsl.utils.exceptions import VerifyException

from ...core.dtypes import bf16
from ..ge.base import Kind
from .access import Fractal, Strided, fractal_to_tile, tile_to_fractal
from .base import OPTIONAL, Space, check_buffer_type, field, space_of
from .instruction import (
    Access,
    InstructionOp,
    Kernel,
    fractal_n0,
    same_element_type,
)

COPY_PIPES: dict[tuple[str, str], str] = {
    ("gm", "l1"): "MTE2",
    ("gm", "ub"): "MTE2",
    ("l1", "ub"): "MTE1",
    ("ub", "gm"): "MTE3",
    ("ub", "l1"): "MTE3",
}
"""Legal `npu.copy` paths and their pipes."""

LAYOUTS = ("nd", "nz")


def _path(src: str, dst: str) -> str:
    return f"{src}_to_{dst}"


class TransferOp(InstructionOp):
    """A tile moved from buffer operand 0 to buffer operand 1 along one data path."""

    src = operand_def(MemRefType)
    src_offset = operand_def(IndexType)
    dst = operand_def(MemRefType)
    dst_offset = operand_def(IndexType)

    rows = field(Kind.INT, 1)
    cols = field(Kind.INT)
    strides = field(Kind.INTS, OPTIONAL)

    def spaces(self) -> tuple[str, str]:
        return str(space_of(self.src.type)), str(space_of(self.dst.type))

    def path(self) -> str:
        """The data path (a `paths.*` entry of the hardware preset)."""
        return _path(*self.spaces())


@irdl_op_definition
class CopyOp(TransferOp):
    name = "npu.copy"

    def pipe_name(self) -> str:
        return COPY_PIPES[self.spaces()]

    def default_strides(self, a):
        return [a.cols, a.cols]

    def check_operands(self, a):
        check_buffer_type(self.src.type, "source", list(Space))
        check_buffer_type(self.dst.type, "destination", list(Space))
        if self.spaces() not in COPY_PIPES:
            legal = ", ".join(f"{s}->{d}" for s, d in COPY_PIPES)
            raise VerifyException(f"cannot copy {'->'.join(self.spaces())} (legal paths: {legal}; l1->l0a/l0b is npu.load_l0, l0c->gm/ub is npu.fixpipe)")
        same_element_type(self, 0, 1)

    def accesses(self, a):
        s, d = self.row_strides(a)
        return [
            Access(0, Strided(a.rows, a.cols, s), reads=True, writes=False),
            Access(2, Strided(a.rows, a.cols, d), reads=False, writes=True),
        ]

    def kernel(self, a) -> Kernel:
        def copy(src: np.ndarray, dst: np.ndarray) -> None:
            dst[...] = src

        return copy


@irdl_op_definition
class LoadL0Op(TransferOp):
    name = "npu.load_l0"

    layout = field(Kind.STR, "nd", LAYOUTS)
    transpose = field(Kind.BOOL, False)
    block = field(Kind.INT, 0)
    """nz: columns per source block (0: the type's fractal width); fp32 images and
    FRACTAL_Z weights keep their 8-column (32-byte) blocks in L1."""

    def pipe_name(self) -> str:
        return "MTE1"

    def _dst_shape(self, a) -> tuple[int, int]:
        return (a.cols, a.rows) if a.transpose else (a.rows, a.cols)

    def _n0(self, a) -> int:
        return a.block or fractal_n0(self.src.type.element_type)

    def default_strides(self, a):
        src = a.rows * self._n0(a) if a.layout == "nz" else a.cols
        return [src, self._dst_shape(a)[1]]

    def check_operands(self, a):
        check_buffer_type(self.src.type, "source", [Space.L1])
        check_buffer_type(self.dst.type, "destination", [Space.L0A, Space.L0B])
        same_element_type(self, 0, 1)

    def accesses(self, a):
        s, d = self.row_strides(a)
        if a.layout == "nz":
            source = Fractal(a.rows, a.cols, s, self._n0(a))
        else:
            source = Strided(a.rows, a.cols, s)
        rows, cols = self._dst_shape(a)
        return [
            Access(0, source, reads=True, writes=False),
            Access(2, Strided(rows, cols, d), reads=False, writes=True),
        ]

    def kernel(self, a) -> Kernel:
        read = fractal_to_tile if a.layout == "nz" else (lambda view: view)
        transpose = a.transpose

        def load(src: np.ndarray, dst: np.ndarray) -> None:
            tile = read(src)
            dst[...] = tile.T if transpose else tile

        return load


FIXPIPE_CASTS = {f32: (f32, f16, bf16), i32: (i32,)}
"""L0C element type -> the destination element types the FixPipe converts to
(rounding to nearest even, as the 910B's FixPipe does for f16 and bf16)."""


@irdl_op_definition
class FixpipeOp(TransferOp):
    name = "npu.fixpipe"

    layout = field(Kind.STR, "nd", LAYOUTS)
    relu = field(Kind.BOOL, False)

    def pipe_name(self) -> str:
        return "FIX" if self.spaces()[1] == "gm" else "V"

    def default_strides(self, a):
        if a.layout == "nz":
            return [a.cols, a.rows * fractal_n0(self.dst.type.element_type)]
        return [a.cols, a.cols]

    def check_operands(self, a):
        check_buffer_type(self.src.type, "source", [Space.L0C])
        check_buffer_type(self.dst.type, "destination", [Space.GM, Space.UB])
        src, dst = self.src.type.element_type, self.dst.type.element_type
        allowed = FIXPIPE_CASTS.get(src)
        if allowed is None:
            raise VerifyException(f"L0C holds f32 or i32 results, got {src}")
        if dst not in allowed:
            raise VerifyException(f"cannot convert {src} to {dst} (allowed: {', '.join(str(t) for t in allowed)})")

    def accesses(self, a):
        s, d = self.row_strides(a)
        if a.layout == "nz":
            target = Fractal(a.rows, a.cols, d, fractal_n0(self.dst.type.element_type))
        else:
            target = Strided(a.rows, a.cols, d)
        return [
            Access(0, Strided(a.rows, a.cols, s), reads=True, writes=False),
            Access(2, target, reads=False, writes=True),
        ]

    def kernel(self, a) -> Kernel:
        relu = a.relu
        n0 = fractal_n0(self.dst.type.element_type)
        nz = a.layout == "nz"

        def fixpipe(src: np.ndarray, dst: np.ndarray) -> None:
            value = np.maximum(src, 0) if relu else src
            if nz:
                value = tile_to_fractal(value, n0)
            np.copyto(dst, value, casting="unsafe")

        return fixpipe


@irdl_op_definition
class ReadScalarOp(InstructionOp):
    name = "npu.read_scalar"

    source = operand_def(MemRefType)
    offset = operand_def(IndexType)
    result = result_def(IndexType)

    def pipe_name(self) -> str:
        return "S"

    @classmethod
    def default_result_type(cls):
        return IndexType()

    def default_strides(self, a):
        return [1]

    def check_operands(self, a):
        check_buffer_type(self.source.type, "operand", [Space.UB, Space.GM])
        if not isinstance(self.result.type, IndexType):
            raise VerifyException(f"the result must be index, got {self.result.type}")

    def accesses(self, a):
        return [Access(0, Strided(1, 1, 1), reads=True, writes=False)]

    def kernel(self, a) -> Kernel:
        def read(view: np.ndarray) -> int:
            return int(view[0, 0])

        return read


MEMORY_OPS = (CopyOp, LoadL0Op, FixpipeOp, ReadScalarOp)

