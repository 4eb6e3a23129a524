"""The numerics pass of the approximate simulation, batched across blocks.

`approx.py` needs every block's results exactly (and its instruction count, its
instructions' hash per phase, its GM addresses); it times only a few blocks.
Running each block's closures one by one cost about 4.5 us per instruction per
block, most of an approximate simulation. Most blocks of a launch run the same
instructions on other data, so this pass runs them as one:

1. *Record.* The blocks run as one `Core` whose registers hold a value per block
   where the values differ (`batch_scalar.py`: `npu.block_idx` is the array of
   the batch's block indices). Its instructions are not computed: each records
   (instruction, offsets) when its pipe executes it, behind its waits as in the
   simulation, so the record is each block's execution order. Where the blocks
   take different paths (a loop bound or an `scf.if` condition differs), the
   batch is split by the values and each part recorded again from the start
   (recording has no effect outside the batch's `Core`). A batch's blocks have
   the same record of instructions; their offsets differ.
2. *Replay.* Phase by phase (the kernel's `npu.sync_all`s order every block's
   phase before any block's next), each batch's recorded instructions of the
   phase are computed in order, each once for the whole batch with operands
   viewed across its blocks (`batch_kernels.py`), or block by block where an
   operand cannot be viewed so or the kernel is not known to batch. Each batch's
   blocks have local memories of their own (a row each, filled with 0xFF as
   `LocalMemory.poison` does), so no block sees another's.

The results are bitwise the simulation's: each block computes what it computes
alone, in its own order; blocks of a phase only touch GM that no other block of
the phase writes (the race checker's guarantee for the simulation), so the
order between blocks within a phase changes nothing.
"""

from __future__ import annotations

import operator
from collections import deque
from dataclasses import dataclass

import numpy as np

from .batch_kernels import Operand
from .batch_scalar import Diverged
from .core import Core

MAX_LOCAL_BYTES = 1 << 30
"""Local memory of all blocks of a launch at once, at most (beyond it the caller
runs the launch with the full simulation)."""


@dataclass(eq=False)
class Part:
    """What a batch recorded over one segment of the kernel: its blocks (ascending),
    the (instruction, offsets) it executed, where each phase ended in that list,
    the hashes of the phases it ended (and of the last phase, at the kernel's end)
    and the instructions it counted."""

    members: np.ndarray
    recorded: list
    cuts: list
    sigs: list
    count: int
    _rows: object = None

    @property
    def size(self) -> int:
        return len(self.members)

    window: tuple | None = None  # (a, b): a piece of a part, its blocks at positions a..b-1 of the part's

    def rows(self):
        """(first, step) if the blocks are first + step * position, else None."""
        if self._rows is None:
            m = self.members
            step = int(m[1] - m[0]) if len(m) > 1 else 0
            self._rows = (int(m[0]), step) if (m == m[0] + step * np.arange(len(m))).all() else ()
        return self._rows or None

    def pieces(self) -> list["Part"]:
        """The part as runs of blocks whose indices step evenly (each one's local
        buffers are then strided views: `Replay.view`), or itself if it is one."""
        if self.rows() is not None:
            return [self]
        m, runs, a = self.members.tolist(), [], 0
        while a < len(m):
            b = a + 1
            if b < len(m):
                step = m[b] - m[a]
                while b + 1 < len(m) and m[b + 1] - m[b] == step:
                    b += 1
                b += 1
            runs.append((a, b))
            a = b
        return [Part(self.members[a:b], self.recorded, self.cuts, self.sigs, self.count, window=(a, b)) for a, b in runs]


@dataclass
class Numerics:
    """What `approx.run_launch` needs of the pass, per block (block order)."""

    signatures: list[list[int]]
    addresses: list[list[np.ndarray]]
    counts: list[int]
    batches: int  # the most batches a segment of the kernel had
    by_block: int  # blocks' instructions computed block by block
    batched: int  # blocks' instructions computed for a whole batch at once


@dataclass(eq=False)
class _Batch:
    """Blocks recorded as one, and their state at the start of the segment."""

    members: np.ndarray
    core: Core
    saved: tuple = ()  # (registers, flags, sets, consumed) at the segment's start

    def save(self) -> None:
        core = self.core
        self.saved = (list(core.regs), {k: deque(v) for k, v in core.flags.items()},
                      {k: list(v) for k, v in core.sets.items()}, dict(core.consumed))
        core.recorded, core.cuts, core.sigs, core.count, core.sig = [], [], [], 0, 0

    def clean(self) -> bool:
        """Whether no pipe waits: the batch may split or merge here."""
        return not self.core.waiting and all(q is None for q in self.core.pending)

    def part(self) -> Part:
        core = self.core
        return Part(self.members, core.recorded, core.cuts, core.sigs, core.count)


