"""`npu-double-buffer`: ping-pong buffers for loops that load, compute and store.

In a tile loop whose body loads a tile into local buffers (MTE2), computes on it
and stores the result, single buffers make every iteration wait for the previous
one to free them: three stages of time t over n tiles take about 3nt. With two
copies of each buffer used in alternation, MTE2 loads tile i+1 while the vector
unit computes tile i and MTE3 stores tile i-1: about (n+2)t.

Event ids are static attributes, so the alternation is static too: the body is
unrolled twice, the second copy using the second buffers,

    scf.for %i = %lb to %ub step %s { body(%i, bufs) }
 ->
    scf.for %j = %lb to %ub_pairs step 2*%s { body(%j, bufs); body(%j + %s, bufs') }
    scf.if %odd { body(%ub_pairs, bufs) }             // the last tile of an odd trip count

with `ub_pairs = lb + 2*s*(trips / 2)` and `odd = ub_pairs < ub`, computed with
`arith` when the bounds are SSA values (e.g. a block's share from `block_idx`),
folded (and the remainder inlined or dropped) when they are constants. Loop
results (iter_args) flow through both halves and the remainder.

A buffer gets a copy only if it is iteration-private to the loop
(`buffers.iteration_private`: used only inside it, and every iteration writes
what it reads before reading it), so alternating copies cannot change what any
instruction reads: the numbers do not change. Accumulators and buffers read
across iterations keep one copy. Loops are handled innermost first, a buffer
once; a loop is left alone when it is marked `{npu.pipelined}` (its buffers
already alternate, as the cube kernels write them), when fewer than two pipes touch its private buffers,
when it runs fewer than two iterations, or when the copies would not fit the
preset's buffers next to everything else live (planned as
`npu-plan-local-memory` would). It runs before `npu-insert-sync`, which then
gives each copy its own flags. `enable=false` turns it off.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from ...core.passes import record_statistic
from ...dialects import npu
from ...simulator.hardware import HardwarePreset, load_preset
from ...simulator.npu.scalar import CMPI
from .affine import AffineCache, constant_bounds, constant_int, trip_count
from .buffers import Liveness, instructions, root_alloc
from .distinct_kernels import module_kernels
from .plan_local_memory import Buffer, place
from .sync_levels import S, pipe_of


class IndexMath:
    """Builds `arith` index ops into a list, folding what is constant."""

    def __init__(self, ops: list[Operation]):
        self.ops = ops

    def constant(self, value: int) -> SSAValue:
        op = arith.ConstantOp(IntegerAttr(value, IndexType()))
        self.ops.append(op)
        return op.result

    def _emit(self, op: Operation, name: str | None = None) -> SSAValue:
        self.ops.append(op)
        op.results[0].name_hint = name
        return op.results[0]

    def _binary(self, op_class, fold, a: SSAValue, b: SSAValue, name: str | None) -> SSAValue:
        x, y = constant_int(a), constant_int(b)
        if x is not None and y is not None:
            return self.constant(fold(x, y))
        return self._emit(op_class(a, b), name)

    def add(self, a: SSAValue, b: SSAValue, name: str | None = None) -> SSAValue:
        if constant_int(b) == 0:
            return a
        if constant_int(a) == 0:
            return b
        return self._binary(arith.AddiOp, lambda x, y: x + y, a, b, name)

    def sub(self, a: SSAValue, b: SSAValue, name: str | None = None) -> SSAValue:
        return a if constant_int(b) == 0 else self._binary(arith.SubiOp, lambda x, y: x - y, a, b, name)

    def mul(self, a: SSAValue, b: SSAValue, name: str | None = None) -> SSAValue:
        if constant_int(b) == 1:
            return a
        if constant_int(a) == 1:
            return b
        return self._binary(arith.MuliOp, lambda x, y: x * y, a, b, name)

    def ceil_div(self, a: SSAValue, b: SSAValue, name: str | None = None) -> SSAValue:
        return a if constant_int(b) == 1 else self._binary(arith.CeilDivUIOp, lambda x, y: -(-x // y), a, b, name)

    def div(self, a: SSAValue, b: SSAValue, name: str | None = None) -> SSAValue:
        return self._binary(arith.DivUIOp, lambda x, y: x // y, a, b, name)

    def max(self, a: SSAValue, b: SSAValue, name: str | None = None) -> SSAValue:
        return self._binary(arith.MaxSIOp, max, a, b, name)

    def less(self, a: SSAValue, b: SSAValue, name: str | None = None) -> SSAValue:
        return self._emit(arith.CmpiOp(a, b, "slt"), name)


class PairedLoop:
    """Rewrites one loop into a loop over pairs of iterations plus a remainder."""

    def __init__(self, loop: scf.ForOp, copies: dict[SSAValue, SSAValue]):
        self.loop = loop
        self.copies = copies
        self.body = loop.body.block
        self.terminator = self.body.last_op

    def _clone_body(self, into: list[Operation], iv: SSAValue, carried: list[SSAValue], extra) -> list[SSAValue]:
        """Clone the body's ops (not its yield) with `iv` and `carried` for its block
        arguments and `extra` replacing values; returns what its yield yields."""
        mapping: dict[SSAValue, SSAValue] = {self.body.args[0]: iv, **extra}
        mapping.update(zip(self.body.args[1:], carried))
        for op in self.body.ops:
            if op is not self.terminator:
                into.append(op.clone(value_mapper=mapping))
        return [mapping.get(v, v) for v in self.terminator.operands]

    def _bounds(self, before: list[Operation]) -> tuple[SSAValue, SSAValue, SSAValue | bool]:
        """(step of the pair loop, its upper bound, whether one iteration remains:
        a value, or a bool when the bounds are constants)."""
        loop, math = self.loop, IndexMath(before)
        bounds = constant_bounds(loop)
        if bounds is not None:
            lb, _, step = bounds
            trips = trip_count(loop)
            step2, pairs_ub = math.constant(2 * step), math.constant(lb + 2 * step * (trips // 2))
            step2.name_hint, pairs_ub.name_hint = "step2", "pairs_end"
            return step2, pairs_ub, trips % 2 == 1
        zero, two = math.constant(0), math.constant(2)
        trips = math.ceil_div(math.max(math.sub(loop.ub, loop.lb), zero), loop.step)
        step2 = math.mul(loop.step, two)
        pairs_ub = math.add(loop.lb, math.mul(math.div(trips, two), step2))
        for value, name in ((trips, "trips"), (step2, "step2"), (pairs_ub, "pairs_end")):
            if value.owner in before and not isinstance(value.owner, arith.ConstantOp):
                value.name_hint = name
        return step2, pairs_ub, math.less(pairs_ub, loop.ub, "odd")

    def rewrite(self) -> None:
        loop = self.loop
        before: list[Operation] = []
        step2, pairs_ub, odd = self._bounds(before)
        body = Block(arg_types=[a.type for a in self.body.args])
        ops: list[Operation] = []
        for new, old in zip(body.args, self.body.args):
            new.name_hint = old.name_hint
        ping = self._clone_body(ops, body.args[0], list(body.args[1:]), {})
        hint = self.body.args[0].name_hint
        second_iv = IndexMath(ops).add(body.args[0], loop.step, f"{hint}_pong" if hint else None)
        pong = self._clone_body(ops, second_iv, ping, self.copies)
        body.add_ops([*ops, scf.YieldOp(*pong)])
        pairs = scf.ForOp(loop.lb, pairs_ub, step2, list(loop.iter_args), body)
        before.append(pairs)
        results = list(pairs.results)
        if odd is True:
            results = self._clone_body(before, pairs_ub, results, {})
        elif odd is not False:
            results = self._remainder(odd, pairs_ub, results, before)
        loop.parent_block().insert_ops_before(before, loop)
        for old, new in zip(loop.results, results):
            old.replace_by(new)
        loop.detach()
        loop.erase()

    def _remainder(self, odd: SSAValue, iv: SSAValue, carried: list[SSAValue], before: list[Operation]):
        then_ops: list[Operation] = []
        last = self._clone_body(then_ops, iv, carried, {})
        then_block = Block([*then_ops, scf.YieldOp(*last)])
        else_block = Block([scf.YieldOp(*carried)])
        guard = scf.IfOp(odd, [v.type for v in carried], [then_block], [else_block])
        before.append(guard)
        return list(guard.results)


def _copy_alloc(alloc: npu.AllocOp) -> npu.AllocOp:
    copy = npu.AllocOp.new(result_type=alloc.result.type)
    hint = alloc.result.name_hint
    copy.result.name_hint = f"{hint}_pong" if hint else None
    alloc.parent_block().insert_op_after(copy, alloc)
    return copy


def fits_with_copies(liveness: Liveness, duplicated: set[npu.AllocOp], preset: HardwarePreset) -> bool:
    """Whether every space still fits when each of `duplicated` has a copy live
    exactly when it is (placed as npu-plan-local-memory places)."""
    by_space: dict[str, list[Buffer]] = {}
    for alloc, live in liveness.intervals.items():
        size = npu.buffer_bytes(alloc.result.type)
        buffers = by_space.setdefault(str(npu.space_of(alloc.result.type)), [])
        buffers.append(Buffer(alloc, size, live, alloc.attr_values().offset))
        if alloc in duplicated:
            buffers.append(Buffer(alloc, size, live, None))
    return all(place(b, preset.alignment[s]) <= preset.capacity(s) for s, b in by_space.items())


@dataclass
class Outcome:
    doubled: int = 0
    buffers: int = 0
    too_big: int = 0


def double_buffer_kernel(kernel: npu.KernelOp, preset: HardwarePreset) -> Outcome:
    outcome = Outcome()
    handled: set[npu.AllocOp] = set()
    loops = [op for op in kernel.walk() if isinstance(op, scf.ForOp)]
    liveness = None  # of the kernel as it is: computed again only after a rewrite
    for loop in reversed(loops):  # inner loops first
        trips = trip_count(loop)
        if trips is not None and trips < 2 or npu.PIPELINED_ATTR in loop.attributes:
            continue
        if liveness is None:
            liveness = Liveness(kernel)
        private = liveness.private_to(loop) - handled
        pipes = {
            pipe_of(op)
            for op in instructions(loop)
            if any(root_alloc(op.operands[i]) in private for i in op.buffer_operands())
        }
        if not private or len(pipes - {S}) < 2:
            continue
        if not fits_with_copies(liveness, private, preset):
            outcome.too_big += 1
            continue
        ordered = [a for a in liveness.intervals if a in private]  # program order
        copies = {alloc.result: _copy_alloc(alloc).result for alloc in ordered}
        handled |= private | {c.owner for c in copies.values()}
        PairedLoop(loop, copies).rewrite()
        liveness = None
        outcome.doubled += 1
        outcome.buffers += len(copies)
    if outcome.doubled:
        fold_static_guards(kernel)
    return outcome


def fold_static_guards(kernel: npu.KernelOp) -> None:
    """Inline (or drop) every `scf.if` whose condition compares constants. The
    remainder of a loop with constant bounds runs at a constant induction value,
    which can make a guard of the body static: a false one may hold an access
    that would be out of bounds (a padding row of a convolution), and a constant
    out-of-bounds offset is an error even in code that never runs."""
    affine = AffineCache()
    while True:
        found = next(
            ((op, known) for op in kernel.walk() if isinstance(op, scf.IfOp)
             for known in [_static_condition(op.cond, affine)] if known is not None),
            None,
        )
        if found is None:
            return
        _inline_branch(*found)


def _static_condition(cond: SSAValue, affine: AffineCache) -> bool | None:
    owner = cond.owner
    if not isinstance(owner, arith.CmpiOp):
        return None
    lhs, rhs = affine(owner.lhs), affine(owner.rhs)
    if not (lhs.is_constant and rhs.is_constant):
        return None
    return bool(CMPI[owner.predicate.value.data](lhs.const, rhs.const))


def _inline_branch(guard: scf.IfOp, taken: bool) -> None:
    """Replace `guard` by the ops of its `taken` branch."""
    region = guard.true_region if taken else guard.false_region
    yields: list[SSAValue] = []
    if region.blocks:
        block = region.block
        terminator = block.last_op
        yields = list(terminator.operands)
        for op in list(block.ops):
            if op is not terminator:
                op.detach()
                guard.parent_block().insert_op_before(op, guard)
    for result, value in zip(guard.results, yields):
        result.replace_by(value)
    condition = guard.cond.owner
    guard.detach()
    guard.erase()
    if not condition.results[0].uses:
        condition.detach()
        condition.erase()


@dataclass(frozen=True)
class DoubleBufferPass(ModulePass):
    """Give the iteration-private buffers of load-compute-store loops a second copy used in alternation (the loop unrolled in pairs), so the pipes overlap across iterations."""

    name = "npu-double-buffer"

    enable: bool = True
    hw: str = "ascend910"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not self.enable:
            return
        preset = load_preset(self.hw)
        for outcome in [double_buffer_kernel(kernel, preset) for kernel in module_kernels(op)]:  # cheaper than keying a copy
            record_statistic(self.name, "loops double-buffered", outcome.doubled)
            record_statistic(self.name, "buffers copied", outcome.buffers)
            record_statistic(self.name, "loops left single (copies would not fit)", outcome.too_big)
