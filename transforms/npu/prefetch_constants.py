"""`npu-prefetch-constants`: a merged kernel's phase starts loading its constants
(weights, bias rows) before the barrier that opens it.

Between the phases of a merged kernel (`npu-merge-launches`) stands an
`npu.sync_all`: every block drains its pipes and waits for all the others. A
phase's head (MTE2 staging its first operand chunks, the cube waiting for them)
and the previous phase's tail (its last mmads and epilogue, MTE2 idle) then never
overlap, although the constants the head loads do not depend on anything the
previous phase computes. This pass splits the barrier into its halves and moves
those loads between them:

    ... previous phase ...                ... previous phase ...
    npu.sync_all                  ->      npu.sync_all_arrive    // flag stored once the phase is done
    ... load of a constant ...            ... load of a constant ...
                                          npu.sync_all_wait      // every flag read back
                                          ... the rest of the phase ...

The scalar unit issues the loads right after the previous phase's instructions,
so MTE2 runs them as soon as it has issued that phase's own transfers, while the
other pipes finish their work; and since they come after the arrive, the block's
flag does not wait for them: they overlap the barrier itself as well.

An `npu.copy` at the start of a phase is moved when
* its source is a kernel argument every launch binds to an `npu.gm_constant`
  (no phase writes it, so reading it earlier reads the same bytes; the
  simulator checks that of whatever stands between an arrive and its wait);
* its destination is a local buffer no earlier instruction of its phase touches
  but the copies moved before it (the bytes of any buffer placed on them
  included), so moving it earlier in the MTE2 queue reorders it only against
  accesses of other bytes (the moved copies keep their order); the flags that
  hand the buffer on keep their places after the wait, and MTE2 runs in order;
* the buffer's bytes are apart from every buffer of the previous phase, which may
  still be using its own while the copy lands. If they are not, the buffer moves
  to bytes that no buffer of either phase uses, if there are such bytes;
* its offsets are computed from constants and `npu.block_idx` in the phase
  (those computations move with it);
* it stands at the top level of the phase, or at the head of the then-branch of
  `scf.if`s (with no else work) whose conditions are computed the same way: a
  phase on fewer blocks than its kernel, a tile's full and tail cases. It moves
  under the same conditions (a new `scf.if` between the barrier's halves), so a
  block loads only what its own branch would have loaded;
* it comes before the phase's first MTE2 `set_flag` (the first chunk: what the
  phase's first compute waits for, whose landing is on its critical path), or
  the copies moved so far and it fit in the previous phase's MTE2 slack: how much
  longer than MTE2 its busiest other pipe works (`mte2_slack`, from the
  instructions' costs; a lower bound, which leaves out the idle MTE2 time of a
  phase's tail after its last load).

The wait covers the moved copies: a block goes on once they have landed and
every flag is read back (the read queues behind them on MTE2, as Ascend C's soft
SyncAll polls with GM -> UB copies). Measured after 18685c3, the read hardly
ever waits for them: at none of BERT-4L's 29 barriers (bench/transformer_rows.py)
did a block's read start after the last block's flag had landed, at the BERT
layer's six once (one block, 112 cycles); the copies' cost is rather their share
of the HBM while the previous phase stores its last results (the BERT layer's LN1
phase: its late blocks' last stores wait behind the FFN weights' prefetch).
Without the first-chunk rule the BERT layer takes 41,320 cycles instead of
37,721, without the pass 41,890. A barrier with nothing to move is left alone. LLaMA-4L's gated feed-forward phase (30 of 32
blocks, its last column item a case of its own) loaded its weights' first chunk
after the barrier: fill 1649 of 5187 cycles; under its guards it prefetches,
4,490-4,536 cycles (the norm phase before it takes the loads: 1,422 -> ~1,750).
On the BERT layer (ascend910) the attention output
projection's weights all move into the attention phase, and the first chunk of
each FFN projection's weights into the phase before it: 42142 cycles with the
copies before an `npu.sync_all`, 41630 between the halves (measured when this
pass was written; tilings chosen since move other chunks).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from ...core.passes import record_statistic
from ...dialects import npu
from ...dialects.ge.base import Kind, to_attribute
from ...simulator.hardware import HardwarePreset, load_preset
from ...simulator.npu.instructions import pipe_cycles
from .affine import trip_count
from .buffers import instructions, root_alloc
from .plan_local_memory import lowest_free_offset


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


PHASE_ENDS = (npu.SyncAllOp, npu.SyncAllWaitOp)
"""The ops a phase of a merged kernel ends at (what stands between an arrive and its
wait runs with the phase before)."""


def phases(kernel: npu.KernelOp) -> list[list[Operation]]:
    """The kernel body's top-level ops between its barriers (`npu.sync_all`, or an
    arrive and its wait: what stands between those two runs with the phase before)."""
    groups: list[list[Operation]] = [[]]
    for op in kernel.entry.ops:
        if isinstance(op, PHASE_ENDS):
            groups.append([])
        elif not isinstance(op, (npu.ReturnOp, npu.SyncAllArriveOp)):
            groups[-1].append(op)
    return groups


def constant_arguments(kernel: npu.KernelOp, launches: list[npu.LaunchOp]) -> set[SSAValue]:
    """The kernel's parameters that each of its `launches` binds to an `npu.gm_constant`."""
    if not launches:
        return set()
    return {
        param
        for i, param in enumerate(kernel.entry.args)
        if all(isinstance(launch.args[i].owner, npu.GmConstantOp) for launch in launches)
    }


