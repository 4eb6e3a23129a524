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
of its two pipes would serialise stages a ping-pong loop keeps apart), and when
the later producer has not waited for more of the consumer pipe's work than the
earlier one (`_round_trip`: the consumer would wait for its own work to come back
through other pipes, as flash attention's scores would for the product of the
probabilities the vector unit has just rounded). Then
every flag whose removal leaves all dependencies ordered is removed, last made
first, so none left is redundant. Last, a flag from MTE2 / MTE3 is set at the
next set of its pipe when its wait follows both (`sharing_landings`): a set on
those pipes fires when their transfers have landed, and one set then serves both.

Once a level is planned, its clocks give the `Boundary` the level holding it
sees: which pipes' state at the start orders all of a pipe's work inside, and
which pipes know which at the end. A loop's exit counts only if it surely runs
(constant bounds, at least one iteration); an `scf.if` counts what every branch
orders (a missing `else` orders nothing).

The CARRIED flags of a nested loop are TOKENS (`sync_clock.py`): set before
the loop and waited after it, they order pipe p's work before the loop (and
the loop's own up to the node the set follows) before pipe q after it. Closing
each around its own loop drains the pipeline at the loop's end: q waits for
p's last use of a buffer that what follows (the next K chunk's L0 steps, the
next output tile) would only need later. So the level holding the loops CHAINS
the tokens of one pipe pair from one nested loop to the next (the first run of
the next loop takes the token the previous loop's last iteration left: one flag,
set before the first loop and waited after the last), and when that level is
itself a loop body the chains are PASSED THROUGH it: set once before the
enclosing loop and waited once after it, its next iteration's first loop taking
what its last loop left (and so on outwards while the enclosing levels are
loops). Then nothing waits between the loops, and a dependency between two
instructions of one loop that one iteration carries to the next
(`sync_levels.py`) is ordered across its runs by the same flags. The level
holding the loops models each as the token the loop takes at its start (what
the previous set knew: p's state up to the node it followed) and joins into q
at its end; dependencies that this leaves unordered get flags of the level's
own. Chains are passed only while their pipe pair keeps an event id for the
level's own flags.
"""


from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum

from xdsl.dialects import scf
from xdsl.ir import Block, Operation

from .affine import trip_count
from .sync_clock import ALL, BEFORE, ClockRun, Event, Schedule
from .sync_levels import PIPE_COUNT, PIPE_INDEX, Dependency, KernelLevels, Level

LANDING_PIPES = frozenset({PIPE_INDEX["MTE2"], PIPE_INDEX["MTE3"]})
"""Pipes whose set_flag fires once their transfers have landed in GM or from it."""


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


@dataclass(eq=False)
class Chain:
    """The CARRIED flags (of nested loops, possibly several) that hand one token from
    one to the next: one event id, set before the loop node `first` of `home`'s
    block and waited after its loop node `last` (home None: not placed yet)."""

    members: list[PlannedSync]
    home: Level | None = None
    first: int = 0
    last: int = 0


@dataclass(eq=False)
class PlannedSync:
    """A sync of the plan: its level and its placement; a CARRIED flag set before and
    waited after its loop belongs to a `chain`."""

    level: Level
    sync: Sync
    chain: Chain | None = None


@dataclass(frozen=True)
class LoopFlag:
    """A token of a nested loop (one of its body's CARRIED flags, or a chain passed
    through it), seen from the level holding it: its last set knows pipe p's work
    before the loop and the loop's own up to node `known` of the body's last
    iteration (ALL: all of it; BEFORE: none); waited by pipe q."""

    p: int
    q: int
    known: int
    chain: Chain


@dataclass
class Boundary:
    """What a nested node's own sync orders, seen from the level holding it."""

    # (r, q) -> n: the node's work on q from its inner node n on (0: all of it) follows
    # pipe r's state at its start (or token r - PIPE_COUNT of `flags`, as set before it)
    entry: dict[tuple[int, int], int]
    # (p, r) -> n: at its end pipe r knows pipe p's work up to inner node n (ALL: all of it)
    exit: dict[tuple[int, int], int]
    flags: list[LoopFlag] = field(default_factory=list)
    runs: bool = False  # a loop surely running at least once
    inner: list[frozenset[int]] | None = None  # a loop: the pipes of each node of its body

    @staticmethod
    def opaque() -> Boundary:
        return Boundary({(p, p): 0 for p in range(PIPE_COUNT)}, {(p, p): ALL for p in range(PIPE_COUNT)})


@dataclass(frozen=True)
class Link:
    """Token `index` of nested loop `node`, as a link of one of this level's chains."""

    node: int
    index: int
    flag: LoopFlag
    runs: bool  # the nested loop surely runs: it takes the token and sets a new one


@dataclass
class LevelChain:
    """Tokens of nested loops of one pipe pair, in node order, handing one token
    on; `passed` through this level's loop, or set before its first link and
    waited after its last."""

    links: list[Link]
    passed: bool = False

    @property
    def p(self) -> int:
        return self.links[0].flag.p

    @property
    def q(self) -> int:
        return self.links[0].flag.q


class LevelPlanner:
    """Places the flags of one level, given the boundaries of its nested nodes."""

    def __init__(self, level: Level, nested: dict[int, Boundary], passing: int = 0):
        """`passing`: how many chains of one pipe pair may be passed through this
        level (when it is a loop body; the others are closed in it)."""
        self.level = level
        self.nested = nested
        self.iterations = 2 if level.loop is not None else 1
        self.watched = frozenset(nested)
        self.chains = self._chains(passing if level.loop is not None else 0)
        self.passed = [c for c in self.chains if c.passed]
        self._link_chain = {(link.node, link.index): c for c in self.chains for link in c.links}
        self._nested: tuple[list[list[Event]], list[list[Event]]] | None = None

    def _chains(self, passing: int) -> list[LevelChain]:
        """Each nested token joins the first chain of its pipe pair whose last link is
        an earlier node, or starts one."""
        chains: list[LevelChain] = []
        for node, boundary in sorted(self.nested.items()):
            for index, flag in enumerate(boundary.flags):
                link = Link(node, index, flag, boundary.runs)
                chain = next(
                    (c for c in chains if (c.p, c.q) == (flag.p, flag.q) and c.links[-1].node < node), None
                )
                if chain is None:
                    chains.append(LevelChain([link]))
                else:
                    chain.links.append(link)
        per_pair: dict[tuple[int, int], int] = {}
        for c in chains:
            count = per_pair.get((c.p, c.q), 0)
            if count < passing:
                c.passed = True
                per_pair[(c.p, c.q)] = count + 1
        return chains

    # ---- clocks -----------------------------------------------------------------------

    def schedule(self, syncs: list[Sync]) -> Schedule:
        """The events of `syncs` and of the nested nodes, per gap in the order they are
        emitted: after node g-1 what it orders at its end (the sets its tokens made
        inside it, what its own sync orders, then the waits after the last link of
        a chain), then this level's sets and waits, then the sets before the first
        link of a chain and the takes of loop g's tokens. This level's tokens
        (passed chains, then its CARRIED flags around the loop) are clock
        components of their own, set before the first iteration."""
        own = [i for i, s in enumerate(syncs) if s.around_loop]
        inner = {g: b.inner for g, b in self.nested.items() if b.inner is not None}
        schedule = Schedule(self.level, inner, len(self.passed) + len(own))
        size = self.level.size
        sets: list[list[int]] = [[] for _ in range(size + 1)]
        waits: list[list[int]] = [[] for _ in range(size + 1)]
        for i, s in enumerate(syncs):
            sets[s.set_gap].append(i)
            waits[s.wait_position(size)].append(i)
        after, before = self._nested_events()
        gaps = schedule.gaps
        for gap in range(size + 1):
            events = gaps[gap]
            events.extend(after[gap])
            for i in sets[gap]:
                events.append(Event("set", i, syncs[i].p))
            for i in waits[gap]:
                events.append(Event("wait", i, syncs[i].q))
            events.extend(before[gap])
        schedule.preset.extend((("chain", id(c)), PIPE_COUNT + j) for j, c in enumerate(self.passed))
        schedule.preset.extend((i, PIPE_COUNT + len(self.passed) + n) for n, i in enumerate(own))
        return schedule

    def _nested_events(self) -> tuple[list[list[Event]], list[list[Event]]]:
        """Per gap, the events of the nested nodes after node gap-1 and before node gap:
        they do not depend on this level's flags, so they are made once per planner
        (a plan runs the clocks once per flag tried)."""
        if self._nested is None:
            gaps = range(self.level.size + 1)
            self._nested = ([self._after_node(gap) for gap in gaps], [self._before_node(gap) for gap in gaps])
        return self._nested

    def _before_node(self, gap: int) -> list[Event]:
        events = []
        boundary = self.nested.get(gap)
        for k, f in enumerate(boundary.flags if boundary else []):
            chain = self._link_chain[(gap, k)]
            key = ("chain", id(chain))
            if not chain.passed and chain.links[0].node == gap:
                events.append(Event("set", key, f.p))
            events.append(Event("take" if boundary.runs else "peek", key, slot=(gap, k)))
        return events

    def _after_node(self, gap: int) -> list[Event]:
        events: list[Event] = []
        node = gap - 1
        boundary = self.nested.get(node)
        if boundary is None:
            return events
        for k, f in enumerate(boundary.flags):
            # the last set made inside the loop, if it ran (if it may not have, what the
            # next wait learns either way: `sync_clock.ClockRun._either`)
            key = ("chain", id(self._link_chain[(node, k)]))
            events.append(Event("set" if boundary.runs else "replace", key, f.p, node=node, known=f.known))
        triples = tuple(sorted((p, r, n) for (p, r), n in boundary.exit.items() if p != r))
        if triples:
            events.append(Event("exit", (node, triples)))
        for k, f in enumerate(boundary.flags):
            if boundary.runs:  # the loop's first wait took the token
                events.append(Event("join", None, f.q, slot=(node, k)))
            chain = self._link_chain[(node, k)]
            if not chain.passed and chain.links[-1].node == node:
                events.append(Event("wait", ("chain", id(chain)), f.q))
        return events

    def run(self, syncs: list[Sync]) -> ClockRun:
        return ClockRun(self.schedule(syncs), self.iterations, self.watched)

    def orders(self, run: ClockRun, d: Dependency) -> bool:
        if run.orders(d):
            return True
        boundary = self.nested.get(d.y)
        if boundary is None:
            return False
        knowing = run.knowing(d)
        tick = run.tick(0, d.x, d.xi, d.p)
        held = run.held[run.later(d)]
        for k in range(len(boundary.flags)):
            token = held.get((d.y, k))
            if tick is not None and token is not None and token[d.p] >= tick:
                knowing.append(PIPE_COUNT + k)
        need = max(d.yi, 0)
        return any(boundary.entry.get((r, d.q), ALL) <= need for r in knowing)

    def orders_all(self, syncs: list[Sync], dependencies) -> bool:
        """Whether `syncs` order every dependency (the first unordered one answers)."""
        run = self.run(syncs)
        return all(self.orders(run, d) for d in dependencies)

    # ---- placement --------------------------------------------------------------------

    def candidate(self, d: Dependency) -> Sync:
        if not d.carried or d.x < d.y:
            return Sync(d.p, d.q, Kind.FORWARD, d.x + 1, d.y)
        return self._carried(d.p, d.q, d.x + 1, d.y)

    def _carried(self, p: int, q: int, set_gap: int, wait_gap: int) -> Sync:
        at_end = not self.level.uses_pipe(q, 0, wait_gap)
        return Sync(p, q, Kind.CARRIED, set_gap, wait_gap, at_end)

    def stretched(self, old: Sync, new: Sync, run: ClockRun) -> Sync | None:
        """`old` moved to cover `new`'s dependency too, or None if it may not be."""
        if (old.p, old.q, old.kind) != (new.p, new.q, new.kind):
            return None
        set_gap, wait_gap = max(old.set_gap, new.set_gap), min(old.wait_gap, new.wait_gap)
        if old.kind is Kind.FORWARD and set_gap > wait_gap:
            return None
        lo, hi = sorted((old.set_gap, new.set_gap))
        if self.level.uses_pipe(old.q, lo, hi - 1):  # consumer-pipe work between the producers
            return None
        if self._round_trip(run, old.p, old.q, lo - 1, hi - 1):
            return None
        lo, hi = sorted((old.wait_gap, new.wait_gap))
        if self.level.uses_pipe(old.p, lo + 1, hi):  # producer-pipe work between the consumers
            return None
        if old.kind is Kind.CARRIED:
            return self._carried(old.p, old.q, set_gap, wait_gap)
        return replace(old, set_gap=set_gap, wait_gap=wait_gap)

    @staticmethod
    def _round_trip(run: ClockRun, p: int, q: int, early: int, late: int) -> bool:
        """Whether producer `late` waits for more of pipe q's own work than producer
        `early` does. A flag set after `late` instead of `early` would then hold q's
        consumer until work q handed on earlier has gone round through other pipes:
        the vector unit waiting for scores the cube computed long ago because the
        same flag also covers a product of the probabilities it has just rounded."""
        run.reach(0, late)
        before = run.before[0]
        known_early, known_late = before[early].get(p), before[late].get(p)
        return known_early is not None and known_late is not None and known_late[q] > known_early[q]

    def plan(self) -> list[Sync]:
        dependencies = sorted(self.level.dependencies, key=lambda d: (d.carried, d.y, -d.x, d.p, d.q))
        syncs: list[Sync] = []
        run = self.run(syncs)
        for d in dependencies:
            if self.orders(run, d):
                continue
            syncs = self._cover(syncs, d, run)
            run = self.run(syncs)
        return self.sharing_landings(self.pruned(syncs, dependencies))

    def _cover(self, syncs: list[Sync], d: Dependency, run: ClockRun) -> list[Sync]:
        """`syncs` with one flag stretched, or a new one, to order `d` (a stretched
        flag is set after d's producer and waited before its consumer: it orders d)."""
        fresh = self.candidate(d)
        for i in range(len(syncs) - 1, -1, -1):
            merged = self.stretched(syncs[i], fresh, run)
            if merged is not None:
                return syncs[:i] + [merged] + syncs[i + 1 :]
        return syncs + [fresh]

    def sharing_landings(self, syncs: list[Sync]) -> list[Sync]:
        """Each FORWARD flag of a GM transfer pipe set later, at the next set of that
        pipe, where its wait follows both that set and the other flag's wait.

        A set_flag on MTE2 / MTE3 fires once every earlier transfer has landed (a GM
        latency: 200 / 100 cycles on ascend910), one set after both transfers when
        the later one has (a bias copied with a B chunk, for a consumer after the
        chunk's): one flag pair fewer. (While the simulator had a set hold its pipe until the landing,
        this also saved a hold; since a set is a marker in the queue, 18685c3, it
        changes no cycles of the BERT and LLaMA layers, MMoE or the ResNet block.)
        Moving a set later only makes its flag order more, and it stays before its
        wait in program order, so the kernel stays race- and deadlock-free; only
        plain ops may lie between."""
        shared = list(syncs)
        for i, s in enumerate(shared):
            if s.kind is not Kind.FORWARD or s.p not in LANDING_PIPES:
                continue
            later = [
                t.set_gap
                for t in shared
                if t.kind is Kind.FORWARD and t.p == s.p and s.set_gap < t.set_gap <= s.wait_gap and t.wait_gap <= s.wait_gap
            ]
            if later and not any(g in self.nested for g in range(s.set_gap, min(later))):
                shared[i] = replace(s, set_gap=min(later))
        return shared

    def pruned(self, syncs: list[Sync], dependencies: list[Dependency]) -> list[Sync]:
        for s in reversed(list(syncs)):
            trial = [t for t in syncs if t is not s]
            if self.orders_all(trial, dependencies):
                syncs = trial
        return syncs

    # ---- what the level holding this one sees ------------------------------------------

    def boundary(self, syncs: list[Sync]) -> Boundary:
        run = self.run(syncs)
        return Boundary(run.entry_ordered(), run.exit_ordered())

    def place_chains(self, own: list[PlannedSync]) -> list[LoopFlag]:
        """Give the chains closed here their place, and return this loop's tokens as the
        level holding it sees them, in the order of their clock components: the
        passed chains, then its own CARRIED flags."""
        tokens = []
        for c in self.chains:
            members = [m for link in c.links for m in link.flag.chain.members]
            chain = Chain(members)
            for m in members:
                m.chain = chain
            if c.passed:
                last = c.links[-1]
                known = self._known(c.p, last.node if last.flag.known == ALL else last.node - 1)
                tokens.append(LoopFlag(c.p, c.q, known, chain))
            else:
                chain.home, chain.first, chain.last = self.level, c.links[0].node, c.links[-1].node
        for p in own:
            s = p.sync
            if s.around_loop:
                p.chain = Chain([p])
                tokens.append(LoopFlag(s.p, s.q, self._known(s.p, s.set_gap - 1), p.chain))
        return tokens

    def _known(self, pipe: int, node: int) -> int:
        """What a set after `node` knows of `pipe`'s work in the body: its work up to
        the last node using it at or before `node`."""
        level = self.level
        if node >= level.last_node_using(pipe):
            return ALL
        return max((i for i in range(node + 1) if pipe in level.pipes[i]), default=BEFORE)


def _loop_boundary(loop: scf.ForOp, body: Level, inner: Boundary, tokens: list[LoopFlag]) -> Boundary:
    runs_once = (trip_count(loop) or 0) >= 1
    exit = inner.exit if runs_once else Boundary.opaque().exit
    return Boundary(inner.entry, exit, tokens, runs_once, body.pipes)


def _if_boundary(branches: list[Boundary | None]) -> Boundary:
    """What every branch orders (its whole work: a branch is one node); a branch with
    no instructions (or absent) orders nothing at the exit and holds no work at the
    entry."""
    entry: set[tuple[int, int]] | None = None
    exit: set[tuple[int, int]] | None = None
    for branch in branches:
        if branch is None:
            b_entry = {(r, q) for r in range(PIPE_COUNT) for q in range(PIPE_COUNT)}
            b_exit = {(p, p) for p in range(PIPE_COUNT)}
        else:
            b_entry = {pair for pair, n in branch.entry.items() if n == 0 and pair[0] < PIPE_COUNT}
            b_exit = {pair for pair, n in branch.exit.items() if n == ALL}
        entry = b_entry if entry is None else entry & b_entry
        exit = b_exit if exit is None else exit & b_exit
    return Boundary(dict.fromkeys(entry, 0), dict.fromkeys(exit, ALL))


PASSING_RESERVE = 1
"""Event ids of a pipe pair kept for a level's own flags when passing chains through it."""


def plan_kernel(levels: KernelLevels, event_ids: int = 4) -> list[PlannedSync]:
    """Every level's flags, inner levels first (their boundaries feed the outer ones)."""
    planned: list[PlannedSync] = []
    boundaries: dict[Block, Boundary] = {}
    for level in levels.levels_bottom_up():
        nested = {i: _node_boundary(node, boundaries) for i, node in enumerate(level.nodes) if node.regions}
        planner = LevelPlanner(level, nested, max(0, event_ids - PASSING_RESERVE))
        syncs = planner.plan() if level.dependencies else []
        own = [PlannedSync(level, s) for s in syncs]
        planned.extend(own)
        tokens = planner.place_chains(own)
        boundary = planner.boundary(syncs)
        loop = level.loop
        if loop is not None:
            boundary = _loop_boundary(loop, level, boundary, tokens)
        boundaries[level.block] = boundary
    return planned


def _node_boundary(node: Operation, boundaries: dict[Block, Boundary]) -> Boundary:
    if isinstance(node, scf.ForOp):
        return boundaries[node.body.block]
    blocks = [region.blocks[0] if region.blocks else None for region in node.regions]
    return _if_boundary([boundaries.get(b) if b is not None else None for b in blocks])
