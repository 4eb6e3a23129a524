"""The approximate simulation (`ge-sim --approx`, `simulate(..., approx=True)`):
exact outputs, approximate cycles, many times fewer instructions timed.

Why: the blocks of a launch meet the shared HBM and L2 in cycle order
(`lockstep.py`), so a block's timing depends on every other block's and no
shortcut can prove it may share another's (bench/sim_shortcut_payoff.py: even
skipping every provably order-free instruction saves 1.4-1.6x). Most blocks of
a phase run the same instructions on other data, though; this mode times a few
of them and gives the others their timing. It is an option, off by default,
and it says so in the report: its cycles are not the simulation's.

A launch runs in two passes:

1. *Numerics*: every block's results are computed and its instructions counted
   (`batched.py`: the blocks that take the same path run as one batch, their
   instructions recorded by closures of `KernelDecoder` mode "approx" for a
   block without weights, then computed once per batch), with no timing and no
   race check; the outputs and instruction counts are exactly the simulation's.
   Each block's instructions are hashed per phase (between two releases of a
   barrier): blocks of equal hash in a phase ran the same instructions there.
2. *Timing*: a few blocks, chosen so that every group of equal hash of every
   phase has one (`cover`, greedy), are timed (the same closures, a block with
   weights: the simulation's timing and race checker, no numerics), side by side as in the simulation.
   Each GM transfer of a timed block books the HBM and the L2's bandwidth with
   the bytes of every block it stands for in that phase (`weights`: its group's
   size over the group's timed blocks, `WeightedMemory`), so the timed blocks
   meet the contention the whole launch would cause; the L2's contents follow
   the timed blocks' addresses only. In each phase one timed block of each
   group stands in for it (`stand_ins`) and books the group's bytes; the
   group's other timed blocks skip the phase (`skips`: its flags and barriers
   run, none of its instructions is timed), which a barrier's release makes
   harmless (every pipe's time restarts there). Measured side by side
   (bench/sim_speed.py --base): ResNet-50's timing pass times about a third of
   the instructions it did, the approximation 1.21x faster, cycle error -0.92%
   -> -0.04%; MobileNetV2 -0.68% -> -0.29%, EfficientNet-B0 +0.03% -> -0.86%,
   neither faster (their timing pass was a sixth of the time).

Every block is then given, phase by phase, the timing of its group's timed
block (`shared_timing`): its busy cycles, statistics and phase ends; a launch
without barriers places its blocks on the cores that free first with their
representatives' durations. Launches with one block, with cross-core flags that make a block wait for
another (`npu.cross_wait_flag`: blocks wait on each other's data; a wait for
nobody, a barrier npu-narrow-sync found no block needs, is approximated: it ends
the phase, no block meeting another there) or with
`npu.read_scalar` (control flow steered by data, which the timing pass does not
compute) run the full simulation, as do launches the numerics pass declines
(`batched.run`: batches that do not meet at the same phases, local memories of
every block beyond `batched.MAX_LOCAL_BYTES`).

The error is measured, not bounded: `bench/time_to_result.py --approx` and
`bench/sim_speed.py --approx` run both and print the relative cycle error per
model; tests/unit/test_sim_approx.py bounds it on small cases. The race checker
checks the timed blocks only, each in the phases it stands in for (the others
run the same instructions of their phase at other GM offsets); the report says
how many.
"""

from __future__ import annotations

import dataclasses
import heapq
from dataclasses import dataclass, field

import numpy as np

from ..hardware import HardwarePreset
from . import batched
from .hbm import SharedHbm
from .l2 import GlobalMemory
from .program import STATS


class _WeightedBandwidth(SharedHbm):
    """A shared bandwidth whose bookings count `scale` times their bytes."""

    scale = 1

    def transfer(self, start: int, cycles: int, nbytes: int) -> int:
        return super().transfer(start, cycles, nbytes * self.scale)


