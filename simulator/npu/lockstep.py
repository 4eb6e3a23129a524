"""The blocks of a launch simulated side by side, so that the cores meet the shared
HBM and L2 in time order.

A core's timing is decided instruction by instruction (`core.py`), and the HBM
books each GM transfer first-come (`hbm.py`). Simulating one block to its end
before the next would let the first-simulated cores take the whole HBM and
starve the others: a priority nobody built. Here the blocks of a launch take
turns, one running at a time: before a GM
transfer books the memory at cycle t, its block hands over to the block that
waits at the earliest cycle if that one is more than `QUANTUM` cycles behind.
The bookings thus reach the HBM in (nearly) the order of their cycles, and the
first-come windows of `hbm.py` become a fair, work-conserving arbiter: the cores
that stream at once share the bandwidth, a core alone gets all it can take, and
an L2 miss is paid by whichever core reaches the line first in simulated time.
Only transfers faster than a fair share of the HBM (its bandwidth over the
launch's blocks in flight, `fair_share`) wait their turn: slower
ones cannot starve anybody, so kernels that do not saturate the HBM run without
hand-overs.

A block at an `npu.sync_all` (or `npu.sync_all_wait`) parks aside (`meet`) until
every block of the launch has arrived; the last one to arrive releases the others
at its cycle. A block at an `npu.cross_wait_flag` parks aside until the flags it
waits for are set (`CrossCore`, through `meet` too); the set that completes them
releases it at the latest flag's landing. `order` (hazards.BlockOrder) follows
what the flags and barriers order between the blocks, for the race checker.

Each block runs in a greenlet of its own, only to keep its Python stack (a block
may stop mid-loop, mid-instruction); nothing runs in parallel. The greenlet that
called `run` is the scheduler: it switches to the earliest waiting block, which
runs until it parks (hands over, meets, waits for flags) or ends and switches
back. The hand-over order depends only on simulated cycles, so a simulation is
deterministic. A switch is a few microseconds of CPU and no system call (a hand-
over between OS threads cost 15 to 30 us CPU and far more wall time on a loaded
machine: ResNet-50's 18.5k hand-overs were a fifth of its simulation). What a
block keeps outside its stack is swapped on every hand-over by its `Block`
callbacks (`enter`, `leave`).
"""

from __future__ import annotations

import contextvars
import heapq
from collections.abc import Callable
from dataclasses import dataclass

from greenlet import greenlet

from ...core.diagnostics import CompileError
from .hazards import BlockOrder, Record

QUANTUM = 512
"""How far (cycles) a block may run ahead of the earliest waiting block before it
hands over: four HBM booking windows. A hand-over costs two greenlet switches and
the `Block` callbacks, so the quantum trades fairness at the scale of a few windows for
simulation speed: 256 took twice the hand-overs for the same cycles within 0.1%."""


class _Aborted(BaseException):
    """Unwinds a parked block when another block failed."""


@dataclass(frozen=True)
class CrossCore:
    """What a block hands `Lockstep.meet` for the cross-core flags: its flag set
    ("set", landed at the cycle given), a wait for the (producer, count) flags
    `needs` ("wait", at npu.cross_wait_flag `op`), or a GM access of a kernel that
    has them ("touch", `record`), checked against the other blocks'."""

    kind: str
    block: int
    needs: tuple = ()
    op: object = None
    record: Record | None = None


@dataclass(eq=False)
class Block:
    """One block to run on core `core`: `run()` returns its result; `enter()` makes the
    shared kernel state this block's (called whenever it gets the turn), `leave()`
    saves it."""

    core: int
    start: int
    run: Callable[[], object]
    enter: Callable[[], None]
    leave: Callable[[], None]
    result: object = None
    cancelled: bool = False  # another block failed: unwind instead of going on
    glet: greenlet | None = None  # its stack while it runs


