"""Synchronisation between the pipes of one core.

    npu.set_flag {src = "MTE2", dst = "V", event = 0}    // on MTE2: after its earlier work
    npu.wait_flag {src = "MTE2", dst = "V", event = 0}   // on V: blocks V until that flag fired
    npu.pipe_barrier {pipe = "V"}                         // V drains before its next instruction
    npu.pipe_barrier {pipe = "ALL"}                       // every pipe drains; the scalar unit waits
    npu.sync_all                                          // every block of the launch gets here first
    npu.sync_all_arrive                                   // the same barrier in two halves: this block is done,
    ...                                                   //   (loads of constants meanwhile)
    npu.sync_all_wait                                     //   and now waits for the others
    npu.cross_set_flag                                    // this block's phase is done (its flag count + 1)
    npu.cross_wait_flag {waits = [1, 0, 1, 1, 2, 1]}      // block 1 waits for block 0's 1st flag and block 2's

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

`sync_all_arrive` ... `sync_all_wait` is the same barrier split in two, so that a
block can do useful work while it waits for the others. At the arrive the block's
flag is stored once everything the block issued before it has completed (as at
`sync_all`), but the block goes on issuing; at the wait it stops until every
block has arrived, and everything before the wait (what was issued between the
two included) is ordered before everything after it. Between the two halves
other blocks may still be in the previous phase or already in the next one, so
what stands there must not touch GM that any phase writes: it may read only GM
arguments the kernel never writes (`npu-prefetch-constants` puts the next
phase's loads of constants there), and write only local buffers. The halves
stand at the top level of the kernel body like `sync_all`, each arrive followed
by its wait before any other barrier; the simulator checks what is read between
them.

`cross_set_flag` ... `cross_wait_flag` is a barrier narrowed to the blocks that
matter (Ascend C's `CrossCoreSetFlag` / `CrossCoreWaitFlag`, GE SuperKernel's
early start): at the set, once everything the block issued before it has
completed, the block stores its flag to GM (its count of sets goes up by one),
without holding its scalar unit (as at `sync_all_arrive`); at the wait, block c
drains its pipes and stops until every producer block b listed for it has set
its flag at least n times, `waits` holding the triples (c, b, n) flat. A block
not listed as a consumer waits for nobody: it starts its next phase as soon as
its own pipes have drained. Everything block b issued before its n-th set is
then ordered before everything block c issues after the wait, and nothing else
is: a GM access of one block that no chain of sets, waits and barriers orders
against a conflicting access of another is a race, which the simulator's race
checker reports. Counts are known statically: n is at most the number of
`cross_set_flag` before the wait in the kernel body. Costs are those of the
SyncAll flags (a 32-byte store and a poll read per wait, `sync_all_transfers`):
the same GM workspace mechanism, read for fewer flags.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.ir import Operation
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


class KernelBarrierOp(InstructionOp):
    """A barrier of all the blocks of a launch, or one half of it: it stands at the
    top level of the npu.kernel body, where every block meets it the same number
    of times."""

    VERIFIER_READS_OTHER_OPS: ClassVar[bool] = True  # its pairing: the barriers beside it (core/reverify.py)

    def pipe_name(self) -> str:
        return ALL_PIPES

    def check_operands(self, a):
        parent = self.parent_op()
        if parent is None or parent.name != "npu.kernel":
            raise VerifyException(
                "must stand at the top level of the npu.kernel body (every block must meet it the same number "
                "of times), not inside a loop or a branch"
            )
        self.check_pairing()

    def check_pairing(self) -> None:
        pass

    def neighbour_barrier(self, step: int) -> Operation | None:
        """The nearest barrier op before (step -1) or after (step 1) this one in the
        kernel body, or None."""
        op = self.prev_op if step < 0 else self.next_op
        while op is not None and not isinstance(op, KernelBarrierOp):
            op = op.prev_op if step < 0 else op.next_op
        return op


@irdl_op_definition
class SyncAllOp(KernelBarrierOp):
    name = "npu.sync_all"


@irdl_op_definition
class SyncAllArriveOp(KernelBarrierOp):
    name = "npu.sync_all_arrive"

    def check_pairing(self) -> None:
        if not isinstance(self.neighbour_barrier(1), SyncAllWaitOp):
            raise VerifyException("must be followed by its 'npu.sync_all_wait' before any other barrier")


@irdl_op_definition
class SyncAllWaitOp(KernelBarrierOp):
    name = "npu.sync_all_wait"

    def check_pairing(self) -> None:
        if not isinstance(self.neighbour_barrier(-1), SyncAllArriveOp):
            raise VerifyException("must follow its 'npu.sync_all_arrive', with no other barrier between them")


@irdl_op_definition
class CrossSetFlagOp(KernelBarrierOp):
    name = "npu.cross_set_flag"


@irdl_op_definition
class CrossWaitFlagOp(KernelBarrierOp):
    name = "npu.cross_wait_flag"

    waits = field(Kind.INTS)

    def check_pairing(self) -> None:
        triples = self.triples()
        if len(self.attr_values().waits) % 3:
            raise VerifyException("'waits' holds (consumer, producer, count) triples, its length must be a multiple of 3")
        block_dim = self.parent_op().attr_values().block_dim
        sets = self.sets_before()
        seen = set()
        for consumer, producer, count in triples:
            if not (0 <= consumer < block_dim and 0 <= producer < block_dim):
                raise VerifyException(f"block ({consumer}, {producer}) out of the kernel's {block_dim} blocks")
            if consumer == producer:
                raise VerifyException(f"block {consumer} waits for itself (its own program order needs no flag)")
            if not 1 <= count <= sets:
                raise VerifyException(
                    f"block {consumer} waits for block {producer}'s flag #{count}, but only {sets} "
                    f"'npu.cross_set_flag' stand before this wait"
                )
            if (consumer, producer) in seen:
                raise VerifyException(f"block {consumer} waits for block {producer} twice")
            seen.add((consumer, producer))

    def triples(self) -> list[tuple[int, int, int]]:
        flat = list(self.attr_values().waits)
        return [tuple(flat[i : i + 3]) for i in range(0, len(flat) - len(flat) % 3, 3)]

    def needs(self, consumer: int) -> tuple[tuple[int, int], ...]:
        """(producer, count) pairs block `consumer` waits for."""
        return tuple((b, n) for c, b, n in self.triples() if c == consumer)

    def sets_before(self) -> int:
        count, op = 0, self.prev_op
        while op is not None:
            count += isinstance(op, CrossSetFlagOp)
            op = op.prev_op
        return count


SYNC_OPS = (SetFlagOp, WaitFlagOp, PipeBarrierOp, SyncAllOp, SyncAllArriveOp, SyncAllWaitOp, CrossSetFlagOp, CrossWaitFlagOp)
