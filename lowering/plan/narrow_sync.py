"""`npu-narrow-sync`: a merged kernel's phase waits for the blocks whose GM it
depends on, not for every block (GE SuperKernel's early start and narrowed sync
range).

`npu-merge-launches` joins launches into the phases of one kernel, meeting at
`npu.sync_all` (split by `npu-prefetch-constants` into `sync_all_arrive` ...
`sync_all_wait`): every block waits there for the slowest block of the launch,
although a block of the next phase usually reads only what a few blocks of the
previous one wrote (a row band of a LayerNorm reads the row band the blocks of
the projection before it wrote). This pass replaces each barrier by its
cross-core form: `npu.cross_set_flag` where the block's phase ends (its flag,
stored once its writes have landed) and `npu.cross_wait_flag` where the next
phase starts, listing per consumer block exactly the producer blocks it must
wait for and the flag count it must see. A block depending on nobody starts
its next phase as soon as its own pipes have drained.

Who depends on whom is found on the kernel itself, not assumed from the ops: its
control flow and index math are run for every block (the simulator's decoder
with the instructions replaced by recorders, as `in_place.py` proves in-place
reuse), giving per phase and block the GM bytes read and written, on the
launch's own GM (arena offsets and views resolved, so that buffers sharing bytes
are seen to). Block c's phase k depends on block b's phase j < k when c reads
bytes b wrote, or writes bytes b read or wrote (the GM plan reuses bytes from
phase to phase); c then waits until b has set its flag j + 1 times. Bytes are
compared in 32-byte granules, the DMA's unit of a GM write (two cores writing
one granule would clash anyway): a granule two blocks share costs a wait that
exact bytes might not need, never a missing one. Every dependency is a direct
one, so no chain of other blocks is relied on.

An access at an address computed from GM data (`npu.read_scalar`: a gather's
rows, the embedding lookup that starts every exported transformer) counts as
an access to every byte of its argument, so one such phase does not keep the
whole kernel at its barriers. A kernel keeps its barriers when the rest cannot
be computed exactly: control flow depending on GM data, more blocks than a
flag word holds (64), or a kernel launched more than once (its arguments'
bytes differ per launch). With
`widest=P` a barrier where some block would wait for more than P% of the blocks
stays an `npu.sync_all` (the default 100 narrows every barrier: a wait for every
block costs what the barrier does, minus the flags it need not read); the waits
after a kept barrier drop what it already orders. The
simulator checks the result: a GM access of one block that no flag orders
against a conflicting access of another is reported as a race.

Run it after `npu-prefetch-constants` (the constants' loads then stand between a
block's flag set and its wait, as they stood between the barrier's halves).
`ge-compile` runs it with `widest=0` (`lowering/stages.py`): the barriers no
block needs become waits for nobody. Run again, it judges those anew (their
flag sets stay: the waits after them count them).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from ...core.passes import record_statistic
from ...core.signature import is_npu_host, main_function
from ...dialects import npu
from ...dialects.npu.base import element_bytes
from ...simulator.hardware import HardwarePreset, load_preset
from ...simulator.npu.hazards import NP
from .in_place import _DataDependentAddresses, _FootprintDecoder

GRANULE = 32
"""Bytes compared as one: the DMA's unit of a GM write."""

MAX_BLOCKS = 64
"""Blocks a dependency mask holds (one bit each)."""

_PHASE_ENDS = (npu.SyncAllOp, npu.SyncAllArriveOp, npu.CrossSetFlagOp)
"""Where a phase ends: a barrier, or one narrowed already (ge-compile narrows the
barriers no block needs; a second run judges every barrier again, its flags
staying flags: they are counted by the waits after them)."""


class _PhaseFootprints(_FootprintDecoder):
    """The footprint recorder, also marking where each phase ends."""

    def instruction_step(self, op: npu.InstructionOp):
        if isinstance(op, _PHASE_ENDS):
            trace = self.trace
            return lambda core: trace.append(None)
        return super().instruction_step(op)


