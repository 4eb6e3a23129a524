"""The host plan: GM memory, launches on streams, events, and the checks that
concern the plan as a whole.

`@main`'s arguments are the inputs and outputs (GM arrays of their own);
`npu.gm_buffer`s are views of one GM arena at their byte offsets, so two
buffers placed on the same bytes really share them. The plan is checked before
anything runs, on its own ordering (not on timing):

* launches are ordered by their stream (in launch order) and by events: a
  vector clock per stream, advanced per launch, joined by `npu.wait_event`
  with the clock of the latest earlier `npu.record_event` of that event;
* two launches touching one GM buffer, one of them writing it, must be ordered
  (a cross-stream race otherwise);
* two arena buffers sharing bytes must not be live at once: their lifetimes (in
  launch order, from the first to the last launch that uses them; within a
  kernel split by `npu.sync_all`, from phase to phase) must not intersect, and every launch using the earlier one must be ordered before every
  launch using the later one (which matters across streams).

Timing: a launch starts `launch.kernel_launch_us` after its stream is ready (its
previous launch finished, and every event it waits for was reached); its blocks
go to the cores that become free first (block i starts when both the launch and
its core are ready), so kernels on different streams overlap while cores are
free. A stream is ready again when its last block ends. The blocks of a launch
are simulated side by side (`lockstep.py`), each core with local memory of its
own, and meet at its `npu.sync_all`s (so they must all be resident: block_dim at
most the core count); launches are simulated one after another.
"""

from __future__ import annotations

import dataclasses
import heapq
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.ir import Operation, SSAValue

from ...core import dtypes
from ...core.collector import cyclic_gc_paused
from ...core.diagnostics import CompileError, op_error
from ...core.progress import progress
from ...dialects import npu
from ..hardware import HardwarePreset
from ...core.signature import npu_argument_roles
from . import approx as approx_module
from .hazards import describe
from .l2 import GlobalMemory
from .lockstep import Block, Lockstep
from .program import KernelProgram, LocalMemory, decode_kernel
from .segments import LaunchChecks

ARG_ALIGNMENT = 512
"""Byte alignment of @main's GM arguments, placed after the arena."""


@dataclass(eq=False)
class GmBuffer:
    """One GM buffer of the plan: an argument of @main or an arena buffer."""

    label: str
    op: Operation
    value: SSAValue
    address: int  # byte address in the simulated GM
    dtype: np.dtype
    shape: tuple[int, ...]
    in_arena: bool
    role: str = "intermediate"  # or "input" / "output" (@main arguments)
    array: np.ndarray | None = None  # flat, typed, with slack

    @property
    def numel(self) -> int:
        return self._numel

    def __post_init__(self) -> None:
        self._numel = int(np.prod(self.shape, dtype=np.int64))  # the plan's checks ask it per pair of buffers

    @property
    def nbytes(self) -> int:
        return self.numel * self.dtype.itemsize

    def overlaps(self, other: "GmBuffer") -> bool:
        return self.address < other.address + other.nbytes and other.address < self.address + self.nbytes


@dataclass(eq=False)
class Launch:
    op: npu.LaunchOp
    index: int  # in host order
    program: KernelProgram
    args: list[GmBuffer]
    block_dim: int
    stream: int
    clock: dict[int, int] = field(default_factory=dict)  # the stream vector clock at this launch

    def ordered_before(self, later: "Launch") -> bool:
        return later.clock.get(self.stream, 0) >= self.clock[self.stream]

    def modes(self, buffer: GmBuffer) -> tuple[bool, bool]:
        """(reads, writes) of `buffer` by this launch."""
        reads, writes, _, _ = self._touches().get(buffer, (False, False, None, None))
        return reads, writes

    def _touches(self) -> dict[GmBuffer, tuple[bool, bool, int | None, int]]:
        """Per GM buffer passed: (reads, writes, first phase touching it or None, last
        phase), over every argument slot it is passed as; gathered once per launch, since
        the plan's checks ask it per pair of buffers (a merged launch passes thousands)."""
        touches = self.__dict__.get("_touch_table")
        if touches is not None:
            return touches
        touches = {}
        for slot, arg in zip(self.program.arguments, self.args):
            reads, writes, first, last = touches.get(arg, (False, False, None, None))
            if slot.first_phase is not None:
                first = slot.first_phase if first is None else min(first, slot.first_phase)
                last = slot.last_phase if last is None else max(last, slot.last_phase)
            touches[arg] = (reads or slot.reads, writes or slot.writes, first, last)
        self.__dict__["_touch_table"] = touches
        return touches

    def describe(self) -> str:
        return f"launch of @{self.program.name} on stream {self.stream} ({describe(self.op)})"

    def phases(self, buffer: GmBuffer) -> tuple[int, int]:
        """The first and last phase of this launch's kernel (split by npu.sync_all)
        that touch `buffer`; the whole kernel if no instruction does."""
        _, _, first, last = self._touches().get(buffer, (False, False, None, None))
        if first is None:
            return 0, self.program.phases - 1
        return first, last

    def at(self, phase: int) -> str:
        """'#i', naming the phase where the kernel has several."""
        return f"#{self.index}" + (f" (phase {phase})" if self.program.phases > 1 else "")