def offset_slice(value: SSAValue, phase: set[Operation]) -> list[Operation] | None:
    """The ops of `phase` computing `value`, in dependency order, if they are all
    constants, `npu.block_idx` and index arithmetic; None otherwise."""
    ordered: list[Operation] = []

    def visit(v: SSAValue) -> bool:
        op = v.owner
        if not isinstance(op, Operation) or op not in phase:
            return True  # a kernel argument, or defined before the phase
        if op in ordered:
            return True
        if not (isinstance(op, (npu.BlockIdxOp, npu.BlockDimOp)) or (op.name.startswith("arith.") and not op.regions)):
            return False
        if not all(visit(operand) for operand in op.operands):
            return False
        ordered.append(op)
        return True

    return ordered if visit(value) else None


class _PhaseMove:
    """What moves from the head of `phase` to the end of `previous`."""

    def __init__(self, previous: list[Operation], phase: list[Operation], constants: set[SSAValue], hw: HardwarePreset):
        self.hw = hw
        self.constants = constants
        self.phase_ops = set(phase)
        self.previous_spans = [s for s in (span_of(a) for a in _buffers(previous)) if s is not None]
        self.phase_allocs = _allocs(phase)
        self.moved: list[Operation] = []  # in their order in the phase
        self.relocated: dict[npu.AllocOp, int] = {}
        self.touched: list[Span] = []
        # MTE2 time the previous phase leaves idle, and what the moved copies take of it.
        self.slack = mte2_slack(previous, hw)
        self.spent = 0
        self.first_chunk = True  # before the phase's first MTE2 flag: what its first compute waits for
        self.guards: tuple[SSAValue, ...] = ()  # the conditions of the scf.if ops the visit is in
        self.guarded: dict[Operation, tuple[SSAValue, ...]] = {}  # a moved copy -> the guards it moves under
        self._visit_all(phase)

    def _visit_all(self, ops) -> None:
        for op in ops:
            if isinstance(op, npu.SetFlagOp) and op.attr_values().src == "MTE2":
                self.first_chunk = False
            self._visit(op)

    def _visit(self, op: Operation) -> None:
        if isinstance(op, npu.CopyOp) and self._move_copy(op):
            return
        if self._guard(op) is not None:
            self._visit_guarded(op)
            return
        for instruction in instructions(op):  # op itself, or those nested in it
            for i in instruction.buffer_operands():
                alloc = root_alloc(instruction.operands[i])
                span = span_of(alloc) if alloc is not None else None
                if span is not None:
                    self.touched.append(self._current(alloc, span))

    def _current(self, alloc: npu.AllocOp, span: Span) -> Span:
        offset = self.relocated.get(alloc)
        return span if offset is None else Span(span.space, offset, offset + span.end - span.start)

    def _move_copy(self, copy: npu.CopyOp) -> bool:
        if copy.src not in self.constants:
            return False
        alloc = root_alloc(copy.dst)
        span = span_of(alloc) if alloc is not None else None
        if span is None or alloc not in self.phase_ops:
            return False
        span = self._current(alloc, span)
        if any(span.overlaps(t) for t in self.touched):
            return False
        cycles = pipe_cycles(self.hw, copy)
        if not self.first_chunk and self.spent + cycles > self.slack:
            return False
        slices = [offset_slice(v, self.phase_ops) for v in (copy.operands[1], copy.operands[3], *self.guards)]
        if any(s is None for s in slices):
            return False
        if any(span.overlaps(p) for p in self.previous_spans) and not self._relocate(alloc, span):
            return False
        for op in [x for piece in slices for x in piece]:
            if op not in self.moved:
                self.moved.append(op)
        if alloc not in self.moved:
            self.moved.append(alloc)
        # Not a touch that holds back the next copy into the buffer: that one moves
        # after this one, in order (a mask's 16-column blocks, one copy each).
        self.moved.append(copy)
        self.guarded[copy] = self.guards
        self.spent += cycles
        return True

    def _guard(self, op: Operation) -> SSAValue | None:
        """The condition of an `scf.if` with a then-branch alone and no results (a
        phase on fewer blocks than its kernel, an item's tail): the copies at the
        head of that branch may move under the same condition."""
        if not isinstance(op, scf.IfOp) or op.results or not op.true_region.blocks:
            return None
        other = [inner for block in op.false_region.blocks for inner in block.ops]
        return op.cond if all(isinstance(inner, scf.YieldOp) for inner in other) else None

    def _visit_guarded(self, op: scf.IfOp) -> None:
        """The branch's ops, as the phase's own, under its condition. The branch
        is the phase's first-chunk head as far as its own flags say (the other
        branches of a tile's cases run instead of it, not before it)."""
        self.phase_ops.update(inner for inner in op.walk() if inner is not op)
        outer, first_chunk = self.guards, self.first_chunk
        self.guards = (*outer, op.cond)
        self._visit_all(list(op.true_region.block.ops))
        self.guards, self.first_chunk = outer, first_chunk

    def _relocate(self, alloc: npu.AllocOp, span: Span) -> bool:
        """Move `alloc` to bytes no buffer of either phase uses (the lowest such)."""
        if alloc in self.relocated:
            return False
        size = span.end - span.start
        others = [self._current(a, x) for a in self.phase_allocs if a is not alloc and (x := span_of(a)) is not None]
        taken = [(s.start, s.end) for s in [*self.previous_spans, *others] if s.space == span.space]
        offset = lowest_free_offset(size, taken, self.hw.alignment[span.space])
        if offset + size > self.hw.capacity(span.space):
            return False
        self.relocated[alloc] = offset
        return True

    def apply(self, barrier: npu.SyncAllOp) -> None:
        """Split the barrier into its halves with the moved ops between them, so that
        they do not hold back this block's arrival."""
        if not self.moved:
            return
        for alloc, offset in self.relocated.items():
            alloc.properties["offset"] = to_attribute(Kind.INT, offset)
        block = barrier.parent_block()
        arrive, wait = npu.SyncAllArriveOp.new(), npu.SyncAllWaitOp.new()
        arrive.location = wait.location = barrier.location
        block.insert_op_before(arrive, barrier)
        # The offsets, guards and buffers first (pure), then the copies in their order,
        # consecutive ones under the same guards in one `scf.if`.
        copies = [op for op in self.moved if isinstance(op, npu.CopyOp)]
        last: tuple[tuple[SSAValue, ...], scf.IfOp] | None = None
        for op in [*(op for op in self.moved if not isinstance(op, npu.CopyOp)), *copies]:
            op.detach()
            guards = self.guarded.get(op, ())
            if not guards:
                block.insert_op_before(op, barrier)
                last = None
            elif last is not None and last[0] == guards:
                body = last[1].true_region.block
                body.insert_op_before(op, body.last_op)
            else:
                outer, innermost = _guarded(op, guards)
                block.insert_op_before(outer, barrier)
                last = (guards, innermost)
        block.insert_op_before(wait, barrier)
        barrier.detach()
        barrier.erase()


