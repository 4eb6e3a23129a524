"""In-place reuse: a launch writes its output over an input that dies there.

The candidates are the host plan's: an arena buffer X that launch L reads for
the last time (every other use of X is ordered before L) and an arena buffer Y
that L writes first, with the same element type and count. Whether L's kernel
may then really share the bytes depends on how it walks them, so that is
proven on the kernel itself rather than assumed from the op's kind: the
kernel's control flow and index math are run for every block (the simulator's
own decoder, with the instructions replaced by recorders of the elements they
touch in X and Y), and sharing is safe when

* no block reads an element of X after it (in program order) wrote that
  element of Y, and
* no block reads an element of X that another block writes in Y (blocks run on
  different cores in any order),

i.e. every element of X is consumed before the same element of Y overwrites
it, by the same core. An elementwise row-tile kernel (tile in, compute, tile
out) passes; a kernel re-reading a window its tail overlaps, a transpose, or
one whose addresses depend on GM data (`npu.read_scalar`) does not. Within a
core, the pipes must also order the read before the write; a kernel computing
the output element from the input element orders them through its data, and
the simulator's race checker (GM accesses are tracked by address) reports it
otherwise.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from xdsl.dialects import scf
from xdsl.ir import SSAValue

from ...core import memo
from ...dialects import npu
from ...simulator.hardware import HardwarePreset
from ...simulator.npu.hazards import NP
from ...simulator.npu.program import SPACE_INDEX, KernelDecoder
from .launches import Buffer, HostPlanModel, Launch


class _DataDependentAddresses(Exception):
    """The kernel reads GM data into scalars: its addresses cannot be traced statically."""


class _WholeArgument:
    """The access pattern of an instruction whose offset comes from GM data: any
    element of its argument (one run over all of them), for a tracer that can
    afford to assume the worst."""

    def __init__(self, numel: int):
        self.numel = numel

    def runs(self) -> tuple[int, int]:
        return 1, self.numel

    def run_starts(self, offset: int) -> np.ndarray:
        return np.zeros(1, dtype=np.int64)


def _data_dependent(kernel: npu.KernelOp) -> set[SSAValue]:
    """The values of `kernel` computed from an `npu.read_scalar`'s result (through
    index math, loop-carried values and scf results); DataDependentAddresses if
    control flow (a loop's bounds, a condition) depends on one."""
    tainted: set[SSAValue] = set()
    ops = list(kernel.walk())
    changed = True
    while changed:
        changed = False
        for op in ops:
            if isinstance(op, npu.ReadScalarOp) or any(v in tainted for v in op.operands):
                if isinstance(op, scf.YieldOp):  # the parent's results (and a loop's carried values)
                    parent = op.parent_op()
                    carried = op.parent_block().args[1:] if isinstance(parent, scf.ForOp) else ()
                    new = [
                        t for i, v in enumerate(op.operands) if v in tainted
                        for t in (parent.results[i], *(carried[i:i + 1]))
                    ]
                else:
                    new = list(op.results)
                    if isinstance(op, scf.ForOp):
                        new += [op.body.block.args[i + 1] for i, v in enumerate(op.iter_args) if v in tainted]
                fresh = [v for v in new if v not in tainted]
                if fresh:
                    tainted.update(fresh)
                    changed = True
    for op in ops:
        if isinstance(op, scf.ForOp) and any(v in tainted for v in (op.lb, op.ub, op.step)):
            raise _DataDependentAddresses()
        if isinstance(op, scf.IfOp) and op.cond in tainted:
            raise _DataDependentAddresses()
    return tainted


class _FootprintDecoder(KernelDecoder):
    """The simulator's kernel decoder keeping only control flow and index math;
    instructions that access the watched parameters record (role, reads,
    writes, offset, pattern) when they run. A kernel reading GM data into
    scalars (`npu.read_scalar`) raises DataDependentAddresses, unless
    `data_dependent`: then an access whose offset comes from such data records
    its whole argument (control flow depending on it still raises)."""

    def __init__(self, hw: HardwarePreset, roles: dict[int, str], data_dependent: bool = False):
        super().__init__(hw, None)
        self.roles = roles
        self.trace: list[tuple] = []
        self.data_dependent = data_dependent
        self.tainted: set[SSAValue] = set()

    def decode(self, kernel: npu.KernelOp):
        if self.data_dependent:
            self.tainted = _data_dependent(kernel)
        return super().decode(kernel)

    def _alloc(self, op: npu.AllocOp) -> None:
        # Local buffers do not matter here, placed or not.
        space = str(npu.space_of(op.result.type))
        self._add_buffer(op.result, space=SPACE_INDEX[space], space_name=space)

    def instruction_step(self, op: npu.InstructionOp):
        if isinstance(op, npu.ReadScalarOp):
            if not self.data_dependent:
                raise _DataDependentAddresses()
            self.define(op.result)  # any value: only tainted offsets read it
        watched = []
        for access in op.accesses(op.attr_values()):
            slot = self.buffer(op.operands[access.operand])
            if slot.argument in self.roles:
                offset = op.operands[access.operand + 1]
                if offset in self.tainted:
                    watched.append((self.roles[slot.argument], access.reads, access.writes, None, _WholeArgument(slot.numel)))
                else:
                    watched.append((self.roles[slot.argument], access.reads, access.writes, self.reg(offset), access.pattern))
        regs, trace = self.regs, self.trace

        def step(core) -> None:
            for role, reads, writes, offset, pattern in watched:
                trace.append((role, reads, writes, 0 if offset is None else regs[offset], pattern))

        return step


def _elements(offset: int, pattern) -> np.ndarray:
    _, run = pattern.runs()
    return (pattern.run_starts(offset)[:, None] + np.arange(run, dtype=np.int64)).reshape(-1)


def kernel_can_share(
    kernel: npu.KernelOp, hw: HardwarePreset, inputs: set[int], outputs: set[int], block_dim: int, numel: int
) -> bool:
    """Whether `kernel`, launched on `block_dim` blocks, computes the same when the
    parameters `outputs` share the bytes of the parameters `inputs` (all of
    `numel` elements of one type); see the module docstring. Memoised on the
    kernel's structure (its name aside) and the other arguments: the launches of
    a model's identical layers ask it of copies of one kernel."""
    key = None
    if memo.enabled():
        structure = memo.structure_key(kernel, ignore=("sym_name",))
        if structure is not None:
            key = (structure, memo.stand_in(hw), frozenset(inputs), frozenset(outputs), block_dim, numel)
    found = _SHARES.get(key) if key is not None else memo.Memo.MISSING
    if found is memo.Memo.MISSING:
        found = _traced_can_share(kernel, hw, inputs, outputs, block_dim, numel)
        if key is not None:
            _SHARES.put(key, found)
    return found


_SHARES = memo.Memo(1024)


def _traced_can_share(
    kernel: npu.KernelOp, hw: HardwarePreset, inputs: set[int], outputs: set[int], block_dim: int, numel: int
) -> bool:
    decoder = _FootprintDecoder(hw, {**{i: "in" for i in inputs}, **{o: "out" for o in outputs}})
    try:
        program = decoder.decode(kernel)
    except _DataDependentAddresses:
        return False
    read_by = np.full(numel, _NOBODY, dtype=np.int32)  # the block reading each element of X
    written_by = np.full(numel, _NOBODY, dtype=np.int32)  # ... writing each element of Y
    for block in range(block_dim):
        decoder.trace.clear()
        for r in program.block_idx_regs:
            program.regs[r] = block
        for r in program.block_dim_regs:
            program.regs[r] = block_dim
        program.run(SimpleNamespace(s_time=0, busy=[0] * NP))
        read, written, ok = _replay(decoder.trace, numel)
        if not ok:
            return False
        _claim(read_by, read, block)
        _claim(written_by, written, block)
    # An element read by one block and written by another: the order between cores is unknown.
    touched = (read_by != _NOBODY) & (written_by != _NOBODY)
    return not (touched & ((read_by != written_by) | (read_by == _SEVERAL))).any()


_NOBODY, _SEVERAL = -1, -2


def _claim(owner: np.ndarray, mask: np.ndarray, block: int) -> None:
    """Record that `block` touches the elements of `mask` (_SEVERAL where another did too)."""
    owner[mask & (owner != _NOBODY)] = _SEVERAL
    owner[mask & (owner == _NOBODY)] = block


def _replay(trace: list[tuple], numel: int) -> tuple[np.ndarray, np.ndarray, bool]:
    """(elements of X read, elements of Y written, no read after an overlapping write)."""
    read = np.zeros(numel, dtype=bool)
    written = np.zeros(numel, dtype=bool)
    for role, reads, writes, offset, pattern in trace:
        elements = _elements(offset, pattern)
        if role == "in":
            if writes or written[elements].any():
                return read, written, False
            read[elements] = True
        elif writes:
            written[elements] = True
    return read, written, True


def _same_layout(a: Buffer, b: Buffer) -> bool:
    ta, tb = a.value.type, b.value.type
    return ta.element_type == tb.element_type and npu.base.element_count(ta) == npu.base.element_count(tb)


def in_place_candidates(plan: HostPlanModel, hw: HardwarePreset) -> list[tuple[Launch, SSAValue, Buffer]]:
    """(launch, the input value it passes, the output buffer to put on it) for every
    output that can take over the bytes of an input dying at the same launch. Chains
    are followed: an output that took over an input's bytes is that input from then on."""
    uses = plan.uses()
    merged: dict[Buffer, Buffer] = {}  # buffer -> the buffer whose bytes it uses
    found: list[tuple[Launch, SSAValue, Buffer]] = []
    for launch in plan.launches:
        consumed: set[Buffer] = set()
        for y in launch.writes:
            if not y.in_arena or uses[y][0] is not launch or y in launch.reads:
                continue
            for value in dict.fromkeys(launch.op.args):
                x = plan.root(value)
                home = merged.get(x, x)
                if home in consumed or not _dies_at(x, launch, uses[home]) or not _same_layout(x, y):
                    continue
                if _kernel_shares(launch, value, y, plan, hw):
                    found.append((launch, value, y))
                    consumed.add(home)
                    merged[y] = home
                    uses[home] = sorted(uses[home] + uses[y], key=lambda u: u.index)
                    break
    return found


def _dies_at(x: Buffer, launch: Launch, uses: list[Launch]) -> bool:
    """X is an arena buffer only read by `launch`, and every other use of its bytes
    (`uses`, in host order) comes before it."""
    return (
        x.in_arena
        and uses[-1] is launch
        and x in launch.reads
        and x not in launch.writes
        and all(u.ordered_before(launch) for u in uses[:-1])
    )


def _kernel_shares(launch: Launch, x_value: SSAValue, y: Buffer, plan: HostPlanModel, hw: HardwarePreset) -> bool:
    x = plan.root(x_value)
    args = list(launch.op.args)
    inputs = {i for i, v in enumerate(args) if plan.root(v) is x}
    outputs = {i for i, v in enumerate(args) if plan.root(v) is y}
    kernel = launch.op.kernel_op()
    block_dim = launch.op.attr_values().block_dim or kernel.attr_values().block_dim
    numel = npu.base.element_count(x.value.type)
    return kernel_can_share(kernel, hw, inputs, outputs, block_dim, numel)


def apply_in_place(plan: HostPlanModel, candidates: list[tuple[Launch, SSAValue, Buffer]]) -> None:
    """Make every chosen output buffer a view of the input it overwrites (in the
    order found, so a chain ends up viewing its first buffer)."""
    replaced: dict[SSAValue, SSAValue] = {}
    for _, x_value, y in candidates:
        buffer_op = y.value.owner
        source = replaced.get(x_value, x_value)
        view = npu.GmViewOp.of(source, y.value.type.get_shape())
        view.result.name_hint = y.value.name_hint
        plan.block.insert_op_before(view, buffer_op)
        buffer_op.result.replace_all_uses_with(view.result)
        replaced[y.value] = view.result
        buffer_op.detach()
        buffer_op.erase()
