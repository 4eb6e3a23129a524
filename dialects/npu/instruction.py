"""The contract of an instruction: an op that a pipe of one AI core executes.

An instruction says, from its attributes alone (nothing here depends on run-time
values):

* `pipe_name()`: the pipe that executes it (`PIPES`);
* `accesses(a)`: for each buffer operand, the `Access` it makes (which operand,
  which pattern, read and/or write), in operand order;
* `kernel(a)`: its numerics, a function called with one numpy view per access
  (in that order) that writes the destination view(s) in place.

The verifier checks the operand spaces and element types (`check_operands`), the
attributes, and that every pattern fits in its buffer at offset 0. Whether it
fits at the run-time offset, and the cost of the instruction, are the
simulator's business (`simulator/npu`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace

from xdsl.dialects.builtin import IndexType, MemRefType
from xdsl.ir import Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from ...core import dtypes
from ..ge.formats import fractal_shape
from .access import Fractal, Pattern, Strided
from .base import NpuOp, element_count

Kernel = Callable[..., None]


@dataclass(frozen=True)
class Access:
    operand: int  # index of the memref in op.operands; its offset is operand + 1
    pattern: Pattern
    reads: bool
    writes: bool


def enclosing(op: Operation, name: str) -> Operation | None:
    parent = op.parent_op()
    while parent is not None and parent.name != name:
        parent = parent.parent_op()
    return parent


def require_in_kernel(op: Operation) -> None:
    if enclosing(op, "npu.kernel") is None:
        raise VerifyException("must be inside an npu.kernel")


def fractal_n0(element_type) -> int:
    """Columns per FRACTAL_NZ block for this element type (16, or 32 for 1-byte types)."""
    return fractal_shape(element_type)[1]


class InstructionOp(NpuOp):
    """Base class of the ops a pipe executes (see the module docstring)."""

    # ---- what subclasses define ----------------------------------------------------

    def pipe_name(self) -> str:
        raise NotImplementedError

    def accesses(self, a: SimpleNamespace) -> list[Access]:
        return []

    def kernel(self, a: SimpleNamespace) -> Kernel:
        raise NotImplementedError(f"{self.name} has no numerics")

    def check_operands(self, a: SimpleNamespace) -> None:
        """Spaces and element types of the operands (VerifyException if wrong)."""

    def default_strides(self, a: SimpleNamespace) -> list[int]:
        """Row strides of the buffer operands when `strides` is not given."""
        return []

    # ---- shared -----------------------------------------------------------------------

    def buffer_operands(self) -> list[int]:
        """Indices of the memref operands (each followed by its index offset)."""
        return [i for i, v in enumerate(self.operands) if isinstance(v.type, MemRefType)]

    def buffer(self, n: int) -> SSAValue:
        return self.operands[self.buffer_operands()[n]]

    def buffer_type(self, n: int) -> MemRefType:
        return self.buffer(n).type

    def row_strides(self, a: SimpleNamespace) -> list[int]:
        given = getattr(a, "strides", None)
        return list(given) if given is not None else self.default_strides(a)

    def check(self, a: SimpleNamespace) -> None:
        require_in_kernel(self)
        for i in self.buffer_operands():
            offset = self.operands[i + 1] if i + 1 < len(self.operands) else None
            if offset is None or not isinstance(offset.type, IndexType):
                raise VerifyException(f"buffer operand #{i} needs an index offset: %buffer[%offset]")
        self.check_operands(a)
        for name in ("rows", "cols", "m", "n", "k"):
            value = getattr(a, name, None)
            if value is not None and value < 1:
                raise VerifyException(f"'{name}' must be >= 1, got {value}")
        strides = self.row_strides(a)
        count = len(self.buffer_operands())
        if len(strides) != count:
            raise VerifyException(f"'strides' needs one row stride per buffer operand ({count}), got {len(strides)}")
        if any(s < 0 for s in strides):
            raise VerifyException(f"'strides' must be >= 0, got {strides}")
        for access in self.accesses(a):
            self._check_access(access)

    def _check_access(self, access: Access) -> None:
        p = access.pattern
        t = self.operands[access.operand].type
        which = f"operand #{self.buffer_operands().index(access.operand)}"
        if access.writes and isinstance(p, Strided):
            if p.col_stride != 1:
                raise VerifyException(f"{which} is written: its column stride must be 1")
            if p.rows > 1 and p.row_stride < p.cols:
                raise VerifyException(
                    f"{which} is written: its row stride {p.row_stride} must be >= its {p.cols} columns"
                )
        if isinstance(p, Fractal):
            if p.cols % p.n0:
                raise VerifyException(f"{which} in nz layout needs a multiple of {p.n0} columns, got {p.cols}")
            if p.blocks > 1 and p.block_stride < p.rows * p.n0:
                raise VerifyException(
                    f"{which} in nz layout: block stride {p.block_stride} must be >= rows x {p.n0} = {p.rows * p.n0}"
                )
        if p.span > element_count(t):
            raise VerifyException(
                f"{which} touches {p.span} elements from its offset but its buffer {t} has {element_count(t)}"
            )


def same_element_type(op: InstructionOp, *buffers: int) -> None:
    types = [op.buffer_type(n).element_type for n in buffers]
    if any(t != types[0] for t in types):
        raise VerifyException(f"operands must have one element type, got {', '.join(str(t) for t in types)}")


def require_float(op: InstructionOp, n: int) -> None:
    t = op.buffer_type(n).element_type
    if not dtypes.is_float(t):
        raise VerifyException(f"operand #{n} must have a float element type, got {t}")
