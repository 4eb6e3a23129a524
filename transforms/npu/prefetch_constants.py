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

Further back: the wait reads the flags back only once MTE2 is free, so a copy
bigger than the previous phase's tail stretches that phase (MobileNetV2's
classifier: 128 KB of weights per block behind a global pool of ~300 cycles made
the pool phase 4,033 cycles). Once every barrier is done, the rows of each
prefetched copy move on to the barriers before (`hoist_prefetches`), the nearest
first, as many rows at each as fit its room, what MTE2 leaves idle there
(`mte2_slack` of the phase it ends, plus `barrier_window`: the latency of that
phase's last GM load and of the block's flag store, which no phase takes away,
less the rows already placed); a row costs its data cycles, or its share of the
HBM with every block of the kernel loading at once if that is slower
(`row_cycles`). The copy splits into row pieces (offsets advanced by the rows'
strides; under its guards, cloned) and goes as far as
* the buffer's bytes stay apart from every buffer of the phases from the farthest
  piece's to the one that reads it (what they allocate, read or write, and the
  buffers other moves keep live across them); if not, the buffer moves to bytes
  none of them uses, if there are such bytes (the phases in between run after the
  piece is issued, and the barriers order them after it: a clash there would
  overwrite the rows, not race; the phase a piece lands in races, which the
  simulator's race checker catches);
* one copy alone writes the buffer at its barrier, and its offsets and guards come
  from constants, `npu.block_idx` and index arithmetic (they move to the farthest
  barrier with the buffer's allocation).
A whole `npu.sync_all` splits where pieces land; a barrier left with nothing
between its halves is whole again. Measured at d967813 and with this change (ge-sim
--pipeline ge-compile, ascend910, ONNX exports of bench/models): MobileNetV2
72,958 -> 68,798 cycles (the pool phase 4,033 -> 722: the classifier's rows land
at 14 earlier barriers, the farthest in phase 15 of 56, 40 phases before it), EfficientNet-B0 127,497 -> 122,899; the BERT layer
37,452 -> 37,454 and MMoE 23,414 -> 23,379 (outputs identical).

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
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from ...core.passes import record_statistic
from ...dialects import npu
from ...dialects.ge.base import Kind, to_attribute
from ...simulator.hardware import HardwarePreset, load_preset
from ...simulator.npu.instructions import pipe_cycles
from .affine import trip_count
from .buffers import Span, instructions, root_alloc, span_of
from .late_waits import sink_phase_waits
from .plan_local_memory import lowest_free_offset


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
        self.touched: list[tuple[Span, tuple[int, int] | None]] = []  # with the blocks touching it (None: any)
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
                    self.touched.append((self._current(alloc, span), self._blocks()))

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
        blocks = self._blocks()
        if any(span.overlaps(t) and _may_meet(blocks, b) for t, b in self.touched):
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

    def _blocks(self) -> tuple[int, int] | None:
        """The blocks the current guards let run ([lo, hi)), None if not known: two
        launches side by side run on disjoint blocks, so a copy of one moves past
        the other's use of the same local bytes (npu-merge-launches plans each
        launch's local memory as its own)."""
        ranges = [r for r in (block_range(g) for g in self.guards) if r is not None]
        if not ranges:
            return None
        return max(r[0] for r in ranges), min(r[1] for r in ranges)

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


def _may_meet(a: tuple[int, int] | None, b: tuple[int, int] | None) -> bool:
    return a is None or b is None or (a[0] < b[1] and b[0] < a[1])


def _constant(value: SSAValue) -> int | None:
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


def block_range(cond: SSAValue) -> tuple[int, int] | None:
    """The blocks [lo, hi) for which `cond` holds, when it is a guard of
    npu-merge-launches' form: `block_idx < n`, or `block_idx >= a and block_idx < b`."""
    owner = cond.owner
    if isinstance(owner, arith.AndIOp):
        left, right = block_range(owner.lhs), block_range(owner.rhs)
        if left is None or right is None:
            return None
        return max(left[0], right[0]), min(left[1], right[1])
    if not isinstance(owner, arith.CmpiOp) or not isinstance(owner.lhs.owner, npu.BlockIdxOp):
        return None
    bound = _constant(owner.rhs)
    predicate = owner.predicate.value.data
    if bound is None:
        return None
    if predicate in (6, 2):  # ult, slt
        return 0, bound
    if predicate in (9, 5):  # uge, sge
        return bound, 1 << 30
    return None


def _guarded(op: Operation, guards: tuple[SSAValue, ...]) -> tuple[scf.IfOp, scf.IfOp]:
    """(outermost, innermost) of `op` under an `scf.if` of each of `guards` (the
    outermost first)."""
    inner: Operation = op
    innermost = None
    for cond in reversed(guards):
        inner = scf.IfOp(cond, [], [inner, scf.YieldOp()])
        innermost = innermost or inner
    return inner, innermost


GM_BYTES = "GM bytes"
"""`pipe_work(..., gm=True)`'s key for the bytes a block's GM transfers move."""


def pipe_work(ops, hw: HardwarePreset, gm: bool = False) -> Counter:
    """Cycles each pipe is busy running `ops`, from the instructions' attributes: loops
    of constant bounds count every iteration (others one), a branch its lighter side
    (a tail or a guard may not run: the slack it gives is not counted on). `gm`: also
    the bytes its transfers move to or from GM (`GM_BYTES`), counted alike."""
    work: Counter = Counter()
    for op in ops:
        if isinstance(op, scf.ForOp):
            trips = trip_count(op) or 1
            for pipe, cycles in pipe_work(op.body.block.ops, hw, gm).items():
                work[pipe] += trips * cycles
        elif isinstance(op, scf.IfOp):
            branches = [pipe_work(region.block.ops, hw, gm) for region in op.regions if region.blocks]
            for pipe in {p for branch in branches for p in branch}:
                work[pipe] += min(branch[pipe] for branch in branches)
        elif isinstance(op, npu.InstructionOp):
            work[op.pipe_name()] += pipe_cycles(hw, op)
            if gm and isinstance(op, npu.TransferOp) and "gm" in op.spaces():
                work[GM_BYTES] += _gm_bytes(op)
    return work


def _gm_bytes(op: npu.TransferOp) -> int:
    a = op.attr_values()
    side = op.src if op.spaces()[0] == "gm" else op.dst
    return a.rows * a.cols * npu.element_bytes(side.type)


def hbm_cycles(ops, hw: HardwarePreset, blocks: int) -> float:
    """The HBM's time for `ops` run by `blocks` blocks at once: the bytes their GM
    transfers move on every block, but no more than the GM buffers they touch hold
    (blocks reading one panel take it from the HBM once, from the L2 after), at the
    HBM's bandwidth shared by all cores."""
    per_block = pipe_work(ops, hw, gm=True)[GM_BYTES]
    buffers = {
        side
        for top in ops
        for op in instructions(top)
        if isinstance(op, npu.TransferOp)
        for side in (op.src, op.dst)
        if str(npu.space_of(side.type)) == "gm"
    }
    held = sum(npu.buffer_bytes(b.type) for b in buffers)
    return min(blocks * per_block, held) / hw.hbm_bytes_per_cycle


def mte2_slack(ops, hw: HardwarePreset) -> int:
    """How much longer than MTE2 the busiest other pipe of `ops` works: MTE2 time the
    phase leaves idle, at least."""
    work = pipe_work(ops, hw)
    others = [cycles for pipe, cycles in work.items() if pipe != "MTE2"]
    return max(0, max(others, default=0) - work["MTE2"])


def hbm_idle(duration: float, hbm: float) -> float:
    """HBM time a phase of `duration` cycles whose transfers keep the HBM busy for
    `hbm` cycles leaves idle."""
    return max(0.0, duration - hbm)


def hbm_room(ops, hw: HardwarePreset, blocks: int, duration: float = 0) -> float:
    """HBM time the phase `ops` (on `blocks` blocks) leaves idle for the next phase's
    prefetched first chunk, from its instructions: its busiest pipe's work (or its
    estimated `duration`, where known) against the HBM time of its transfers
    (`hbm_cycles`), and the barrier's window (`barrier_window`). The chunk is moved
    before the barrier whatever its size (`_PhaseMove`'s first-chunk rule); what
    exceeds this room crosses the HBM while the phase before still needs it, so the
    tiling estimate takes its HBM share off only up to here (lowering/tiling.py
    `Prefetched`). The mlp's f32 cast before its first product (its input's bytes at
    the HBM's bandwidth, little vector work) leaves none beyond the window."""
    work = pipe_work(ops, hw)
    return hbm_idle(max(max(work.values(), default=0), duration), hbm_cycles(ops, hw, blocks)) + barrier_window(ops, hw)


def port_room(ops, hw: HardwarePreset) -> float:
    """MTE2 time per block the phase `ops` leaves idle for the next phase's prefetched
    first chunk: its `mte2_slack` and the barrier's window (`barrier_window`). The
    chunk is moved before the barrier whatever its size and queues behind the
    phase's own loads on each core's MTE2; what exceeds this stretches the phase, so
    the tiling estimate takes the chunk's port time off its fill only up to here
    (lowering/tiling.py `Prefetched.port`)."""
    return mte2_slack(ops, hw) + barrier_window(ops, hw)


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


def prefetch_constants(kernel: npu.KernelOp, launches: list[npu.LaunchOp], hw: HardwarePreset) -> tuple[int, int]:
    """Move each phase's leading constant loads between the halves of its barrier,
    then as many of their rows further back as earlier barriers have room for;
    returns (copies moved, row pieces moved further back)."""
    boundaries = [op for op in kernel.entry.ops if isinstance(op, PHASE_ENDS)]
    constants = constant_arguments(kernel, launches) if boundaries else set()
    if not constants:
        return 0, 0
    groups = phases(kernel)
    moved = 0
    for barrier, previous, phase in zip(boundaries, groups, groups[1:]):
        if not isinstance(barrier, npu.SyncAllOp):
            continue  # split already
        move = _PhaseMove(previous, phase, constants, hw)
        move.apply(barrier)
        moved += sum(1 for op in move.moved if isinstance(op, npu.CopyOp))
    further = hoist_prefetches(kernel, hw)
    for phase, opened_by in zip(phases(kernel)[1:], [op for op in kernel.entry.ops if isinstance(op, PHASE_ENDS)]):
        if isinstance(opened_by, npu.SyncAllWaitOp):
            sink_phase_waits(phase)
    return moved, further


# ---- further back ----------------------------------------------------------------
#
# A split barrier's copies land while the phase before it ends; a copy bigger than
# that phase's MTE2 slack (the classifier's weights after a global pool) stretches
# it, since the wait reads the flags back only once MTE2 is free. Its rows may land
# earlier still: between the halves of an earlier barrier, while the phases in
# between leave MTE2 idle and do not touch the bytes the rows land in.


def barrier_window(group: list[Operation], hw: HardwarePreset) -> int:
    """MTE2 time at a split barrier that `mte2_slack` leaves out and no phase can
    take away: after the phase's last MTE2 transfer its data still lands (the GM
    read latency) before anything computes on it, and the block's flag store lands
    (the UB -> GM latency) before the wait's read can see it."""
    paths = {op.path() for top in group for op in instructions(top) if isinstance(op, npu.TransferOp)}
    loads = [hw.paths[p].latency for p in paths if p.startswith("gm_to_")]
    return max(loads, default=0) + hw.paths["ub_to_gm"].latency


def row_cycles(copy: npu.CopyOp, hw: HardwarePreset, blocks: int) -> float:
    """MTE2 cycles per row of `copy` with every block of the kernel running it at
    once: its own pipe's data cycles, or its share of the HBM if that is slower."""
    a = copy.attr_values()
    own = pipe_cycles(hw, copy) / a.rows
    shared = blocks * npu.element_bytes(copy.src.type) * a.cols / hw.hbm_bytes_per_cycle
    return max(own, shared)


@dataclass
class _Region:
    """What stands between the halves of a barrier (it runs with the phase before:
    `phases` counts it there). A whole `npu.sync_all` is split once rows land there."""

    barrier: npu.SyncAllOp | None
    arrive: npu.SyncAllArriveOp | None
    wait: npu.SyncAllWaitOp | None
    group: list[Operation]  # the phase group it ends
    spent: float = 0  # MTE2 cycles of the rows moved here

    def room(self, hw: HardwarePreset, cache: dict) -> float:
        """MTE2 cycles still free while it runs."""
        if id(self) not in cache:
            cache[id(self)] = mte2_slack(self.group, hw) + barrier_window(self.group, hw)
        return cache[id(self)] - self.spent

    def split(self) -> None:
        if self.barrier is None:
            return
        self.arrive, self.wait = npu.SyncAllArriveOp.new(), npu.SyncAllWaitOp.new()
        self.arrive.location = self.wait.location = self.barrier.location
        self.barrier.parent_block().insert_ops_before([self.arrive, self.wait], self.barrier)
        self.barrier.detach()
        self.barrier.erase()
        self.barrier = None

    def join(self) -> None:
        """Its halves with nothing between them back into one `npu.sync_all`."""
        if self.barrier is None and self.arrive.next_op is self.wait:
            self.barrier = npu.SyncAllOp.new()
            self.barrier.location = self.wait.location
            self.wait.parent_block().insert_op_before(self.barrier, self.wait)
            for op in (self.arrive, self.wait):
                op.detach()
                op.erase()


def _regions(kernel: npu.KernelOp, groups: list[list[Operation]]) -> list[_Region]:
    """Per barrier of the kernel (in order), its region."""
    regions: list[_Region] = []
    for op in kernel.entry.ops:
        if isinstance(op, npu.SyncAllOp):
            regions.append(_Region(op, None, None, groups[len(regions)]))
        elif isinstance(op, npu.SyncAllWaitOp):
            arrive = op.prev_op
            while not isinstance(arrive, npu.SyncAllArriveOp):
                arrive = arrive.prev_op
            regions.append(_Region(None, arrive, op, groups[len(regions)]))
    return regions


def _between(region: _Region) -> list[Operation]:
    if region.barrier is not None:
        return []
    ops, op = [], region.arrive.next_op
    while op is not region.wait:
        ops.append(op)
        op = op.next_op
    return ops


def _unit_copy(op: Operation) -> npu.CopyOp | None:
    """The copy of a region's top-level op: a copy, or the one copy under the
    `scf.if`s a guarded copy moved under."""
    if isinstance(op, npu.CopyOp):
        return op
    if not isinstance(op, scf.IfOp):
        return None
    copies = [inner for inner in op.walk() if isinstance(inner, npu.CopyOp)]
    others = [inner for inner in op.walk() if not isinstance(inner, (npu.CopyOp, scf.IfOp, scf.YieldOp))]
    return copies[0] if len(copies) == 1 and not others else None


def hoist_prefetches(kernel: npu.KernelOp, hw: HardwarePreset) -> int:
    """Move rows of the copies prefetched at each barrier between the halves of
    earlier barriers, while those have MTE2 room; returns how many pieces moved."""
    if not any(isinstance(op, npu.SyncAllWaitOp) for op in kernel.entry.ops):
        return 0
    groups = phases(kernel)
    hoist = _Hoist(kernel, _regions(kernel, groups), groups, hw)
    for n in range(1, len(hoist.regions)):
        for unit in _between(hoist.regions[n]):
            hoist.unit(unit, n)
    for region in hoist.regions:
        region.join()
    return hoist.pieces


class _Hoist:
    """The regions of a kernel's split barriers and the buffers each phase group
    touches (as they were before any rows moved: a buffer rows move for is kept
    live across the groups it spans in `live`)."""

    def __init__(self, kernel: npu.KernelOp, regions: list[_Region], groups: list[list[Operation]], hw: HardwarePreset):
        self.regions, self.groups, self.hw = regions, groups, hw
        self._buffers: dict[int, list[tuple[npu.AllocOp, Span]]] = {}
        self._rooms: dict = {}
        self.blocks = kernel.attr_values().block_dim
        self.top = set(kernel.entry.ops)  # what offsets and guards may be computed from
        self.live: list[tuple[npu.AllocOp, int, int]] = []  # (alloc, first group, last group)
        self.pieces = 0

    def unit(self, unit: Operation, n: int) -> None:
        """Move rows of `unit`'s copy (at barrier `n`: in group n, read by group n+1)
        to the regions of barriers n-1, n-2, ... (groups n-1, n-2, ...) while its
        buffer's bytes stay apart from every buffer of the groups from there to n+1
        and those regions have MTE2 room."""
        copy = _unit_copy(unit)
        alloc = root_alloc(copy.dst) if copy is not None else None
        span = span_of(alloc) if alloc is not None else None
        region_ops = _between(self.regions[n])
        if span is None or alloc not in region_ops or not self._alone(alloc, region_ops):
            return
        if any(piece is None for piece in _slices(unit, copy, self.top)):
            return
        rows, per_row = copy.attr_values().rows, row_cycles(copy, self.hw, self.blocks)
        plan: list[tuple[int, int]] = []  # (barrier, rows)
        spans = [x for i in (n, n + 1) for a, x in self.buffers(i) if a is not alloc]
        left, b = rows, n - 1
        while b >= 0 and left:
            spans += [x for a, x in self.buffers(b) if a is not alloc]
            spans += [span_of(a) for a, lo, hi in self.live if a is not alloc and lo <= n + 1 and b <= hi]
            if _clashes(span, spans):
                moved = _free_spot(span, spans, self.hw)
                if moved is None:
                    break  # the rows planned so far keep the bytes found for them
                span = moved
            fit = min(left, max(0, int(self.regions[b].room(self.hw, self._rooms) // per_row)))
            if fit:
                plan.append((b, fit))
                left -= fit
            b -= 1
        if plan:
            self._apply(unit, copy, alloc, span, plan, n, per_row)

    def buffers(self, i: int) -> list[tuple[npu.AllocOp, Span]]:
        """The placed buffers group `i` touches, with their bytes (a buffer rows move
        for is not relocated from a group it was in: `live` keeps the new bytes)."""
        if i >= len(self.groups):
            return []
        if i not in self._buffers:
            self._buffers[i] = [(a, x) for a in _buffers(self.groups[i]) if (x := span_of(a)) is not None]
        return self._buffers[i]

    def _alone(self, alloc: npu.AllocOp, region_ops: list[Operation]) -> bool:
        """Whether one copy of the region alone writes `alloc` (rows of one may move
        apart from another's without reordering writes of the same bytes)."""
        writers = [i for op in region_ops for i in instructions(op) if isinstance(i, npu.TransferOp) and root_alloc(i.dst) is alloc]
        return len(writers) == 1

    def _apply(self, unit, copy, alloc, span: Span, plan: list[tuple[int, int]], n: int, per_row: float) -> None:
        deepest = plan[-1][0]
        for b, _ in plan:
            self.regions[b].split()
        alloc.properties["offset"] = to_attribute(Kind.INT, span.start)
        self.live.append((alloc, deepest, n + 1))
        _move_slices(unit, copy, alloc, self.regions[deepest])
        start = 0
        for b, rows in plan:
            _place_piece(unit, copy, start, rows, self.regions[b])
            self.regions[b].spent += rows * per_row
            start += rows
        if start == copy.attr_values().rows:
            unit.detach()
            unit.erase()
        else:
            _narrow(copy, start, copy.attr_values().rows - start)
        self.pieces += len(plan)


def _clashes(span: Span, spans: list[Span]) -> bool:
    return any(span.overlaps(x) for x in spans)


def _free_spot(span: Span, taken: list[Span], hw: HardwarePreset) -> Span | None:
    size = span.end - span.start
    offset = lowest_free_offset(size, [(t.start, t.end) for t in taken if t.space == span.space], hw.alignment[span.space])
    if offset + size > hw.capacity(span.space):
        return None
    return Span(span.space, offset, offset + size)


def _ahead(unit: Operation, target: _Region) -> set[Operation]:
    """The kernel's top-level ops from the arrive of `target` to `unit`."""
    between, op = set(), target.arrive.next_op
    while op is not unit:
        between.add(op)
        op = op.next_op
    return between


def _slices(unit: Operation, copy: npu.CopyOp, pool: set[Operation]) -> list[list[Operation] | None]:
    """What the copy's offsets and its guards are computed from among the ops of
    `pool` (None: not constants, block_idx and index arithmetic)."""
    values = [copy.operands[1], copy.operands[3], *(op.cond for op in unit.walk() if isinstance(op, scf.IfOp))]
    return [offset_slice(value, pool) for value in values]


def _move_slices(unit: Operation, copy: npu.CopyOp, alloc: npu.AllocOp, target: _Region) -> None:
    """Move what the unit's copy and guards are computed from (constants, block_idx
    and index arithmetic) and its buffer's allocation to the front of `target`."""
    ordered: list[Operation] = []
    for piece in _slices(unit, copy, _ahead(unit, target)):
        for op in piece or []:
            if op not in ordered:
                ordered.append(op)
    anchor = target.arrive
    for op in [*ordered, alloc]:
        op.detach()
        anchor.parent_block().insert_op_after(op, anchor)
        anchor = op


def _place_piece(unit, copy: npu.CopyOp, start: int, rows: int, target: _Region) -> None:
    """A clone of `unit` whose copy moves `rows` rows from row `start`, before the
    wait of `target`."""
    block = target.wait.parent_block()
    piece = unit.clone()
    piece_copy = piece if isinstance(piece, npu.CopyOp) else next(op for op in piece.walk() if isinstance(op, npu.CopyOp))
    ops = _offset_rows(piece_copy, copy, start, rows)
    block.insert_ops_before([*ops, piece], target.wait)


def _narrow(copy: npu.CopyOp, start: int, rows: int) -> None:
    """`copy` keeps its rows from `start` on."""
    ops = _offset_rows(copy, copy, start, rows)
    copy.parent_block().insert_ops_before(ops, copy)


def _offset_rows(target: npu.CopyOp, original: npu.CopyOp, start: int, rows: int) -> list[Operation]:
    """Set `target` (a clone of `original`, or itself) to `rows` rows from `start`:
    the index ops computing its new offsets, to insert before it."""
    a = original.attr_values()
    src_stride, dst_stride = original.row_strides(a)
    target.properties["rows"] = to_attribute(Kind.INT, rows)
    if start == 0:
        return []
    ops: list[Operation] = []
    for index, stride in ((1, src_stride), (3, dst_stride)):
        delta = arith.ConstantOp(IntegerAttr(start * stride, IndexType()))
        total = arith.AddiOp(original.operands[index], delta.result)
        target.operands[index] = total.result
        ops += [delta, total]
    return ops


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
        moved = further = 0
        for kernel in [k for k in op.walk() if isinstance(k, npu.KernelOp)]:
            one, back = prefetch_constants(kernel, launches.get(kernel.sym_name.data, []), hw)
            moved, further = moved + one, further + back
        record_statistic(self.name, "copies prefetched", moved)
        record_statistic(self.name, "row pieces prefetched further back", further)