@dataclass(frozen=True)
class _Root:
    """The GM bytes a kernel argument occupies: `key` names the allocation (the
    arena, or the value itself), `base` its first byte there."""

    key: object
    base: int
    itemsize: int


def _root(value: SSAValue) -> _Root:
    itemsize = element_bytes(value.type)
    while isinstance(value.owner, npu.GmViewOp):
        value = value.owner.source
    owner = value.owner
    if isinstance(owner, npu.GmBufferOp) and owner.attr_values().offset is not None:
        return _Root("arena", owner.attr_values().offset, itemsize)
    return _Root(value, 0, itemsize)


def block_dependencies(
    kernel: npu.KernelOp, args: list[SSAValue], hw: HardwarePreset, widest: int = 100
) -> list[dict[int, dict[int, int]] | None] | None:
    """Per barrier k of `kernel` (launched on `args`): consumer block -> producer
    block -> the flag count it must wait for (see the module docstring), or None
    where the barrier is kept (some block would wait for more than `widest`% of
    the blocks); None for the whole kernel when that cannot be computed exactly.

    The barriers are judged in order: a kept barrier orders every phase it
    closes, so a barrier is judged by the dependencies on the phases after the
    last kept one only, the waits `narrow` gives it (a phase reading only what
    its own block wrote since then waits for nobody, whatever other blocks
    wrote before); and only those phases are compared, which also keeps the
    work linear in the phases where most barriers are kept."""
    block_dim = kernel.attr_values().block_dim
    if block_dim > MAX_BLOCKS:
        return None
    flags = [isinstance(op, npu.CrossSetFlagOp) for op in kernel.entry.ops if isinstance(op, _PHASE_ENDS)]
    roots = [_root(value) for value in args]
    decoder = _PhaseFootprints(hw, {i: i for i in range(len(args)) if str(npu.space_of(args[i].type)) == "gm"}, True)
    try:
        program = decoder.decode(kernel)
    except _DataDependentAddresses:
        return None
    spans = [_block_spans(program, decoder.trace, block, block_dim, roots) for block in range(block_dim)]
    phases = max(len(s) for s in spans)
    # the GM allocations some phase writes: only they can order two blocks
    keys = list(dict.fromkeys(key for s in spans for phase in s for key, writes in phase if writes))
    cells = [[{(key, w): _cells(phase.get((key, w))) for key in keys for w in (False, True)} for phase in s] for s in spans]
    masks = [{key: _PhaseMasks.of(cells, j, key, block_dim) for key in keys} for j in range(phases)]
    barriers: list[dict[int, dict[int, int]] | None] = []
    kept = -1  # the last barrier kept: barrier k - 1 stands before phase k
    for k in range(1, phases):
        needs: dict[int, dict[int, int]] = {}
        for c in range(block_dim):
            mine = cells[c][k] if k < len(cells[c]) else {}
            for key in keys:
                reads, writes = mine.get((key, False), _EMPTY), mine.get((key, True), _EMPTY)
                for j in range(kept + 1, k):
                    bits = masks[j][key].written_bits(reads) | masks[j][key].touched_bits(writes)
                    for b in range(block_dim):
                        if b != c and bits >> b & 1:
                            needs.setdefault(c, {})[b] = max(needs.get(c, {}).get(b, 0), j + 1)
        if flags[k - 1] or _widest(needs) * 100 <= widest * block_dim:
            barriers.append(needs)
        else:
            barriers.append(None)
            kept = k - 1
    return barriers


_EMPTY = np.zeros(0, dtype=np.int64)


def _block_spans(program, trace: list, block: int, block_dim: int, roots: list[_Root]) -> list[dict]:
    """Run `block`: per phase, (root key, writes) -> (granule starts, granule ends) touched."""
    trace.clear()
    for r in program.block_idx_regs:
        program.regs[r] = block
    for r in program.block_dim_regs:
        program.regs[r] = block_dim
    program.run(SimpleNamespace(s_time=0, busy=[0] * NP))
    # per phase, the offsets each (argument, reads, writes, pattern) was run at: the
    # spans of one pattern at many offsets are computed at once (a pattern's runs
    # start at the offset plus the same steps, whatever the offset)
    phases: list[dict[tuple, list[int]]] = [{}]
    for entry in trace:
        if entry is None:
            phases.append({})
            continue
        phases[-1].setdefault((entry[0], entry[1], entry[2], entry[4]), []).append(entry[3])
    return [_phase_spans(phase, roots) for phase in phases]


