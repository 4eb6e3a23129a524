"""The structure `npu-insert-sync` works on: levels, nodes and dependencies.

A kernel body is a tree of blocks (the kernel's, `scf.for` bodies, `scf.if`
branches). Every block is a LEVEL; its NODES are the ops directly in it that are
instructions or contain some (a nested loop or `scf.if` is one node that uses
every pipe its instructions use). Sync is always placed between the nodes of
one level, never inside a branch for a dependency that crosses it, so every
`set_flag` of a level executes as often as its `wait_flag`.

A DEPENDENCY is two instructions on different pipes that may touch common bytes,
one writing (`access_conflicts.py`), where one may run before the other:

* forward: in the innermost block holding both, the earlier one's node comes
  first: they run in the same execution of that block, the dependency is
  between those two nodes of that level;
* carried: for every loop around that block, a later iteration of the loop
  runs the second instruction after the first ran in an earlier one: a
  dependency of the loop body's level from the node holding the first to the
  node holding the second (possibly the same node, or an earlier one). Not
  when both are in one nested loop that itself carries the dependency from an
  iteration to the next: that loop's flags order it across its runs too
  (`sync_plan.py`).

Instructions on the scalar pipe S need no sync before later ones: the scalar
unit issues everything in program order, and every instruction knows what the
scalar unit knew when it issued it (as the simulator's race check models it).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects import scf
from xdsl.ir import Block, Operation

from ...dialects import npu
from .access_conflicts import IndexFacts, KernelAccesses, MemoryAccess, Relation
from .affine import Interval, loop_of_induction_variable
from .buffers import SYNC_OPS

PIPE_INDEX = {name: i for i, name in enumerate(npu.PIPES)}
PIPE_COUNT = len(npu.PIPES)
S = PIPE_INDEX["S"]


@dataclass(frozen=True)
class Dependency:
    """Node `x` (pipe `p`) must be ordered before node `y` (pipe `q`): in the same
    iteration of the level's block, or with `carried` x in one iteration and y in
    the next. When x (y) is a nested loop, `xi` (`yi`) is the node of its body
    holding the instruction (-1: the whole node)."""

    x: int
    y: int
    p: int
    q: int
    carried: bool
    xi: int = -1
    yi: int = -1

    @property
    def producer(self) -> tuple[int, int]:
        """Where the producer's last instance is, in program order."""
        return (self.x, self.xi if self.xi >= 0 else 1 << 30)


@dataclass(eq=False)
class Level:
    """One block's nodes and dependencies (identity semantics: one per block)."""

    block: Block
    nodes: list[Operation]
    pipes: list[frozenset[int]]  # per node, the pipes its instructions use
    dependencies: set[Dependency] = field(default_factory=set)

    @property
    def loop(self) -> scf.ForOp | None:
        """The loop whose body this level is (its iterations carry dependencies)."""
        parent = self.block.parent_op()
        return parent if isinstance(parent, scf.ForOp) else None

    def index(self, op: Operation) -> int:
        return self._index[op]

    def __post_init__(self):
        self._index = {op: i for i, op in enumerate(self.nodes)}
        self.size = len(self.nodes)

    def uses_pipe(self, pipe: int, start: int, stop: int) -> bool:
        """Whether a node in [start, stop) uses `pipe`."""
        return any(pipe in self.pipes[i] for i in range(max(start, 0), min(stop, self.size)))

    def last_node_using(self, pipe: int) -> int:
        return max((i for i, pipes in enumerate(self.pipes) if pipe in pipes), default=-1)

    def keep_dominant_dependencies(self) -> None:
        """Drop the dependencies that ordering others implies: with x -> y ordered,
        every earlier producer on the same pipe is ordered before every later
        consumer on the same pipe (pipes run in order), and a forward x -> y orders
        x's iteration before all of the next one. Only a dependency whose consumer
        is an instruction implies others: one into a nested loop or branch may be
        ordered inside it, which orders nothing when it does not run."""
        groups: dict[tuple[int, int], list[Dependency]] = {}
        for d in self.dependencies:
            groups.setdefault((d.p, d.q), []).append(d)
        kept: set[Dependency] = set()
        for deps in groups.values():
            forward = self._skyline([d for d in deps if not d.carried])
            last_forward_producer = max((d.producer for d in forward if not self.nodes[d.y].regions), default=(-1, 0))
            carried = self._skyline([d for d in deps if d.carried and d.producer > last_forward_producer])
            kept.update(forward, carried)
        self.dependencies = kept

    def _skyline(self, deps: list[Dependency]) -> list[Dependency]:
        """Those no other dependency with an instruction consumer implies (one with a
        later producer and an earlier consumer)."""
        kept, earliest_consumer = [], None
        for d in sorted(deps, key=lambda d: (tuple(-v for v in d.producer), d.y, d.yi)):
            if earliest_consumer is None or d.y < earliest_consumer:
                kept.append(d)
                if not self.nodes[d.y].regions:
                    earliest_consumer = d.y
        return kept


