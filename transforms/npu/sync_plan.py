"""Where `npu-insert-sync` puts flags: one level at a time, inner levels first.

A `Sync` of a level is a flag from pipe p to pipe q, its `set_flag` after node
`set_gap - 1` and its `wait_flag` before node `wait_gap`, of one of three kinds:

* FORWARD: set and wait in the same iteration (set_gap <= wait_gap);
* END: a carried dependency whose consumer pipe has nothing to do in the body
  before the consumer: waiting at the end of the body is then the same as
  waiting before the consumer in the next iteration, and needs no flag around
  the loop (wait_gap is the end of the body);
* CARRIED: set in one iteration, waited in the next. Set once before the loop
  (the first iteration's wait takes it) and waited once after it (taking the
  last iteration's set), so sets and waits balance when the kernel ends.

Placement is greedy and then pruned. Dependencies are taken in order (forward
ones first, then carried, each by consumer then producer); one the current
flags already order (directly or through other flags: `sync_clock.py`) is
skipped; otherwise a flag is made right after the producer and right before the
consumer, or an existing flag of the same pipes is stretched to cover it: its
set moved later, its wait earlier. Stretching never weakens a flag; it is only
done when the flag's producers have no work of the consumer pipe between them,
and its consumers none of the producer pipe (a flag that spans interleaved work
of its two pipes would serialise stages a ping-pong loop keeps apart). Then
every flag whose removal leaves all dependencies ordered is removed, last made
first, so none left is redundant.

Seen from the level holding a nested loop, the loop's flags give `Summary`
orderings: a CARRIED flag is waited after the loop, taking its last set (or the
set before the loop if it ran no iteration), and any flag set after the body's
last use of its source pipe orders the whole loop's work on it, when the loop
is known to run at least once.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum

from xdsl.dialects import scf

from .affine import trip_count
from .sync_clock import ClockRun, Event, Schedule
from .sync_levels import Dependency, KernelLevels, Level


class Kind(Enum):
    FORWARD = "forward"
    END = "end"
    CARRIED = "carried"


@dataclass(frozen=True)
class Sync:
    p: int
    q: int
    kind: Kind
    set_gap: int
    wait_gap: int


@dataclass(frozen=True)
class Summary:
    """A nested loop's flag seen from outside: pipe p's work before the loop (and,
    with `set_after`, the loop's own work on p) ordered before pipe q after it."""

    p: int
    q: int
    set_after: bool
    real: bool  # a CARRIED flag: its set before / wait after the loop are ops of this level


@dataclass
class PlannedSync:
    """A sync of the plan: its level and its placement."""

    level: Level
    sync: Sync


class LevelPlanner:
    """Places the flags of one level, given the summaries of its nested loops."""

    def __init__(self, level: Level, summaries: dict[int, list[Summary]]):
        self.level = level
        self.summaries = summaries
        self.iterations = 2 if level.loop is not None else 1

    # ---- clocks -----------------------------------------------------------------------

    def schedule(self, syncs: list[Sync]) -> Schedule:
        """The events of `syncs` and of the nested loops' summaries, per gap in the
        order they are emitted: after node g-1 the nested loop's waits (a summary
        whose set is inside the loop sets first), then this level's sets and waits,
        then the sets made before nested loop g."""
        schedule = Schedule(self.level)
        for gap in range(self.level.size + 1):
            after = self.summaries.get(gap - 1, [])
            for k, s in enumerate(after):
                if s.set_after:
                    schedule.add(gap, Event("set", ("summary", gap - 1, k), s.p))
            for k, s in enumerate(after):
                schedule.add(gap, Event("wait", ("summary", gap - 1, k), s.q))
            for i, s in enumerate(syncs):
                if s.set_gap == gap:
                    schedule.add(gap, Event("set", i, s.p))
            for i, s in enumerate(syncs):
                if s.wait_gap == gap:
                    schedule.add(gap, Event("wait", i, s.q))
            for k, s in enumerate(self.summaries.get(gap, [])):
                if not s.set_after:
                    schedule.add(gap, Event("set", ("summary", gap, k), s.p))
        schedule.preset.extend(i for i, s in enumerate(syncs) if s.kind is Kind.CARRIED)
        return schedule

    def run(self, syncs: list[Sync]) -> ClockRun:
        return ClockRun(self.schedule(syncs), self.iterations)

    def unordered(self, syncs: list[Sync], dependencies) -> list[Dependency]:
        """The dependencies `syncs` leave unordered."""
        run = self.run(syncs)
        return [d for d in dependencies if not run.orders(d)]

    # ---- placement --------------------------------------------------------------------

    def candidate(self, d: Dependency) -> Sync:
        if not d.carried or d.x < d.y:
            return Sync(d.p, d.q, Kind.FORWARD, d.x + 1, d.y)
        if not self.level.uses_pipe(d.q, 0, d.y):
            return Sync(d.p, d.q, Kind.END, d.x + 1, self.level.size)
        return Sync(d.p, d.q, Kind.CARRIED, d.x + 1, d.y)

    def stretched(self, old: Sync, new: Sync) -> Sync | None:
        """`old` moved to cover `new`'s dependency too, or None if it may not be."""
        if (old.p, old.q, old.kind) != (new.p, new.q, new.kind):
            return None
        set_gap, wait_gap = max(old.set_gap, new.set_gap), min(old.wait_gap, new.wait_gap)
        if old.kind is Kind.FORWARD and set_gap > wait_gap:
            return None
        lo, hi = sorted((old.set_gap, new.set_gap))
        if self.level.uses_pipe(old.q, lo, hi - 1):  # consumer-pipe work between the producers
            return None
        if old.kind is not Kind.END:
            lo, hi = sorted((old.wait_gap, new.wait_gap))
            if self.level.uses_pipe(old.p, lo + 1, hi):  # producer-pipe work between the consumers
                return None
        return replace(old, set_gap=set_gap, wait_gap=wait_gap)

    def plan(self) -> list[Sync]:
        dependencies = sorted(self.level.dependencies, key=lambda d: (d.carried, d.y, -d.x, d.p, d.q))
        syncs: list[Sync] = []
        run = self.run(syncs)
        for d in dependencies:
            if run.orders(d):
                continue
            syncs = self._cover(syncs, d)
            run = self.run(syncs)
        return self.pruned(syncs, dependencies)

    def _cover(self, syncs: list[Sync], d: Dependency) -> list[Sync]:
        """`syncs` with one flag stretched, or a new one, to order `d`."""
        fresh = self.candidate(d)
        for i in range(len(syncs) - 1, -1, -1):
            merged = self.stretched(syncs[i], fresh)
            if merged is not None:
                trial = syncs[:i] + [merged] + syncs[i + 1 :]
                if not self.unordered(trial, [d]):
                    return trial
        return syncs + [fresh]

    def pruned(self, syncs: list[Sync], dependencies: list[Dependency]) -> list[Sync]:
        for s in reversed(list(syncs)):
            trial = [t for t in syncs if t is not s]
            if not self.unordered(trial, dependencies):
                syncs = trial
        return syncs


def loop_summaries(loop: scf.ForOp, body: Level, syncs: list[Sync]) -> list[Summary]:
    """What the loop's flags order, seen from the level holding the loop."""
    runs_once = (trip_count(loop) or 0) >= 1
    summaries = []
    for s in syncs:
        after_all = s.set_gap > body.last_node_using(s.p)
        if s.kind is Kind.CARRIED:
            summaries.append(Summary(s.p, s.q, after_all, True))
        elif after_all and runs_once:
            summaries.append(Summary(s.p, s.q, True, False))
    return summaries


def plan_kernel(levels: KernelLevels) -> list[PlannedSync]:
    """Every level's flags, inner levels first (their summaries feed the outer ones)."""
    planned: list[PlannedSync] = []
    summaries_of: dict[object, list[Summary]] = {}
    for level in levels.levels_bottom_up():
        summaries = {
            i: summaries_of[node] for i, node in enumerate(level.nodes) if summaries_of.get(node)
        }
        syncs = LevelPlanner(level, summaries).plan() if level.dependencies else []
        planned.extend(PlannedSync(level, s) for s in syncs)
        loop = level.loop
        if loop is not None:
            summaries_of[loop] = loop_summaries(loop, level, syncs)
    return planned