class WeightedMemory(GlobalMemory):
    """GlobalMemory whose HBM and L2 bandwidth book each transfer with the weight
    `weigh` last set (1: as GlobalMemory, which full-simulation launches get)."""

    def __init__(self, hw: HardwarePreset):
        super().__init__(hw)
        self.hbm = _WeightedBandwidth(hw.hbm_bytes_per_cycle)
        if self.l2 is not None:
            self.l2.bandwidth = _WeightedBandwidth(hw.l2_bytes_per_cycle)

    def weigh(self, hbm: float, l2: float) -> None:
        self.hbm.scale = hbm
        if self.l2 is not None:
            self.l2.bandwidth.scale = l2


@dataclass
class SharedTiming:
    """What the report reads of a block's `Core`, for a block given its
    representatives' timing."""

    busy: list
    stats: list
    count: int
    phase_marks: list
    end: int
    trace: list = field(default_factory=list)


@dataclass
class Tally:
    """What the report says of an approximate simulation."""

    blocks: int = 0  # blocks of the launches approximated
    timed: int = 0  # of which timed
    launches: int = 0  # launches approximated
    full_launches: int = 0  # launches run with the full simulation
    batches: int = 0  # the most batches a segment of a launch had (`batched.py`)
    batched: int = 0  # blocks' instructions computed in batches (one numpy call for a batch)
    by_block: int = 0  # blocks' instructions computed block by block

    def as_json(self) -> dict:
        return dataclasses.asdict(self)


def eligible(program) -> bool:
    """Whether a launch of `program` may be approximated (module docstring): cross-core
    flags are, where no block waits for another (each `npu.cross_wait_flag` then ends
    a phase of every block as a barrier does, without the meeting)."""
    return not program.cross_waits and not program.scalar_reads


def cover(signatures: list[list[int]]) -> list[int]:
    """Blocks such that every (phase, hash) of every block has one of them with
    that hash in that phase: greedily the block covering most, lowest first."""
    phases = range(len(signatures[0]))
    uncovered = {(p, s[p]) for s in signatures for p in phases}
    timed = []
    while uncovered:
        best = max(range(len(signatures)), key=lambda b: (sum((p, signatures[b][p]) in uncovered for p in phases), -b))
        timed.append(best)
        uncovered -= {(p, signatures[best][p]) for p in phases}
    return sorted(timed)


def stand_ins(signatures: list[list[int]], timed: list[int]) -> dict[tuple[int, int], int]:
    """(phase, hash) -> the timed block that is timed in that phase for its group:
    the lowest timed block of the group. The group's other timed blocks skip the
    phase (`skips`): they run its flags and barriers but time none of its
    instructions, and the stand-in books the whole group's bytes."""
    first: dict[tuple[int, int], int] = {}
    for t in timed:
        for p, s in enumerate(signatures[t]):
            first.setdefault((p, s), t)
    return first


def representatives(signatures: list[list[int]], timed: list[int]) -> list[list[int]]:
    """Per block, per phase: the timed block whose timing it takes (its group's
    stand-in in that phase, `stand_ins`; a timed block's own only where it stands in)."""
    first = stand_ins(signatures, timed)
    return [[first[(p, s)] for p, s in enumerate(sig)] for sig in signatures]


def skips(signatures: list[list[int]], timed: list[int]) -> dict[int, tuple[bool, ...]]:
    """Per timed block, per phase: whether it skips the phase (another timed block
    stands in for its group there, `stand_ins`). A phase starts at the release of
    the barrier before it, every pipe's time reset there (`instructions.release`),
    so a phase skipped leaves the next one's timing to the release alone: it costs
    the blocks of the phase's other groups nothing but the contention, which the
    stand-in's weights book."""
    first = stand_ins(signatures, timed)
    return {t: tuple(first[(p, s)] != t for p, s in enumerate(signatures[t])) for t in timed}