def _footprint(access: MemoryAccess, facts: IndexFacts) -> tuple:
    """(space, storage, first byte, byte after the last, writes) of every instance of
    the access as `KernelAccesses.conflict` sees them, whatever the values of its
    offset's atoms; storage None (wild) when it may share bytes with anything in its
    space: an unknown or unplanned buffer (`KernelAccesses.may_share_bytes`), or an
    offset with an unbounded atom. A loop's induction variable ranges over its
    values and, as `IndexFacts.difference` takes a later iteration's (the value
    plus a distance), beyond them by the longest distance."""
    lo = hi = access.offset.const
    storage = None if access.storage[0] in ("unknown", "alloc") else access.storage
    for atom, c in access.offset.terms.items():
        values = facts.range(atom)
        loop = loop_of_induction_variable(atom)
        distance = facts.distance(loop) if loop is not None else None
        if values.lo is None or values.hi is None or (distance is not None and distance.hi is None):
            storage = None
            break
        if distance is not None:
            values = Interval(values.lo + min(0, distance.lo), values.hi + max(0, distance.hi))
        lo, hi = lo + min(c * values.lo, c * values.hi), hi + max(c * values.lo, c * values.hi)
    return access.space, storage, lo, hi + access.span_bytes, access.writes


def _may_touch_same_bytes(xs: list[tuple], ys: list[tuple]) -> bool:
    """Whether some instances of two instructions' accesses (footprints), one writing,
    may touch a common byte: false means `KernelAccesses.conflict` is false for
    every relation of their instances, so the pair needs no test."""
    for space, storage, lo, hi, writes in xs:
        for y_space, y_storage, y_lo, y_hi, y_writes in ys:
            if (writes or y_writes) and space == y_space:
                if storage is None or y_storage is None or (storage == y_storage and lo < y_hi and y_lo < hi):
                    return True
    return False


def pipe_of(op: npu.InstructionOp) -> int:
    return PIPE_INDEX[op.pipe_name()]


def _is_instruction(op: Operation) -> bool:
    return isinstance(op, npu.InstructionOp) and not isinstance(op, SYNC_OPS)


