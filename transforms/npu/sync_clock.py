"""Whether the sync of one level orders its dependencies: vector clocks over the
level's nodes, as the simulator's race check computes them, but on the program
text instead of a run.

Each pipe keeps a vector clock (what it knows of every pipe's progress). A node
ticks every pipe it uses, after learning what the scalar unit knew when it issued
the node (every instruction does, in the simulator); a `set_flag` snapshots its
source pipe's clock, the matching `wait_flag` (the k-th wait of a flag takes the
k-th set) joins it into the waiting pipe's. A dependency x -> y holds when pipe
q's clock just before node y covers node x's tick on pipe p.

A loop body is run twice (iterations A and B) so that carried dependencies, from
a node of A to a node of B, are checked the same way; the waits of A of a flag
set across iterations take the set made before the loop. Nested nodes are
opaque: their own sync is not relied upon, except the summaries the planner
proves for nested loops (`Summary`), placed around the node.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from .sync_levels import PIPE_COUNT, S, Dependency, Level

ZERO = (0,) * PIPE_COUNT


@dataclass(frozen=True)
class Event:
    """One sync op at a gap of a level: `kind` is "set", "wait" or "barrier"."""

    kind: str
    key: object  # pairs a wait with its sets
    pipe: int  # the pipe executing it (set: source, wait: destination)


class Schedule:
    """The events at each gap of a level (gap g is before node g; gap `size` is the
    end), in execution order, and the flags set before the level's first iteration."""

    def __init__(self, level: Level):
        self.level = level
        self.gaps: list[list[Event]] = [[] for _ in range(level.size + 1)]
        self.preset: list[object] = []

    def add(self, gap: int, event: Event) -> None:
        self.gaps[gap].append(event)


class ClockRun:
    """The clocks of one run over a schedule: one iteration, or two for a loop body."""

    def __init__(self, schedule: Schedule, iterations: int):
        level = schedule.level
        self.vc = [list(ZERO) for _ in range(PIPE_COUNT)]
        self.fifos: dict[object, deque] = {key: deque([ZERO]) for key in schedule.preset}
        # ticks[it][node]: pipe -> its tick; before[it][node]: pipe -> its clock just before
        self.ticks = [[{} for _ in range(level.size)] for _ in range(iterations)]
        self.before = [[{} for _ in range(level.size)] for _ in range(iterations)]
        for it in range(iterations):
            for gap in range(level.size + 1):
                for event in schedule.gaps[gap]:
                    self._event(event)
                if gap < level.size:
                    self._node(it, gap, level.pipes[gap])

    def _learn_scalar(self, pipe: int) -> list[int]:
        row, scalar = self.vc[pipe], self.vc[S]
        if pipe != S:
            for i, value in enumerate(scalar):
                if value > row[i]:
                    row[i] = value
        return row

    def _node(self, it: int, node: int, pipes: Iterable[int]) -> None:
        for pipe in sorted(pipes):
            row = self._learn_scalar(pipe)
            self.before[it][node][pipe] = tuple(row)
            row[pipe] += 1
            self.ticks[it][node][pipe] = row[pipe]

    def _event(self, event: Event) -> None:
        if event.kind == "set":
            self.fifos.setdefault(event.key, deque()).append(tuple(self._learn_scalar(event.pipe)))
        elif event.kind == "wait":
            row = self._learn_scalar(event.pipe)
            fifo = self.fifos.get(event.key)
            snapshot = fifo.popleft() if fifo else ZERO
            for i, value in enumerate(snapshot):
                if value > row[i]:
                    row[i] = value
        else:
            merged = [max(column) for column in zip(*self.vc)]
            self.vc = [list(merged) for _ in range(PIPE_COUNT)]

    def orders(self, dependency: Dependency) -> bool:
        d = dependency
        later = len(self.ticks) - 1 if d.carried else 0
        tick = self.ticks[0][d.x].get(d.p)
        clock = self.before[later][d.y].get(d.q)
        return tick is not None and clock is not None and clock[d.p] >= tick
