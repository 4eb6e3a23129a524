"""Where `npu-insert-sync` puts flags: one level at a time, inner levels first.

A `Sync` of a level is a flag from pipe p to pipe q, its `set_flag` after node
`set_gap - 1` and its `wait_flag` before node `wait_gap`, of one of two kinds:

* FORWARD: set and wait in the same iteration (set_gap <= wait_gap);
* CARRIED: set in one iteration, waited before node `wait_gap` of the next. Set
  once before the loop (the first iteration's wait takes it) and waited once
  after it (taking the last iteration's set), so sets and waits balance when
  the kernel ends. When pipe q has nothing to do in the body before node
  `wait_gap`, waiting at the END of the body is the same and needs no flag
  around the loop: `at_end`, then the flag is a set and a wait in one iteration.

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

Once a level is planned, its clocks give the `Boundary` the level holding it
sees: which pipes' state at the start orders all of a pipe's work inside, and
which pipes know which at the end. A loop's exit counts only if it surely runs
(constant bounds, at least one iteration); an `scf.if` counts what every branch
orders (a missing `else` orders nothing). The CARRIED flags of a loop are also
ops of the level holding it (set before, wait after), and order pipe p's work
before the loop (and, if the set follows the body's last use of p, the loop's
own) before pipe q after it, whatever the trip count.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum

from xdsl.dialects import scf
from xdsl.ir import Block, Operation

from .affine import trip_count
from .sync_clock import ClockRun, Event, Schedule
from .sync_levels import PIPE_COUNT, Dependency, KernelLevels, Level


class Kind(Enum):
    FORWARD = "forward"
    CARRIED = "carried"


@dataclass(frozen=True)
class Sync:
    p: int
    q: int
    kind: Kind
    set_gap: int
    wait_gap: int
    at_end: bool = False  # a CARRIED flag waited at the end of the body instead

    def wait_position(self, size: int) -> int:
        """The gap its wait_flag is emitted at (in the iteration of its set if `at_end`)."""
        return size if self.at_end else self.wait_gap

    @property
    def around_loop(self) -> bool:
        """Whether it is also set before and waited after the loop."""
        return self.kind is Kind.CARRIED and not self.at_end


@dataclass(frozen=True)
class LoopFlag:
    """A CARRIED flag of a nested loop, seen from the level holding it: pipe p's work
    before the loop (with `set_after`, the loop's own too) before pipe q after it."""

    p: int
    q: int
    set_after: bool


@dataclass
class Boundary:
    """What a nested node's own sync orders, seen from the level holding it."""

    entry: set[tuple[int, int]]  # (r, q): the node's work on q follows pipe r's state at its start
    exit: set[tuple[int, int]]  # (p, r): at its end pipe r knows all pipe p did
    flags: list[LoopFlag] = field(default_factory=list)

    @staticmethod
    def opaque() -> Boundary:
        pairs = {(p, p) for p in range(PIPE_COUNT)}
        return Boundary(set(pairs), set(pairs))


@dataclass
class PlannedSync:
    """A sync of the plan: its level and its placement."""

    level: Level
    sync: Sync


class LevelPlanner:
    """Places the flags of one level, given the boundaries of its nested nodes."""

    def __init__(self, level: Level, nested: dict[int, Boundary]):
        self.level = level
        self.nested = nested
        self.iterations = 2 if level.loop is not None else 1
        self.watched = frozenset(nested)

    # ---- clocks -----------------------------------------------------------------------

    def schedule(self, syncs: list[Sync]) -> Schedule:
        """The events of `syncs` and of the nested nodes, per gap in the order they are
        emitted: after node g-1 what it orders at its end (the sets of its loop flags
        made inside the loop, what its own sync orders, then the waits after the loop),
        then this level's sets and waits, then the sets made before loop g."""
        schedule = Schedule(self.level)
        size = self.level.size
        sets: list[list[int]] = [[] for _ in range(size + 1)]
        waits: list[list[int]] = [[] for _ in range(size + 1)]
        for i, s in enumerate(syncs):
            sets[s.set_gap].append(i)
            waits[s.wait_position(size)].append(i)
        for gap in range(size + 1):
            self._after_node(schedule, gap)
            for i in sets[gap]:
                schedule.add(gap, Event("set", i, syncs[i].p))
            for i in waits[gap]:
                schedule.add(gap, Event("wait", i, syncs[i].q))
            boundary = self.nested.get(gap)
            for k, f in enumerate(boundary.flags if boundary else []):
                if not f.set_after:
                    schedule.add(gap, Event("set", ("loop", gap, k), f.p))
        schedule.preset.extend((i, s.p) for i, s in enumerate(syncs) if s.around_loop)
        return schedule

    def _after_node(self, schedule: Schedule, gap: int) -> None:
        boundary = self.nested.get(gap - 1)
        if boundary is None:
            return
        for k, f in enumerate(boundary.flags):
            if f.set_after:  # made inside the loop, before anything its end orders
                schedule.add(gap, Event("set", ("loop", gap - 1, k), f.p))
        pairs = tuple(sorted((p, r) for p, r in boundary.exit if p != r))
        if pairs:
            schedule.add(gap, Event("exit", pairs))
        for k, f in enumerate(boundary.flags):
            schedule.add(gap, Event("wait", ("loop", gap - 1, k), f.q))

    def run(self, syncs: list[Sync]) -> ClockRun:
        return ClockRun(self.schedule(syncs), self.iterations, self.watched)

    def orders(self, run: ClockRun, d: Dependency) -> bool:
        if run.orders(d):
            return True
        boundary = self.nested.get(d.y)
        return boundary is not None and any((r, d.q) in boundary.entry for r in run.knowing(d))

    def unordered(self, syncs: list[Sync], dependencies) -> list[Dependency]:
        """The dependencies `syncs` leave unordered."""
        run = self.run(syncs)
        return [d for d in dependencies if not self.orders(run, d)]

    # ---- placement --------------------------------------------------------------------

    def candidate(self, d: Dependency) -> Sync:
        if not d.carried or d.x < d.y:
            return Sync(d.p, d.q, Kind.FORWARD, d.x + 1, d.y)
        return self._carried(d.p, d.q, d.x + 1, d.y)

    def _carried(self, p: int, q: int, set_gap: int, wait_gap: int) -> Sync:
        at_end = not self.level.uses_pipe(q, 0, wait_gap)
        return Sync(p, q, Kind.CARRIED, set_gap, wait_gap, at_end)

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
        lo, hi = sorted((old.wait_gap, new.wait_gap))
        if self.level.uses_pipe(old.p, lo + 1, hi):  # producer-pipe work between the consumers
            return None
        if old.kind is Kind.CARRIED:
            return self._carried(old.p, old.q, set_gap, wait_gap)
        return replace(old, set_gap=set_gap, wait_gap=wait_gap)

    def plan(self) -> list[Sync]:
        dependencies = sorted(self.level.dependencies, key=lambda d: (d.carried, d.y, -d.x, d.p, d.q))
        syncs: list[Sync] = []
        run = self.run(syncs)
        for d in dependencies:
            if self.orders(run, d):
                continue
            syncs = self._cover(syncs, d)
            run = self.run(syncs)
        return self.pruned(syncs, dependencies)

    def _cover(self, syncs: list[Sync], d: Dependency) -> list[Sync]:
        """`syncs` with one flag stretched, or a new one, to order `d` (a stretched
        flag is set after d's producer and waited before its consumer: it orders d)."""
        fresh = self.candidate(d)
        for i in range(len(syncs) - 1, -1, -1):
            merged = self.stretched(syncs[i], fresh)
            if merged is not None:
                return syncs[:i] + [merged] + syncs[i + 1 :]
        return syncs + [fresh]

    def pruned(self, syncs: list[Sync], dependencies: list[Dependency]) -> list[Sync]:
        for s in reversed(list(syncs)):
            trial = [t for t in syncs if t is not s]
            if not self.unordered(trial, dependencies):
                syncs = trial
        return syncs

    # ---- what the level holding this one sees ------------------------------------------

    def boundary(self, syncs: list[Sync]) -> Boundary:
        run = self.run(syncs)
        return Boundary(run.entry_ordered(), run.exit_ordered())


def _loop_boundary(loop: scf.ForOp, body: Level, inner: Boundary, syncs: list[Sync]) -> Boundary:
    runs_once = (trip_count(loop) or 0) >= 1
    exit = inner.exit if runs_once else Boundary.opaque().exit
    flags = [LoopFlag(s.p, s.q, s.set_gap > body.last_node_using(s.p)) for s in syncs if s.around_loop]
    return Boundary(inner.entry, exit, flags)


def _if_boundary(branches: list[Boundary | None]) -> Boundary:
    """What every branch orders; a branch with no instructions (or absent) orders
    nothing at the exit and holds no work at the entry."""
    result = None
    for branch in branches:
        b = branch or Boundary(
            {(r, q) for r in range(PIPE_COUNT) for q in range(PIPE_COUNT)}, Boundary.opaque().exit
        )
        result = b if result is None else Boundary(result.entry & b.entry, result.exit & b.exit)
    return result


def plan_kernel(levels: KernelLevels) -> list[PlannedSync]:
    """Every level's flags, inner levels first (their boundaries feed the outer ones)."""
    planned: list[PlannedSync] = []
    boundaries: dict[Block, Boundary] = {}
    for level in levels.levels_bottom_up():
        nested = {i: _node_boundary(node, boundaries) for i, node in enumerate(level.nodes) if node.regions}
        planner = LevelPlanner(level, nested)
        syncs = planner.plan() if level.dependencies else []
        planned.extend(PlannedSync(level, s) for s in syncs)
        boundary = planner.boundary(syncs)
        loop = level.loop
        if loop is not None:
            boundary = _loop_boundary(loop, level, boundary, syncs)
        boundaries[level.block] = boundary
    return planned


def _node_boundary(node: Operation, boundaries: dict[Block, Boundary]) -> Boundary:
    if isinstance(node, scf.ForOp):
        return boundaries[node.body.block]
    blocks = [region.blocks[0] if region.blocks else None for region in node.regions]
    return _if_boundary([boundaries.get(b) if b is not None else None for b in blocks])
