"""The host plan as the planners see it: the GM buffers, the launches that touch
them (reading or writing), and what orders the launches.

Both planners work on this model of `func.func @main`:

* a *buffer* is where bytes live: an @main argument (input or output), an
  `npu.gm_constant`, or an `npu.gm_buffer` of the arena. An `npu.gm_view` is
  not a buffer of its own: it is its source (same bytes, same lifetime), so
  every value is resolved to its root buffer;
* a *launch* reads and writes the buffers its arguments are bound to; which
  parameters a kernel reads or writes comes from the accesses of its
  instructions (`npu.InstructionOp.accesses`), so it holds for any kernel;
* a launch's *vector clock* is what its stream knows when it runs: launches on
  one stream run in host order, and `npu.wait_event` joins the clock of the
  latest earlier `npu.record_event` of that event, as in the simulator
  (simulator/npu/plan.py). `a` is ordered before `b` when `b`'s clock covers `a`.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue

from ...core.diagnostics import CompileError, op_error
from ...dialects import npu
from ...core.signature import is_npu_host, main_function, npu_argument_roles

DEFINITIONS = (npu.GmBufferOp, npu.GmConstantOp, npu.GmViewOp)
"""Host ops that only name GM memory (no effect at run time)."""

EVENTS = (npu.RecordEventOp, npu.WaitEventOp)


SHARED_PHASE_ATTR = "npu.shared_phase"
"""On a launch (and the fused op it comes from): "with_next" / "with_previous", it
and its neighbour were tiled to run side by side in one phase
(`fused_to_npu/share_cores.py`), so the GM plan keeps their buffers apart as if
they ran at once."""


@dataclass(eq=False)
class Buffer:
    """Bytes of GM: an @main argument, a constant, or an arena buffer."""

    value: SSAValue
    role: str  # "input", "output", "constant" or "arena"
    nbytes: int

    @property
    def in_arena(self) -> bool:
        return self.role == "arena"

    @property
    def op(self) -> Operation | None:
        return self.value.owner if isinstance(self.value.owner, Operation) else None

    @property
    def label(self) -> str:
        return f"%{self.value.name_hint}" if self.value.name_hint else f"a {self.role} buffer"


@dataclass(eq=False)
class Launch:
    op: npu.LaunchOp
    index: int  # position among the launches, in host order
    stream: int
    reads: list[Buffer]
    writes: list[Buffer]
    clock: dict[int, int] = field(default_factory=dict)  # stream -> launches of it known done (incl. this one)

    @property
    def buffers(self) -> list[Buffer]:
        return list(dict.fromkeys(self.reads + self.writes))

    @property
    def span(self) -> tuple[int, int]:
        """The host-order indices this launch may run at: its own, and its partner's
        when it shares a phase with the launch before or after it (`SHARED_PHASE_ATTR`)."""
        mark = self.op.attributes.get(SHARED_PHASE_ATTR)
        mark = mark.data if mark is not None else None
        return (self.index - (mark == "with_previous"), self.index + (mark == "with_next"))

    @property
    def position(self) -> int:
        """This launch's count on its own stream (1 for the first)."""
        return self.clock[self.stream]

    def ordered_before(self, later: "Launch") -> bool:
        return later.clock.get(self.stream, 0) >= self.position


def kernel_argument_modes(kernel: npu.KernelOp) -> list[tuple[bool, bool]]:
    """(reads, writes) of each GM parameter of `kernel`, from its instructions' accesses."""
    index = {arg: i for i, arg in enumerate(kernel.entry.args)}
    modes = [[False, False] for _ in index]
    for op in kernel.walk():
        if not isinstance(op, npu.InstructionOp):
            continue
        for access in op.accesses(op.attr_values()):
            i = index.get(op.operands[access.operand])
            if i is not None:
                modes[i][0] |= access.reads
                modes[i][1] |= access.writes
    return [(r, w) for r, w in modes]


def hoist_definitions(block) -> None:
    """Move the ops naming GM memory to the start of the host block, sources before
    the views of them, so launches and events can be reordered freely after them."""
    pending = [op for op in block.ops if isinstance(op, DEFINITIONS)]
    ordered: list[Operation] = []
    defined: set[Operation] = set()
    while pending:
        ready = [op for op in pending if not _waits_for(op, pending, defined)]
        ordered += ready
        defined.update(ready)
        pending = [op for op in pending if op not in defined]
    for op in ordered:
        op.detach()
    first = block.first_op
    for op in ordered:
        if first is None:
            block.add_op(op)
        else:
            block.insert_op_before(op, first)


def _waits_for(op: Operation, pending: list[Operation], defined: set[Operation]) -> bool:
    source = op.source.owner if isinstance(op, npu.GmViewOp) else None
    return source in pending and source not in defined


