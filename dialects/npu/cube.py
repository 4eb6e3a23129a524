"""The cube unit (M pipe): one matrix multiply-accumulate on the L0 buffers.

    npu.mmad %a[%c0], %b[%c0], %c[%c0] {m = 64, n = 64, k = 64, accumulate = true}

L0A holds A as a logical row-major (m x k) matrix (row stride strides[0], default
k), L0B holds B (k x n, row stride strides[1], default n), L0C holds C (m x n,
row stride strides[2], default n). `C = A @ B`, or `C += A @ B` with
`accumulate = true`. Inputs f16, bf16 or f32 accumulate in f32; i8 accumulates in i32.

Cost (the simulator's): cube startup + ceil(m/16) * ceil(n/16) * ceil(k/16)
blocks x the preset's cycles per 16x16x16 block for the input type.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import IndexType, MemRefType, f16, f32, i8, i32
from xdsl.irdl import irdl_op_definition, operand_def
from xdsl.utils.exceptions import VerifyException

from ...core.dtypes import bf16

from ..ge.base import Kind
from .access import Strided
from .base import OPTIONAL, Space, check_buffer_type, field
from .instruction import Access, InstructionOp, Kernel

MMAD_TYPES = {f16: ("fp16", f32), bf16: ("fp16", f32), f32: ("fp32", f32), i8: ("int8", i32)}
"""Input element type -> (the preset's cube rate key, the L0C accumulator type). bf16
multiplies at the f16 rate (the 910B cube takes both 16-bit float formats)."""


@irdl_op_definition
class MmadOp(InstructionOp):
    name = "npu.mmad"

    a = operand_def(MemRefType)
    a_offset = operand_def(IndexType)
    b = operand_def(MemRefType)
    b_offset = operand_def(IndexType)
    c = operand_def(MemRefType)
    c_offset = operand_def(IndexType)

    m = field(Kind.INT)
    n = field(Kind.INT)
    k = field(Kind.INT)
    accumulate = field(Kind.BOOL, False)
    strides = field(Kind.INTS, OPTIONAL)

    def pipe_name(self) -> str:
        return "M"

    def rate_key(self) -> str:
        """Which `cube.<key>_cycles_per_block` of the preset applies."""
        return MMAD_TYPES[self.a.type.element_type][0]

    def default_strides(self, a):
        return [a.k, a.n, a.n]

    def check_operands(self, a):
        check_buffer_type(self.a.type, "A", [Space.L0A])
        check_buffer_type(self.b.type, "B", [Space.L0B])
        check_buffer_type(self.c.type, "C", [Space.L0C])
        ta, tb, tc = self.a.type.element_type, self.b.type.element_type, self.c.type.element_type
        if ta != tb or ta not in MMAD_TYPES:
            raise VerifyException(f"A and B must both be f16, bf16, f32 or i8, got {ta} and {tb}")
        if tc != MMAD_TYPES[ta][1]:
            raise VerifyException(f"C must be {MMAD_TYPES[ta][1]} for {ta} inputs, got {tc}")

    def accesses(self, a):
        sa, sb, sc = self.row_strides(a)
        return [
            Access(0, Strided(a.m, a.k, sa), reads=True, writes=False),
            Access(2, Strided(a.k, a.n, sb), reads=True, writes=False),
            Access(4, Strided(a.m, a.n, sc), reads=a.accumulate, writes=True),
        ]

    def kernel(self, a) -> Kernel:
        accumulate = a.accumulate
        wide = np.int32 if self.c.type.element_type == i32 else np.float32

        def mmad(x: np.ndarray, y: np.ndarray, out: np.ndarray) -> None:
            product = np.matmul(x.astype(wide), y.astype(wide))
            if accumulate:
                out += product
            else:
                out[...] = product

        return mmad


CUBE_OPS = (MmadOp,)
