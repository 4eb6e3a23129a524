"""`npu-plan-gm`: byte offsets of the host plan's intermediate GM buffers in one arena.

Without reuse every `npu.gm_buffer` gets bytes of its own, one after another at
the GM alignment: the plan of eager mode, and the baseline memory reuse is
measured against. The module records the arena size (`npu.gm_arena_bytes`).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.passes import ModulePass

from ...core.passes import record_statistic
from ...dialects import npu
from ...dialects.ge.base import Kind, to_attribute
from ...simulator.hardware import load_preset

GM_BUFFER_ALIGNMENT = 512
"""Bytes; GE aligns every GM tensor to 512 bytes."""


@dataclass(frozen=True)
class PlanGmPass(ModulePass):
    """Place the host plan's GM intermediates in one arena (without reuse for now)."""

    name = "npu-plan-gm"

    hw: str = "ascend910"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        alignment = max(GM_BUFFER_ALIGNMENT, load_preset(self.hw).alignment["gm"])
        end = 0
        for buffer in op.walk():
            if isinstance(buffer, npu.GmBufferOp):
                buffer.properties["offset"] = to_attribute(Kind.INT, end)
                end += -(-npu.buffer_bytes(buffer.result.type) // alignment) * alignment
                record_statistic(self.name, "buffers placed")
        op.attributes[npu.ARENA_ATTR] = IntegerAttr(end, i64)
        record_statistic(self.name, "arena bytes", end)
