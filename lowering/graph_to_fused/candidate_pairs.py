"""The candidate pairs of a fusion graph, kept up to date across merges.

`FusionGraph.candidates` lists the pairs worth trying from scratch: every
producer -> consumer edge (vertical), and each two consecutive readers of a
shared non-constant value that no edge joins (horizontal). Listing (and looking
up) all of them again after each merge made automatic fusion quadratic in the
graph (GridSample: 196 merges of about 300 pairs each). A merge of a and b
into `keep` changes only:

* the edges with an end in a or b: they become `keep`'s;
* the reader lists of the values the ops of a and b read (a and b are one
  reader now, at `keep`'s place, which is a's or b's; every other node keeps
  its place), hence those values' consecutive reader pairs.

So `CandidatePairs` keeps the edges, each shared value's consecutive reader
pairs and how many values give each pair, and after a merge recomputes those
only. `merge` also returns the pairs that appeared, in the order `candidates`
lists them: fusion evaluates new pairs in that order, so its debug lines are
the same as when it listed every pair at every step. `pairs` always equals
`{(a, b): how for a, b, how in graph.candidates(horizontal)}`
(tests/unit/test_fusion_candidate_pairs.py checks it after every merge).
"""

from __future__ import annotations

from collections import Counter
from itertools import chain

from xdsl.ir import Operation, SSAValue

from ...dialects import ge
from .fusion_graph import FusionGraph

Pair = tuple[int, int]
VERTICAL, HORIZONTAL = "vertical", "horizontal"


class CandidatePairs:
    """The current candidate pairs of `graph` (`pairs`: pair -> how)."""

    def __init__(self, graph: FusionGraph, horizontal: bool):
        self.graph = graph
        self.horizontal = horizontal
        self.edges: set[Pair] = {(n, c) for n in graph.members for c in graph.consumers(n)}
        self.value_pairs: dict[SSAValue, list[Pair]] = {}
        self.shared: Counter[Pair] = Counter()  # pair -> how many values give it
        if horizontal:
            for v in graph._shared_values():
                self._add_value(v)
        self.pairs: dict[Pair, str] = {}
        for pair in chain(self.edges, list(self.shared)):
            self._refresh(pair)

    def initial(self) -> list[tuple[int, int, str]]:
        """The pairs in `FusionGraph.candidates` order."""
        return list(self.graph.candidates(self.horizontal))

    def merge(self, a: int, b: int) -> tuple[int, list[Pair], list[tuple[int, int, str]]]:
        """Merges `a` and `b` in the graph. Returns the kept node, the pairs that
        changed as they were (gone, how changed, or an end in a or b: their nodes
        changed) and as they are now, these in `FusionGraph.candidates` order."""
        g = self.graph
        values = self._read_values(a) | self._read_values(b)
        old_edges = {(p, n) for n in (a, b) for p in g.producers(n)} | {(n, c) for n in (a, b) for c in g.consumers(n)}
        self.edges -= old_edges
        affected = old_edges | {(y, x) for x, y in old_edges}
        for v in values:
            affected.update(self._drop_value(v))
        keep = g.merge(a, b)
        new_edges = {(p, keep) for p in g.producers(keep)} | {(keep, c) for c in g.consumers(keep)}
        self.edges |= new_edges
        affected |= new_edges | {(y, x) for x, y in new_edges}
        if self.horizontal:
            for v in values:
                affected.update(self._add_value(v))
        before = {pair: self.pairs[pair] for pair in affected if pair in self.pairs}
        for pair in affected:
            self._refresh(pair)
        # A pair between two other nodes that some value still gives as before is
        # unchanged (and its place in `candidates` may come from a value not
        # recomputed here): left out of both lists.
        changed = {pair for pair in affected if keep in pair or before.get(pair) != self.pairs.get(pair)}
        gone = [pair for pair in before if pair in changed]
        added = [pair for pair in changed if pair in self.pairs]
        return keep, gone, self._in_candidates_order(added, values)

    # ---- bookkeeping ----------------------------------------------------------------------

    def _read_values(self, node: int) -> set[SSAValue]:
        """The non-constant values the ops of `node` read."""
        return {v for op in self.graph.members[node] for v in op.operands if not isinstance(v.owner, ge.ConstOp)}

    def _owner_node(self, v: SSAValue) -> int | None:
        return self.graph.node_of.get(v.owner) if isinstance(v.owner, Operation) else None

    def _add_value(self, v: SSAValue) -> list[Pair]:
        """Records `v`'s consecutive reader pairs if it is shared (an input of some node)."""
        if isinstance(v.owner, ge.ConstOp):
            return []
        g, owner = self.graph, self._owner_node(v)
        if not any(u.operation in g.node_of and g.node_of[u.operation] != owner for u in v.uses):
            return []
        readers = g.readers(v)
        pairs = list(zip(readers, readers[1:]))
        if pairs:
            self.value_pairs[v] = pairs
            self.shared.update(pairs)
        return pairs

    def _drop_value(self, v: SSAValue) -> list[Pair]:
        pairs = self.value_pairs.pop(v, [])
        self.shared.subtract(pairs)
        return pairs

    def _refresh(self, pair: Pair) -> None:
        """`pair`'s entry in `pairs` from the edges and the shared counts."""
        if pair in self.edges:
            self.pairs[pair] = VERTICAL
        elif self.shared[pair] > 0 and pair[::-1] not in self.edges:
            self.pairs[pair] = HORIZONTAL
        else:
            self.pairs.pop(pair, None)
        if self.shared[pair] <= 0:
            self.shared.pop(pair, None)

    def _in_candidates_order(self, pairs: list[Pair], values: set[SSAValue]) -> list[tuple[int, int, str]]:
        """`pairs` as `FusionGraph.candidates` lists them: edges by their producer's
        then their consumer's place; then horizontal pairs by the first value giving
        them (values in the order of their first reading node and their place among
        its inputs), then by their place among its readers."""
        g = self.graph
        vertical = sorted((p for p in pairs if self.pairs[p] == VERTICAL), key=lambda p: (g.position(p[0]), g.position(p[1])))
        wanted = {p for p in pairs if self.pairs[p] == HORIZONTAL}
        rank: dict[Pair, tuple[int, int, int]] = {}
        for v in values:
            found = [p for p in self.value_pairs.get(v, ()) if p in wanted]
            if not found:
                continue
            first, place = self._value_rank(v)
            for p in found:
                key = (first, place, g.position(p[0]))
                if p not in rank or key < rank[p]:
                    rank[p] = key
        horizontal = sorted(wanted, key=rank.__getitem__)
        return [(x, y, VERTICAL) for x, y in vertical] + [(x, y, HORIZONTAL) for x, y in horizontal]

    def _value_rank(self, v: SSAValue) -> tuple[int, int]:
        """Where `FusionGraph._shared_values` lists `v`: its first node reading it
        from outside, and its place among that node's inputs."""
        g, owner = self.graph, self._owner_node(v)
        reader = next(r for r in g.readers(v) if r != owner)
        return g.position(reader), g.part(reader).inputs.index(v)
