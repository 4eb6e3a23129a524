"""Where a phase's cycles go between its barriers: the anatomy of a simulated kernel.

A merged kernel (`npu-merge-launches`) runs its phases one after another, every
block meeting the others at an `npu.sync_all` in between. However busy a phase
is in its middle, each one pays around its work: the time until its first
compute (its first operands loaded after the barrier released it), the time
from its last compute until its block arrives at the next barrier (the last
stores landing), the blocks that arrive later than the typical one, and the
barrier's own flag round trip. Those costs are what overlapping phases would
win, and `bench/phase_anatomy.py` prints them per phase.

From a traced simulation (`simulate(..., trace=True)`), per phase (a kernel that
is not merged is one phase) and per block, with the block's own instructions:

* first compute: the start of its first cube or vector instruction (`npu.mmad`,
  a vector op, the fixpipe: the M and V pipes, flag waits left out);
* last work: the end of its last instruction on M, V or MTE3 (its last output
  stored), flag waits and the barrier's own flag store left out;
* arrival: when it drained and stored its barrier flag (the block's end in the
  kernel's last phase).

The columns take the median block ("typical") and add up to the phase's cycles:

    fill    = first compute - phase start
    work    = last work - first compute
    drain   = arrival - last work
    spread  = last block's arrival - typical arrival
    barrier = phase end - last block's arrival

Loads that `npu-prefetch-constants` moved before a barrier belong to the phase
they run in (MTE2 is not a column: its transfers are whatever the others wait
for).

Beside the columns, each phase's *pipe bound*: the most work one pipe of one
block has in the phase (its instructions' cycles, flag waits and the barrier's
flag store and read left out), and that pipe. No block ends before its busiest
pipe has worked, so the phase takes at least that; what it takes beyond is
what its pipes wait on each other and on latencies (fill, the tail after the
last load, the barrier), which finer pipelining or overlapping phases could win,
and not what a faster unit would. On the BERT layer (examples/bert_layer.mlir,
ascend910, at 41af691) the phases take 34.8k cycles against bounds summing to
23.9k (MTE2, the cores' GM ports, in five of seven): from 228 over (LN1, its
MTE2 busy with the FFN weights it prefetches) to 3,354 (the FFN-out partials:
MTE1-bound L0 steps, then the epilogue with nothing to overlap it). A phase in which a block computes nothing (a pure copy) counts its fill up
to its last work.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from .hazards import PIPE_INDEX, PIPE_NAMES, S
from .report import SimulationReport

COMPUTE_PIPES = frozenset({PIPE_INDEX["M"], PIPE_INDEX["V"]})
WORK_PIPES = COMPUTE_PIPES | {PIPE_INDEX["MTE3"]}
FLAG_STORE = ": flag store"
"""How the simulator traces a block's barrier flag store (`instructions.store_flag`)."""
FLAG_ACCESS = ": flag "
"""In the trace name of a barrier's flag store or read (`instructions.store_flag`, `release`)."""


@dataclass(frozen=True)
class PhaseAnatomy:
    name: str
    start: int
    end: int
    fill: int
    work: int
    drain: int
    spread: int
    barrier: int
    mte2_busy: float  # MTE2's busy share of the blocks' time in the phase, as `ge-sim --report` gives it
    pipe_bound: int = 0  # the most cycles one pipe of one block works in the phase (module docstring)
    bound_pipe: str = ""  # that pipe

    @property
    def cycles(self) -> int:
        return self.end - self.start

    @property
    def around_work(self) -> int:
        """What the phase pays besides its typical block's work."""
        return self.cycles - self.work


@dataclass
class _Block:
    first_compute: int | None = None
    last_work: int | None = None
    arrival: int | None = None
    busy: dict[int, int] = field(default_factory=dict)  # pipe -> cycles of own work in the phase


def _is_own_work(pipe: int, name: str) -> bool:
    """Not a flag wait, nor the barrier's flag store (which `_block_marks` takes first)."""
    return pipe in WORK_PIPES and name != "npu.wait_flag"


def _block_marks(events, start: int, end: int, block_end: int) -> _Block:
    """One block's marks within [start, end) (see the module docstring)."""
    marks = _Block()
    for pipe, name, t0, t1 in events:
        if not start <= t0 < end:
            continue
        if name.endswith(FLAG_STORE):
            marks.arrival = t0 if marks.arrival is None else min(marks.arrival, t0)
            continue
        if pipe != S and name != "npu.wait_flag" and FLAG_ACCESS not in name:
            marks.busy[pipe] = marks.busy.get(pipe, 0) + t1 - t0
        if _is_own_work(pipe, name):
            if pipe in COMPUTE_PIPES and (marks.first_compute is None or t0 < marks.first_compute):
                marks.first_compute = t0
            marks.last_work = t1 if marks.last_work is None else max(marks.last_work, t1)
    if marks.arrival is None:
        marks.arrival = min(block_end, end)
    if marks.last_work is None:
        marks.last_work = start
    if marks.first_compute is None:
        marks.first_compute = marks.last_work
    return marks


def _median(values: list[int]) -> int:
    return int(statistics.median_low(values))


def phase_anatomy(report: SimulationReport) -> list[PhaseAnatomy]:
    """Every phase of every kernel of a traced simulation, in launch order.
    ValueError if the simulation was not traced."""
    if report.trace_events is None:
        raise ValueError("the phase anatomy needs a traced simulation (simulate(..., trace=True))")
    by_core: dict[int, list[tuple[int, str, int, int]]] = {}
    for core, pipe, name, t0, t1 in report.trace_events:
        by_core.setdefault(core, []).append((pipe, name, t0, t1))
    found = []
    for kernel in report.kernels:
        blocks = [
            ([e for e in by_core.get(core, ()) if b_start <= e[2] < b_end], b_end)
            for b_start, core, b_end in kernel.block_spans
        ]
        for phase in kernel.phases or [kernel]:
            marks = [_block_marks(events, phase.start, phase.end, b_end) for events, b_end in blocks]
            found.append(_anatomy(phase.name, phase.start, phase.end, marks, phase.ratios()["mte2"]))
    return found


def _anatomy(name: str, start: int, end: int, blocks: list[_Block], mte2_busy: float) -> PhaseAnatomy:
    first = _median([b.first_compute for b in blocks])
    last = max(_median([b.last_work for b in blocks]), first)
    arrival = max(_median([b.arrival for b in blocks]), last)
    latest = max(max(b.arrival for b in blocks), arrival)
    bound, pipe = max(((cycles, pipe) for b in blocks for pipe, cycles in b.busy.items()), default=(0, S))
    return PhaseAnatomy(
        name, start, end,
        fill=first - start, work=last - first, drain=arrival - last, spread=latest - arrival, barrier=end - latest,
        mte2_busy=mte2_busy, pipe_bound=bound, bound_pipe=PIPE_NAMES[pipe],
    )
