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
B, are checked the same way.

A nested loop ticks a pipe once per node of its body using that pipe (its last
iteration's), so a dependency may name the inner node it comes from
(`Dependency.xi`) and what the loop orders at its end may be partial: at its
end pipe r knows pipe p's work up to inner node n (`Boundary.exit`). Other
nested nodes (branches) are one tick per pipe. At a nested node's end an "exit"
event makes pipe r learn what pipe p knew then (all of it), or only p's state at
the node's start and p's work up to inner node n; the exit orderings apply all
at once: knowing all p did inside the node is not knowing what p learned after.
A dependency into a nested node holds when some pipe r that knows the producer
at the node's start orders the node's work on the consumer pipe from the
consumer's inner node on (`Boundary.entry`).

TOKENS. A flag set in one iteration of a loop and waited in the next (set once
before the loop, waited once after it) hands its source pipe's knowledge from
set to wait like a token. What the first iteration's wait takes depends on the
level holding the loop (a set just before the loop, or the last set of the
previous run of the loop when the flag is passed through an enclosing loop), so
a level's clocks have one extra component per such flag: its "set before the
loop" carries only a tick of its own component, and a pipe whose clock covers
it at a node of the first iteration is ordered after whatever that set knew.
The level holding the loop `take`s (or `peek`s at) the token when the loop
starts, to check dependencies into it, and `join`s it into the waiting pipe
after it.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from .sync_levels import PIPE_COUNT, S, Dependency, Level

ENTRY = 1  # every pipe's tick standing for its work before the block

ALL = 1 << 30
"""An inner node index past every node: "all of it"."""

BEFORE = -1
"""An inner node index before every node: "none of it, only the state at the start"."""


@dataclass(frozen=True)
class Event:
    """One sync op at a gap of a level: "set", "wait", "barrier", or "exit" (what a
    nested node orders at its end: `key` holds its (p, r, inner node) triples);
    for the flags of nested loops also "take" / "peek" (hold the next set of `key`
    in `slot`, taking it or not), "join" (pipe learns what `slot` holds) and
    "replace" (after a nested loop `node` that may run no iteration, the pending
    set of `key` replaced by what the next wait surely learns: the set its last
    iteration made, or the pending one). A set may know only part of a nested
    node `node` (its source pipe's work up to inner node `known`)."""

    kind: str
    key: object  # pairs a wait with its sets
    pipe: int = 0  # the pipe executing it (set: source, wait: destination)
    slot: object = None  # take / peek / join: where the token is held
    node: int | None = None  # set / replace made inside this nested node ...
    known: int = ALL  # ... after its pipe's work up to this inner node


class Schedule:
    """The events at each gap of a level (gap g is before node g; gap `size` is the
    end), in execution order, and the flags set before the level's first iteration."""

    def __init__(self, level: Level, inner: dict[int, list[frozenset[int]]], tokens: int = 0):
        self.level = level
        self.inner = inner  # nested loop node -> the pipes of each node of its body
        self.gaps: list[list[Event]] = [[] for _ in range(level.size + 1)]
        self.tokens = tokens  # clock components beyond the pipes
        self.preset: list[tuple[object, int]] = []  # (flag key, its token component)

    def add(self, gap: int, event: Event) -> None:
        self.gaps[gap].append(event)


def _join(row: list[int], other) -> None:
    row[:] = map(max, row, other)


class ClockRun:
    """The clocks of one run over a schedule: one iteration, or two for a loop body.

    The run is LAZY: it advances over the schedule only as far as a question needs
    (`reach`), so a planner asking whether a trial placement orders its
    dependencies, in program order, stops at the first one it leaves unordered
    (pruning tries every flag, and most are needed), and a run made after adding a
    flag goes as far as the next dependency to check. Positions run in order
    (`_position`: gap g of iteration it), each once, so a question answered early
    gets what a run to the end would give."""

    def __init__(self, schedule: Schedule, iterations: int, watched: frozenset[int] = frozenset()):
        level = schedule.level
        self.schedule = schedule
        self.watched = watched
        self.inner = schedule.inner
        self.width = PIPE_COUNT + schedule.tokens
        self.zero = (0,) * self.width
        self.vc = [[ENTRY if i == p else 0 for i in range(self.width)] for p in range(PIPE_COUNT)]
        self._scalar_version = 0
        self._seen = [-1] * PIPE_COUNT
        self.fifos: dict[object, deque] = {
            key: deque([tuple(ENTRY if i == component else 0 for i in range(self.width))])
            for key, component in schedule.preset
        }
        # ticks[it][node]: pipe -> its (last) tick; inner_ticks[it]: (node, inner, pipe) ->
        # tick; before[it][node]: pipe -> its clock just before; start[it][node]: every
        # pipe's clock when a watched (nested) node starts; held[it]: slot -> token
        self.ticks = [[{} for _ in range(level.size)] for _ in range(iterations)]
        self.inner_ticks: list[dict[tuple[int, int, int], int]] = [{} for _ in range(iterations)]
        self.before = [[{} for _ in range(level.size)] for _ in range(iterations)]
        self.start: list[dict[int, list[tuple[int, ...]]]] = [{} for _ in range(iterations)]
        self.held: list[dict[object, tuple[int, ...]]] = [{} for _ in range(iterations)]
        self.ends: list[list[tuple[int, ...]]] = []  # every pipe's clock at the end of each iteration
        self._it = 0
        self._size = level.size
        self._done = 0  # positions run so far
        self._positions = iterations * (level.size + 1)

    def _position(self, it: int, gap: int) -> int:
        return it * (self._size + 1) + gap

    def reach(self, it: int, gap: int) -> None:
        """Run up to and including gap `gap` of iteration `it` (its events and its
        node, or the iteration's end)."""
        self._advance(min(self._position(it, gap) + 1, self._positions))

    def complete(self) -> ClockRun:
        self._advance(self._positions)
        return self

    def _advance(self, stop: int) -> None:
        size, gaps, pipes = self._size, self.schedule.gaps, self.schedule.level.pipes
        while self._done < stop:
            it, gap = divmod(self._done, size + 1)
            self._it = it
            for event in gaps[gap]:
                self._event(event)
            if gap < size:
                if gap in self.watched:
                    self.start[it][gap] = [tuple(self._learn_scalar(p)) for p in range(PIPE_COUNT)]
                self._node(it, gap, pipes[gap])
            else:
                self.ends.append([tuple(self._learn_scalar(p)) for p in range(PIPE_COUNT)])
            self._done += 1

    def _learn_scalar(self, pipe: int) -> list[int]:
        """Pipe's clock, having learned the scalar unit's. The join is skipped when the
        scalar unit's clock has not changed since this pipe last learned it (clocks
        only grow, so it would change nothing): `_scalar_version` counts the changes
        of the scalar unit's row (`_changed`: a tick, a wait, a join), `_seen` the
        version each pipe last learned."""
        row = self.vc[pipe]
        if pipe != S and self._seen[pipe] != self._scalar_version:
            _join(row, self.vc[S])
            self._seen[pipe] = self._scalar_version
        return row

    def _changed(self, pipe: int) -> None:
        """Pipe's row has changed (after a tick, a wait or a join)."""
        if pipe == S:
            self._scalar_version += 1

    def _node(self, it: int, node: int, pipes) -> None:
        inner = self.inner.get(node)
        for pipe in sorted(pipes):
            row = self._learn_scalar(pipe)
            self.before[it][node][pipe] = tuple(row)
            if inner is None:
                row[pipe] += 1
            else:
                for index, inner_pipes in enumerate(inner):
                    if pipe in inner_pipes:
                        row[pipe] += 1
                        self.inner_ticks[it][(node, index, pipe)] = row[pipe]
            self.ticks[it][node][pipe] = row[pipe]
            self._changed(pipe)

    def tick(self, it: int, node: int, inner: int, pipe: int) -> int | None:
        """Pipe's tick of node (of its inner node `inner`, or the last one if BEFORE)."""
        if inner != BEFORE:
            found = self.inner_ticks[it].get((node, inner, pipe))
            if found is not None:
                return found
        return self.ticks[it][node].get(pipe)

    def partial(self, node: int, pipe: int, known: int) -> tuple[int, ...]:
        """What `pipe` knows having done its work of nested `node` up to inner node
        `known` (ALL: everything it knows now; BEFORE: its state at the node's start)."""
        if known == ALL:
            return tuple(self._learn_scalar(pipe))
        state = list(self.start[self._it][node][pipe])
        if known != BEFORE:
            ticks = [t for (n, i, p), t in self.inner_ticks[self._it].items() if n == node and p == pipe and i <= known]
            if ticks:
                state[pipe] = max(ticks)
        return tuple(state)

    def _snapshot(self, event: Event) -> tuple[int, ...]:
        if event.node is None:
            return tuple(self._learn_scalar(event.pipe))
        return self.partial(event.node, event.pipe, event.known)

    def _either(self, pending: tuple[int, ...], event: Event) -> tuple[int, ...]:
        """What the next wait of a flag surely learns after nested loop `event.node`,
        which may run no iteration: the set its last iteration made (`event`) if it
        ran, else the `pending` one. Knowing the loop's own ticks is empty knowledge
        when it did not run, so the source pipe's component may be the loop's when
        the pending set knew all that pipe did before the loop; other components
        are what both sets knew."""
        made = self._snapshot(event)
        either = list(map(min, pending, made))
        pipe = event.pipe
        if pending[pipe] >= self.start[self._it][event.node][pipe][pipe]:
            either[pipe] = made[pipe]
        return tuple(either)

    def _event(self, event: Event) -> None:
        kind = event.kind
        if kind == "set":
            self.fifos.setdefault(event.key, deque()).append(self._snapshot(event))
        elif kind == "wait":
            fifo = self.fifos.get(event.key)
            _join(self._learn_scalar(event.pipe), fifo.popleft() if fifo else self.zero)
            self._changed(event.pipe)
        elif kind in ("take", "peek"):
            fifo = self.fifos.get(event.key)
            if not fifo:
                self.held[self._it][event.slot] = self.zero
            else:
                self.held[self._it][event.slot] = fifo.popleft() if kind == "take" else fifo[0]
        elif kind == "join":
            _join(self._learn_scalar(event.pipe), self.held[self._it].get(event.slot, self.zero))
            self._changed(event.pipe)
        elif kind == "replace":
            fifo = self.fifos.setdefault(event.key, deque())
            pending = fifo.popleft() if fifo else self.zero
            fifo.appendleft(self._either(pending, event))
        elif kind == "exit":
            # All at once, from the clocks the node ended with: r learned what p had
            # done inside the node, not what p learned after its last instruction.
            node, triples = event.key
            learned = [(r, self.partial(node, p, known)) for p, r, known in triples]
            for r, state in learned:
                _join(self.vc[r], state)
                self._changed(r)
        else:
            merged = [max(column) for column in zip(*self.vc)]
            self.vc = [list(merged) for _ in range(PIPE_COUNT)]
            self._scalar_version += 1

    def reach_dependency(self, d: Dependency) -> None:
        """Run far enough to answer `orders`, `knowing` and the tokens held for `d`."""
        self.reach(self.later(d), d.y)
        self.reach(0, d.x)

    def orders(self, d: Dependency) -> bool:
        self.reach_dependency(d)
        tick = self.tick(0, d.x, d.xi, d.p)
        clock = self.before[self.later(d)][d.y].get(d.q)
        return tick is not None and clock is not None and clock[d.p] >= tick

    def later(self, d: Dependency) -> int:
        """The iteration of the dependency's consumer."""
        return len(self.ticks) - 1 if d.carried else 0

    def knowing(self, d: Dependency) -> list[int]:
        """The pipes that know the producer when the (watched) consumer node starts."""
        self.reach_dependency(d)
        tick = self.tick(0, d.x, d.xi, d.p)
        state = self.start[self.later(d)].get(d.y)
        if tick is None or state is None:
            return []
        return [r for r in range(PIPE_COUNT) if state[r][d.p] >= tick]

    # ---- what the level orders for the level holding it --------------------------------

    def entry_ordered(self) -> dict[tuple[int, int], int]:
        """(r, q) -> n: pipe q's work in the block from node n of the first iteration
        on (n = 0: all of it) comes after pipe r's entry state, or after token r (r >=
        PIPE_COUNT) as set before the loop."""
        self.complete()
        nodes: dict[int, list[int]] = {}
        for node, pipes in enumerate(self.before[0]):
            for q in pipes:
                nodes.setdefault(q, []).append(node)
        result = {}
        for q in range(PIPE_COUNT):
            using = nodes.get(q, [])
            for r in range(self.width):
                first = next((n for n in using if self.before[0][n][q][r] >= ENTRY), None)
                if not using or first == using[0]:
                    result[(r, q)] = 0
                elif first is not None:
                    result[(r, q)] = first
        return result

    def exit_ordered(self) -> dict[tuple[int, int], int]:
        """(p, r) -> n: at the end of an iteration pipe r knows pipe p's work up to node
        n of that iteration (ALL: all of it), at the end of both simulated iterations
        (the first and a later one may be the last)."""
        self.complete()
        result = {}
        for p in range(PIPE_COUNT):
            using = [n for n in range(len(self.ticks[0])) if p in self.ticks[0][n]]
            for r in range(PIPE_COUNT):
                known = ALL
                for it, end in enumerate(self.ends):
                    if end[r][p] >= end[p][p]:
                        continue  # all p did, its entry state included
                    covered = [n for n in using if end[r][p] >= self.ticks[it][n][p]]
                    known = min(known, covered[-1]) if covered and known is not None else None
                if known is not None:
                    result[(p, r)] = known
        return result