class HostPlanModel:
    """Buffers, launches and their ordering, read from a module's @main."""

    def __init__(self, module: ModuleOp):
        self.module = module
        self.main: func.FuncOp = main_function(module)
        if not is_npu_host(self.main):
            raise CompileError("@main is not an npu host plan (GM memref arguments): lower it with ge-to-npu first", self.main)
        self.block = self.main.body.block
        self.buffers: list[Buffer] = []
        self.launches: list[Launch] = []
        self._roots: dict[SSAValue, Buffer] = {}
        self._modes: dict[str, list[tuple[bool, bool]]] = {}
        self._read()
        self._by_op = {launch.op: launch for launch in self.launches}
        self.compute_clocks()

    # ---- reading ------------------------------------------------------------------

    def root(self, value: SSAValue) -> Buffer:
        return self._roots[value]

    def _add(self, value: SSAValue, role: str) -> None:
        buffer = Buffer(value, role, npu.buffer_bytes(value.type))
        self.buffers.append(buffer)
        self._roots[value] = buffer

    def _read(self) -> None:
        for arg, (role, _) in zip(self.block.args, npu_argument_roles(self.main)):
            self._add(arg, role)
        for op in self.block.ops:
            if isinstance(op, npu.GmBufferOp):
                self._add(op.result, "arena")
            elif isinstance(op, npu.GmConstantOp):
                self._add(op.result, "constant")
            elif isinstance(op, npu.GmViewOp):
                if op.source not in self._roots:
                    raise op_error(op, "views a value that is not a GM buffer of the plan")
                self._roots[op.result] = self._roots[op.source]
            elif isinstance(op, npu.LaunchOp):
                self.launches.append(self._launch(op))

    def _launch(self, op: npu.LaunchOp) -> Launch:
        kernel = op.kernel_op()
        name = kernel.sym_name.data
        if name not in self._modes:
            self._modes[name] = kernel_argument_modes(kernel)
        reads, writes = [], []
        for value, (r, w) in zip(op.args, self._modes[name]):
            if value not in self._roots:
                raise op_error(op, "passes a value that is neither an @main argument nor a GM buffer of the plan")
            buffer = self._roots[value]
            if r and buffer not in reads:
                reads.append(buffer)
            if w and buffer not in writes:
                writes.append(buffer)
        return Launch(op, len(self.launches), op.attr_values().stream, reads, writes)

    # ---- ordering -------------------------------------------------------------------

    def compute_clocks(self) -> None:
        """Every launch's vector clock from the host ops' stream and event ops."""
        by_op = {launch.op: launch for launch in self.launches}
        clocks: dict[int, dict[int, int]] = defaultdict(dict)
        recorded: dict[int, dict[int, int]] = {}
        for op in self.block.ops:
            if isinstance(op, npu.LaunchOp):
                launch = by_op[op]
                clock = clocks[launch.stream]
                clock[launch.stream] = clock.get(launch.stream, 0) + 1
                launch.clock = dict(clock)
            elif isinstance(op, EVENTS):
                a = op.attr_values()
                if isinstance(op, npu.RecordEventOp):
                    recorded[a.event] = dict(clocks[a.stream])
                elif a.event in recorded:
                    clock = clocks[a.stream]
                    for stream, count in recorded[a.event].items():
                        clock[stream] = max(clock.get(stream, 0), count)

    def launch_of(self, op: npu.LaunchOp) -> Launch:
        """The model of launch `op` (by identity; the model is read once)."""
        return self._by_op[op]

    def uses(self) -> dict[Buffer, list[Launch]]:
        """The launches using each buffer, in host order."""
        uses: dict[Buffer, list[Launch]] = {b: [] for b in self.buffers}
        for launch in self.launches:
            for buffer in launch.buffers:
                uses[buffer].append(launch)
        return uses

    def dependencies(self) -> list[list[int]]:
        """For each launch, the earlier launches it must follow: it reads what they
        wrote, or writes what they read or wrote (on the same buffer)."""
        last_writer: dict[Buffer, int] = {}
        readers: dict[Buffer, list[int]] = defaultdict(list)
        preds: list[list[int]] = []
        for launch in self.launches:
            before: set[int] = set()
            for buffer in launch.reads:
                if buffer in last_writer:
                    before.add(last_writer[buffer])
            for buffer in launch.writes:
                if buffer in last_writer:
                    before.add(last_writer[buffer])
                before.update(readers[buffer])
            before.discard(launch.index)
            for buffer in launch.reads:
                readers[buffer].append(launch.index)
            for buffer in launch.writes:
                last_writer[buffer] = launch.index
                readers[buffer] = []
            preds.append(sorted(before))
        return preds

    @property
    def streams(self) -> list[int]:
        return sorted({launch.stream for launch in self.launches})