class Lockstep:
    """Runs blocks as described in the module docstring. `pace` is the hook a GM
    transfer calls before it books memory; outside `run` it does nothing. `close()`
    ends whatever a failed run left parked."""

    def __init__(self, quantum: int = QUANTUM):
        self.quantum = quantum
        self.fair_share = 0.0  # HBM bytes per cycle per block in flight, set per launch
        self._workers: dict[int, Block] = {}  # core -> the block whose greenlet runs there
        self._waiting: list[tuple[int, int, Block]] = []
        self._current: Block | None = None
        self._hub: greenlet | None = None  # the scheduler: the greenlet that called run()
        self._error: BaseException | None = None
        self._seq = 0
        self._arrived: list[tuple[int, Block, object]] = []  # (cycle, block, op) at an npu.sync_all
        self._met = 0  # the latest arrival of the last barrier everyone passed
        self._posted: dict[int, list[int]] = {}  # block -> when each of its cross-core flags landed
        self._flag_waiters: list[tuple[int, Block, CrossCore]] = []
        self._flag_released: dict[Block, int] = {}
        self.order = BlockOrder()
        self._next_block: Callable[[Block], Block | None] = lambda block: None

    def pace(self, cycle: int, moved: int, cycles: int) -> None:
        """Before a transfer of `moved` bytes over `cycles` (unloaded) from `cycle`
        books memory: hand over if it is faster than the fair share and the block
        is too far ahead."""
        block = self._current
        if block is None or moved <= cycles * self.fair_share:
            return
        if not self._waiting or cycle <= self._waiting[0][0] + self.quantum:
            return
        self._park(block, cycle)
        self._yield(block)

    def meet(self, cycle: int, parties: int, op) -> int:
        """The current block reaches the npu.sync_all (or npu.sync_all_wait) `op`, its
        flag landed at `cycle`: it waits, its turn handed over, until `parties` blocks
        have reached it. Returns the latest arrival. (A `CrossCore` `op`: see
        `_cross_core`.)"""
        if isinstance(op, CrossCore):
            return self._cross_core(cycle, op)
        block = self._current
        self._arrived.append((cycle, block, op))
        if len(self._arrived) == parties:
            self._met = max(c for c, _, _ in self._arrived)
            for _, other, _ in self._arrived[:-1]:
                self._park(other, self._met)
            self._arrived = []
            self.order.join_all()
            return self._met
        self._yield(block)
        return self._met

    def _cross_core(self, cycle: int, op: CrossCore) -> int:
        """A flag set (returns `cycle`, releases the waits it completes), a wait
        (returns when the last flag it needs landed, the block parked until
        then), or a GM access checked against the other blocks'."""
        if op.kind == "touch":
            self.order.access(op.block, op.record)
            return cycle
        if op.kind == "set":
            self._posted.setdefault(op.block, []).append(cycle)
            self.order.post(op.block)
            for waiter in [w for w in self._flag_waiters if self._flags_landed(w[2].needs) is not None]:
                self._flag_waiters.remove(waiter)
                waited, other, wait = waiter
                self._flag_released[other] = max(waited, self._flags_landed(wait.needs))
                self.order.join(wait.block, wait.needs)
                self._park(other, self._flag_released[other])
            return cycle
        landed = self._flags_landed(op.needs)
        if landed is not None:
            self.order.join(op.block, op.needs)
            return max(cycle, landed)
        block = self._current
        if block is None:  # a lone block waiting for others
            raise CompileError(f"deadlock: block {op.block} waits for flags of blocks that never run", op.op)
        self._flag_waiters.append((cycle, block, op))
        self._yield(block)
        return self._flag_released.pop(block)

    def _flags_landed(self, needs) -> int | None:
        """When the last of the (producer, count) flags `needs` landed, or None if
        one is not set yet."""
        latest = 0
        for producer, count in needs:
            posted = self._posted.get(producer, ())
            if len(posted) < count:
                return None
            latest = max(latest, posted[count - 1])
        return latest

    def run(self, blocks: list[Block], next_block: Callable[[Block], Block | None]) -> None:
        """Run `blocks` (on distinct cores), and every block `next_block(finished)`
        returns as a core frees, to their ends; the first error of any block is raised
        here."""
        self._next_block = next_block
        self._posted, self._flag_waiters, self.order = {}, [], BlockOrder()
        self._hub = greenlet.getcurrent()
        for block in blocks:
            self._park(block, block.start)
        try:
            self._schedule()
        finally:
            self._next_block = lambda block: None
            self._current = None
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def close(self) -> None:
        """Unwind every block a failed run left parked (none after a run that
        succeeded or failed cleanly)."""
        for block in self._workers.values():
            if block.glet is not None and not block.glet.dead:
                block.cancelled = True
                block.glet.throw(_Aborted)
        self._workers.clear()

    # ---- the scheduler -----------------------------------------------------------------

    def _schedule(self) -> None:
        """Give the turn to the earliest waiting block until none is left, or one
        failed: then every parked block is unwound."""
        while self._error is None:
            if not self._waiting:
                if not (self._arrived or self._flag_waiters):
                    return
                self._abort(self._stranded())
                break
            _, _, block = heapq.heappop(self._waiting)
            self._current = block
            if block.glet is None:
                block.glet = greenlet(self._run_block, parent=self._hub)
                block.glet.gr_context = contextvars.copy_context()  # numpy's errstate, as set by the caller
                self._workers[block.core] = block
            block.glet.switch(block)
        self._unwind()

    def _run_block(self, block: Block) -> None:
        try:
            block.enter()
            block.result = block.run()
            follower = self._next_block(block)
        except _Aborted:
            return
        except BaseException as error:  # handed to the greenlet that called run()
            self._abort(error)
            return
        if follower is not None:
            self._park(follower, follower.start)

    def _yield(self, block: Block) -> None:
        """The running `block` (parked or waiting) gives the turn back to the scheduler
        and returns when it has the turn again."""
        block.leave()
        self._hub.switch()
        if block.cancelled:
            raise _Aborted
        block.enter()

    def _park(self, block: Block, cycle: int) -> None:
        self._seq += 1
        heapq.heappush(self._waiting, (cycle, self._seq, block))

    def _stranded(self) -> CompileError:
        """Blocks wait at a barrier that no other block can reach any more."""
        if self._flag_waiters:
            waiters, self._flag_waiters = self._flag_waiters, []
            for cycle, block, _ in waiters:
                self._park(block, cycle)
            wait = waiters[0][2]
            return CompileError(
                f"deadlock: block {wait.block} waits at this '{wait.op.name}' for flags {list(wait.needs)} "
                f"((block, count) pairs) that no block will set any more",
                wait.op,
            )
        arrived, self._arrived = self._arrived, []
        for cycle, block, _ in arrived:
            self._park(block, cycle)
        return CompileError(
            f"deadlock: {len(arrived)} block(s) wait at this '{arrived[0][2].name}' for the launch's other blocks, "
            f"which ended without reaching it",
            arrived[0][2],
        )

    def _abort(self, error: BaseException) -> None:
        """Keep the first error for run()."""
        if self._error is None:
            self._error = error

    def _unwind(self) -> None:
        """Cancel every parked block: each raises _Aborted where it parked and ends."""
        parked = [block for _, _, block in self._waiting]
        parked += [block for _, block, _ in self._flag_waiters]  # at an npu.cross_wait_flag
        parked += [block for _, block, _ in self._arrived]  # at an npu.sync_all
        self._waiting, self._flag_waiters, self._arrived = [], [], []
        self._current = None
        for block in parked:
            block.cancelled = True
            if block.glet is not None and not block.glet.dead:
                block.glet.throw(_Aborted)
