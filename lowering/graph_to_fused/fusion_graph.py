"""The graph automatic fusion works on: nodes that are sets of `ge` ops (each
node becomes one kernel), the data edges between them, and the two global
properties a merge must not break: acyclicity and peak memory.

A node starts as one op; merging two nodes makes one node of their ops. The IR
is not touched until the end (`grouping.py` turns nodes into `fused.group`s),
so everything here is computed from the ops and their (unchanging) uses, and a
`Part` (what a node reads, writes and keeps inside) depends only on its ops and
is cached by them.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property, lru_cache

from xdsl.dialects import func
from xdsl.ir import Block, Operation, SSAValue
from xdsl.traits import IsTerminator

from ...core import dtypes
from ...dialects import ge
from ...dialects.fused.kinds import PatternKind, pattern_kind
from .graph import splat_constant
from .peak_memory import PeakProfile


def value_bytes(v: SSAValue) -> int:
    return _type_bytes(v.type)


@lru_cache(maxsize=4096)
def _type_bytes(t) -> int:
    return dtypes.tensor_bytes(t)


def is_weight(v: SSAValue) -> bool:
    """A constant read from global memory (not a splat, which becomes an immediate)."""
    return isinstance(v.owner, ge.ConstOp) and splat_constant(v) is None


@dataclass(frozen=True)
class Part:
    """A set of ops seen as one kernel: what it reads from and writes to global
    memory, and what stays inside."""

    ops: tuple[Operation, ...]  # in block order
    inputs: tuple[SSAValue, ...]  # external operands, splat constants excluded
    outputs: tuple[SSAValue, ...]  # results used outside the part
    internal: tuple[SSAValue, ...]  # results used only inside (or not at all)
    kinds: tuple[PatternKind, ...]  # of the ops

    @cached_property
    def cube(self) -> Operation | None:
        return next((op for op, k in zip(self.ops, self.kinds) if k == PatternKind.CUBE), None)

    @cached_property
    def traffic_bytes(self) -> int:
        """Bytes moved from and to global memory when this part is one kernel."""
        return sum(value_bytes(v) for v in (*self.inputs, *self.outputs))

    @cached_property
    def output_bytes(self) -> int:
        return sum(value_bytes(v) for v in self.outputs)

    @cached_property
    def sized_outputs(self) -> tuple[tuple[SSAValue, int], ...]:
        return tuple((v, value_bytes(v)) for v in self.outputs)

    @cached_property
    def activation_inputs(self) -> tuple[tuple[SSAValue, int], ...]:
        """The inputs that are not weights, with their bytes (what `peak_bytes` frees)."""
        return tuple((v, value_bytes(v)) for v in self.inputs if not is_weight(v))

    def describe(self, limit: int = 4) -> str:
        names = [_op_label(op) for op in self.ops]
        shown = ", ".join(names[:limit]) + (f", +{len(names) - limit}" if len(names) > limit else "")
        return "{" + shown + "}"


def _op_label(op: Operation) -> str:
    location = op.location
    line = getattr(getattr(location, "line", None), "data", None)
    return f"{op.name}@{line}" if line is not None else op.name


def make_part(
    ops: list[Operation] | tuple[Operation, ...], kinds: dict[Operation, PatternKind] | None = None,
    splats: dict[SSAValue, bool] | None = None,
) -> Part:
    """The part `ops` (in block order) make; `kinds` caches `pattern_kind`, `splats`
    whether a value is a splat constant (`splat_constant` reads the constant's data:
    a GridSample node test's auto-fusion asked 36 thousand times of a few hundred
    values)."""
    members = set(ops)
    inputs: dict[SSAValue, None] = {}
    for op in ops:
        for v in op.operands:
            owner = v.owner
            if owner in members:
                continue
            if splats is None:
                splat = splat_constant(v) is not None
            elif (splat := splats.get(v)) is None:
                splat = splats[v] = splat_constant(v) is not None
            if splat:
                continue
            inputs.setdefault(v, None)
    outputs, internal = [], []
    for op in ops:
        for r in op.results:
            used_outside = any(use.operation not in members for use in r.uses)
            (outputs if used_outside else internal).append(r)
    op_kinds = tuple(kinds[op] if kinds is not None else pattern_kind(op) for op in ops)
    return Part(tuple(ops), tuple(inputs), tuple(outputs), tuple(internal), op_kinds)


class FusionGraph:
    """Nodes (sets of ops) over the compute ops of one block."""

    def __init__(self, block: Block):
        self.block = block
        self.index: dict[Operation, int] = {}
        self.node_of: dict[Operation, int] = {}
        self.members: dict[int, list[Operation]] = {}
        for i, op in enumerate(block.ops):
            self.index[op] = i
            if isinstance(op, ge.ConstOp | func.ReturnOp) or op.has_trait(IsTerminator):
                continue
            self.node_of[op] = i
            self.members[i] = [op]
        self._parts: dict[frozenset[Operation], Part] = {}
        # Of the nodes as they are (`merge` resets them): asked for every candidate merge.
        self._producers: dict[int, set[int]] | None = None
        self._consumers: dict[int, frozenset[int]] = {}
        self._node_parts: dict[int, Part] = {}
        self._reach: dict[int, int] | None = None
        self._profile: PeakProfile | None = None
        self._kinds = {op: pattern_kind(op) for op in self.node_of}
        self._splats: dict[SSAValue, bool] = {}  # the block's ops are not changed while the graph lives
        self.returned: set[SSAValue] = set()
        last = block.last_op
        if last is not None and last not in self.node_of:
            self.returned = set(last.operands)

    # ---- nodes and edges ------------------------------------------------------------------

    def nodes(self) -> list[int]:
        return sorted(self.members, key=self.position)

    def position(self, node: int) -> int:
        """Where the node's kernel goes: its earliest op (see `schedule`; members are in block order)."""
        return self.index[self.members[node][0]]

    def part(self, node: int) -> Part:
        known = self._node_parts.get(node)
        if known is None:
            known = self._node_parts[node] = self.part_of(self.members[node])
        return known

    def part_of(self, ops: list[Operation]) -> Part:
        key = frozenset(ops)
        if key not in self._parts:
            self._parts[key] = make_part(sorted(ops, key=self.index.__getitem__), self._kinds, self._splats)
        return self._parts[key]

    def merged_part(self, a: int, b: int) -> Part:
        return self.part_of(self.members[a] + self.members[b])

    def producers(self, node: int) -> set[int]:
        found = set()
        for v in self.part(node).inputs:
            owner = v.owner
            if isinstance(owner, Operation) and owner in self.node_of:
                found.add(self.node_of[owner])
        found.discard(node)
        return found

    def consumers(self, node: int) -> frozenset[int]:
        known = self._consumers.get(node)
        if known is not None:
            return known
        found = set()
        for v in self.part(node).outputs:
            for use in v.uses:
                if use.operation in self.node_of:
                    found.add(self.node_of[use.operation])
        found.discard(node)
        known = self._consumers[node] = frozenset(found)
        return known

    def readers(self, v: SSAValue) -> list[int]:
        """The nodes reading `v`, in order."""
        return sorted({self.node_of[u.operation] for u in v.uses if u.operation in self.node_of}, key=self.position)

    def merge(self, a: int, b: int) -> int:
        """Makes one node of `a` and `b`; returns its id."""
        keep, gone = (a, b) if self.position(a) <= self.position(b) else (b, a)
        # The consumer sets that name a or b: theirs and their producers'.
        for n in (a, b, *self.producers(a), *self.producers(b)):
            self._consumers.pop(n, None)
        for op in self.members[gone]:
            self.node_of[op] = keep
        self.members[keep] += self.members.pop(gone)
        self.members[keep].sort(key=self.index.__getitem__)
        self._producers = None
        self._node_parts.pop(keep, None)
        self._node_parts.pop(gone, None)
        self._reach = None
        self._profile = None
        return keep

    # ---- global properties -----------------------------------------------------------------

    def creates_cycle(self, a: int, b: int) -> bool:
        """Merging `a` and `b` closes a cycle iff one reaches the other through a
        third node."""
        return self._reaches_through(a, b) or self._reaches_through(b, a)

    def _reaches_through(self, source: int, target: int) -> bool:
        reach = self._descendants()
        return any(n != target and reach[n] >> target & 1 for n in self.consumers(source))

    def _descendants(self) -> dict[int, int]:
        """Each node's descendants (the nodes it reaches through one edge or more)
        as a bit set of node ids, computed once per state of the graph: fusion asks
        `creates_cycle` of every candidate merge at every step, and a walk per
        question made that quadratic in the graph (DenseNet's concatenations reach
        most of the graph)."""
        if self._reach is None:
            reach: dict[int, int] = {}
            for root in self.members:
                if root in reach:
                    continue
                stack = [(root, iter(self.consumers(root)))]
                while stack:
                    node, pending = stack[-1]
                    child = next((n for n in pending if n not in reach), None)
                    if child is not None:
                        stack.append((child, iter(self.consumers(child))))
                        continue
                    stack.pop()
                    bits = 0
                    for n in self.consumers(node):
                        bits |= 1 << n | reach[n]
                    reach[node] = bits
            self._reach = reach
        return self._reach

    def _node_producers(self) -> dict[int, set[int]]:
        """Each node's producers (the other nodes whose results it reads), computed
        once per state of the graph: `schedule` asks it for every candidate merge."""
        if self._producers is None:
            producers: dict[int, set[int]] = {n: set() for n in self.members}
            for n, ops in self.members.items():
                for op in ops:
                    for v in op.operands:
                        owner = v.owner
                        if isinstance(owner, Operation) and owner in self.node_of and self.node_of[owner] != n:
                            producers[n].add(self.node_of[owner])
            self._producers = producers
        return self._producers

    def schedule(self, merged: tuple[int, int] | None = None) -> list[list[Operation]]:
        """The kernels in the order they would run: a topological order of the
        nodes, each as early as its inputs allow (the order `grouping.py`
        produces). With `merged`, as if those two nodes were one."""
        groups = self.members
        if merged is not None:
            groups = dict(groups)
            groups[merged[0]] = groups[merged[0]] + groups.pop(merged[1])
        return [groups[n] for n in self._order(merged)]

    def _order(self, merged: tuple[int, int] | None) -> list[int]:
        """`schedule`'s nodes (`merged`'s first node standing for both)."""
        groups = self.members
        waiting = {n: set(found) for n, found in self._node_producers().items()}
        first = {n: self.index[ops[0]] for n, ops in groups.items()}  # members are in block order
        if merged is not None:
            a, b = merged
            groups = dict(groups)
            del groups[b]
            first[a] = min(first[a], first.pop(b))
            waiting[a] = (waiting[a] | waiting.pop(b)) - {a, b}
            for n, found in waiting.items():
                if b in found:
                    found.discard(b)
                    if n != a:
                        found.add(a)
        dependents: dict[int, list[int]] = {n: [] for n in groups}
        for n, deps in waiting.items():
            for d in deps:
                dependents[d].append(n)
        # Each node's first op is its own: the heap's keys are distinct, so the
        # order does not depend on the order nodes enter it.
        ready = [(first[n], n) for n in groups if not waiting[n]]
        heapq.heapify(ready)
        order = []
        while ready:
            _, n = heapq.heappop(ready)
            order.append(n)
            for d in dependents[n]:
                waiting[d].discard(n)
                if not waiting[d]:
                    heapq.heappush(ready, (first[d], d))
        return order

    def peak_bytes(self, merged: tuple[int, int] | None = None, limit: int | None = None) -> int:
        """Peak global memory of the activations (weights excluded: they are
        resident either way) when the kernels run in `schedule` order; with
        `merged`, as if those two nodes were one (`peak_memory.py`: from the
        current schedule's profile, simulating only where the schedules differ),
        and with `limit` too, any size above `limit` once one is found."""
        if self._profile is None:
            self._profile = PeakProfile(self)
        if merged is None:
            return self._profile.peak
        return self._profile.merged_peak(*merged, self.merged_part(*merged), limit)

    def candidates(self, horizontal: bool) -> Iterator[tuple[int, int, str]]:
        """Pairs of nodes worth trying: producer -> consumer, and (when asked)
        siblings reading the same non-constant value, each with the next reader
        in order (a value read by k nodes gives k - 1 pairs, not k^2 / 2; merged
        siblings then pair with the next one)."""
        seen: set[tuple[int, int]] = set()
        for node in self.nodes():
            for consumer in sorted(self.consumers(node), key=self.position):
                pair = (node, consumer)
                if pair not in seen:
                    seen.add(pair)
                    yield node, consumer, "vertical"
        if not horizontal:
            return
        for v in self._shared_values():
            readers = self.readers(v)
            for a, b in zip(readers, readers[1:]):
                if (a, b) not in seen and (b, a) not in seen:
                    seen.add((a, b))
                    yield a, b, "horizontal"

    def _shared_values(self) -> list[SSAValue]:
        values: dict[SSAValue, None] = {}
        for node in self.nodes():
            for v in self.part(node).inputs:
                if not isinstance(v.owner, ge.ConstOp):
                    values.setdefault(v, None)
        return list(values)
