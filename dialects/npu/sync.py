"""Synchronisation between the pipes of one core.

    npu.set_flag {src = "MTE2", dst = "V", event = 0}    // on MTE2: after its earlier work
    npu.wait_flag {src = "MTE2", dst = "V", event = 0}   // on V: blocks V until that flag fired
    npu.pipe_barrier {pipe = "V"}                         // V drains before its next instruction
    npu.pipe_barrier {pipe = "ALL"}                       // every pipe drains; the scalar unit waits
    npu.sync_all                                          // every block of the launch gets here first

A flag (src, dst, event) counts: the k-th `wait_flag` consumes the k-th
`set_flag` of the same triple, whatever their order in the program, so the
ordering they create is a property of the program, not of the timing. Flags must
be balanced when the kernel ends. Event ids run from 0 to the preset's
`sync.event_ids - 1` per pipe pair.

Within one pipe instructions run in order, so same-pipe dependencies need no
sync; `pipe_barrier` on one pipe costs the preset's barrier cost once the pipe
has drained. `pipe_barrier {pipe = "ALL"}` orders everything before it (on any
pipe) before everything after it.

`sync_all` is the one synchronisation between cores: Ascend C's `SyncAll`, a
barrier of all the blocks of a launch. Each block drains every pipe (as
`pipe_barrier ALL`), and none goes on until every block of the launch has got
there, so whatever any block wrote to GM before it is visible to every block
after it. It splits a kernel into phases (`npu-merge-launches` joins launches
that way), so it stands at the top level of the kernel body, where every block
meets it the same number of times; and every block of the launch must be
resident at once (block_dim at most the core count), or the first ones would
wait for blocks that cannot start.
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


@irdl_op_definition
class SyncAllOp(InstructionOp):
    name = "npu.sync_all"

    def pipe_name(self) -> str:
        return ALL_PIPES

    def check_operands(self, a):
        parent = self.parent_op()
        if parent is None or parent.name != "npu.kernel":
            raise VerifyException(
                "must stand at the top level of the npu.kernel body (every block must meet it the same number "
                "of times), not inside a loop or a branch"
            )


SYNC_OPS = (SetFlagOp, WaitFlagOp, PipeBarrierOp, SyncAllOp)
