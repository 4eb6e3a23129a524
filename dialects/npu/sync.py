"""Synchronisation between the pipes of one core.

    npu.set_flag {src = "MTE2", dst = "V", event = 0}    // on MTE2: after its earlier work
    npu.wait_flag {src = "MTE2", dst = "V", event = 0}   // on V: blocks V until that flag fired
    npu.pipe_barrier {pipe = "V"}                         // V drains before its next instruction
    npu.pipe_barrier {pipe = "ALL"}                       // every pipe drains; the scalar unit waits

A flag (src, dst, event) counts: the k-th `wait_flag` consumes the k-th
`set_flag` of the same triple, whatever their order in the program, so the
ordering they create is a property of the program, not of the timing. Flags must
be balanced when the kernel ends. Event ids run from 0 to the preset's
`sync.event_ids - 1` per pipe pair.

Within one pipe instructions run in order, so same-pipe dependencies need no
sync; `pipe_barrier` on one pipe costs the preset's barrier cost once the pipe
has drained. `pipe_barrier {pipe = "ALL"}` orders everything before it (on any
pipe) before everything after it.
"""

from __future__ import annotations

from xdsl.irdl import irdl_op_definition
from xdsl.utils.exceptions import VerifyException

from ..ge.base import Kind
from .base import ALL_PIPES, PIPES, field
from .instruction import InstructionOp


class FlagOp(InstructionOp):
    src = field(Kind.STR, choices=PIPES)
    dst = field(Kind.STR, choices=PIPES)
    event = field(Kind.INT)

    def check_operands(self, a):
        if a.src == a.dst:
            raise VerifyException(f"a flag links two different pipes, got {a.src} -> {a.dst}")
        if a.event < 0:
            raise VerifyException(f"event id must be >= 0, got {a.event}")


@irdl_op_definition
class SetFlagOp(FlagOp):
    name = "npu.set_flag"

    def pipe_name(self) -> str:
        return self.attr_values().src


@irdl_op_definition
class WaitFlagOp(FlagOp):
    name = "npu.wait_flag"

    def pipe_name(self) -> str:
        return self.attr_values().dst


@irdl_op_definition
class PipeBarrierOp(InstructionOp):
    name = "npu.pipe_barrier"

    pipe = field(Kind.STR, choices=(*PIPES, ALL_PIPES))

    def pipe_name(self) -> str:
        return self.attr_values().pipe


SYNC_OPS = (SetFlagOp, WaitFlagOp, PipeBarrierOp)
