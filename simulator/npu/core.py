"""One AI core running one block: the scalar unit, the pipes, the flags.

The scalar unit walks the kernel in program order. Each instruction costs it
`scalar.instruction_cycles` and is handed to its pipe; a pipe executes its
instructions in order, each starting when the pipe is free and the instruction
has been issued (start = max(issue time, pipe free)). Transfers stream: the
pipe is free for the next transfer once this one's bursts are issued (its data
cycles), and its data lands its path's latency later, like a DMA queue with
requests in flight. Whatever must see that data waits for it to land: any other
instruction of the pipe (a vector op after a fixpipe into UB) and its
`pipe_barrier` (which then hold the pipe, as an in-order queue does), and its
`set_flag`, which fires once they have landed but does not hold the pipe: it
is a marker that retires in order behind the transfers, while the transfers
issued after it stream on ([OFF tool] hicann/pypto's A2A3 pipe model,
framework/src/cost_model/simulation_ca/A2A3/model/pipe.cpp: a SET_FLAG enters
the pipe's in-flight queue one cycle after the instruction before it issued,
releases its flag when it retires after that one's end, and the next
instruction issues behind it at once; a pipe barrier waits for the queue to
empty). No pipe's transfers read what an earlier transfer of the same pipe
writes, so streaming never reorders a pipe's own data. Timing is computed eagerly,
instruction by instruction, except where a pipe waits:

* `wait_flag` on pipe Q whose flag has not fired yet (the matching `set_flag` is
  later in the program, or queued behind another wait) blocks Q: Q's later
  instructions queue up, with their issue time, and run when the flag fires;
* a flag fires when its `set_flag` executes on its source pipe (after all that
  pipe's earlier work) and is visible `sync.flag_latency` cycles later.

This is a discrete-event simulation whose events are processed in an order
consistent with the program's happens-before: every instruction's numerics run
when its timing is decided, after everything it depends on. Whatever still
waits when the scalar unit cannot go on (end of kernel, a `pipe_barrier ALL`, a
`wait_flag` to the scalar pipe) can never run: a deadlock.
"""

from __future__ import annotations

from collections import deque

from ...core.diagnostics import CompileError
from .hazards import NP, PIPE_NAMES, S, Hazards, describe

ZERO_CLOCK = (0,) * NP