def _guarded(op: Operation, guards: tuple[SSAValue, ...]) -> tuple[scf.IfOp, scf.IfOp]:
    """(outermost, innermost) of `op` under an `scf.if` of each of `guards` (the
    outermost first)."""
    inner: Operation = op
    innermost = None
    for cond in reversed(guards):
        inner = scf.IfOp(cond, [], [inner, scf.YieldOp()])
        innermost = innermost or inner
    return inner, innermost


def pipe_work(ops, hw: HardwarePreset) -> Counter:
    """Cycles each pipe is busy running `ops`, from the instructions' attributes: loops
    of constant bounds count every iteration (others one), a branch its lighter side
    (a tail or a guard may not run: the slack it gives is not counted on)."""
    work: Counter = Counter()
    for op in ops:
        if isinstance(op, scf.ForOp):
            trips = trip_count(op) or 1
            for pipe, cycles in pipe_work(op.body.block.ops, hw).items():
                work[pipe] += trips * cycles
        elif isinstance(op, scf.IfOp):
            branches = [pipe_work(region.block.ops, hw) for region in op.regions if region.blocks]
            for pipe in {p for branch in branches for p in branch}:
                work[pipe] += min(branch[pipe] for branch in branches)
        elif isinstance(op, npu.InstructionOp):
            work[op.pipe_name()] += pipe_cycles(hw, op)
    return work