def lifetimes(program) -> dict[int, tuple[int, int]]:
    """Register (not a constant) -> (the top-level step defining it, the last one
    reading it): a value defined or used inside step k counts as step k's. At a
    segment's end k, only the registers live there (defined before k, read from k
    on) are split and merged: the others are dead (constants are the same in every
    batch). The `npu.block_idx` registers are set once for the whole kernel,
    wherever their ops stand: live from the start to the end."""
    if program.live is None:
        first, last, registers = {}, {}, program.registers
        for k, op in enumerate(program.step_ops):
            for o in op.walk():
                for v in o.operands:
                    r = registers.get(v)
                    if r is not None:
                        last[r] = k
                for v in o.results:
                    r = registers.get(v)
                    if r is not None:
                        first.setdefault(r, k)
                for region in o.regions:
                    for block in region.blocks:
                        for v in block.args:
                            r = registers.get(v)
                            if r is not None:
                                first.setdefault(r, k)
        for r in program.block_idx_regs:
            first[r], last[r] = -1, len(program.step_ops)
        program.live = {r: (first.get(r, -1), k) for r, k in last.items()}
    return program.live


class LiveSweep:
    """The registers live at step boundaries asked in increasing order (`lifetimes`)."""

    def __init__(self, spans: dict[int, tuple[int, int]]):
        self.starts = sorted((d + 1, r) for r, (d, u) in spans.items() if d < u)
        self.ends = sorted((u + 1, r) for r, (d, u) in spans.items() if d < u)
        self.live: set[int] = set()
        self.at = self.i = self.j = 0

    def at_boundary(self, k: int) -> list[int]:
        """Live at the boundary before step `k` (never less than the last asked)."""
        while self.i < len(self.starts) and self.starts[self.i][0] <= k:
            self.live.add(self.starts[self.i][1])
            self.i += 1
        while self.j < len(self.ends) and self.ends[self.j][0] <= k:
            self.live.discard(self.ends[self.j][1])
            self.j += 1
        return sorted(self.live)


def _core(program, regs: list, flags: dict, sets: dict, consumed: dict, stats_size: int) -> Core:
    core = Core(0, None, False, program.flag_latency, stats_size)
    core.regs, core.bufs = regs, program.bufs
    core.flags, core.sets, core.consumed = flags, sets, consumed
    return core


def _split(program, batch: _Batch, values: np.ndarray, stats_size: int, live: list[int]) -> list[_Batch]:
    """`batch` as parts of equal `values` (one per block), each back at the segment's
    start; `live`: the registers read from there on (the others are dead)."""
    regs, flags, sets, consumed = batch.saved
    arrays = [r for r, v in zip(live, operator.itemgetter(*live, live[0])(regs)) if type(v) is np.ndarray] if live else []
    _, first = np.unique(values, return_index=True)
    parts = []
    for i in sorted(first.tolist()):
        mask = values == values[i]
        mine = list(regs)
        single = int(mask.sum()) == 1
        for r in arrays:
            mine[r] = regs[r][mask][0].item() if single else regs[r][mask]
        part = _Batch(batch.members[mask], _core(program, mine, {k: deque(v) for k, v in flags.items()},
                                                 {k: list(v) for k, v in sets.items()}, dict(consumed), stats_size))
        part.save()
        parts.append(part)
    return parts


def _merged(program, group: list[_Batch], stats_size: int, live: list[int]) -> _Batch:
    """Batches whose flags stand alike, as one: the registers read from here on
    (`live`) side by side, by block (the others are dead)."""
    if len(group) == 1:
        return group[0]
    members = np.concatenate([b.members for b in group])
    order = np.argsort(members, kind="stable")
    where = np.empty(len(members), dtype=np.int64)
    where[order] = np.arange(len(members))
    spans, at = [], 0
    for b in group:
        spans.append(where[at : at + b.members.size])
        at += b.members.size
    regs = list(group[0].core.regs)
    if not live:
        return _Batch(members[order], _core(program, regs, group[0].core.flags, group[0].core.sets,
                                            group[0].core.consumed, stats_size))
    get = operator.itemgetter(*live, live[0])  # a tuple even for one register
    columns = [get(b.core.regs) for b in group]
    lead = columns[0]
    differ = set()
    for other in columns[1:]:
        differ.update(n for n, (x, y) in enumerate(zip(lead, other)) if x is not y)
    differ.discard(len(live))  # the repeated first register
    for n in sorted(differ):
        r = live[n]
        value = regs[r]
        values = [column[n] for column in columns]
        if type(value) is not np.ndarray and all(type(v) is not np.ndarray and v == value for v in values):
            continue
        merged = np.empty(len(members), dtype=np.result_type(*values))
        for v, positions in zip(values, spans):
            merged[positions] = v
        regs[r] = merged
    lead = group[0].core
    return _Batch(members[order], _core(program, regs, lead.flags, lead.sets, lead.consumed, stats_size))