def weights(signatures: list[list[int]], addresses: list[list[list[int]]], timed: list[int], cores: int) -> dict:
    """Per timed block, per GM transfer it makes (in the order its pipes run them):
    the (HBM, L2) weight of its booking. In each phase, a group's stand-in
    (`stand_ins`; the group's other timed blocks skip the phase) stands for the
    group's blocks (a launch of more blocks than cores runs them in waves: the
    load of its blocks spread evenly over the waves); on the HBM, for as many of
    them as read
    or write distinct addresses there (blocks reading one address share its L2
    line: one of them crosses the HBM), on the L2's bandwidth for all of them.
    `addresses`: per block, per phase, its transfers' GM addresses."""
    blocks = len(signatures)
    at_once = 1 / -(-blocks // cores)
    first = stand_ins(signatures, timed)
    result: dict[int, list] = {t: [] for t in timed}
    for p in range(len(signatures[0])):
        groups: dict[int, list[int]] = {}
        for b, sig in enumerate(signatures):
            groups.setdefault(sig[p], []).append(b)
        for s, members in groups.items():
            stand_in = first[(p, s)]
            rows = [addresses[b][p] for b in members]
            count = len(rows[0])
            if any(len(r) != count for r in rows):  # equal hashes, unequal runs: weigh every block
                distinct = [len(members)] * count
            elif count:
                ordered = np.sort(np.array(rows, dtype=np.int64), axis=0)
                distinct = (1 + np.count_nonzero(np.diff(ordered, axis=0), axis=0)).tolist()
            else:
                distinct = []
            result[stand_in].extend((d * at_once, len(members) * at_once) for d in distinct)
    return result


def run_launch(plan, step, start: int, cores: list, memories, lockstep, check_races: bool, run_blocks, tally: Tally):
    """Run one launch in two passes (module docstring); `run_blocks` is the
    simulation's launch runner (`plan._run_launch`). Returns (core id, start, end,
    Core or SharedTiming) per block, in block order, and updates `cores`; None if
    the numerics pass declines the launch (`batched.run`): the caller simulates it."""
    program = step.program
    program.bind_arguments([b.array for b in step.args], [b.address for b in step.args])
    numerics = batched.run(program, step.block_dim, len(STATS))
    if numerics is None:
        return None
    signatures = numerics.signatures
    timed = cover(signatures)
    try:
        booked = weights(signatures, numerics.addresses, timed, plan.hw.core_count)
        skipped = skips(signatures, timed)
        timed_runs = run_blocks(step, start, list(cores), memories, lockstep, check_races, False, timed,
                                {t: (booked[t], skipped[t]) for t in timed})
        times = {b: (begin, core) for b, (_, begin, _, core) in zip(timed, timed_runs)}
    finally:
        plan.memory.weigh(1, 1)
    tally.blocks += step.block_dim
    tally.timed += len(timed)
    tally.launches += 1
    tally.batches = max(tally.batches, numerics.batches)
    tally.batched += numerics.batched
    tally.by_block += numerics.by_block
    return shared_timing(times, representatives(signatures, timed), numerics.counts, start, cores)


def _phases(begin: int, core) -> list[tuple[int, int, list, list]]:
    """A timed block's phases: (start, end, busy, statistics) of each."""
    before = (begin, [0] * len(core.busy), [0.0] * len(core.stats))
    phases = []
    for after in [*core.phase_marks, (core.end, core.busy, core.stats)]:
        phases.append((before[0], after[0], [a - b for a, b in zip(after[1], before[1])],
                       [a - b for a, b in zip(after[2], before[2])]))
        before = after
    return phases


def shared_timing(times: dict, reps: list[list[int]], counts: list[int], start: int, cores: list) -> list:
    """Every block's record from its representatives' phases: a phase that a barrier
    ends ends when the representative's did (the release every block shares), the
    last phase lasts as long as the representative's. Blocks are placed on the
    cores that free first, in block order; `cores` is updated."""
    phases = {t: _phases(begin, core) for t, (begin, core) in times.items()}
    records = []
    for b, chosen in enumerate(reps):
        free, core_id = heapq.heappop(cores)
        begin = max(start, free)
        busy, stats, marks = None, None, []
        for p, t in enumerate(chosen):
            _, end, phase_busy, phase_stats = phases[t][p]
            busy = phase_busy if busy is None else [x + y for x, y in zip(busy, phase_busy)]
            stats = phase_stats if stats is None else [x + y for x, y in zip(stats, phase_stats)]
            if p < len(chosen) - 1:
                marks.append((end, list(busy), list(stats)))
        last_start, last_end = phases[chosen[-1]][-1][:2]
        end = (marks[-1][0] if marks else begin) + last_end - last_start
        heapq.heappush(cores, (end, core_id))
        records.append((core_id, begin, end, SharedTiming(busy, stats, counts[b], marks, end)))
    return records
