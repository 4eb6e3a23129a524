"""`npu-plan-local-memory`: byte offsets for every `npu.alloc` of a kernel.

Local buffers (L1, L0A, L0B, L0C, UB) are generated without offsets; the
simulator, like the hardware, needs them. Buffers are placed one after another
in their space at the preset's alignment. A tiling that does not fit is a
compile error naming the kernel, the space and both sizes.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from ...core.diagnostics import CompileError
from ...core.passes import record_statistic
from ...dialects import npu
from ...dialects.ge.base import Kind, to_attribute
from ...simulator.hardware import load_preset


@dataclass(frozen=True)
class PlanLocalMemoryPass(ModulePass):
    """Place every npu.alloc at a byte offset of its space (aligned, checked against the preset's capacity)."""

    name = "npu-plan-local-memory"

    hw: str = "ascend910"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        preset = load_preset(self.hw)
        for kernel in op.walk():
            if isinstance(kernel, npu.KernelOp):
                self._plan_kernel(kernel, preset)

    def _plan_kernel(self, kernel: npu.KernelOp, preset) -> None:
        used: dict[str, int] = {}
        for alloc in kernel.walk():
            if not isinstance(alloc, npu.AllocOp):
                continue
            space = str(npu.space_of(alloc.result.type))
            align = preset.alignment[space]
            offset = -(-used.get(space, 0) // align) * align
            alloc.properties["offset"] = to_attribute(Kind.INT, offset)
            used[space] = offset + npu.buffer_bytes(alloc.result.type)
            record_statistic(self.name, "buffers placed")
        for space, size in used.items():
            if size > preset.capacity(space):
                raise CompileError(
                    f"kernel @{kernel.sym_name.data} needs {size} bytes of {space.upper()}, the "
                    f"'{preset.name}' preset has {preset.capacity(space)}: its tiling does not fit",
                    kernel,
                )
