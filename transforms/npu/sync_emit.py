"""Turning a sync plan into `npu.set_flag` / `npu.wait_flag` ops with event ids.

Each level's gap gets its ops as one contiguous group, in the order the planner's
clocks assumed (`LevelPlanner.schedule`): the waits after a nested loop, this
level's sets, its waits, then the sets before the next nested loop. A CARRIED
flag is four ops: set before its loop, wait and set in the body, wait after the
loop; a chain of them (`sync_plan.Chain`: one token handed from loop to loop,
possibly through enclosing loops) is one flag, set before its first loop and
waited after its last, in the block where the chain was closed.

Event ids: a flag is OUTSTANDING from a set to the wait that takes it. In the
kernel's pre-order numbering of ops that is [set, wait] for a flag within one
iteration, and for a CARRIED flag [set before the loop, wait in the body] plus
[set in the body, wait after the loop] (for a chain, from each set to the next
loop's wait). Two flags of one pipe pair may share an
id when their outstanding ranges are disjoint: then at most one set of the id is
pending at any time, so the k-th wait still takes the k-th set of its own flag.
Ids are given first-fit in order of first set; a flag that finds none of the
preset's `event_ids` free becomes `pipe_barrier ALL` at its wait (a CARRIED one
also after its loop), which orders everything its flag ordered.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.ir import Operation

from ...dialects import npu
from ...dialects.ge.base import Kind as AttrKind
from ...dialects.ge.base import to_attribute
from .buffers import linear_positions
from .sync_levels import KernelLevels, Level
from .sync_plan import Chain, PlannedSync


@dataclass
class EmittedSync:
    """One flag (one event id): a planned sync, or a chain of CARRIED flags handing
    one token from loop to loop (`planned` is its first member)."""

    planned: PlannedSync
    sets: list[npu.SetFlagOp] = field(default_factory=list)
    waits: list[npu.WaitFlagOp] = field(default_factory=list)
    barriers: int = 0  # pipe_barrier ops standing for it (no event id was free)

    @property
    def pair(self) -> tuple[int, int]:
        return self.planned.sync.p, self.planned.sync.q

    def ranges(self, positions: dict[Operation, tuple[int, int]]) -> list[tuple[int, int]]:
        """Outstanding ranges: each set with the wait that takes it (the op lists are
        in program order, so they pair up one to one)."""
        return [(positions[s][0], positions[w][0]) for s, w in zip(self.sets, self.waits)]


def _flag(op_class, p: int, q: int):
    return op_class.new(src=npu.PIPES[p], dst=npu.PIPES[q], event=0)


class Emitter:
    def __init__(self, levels: KernelLevels, planned: list[PlannedSync]):
        self.levels = levels
        self.flag: dict[int, EmittedSync] = {}  # planned sync -> its flag (chains share one)
        self.emitted: list[EmittedSync] = []
        self.by_level: dict[Level, list[PlannedSync]] = {}
        self.chains: dict[Level, list[tuple[Chain, EmittedSync]]] = {}
        for p in planned:
            self.by_level.setdefault(p.level, []).append(p)
            chain = p.chain
            if chain is not None and id(chain) in self.flag:
                self.flag[id(p)] = self.flag[id(chain)]
                continue
            e = EmittedSync(p)
            self.emitted.append(e)
            self.flag[id(p)] = e
            if chain is not None:
                self.flag[id(chain)] = e
                self.chains.setdefault(chain.home, []).append((chain, e))

    def emit(self) -> list[EmittedSync]:
        for level in self.levels.levels.values():
            if level.size:
                self._emit_level(level)
        return self.emitted

    def _emit_level(self, level: Level) -> None:
        own = self.by_level.get(level, [])
        chains = self.chains.get(level, [])
        for gap in range(level.size + 1):
            ops: list[Operation] = []
            for chain, e in chains:
                if chain.last == gap - 1:
                    ops.append(self._wait(e))
            for p in own:
                if p.sync.set_gap == gap:
                    ops.append(self._set(self.flag[id(p)]))
            for p in own:
                if p.sync.wait_position(level.size) == gap:
                    ops.append(self._wait(self.flag[id(p)]))
            for chain, e in chains:
                if chain.first == gap:
                    ops.append(self._set(e))
            self._insert(level, gap, ops)

    def _set(self, e: EmittedSync) -> npu.SetFlagOp:
        op = _flag(npu.SetFlagOp, *e.pair)
        e.sets.append(op)
        return op

    def _wait(self, e: EmittedSync) -> npu.WaitFlagOp:
        op = _flag(npu.WaitFlagOp, *e.pair)
        e.waits.append(op)
        return op

    @staticmethod
    def _insert(level: Level, gap: int, ops: list[Operation]) -> None:
        if not ops:
            return
        if gap == 0:
            level.block.insert_ops_before(ops, level.nodes[0])
        else:
            level.block.insert_ops_after(ops, level.nodes[gap - 1])


def emit_syncs(levels: KernelLevels, planned: list[PlannedSync]) -> list[EmittedSync]:
    return Emitter(levels, planned).emit()


def _in_program_order(e: EmittedSync, positions) -> None:
    e.sets.sort(key=lambda op: positions[op][0])
    e.waits.sort(key=lambda op: positions[op][0])


def allocate_event_ids(kernel: npu.KernelOp, emitted: list[EmittedSync], event_ids: int) -> list[EmittedSync]:
    """Give every flag an event id (see the module docstring); returns the flags that
    became barriers because their pipe pair ran out of ids."""
    positions = linear_positions(kernel)
    for e in emitted:
        _in_program_order(e, positions)
    taken: dict[tuple[int, int], list[list[tuple[int, int]]]] = {}
    demoted = []
    for e in sorted(emitted, key=lambda e: min(r[0] for r in e.ranges(positions))):
        ranges = e.ranges(positions)
        ids = taken.setdefault(e.pair, [])
        free = next((i for i, used in enumerate(ids) if not _overlaps(ranges, used)), None)
        if free is None and len(ids) < event_ids:
            free = len(ids)
            ids.append([])
        if free is None:
            _to_barriers(e)
            demoted.append(e)
            continue
        ids[free].extend(ranges)
        for op in (*e.sets, *e.waits):
            op.properties["event"] = to_attribute(AttrKind.INT, free)
    return demoted


def _overlaps(ranges: list[tuple[int, int]], used: list[tuple[int, int]]) -> bool:
    return any(a <= d and c <= b for a, b in ranges for c, d in used)


def _to_barriers(e: EmittedSync) -> None:
    """Replace a flag by `pipe_barrier ALL` where it is waited for."""
    for wait in e.waits:
        wait.parent_block().insert_op_before(npu.PipeBarrierOp.new(pipe=npu.ALL_PIPES), wait)
    e.barriers = len(e.waits)
    for op in (*e.sets, *e.waits):
        op.detach()
        op.erase()
    e.sets.clear()
    e.waits.clear()
