"""Whether the sync of one level orders its dependencies: vector clocks over the
level's nodes, as the simulator's race check computes them, but on the program
text instead of a run.

Each pipe keeps a vector clock (what it knows of every pipe's progress). A node
ticks every pipe it uses, after learning what the scalar unit knew when it issued
the node (every instruction does, in the simulator); a `set_flag` snapshots its
source pipe's clock, the matching `wait_flag` (the k-th wait of a flag takes the
k-th set) joins it into the waiting pipe's. A dependency x -> y holds when pipe
q's clock just before node y covers node x's tick on pipe p.

Every pipe starts with one ENTRY tick, standing for everything it did before the
level's block runs: what covers a pipe's entry tick is ordered after all the
work outside that preceded the block (`Boundary`). A loop body is run twice
(iterations A and B) so that carried dependencies, from a node of A to a node of
B, are checked the same way; the waits of A of a flag set across iterations
take the set made before the loop (the source pipe's entry state).

Nested nodes are opaque ticks, plus what their own sync is known to order
(`Boundary`, computed from their level's clocks when it was planned): at the
node's end an "exit" event makes pipe r learn pipe p's state, and a dependency
into the node holds when some pipe r that knows the producer at the node's start
orders all the node's work on the consumer pipe. The exit orderings apply all
at once: knowing all p did inside the node is not knowing what p learned after.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from .sync_levels import PIPE_COUNT, S, Dependency, Level

ZERO = (0,) * PIPE_COUNT
ENTRY = 1  # every pipe's tick standing for its work before the block


@dataclass(frozen=True)
class Event:
    """One sync op at a gap of a level: "set", "wait", "barrier", or "exit" (what a
    nested node orders at its end: `key` holds its (p, r) pairs)."""

    kind: str
    key: object  # pairs a wait with its sets
    pipe: int = 0  # the pipe executing it (set: source, wait: destination)


class Schedule:
    """The events at each gap of a level (gap g is before node g; gap `size` is the
    end), in execution order, and the flags set before the level's first iteration."""

    def __init__(self, level: Level):
        self.level = level
        self.gaps: list[list[Event]] = [[] for _ in range(level.size + 1)]
        self.preset: list[tuple[object, int]] = []  # (flag key, source pipe)

    def add(self, gap: int, event: Event) -> None:
        self.gaps[gap].append(event)


def _join(row: list[int], other) -> None:
    row[:] = map(max, row, other)


class ClockRun:
    """The clocks of one run over a schedule: one iteration, or two for a loop body."""

    def __init__(self, schedule: Schedule, iterations: int, watched: frozenset[int] = frozenset()):
        level = schedule.level
        self.vc = [[ENTRY if i == p else 0 for i in range(PIPE_COUNT)] for p in range(PIPE_COUNT)]
        self.fifos: dict[object, deque] = {
            key: deque([tuple(self._learn_scalar(pipe))]) for key, pipe in schedule.preset
        }
        # ticks[it][node]: pipe -> its tick; before[it][node]: pipe -> its clock just before;
        # start[it][node]: every pipe's clock when a watched (nested) node starts
        self.ticks = [[{} for _ in range(level.size)] for _ in range(iterations)]
        self.before = [[{} for _ in range(level.size)] for _ in range(iterations)]
        self.start: list[dict[int, list[tuple[int, ...]]]] = [{} for _ in range(iterations)]
        self.ends: list[list[tuple[int, ...]]] = []  # every pipe's clock at the end of each iteration
        for it in range(iterations):
            for gap in range(level.size + 1):
                for event in schedule.gaps[gap]:
                    self._event(event)
                if gap < level.size:
                    if gap in watched:
                        self.start[it][gap] = [tuple(self._learn_scalar(p)) for p in range(PIPE_COUNT)]
                    self._node(it, gap, level.pipes[gap])
            self.ends.append([tuple(self._learn_scalar(p)) for p in range(PIPE_COUNT)])

    def _learn_scalar(self, pipe: int) -> list[int]:
        row = self.vc[pipe]
        if pipe != S:
            _join(row, self.vc[S])
        return row

    def _node(self, it: int, node: int, pipes) -> None:
        for pipe in sorted(pipes):
            row = self._learn_scalar(pipe)
            self.before[it][node][pipe] = tuple(row)
            row[pipe] += 1
            self.ticks[it][node][pipe] = row[pipe]

    def _event(self, event: Event) -> None:
        if event.kind == "set":
            self.fifos.setdefault(event.key, deque()).append(tuple(self._learn_scalar(event.pipe)))
        elif event.kind == "wait":
            fifo = self.fifos.get(event.key)
            _join(self._learn_scalar(event.pipe), fifo.popleft() if fifo else ZERO)
        elif event.kind == "exit":
            # All at once, from the clocks the node ended with: r learned what p had
            # done inside the node, not what p learned after its last instruction.
            ended = [tuple(self._learn_scalar(p)) for p in range(PIPE_COUNT)]
            for p, r in event.key:
                _join(self.vc[r], ended[p])
        else:
            merged = [max(column) for column in zip(*self.vc)]
            self.vc = [list(merged) for _ in range(PIPE_COUNT)]

    def orders(self, d: Dependency) -> bool:
        tick = self.ticks[0][d.x].get(d.p)
        clock = self.before[self.later(d)][d.y].get(d.q)
        return tick is not None and clock is not None and clock[d.p] >= tick

    def later(self, d: Dependency) -> int:
        """The iteration of the dependency's consumer."""
        return len(self.ticks) - 1 if d.carried else 0

    def knowing(self, d: Dependency) -> list[int]:
        """The pipes that know the producer when the (watched) consumer node starts."""
        tick = self.ticks[0][d.x].get(d.p)
        state = self.start[self.later(d)].get(d.y)
        if tick is None or state is None:
            return []
        return [r for r in range(PIPE_COUNT) if state[r][d.p] >= tick]

    # ---- what the level orders for the level holding it --------------------------------

    def entry_ordered(self) -> set[tuple[int, int]]:
        """(r, q): all of pipe q's work in the block (its first node in the first
        iteration) comes after pipe r's entry state; vacuous if q does nothing."""
        first: dict[int, int] = {}
        for node, pipes in enumerate(self.before[0]):
            for q in pipes:
                first.setdefault(q, node)
        return {
            (r, q)
            for q in range(PIPE_COUNT)
            for r in range(PIPE_COUNT)
            if q not in first or self.before[0][first[q]][q][r] >= ENTRY
        }

    def exit_ordered(self) -> set[tuple[int, int]]:
        """(p, r): at the end of an iteration pipe r knows all pipe p did (at the end of
        both simulated iterations: the first and a later one may be the last)."""
        return {
            (p, r)
            for p in range(PIPE_COUNT)
            for r in range(PIPE_COUNT)
            if all(end[r][p] >= end[p][p] for end in self.ends)
        }
