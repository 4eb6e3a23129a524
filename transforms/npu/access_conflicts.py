"""Which accesses of a kernel's instructions can touch the same bytes.

Every buffer operand of an instruction becomes a `MemoryAccess`: the storage it
lives in, its byte offset as an affine expression (`affine.py`), its 2-D pattern
and whether it reads or writes. Storages:

* a GM argument: one storage per alias class (arguments some launch of the
  kernel passes the same GM buffer for, through `npu.gm_view`s, are one class);
* a placed local buffer (`npu.alloc {offset}`): its space, at the alloc's byte
  offset, so buffers the planner made share bytes are compared byte for byte;
* an unplanned local buffer: the alloc itself. The planner may later place it on
  the bytes of any buffer of its space that is never live at the same time
  (`buffers.Liveness`), so accesses to such a pair always conflict.

`conflict(x, y, relation)` answers for an instance of x and a LATER instance of
y related by `Relation`: in the same execution of a block (`forward`), or in a
later iteration of a loop (`carried`). Atoms defined outside the varying scope
are the same value for both instances and cancel; the loop's induction variable
advances by a multiple of its step; atoms defined inside vary freely within the
range of a constant-bounds loop, or without bound. When the difference of the
two offsets is a single number, the contiguous runs of both patterns are
compared exactly; otherwise the byte spans must be apart for every possible
difference, else the accesses conflict (conservative).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import arith, scf
from xdsl.ir import Block, BlockArgument, Operation, SSAValue

from ...dialects import npu
from ...dialects.npu.access import Pattern, runs_overlap
from ...dialects.npu.base import element_bytes
from .affine import UNBOUNDED, Affine, AffineCache, Interval, constant_int, induction_range, trip_count
from .buffers import Liveness, instructions


@dataclass(frozen=True)
class MemoryAccess:
    instruction: npu.InstructionOp
    storage: Hashable
    offset: Affine  # bytes from the start of the storage
    pattern: Pattern
    itemsize: int
    reads: bool
    writes: bool
    alloc: npu.AllocOp | None  # the local buffer, if it is one
    space: str

    @property
    def span_bytes(self) -> int:
        return self.pattern.span * self.itemsize

    def runs(self, start: int) -> tuple[np.ndarray, int]:
        """Byte starts of the contiguous runs when the access starts at byte `start`."""
        _, length = self.pattern.runs()
        return start + self.pattern.run_starts(0) * self.itemsize, length * self.itemsize


@dataclass(frozen=True)
class Relation:
    """How the instance of the later access relates to that of the earlier one:
    atoms defined in `shared` (or a block enclosing it) have one value for both;
    with `carried`, the later one runs in a later iteration of that loop."""

    shared: Block
    carried: scf.ForOp | None = None

    @staticmethod
    def forward(block: Block) -> Relation:
        return Relation(block)

    @staticmethod
    def across_iterations(loop: scf.ForOp) -> Relation:
        return Relation(loop.parent_block(), loop)


def _defining_block(atom: SSAValue) -> Block | None:
    if isinstance(atom, BlockArgument):
        return atom.block
    return atom.owner.parent_block()


def _encloses(outer: Block, inner: Block | None) -> bool:
    while inner is not None:
        if inner is outer:
            return True
        parent = inner.parent_op()
        inner = parent.parent_block() if parent is not None else None
    return False


class IndexFacts:
    """What offset comparisons ask about atoms and loops, computed once per kernel."""

    def __init__(self):
        self._affine = AffineCache()
        self._ranges: dict[SSAValue, Interval] = {}
        self._distances: dict[scf.ForOp, Interval | None] = {}
        self._shared: dict[tuple[SSAValue, Block], bool] = {}

    def range(self, atom: SSAValue) -> Interval:
        found = self._ranges.get(atom)
        if found is None:
            found = self._ranges[atom] = induction_range(atom) or self._clamped(atom) or UNBOUNDED
        return found

    def _clamped(self, atom: SSAValue) -> Interval | None:
        """The range of an `arith.minsi` / `arith.maxsi` from its operands' (a
        clamped shift is bounded although what it clamps is not)."""
        owner = atom.owner
        if not isinstance(owner, arith.MinSIOp | arith.MaxSIOp):
            return None
        a, b = (self._value_range(v) for v in owner.operands)
        if isinstance(owner, arith.MinSIOp):
            return Interval(_end(min, a.lo, b.lo, None), _end(min, a.hi, b.hi, "other"))
        return Interval(_end(max, a.lo, b.lo, "other"), _end(max, a.hi, b.hi, None))

    def _value_range(self, value: SSAValue) -> Interval:
        offset = self._affine(value)
        total = Interval.point(offset.const)
        for atom, coeff in offset.terms.items():
            total = total + self.range(atom).scaled(coeff)
        return total

    def distance(self, loop: scf.ForOp) -> Interval | None:
        """How far the induction variable advances between two different iterations
        (None: the loop never runs two iterations)."""
        if loop not in self._distances:
            self._distances[loop] = self._distance(loop)
        return self._distances[loop]

    @staticmethod
    def _distance(loop: scf.ForOp) -> Interval | None:
        step = constant_int(loop.step)
        if step is None:
            return UNBOUNDED
        trips = trip_count(loop)
        if trips is None:
            return Interval(step, None)
        if trips < 2:
            return None
        return Interval(step, step * (trips - 1))

    def shared(self, atom: SSAValue, block: Block) -> bool:
        """Whether `atom` has one value throughout an execution of `block`."""
        key = (atom, block)
        found = self._shared.get(key)
        if found is None:
            found = self._shared[key] = _encloses(_defining_block(atom), block)
        return found

    def difference(self, x: Affine, y: Affine, relation: Relation) -> Interval | None:
        """The range of (y's offset - x's offset); None if no such pair of instances exists."""
        total = Interval.point(y.const - x.const)
        carried_iv = relation.carried.body.block.args[0] if relation.carried is not None else None
        for atom in set(x.terms) | set(y.terms):
            cx, cy = x.terms.get(atom, 0), y.terms.get(atom, 0)
            if atom is carried_iv:
                distance = self.distance(relation.carried)
                if distance is None:
                    return None
                total = total + self.range(atom).scaled(cy - cx) + distance.scaled(cy)
            elif self.shared(atom, relation.shared):
                if cx != cy:
                    total = total + self.range(atom).scaled(cy - cx)
            else:
                values = self.range(atom)
                total = total + values.scaled(cy) + values.scaled(-cx)
        return total


def _end(pick, x: int | None, y: int | None, unbounded) -> int | None:
    """min or max of two interval ends, None unbounded: for the end where
    `unbounded` is "other", an unbounded end loses to the other one (min of
    highs, max of lows); for the other end it wins (None)."""
    if x is None or y is None:
        return (y if x is None else x) if unbounded == "other" else None
    return pick(x, y)


def _apart(x: MemoryAccess, y: MemoryAccess, difference: Interval) -> bool:
    """Whether y (starting `difference` bytes after x) misses x's bytes for every
    possible difference."""
    exact = difference.constant
    if exact is not None:
        if exact >= x.span_bytes or exact + y.span_bytes <= 0:
            return True
        if x.pattern.runs()[0] == 1 and y.pattern.runs()[0] == 1:
            return False
        x_starts, x_len = x.runs(0)
        y_starts, y_len = y.runs(exact)
        return not runs_overlap(x_starts, x_len, y_starts, y_len)
    below = difference.hi is not None and difference.hi + y.span_bytes <= 0
    above = difference.lo is not None and difference.lo >= x.span_bytes
    return below or above or _in_the_gaps(x, y, difference)


def _pitch(access: MemoryAccess) -> int | None:
    """Bytes from one contiguous run to the next (None: a single run)."""
    starts, _ = access.runs(0)
    return int(starts[1] - starts[0]) if len(starts) > 1 else None


def _in_the_gaps(x: MemoryAccess, y: MemoryAccess, difference: Interval) -> bool:
    """Whether y's runs fall between x's for every difference in a bounded range:
    runs at one pitch (rows of one row stride, NZ blocks of one block stride), y's
    starting `c` bytes into x's pitch with x's run before it and the next one after
    it for every c the range allows (an A panel read at a loop-varying column while
    other columns of it are staged)."""
    if difference.lo is None or difference.hi is None:
        return False
    x_pitch, y_pitch = _pitch(x), _pitch(y)
    pitch = x_pitch or y_pitch
    if pitch is None or (x_pitch is not None and y_pitch is not None and x_pitch != y_pitch):
        return False
    if x_pitch is None:  # the periodic one first: y's runs in x's gaps is symmetric
        return _in_the_gaps(y, x, Interval(-difference.hi, -difference.lo))
    _, x_run = x.runs(0)
    _, y_run = y.runs(0)
    window = difference.lo // pitch * pitch
    return difference.lo - window >= x_run and difference.hi - window + y_run <= pitch


class KernelAccesses:
    """The memory accesses of one kernel's instructions, grouped for conflict tests."""

    def __init__(self, kernel: npu.KernelOp, liveness: Liveness | None = None, launches: list | None = None):
        """`launches`: the kernel's launches, when the caller has them (a pass over
        every kernel finds them in one walk of the host code)."""
        self.kernel = kernel
        self.affine = AffineCache()
        self.facts = IndexFacts()
        self.liveness = liveness or Liveness(kernel)
        self.gm_class = gm_alias_classes(kernel, launches)
        self.by_instruction: dict[npu.InstructionOp, list[MemoryAccess]] = {
            op: self._accesses(op) for op in instructions(kernel)
        }

    def _accesses(self, op: npu.InstructionOp) -> list[MemoryAccess]:
        result = []
        for access in op.accesses(op.attr_values()):
            buffer = op.operands[access.operand]
            itemsize = element_bytes(buffer.type)
            offset = self.affine(op.operands[access.operand + 1]).scaled(itemsize)
            storage, base, alloc = self._storage(buffer)
            space = str(npu.space_of(buffer.type))
            result.append(
                MemoryAccess(
                    op, storage, offset.shifted(base), access.pattern, itemsize, access.reads, access.writes, alloc, space
                )
            )
        return result

    def _storage(self, buffer: SSAValue) -> tuple[Hashable, int, npu.AllocOp | None]:
        owner = buffer.owner
        if isinstance(owner, npu.AllocOp):
            offset = owner.attr_values().offset
            if offset is None:
                return ("alloc", owner), 0, owner
            return ("space", str(npu.space_of(buffer.type))), offset, owner
        if isinstance(buffer, BlockArgument) and buffer.block is self.kernel.entry:
            return ("gm", self.gm_class[buffer.index]), 0, None
        return ("unknown", str(npu.space_of(buffer.type))), 0, None

    def may_share_bytes(self, x: MemoryAccess, y: MemoryAccess) -> bool:
        """Different storages that may still be the same bytes: an unknown buffer and
        anything in its space, or two local buffers the planner may overlap."""
        if x.space != y.space:
            return False
        if "unknown" in (x.storage[0], y.storage[0]):
            return True
        if x.alloc is None or y.alloc is None:
            return False
        return not self.liveness.overlap(x.alloc, y.alloc)

    def conflict(self, earlier: npu.InstructionOp, later: npu.InstructionOp, relation: Relation) -> bool:
        """Whether an instance of `earlier` and a later instance of `later` (related by
        `relation`) touch common bytes, one of them writing."""
        for x in self.by_instruction[earlier]:
            for y in self.by_instruction[later]:
                if not (x.writes or y.writes):
                    continue
                if x.storage != y.storage:
                    if self.may_share_bytes(x, y):
                        return True
                    continue
                difference = self.facts.difference(x.offset, y.offset, relation)
                if difference is not None and not _apart(x, y, difference):
                    return True
        return False