def _phase_spans(offsets: dict[tuple, list[int]], roots: list[_Root]) -> dict:
    """(root key, writes) -> (granule starts, granule ends) of the accesses of one phase
    (in no particular order: only their union and their last granule count)."""
    spans: dict[tuple, list] = {}
    for (argument, reads, writes, pattern), at in offsets.items():
        root = roots[argument]
        _, run = pattern.runs()
        steps = pattern.run_starts(0).astype(np.int64)
        lo = root.base + (np.array(at, dtype=np.int64)[:, None] + steps[None, :]).reshape(-1) * root.itemsize
        hi = lo + run * root.itemsize - 1
        for flag in (False, True):
            if (writes if flag else reads):
                spans.setdefault((root.key, flag), []).append((lo // GRANULE, hi // GRANULE))
    return {key: (np.concatenate([a for a, _ in v]), np.concatenate([b for _, b in v])) for key, v in spans.items()}


def _cells(spans) -> np.ndarray:
    """The granules covered by (starts, ends) spans (inclusive), as sorted indices:
    the union of the spans, each merged run of them expanded, in time proportional to the spans and the granules they cover rather than to the
    allocation's whole size (a phase touches a few tensors of a model's arena)."""
    if spans is None:
        return _EMPTY
    order = np.argsort(spans[0], kind="stable")
    starts, ends = spans[0][order], np.maximum.accumulate(spans[1][order])
    # a merged run starts where a span begins after every earlier one has ended
    fresh = np.ones(len(starts), dtype=bool)
    fresh[1:] = starts[1:] > ends[:-1]
    first = starts[fresh]
    last = np.append(ends[np.flatnonzero(fresh)[1:] - 1], ends[-1])
    lengths = last - first + 1
    # each run's granules: a running count, shifted to its first granule
    shift = np.repeat(first - (np.cumsum(lengths) - lengths), lengths)
    return np.arange(int(lengths.sum()), dtype=np.int64) + shift


@dataclass(frozen=True)
class _PhaseMasks:
    """Who wrote and who touched (read or wrote) each granule of one allocation in
    one phase, over the granules some block touched only (sorted): a phase touches
    a few tensors of a model's arena, so masks over the whole allocation would make
    the work proportional to phases x arena size."""

    granules: np.ndarray  # sorted, unique
    written: np.ndarray  # per granule, the bit mask of the blocks writing it
    touched: np.ndarray  # per granule, the bit mask of the blocks reading or writing it

    @staticmethod
    def of(cells, phase: int, key, block_dim: int) -> _PhaseMasks:
        parts, write_bits, touch_bits = [], [], []
        for b in range(block_dim):
            if phase >= len(cells[b]):
                continue
            bit = np.uint64(1 << b)
            for writes in (False, True):
                granules = cells[b][phase][(key, writes)]
                if len(granules):
                    parts.append(granules)
                    write_bits.append(np.full(len(granules), bit if writes else 0, dtype=np.uint64))
                    touch_bits.append(np.full(len(granules), bit, dtype=np.uint64))
        if not parts:
            return _PhaseMasks(_EMPTY, _NO_BITS, _NO_BITS)
        everything = np.concatenate(parts)
        order = np.argsort(everything, kind="stable")
        ordered = everything[order]
        starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
        written = np.bitwise_or.reduceat(np.concatenate(write_bits)[order], starts)
        touched = np.bitwise_or.reduceat(np.concatenate(touch_bits)[order], starts)
        return _PhaseMasks(ordered[starts], written, touched)

    def written_bits(self, cells: np.ndarray) -> int:
        """The blocks that wrote some granule of `cells` (sorted indices)."""
        return self._bits(self.written, cells)

    def touched_bits(self, cells: np.ndarray) -> int:
        """The blocks that read or wrote some granule of `cells`."""
        return self._bits(self.touched, cells)

    def _bits(self, mask: np.ndarray, cells: np.ndarray) -> int:
        if not len(cells) or not len(self.granules):
            return 0
        at = np.searchsorted(self.granules, cells)
        at[at == len(self.granules)] = 0
        return int(np.bitwise_or.reduce(mask[at[self.granules[at] == cells]], initial=0))


_NO_BITS = np.zeros(0, dtype=np.uint64)


def narrow(kernel: npu.KernelOp, barriers: list[dict[int, dict[int, int]] | None]) -> None:
    """Replace the i-th barrier of `kernel` by a flag set and a wait for
    `barriers[i]` (phase j's producers named by j + 1), or keep it where that is
    None. A kept barrier orders everything before it: the dependencies on the
    phases it closes are dropped from the waits after it, and the others count
    the sets placed up to their phase."""
    ends = [op for op in kernel.entry.ops if isinstance(op, _PHASE_ENDS)]
    placed: list[int] = []  # per barrier, the flag sets placed up to it
    kept = -1  # the last barrier kept
    for i, (end, needs) in enumerate(zip(ends, barriers)):
        if needs is None:
            kept = i
            placed.append(placed[-1] if placed else 0)
            continue
        placed.append((placed[-1] if placed else 0) + 1)
        waits = [
            v
            for c in sorted(needs)
            for b in sorted(needs[c])
            if needs[c][b] - 1 > kept
            for v in (c, b, placed[needs[c][b] - 1])
        ]
        wait = npu.CrossWaitFlagOp.new(waits=waits)
        if isinstance(end, npu.CrossSetFlagOp):  # narrowed before: its wait judged again
            second = end.next_op
            while not isinstance(second, npu.CrossWaitFlagOp):
                second = second.next_op
            Rewriter.replace_op(second, wait)
            continue
        if isinstance(end, npu.SyncAllOp):
            Rewriter.replace_op(end, [npu.CrossSetFlagOp.new(), wait])
            continue
        second = end.next_op
        while not isinstance(second, npu.SyncAllWaitOp):
            second = second.next_op
        Rewriter.replace_op(end, npu.CrossSetFlagOp.new())
        Rewriter.replace_op(second, wait)


def _widest(needs: dict[int, dict[int, int]]) -> int:
    """The most producer blocks one consumer block waits for at a barrier."""
    return max((len(producers) for producers in needs.values()), default=0)


@dataclass(frozen=True)
class NarrowSyncPass(ModulePass):
    """Replace the barriers of merged kernels by cross-core flags: each block of a phase waits only for the blocks whose GM it depends on."""

    name = "npu-narrow-sync"

    hw: str = "ascend910"
    widest: int = 100

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        main = main_function(op)
        if not is_npu_host(main):
            return
        hw = load_preset(self.hw)
        launches: dict[str, list[npu.LaunchOp]] = {}
        for launch in main.body.block.ops:
            if isinstance(launch, npu.LaunchOp):
                launches.setdefault(launch.callee.string_value(), []).append(launch)
        for kernel in list(op.body.block.ops):
            if not isinstance(kernel, npu.KernelOp) or not any(isinstance(o, _PHASE_ENDS) for o in kernel.entry.ops):
                continue
            found = launches.get(kernel.sym_name.data, [])
            barriers = block_dependencies(kernel, list(found[0].args), hw, self.widest) if len(found) == 1 else None
            if barriers is None:
                record_statistic(self.name, "kernels kept at sync_all")
                continue
            record_statistic(self.name, "barriers kept (every block waits for most)", barriers.count(None))
            narrow(kernel, barriers)
            narrowed = [needs for needs in barriers if needs is not None]
            record_statistic(self.name, "barriers narrowed", len(narrowed))
            record_statistic(self.name, "block waits", sum(len(n) for needs in narrowed for n in needs.values()))
