"""`npu-serialize`: a `pipe_barrier ALL` after every instruction.

The slowest correct synchronisation there is: every pipe drains before the next
instruction issues, so no two instructions ever overlap and no race is possible.
It is the baseline `npu-insert-sync` is measured against, and a debugging aid: if
a kernel computes the wrong numbers with it, the bug is not in the sync.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from ...core.passes import record_statistic
from ...dialects import npu


@dataclass(frozen=True)
class SerializePass(ModulePass):
    """A pipe_barrier ALL after every npu instruction (correct, slow; the baseline for npu-insert-sync)."""

    name = "npu-serialize"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in op.walk():
            if not isinstance(kernel, npu.KernelOp):
                continue
            instructions = [
                i
                for i in kernel.walk()
                if isinstance(i, npu.InstructionOp) and not isinstance(i, npu.SYNC_OPS)
            ]
            for instruction in instructions:
                instruction.parent_block().insert_op_after(npu.PipeBarrierOp.new(pipe=npu.ALL_PIPES), instruction)
            record_statistic(self.name, "barriers inserted", len(instructions))
