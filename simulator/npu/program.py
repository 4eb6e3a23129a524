"""A kernel decoded once into closures, and run once per block.

Decoding walks the kernel's ops a single time: index values get slots in a
register file (a Python list, constants pre-filled), buffers get slots in a
buffer table (GM arguments bound per launch, local allocations bound to the
core's memories), and every op becomes a closure (`scalar.py` for arith / scf,
`instructions.py` for npu instructions). Running a block is then calling the
top-level closures in order: no xDSL object is looked at per executed
instruction.

Static checks happen here, each a located error: an allocation without an
offset, outside its space's capacity or misaligned; a constant offset out of
bounds or misaligned; an event id beyond the preset's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from xdsl.dialects import arith, scf
from xdsl.ir import Block, Operation, SSAValue

from ...core import dtypes
from ...core.diagnostics import op_error
from ...dialects import npu
from ..hardware import PATHS, SPACES, HardwarePreset
from .core import Core
from .hazards import Hazards
from .segments import LaunchChecks, VerifiedSegments
from .l2 import GlobalMemory
from .instructions import InstructionDecoder
from .scalar import ScalarDecoder, constant_value, unsupported

STATS = (*PATHS, "gm_read", "gm_written", "hbm_bytes", "l2_hit_bytes", "hbm_compulsory", "cube_min", "vector_min", "flag_waits", "transfers")
"""What each core counts while it runs: bytes per path, GM bytes (logical; crossing
the HBM; served by the L2; compulsory HBM reads), the roofline terms, the number
of wait_flags it executed (each costs the flag latency) and of its transfers
(each lands its path's latency after its data cycles)."""

STAT_INDEX = {name: i for i, name in enumerate(STATS)}
SPACE_INDEX = {name: i for i, name in enumerate(SPACES)}
GM = SPACE_INDEX["gm"]


@dataclass
class BufferSlot:
    """A buffer an instruction can name: a GM argument of the kernel or a local allocation."""

    slot: int
    space: int
    space_name: str
    dtype: np.dtype
    numel: int
    alignment: int = 0  # bytes; accesses in local spaces must start aligned
    local_offset: int = 0  # byte offset of a local allocation in its space
    argument: int | None = None  # kernel argument index of a GM buffer
    reads: bool = False  # (GM arguments) whether the kernel reads / writes it
    writes: bool = False
    first_phase: int | None = None  # (GM arguments) the first and last phase touching it
    last_phase: int = 0

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def align_elements(self) -> int:
        return self.alignment // self.itemsize if self.alignment else 0

    @property
    def nbytes(self) -> int:
        return self.numel * self.itemsize


class LocalMemory:
    """The local buffers of a core (one set, reused by every block in turn)."""

    def __init__(self, hw: HardwarePreset, slack_bytes: int):
        # Rounded to 64 bytes so that a view of any element type fits whole elements.
        self.spaces = {
            space: np.zeros(-(-(hw.capacity(space) + slack_bytes) // 64) * 64, dtype=np.uint8)
            for space in SPACES
            if space != "gm"
        }

    def poison(self, extents: dict[str, int]) -> None:
        """Fill the allocated part of each space with 0xFF (NaN for floats), so that
        reading what no instruction wrote shows up in the results."""
        for space, extent in extents.items():
            self.spaces[space][:extent] = 0xFF


@dataclass
class KernelProgram:
    op: npu.KernelOp
    name: str
    block_dim: int
    body: object  # callable(core): the decoded kernel, reading core.regs and core.bufs
    regs: list  # the register file as decoded (constants filled in); each block runs on a copy
    block_idx_regs: list[int]
    block_dim_regs: list[int]
    buffers: list[BufferSlot]
    bufs: list
    bases: list[int]
    space_pipes: list[tuple[int, ...]]
    extents: dict[str, int]
    slack_bytes: int
    flag_latency: int
    phases: int  # npu.sync_all splits the kernel into phases
    shortcuts: bool = True  # fast paths on (see KernelDecoder); off: the full simulation
    # the kernel has npu.cross_wait_flag ops: its GM accesses are checked between
    # blocks as they are made, so its race checks are not put off (`segments.py`)
    cross_flags: bool = False
    # whether some npu.cross_wait_flag makes a block wait for others (all may wait for
    # nobody: the barriers npu-narrow-sync found no block needs)
    cross_waits: bool = False
    # what the closures do (`KernelDecoder.mode`): "full" or "approx"
    mode: str = "full"
    scalar_reads: int = 0  # npu.read_scalar ops: control flow that depends on data
    # per core's LocalMemory, the buffer table of a block running there (the GM
    # arguments of the launch, the local buffers viewed in that memory): made once
    # per core, so a block's turn in the lockstep (`lockstep.py`) swaps nothing
    core_bufs: dict = field(default_factory=dict)
    # the race checker's segments checked so far, for the blocks to come (`segments.py`)
    verified: VerifiedSegments = field(default_factory=VerifiedSegments)
    # per GM argument slot sharing bytes with others in the launch being run, its
    # group (set by `bind_arguments`, `_shared_bytes`)
    gm_groups: dict = field(default_factory=dict)
    # the closures of the kernel's top-level ops, `body` in order, their ops and the
    # register of each SSA value not a constant (`batched.py` runs them one by one, to
    # meet between phases, and asks where each register lives: `batched.lifetimes`)
    steps: tuple = ()
    step_ops: tuple = ()
    registers: dict = field(default_factory=dict)
    live: tuple | None = None

    @cached_property
    def arguments(self) -> list[BufferSlot]:
        """The GM argument slots (the buffer list is fixed once decoded; a merged
        kernel has thousands of buffers and the plan asks this per launch)."""
        return [b for b in self.buffers if b.argument is not None]

    def bind_arguments(self, arrays: list[np.ndarray], bases: list[int]) -> None:
        """GM arrays (flat, typed, with slack) and their byte addresses, per argument."""
        for buffer in self.arguments:
            self.bufs[buffer.slot] = arrays[buffer.argument]
            self.bases[buffer.slot] = bases[buffer.argument]
            for bufs in self.core_bufs.values():
                bufs[buffer.slot] = arrays[buffer.argument]
        self.gm_groups = self._shared_bytes()

    def _shared_bytes(self) -> dict[int, int]:
        """The GM argument slots that share bytes with others in this launch (the same
        buffer passed twice, views, arena buffers placed on the same bytes), grouped:
        slot -> its group (the first slot of a run of overlapping extents)."""
        extents = sorted(
            (self.bases[b.slot], self.bases[b.slot] + b.nbytes, b.slot) for b in self.arguments if b.nbytes
        )
        groups: dict[int, int] = {}
        group, end = None, None
        for lo, hi, slot in extents:
            if end is not None and lo < end:
                groups[group] = group
                groups[slot] = group
                end = max(end, hi)
            else:
                group, end = slot, hi
        return groups

    def bufs_for(self, memory: LocalMemory) -> list:
        """The buffer table of a block running on the core whose memory is `memory`."""
        bufs = self.core_bufs.get(memory)
        if bufs is None:
            bufs = self.core_bufs[memory] = list(self.bufs)
            for buffer in self.buffers:
                if buffer.argument is None:
                    bufs[buffer.slot] = memory.spaces[buffer.space_name][buffer.local_offset :].view(buffer.dtype)
        return bufs

    def run(self, core) -> None:
        """Run the kernel on `core`. A stand-in core (any object with `s_time` and
        `busy`, as the lowering's footprint tracers pass) runs on the program's own
        registers and buffers."""
        if not isinstance(core, Core):
            core.regs, core.bufs = self.regs, self.bufs
        self.body(core)

    def run_block(
        self, block_idx: int, block_dim: int, start: int, memory: LocalMemory, check_races: bool, trace: bool,
        meet=None, checks: LaunchChecks | None = None, weights: list[float] | None = None,
        skips: tuple[bool, ...] = (),
    ) -> Core:
        """Run one block from cycle `start` on the core whose local memory is `memory`;
        `meet` is how its npu.sync_all waits for the launch's other blocks (see Core.meet);
        `checks` gathers the race checkers of the launch's blocks (`segments.py`);
        `weights` the HBM weight of each GM transfer in a timing pass (`approx.py`), `skips`
        per phase whether it times none of the phase's instructions there (`approx.skips`)."""
        memory.poison(self.extents)
        hazards = (
            Hazards(
                len(SPACES), self.space_pipes, list(SPACES), scan_all=not self.shortcuts,
                verified=None if self.cross_flags else self.verified, gm_groups=self.gm_groups,
                order=checks.order if checks is not None else None, bases=self.bases,
            )
            if check_races
            else None
        )
        if hazards is not None and checks is not None:
            checks.checkers.append(hazards)
        core = Core(start, hazards, trace, self.flag_latency, len(STATS))
        core.regs = regs = list(self.regs)
        for r in self.block_idx_regs:
            regs[r] = block_idx
        for r in self.block_dim_regs:
            regs[r] = block_dim
        core.bufs = self.bufs_for(memory)
        core.weights = weights
        core.skips = skips
        core.skip = bool(skips) and skips[0]
        if meet is not None:
            core.meet = meet
        self.body(core)
        core.finish(self.op)
        if hazards is not None:
            hazards.end_segment()
        return core


class KernelDecoder(ScalarDecoder, InstructionDecoder):
    """Decodes one `npu.kernel` for one preset (see the module docstring)."""

    def __init__(self, hw: HardwarePreset, memory: GlobalMemory, shortcuts: bool = True, mode: str = "full"):
        self.hw = hw
        # "full": timing, race checks and numerics (the simulation). "approx": the
        # approximate one's (`approx.py`): a block without weights (its numerics pass)
        # computes the results and counts the instructions without timing, hashing
        # each phase's instructions; one with weights (its timing pass) times without
        # computing, its GM transfers weighted (`WeightedMemory`)
        self.mode = mode
        self.idents = 0  # instructions decoded: each one's identity in a phase's hash
        self.memory = memory
        # The exact fast paths (same cycles, outputs and errors as without them):
        # L2 sectors of a GM transfer from slices or a cached shape, races checked
        # against the unordered accesses only. Off, every transfer builds its run
        # starts and sectors and every access is checked against every live one.
        self.shortcuts = shortcuts
        self.regs: list = []
        self._regs: dict[SSAValue, int] = {}
        self._constants: dict[SSAValue, object] = {}
        self._buffers: dict[SSAValue, BufferSlot] = {}
        self.buffer_list: list[BufferSlot] = []
        self.bufs: list = []
        self.bases: list[int] = []
        self.block_idx_regs: list[int] = []
        self.block_dim_regs: list[int] = []
        self.space_pipes: list[set[int]] = [set() for _ in SPACES]
        self.extents: dict[str, int] = {}
        self.slack_bytes = 0
        self.phase = 0  # the npu.sync_all (or npu.sync_all_arrive) ops decoded so far
        self.open_arrive: npu.SyncAllArriveOp | None = None  # decoding between it and its wait
        self.read_between: list[tuple[BufferSlot, Operation]] = []  # GM reads there, checked at the end
        self.cross_waits = 0  # npu.cross_wait_flag ops decoded
        self.cross_needs = 0  # of the blocks, those an npu.cross_wait_flag makes wait for others (summed)
        self.scalar_reads = 0  # npu.read_scalar ops decoded

    # ---- registers and buffers --------------------------------------------------------

    def define(self, value: SSAValue) -> int:
        index = len(self.regs)
        self.regs.append(0)
        self._regs[value] = index
        return index

    def constant(self, value: SSAValue, constant) -> None:
        self.regs[self.define(value)] = constant
        self._constants[value] = constant

    def reg(self, value: SSAValue) -> int:
        try:
            return self._regs[value]
        except KeyError:
            owner = value.owner
            raise op_error(owner, "defines a value the NPU simulator cannot use as a scalar") from None

    def const(self, value: SSAValue):
        return self._constants.get(value)

    def buffer(self, value: SSAValue) -> BufferSlot:
        try:
            return self._buffers[value]
        except KeyError:
            raise op_error(value.owner, "is not a buffer: instructions name kernel arguments or npu.alloc results") from None

    def _add_buffer(self, value: SSAValue, **kwargs) -> BufferSlot:
        t = value.type
        numel = npu.base.element_count(t)
        buffer = BufferSlot(len(self.buffer_list), numel=numel, dtype=dtypes.to_numpy_dtype(t.element_type), **kwargs)
        self.buffer_list.append(buffer)
        self.bufs.append(None)
        self.bases.append(buffer.local_offset)
        self._buffers[value] = buffer
        return buffer

    def note_access(self, buffer: BufferSlot, pipe: int, access: npu.Access, op: Operation) -> None:
        self.space_pipes[buffer.space].add(pipe)
        self.slack_bytes = max(self.slack_bytes, access.pattern.slack * buffer.itemsize)
        if buffer.argument is None:
            return
        buffer.reads |= access.reads
        buffer.writes |= access.writes
        first = self.phase
        if self.open_arrive is not None:
            # Other blocks may still be in the previous phase, or already in the next.
            if access.writes:
                raise op_error(op, f"writes GM between '{self.open_arrive.name}' and its wait, where other blocks "
                               "may still be in the previous phase or already in the next; only local buffers "
                               "may be written there")
            self.read_between.append((buffer, op))
            first -= 1
        if buffer.first_phase is None or first < buffer.first_phase:
            buffer.first_phase = first
        buffer.last_phase = self.phase

    def check_reads_between_barriers(self) -> None:
        """What a block reads between an arrive and its wait must be GM that no phase
        writes: whatever it reads then is the same bytes, whichever phase the other
        blocks are in."""
        for buffer, op in self.read_between:
            if buffer.writes:
                raise op_error(
                    op,
                    f"reads kernel argument #{buffer.argument} between 'npu.sync_all_arrive' and its wait, "
                    "but the kernel writes that argument: only GM no phase writes (constants) may be read there",
                )

    def stat(self, name: str) -> int:
        return STAT_INDEX[name]

    # ---- ops --------------------------------------------------------------------------

    def _alloc(self, op: npu.AllocOp) -> None:
        a = op.attr_values()
        space = str(npu.space_of(op.result.type))
        if a.offset is None:
            raise op_error(op, "has no offset: local buffers must be placed (offset = ...) before simulation")
        alignment = self.hw.alignment[space]
        size = npu.buffer_bytes(op.result.type)
        capacity = self.hw.capacity(space)
        if a.offset % alignment:
            raise op_error(op, f"misaligned: offset {a.offset} in {space} is not a multiple of its {alignment}-byte alignment")
        if a.offset + size > capacity:
            raise op_error(
                op,
                f"over capacity: a {size}-byte {space} buffer at offset {a.offset} ends at byte {a.offset + size}, "
                f"beyond the {capacity}-byte {space} of preset '{self.hw.name}'",
            )
        self.extents[space] = max(self.extents.get(space, 0), a.offset + size)
        self._add_buffer(op.result, space=SPACE_INDEX[space], space_name=space, alignment=alignment, local_offset=a.offset)

    def block_steps(self, block: Block) -> tuple[list, list[int]]:
        """Closures for the ops of `block`, and the registers its scf.yield passes on."""
        steps, yields = [], []
        for op in block.ops:
            kind = _kind(op)
            if kind == "yield":
                yields = [self.reg(v) for v in op.operands]
            elif kind == "instruction":
                steps.append(self.instruction_step(op))
            elif kind == "alloc":
                self._alloc(op)
            elif kind == "block_idx":
                self.block_idx_regs.append(self.define(op.result))
            elif kind == "block_dim":
                self.block_dim_regs.append(self.define(op.result))
            elif kind == "constant":
                self.constant(op.result, constant_value(op))
            elif kind != "return":
                step = self.scalar_step(op)
                if step is None:
                    raise unsupported(op)
                steps.append(step)
        return steps, yields

    def decode(self, kernel: npu.KernelOp) -> KernelProgram:
        for i, arg in enumerate(kernel.entry.args):
            self._add_buffer(arg, space=GM, space_name="gm", argument=i)
        steps, _ = self.block_steps(kernel.entry)
        self.check_reads_between_barriers()
        return KernelProgram(
            op=kernel,
            name=kernel.sym_name.data,
            block_dim=kernel.attr_values().block_dim,
            body=self.run_steps(steps),
            regs=self.regs,
            block_idx_regs=self.block_idx_regs,
            block_dim_regs=self.block_dim_regs,
            buffers=self.buffer_list,
            bufs=self.bufs,
            bases=self.bases,
            space_pipes=[tuple(sorted(p)) for p in self.space_pipes],
            extents=self.extents,
            slack_bytes=self.slack_bytes,
            flag_latency=self.hw.flag_latency,
            phases=self.phase + 1,
            shortcuts=self.shortcuts,
            cross_flags=self.cross_waits > 0,
            cross_waits=self.cross_needs > 0,
            mode=self.mode,
            scalar_reads=self.scalar_reads,
            steps=tuple(steps),
            step_ops=tuple(op for op in kernel.entry.ops if _kind(op) in ("instruction", "scalar")),
            registers={v: r for v, r in self._regs.items() if v not in self._constants},
        )


_KINDS = (
    (scf.YieldOp, "yield"), (npu.ReturnOp, "return"), (npu.InstructionOp, "instruction"), (npu.AllocOp, "alloc"),
    (npu.BlockIdxOp, "block_idx"), (npu.BlockDimOp, "block_dim"), (arith.ConstantOp, "constant"),
)
_KIND_OF: dict[type, str] = {}


def _kind(op: Operation) -> str:
    """What `block_steps` does with `op`, by its class (an isinstance chain per op
    over xDSL's abstract classes was a tenth of a large kernel's decode)."""
    cls = type(op)
    kind = _KIND_OF.get(cls)
    if kind is None:
        kind = _KIND_OF[cls] = next((k for base, k in _KINDS if issubclass(cls, base)), "scalar")
    return kind


def decode_kernel(
    kernel: npu.KernelOp, hw: HardwarePreset, memory: GlobalMemory, shortcuts: bool = True, mode: str = "full"
) -> KernelProgram:
    return KernelDecoder(hw, memory, shortcuts, mode).decode(kernel)