def mte2_slack(ops, hw: HardwarePreset) -> int:
    """How much longer than MTE2 the busiest other pipe of `ops` works: MTE2 time the
    phase leaves idle, at least."""
    work = pipe_work(ops, hw)
    others = [cycles for pipe, cycles in work.items() if pipe != "MTE2"]
    return max(0, max(others, default=0) - work["MTE2"])


def _allocs(ops: list[Operation]) -> list[npu.AllocOp]:
    return [inner for op in ops for inner in op.walk() if isinstance(inner, npu.AllocOp)]


def _buffers(ops: list[Operation]) -> list[npu.AllocOp]:
    """The buffers `ops` allocate or read or write. Not their allocations alone: the
    allocation of a buffer an earlier barrier's move prefetched into this phase stands
    before that barrier's wait (and a guarded one left its `scf.if`), yet the phase
    still reads the buffer."""
    found = dict.fromkeys(_allocs(ops))
    for op in ops:
        for instruction in instructions(op):
            for i in instruction.buffer_operands():
                alloc = root_alloc(instruction.operands[i])
                if alloc is not None:
                    found.setdefault(alloc)
    return list(found)


def prefetch_constants(kernel: npu.KernelOp, launches: list[npu.LaunchOp], hw: HardwarePreset) -> int:
    """Move each phase's leading constant loads between the halves of its barrier;
    returns how many."""
    boundaries = [op for op in kernel.entry.ops if isinstance(op, PHASE_ENDS)]
    constants = constant_arguments(kernel, launches) if boundaries else set()
    if not constants:
        return 0
    groups = phases(kernel)
    moved = 0
    for barrier, previous, phase in zip(boundaries, groups, groups[1:]):
        if not isinstance(barrier, npu.SyncAllOp):
            continue  # split already
        move = _PhaseMove(previous, phase, constants, hw)
        move.apply(barrier)
        moved += sum(1 for op in move.moved if isinstance(op, npu.CopyOp))
    return moved


@dataclass(frozen=True)
class PrefetchConstantsPass(ModulePass):
    """Start each phase's constant loads (weights, bias rows) of a merged kernel before the barrier that opens it, so they overlap the previous phase's tail and the barrier."""

    name = "npu-prefetch-constants"

    hw: str = "ascend910"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        hw = load_preset(self.hw)
        launches: dict[str, list[npu.LaunchOp]] = {}
        for launch in op.walk():
            if isinstance(launch, npu.LaunchOp):
                launches.setdefault(launch.callee.string_value(), []).append(launch)
        moved = 0
        for kernel in [k for k in op.walk() if isinstance(k, npu.KernelOp)]:
            moved += prefetch_constants(kernel, launches.get(kernel.sym_name.data, []), hw)
        record_statistic(self.name, "copies prefetched", moved)