@dataclass
class EventStep:
    op: Operation
    record: bool
    stream: int
    event: int


def _label(value: SSAValue, fallback: str) -> str:
    return f"%{value.name_hint}" if value.name_hint else fallback


class HostPlan:
    """The analysed plan of one module (see the module docstring)."""

    def __init__(
        self, module: ModuleOp, main: func.FuncOp, hw: HardwarePreset, memory: GlobalMemory, shortcuts: bool = True,
        approx: bool = False,
    ):
        self.module = module
        self.shortcuts = shortcuts
        # the approximate simulation (`approx.py`): launches' programs decoded for
        # it, the full simulation's on demand (`variant`)
        self.approx = approx
        self.tally = approx_module.Tally()
        self._variants: dict[tuple[str, str], KernelProgram] = {}
        self.main = main
        self.hw = hw
        self.programs: dict[str, KernelProgram] = {}
        self.memory = memory
        self.buffers: list[GmBuffer] = []
        self.steps: list[Launch | EventStep] = []
        self.arena_bytes = 0
        self._read_plan()
        self._check_streams()
        self._check_lifetimes()

    # ---- reading --------------------------------------------------------------------

    def program(self, kernel: npu.KernelOp) -> KernelProgram:
        name = kernel.sym_name.data
        if name not in self.programs:
            mode = "approx" if self.approx else "full"
            self.programs[name] = decode_kernel(kernel, self.hw, self.memory, self.shortcuts, mode)
        return self.programs[name]

    def variant(self, program: KernelProgram, mode: str) -> KernelProgram:
        """`program`'s kernel decoded for `mode` ("full", "approx"), once."""
        if program.mode == mode:
            return program
        key = (program.name, mode)
        if key not in self._variants:
            with cyclic_gc_paused():
                self._variants[key] = decode_kernel(program.op, self.hw, self.memory, self.shortcuts, mode)
        return self._variants[key]

    def _read_plan(self) -> None:
        arguments = self._arguments()
        by_value: dict[SSAValue, GmBuffer] = {b.value: b for b in arguments}
        arena = []
        constants = []
        for op in self.main.body.block.ops:
            if isinstance(op, npu.GmBufferOp):
                buffer = self._arena_buffer(op)
                arena.append(buffer)
                by_value[op.result] = buffer
            elif isinstance(op, npu.GmConstantOp):
                buffer = self._constant(op)
                constants.append(buffer)
                by_value[op.result] = buffer
            elif isinstance(op, npu.GmViewOp):
                if op.source not in by_value:
                    raise op_error(op, "views a value that is not a GM buffer of the plan")
                # A view is its source for every purpose: same bytes, same lifetime.
                by_value[op.result] = by_value[op.source]
            elif isinstance(op, npu.LaunchOp):
                self.steps.append(self._launch(op, by_value))
            elif isinstance(op, npu.RecordEventOp | npu.WaitEventOp):
                a = op.attr_values()
                self.steps.append(EventStep(op, isinstance(op, npu.RecordEventOp), a.stream, a.event))
            elif not isinstance(op, func.ReturnOp):
                raise op_error(op, "cannot be run in the host plan (it holds npu.gm_buffer, npu.launch and events)")
        self.arena_bytes = self._arena_size(arena)
        address = -(-self.arena_bytes // ARG_ALIGNMENT) * ARG_ALIGNMENT
        for buffer in arguments + constants:
            buffer.address = address
            address += -(-buffer.nbytes // ARG_ALIGNMENT) * ARG_ALIGNMENT
        self.buffers = arena + arguments + constants

    def _arena_buffer(self, op: npu.GmBufferOp) -> GmBuffer:
        a = op.attr_values()
        if a.offset is None:
            raise op_error(op, "has no offset: GM buffers must be placed in the arena (offset = ...) before simulation")
        alignment = self.hw.alignment["gm"]
        if a.offset % alignment:
            raise op_error(op, f"misaligned: offset {a.offset} is not a multiple of the {alignment}-byte GM alignment")
        t = op.result.type
        return GmBuffer(
            _label(op.result, "an npu.gm_buffer"),
            op,
            op.result,
            a.offset,
            dtypes.to_numpy_dtype(t.element_type),
            tuple(t.get_shape()),
            in_arena=True,
        )

    def _arena_size(self, arena: list[GmBuffer]) -> int:
        end = max((b.address + b.nbytes for b in arena), default=0)
        recorded = self.module.attributes.get(npu.ARENA_ATTR)
        if recorded is None:
            return end
        if not isinstance(recorded, IntegerAttr):
            raise CompileError(f"module attribute {npu.ARENA_ATTR} must be an integer, got {recorded}", self.module)
        size = recorded.value.data
        for b in arena:
            if b.address + b.nbytes > size:
                raise op_error(
                    b.op,
                    f"out of the arena: bytes [{b.address}, {b.address + b.nbytes}) of a {size}-byte GM arena "
                    f"({npu.ARENA_ATTR})",
                )
        return size

    def _constant(self, op: npu.GmConstantOp) -> GmBuffer:
        t = op.result.type
        return GmBuffer(
            _label(op.result, "an npu.gm_constant"),
            op,
            op.result,
            0,
            dtypes.to_numpy_dtype(t.element_type),
            tuple(t.get_shape()),
            in_arena=False,
            role="constant",
        )

    def _arguments(self) -> list[GmBuffer]:
        """@main's arguments (placed after the arena once its size is known)."""
        buffers = []
        for arg, (role, name) in zip(self.main.body.block.args, npu_argument_roles(self.main)):
            t = arg.type
            buffers.append(
                GmBuffer(
                    f"'{name}'",
                    self.main,
                    arg,
                    0,
                    dtypes.to_numpy_dtype(t.element_type),
                    tuple(t.get_shape()),
                    in_arena=False,
                    role=role,
                )
            )
        return buffers

    def _launch(self, op: npu.LaunchOp, by_value: dict) -> Launch:
        kernel = op.kernel_op()
        a = op.attr_values()
        program = self.program(kernel)
        args = []
        for value in op.args:
            if value not in by_value:
                raise op_error(op, "passes a value that is neither an @main argument nor an npu.gm_buffer")
            args.append(by_value[value])
        block_dim = a.block_dim if a.block_dim is not None else program.block_dim
        if program.phases > 1 and block_dim > self.hw.core_count:
            raise op_error(
                op,
                f"launches @{program.name} on {block_dim} blocks, but its npu.sync_all needs every block resident "
                f"at once: at most the {self.hw.core_count} cores of preset '{self.hw.name}'",
            )
        return Launch(op, len(self.launches), program, args, block_dim, a.stream)

    @property
    def launches(self) -> list[Launch]:
        return [s for s in self.steps if isinstance(s, Launch)]

    # ---- ordering checks -------------------------------------------------------------

    def _check_streams(self) -> None:
        """Give every launch its stream vector clock; check waits and cross-stream races."""
        clocks: dict[int, dict[int, int]] = defaultdict(dict)
        recorded: dict[int, dict[int, int]] = {}
        users: dict[GmBuffer, list[Launch]] = defaultdict(list)
        for step in self.steps:
            if isinstance(step, EventStep):
                if step.record:
                    recorded[step.event] = dict(clocks[step.stream])
                elif step.event not in recorded:
                    raise op_error(
                        step.op,
                        f"deadlock: waits for event {step.event}, which no earlier npu.record_event records",
                    )
                else:
                    clock = clocks[step.stream]
                    for stream, count in recorded[step.event].items():
                        clock[stream] = max(clock.get(stream, 0), count)
                continue
            clock = clocks[step.stream]
            clock[step.stream] = clock.get(step.stream, 0) + 1
            step.clock = dict(clock)
            for buffer in dict.fromkeys(step.args):
                for earlier in users[buffer]:
                    self._check_pair(earlier, step, buffer)
                users[buffer].append(step)

    def _check_pair(self, earlier: Launch, later: Launch, buffer: GmBuffer) -> None:
        r1, w1 = earlier.modes(buffer)
        r2, w2 = later.modes(buffer)
        if not (w1 or w2) or earlier.ordered_before(later):
            return
        raise op_error(
            later.op,
            f"race between streams: {'writes' if w2 else 'reads'} GM buffer {buffer.label} that the "
            f"{earlier.describe()} {'writes' if w1 else 'reads'}, and no npu.record_event / npu.wait_event "
            f"orders the two launches",
        )

    def _check_lifetimes(self) -> None:
        uses: dict[GmBuffer, list[Launch]] = defaultdict(list)
        for launch in self.launches:
            for buffer in dict.fromkeys(launch.args):
                uses[buffer].append(launch)
        arena = [b for b in self.buffers if b.in_arena and uses[b]]
        for i, j in _overlapping_pairs(arena):
            self._check_reuse(arena[i], arena[j], uses[arena[i]], uses[arena[j]])

    def _check_reuse(self, a: GmBuffer, b: GmBuffer, uses_a: list[Launch], uses_b: list[Launch]) -> None:
        """Lifetimes run in (launch, phase) order: the phases of one launch are ordered
        by its npu.sync_all, so two buffers may share bytes within one launch."""
        lo, hi = max(a.address, b.address), min(a.address + a.nbytes, b.address + b.nbytes)

        def first(buffer, uses):
            return uses[0].index, uses[0].phases(buffer)[0]

        def last(buffer, uses):
            return uses[-1].index, uses[-1].phases(buffer)[1]

        if first(a, uses_a) > first(b, uses_b):
            a, b, uses_a, uses_b = b, a, uses_b, uses_a
        if first(b, uses_b) <= last(a, uses_a):
            raise op_error(
                b.op,
                f"GM buffers {a.label} and {b.label} overlap in the arena (bytes [{lo}, {hi})) while both are "
                f"live: {a.label} is used from launch {uses_a[0].at(first(a, uses_a)[1])} to "
                f"{uses_a[-1].at(last(a, uses_a)[1])}, {b.label} from launch {uses_b[0].at(first(b, uses_b)[1])} "
                f"({describe(uses_b[0].op)})",
            )
        for x in uses_a:
            for y in uses_b:
                if not x.ordered_before(y):
                    raise op_error(
                        b.op,
                        f"GM buffer {b.label} reuses bytes [{lo}, {hi}) of {a.label}, but the {y.describe()} "
                        f"is not ordered after the {x.describe()} that uses {a.label}: add "
                        f"npu.record_event / npu.wait_event",
                    )

    # ---- memory ---------------------------------------------------------------------

    def allocate(self, inputs: list[np.ndarray]) -> None:
        """GM arrays with slack for strided views: the arena (poisoned with 0xFF, NaN
        for floats), the inputs (copied), the outputs (poisoned)."""
        slack = self.slack_bytes
        arena = np.full(-(-(self.arena_bytes + slack) // 64) * 64, 0xFF, dtype=np.uint8)
        feeds = iter(inputs)
        for buffer in self.buffers:
            if buffer.in_arena:
                buffer.array = arena[buffer.address :].view(buffer.dtype)
                continue
            extra = -(-slack // buffer.dtype.itemsize)
            raw = np.full((buffer.numel + extra) * buffer.dtype.itemsize, 0xFF, dtype=np.uint8)
            buffer.array = raw.view(buffer.dtype)
            if buffer.role == "input":
                buffer.array[: buffer.numel] = np.asarray(next(feeds)).reshape(-1)
            elif buffer.role == "constant":
                buffer.array[: buffer.numel] = buffer.op.physical_data().reshape(-1)

    def outputs(self) -> list[np.ndarray]:
        return [
            b.array[: b.numel].reshape(b.shape).copy()
            for b in self.buffers
            if not b.in_arena and b.role == "output"
        ]

    @property
    def peak_gm_bytes(self) -> int:
        return self.arena_bytes + sum(b.nbytes for b in self.buffers if not b.in_arena)

    @property
    def slack_bytes(self) -> int:
        """Spare bytes after every buffer, for the strided views of any kernel."""
        return max((p.slack_bytes for p in self.programs.values()), default=0) + 64

    def local_memory(self) -> LocalMemory:
        return LocalMemory(self.hw, self.slack_bytes)


def _overlapping_pairs(buffers: list[GmBuffer]) -> list[tuple[int, int]]:
    """The pairs (i, j), i < j, of `buffers` that overlap, in the order of a walk over
    every pair (the first reported is the one that walk meets first), found by a
    sweep over the buffers sorted by address instead of that walk (an arena of a
    few thousand buffers: millions of pairs)."""
    by_address = sorted(range(len(buffers)), key=lambda i: buffers[i].address)
    pairs = []
    for n, i in enumerate(by_address):
        end = buffers[i].address + buffers[i].nbytes
        for j in by_address[n + 1 :]:
            if buffers[j].address >= end:  # every later one starts at or after the end
                break
            if buffers[i].overlaps(buffers[j]):
                pairs.append((min(i, j), max(i, j)))
    return sorted(pairs)


def run_plan(plan: HostPlan, check_races: bool, trace: bool, recorder) -> int:
    """Execute the plan; `recorder` collects per-launch results. Returns total cycles."""
    hw = plan.hw
    memories = [plan.local_memory() for _ in range(hw.core_count)]
    lockstep = Lockstep()
    plan.memory.pace = lockstep.pace
    try:
        return _run_steps(plan, memories, lockstep, check_races, trace, recorder)
    finally:
        lockstep.close()


def _run_steps(plan: HostPlan, memories, lockstep: Lockstep, check_races: bool, trace: bool, recorder) -> int:
    hw = plan.hw
    cores = [(0, c) for c in range(hw.core_count)]
    heapq.heapify(cores)
    ready: dict[int, int] = defaultdict(int)
    reached: dict[int, int] = {}
    for step in progress(plan.steps, "simulating", unit="launch"):
        if isinstance(step, EventStep):
            if step.record:
                reached[step.event] = ready[step.stream]
            else:
                ready[step.stream] = max(ready[step.stream], reached[step.event])
            continue
        start = ready[step.stream] + hw.kernel_launch_cycles
        lockstep.fair_share = hw.hbm_bytes_per_cycle / min(step.block_dim, hw.core_count)
        blocks = None
        if plan.approx and step.block_dim > 1 and approx_module.eligible(step.program):
            blocks = approx_module.run_launch(plan, step, start, cores, memories, lockstep, check_races, _run_launch,
                                              plan.tally)
        if blocks is None:
            if plan.approx:
                plan.tally.full_launches += 1
                step = dataclasses.replace(step, program=plan.variant(step.program, "full"))
            step.program.bind_arguments([b.array for b in step.args], [b.address for b in step.args])
            blocks = _run_launch(step, start, cores, memories, lockstep, check_races, trace)
        ready[step.stream] = max(end for _, _, end, _ in blocks)
        recorder(step, start, blocks)
    return max(ready.values(), default=0)


def _nothing() -> None:
    """A block's state lives in its Core (registers, buffer table): a hand-over swaps nothing."""


def _run_launch(
    step: Launch,
    start: int,
    cores: list[tuple[int, int]],
    memories: list[LocalMemory],
    lockstep: Lockstep,
    check_races: bool,
    trace: bool,
    indices: list[int] | None = None,
    weights: dict | None = None,
) -> list[tuple[int, int, int, object]]:
    """Run the blocks of one launch, each on the core that frees first (`cores` is a
    heap of (free cycle, core id), updated), side by side (`lockstep.py`). Returns
    (core id, start, end, Core) per block, in block order. The approximate
    simulation's timing pass (`approx.py`) runs the blocks `indices` only, meeting at
    barriers among themselves, with per block (its GM transfers' weights, the phases
    it skips)."""
    program = step.program
    indices = range(step.block_dim) if indices is None else indices
    parties = len(indices)

    def meet(cycle: int, op) -> int:
        return lockstep.meet(cycle, parties, op)

    order = iter(indices)
    placed: dict[Block, int] = {}  # its block index
    checks = LaunchChecks()

    def place(block_idx: int) -> Block:
        free, core_id = heapq.heappop(cores)
        begin = max(start, free)
        memory = memories[core_id]
        block = Block(
            core_id,
            begin,
            lambda: program.run_block(block_idx, step.block_dim, begin, memory, check_races, trace, meet, checks,
                                      *(() if weights is None else weights[block_idx])),
            _nothing,
            _nothing,
        )
        placed[block] = block_idx
        return block

    def finished(block: Block) -> Block | None:
        heapq.heappush(cores, (block.result.end, block.core))
        block_idx = next(order, None)
        return None if block_idx is None else place(block_idx)

    first = [place(i) for _, i in zip(range(len(cores)), order)]
    try:
        if parties == 1:  # nothing to share the HBM with
            first[0].enter()
            first[0].result = first[0].run()
            finished(first[0])
        else:
            lockstep.run(first, finished)
    except Exception as error:  # the race made first, if an access not checked yet races
        found = checks.first_error(error)
        if found is error:
            raise
        raise found from None
    in_order = sorted(placed, key=placed.get)
    return [(block.core, block.start, block.result.end, block.result) for block in in_order]