def gm_alias_classes(kernel: npu.KernelOp, launches: list | None = None) -> list[int]:
    """For each GM argument, the index of the first argument that may be the same GM
    buffer in some launch of the kernel (itself if none). `launches`: those of the
    kernel (found in the module when not given)."""
    count = len(kernel.entry.args)
    classes = list(range(count))
    module = kernel.parent_op()
    if module is None:
        return classes
    if launches is None:
        launches = launches_by_kernel(module).get(kernel.sym_name.data, [])
    for launch in launches:
        roots = [_gm_root(v) for v in launch.args]
        for i in range(count):
            for j in range(i):
                if roots[i] is roots[j]:
                    classes[i] = min(classes[i], classes[j])
    return classes


def launches_by_kernel(module: Operation) -> dict[str, list[npu.LaunchOp]]:
    """The launches of the module's host code, per kernel name."""
    found: dict[str, list[npu.LaunchOp]] = {}
    for launch in _launches(module):
        found.setdefault(launch.callee.root_reference.data, []).append(launch)
    return found


def _launches(module: Operation) -> Iterator[npu.LaunchOp]:
    """The launches of the module's host code: kernels launch nothing, so their
    bodies (most of a model's ops) are not walked, once per kernel."""
    for region in module.regions:
        for block in region.blocks:
            for top in block.ops:
                if not isinstance(top, npu.KernelOp):
                    yield from (op for op in top.walk() if isinstance(op, npu.LaunchOp))


def _gm_root(value: SSAValue) -> SSAValue:
    while isinstance(value.owner, npu.GmViewOp):
        value = value.owner.source
    return value