def _flag_state(batch: _Batch) -> tuple:
    return tuple(sorted((k, len(v)) for k, v in batch.core.flags.items() if v))


def record(program, block_dim: int, stats_size: int) -> list[list[Part]] | None:
    """Step 1 (module docstring), segment by segment: a segment runs the kernel's
    top-level ops up to one after which a phase has ended and no pipe waits;
    batches split where they diverge (from the segment's start) and merge after
    it where their flags stand alike. Per segment, the batches' parts; None if the
    batches end different numbers of phases in a segment or do not stop cleanly
    together (the caller runs the full simulation)."""
    steps = program.steps
    sweep = LiveSweep(lifetimes(program))
    regs = list(program.regs)
    index = np.arange(block_dim, dtype=np.int64)
    for r in program.block_idx_regs:
        regs[r] = index
    for r in program.block_dim_regs:
        regs[r] = block_dim
    batches = [_Batch(index, _core(program, regs, {}, {}, {}, stats_size))]
    segments = []
    i = 0
    while i < len(steps):
        for b in batches:
            b.save()
        live_at_start = sweep.at_boundary(i)
        end, done, todo = None, [], list(batches)
        while todo:
            batch = todo.pop(0)
            try:
                if end is None:  # the first batch finds where the segment ends
                    k = i
                    while k < len(steps):
                        steps[k](batch.core)
                        k += 1
                        if batch.core.cuts and batch.clean():
                            break
                    end = k
                else:
                    for k in range(i, end):
                        steps[k](batch.core)
            except Diverged as split:
                if end is not None and not done:
                    end = None
                todo[:0] = _split(program, batch, np.asarray(split.values), stats_size, live_at_start)
                continue
            done.append(batch)
        cuts = {len(b.core.cuts) for b in done}
        if len(cuts) != 1 or (end < len(steps) and not all(b.clean() for b in done)):
            return None
        if end == len(steps):
            for b in done:
                b.core.finish(program.op)
                b.core.sigs.append(b.core.sig)
        segments.append([b.part() for b in done])
        groups: dict[tuple, list[_Batch]] = {}
        for b in done:
            groups.setdefault(_flag_state(b), []).append(b)
        batches = [_merged(program, group, stats_size, sweep.at_boundary(end)) if len(group) > 1 else group[0] for group in groups.values()]
        i = end
    return segments


