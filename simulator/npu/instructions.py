"""Decoding `npu` instructions into closures: issue on the scalar unit, then
timing, race check, numerics and statistics when the pipe executes them.

Everything an instruction's attributes fix is computed here once: its pipe, its
cost (`costs.py`), its access patterns and numpy view makers, the bounds and
alignment of constant offsets. Per execution only the offsets (register reads)
vary: they are captured at issue, checked, and used when the pipe runs it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ...core.diagnostics import location_of, op_error
from ...dialects import npu
from ...dialects.npu.base import element_bytes
from ..hardware import SPACES
from .costs import SYNC_FLAG_BYTES, TransferCost, mmad_cycles, mmad_min_cycles, sync_all_transfers, transfer_cost, vector_cycles, vector_min_cycles
from . import batch_kernels, batch_scalar
from .core import ZERO_CLOCK
from .hazards import PIPE_INDEX, S, Accesses
from .lockstep import CrossCore

Step = Callable[[object], None]
GM_SPACE = SPACES.index("gm")
NO_POLL = TransferCost(0, 0, 0, 1.0)  # a cross-core wait for nobody reads no flag


@dataclass(frozen=True)
class GmSide:
    """What a transfer touching GM needs at run time: its unloaded data phase, the
    bytes it moves (bursts), which access is the GM one, whether it writes GM, and
    the bytes of each contiguous run there."""

    data_cycles: int
    moved_bytes: int
    access: int
    writes: bool
    run_bytes: int


_METHODS = (
    (npu.SetFlagOp, "_set_flag"), (npu.WaitFlagOp, "_wait_flag"), (npu.PipeBarrierOp, "_barrier"),
    (npu.SyncAllOp, "_sync_all"), (npu.SyncAllArriveOp, "_sync_all_arrive"), (npu.SyncAllWaitOp, "_sync_all_wait"),
    (npu.CrossSetFlagOp, "_cross_set_flag"), (npu.CrossWaitFlagOp, "_cross_wait_flag"),
    (npu.ReadScalarOp, "_read_scalar"),
)
_METHOD_OF: dict[type, str] = {}  # instruction class -> the decoder method of `_METHODS` (else "_compute")


@dataclass(eq=False)
class Fixed:
    """What an instruction's class, attributes and operand types fix: its attribute
    values, accesses and their view makers, and (filled by the first instruction
    decoded with them) its cost and numerics. Made once per distinct instruction
    of a kernel and shared by its copies (DenseNet-121's 31k instructions are 1,695
    distinct ones): decoding each from its attributes was most of the decode time."""

    a: object
    accesses: tuple
    viewers: tuple
    cost: tuple | None = None
    kernel: object = None
    batched: tuple | None = None  # (its kernel's form over a batch of blocks, or None): `batch_kernels.py`


class InstructionDecoder:
    """Mixin of the kernel decoder: closures for npu instructions."""

    def fixed(self, op: npu.InstructionOp) -> Fixed:
        """The `Fixed` part of `op`, shared with every instruction of the kernel that
        has its class, attributes (properties) and operand types."""
        table = self.__dict__.setdefault("_fixed", {})
        key = (op.name, tuple(op.properties.items()), tuple(v.type for v in op.operands))
        found = table.get(key)
        if found is None:
            a = op.attr_values()
            accesses = tuple(op.accesses(a))
            found = table[key] = Fixed(a, accesses, tuple(access.pattern.viewer() for access in accesses))
        return found

    def instruction_step(self, op: npu.InstructionOp) -> Step:
        cls = type(op)
        method = _METHOD_OF.get(cls)
        if method is None:
            method = _METHOD_OF[cls] = next((m for base, m in _METHODS if issubclass(cls, base)), "_compute")
        if method == "_cross_wait_flag":
            self.cross_waits += 1
        elif method == "_read_scalar":
            self.scalar_reads += 1
        step = getattr(self, method)(op)
        if self.mode == "approx" and method in _RELEASES:
            return _ends_phase(step)
        return step

    @staticmethod
    def only_computes(op) -> bool:
        """Whether the ops inside `op` are arith / scf ops and compute or transfer
        instructions only: no flag, barrier, sync or scalar read. A timing pass's
        block skipping a phase (`approx.skips`) skips such a loop without results
        whole: what it would do there is time instructions and define registers
        that live inside it."""
        classes = tuple(cls for cls, _ in _METHODS)
        return not any(isinstance(inner, classes) for inner in op.walk() if inner is not op)

    # ---- operands -------------------------------------------------------------------

    def _operands(self, op: npu.InstructionOp, fixed: Fixed, pipe: int, aligned: bool = True):
        """Per access: (buffer slot, offset register, view maker, hazard spec), plus the
        bounds checks of the offsets that are not constants. Accesses to local spaces
        must start aligned, unless not `aligned` (a scalar read of one element)."""
        slots, regs, views, hazard_specs, checks = [], [], list(fixed.viewers), [], []
        for n, access in enumerate(fixed.accesses):
            buffer = self.buffer(op.operands[access.operand])
            offset_value = op.operands[access.operand + 1]
            pattern = access.pattern
            check = (n, pattern.span, buffer, access.writes, buffer.align_elements if aligned else 0)
            constant = self.const(offset_value)
            if constant is None:
                checks.append(check)
            else:
                self.check_offset(op, constant, *check[1:])
            self.note_access(buffer, pipe, access, op)
            slots.append(buffer.slot)
            regs.append(self.reg(offset_value))
            contiguous = pattern.runs()[0] == 1
            hazard_specs.append(
                (buffer.space, access.writes, pattern, buffer.itemsize, pattern.span * buffer.itemsize, contiguous, buffer.slot)
            )
        return tuple(slots), tuple(regs), tuple(views), tuple(hazard_specs), tuple(checks)

    @staticmethod
    def _accesses(op, pipe: int, hazard_specs) -> Accesses:
        return Accesses(op, pipe, hazard_specs, tuple(i for i, spec in enumerate(hazard_specs) if spec[0] == GM_SPACE))

    def check_offset(self, op, offset: int, span: int, buffer, writes: bool, align: int) -> None:
        if offset < 0 or offset + span > buffer.numel:
            verb = "writes" if writes else "reads"
            raise op_error(
                op,
                f"out of bounds: {verb} elements [{offset}, {offset + span}) of a {buffer.numel}-element "
                f"{buffer.space_name} buffer",
            )
        if align and offset % align:
            raise op_error(
                op,
                f"misaligned: offset {offset} is byte {buffer.local_offset + offset * buffer.itemsize} of "
                f"{buffer.space_name}, not a multiple of its {buffer.alignment}-byte alignment",
            )

    def _issue_checks(self, op, checks):
        """A function checking the run-time offsets (None when all are constants)."""
        if not checks:
            return None
        check_offset = self.check_offset

        def check(offsets) -> None:
            for n, span, buffer, writes, align in checks:
                o = offsets[n]
                if o < 0 or o + span > buffer.numel or (align and o % align):
                    check_offset(op, o, span, buffer, writes, align)

        return check

    # ---- cost and statistics ----------------------------------------------------------

    def _cost(self, op: npu.InstructionOp, a):
        """(cycles the pipe is held, cycles more until the result has landed, a `GmSide`
        for transfers touching GM or None, statistics). Transfers stream: they hold
        their pipe for their data cycles, their latency passes after."""
        hw = self.hw
        if isinstance(op, npu.TransferOp):
            accesses = op.accesses(a)
            src, dst = op.spaces()
            cost = transfer_op_cost(hw, op, a)
            nbytes = a.rows * a.cols * self.buffer(op.dst).itemsize
            stats = [(self.stat(op.path()), nbytes), (self.stat("transfers"), 1)]
            if src == "gm":
                stats.append((self.stat("gm_read"), nbytes))
            if dst == "gm":
                stats.append((self.stat("gm_written"), nbytes))
            gm = None
            if "gm" in (src, dst):
                side = 0 if src == "gm" else 1
                run_bytes = accesses[side].pattern.runs()[1] * self.buffer(op.operands[accesses[side].operand]).itemsize
                gm = GmSide(cost.data_cycles, cost.moved_bytes, side, dst == "gm", run_bytes)
            return cost.data_cycles, cost.latency, gm, stats
        if isinstance(op, npu.MmadOp):
            rate = op.rate_key()
            cycles = mmad_cycles(hw, a.m, a.n, a.k, rate)
            return cycles, 0, None, [(self.stat("cube_min"), mmad_min_cycles(hw, a.m, a.n, a.k, rate))]
        if isinstance(op, npu.VectorOp):
            nbytes = op.vector_bytes(a)
            cycles = vector_cycles(hw, op.COST, nbytes)
            return cycles, 0, None, [(self.stat("vector_min"), vector_min_cycles(hw, op.COST, nbytes))]
        raise op_error(op, "has no cost in the NPU simulator")

    # ---- compute and transfer instructions ---------------------------------------------

    def _compute(self, op: npu.InstructionOp) -> Step:
        fixed = self.fixed(op)
        a = fixed.a
        pipe = PIPE_INDEX[op.pipe_name()]
        operands = self._operands(op, fixed, pipe)
        slots, offset_regs, views, hazard_specs, checks = operands
        if fixed.cost is None:
            fixed.cost, fixed.kernel = self._cost(op, a), op.kernel(a)
        if self.mode == "approx":
            return self._either(self._record(op, fixed, pipe, operands), self._timed(op, fixed, pipe, operands, False))
        return self._timed(op, fixed, pipe, operands, True)

    @staticmethod
    def _either(numerics: Step, timed: Step) -> Step:
        """The approximate simulation's closure (`approx.py`): a block of the numerics
        pass (no weights) computes, one of the timing pass times."""

        def issue(core) -> None:
            if core.weights is None:
                numerics(core)
            elif not core.skip:  # a phase skipped times none of its instructions
                timed(core)

        return issue

    def _timed(self, op: npu.InstructionOp, fixed: Fixed, pipe: int, operands, numerics: bool) -> Step:
        """The simulation's closure: timing, race check, statistics, and the numerics
        unless not `numerics` (the approximate simulation's timing pass)."""
        slots, offset_regs, views, hazard_specs, checks = operands
        cycles, latency, gm, stats = fixed.cost
        streams = isinstance(op, npu.TransferOp)
        kernel = fixed.kernel
        check = self._issue_checks(op, checks)
        bases = self.bases
        issue_cost = self.hw.scalar_instruction_cycles
        name = op.name
        operands = tuple(zip(views, slots))
        accesses = self._accesses(op, pipe, hazard_specs)
        if gm is not None:
            gm_transfer = self._gm_transfer(gm, hazard_specs[gm.access], slots[gm.access])

        gm_access = gm.access if gm is not None else 0
        cross_block = self.own_block_reg() if gm is not None and self.has_cross_flags(op) else None

        def execute(core, issued: int, scalar_clock, offsets) -> None:
            pipe_free = core.pipe_free
            free = pipe_free[pipe]
            if not streams:  # it sees the data its pipe's transfers land (Core.drained)
                landed = core.landed[pipe]
                if landed > free:
                    free = landed
            start = issued if issued > free else free
            end = start + cycles if gm is None else gm_transfer(core, start, offsets[gm_access])
            if streams and end + latency > core.landed[pipe]:
                core.landed[pipe] = end + latency
            pipe_free[pipe] = end
            core.busy[pipe] += end - start
            hz = core.hz
            if hz is not None:
                if scalar_clock is not ZERO_CLOCK:  # Core.learn_scalar
                    hz.learn(pipe, scalar_clock)
                clock = hz.tick(pipe)
                if cross_block is None:
                    hz.instruction(accesses, offsets, clock)
                else:  # checked now, and its GM accesses against the other blocks'
                    for space, record in accesses.records(bases, offsets, clock):
                        hz.access(space, pipe, record)
                        if space == GM_SPACE:
                            core.meet(start, CrossCore("touch", core.regs[cross_block], record=record))
            if numerics:
                bufs = core.bufs
                kernel(*[view(bufs[slot], o) for (view, slot), o in zip(operands, offsets)])
            totals = core.stats
            for index, amount in stats:
                totals[index] += amount
            if core.trace is not None:
                core.trace.append((pipe, name, start, end))

        def issue(core) -> None:
            regs = core.regs
            offsets = [regs[r] for r in offset_regs]
            if check is not None:
                check(offsets)
            core.s_time += issue_cost
            core.busy[S] += issue_cost
            core.count += 1
            queue = core.pending[pipe]
            if queue is not None:
                queue.append((execute, core.s_time, core.s_clock, offsets))
            else:
                execute(core, core.s_time, core.s_clock, offsets)

        return issue

    def _record(self, op: npu.InstructionOp, fixed: Fixed, pipe: int, operands) -> Step:
        """The numerics pass's closure (`approx.py`, `batched.py`): the offsets (one
        per block of the batch where they differ) checked at issue, the instruction
        and its offsets recorded when the pipe runs it (behind its waits, as
        `_timed`), counted and hashed into its phase's; no timing, no race check,
        nothing computed (`batched.Replay` computes the record)."""
        slots, offset_regs, views, hazard_specs, checks = operands
        gm = fixed.cost[2]
        if fixed.batched is None:
            fixed.batched = (batch_kernels.batch_kernel(op, fixed.a, fixed.kernel),)
        memo = self.__dict__.setdefault("_batch_operands", {})  # the same Fixed on the same buffers
        key = (id(fixed), slots)  # (every Fixed lives in self._fixed: its id stays its own)
        batch_operands = memo.get(key)
        if batch_operands is None:
            batch_operands = memo[key] = tuple(
                self._batch_operand(op, access, view) for access, view in zip(fixed.accesses, views))
        instruction = batch_kernels.Instruction(
            fixed.kernel, fixed.batched[0], batch_operands, None if gm is None else gm.access, op.name,
            isinstance(op, npu.CopyOp),
        )
        self.idents += 1
        ident = self.idents
        check_offsets, check_offset = batch_scalar.check_offsets, self.check_offset

        def execute(core, issued: int, scalar_clock, offsets) -> None:
            core.recorded.append((instruction, offsets))

        def issue(core) -> None:
            regs = core.regs
            offsets = [regs[r] for r in offset_regs]
            if checks:
                check_offsets(op, offsets, checks, check_offset)
            core.count += 1
            core.sig = hash((core.sig, ident))
            queue = core.pending[pipe]
            if queue is not None:
                queue.append((execute, 0, ZERO_CLOCK, offsets))
            else:
                core.recorded.append((instruction, offsets))

        return issue

    def _batch_operand(self, op: npu.InstructionOp, access, viewer) -> batch_kernels.Operand:
        buffer = self.buffer(op.operands[access.operand])
        return batch_kernels.Operand(
            buffer.slot, buffer.argument is None, buffer.space_name, buffer.local_offset, buffer.dtype, viewer,
            access.writes, access.pattern.span, access.pattern.span + access.pattern.slack,
        )

    def _gm_transfer(self, gm: "GmSide", hazard_spec, slot: int):
        """The run-time part of a transfer touching GM: its HBM / L2 booking (by the
        addresses it touches, when the preset has an L2) and the bytes it moved on
        each. Returns `run(core, start, gm_offset) -> end`, the end of its data cycles
        (the data lands its latency later)."""
        memory, bases = self.memory, self.bases
        pattern, itemsize = hazard_spec[2], hazard_spec[3]
        hbm_index, l2_index, compulsory_index = (self.stat(s) for s in ("hbm_bytes", "l2_hit_bytes", "hbm_compulsory"))
        cached = memory.l2 is not None
        data_cycles, moved_bytes, run_bytes, writes = gm.data_cycles, gm.moved_bytes, gm.run_bytes, gm.writes
        if not self.shortcuts:
            transfer = memory.transfer
            run_starts = pattern.run_starts

            def book(start: int, offset: int):
                starts = run_starts(offset) * itemsize + bases[slot] if cached else None
                return transfer(start, data_cycles, moved_bytes, starts, run_bytes, writes)
        elif pattern.runs()[0] == 1:  # one contiguous run: its sectors are a range
            transfer_run = memory.transfer_run

            def book(start: int, offset: int):
                return transfer_run(start, data_cycles, moved_bytes, bases[slot] + offset * itemsize, run_bytes, writes)
        elif cached:
            # The runs' sectors relative to the first run's sector depend only on where
            # in its sector the first run starts: computed once per such phase.
            transfer_sectors, sector = memory.transfer_sectors, memory.l2.sector
            relative = pattern.run_starts(0) * itemsize
            by_phase: dict[int, np.ndarray] = {}

            def book(start: int, offset: int):
                first = bases[slot] + offset * itemsize
                phase = first % sector
                shape = by_phase.get(phase)
                if shape is None:
                    shape = by_phase[phase] = memory.l2.sectors(relative + phase, run_bytes)
                return transfer_sectors(start, data_cycles, moved_bytes, shape + first // sector, writes)
        else:
            transfer = memory.transfer

            def book(start: int, offset: int):
                return transfer(start, data_cycles, moved_bytes, None, run_bytes, writes)

        def run(core, start: int, offset: int) -> int:
            end, hbm_bytes, hit_bytes, compulsory = book(start, offset)
            totals = core.stats
            totals[hbm_index] += hbm_bytes
            totals[l2_index] += hit_bytes
            totals[compulsory_index] += compulsory
            return end

        if self.mode != "approx":
            return run
        weigh, unweighted = memory.weigh, run

        def weighted(core, start: int, offset: int) -> int:
            """Booked with the weights of the blocks it stands for (`approx.weights`)."""
            n = core.sig
            core.sig = n + 1
            weigh(*core.weights[n])
            return unweighted(core, start, offset)

        return weighted

    # ---- the scalar read ---------------------------------------------------------------

    def _read_scalar(self, op: npu.ReadScalarOp) -> Step:
        fixed = self.fixed(op)
        a = fixed.a
        operands = self._operands(op, fixed, S, aligned=False)
        (slot,), (offset_reg,), (view,), (spec,), checks = operands
        accesses = self._accesses(op, S, (spec[:5] + (True,) + spec[6:],))  # one element: contiguous
        check = self._issue_checks(op, checks)
        read = op.kernel(a)
        out = self.define(op.result)
        cost = self.hw.scalar_instruction_cycles

        def issue(core) -> None:
            regs = core.regs
            o = regs[offset_reg]
            if check is not None:
                check([o])
            core.s_time += cost
            core.busy[S] += cost
            core.count += 1
            hz = core.hz
            if hz is not None:
                clock = hz.tick(S)
                hz.settle()  # the value read steers what comes next: no race may be left for later
                hz.instruction(accesses, (o,), clock)
                core.scalar_learned()
            regs[out] = read(view(core.bufs[slot], o))

        return issue

    # ---- synchronisation --------------------------------------------------------------

    def _flag(self, op) -> tuple[int, int, tuple]:
        a = self.fixed(op).a
        if a.event >= self.hw.event_ids:
            raise op_error(
                op,
                f"event id {a.event} is beyond the hardware's {self.hw.event_ids} event ids per pipe pair "
                f"(0..{self.hw.event_ids - 1}, preset '{self.hw.name}')",
            )
        src, dst = PIPE_INDEX[a.src], PIPE_INDEX[a.dst]
        return src, dst, (src, dst, a.event)

    def _set_flag(self, op: npu.SetFlagOp) -> Step:
        src, _, flag = self._flag(op)
        cost = self.hw.scalar_instruction_cycles

        def execute(core, issued: int, scalar_clock, args) -> None:
            # It fires once the pipe's earlier work has landed; the pipe goes on
            # streaming behind it (a marker in its queue, core.py).
            drained = core.drained(src)
            start = issued if issued > drained else drained
            if issued > core.pipe_free[src]:
                core.pipe_free[src] = issued
            if core.hz is not None:
                core.learn_scalar(src, scalar_clock)
            core.fire(flag, start, op)

        def issue(core) -> None:
            core.s_time += cost
            core.busy[S] += cost
            core.count += 1
            if src == S:
                core.fire(flag, core.s_time, op)
            else:
                core.submit(src, execute, None)

        return issue

    def _wait_flag(self, op: npu.WaitFlagOp) -> Step:
        _, dst, flag = self._flag(op)
        cost = self.hw.scalar_instruction_cycles
        name = op.name
        waits = self.stat("flag_waits")

        def execute(core, issued: int, scalar_clock, args) -> None:
            fired = core.take(flag)
            if fired is None:
                core.block(dst, flag, (execute, issued, scalar_clock, args), op)
                return
            visible, clock = fired
            core.stats[waits] += 1
            pipe_free = core.pipe_free
            reached = issued if issued > pipe_free[dst] else pipe_free[dst]
            start = reached if reached > visible else visible
            pipe_free[dst] = start
            hz = core.hz
            if hz is not None:
                core.learn_scalar(dst, scalar_clock)
                hz.join(dst, clock)
                hz.prune()
            if core.trace is not None and start > reached:
                core.trace.append((dst, name, reached, start))

        def issue(core) -> None:
            core.s_time += cost
            core.busy[S] += cost
            core.count += 1
            if dst != S:
                core.submit(dst, execute, None)
                return
            fired = core.take(flag)
            if fired is None:
                core.waiting[flag] = (S, op)
                raise core.deadlock("before the scalar unit reaches this wait")
            visible, clock = fired
            core.stats[waits] += 1
            if visible > core.s_time:
                core.s_time = visible
            if core.hz is not None:
                core.hz.join(S, clock)
                core.scalar_learned()

        return issue

    def _barrier(self, op: npu.PipeBarrierOp) -> Step:
        a = self.fixed(op).a
        barrier_cost = self.hw.barrier_cost
        cost = self.hw.scalar_instruction_cycles
        if a.pipe == npu.ALL_PIPES:
            return self._barrier_all(op, cost, barrier_cost)
        pipe = PIPE_INDEX[a.pipe]

        def execute(core, issued: int, scalar_clock, args) -> None:
            drained = core.drained(pipe)
            start = issued if issued > drained else drained
            core.pipe_free[pipe] = start + barrier_cost
            core.busy[pipe] += barrier_cost

        def issue(core) -> None:
            core.s_time += cost
            core.busy[S] += cost
            core.count += 1
            if pipe == S:
                core.s_time += barrier_cost
                core.busy[S] += barrier_cost
            else:
                core.submit(pipe, execute, None)

        return issue

    def _barrier_all(self, op, cost: int, barrier_cost: int) -> Step:
        where = f"when every pipe must drain at the 'npu.pipe_barrier' ALL at {location_of(op)}"

        def issue(core) -> None:
            drain_all(core, cost, barrier_cost, where)

        return issue

    def _sync_all(self, op: npu.SyncAllOp) -> Step:
        """Ascend C's soft SyncAll (the 910 has no hardware one): once its pipes have
        drained, a block stores its flag to a GM workspace (32 bytes, UB -> GM) and
        reads every block's flag back (GM -> UB) until all are set. Every block goes
        on when the read that starts after the last flag landed returns."""
        where = f"when every pipe must drain at the 'npu.sync_all' at {location_of(op)}"
        cost, barrier_cost = self.hw.scalar_instruction_cycles, self.hw.barrier_cost
        store, poll = sync_all_transfers(self.hw)
        self.phase += 1

        def issue(core) -> None:
            drained = drain_all(core, cost, barrier_cost, where)
            store_flag(core, drained, store, op.name)
            release(core, core.meet(core.arrival, op), drained, poll, op.name)

        return issue

    def _sync_all_arrive(self, op: npu.SyncAllArriveOp) -> Step:
        """The first half of `npu.sync_all`: the block's flag is stored once
        everything issued before has completed, but the scalar unit does not wait
        for that: it goes on issuing what stands before the wait."""
        where = f"when every pipe must drain at the 'npu.sync_all_arrive' at {location_of(op)}"
        cost, barrier_cost = self.hw.scalar_instruction_cycles, self.hw.barrier_cost
        store, _ = sync_all_transfers(self.hw)
        self.phase += 1
        self.open_arrive = op

        def issue(core) -> None:
            store_flag(core, drained_at(core, cost, barrier_cost, where), store, op.name)

        return issue

    def _sync_all_wait(self, op: npu.SyncAllWaitOp) -> Step:
        """The second half: the block reads every block's flag back (on MTE2, behind
        the transfers issued before) until all are set, and goes on once that read
        has returned and everything issued before has completed."""
        where = f"when every pipe must drain at the 'npu.sync_all_wait' at {location_of(op)}"
        cost, barrier_cost = self.hw.scalar_instruction_cycles, self.hw.barrier_cost
        _, poll = sync_all_transfers(self.hw)
        mte2 = PIPE_INDEX["MTE2"]
        self.open_arrive = None

        def issue(core) -> None:
            mte2_free = core.pipe_free[mte2]
            drained = drain_all(core, cost, barrier_cost, where)
            release(core, max(core.meet(core.arrival, op), mte2_free), drained, poll, op.name)

        return issue

    # ---- cross-core flags ---------------------------------------------------------------

    def own_block_reg(self) -> int:
        """A register holding the running block's index (set with npu.block_idx's)."""
        if getattr(self, "_own_block", None) is None:
            self._own_block = len(self.regs)
            self.regs.append(0)
            self.block_idx_regs.append(self._own_block)
        return self._own_block

    def has_cross_flags(self, op) -> bool:
        """Whether the kernel of `op` has npu.cross_wait_flag ops: its GM accesses are
        then checked between the blocks (hazards.BlockOrder)."""
        kernel = op
        while kernel is not None and not isinstance(kernel, npu.KernelOp):
            kernel = kernel.parent_op()
        known = getattr(self, "_cross_kernels", None)
        if known is None:
            known = self._cross_kernels = {}
        if kernel not in known:
            known[kernel] = kernel is not None and any(isinstance(o, npu.CrossWaitFlagOp) for o in kernel.entry.ops)
        return known[kernel]

    def _cross_set_flag(self, op: npu.CrossSetFlagOp) -> Step:
        """As `npu.sync_all_arrive`: the block's flag is stored once everything it
        issued before has completed, its scalar unit going on; the blocks waiting
        for that flag are released when it lands (`Lockstep.meet`)."""
        where = f"when every pipe must drain at the 'npu.cross_set_flag' at {location_of(op)}"
        cost, barrier_cost = self.hw.scalar_instruction_cycles, self.hw.barrier_cost
        store, _ = sync_all_transfers(self.hw)
        self.phase += 1
        block = self.own_block_reg()

        def issue(core) -> None:
            store_flag(core, drained_at(core, cost, barrier_cost, where), store, op.name)
            core.meet(core.arrival, CrossCore("set", core.regs[block], op=op))

        return issue

    def _cross_wait_flag(self, op: npu.CrossWaitFlagOp) -> Step:
        """The block drains its pipes, then reads the flags of its producers back
        (on MTE2, as `npu.sync_all_wait`) once the last of them has landed; a block
        waiting for nobody goes on as soon as it has drained."""
        where = f"when every pipe must drain at the 'npu.cross_wait_flag' at {location_of(op)}"
        cost, barrier_cost = self.hw.scalar_instruction_cycles, self.hw.barrier_cost
        mte2 = PIPE_INDEX["MTE2"]
        needs = {}
        for consumer, producer, count in op.triples():
            needs.setdefault(consumer, []).append((producer, count))
        self.cross_needs += len(needs)
        polls = {consumer: flags_read(self.hw, [b for b, _ in mine]) for consumer, mine in needs.items()}
        block = self.own_block_reg()

        def issue(core) -> None:
            regs = core.regs
            mte2_free = core.pipe_free[mte2]
            drained = drain_all(core, cost, barrier_cost, where)
            # (waiting for nobody, a batch of blocks (`batched.py`) never looks its index up)
            mine = needs.get(regs[block]) if needs else None
            if mine is None:
                release(core, drained, drained, NO_POLL, op.name)
                return
            landed = core.meet(drained, CrossCore("wait", regs[block], tuple(mine), op=op))
            release(core, max(landed, mte2_free), drained, polls[regs[block]], op.name)

        return issue


_RELEASES = ("_sync_all", "_sync_all_wait", "_cross_wait_flag")
"""The instructions whose closure ends a phase (`release`)."""


def _ends_phase(issue: Step) -> Step:
    """In the numerics pass: the phase's instruction hash is kept once the phase ends;
    in the timing pass: whether the next phase is skipped."""

    def ends(core) -> None:
        issue(core)
        if core.weights is None:
            core.sigs.append(core.sig)
            core.cuts.append(len(core.recorded))
            core.sig = 0
        else:  # the timing pass: does the block skip the phase starting here (`approx.skips`)
            phase = len(core.phase_marks)
            core.skip = phase < len(core.skips) and core.skips[phase]

    return ends


def flags_read(hw, producers: list[int]) -> TransferCost:
    """The read (GM -> UB) of the flags of `producers` at an npu.cross_wait_flag:
    the span of the SyncAll workspace (32 bytes a block, in block order) from the
    lowest to the highest, one transfer. [EST] rests on Ascend C's SyncAll
    workspace layout; the 910's cross-core flags in GM are read the same way."""
    return transfer_cost(hw, "gm_to_ub", 1, SYNC_FLAG_BYTES * (max(producers) - min(producers) + 1))


def store_flag(core, drained: int, store, name: str) -> None:
    """A block's SyncAll flag stored (UB -> GM on MTE3) from cycle `drained`: when it
    lands is the block's arrival. Traced as "<barrier>: flag store"."""
    mte3 = PIPE_INDEX["MTE3"]
    core.arrival = drained + store.cycles
    core.busy[mte3] += store.data_cycles
    core.pipe_free[mte3] = max(core.pipe_free[mte3], drained + store.data_cycles)
    core.landed[mte3] = max(core.landed[mte3], core.arrival)
    if core.trace is not None:
        core.trace.append((mte3, f"{name}: flag store", drained, drained + store.data_cycles))


def release(core, read: int, drained: int, poll, name: str) -> None:
    """Every pipe of the block goes on once its read of every flag (GM -> UB on MTE2,
    from cycle `read`) has returned and its pipes have drained (at `drained`); a
    phase of the kernel ends there. Traced: the read ("<barrier>: flag read"), and
    on the scalar track the wait from the drain to the release (named after the
    barrier), where a block sees how long it waited for the others."""
    released = max(read + poll.cycles, drained)
    mte2 = PIPE_INDEX["MTE2"]
    core.busy[mte2] += poll.data_cycles
    if core.trace is not None:
        core.trace.append((mte2, f"{name}: flag read", read, read + poll.data_cycles))
        if released > drained:
            core.trace.append((S, name, drained, released))
    pipe_free, landings = core.pipe_free, core.landed
    for p in range(len(pipe_free)):
        pipe_free[p] = landings[p] = released
    core.s_time = released
    core.phase_marks.append((released, list(core.busy), list(core.stats)))


def transfer_op_cost(hw, op: npu.TransferOp, a):
    """The `TransferCost` of a transfer with attribute values `a`: its runs are those
    of the side with more of them (the L1 side of a load into L0, the UB side of a
    fixpipe)."""
    accesses = op.accesses(a)
    if isinstance(op, npu.LoadL0Op):
        counted = [accesses[0]]
    elif isinstance(op, npu.FixpipeOp):
        counted = [accesses[1]]
    else:
        counted = accesses
    runs, run_elements = max((acc.pattern.runs() for acc in counted), key=lambda r: r[0])
    itemsize = element_bytes(op.operands[counted[0].operand].type)
    return transfer_cost(hw, op.path(), runs, run_elements * itemsize)


def pipe_cycles(hw, op: npu.InstructionOp) -> int:
    """The cycles an instruction holds its pipe, known from its attributes alone (as
    `InstructionDecoder._cost` charges them; 0 for syncs and scalar reads)."""
    a = op.attr_values()
    if isinstance(op, npu.TransferOp):
        return transfer_op_cost(hw, op, a).data_cycles
    if isinstance(op, npu.MmadOp):
        return mmad_cycles(hw, a.m, a.n, a.k, op.rate_key())
    if isinstance(op, npu.VectorOp):
        return vector_cycles(hw, op.COST, op.vector_bytes(a))
    return 0


def drained_at(core, cost: int, barrier_cost: int, where: str) -> int:
    """Issue a barrier instruction on `core` and return when everything issued before
    it has completed (a wait that never fires is a deadlock, reported `where`),
    without holding anything up: what `npu.sync_all_arrive` needs."""
    core.s_time += cost
    core.busy[S] += cost
    core.count += 1
    if core.waiting:
        raise core.deadlock(where)
    return max(core.s_time, *core.pipe_free, *core.landed) + barrier_cost


def drain_all(core, cost: int, barrier_cost: int, where: str) -> int:
    """Issue a full barrier on `core`: every pipe drains (`drained_at`), everything
    before it is ordered before what follows. Returns the cycle the core goes on."""
    drained = drained_at(core, cost, barrier_cost, where)
    pipe_free, landed = core.pipe_free, core.landed
    for p in range(len(pipe_free)):
        pipe_free[p] = landed[p] = drained
    core.busy[S] += barrier_cost
    core.s_time = drained
    if core.hz is not None:
        core.hz.join_all()
        core.scalar_learned()
    return drained
