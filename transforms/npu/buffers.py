"""Local buffers of a kernel: who uses them, which loops overwrite them before
reading them in every iteration, and when they are live.

Three passes share these facts, so they live in one place:

* `npu-double-buffer` may give a buffer two copies only if no iteration reads
  what an earlier one left in it ("iteration-private");
* `npu-plan-local-memory` lets two buffers share bytes only if they are never
  live at the same time;
* `npu-insert-sync`, when it runs before the planner, treats two buffers the
  planner MAY overlap as one (so the sync it inserts stays right after planning).

Positions are a pre-order numbering of the kernel's ops (`linear_positions`): an
op spans [first, last], its nested ops inside. A buffer is live from its first
to its last use, and a use inside a loop keeps it live for the whole loop: even
a buffer each iteration overwrites must not share bytes with another buffer of
the same loop body, or the pipes could no longer work on different iterations at
once (the ping and pong buffers of a double-buffered loop are exactly such a
pair). An enclosing loop extends it further only if the buffer carries values
from one of its iterations to the next (is not iteration-private to it): then
buffers of two phases inside one loop can share bytes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from xdsl.dialects import scf
from xdsl.ir import Block, Operation, SSAValue

from ...dialects import npu
from .affine import AffineCache, Interval, constant_bounds, induction_range, loop_of_induction_variable, trip_count

SYNC_OPS = (npu.SetFlagOp, npu.WaitFlagOp, npu.PipeBarrierOp)


def root_alloc(value: SSAValue) -> npu.AllocOp | None:
    owner = value.owner
    return owner if isinstance(owner, npu.AllocOp) else None


@dataclass(frozen=True)
class Span:
    """The bytes of a placed local buffer."""

    space: str
    start: int
    end: int

    def overlaps(self, other: Span) -> bool:
        return self.space == other.space and self.start < other.end and other.start < self.end


def span_of(alloc: npu.AllocOp) -> Span | None:
    offset = alloc.attr_values().offset
    if offset is None:
        return None
    size = npu.buffer_bytes(alloc.result.type)
    return Span(str(npu.space_of(alloc.result.type)), offset, offset + size)


def instructions(region_op: Operation) -> Iterable[npu.InstructionOp]:
    """The instructions (not syncs) nested in `region_op`, in program order."""
    for op in region_op.walk():
        if isinstance(op, npu.InstructionOp) and not isinstance(op, SYNC_OPS):
            yield op


def buffer_uses(kernel: npu.KernelOp) -> dict[npu.AllocOp, list[npu.InstructionOp]]:
    """Every alloc of the kernel and the instructions that access it."""
    uses: dict[npu.AllocOp, list[npu.InstructionOp]] = {
        op: [] for op in kernel.walk() if isinstance(op, npu.AllocOp)
    }
    for instruction in instructions(kernel):
        for i in instruction.buffer_operands():
            alloc = root_alloc(instruction.operands[i])
            # An instruction's operands are seen together: it is already listed
            # only if it is the last one listed.
            if alloc is not None and (not uses[alloc] or uses[alloc][-1] is not instruction):
                uses[alloc].append(instruction)
    return uses


def is_inside(op: Operation, ancestor: Operation) -> bool:
    parent = op.parent_op()
    while parent is not None:
        if parent is ancestor:
            return True
        parent = parent.parent_op()
    return False


# ---- must-written elements ----------------------------------------------------------


class ElementSet:
    """A set of element indices as sorted, disjoint [lo, hi) intervals."""

    def __init__(self, intervals: list[tuple[int, int]] | None = None):
        self.intervals = intervals or []

    def copy(self) -> ElementSet:
        return ElementSet(list(self.intervals))

    def add(self, lo: int, hi: int) -> None:
        merged = []
        for a, b in self.intervals:
            if b < lo or a > hi:
                merged.append((a, b))
            else:
                lo, hi = min(lo, a), max(hi, b)
        merged.append((lo, hi))
        self.intervals = sorted(merged)

    def covers(self, lo: int, hi: int) -> bool:
        return any(a <= lo and hi <= b for a, b in self.intervals)


def _runs(pattern, offset: int) -> list[tuple[int, int]]:
    _, length = pattern.runs()
    return [(int(s), int(s) + length) for s in pattern.run_starts(offset)]


class PrivacyCheck:
    """Which of `candidates` are overwritten before being read in every iteration of
    `loop`: walks one iteration in program order, tracking the elements certainly
    written so far (constant offsets, unconditional writes; a nested loop's writes
    count after it only if it certainly runs, and so do its sweeps: writes whose
    offsets move with its induction variables only, every iteration's)."""

    def __init__(self, loop: scf.ForOp, candidates: Iterable[npu.AllocOp], affine: AffineCache):
        self.affine = affine
        self.failed: set[npu.AllocOp] = set()
        self.candidates = set(candidates)
        written = {alloc: ElementSet() for alloc in self.candidates}
        self._block(loop.body.block, written)

    @property
    def private(self) -> set[npu.AllocOp]:
        return self.candidates - self.failed

    def _block(self, block: Block, written: dict[npu.AllocOp, ElementSet]) -> None:
        for op in block.ops:
            if isinstance(op, npu.InstructionOp) and not isinstance(op, SYNC_OPS):
                self._instruction(op, written)
            elif isinstance(op, scf.ForOp):
                inner = {a: s.copy() for a, s in written.items()}
                self._block(op.body.block, inner)
                if (trip_count(op) or 0) >= 1:
                    written.update(inner)
                    self._sweeps(op, op, written)
            elif isinstance(op, scf.IfOp):
                for region in (op.true_region, op.false_region):
                    if region.blocks:
                        self._block(region.block, {a: s.copy() for a, s in written.items()})

    def _instruction(self, op: npu.InstructionOp, written: dict[npu.AllocOp, ElementSet]) -> None:
        accesses = op.accesses(op.attr_values())
        for access in sorted(accesses, key=lambda a: a.writes and not a.reads):
            alloc = root_alloc(op.operands[access.operand])
            if alloc not in self.candidates or alloc in self.failed:
                continue
            offset = self.affine(op.operands[access.operand + 1])
            if access.reads and not self._covered(alloc, access.pattern, offset, written[alloc]):
                self.failed.add(alloc)
            elif access.writes and offset.is_constant:
                for lo, hi in _runs(access.pattern, offset.const):
                    written[alloc].add(lo, hi)

    def _sweeps(self, loop: scf.ForOp, region_op: Operation, written: dict[npu.AllocOp, ElementSet]) -> None:
        """Adds the elements the unconditional writes nested in `region_op` (inside
        `loop`, through loops that certainly run) cover over all their iterations,
        when their offsets are affine in those loops' induction variables only:
        e.g. the strips of a tile moved one row per iteration into a staging buffer."""
        for op in region_op.body.block.ops if isinstance(region_op, scf.ForOp) else ():
            if isinstance(op, scf.ForOp) and (trip_count(op) or 0) >= 1:
                self._sweeps(loop, op, written)
            elif isinstance(op, npu.InstructionOp) and not isinstance(op, SYNC_OPS):
                for access in op.accesses(op.attr_values()):
                    alloc = root_alloc(op.operands[access.operand])
                    if not access.writes or alloc not in self.candidates or alloc in self.failed:
                        continue
                    for start in _swept_offsets(self.affine(op.operands[access.operand + 1]), op, loop):
                        for lo, hi in _runs(access.pattern, start):
                            written[alloc].add(lo, hi)

    def _covered(self, alloc: npu.AllocOp, pattern, offset, written: ElementSet) -> bool:
        if offset.is_constant:
            return all(written.covers(lo, hi) for lo, hi in _runs(pattern, offset.const))
        span = Interval.point(offset.const)
        for atom, coeff in offset.terms.items():
            values = induction_range(atom)
            if values is None:
                return written.covers(0, npu.base.element_count(alloc.result.type))
            span = span + values.scaled(coeff)
        return written.covers(span.lo, span.hi + pattern.span)


_MOST_SWEPT = 4096
"""Sweeps of more iterations are not enumerated (their writes are not counted):
the check stays proportional to the kernel's text."""


def _swept_offsets(offset, op: Operation, loop: scf.ForOp) -> list[int]:
    """Every value `offset` takes while `loop` runs, if its terms are induction
    variables of loops from `loop` to `op` with constant bounds (else none)."""
    starts = [offset.const]
    for atom, coeff in offset.terms.items():
        owner = loop_of_induction_variable(atom)
        if owner is None or not (owner is loop or is_inside(owner, loop)) or not is_inside(op, owner):
            return []
        lb, _, step = constant_bounds(owner)
        trips = trip_count(owner)
        if len(starts) * trips > _MOST_SWEPT:
            return []
        starts = [s + coeff * (lb + step * i) for s in starts for i in range(trips)]
    return starts


def iteration_private(
    loop: scf.ForOp, uses: dict[npu.AllocOp, list[npu.InstructionOp]], affine: AffineCache
) -> set[npu.AllocOp]:
    """Allocs defined outside `loop`, used only inside it, that every iteration
    writes before it reads them."""
    candidates = [
        alloc
        for alloc, users in uses.items()
        if users and not is_inside(alloc, loop) and all(is_inside(u, loop) for u in users)
    ]
    return PrivacyCheck(loop, candidates, affine).private if candidates else set()


# ---- liveness -----------------------------------------------------------------------


def linear_positions(kernel: npu.KernelOp) -> dict[Operation, tuple[int, int]]:
    """Pre-order numbering: op -> (first, last), its nested ops in between."""
    positions: dict[Operation, tuple[int, int]] = {}
    counter = 0

    def visit(op: Operation) -> None:
        nonlocal counter
        first = counter
        counter += 1
        for region in op.regions:
            for block in region.blocks:
                for inner in block.ops:
                    visit(inner)
        positions[op] = (first, counter - 1)

    for op in kernel.entry.ops:
        visit(op)
    return positions


class Liveness:
    """Live intervals of a kernel's allocs (see the module docstring); an alloc
    nothing uses is live nowhere (None)."""

    def __init__(self, kernel: npu.KernelOp):
        self.kernel = kernel
        self.uses = buffer_uses(kernel)
        self.positions = linear_positions(kernel)
        self.affine = AffineCache()
        self._private: dict[scf.ForOp, set[npu.AllocOp]] = {}
        self.intervals: dict[npu.AllocOp, tuple[int, int] | None] = {
            alloc: self._interval(alloc, users) for alloc, users in self.uses.items()
        }

    def private_to(self, loop: scf.ForOp) -> set[npu.AllocOp]:
        found = self._private.get(loop)
        if found is None:
            found = self._private[loop] = iteration_private(loop, self.uses, self.affine)
        return found

    def _interval(self, alloc: npu.AllocOp, users: list[npu.InstructionOp]) -> tuple[int, int] | None:
        if not users:
            return None
        lo, hi = None, None
        for user in users:
            first, last = self.positions[user]
            innermost = True
            parent = user.parent_op()
            while parent is not None and parent is not self.kernel:
                if isinstance(parent, scf.ForOp):
                    if not innermost and alloc in self.private_to(parent):
                        break
                    innermost = False
                    first, last = min(first, self.positions[parent][0]), max(last, self.positions[parent][1])
                parent = parent.parent_op()
            lo = first if lo is None else min(lo, first)
            hi = last if hi is None else max(hi, last)
        return lo, hi

    def overlap(self, a: npu.AllocOp, b: npu.AllocOp) -> bool:
        """Whether `a` and `b` are ever live at the same time."""
        x, y = self.intervals.get(a), self.intervals.get(b)
        if x is None or y is None:
            return False
        return x[0] <= y[1] and y[0] <= x[1]