def run(program, block_dim: int, stats_size: int) -> Numerics | None:
    """Every block's results (into the launch's GM arrays), counts, hashes and GM
    addresses; None if the launch cannot be batched (`record`) or its blocks'
    local memories would be too large (the caller runs the full simulation)."""
    rows = {space: -(-(extent + program.slack_bytes) // 64) * 64 for space, extent in program.extents.items()}
    if sum(rows.values()) * block_dim > MAX_LOCAL_BYTES:
        return None
    segments = record(program, block_dim, stats_size)
    if segments is None:
        return None
    memory = {}
    for space, extent in program.extents.items():
        memory[space] = np.zeros((block_dim, rows[space]), dtype=np.uint8)
        memory[space][:, :extent] = 0xFF
    replay = Replay(program.bufs, memory)
    for parts in segments:
        for p in range(len(parts[0].cuts) + 1):
            for part in parts:
                lo = part.cuts[p - 1] if p else 0
                hi = part.cuts[p] if p < len(part.cuts) else len(part.recorded)
                for piece in part.pieces():
                    replay.run(piece, part.recorded[lo:hi])
    return _numerics(program, segments, block_dim, replay)


def _numerics(program, segments: list[list[Part]], block_dim: int, replay) -> Numerics:
    signatures = [[] for _ in range(block_dim)]
    addresses = [[] for _ in range(block_dim)]
    counts = [0] * block_dim
    bases = program.bases
    for parts in segments:
        for part in parts:
            per_phase = []
            bounds = [0, *part.cuts, len(part.recorded)]
            for lo, hi in list(zip(bounds, bounds[1:]))[: len(part.sigs)]:
                column = [
                    np.broadcast_to(bases[ins.operands[ins.gm].slot] + np.asarray(offsets[ins.gm], dtype=np.int64)
                                    * ins.operands[ins.gm].itemsize, (part.size,))
                    for ins, offsets in part.recorded[lo:hi]
                    if ins.gm is not None
                ]
                per_phase.append(np.array(column, dtype=np.int64).reshape(len(column), part.size))
            for j, b in enumerate(part.members.tolist()):
                signatures[b].extend(part.sigs)
                addresses[b].extend(table[:, j] for table in per_phase)
                counts[b] += part.count
    return Numerics(signatures, addresses, counts, max(len(parts) for parts in segments), replay.by_block,
                    replay.batched)


class Replay:
    """Step 2: a part's recorded instructions computed (module docstring). `memory`:
    per local space, a row of bytes per block of the launch."""

    def __init__(self, gm_bufs: list, memory: dict):
        self.gm_bufs = gm_bufs
        self.memory = memory
        self.by_block = 0
        self.batched = 0
        self._affine: dict = {}  # id(offset array) -> (the array, (first, step) or None)

    def run(self, part: Part, entries: list) -> None:
        size = part.size
        if part.window is not None:  # a piece: its blocks' offsets
            a, b = part.window
            entries = [(ins, [o[a:b] if type(o) is np.ndarray else o for o in offsets]) for ins, offsets in entries]
        for ins, offsets in entries:
            if ins.batched is not None:
                views, gathered = [], None
                for operand, o in zip(ins.operands, offsets):
                    v = self.view(part, operand, o, ins.copies)
                    if type(v) is tuple:  # a written copy: (copy, the blocks' views) to write back
                        gathered = [*(gathered or ()), v]
                        v = v[0]
                    elif v is None:
                        break
                    views.append(v)
                else:
                    ins.batched(*views)
                    for copy, targets in gathered or ():
                        for target, piece in zip(targets, copy):
                            target[...] = piece
                    self.batched += size
                    continue
            for j in range(size):
                ins.kernel(*[self.block_view(part, j, operand, o) for operand, o in zip(ins.operands, offsets)])
            self.by_block += size

    def _step(self, o: np.ndarray):
        """(first, step) if the offsets `o` are first + step * position, else None."""
        known = self._affine.get(id(o))
        if known is not None:
            return known[1]
        first, step = int(o[0]), int(o[1] - o[0]) if len(o) > 1 else 0
        affine = (first, step) if (o == first + step * np.arange(len(o))).all() else None
        self._affine[id(o)] = (o, affine)  # keeps `o` alive: its id stays its own
        return affine

    def view(self, part: Part, operand: Operand, o, copies: bool = False):
        """`operand` at offsets `o` (an int: the same in every block) across the
        part's blocks, a leading block axis: a strided view where the offsets (and,
        for a local buffer, the blocks' rows) are affine in the block's position
        (and, if written, the blocks' parts do not overlap), else a copy stacked from
        each block's view, which a written operand returns as (copy, the blocks'
        views) to be written back; None if written parts may overlap, or if `copies`
        (the instruction is a copy: a stacked copy would copy the data twice, block
        by block copies it once)."""
        size, itemsize = part.size, operand.itemsize
        affine = self._step(o) if type(o) is np.ndarray else (o, 0)
        if operand.local:
            rows = part.rows()
            if affine is None or rows is None:  # each block's part is in its own row
                return None if copies else self._stacked(part, operand, o)
            base = self.memory[operand.space]
            (first, step), (row, row_step) = affine, rows
            return np.ndarray((size, *operand.shape), operand.dtype, base,
                              row * base.strides[0] + operand.local_offset + first * itemsize,
                              (row_step * base.strides[0] + step * itemsize, *operand.strides))
        if affine is not None and not (operand.writes and size > 1 and abs(affine[1]) < operand.span):
            first, step = affine
            return np.ndarray((size, *operand.shape), operand.dtype, self.gm_bufs[operand.slot], first * itemsize,
                              (step * itemsize, *operand.strides))
        if copies:
            return None
        o = np.broadcast_to(o, (size,))
        if operand.writes:
            if (np.diff(np.sort(o)) < operand.span).any():
                return None
            return self._stacked(part, operand, o)
        distinct, inverse = np.unique(o, return_inverse=True)
        if len(distinct) == size:
            return self._stacked(part, operand, o)
        flat = self.gm_bufs[operand.slot]
        return np.stack([operand.viewer(flat, d) for d in distinct.tolist()]).take(inverse.reshape(-1), axis=0)

    def _stacked(self, part: Part, operand: Operand, o):
        views = [self.block_view(part, j, operand, o) for j in range(part.size)]
        copy = np.stack(views)
        return (copy, views) if operand.writes else copy

    def block_view(self, part: Part, j: int, operand: Operand, o):
        """`operand` as block `j` of the part alone sees it (the simulation's view)."""
        offset = int(o[j]) if type(o) is np.ndarray else o
        if operand.local:
            flat = self.memory[operand.space][int(part.members[j]), operand.local_offset :].view(operand.dtype)
        else:
            flat = self.gm_bufs[operand.slot]
        return operand.viewer(flat, offset)
