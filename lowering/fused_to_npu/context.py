"""What a kernel template is given: the op, its GM tensors, a builder, the hardware.

A template is a function `lower(op, k: KernelContext) -> None` registered for
one or more op classes with `@kernel_for(...)`. It writes the kernel body with
`k.b` (a `KernelBuilder` whose parameters are the op's inputs then its outputs,
as GM memrefs) and sets `k.block_dim`. `k.explain(...)` records why it tiled
the way it did; `ge-to-npu{debug=true}` prints it.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Operation, SSAValue

from ...core import dtypes
from ...core.diagnostics import NoUnitForTypeError, op_error
from ...dialects.ge import ConstOp
from ...dialects.ge.formats import Format, format_of, physical_shape
from ...simulator.hardware import HardwarePreset
from .kernel_builder import KernelBuilder


@dataclass(frozen=True)
class GmTensor:
    """A tensor as a kernel sees it: a GM memref parameter holding the tensor's
    physical image, and the logical type (shape, element type, format)."""

    value: SSAValue
    type: TensorType
    source: SSAValue  # the graph-level value (to find constants)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.type.get_shape())

    @property
    def element_type(self) -> Attribute:
        return self.type.element_type

    @property
    def itemsize(self) -> int:
        return dtypes.byte_width(self.element_type)

    @property
    def format(self) -> Format:
        return format_of(self.type)

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def physical_shape(self) -> tuple[int, ...]:
        return physical_shape(self.shape, self.format, self.element_type)

    @property
    def physical_numel(self) -> int:
        return math.prod(self.physical_shape)

    @property
    def is_padded(self) -> bool:
        return self.physical_numel != self.numel

    @property
    def is_constant(self) -> bool:
        """Whether the graph computes it from nothing (a ge.const)."""
        return isinstance(self.source.owner, ConstOp)

    def constant(self) -> np.ndarray | None:
        """The value if the graph computes it from nothing (a ge.const)."""
        return self.source.owner.as_array() if self.is_constant else None

    def splat(self) -> float | None:
        """The single value of a constant whose elements are all equal."""
        owner = self.source.owner
        if not isinstance(owner, ConstOp) or not (owner.is_splat() or self.numel == 1):
            return None
        return float(np.asarray(owner.as_array()).reshape(-1)[0])


def named(op, tensors: list[GmTensor]) -> SimpleNamespace:
    """GM tensors by operand name (None for absent optional operands)."""
    definition = [n for n, _ in op.get_irdl_definition().operands]
    names = op.present_operand_names() if hasattr(op, "present_operand_names") else definition
    values = dict.fromkeys(definition)
    values.update(zip(names, tensors))
    return SimpleNamespace(**values)


@dataclass
class KernelContext:
    op: Operation
    b: KernelBuilder
    inputs: list[GmTensor]
    outputs: list[GmTensor]
    hw: HardwarePreset
    block_dim: int = 1
    notes: list[str] = field(default_factory=list)
    tiling_choices: int = 0  # tilings the template chose among (`npu.tiling_rank`; cube kernels)
    # The kernel will be a later phase of a merged kernel (`ge-to-npu{merge=true}`),
    # whose first loads of constants npu-prefetch-constants moves before its barrier.
    after_a_barrier: bool = False
    # HBM cycles the phase before leaves idle for the first B chunk prefetched
    # (`tiling.Prefetched`: `prefetch_room.tiling_room` or `prefetch_constants.hbm_room`
    # of the kernel launched before this one).
    prefetch_room: float = 0.0
    # and the MTE2 cycles per core it leaves idle (`tiling.Prefetched.port`:
    # `prefetch_constants.port_room` of that kernel's instructions).
    prefetch_port_room: float = 0.0
    # The cube kernel's tiling (`prefetch_room.tiling_room`: the room it leaves the next phase).
    tiling: object = None

    def explain(self, text: str) -> None:
        self.notes.append(text)

    def unsupported(self, why: str):
        """An error for a case the template does not handle (raise it)."""
        return op_error(self.op, f"has no NPU kernel for this case: {why}")

    def no_unit_for(self, element_type: Attribute, why: str) -> NoUnitForTypeError:
        """An error for an element type no unit of the target computes this op in
        (raise it): a deliberate refusal, not a gap of the template."""
        return NoUnitForTypeError(self.op, element_type, why)


KernelTemplate = Callable[[Operation, KernelContext], None]

def print_notes(kernel_name: str, notes: list[str]) -> None:
    for note in notes:
        print(f"[ge-to-npu] @{kernel_name}: {note}", file=sys.stderr)