class Core:
    """The state of one block run (times are absolute cycles)."""

    __slots__ = (
        "s_time",
        "pipe_free",
        "landed",
        "busy",
        "pending",
        "flags",
        "waiting",
        "sets",
        "consumed",
        "hz",
        "s_clock",
        "trace",
        "stats",
        "count",
        "flag_latency",
        "core_id",
        "end",
        "arrival",
        "meet",
        "phase_marks",
        "regs",
        "bufs",
        "sig",
        "sigs",
        "recorded",
        "cuts",
        "weights",
        "skips",
        "skip",
    )

    def __init__(self, start: int, hazards: Hazards | None, trace: bool, flag_latency: int, stats_size: int):
        self.s_time = start
        self.pipe_free = [start] * NP
        self.landed = [start] * NP  # when the transfers a pipe has streamed have landed
        self.busy = [0] * NP
        self.pending: list[deque | None] = [None] * NP
        self.flags: dict[tuple, deque] = {}
        self.waiting: dict[tuple, tuple] = {}  # flag -> (blocked pipe, its wait_flag op)
        self.sets: dict[tuple, list] = {}  # flag -> the set_flag ops executed, in order
        self.consumed: dict[tuple, int] = {}
        self.hz = hazards
        self.s_clock = ZERO_CLOCK  # the scalar unit's vector clock, as an immutable snapshot
        self.trace: list | None = [] if trace else None
        self.stats = [0.0] * stats_size
        self.count = 0
        self.flag_latency = flag_latency
        self.core_id = 0
        self.end = start  # the block's end, once `finish` has checked it
        self.arrival = start  # when this block's last SyncAll flag landed (npu.sync_all_arrive)
        # npu.sync_all: meet(cycle, op) waits for every block of the launch to arrive
        # and returns the latest arrival (a lone block meets only itself).
        self.meet = lambda cycle, op: cycle
        self.phase_marks: list[tuple[int, list[int], list[float]]] = []  # per sync_all: (release, busy, stats)
        # the block's scalar registers and buffer table (`KernelProgram.run_block`)
        self.regs: list = []
        self.bufs: list = []
        # the approximate simulation (`approx.py`): the numerics pass's running hash of
        # the instructions of the phase, one per phase ended, the instructions it
        # recorded (`batched.py`) and how many when each phase ended; the timing pass's
        # (HBM, L2) weights per GM transfer, `sig` counting them
        self.sig = 0
        self.sigs: list[int] = []
        self.recorded: list = []
        self.cuts: list[int] = []
        self.weights: list[tuple[float, float]] | None = None
        # the timing pass's phases this block skips (`approx.skips`), and whether it
        # skips the phase it is in: its instructions there are not timed
        self.skips: tuple[bool, ...] = ()
        self.skip = False

    # ---- issuing to pipes -----------------------------------------------------------

    def submit(self, pipe: int, run, args) -> None:
        """Hand an issued instruction to `pipe`: run it now, or queue it behind a wait.
        `run(core, issue_time, scalar_clock, args)` does its timing and numerics."""
        queue = self.pending[pipe]
        if queue is not None:
            queue.append((run, self.s_time, self.s_clock, args))
        else:
            run(self, self.s_time, self.s_clock, args)

    def learn_scalar(self, pipe: int, scalar_clock) -> None:
        """The instruction about to execute on `pipe` knows what the scalar unit knew
        when it issued it."""
        if scalar_clock is not ZERO_CLOCK:
            self.hz.learn(pipe, scalar_clock)

    def scalar_learned(self) -> None:
        """The scalar unit's clock changed (it read, waited or passed a barrier)."""
        self.s_clock = tuple(self.hz.vc[S])

    # ---- flags ------------------------------------------------------------------------

    def fire(self, flag: tuple, time: int, op) -> None:
        """A set_flag of `flag` = (src, dst, event) executed at `time` on its source pipe."""
        clock = self.hz.snapshot(flag[0]) if self.hz is not None else None
        self.flags.setdefault(flag, deque()).append((time + self.flag_latency, clock))
        self.sets.setdefault(flag, []).append(op)
        blocked = self.waiting.pop(flag, None)
        if blocked is not None:
            self.resume(blocked[0])

    def take(self, flag: tuple):
        """The (visible time, clock) of the next unconsumed set of `flag`, or None."""
        fired = self.flags.get(flag)
        if not fired:
            return None
        self.consumed[flag] = self.consumed.get(flag, 0) + 1
        return fired.popleft()

    def block(self, pipe: int, flag: tuple, item, op) -> None:
        """`pipe` waits for `flag`: the wait (`item`, from `op`) and all later work queue up."""
        self.pending[pipe] = deque([item])
        self.waiting[flag] = (pipe, op)

    def resume(self, pipe: int) -> None:
        queue = self.pending[pipe]
        self.pending[pipe] = None
        while queue:
            run, issued, scalar_clock, args = queue.popleft()
            run(self, issued, scalar_clock, args)
            if self.pending[pipe] is not None:  # blocked again
                self.pending[pipe].extend(queue)
                return

    # ---- the end of the line ---------------------------------------------------------

    def deadlock(self, where: str) -> CompileError:
        """The error for the first wait that still waits (`self.waiting` is not empty)."""
        flag, (pipe, op) = next(iter(self.waiting.items()))
        src, dst, event = flag
        needed = self.consumed.get(flag, 0) + 1
        executed = len(self.sets.get(flag, ()))
        return CompileError(
            f"deadlock: 'npu.wait_flag' ({PIPE_NAMES[src]} -> {PIPE_NAMES[dst]}, event {event}) on pipe "
            f"{PIPE_NAMES[pipe]} can never be satisfied: it waits for set_flag number {needed} of this flag "
            f"but only {executed} execute{'s' if executed == 1 else ''} {where}",
            op,
        )

    def finish(self, kernel_op) -> int:
        """Check that nothing waits and every flag was consumed; the block's end time."""
        if self.waiting:
            raise self.deadlock("before the kernel ends")
        for flag, fired in self.flags.items():
            if fired:
                src, dst, event = flag
                op = self.sets[flag][-1]
                raise CompileError(
                    f"unbalanced flags: set_flag ({PIPE_NAMES[src]} -> {PIPE_NAMES[dst]}, event {event}) "
                    f"executes {len(self.sets[flag])} times but is waited for {self.consumed.get(flag, 0)} "
                    f"times when the kernel ends (the last set is {describe(op)}); every set_flag needs its "
                    f"wait_flag",
                    op,
                )
        self.end = max(self.s_time, *self.pipe_free, *self.landed)
        return self.end

    def drained(self, pipe: int) -> int:
        """When `pipe` has issued all its work and the data of its transfers has landed."""
        free, landed = self.pipe_free[pipe], self.landed[pipe]
        return free if free > landed else landed
