"""Race detection inside one core, with vector clocks over its pipes.

Each pipe p has a vector clock vc[p]: vc[p][q] is how many instructions of pipe
q are known to have completed before p's next instruction. Clocks move only
with the program's own ordering, never with timing:

* program order on one pipe (vc[p][p] counts p's instructions);
* `set_flag` (src -> dst) snapshots vc[src]; the wait that consumes it (the k-th
  wait consumes the k-th set) joins the snapshot into vc[dst];
* `pipe_barrier ALL` joins every pipe into every pipe;
* the scalar unit issues everything: an instruction also knows what the scalar
  unit knew when it issued it (its clock at issue, joined in on execution).

Every access of an instruction on pipe p is checked against the live accesses
of the other pipes to overlapping bytes of the same space: a write against
anything, a read against writes. If vc[p] does not cover the earlier access
(vc[p][q] < its clock) nothing orders the two and it is a race, whatever the
timing happened to be. Overlap is first tested on byte ranges, then exactly on
the contiguous runs of both patterns.

Accesses stop being live once every pipe that can still touch their space
knows them (all their vector clocks cover them): pruned at sync points, so the
live set stays as small as the pipeline depth.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import Operation

from ...core.diagnostics import CompileError, location_of
from ...dialects.npu.access import Pattern, runs_overlap

PIPE_NAMES = ("S", "MTE1", "MTE2", "MTE3", "M", "V", "FIX")
PIPE_INDEX = {name: i for i, name in enumerate(PIPE_NAMES)}
S = 0
NP = len(PIPE_NAMES)

PRUNE_AT = 48
"""Live records (over all spaces) that trigger pruning at the next sync point."""


@dataclass
class Record:
    lo: int  # byte range [lo, hi) in the space
    hi: int
    pipe: int
    clock: int
    writes: bool
    op: Operation
    pattern: Pattern
    base: int  # byte address of element 0 of the buffer in the space
    itemsize: int
    offset: int  # element offset of the access
    contiguous: bool  # the pattern is one run of bytes

    def runs(self):
        starts = self.base + self.pattern.run_starts(self.offset) * self.itemsize
        return starts, self.pattern.runs()[1] * self.itemsize


def describe(op: Operation) -> str:
    where = location_of(op)
    return f"'{op.name}' at {where}" if where is not None else f"'{op.name}'"


class Hazards:
    """Vector clocks and live accesses of one core (one block run)."""

    def __init__(self, space_count: int, space_pipes: list[tuple[int, ...]], space_names: list[str]):
        self.vc = [[0] * NP for _ in range(NP)]
        self.records: list[list[Record]] = [[] for _ in range(space_count)]
        self.space_pipes = space_pipes
        self.space_names = space_names
        self.live = 0
        self.prune_at = PRUNE_AT

    # ---- clocks ---------------------------------------------------------------------

    def tick(self, pipe: int) -> int:
        vc = self.vc[pipe]
        vc[pipe] += 1
        return vc[pipe]

    def snapshot(self, pipe: int) -> tuple[int, ...]:
        return tuple(self.vc[pipe])

    def join(self, pipe: int, other) -> None:
        vc = self.vc[pipe]
        for q in range(NP):
            if other[q] > vc[q]:
                vc[q] = other[q]

    def join_all(self) -> None:
        merged = [max(column) for column in zip(*self.vc)]
        for p in range(NP):
            self.vc[p] = list(merged)

    # ---- accesses -------------------------------------------------------------------

    def access(self, space: int, pipe: int, record: Record) -> None:
        """Check `record` (made by `pipe`) against the live accesses, then keep it."""
        vc = self.vc[pipe]
        records = self.records[space]
        lo, hi, writes = record.lo, record.hi, record.writes
        covering = record.contiguous
        keep = []
        for r in records:
            if r.hi <= lo or r.lo >= hi:
                keep.append(r)
                continue
            if r.pipe == pipe:
                # Superseded: a later access of the same pipe covering it orders the same.
                if not (covering and r.lo >= lo and r.hi <= hi and (writes or not r.writes)):
                    keep.append(r)
                continue
            keep.append(r)
            if (writes or r.writes) and vc[r.pipe] < r.clock and self._overlap(r, record):
                raise self._race(space, r, record, pipe)
        keep.append(record)
        self.live += len(keep) - len(records)
        self.records[space] = keep

    @staticmethod
    def _overlap(a: Record, b: Record) -> bool:
        if a.contiguous and b.contiguous:
            return True
        a_starts, a_len = a.runs()
        b_starts, b_len = b.runs()
        return runs_overlap(a_starts, a_len, b_starts, b_len)

    def _race(self, space: int, earlier: Record, later: Record, pipe: int) -> CompileError:
        first = "writes" if earlier.writes else "reads"
        second = "writes" if later.writes else "reads"
        lo, hi = max(earlier.lo, later.lo), min(earlier.hi, later.hi)
        return CompileError(
            f"race: '{later.op.name}' on pipe {PIPE_NAMES[pipe]} {second} {self.space_names[space]} bytes "
            f"[{lo}, {hi}) that {describe(earlier.op)} on pipe {PIPE_NAMES[earlier.pipe]} {first}, and no "
            f"set_flag/wait_flag or barrier orders them",
            later.op,
        )

    # ---- pruning --------------------------------------------------------------------

    def prune(self) -> None:
        """Drop accesses every pipe that can still touch their space has ordered."""
        if self.live < self.prune_at:
            return
        vc = self.vc
        total = 0
        for space, records in enumerate(self.records):
            pipes = self.space_pipes[space]
            floor = [min((vc[q][p] for q in pipes if q != p), default=1 << 62) for p in range(NP)]
            kept = [r for r in records if r.clock > floor[r.pipe]]
            self.records[space] = kept
            total += len(kept)
        self.live = total
        self.prune_at = max(PRUNE_AT, 2 * total)
