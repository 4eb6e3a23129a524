"""Offsets of buffers in one arena so that conflicting buffers never share bytes.

Every strategy is the same placement step applied in a different order: put the
buffer in the smallest gap between the already placed buffers it conflicts
with that is large enough (best fit), or above all of them if none is. What
differs is which buffer goes first:

* `greedy-by-size` (Pisarchyk & Lee 2020, "Efficient Memory Management for
  Deep Neural Net Inference", greedy by size for offset calculation): the
  largest buffers first (ties: earlier first use), so the big ones pack
  tightly and small ones fill the gaps;
* `best-fit-lifetime`: in order of first use, like a best-fit allocator
  running through the schedule (ties: larger first);
* `greedy-by-breadth` (same paper): the launches with the most bytes live
  across them (in host order) first, each placing its buffers largest first;
* `hybrid` (as GE's memory assigner runs several assigners and keeps the
  best): every strategy above, keeping the smallest arena (ties: the first).

Conflicts come from `lifetimes.py` (they follow the concurrent schedule).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .lifetimes import Lifetime


@dataclass(frozen=True)
class Placement:
    strategy: str
    offsets: list[int]  # per lifetime, in the order given
    size: int  # arena bytes


def place_in_order(order: list[int], sizes: list[int], conflicts: list[set[int]]) -> list[int]:
    """Best-fit offsets, placing the buffers in `order`."""
    offsets: list[int | None] = [None] * len(sizes)
    for i in order:
        placed = sorted((offsets[j], offsets[j] + sizes[j]) for j in conflicts[i] if offsets[j] is not None)
        best, best_gap, end = None, None, 0
        for start, stop in placed:
            gap = start - end
            if gap >= sizes[i] and (best_gap is None or gap < best_gap):
                best, best_gap = end, gap
            end = max(end, stop)
        offsets[i] = end if best is None else best
    return offsets  # type: ignore[return-value]  (every index is in `order`)


def _by_size(lifetimes: list[Lifetime]) -> list[int]:
    return sorted(range(len(lifetimes)), key=lambda i: (-lifetimes[i].size, lifetimes[i].first, i))


def _by_lifetime(lifetimes: list[Lifetime]) -> list[int]:
    return sorted(range(len(lifetimes)), key=lambda i: (lifetimes[i].first, -lifetimes[i].size, i))


def _by_breadth(lifetimes: list[Lifetime]) -> list[int]:
    """The launches by the bytes live across them (host order), most first; each
    brings the buffers live across it, largest first."""
    if not lifetimes:
        return []
    span = range(min(life.first for life in lifetimes), max(life.last for life in lifetimes) + 1)
    live = {t: [i for i, life in enumerate(lifetimes) if life.first <= t <= life.last] for t in span}
    breadth = {t: sum(lifetimes[i].size for i in live[t]) for t in span}
    order: dict[int, None] = {}
    for t in sorted(span, key=lambda t: (-breadth[t], t)):
        for i in sorted(live[t], key=lambda i: (-lifetimes[i].size, lifetimes[i].first, i)):
            order.setdefault(i)
    return list(order)


ORDERS: dict[str, Callable[[list[Lifetime]], list[int]]] = {
    "greedy-by-size": _by_size,
    "best-fit-lifetime": _by_lifetime,
    "greedy-by-breadth": _by_breadth,
}

STRATEGIES = (*ORDERS, "hybrid")


def place(lifetimes: list[Lifetime], conflicts: list[set[int]], strategy: str = "hybrid") -> Placement:
    """The placement of `lifetimes` by `strategy` (one of `STRATEGIES`)."""
    if strategy == "hybrid":
        candidates = [place(lifetimes, conflicts, name) for name in ORDERS]
        return min(candidates, key=lambda p: p.size)
    sizes = [life.size for life in lifetimes]
    offsets = place_in_order(ORDERS[strategy](lifetimes), sizes, conflicts)
    size = max((o + s for o, s in zip(offsets, sizes)), default=0)
    return Placement(strategy, offsets, size)


def sequential(lifetimes: list[Lifetime]) -> Placement:
    """No reuse: every buffer gets bytes of its own, one after another."""
    offsets, end = [], 0
    for life in lifetimes:
        offsets.append(end)
        end += life.size
    return Placement("none", offsets, end)
