"""Lifetimes of the arena buffers under the concurrent schedule, and the lower
bound of the arena they need.

A buffer is live from the first launch using it to the last. With several
streams "first" and "last" are not enough: launches of different streams run in
any interleaving their events allow. So two buffers may share bytes only when
one is *done before* the other: every launch using the first is ordered (by
stream order and events, `Launch.ordered_before`) before every launch using the
second, and comes earlier in host order too (the order the host issues them and
the simulator checks). "Done before" is a strict partial order (transitive: the
middle buffer has a use); buffers unordered by it *conflict* and need disjoint
bytes. On one stream this is exactly "the launch intervals do not intersect".

The lower bound of the arena is the heaviest set of pairwise conflicting
buffers, in the limit "the most bytes live at any one time". Conflicting =
incomparable, so that set is a maximum-weight antichain of the partial order,
computed exactly by weighted Dilworth: total weight minus a maximum flow from
each buffer to the buffers done after it (`max_weight_antichain`).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from .launches import Buffer, Launch

GM_BUFFER_ALIGNMENT = 512
"""Bytes; GE aligns every GM tensor to 512 bytes."""


def aligned(nbytes: int, alignment: int = GM_BUFFER_ALIGNMENT) -> int:
    return -(-nbytes // alignment) * alignment


@dataclass(eq=False)
class Lifetime:
    """One arena buffer's uses, summarised for ordering tests."""

    buffer: Buffer
    size: int  # aligned bytes
    first: int  # host-order index of the first launch using it
    last: int  # ... and of the last
    last_position: dict[int, int]  # stream -> position of its last use on that stream
    known_floor: dict[int, int]  # stream -> the least any of its uses knows of that stream

    def done_before(self, other: "Lifetime") -> bool:
        """Every use of self is ordered before every use of other (and earlier in host order)."""
        if self.last >= other.first:
            return False
        return all(other.known_floor.get(s, 0) >= p for s, p in self.last_position.items())

    def conflicts(self, other: "Lifetime") -> bool:
        return not (self.done_before(other) or other.done_before(self))


def lifetime_of(buffer: Buffer, uses: list[Launch], streams: list[int], alignment: int) -> Lifetime:
    last_position: dict[int, int] = {}
    for launch in uses:
        last_position[launch.stream] = max(last_position.get(launch.stream, 0), launch.position)
    floor = {s: min(launch.clock.get(s, 0) for launch in uses) for s in streams}
    first, last = min(launch.span[0] for launch in uses), max(launch.span[1] for launch in uses)
    return Lifetime(buffer, aligned(buffer.nbytes, alignment), first, last, last_position, floor)


def arena_lifetimes(plan, alignment: int = GM_BUFFER_ALIGNMENT) -> list[Lifetime]:
    """The lifetimes of the plan's used arena buffers (`HostPlanModel`), in order of first use."""
    uses = plan.uses()
    streams = plan.streams
    lifetimes = [
        lifetime_of(b, uses[b], streams, alignment) for b in plan.buffers if b.in_arena and uses[b]
    ]
    return sorted(lifetimes, key=lambda life: life.first)


def conflict_sets(lifetimes: list[Lifetime]) -> list[set[int]]:
    """For each lifetime, the indices of those it conflicts with."""
    conflicts: list[set[int]] = [set() for _ in lifetimes]
    for i, a in enumerate(lifetimes):
        for j in range(i + 1, len(lifetimes)):
            if a.conflicts(lifetimes[j]):
                conflicts[i].add(j)
                conflicts[j].add(i)
    return conflicts


def lower_bound(lifetimes: list[Lifetime]) -> int:
    """The most bytes that are live at once: the heaviest set of pairwise conflicting buffers."""
    before = [[j for j, b in enumerate(lifetimes) if a.done_before(b)] for a in lifetimes]
    return max_weight_antichain([life.size for life in lifetimes], before)


# ---- weighted Dilworth ---------------------------------------------------------------


def max_weight_antichain(weights: list[int], after: list[list[int]]) -> int:
    """The largest total weight of pairwise incomparable elements of a partial order
    given by `after[i]` (every j > i in the order; transitively closed).

    Weighted Dilworth: it equals the fewest chains covering each element as many
    times as its weight, which is the total weight minus a maximum flow in the
    network source -> out_i (capacity w_i) -> in_j for j after i (unbounded)
    -> sink (capacity w_j): each unit of flow joins two chains into one."""
    n = len(weights)
    if n == 0:
        return 0
    network = _FlowNetwork(2 * n + 2)
    source, sink = 2 * n, 2 * n + 1
    unbounded = sum(weights) + 1
    for i, w in enumerate(weights):
        if w and after[i]:
            network.add(source, i, w)
        if w:
            network.add(n + i, sink, w)
        for j in after[i]:
            network.add(i, n + j, unbounded)
    return sum(weights) - network.max_flow(source, sink)


class _FlowNetwork:
    """Dinic's maximum flow on an adjacency list of edge indices."""

    def __init__(self, nodes: int):
        self.edges_from: list[list[int]] = [[] for _ in range(nodes)]
        self.to: list[int] = []
        self.capacity: list[int] = []

    def add(self, u: int, v: int, capacity: int) -> None:
        self.edges_from[u].append(len(self.to))
        self.to.append(v)
        self.capacity.append(capacity)
        self.edges_from[v].append(len(self.to))
        self.to.append(u)
        self.capacity.append(0)

    def max_flow(self, source: int, sink: int) -> int:
        total = 0
        while True:
            level = self._levels(source, sink)
            if level[sink] < 0:
                return total
            cursor = [0] * len(self.edges_from)
            while True:
                pushed = self._push(source, sink, 1 << 62, level, cursor)
                if not pushed:
                    break
                total += pushed

    def _levels(self, source: int, sink: int) -> list[int]:
        level = [-1] * len(self.edges_from)
        level[source] = 0
        queue = deque([source])
        while queue:
            u = queue.popleft()
            for e in self.edges_from[u]:
                if self.capacity[e] > 0 and level[self.to[e]] < 0:
                    level[self.to[e]] = level[u] + 1
                    queue.append(self.to[e])
        return level

    def _push(self, u: int, sink: int, limit: int, level: list[int], cursor: list[int]) -> int:
        """One augmenting path in the level graph (iterative depth-first search)."""
        path: list[int] = []  # edge indices
        node = u
        while True:
            if node == sink:
                amount = min([limit] + [self.capacity[e] for e in path])
                for e in path:
                    self.capacity[e] -= amount
                    self.capacity[e ^ 1] += amount
                return amount
            edges = self.edges_from[node]
            while cursor[node] < len(edges):
                e = edges[cursor[node]]
                if self.capacity[e] > 0 and level[self.to[e]] == level[node] + 1:
                    break
                cursor[node] += 1
            if cursor[node] == len(edges):
                if not path:
                    return 0
                level[node] = -1  # dead end: prune it
                e = path.pop()
                node = self.to[e ^ 1]
                cursor[node] += 1
                continue
            e = edges[cursor[node]]
            path.append(e)
            node = self.to[e]