class KernelLevels:
    """Every level of a kernel with its dependencies."""

    def __init__(self, kernel: npu.KernelOp, accesses: KernelAccesses):
        self.kernel = kernel
        self.accesses = accesses
        self.levels: dict[Block, Level] = {}
        self.pipe = {op: pipe_of(op) for op in accesses.by_instruction}
        self._build(kernel.entry)
        self._paths = {op: self._path(op) for op in accesses.by_instruction}
        self._collect_dependencies()

    # ---- structure ------------------------------------------------------------------

    def _node_pipes(self, op: Operation) -> frozenset[int]:
        if _is_instruction(op):
            return frozenset([self.pipe[op]])
        pipes: set[int] = set()
        for region in op.regions:
            for block in region.blocks:
                self._build(block)
                for inner in self.levels[block].pipes:
                    pipes |= inner
        return frozenset(pipes)

    def _build(self, block: Block) -> None:
        if block in self.levels:
            return
        nodes, pipes = [], []
        for op in block.ops:
            if isinstance(op, SYNC_OPS):
                continue
            op_pipes = self._node_pipes(op) if (_is_instruction(op) or op.regions) else frozenset()
            if op_pipes:
                nodes.append(op)
                pipes.append(op_pipes)
        self.levels[block] = Level(block, nodes, pipes)

    def _path(self, op: Operation) -> list[tuple[Block, Operation]]:
        """(block, the node of that block holding `op`) from the kernel down to `op`."""
        path = []
        while op is not self.kernel:
            block = op.parent_block()
            path.append((block, op))
            op = block.parent_op()
        return path[::-1]

    def levels_bottom_up(self) -> list[Level]:
        """Inner levels before the levels holding them."""
        order: list[Level] = []

        def visit(block: Block) -> None:
            for op in self.levels[block].nodes:
                for region in op.regions:
                    for inner in region.blocks:
                        visit(inner)
            order.append(self.levels[block])

        visit(self.kernel.entry)
        return order

    # ---- dependencies ---------------------------------------------------------------

    def _candidate_pairs(self):
        """Ordered pairs (earlier, later) of instructions on different pipes sharing a
        space, one writing there; the earlier one not on the scalar pipe. The
        instructions are numbered for the pairwise walk (an op's hash is a Python
        call)."""
        instructions = list(self.accesses.by_instruction)
        accesses = list(self.accesses.by_instruction.values())
        pipes = [self.pipe[op] for op in instructions]
        by_space: dict[str, list[int]] = {}
        for i, ops_accesses in enumerate(accesses):
            for space in {a.space for a in ops_accesses}:
                by_space.setdefault(space, []).append(i)
        footprints = [[_footprint(a, self.accesses.facts) for a in ops_accesses] for ops_accesses in accesses]
        seen = set()
        for space, members in by_space.items():
            writers = {i for i in members if any(a.writes and a.space == space for a in accesses[i])}
            for x in members:
                pipe_x = pipes[x]
                if pipe_x == S:
                    continue
                x_writes, footprint_x = x in writers, footprints[x]
                for y in members:
                    if x == y or pipe_x == pipes[y] or (not x_writes and y not in writers):
                        continue
                    if (x, y) not in seen:
                        seen.add((x, y))
                        if _may_touch_same_bytes(footprint_x, footprints[y]):
                            yield instructions[x], instructions[y]

    def _collect_dependencies(self) -> None:
        for x, y in self._candidate_pairs():
            path_x, path_y = self._paths[x], self._paths[y]
            depth = 0
            while depth + 1 < min(len(path_x), len(path_y)) and path_x[depth + 1][0] is path_y[depth + 1][0]:
                depth += 1
            # path_x[depth][0] is the innermost block holding both (their nodes there differ
            # unless both sit in different regions of one nested op, or are the same op).
            block = path_x[depth][0]
            level = self.levels[block]
            node_x, node_y = level.index(path_x[depth][1]), level.index(path_y[depth][1])
            p, q = self.pipe[x], self.pipe[y]
            if node_x < node_y and self.accesses.conflict(x, y, Relation.forward(block)):
                level.dependencies.add(
                    Dependency(node_x, node_y, p, q, False, self._inner(path_x, depth), self._inner(path_y, depth))
                )
            carried_inside = False  # by the loop that is x's and y's node at the level below
            for d in range(depth, -1, -1):
                loop = path_x[d][0].parent_op()
                carried = isinstance(loop, scf.ForOp) and self.accesses.conflict(
                    x, y, Relation.across_iterations(loop)
                )
                # Between two runs of a nested loop, x and y are ordered as between two
                # of its iterations when one iteration carries the dependency to the next
                # (the loop's flags are passed through or closed around it: either way
                # its next run's waits learn at least what they would in its next
                # iteration); the level holding it adds nothing.
                if carried and not carried_inside:
                    body = self.levels[path_x[d][0]]
                    body.dependencies.add(
                        Dependency(
                            body.index(path_x[d][1]), body.index(path_y[d][1]), p, q, True,
                            self._inner(path_x, d), self._inner(path_y, d),
                        )
                    )
                carried_inside = carried
        for level in self.levels.values():
            level.keep_dominant_dependencies()

    def _inner(self, path: list[tuple[Block, Operation]], depth: int) -> int:
        """The index of the node inside the nested loop `path[depth][1]` holding the
        instruction, or -1 (an instruction, or a branch)."""
        if depth + 1 >= len(path) or not isinstance(path[depth][1], scf.ForOp):
            return -1
        block, node = path[depth + 1]
        return self.levels[block].index(node)
