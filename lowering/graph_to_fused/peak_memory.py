"""Peak global memory of a fusion graph's activations, and of the graph after a
candidate merge, without walking the whole schedule for every candidate.

Automatic fusion asks "would merging a and b raise the peak?" of every candidate
it tries, at every step (GridSample's 251 ops: about 3,000 questions). A walk
of the whole schedule per question made that quadratic. The answer only
differs from the current schedule's inside a window:

* the kernels run in the order `FusionGraph._order` gives: a list schedule
  (the ready kernel whose first op comes first runs next). With a and b merged
  into m, the schedule is the current one until it would run a or b, or until m
  is ready and comes before the kernel the current schedule runs next
  (the *divergence*);
* the bytes live after a set of kernels ran depend on that set only (a value is
  live from its producer's step until every kernel reading it ran, or to the
  end when returned), so once the merged schedule has run exactly the kernels
  the current one ran at the same count (m counting as a and b: the
  *reconvergence*), the rest of both schedules is the same kernels in the same
  order with the same live bytes.

So the merged peak is the larger of the current schedule's peak before the
divergence, the merged schedule's steps simulated from there to the
reconvergence, and the current schedule's peak after it. `PeakProfile` keeps,
for one state of the graph, the order, the live bytes before each step and the
prefix and suffix maxima; it is rebuilt after each merge (one walk per merge
instead of one per question). The answers equal a fresh walk of the merged
graph's schedule (tests/unit/test_fusion_graph_state.py checks every candidate
of several graphs).
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING

from xdsl.ir import Operation, SSAValue

from ...core import dtypes

if TYPE_CHECKING:
    from .fusion_graph import FusionGraph, Part


class PeakProfile:
    """The live activation bytes along the schedule of one state of a graph."""

    def __init__(self, graph: FusionGraph):
        self.graph = graph
        self.order = order = graph._order(None)
        self.step_of = {n: k for k, n in enumerate(order)}
        self.parts = parts = [graph.part(n) for n in order]
        self.first = [graph.position(n) for n in order]
        producers = graph._node_producers()
        step_of = self.step_of
        # the last step any producer of each step's kernel runs at (-1: none)
        self.ready_after = [max((step_of[p] for p in producers[n]), default=-1) for n in order]
        last_use: dict[SSAValue, int] = {}
        for step, part in enumerate(parts):
            for v in part.inputs:
                last_use[v] = step
        end = len(parts)
        for v in graph.returned:
            last_use[v] = end
        live = sum(dtypes.tensor_bytes(a.type) for a in graph.block.args if a in last_use)
        self.live_before: list[int] = []
        step_peak: list[int] = []
        for step, part in enumerate(parts):
            self.live_before.append(live)
            live += part.output_bytes
            step_peak.append(live)
            live -= sum(size for v, size in part.activation_inputs if last_use.get(v) == step)
            live -= sum(size for v, size in part.sized_outputs if v not in last_use)
        start = self.live_before[0] if parts else live
        # before[k]: the peak of the steps before k (and of the start); after[k]: of steps k on
        self.before = [start]
        for p in step_peak:
            self.before.append(max(self.before[-1], p))
        self.after = [0] * (end + 1)
        for k in range(end - 1, -1, -1):
            self.after[k] = max(step_peak[k], self.after[k + 1])
        self.peak = self.before[-1]
        self._readers: dict[SSAValue, tuple[int, ...]] = {}

    def readers(self, v: SSAValue) -> tuple[int, ...]:
        """The steps of the kernels reading `v` from outside (its producer's node excluded)."""
        known = self._readers.get(v)
        if known is None:
            node_of, step_of = self.graph.node_of, self.step_of
            owner = node_of.get(v.owner) if isinstance(v.owner, Operation) else None
            known = self._readers[v] = tuple(
                {step_of[node_of[u.operation]] for u in v.uses if u.operation in node_of} - {step_of.get(owner, -1)}
            )
        return known

    def merged_peak(self, a: int, b: int, merged: Part, limit: int | None = None) -> int:
        """The peak once nodes `a` and `b` are one kernel whose part is `merged`;
        with `limit`, the first live size above it as soon as one is found (what
        a yes-or-no question needs)."""
        sa, sb = self.step_of[a], self.step_of[b]
        first_m = min(self.first[sa], self.first[sb])
        m_ready = max(self._step_of_producer(sa, sa, sb), self._step_of_producer(sb, sa, sb)) + 1
        d = min(sa, sb)
        for k in range(m_ready, d):
            if self.first[k] > first_m:
                d = k
                break
        return _Window(self, sa, sb, merged, first_m, m_ready, d).run(limit)

    def _step_of_producer(self, step: int, sa: int, sb: int) -> int:
        """The last step, other than a's and b's, a producer of `step`'s kernel runs at."""
        producers = self.graph._node_producers()[self.order[step]]
        return max((s for p in producers if (s := self.step_of[p]) != sa and s != sb), default=-1)


class _Window:
    """The merged schedule simulated from the divergence `d` to the reconvergence,
    in the current schedule's steps (the merged kernel m is the step `sa`, standing
    for `sb` too)."""

    def __init__(self, profile: PeakProfile, sa: int, sb: int, merged: Part, first_m: int, m_ready: int, d: int):
        self.p, self.sa, self.sb, self.merged, self.d = profile, sa, sb, merged, d
        # The kernels ready at d: waiting for no kernel that has not run (m once its producers ran).
        ready = [(profile.first[k], k) for k in range(d, len(profile.order))
                 if profile.ready_after[k] < d and k != sa and k != sb]
        if m_ready <= d:
            ready.append((first_m, sa))
        heapq.heapify(ready)
        self.ready = ready
        self.first_m = first_m
        self.ran: set[int] = set()  # steps run in the window (sa and sb for m)
        self.waiting: dict[int, int] = {}  # step -> producers not yet run (counted when first reached)

    def run(self, limit: int | None) -> int:
        p, d = self.p, self.d
        live, peak = p.live_before[d], p.before[d]
        count, highest = d, d - 1
        while self.ready:
            _, k = heapq.heappop(self.ready)
            is_m = k == self.sa
            part = self.merged if is_m else p.parts[k]
            live += part.output_bytes
            peak = max(peak, live)
            if limit is not None and peak > limit:
                return peak
            if is_m:
                self.ran.update((self.sa, self.sb))
                count += 2
                highest = max(highest, self.sa, self.sb)
            else:
                self.ran.add(k)
                count += 1
                highest = max(highest, k)
            live -= sum(size for v, size in part.activation_inputs if self._consumed(v))
            live -= sum(size for v, size in part.sized_outputs if self._unread(v, is_m))
            if highest == count - 1 and self.sa in self.ran:
                return max(peak, p.after[count])
            self._release(k, is_m)
        return peak

    def _consumed(self, v: SSAValue) -> bool:
        """Every kernel reading `v` has run (and `v` is not returned)."""
        if v in self.p.graph.returned:
            return False
        d, ran = self.d, self.ran
        return all(s < d or s in ran for s in self.p.readers(v))

    def _unread(self, v: SSAValue, is_m: bool) -> bool:
        """No other kernel reads `v` and it is not returned (freed at once)."""
        readers = self.p.readers(v)
        if is_m:
            readers = [s for s in readers if s != self.sa and s != self.sb]
        return not readers and v not in self.p.graph.returned

    def _release(self, k: int, is_m: bool) -> None:
        """Make ready the kernels whose last producer was `k` (m: a's or b's consumers)."""
        p, sa, sb = self.p, self.sa, self.sb
        nodes = (p.order[sa], p.order[sb]) if is_m else (p.order[k],)
        dependents = set()
        for n in nodes:
            for c in p.graph.consumers(n):
                s = p.step_of[c]
                dependents.add(sa if s == sb else s)
        if is_m:
            dependents.discard(sa)
        for s in dependents:
            left = self.waiting.get(s)
            if left is None:
                left = self._producers_left(s)
            left -= 1
            self.waiting[s] = left
            if left == 0:
                heapq.heappush(self.ready, (self.first_m if s == sa else p.first[s], s))

    def _producers_left(self, s: int) -> int:
        """How many of the merged graph's producers of step `s`'s kernel had not run at d
        (a and b counted once, as m)."""
        p, sa, sb, d = self.p, self.sa, self.sb, self.d
        nodes = (p.order[sa], p.order[sb]) if s == sa else (p.order[s],)
        steps = set()
        for n in nodes:
            for q in p.graph._node_producers()[n]:
                t = p.step_of[q]
                steps.add(sa if t == sb else t)
        if s == sa:
            steps.discard(sa)
        return sum(1 for t in steps if t >= d)
