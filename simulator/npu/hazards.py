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
live set stays as small as the pipeline depth. After a barrier of every pipe
none is live.

A segment (the accesses between two barriers of every pipe) whose accesses
match a segment already checked, access for access, is not checked again: see
`segments.py` for what is matched and why the match keeps the guarantee.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from dataclasses import dataclass
import itertools
from operator import attrgetter, sub

from xdsl.ir import Operation

from ...core.diagnostics import CompileError, location_of
from ...dialects.npu.access import Pattern, Strided, runs_overlap
from .segments import VerifiedSegments

PIPE_NAMES = ("S", "MTE1", "MTE2", "MTE3", "M", "V", "FIX")
PIPE_INDEX = {name: i for i, name in enumerate(PIPE_NAMES)}
S = 0
NP = len(PIPE_NAMES)

PRUNE_AT = 48
"""Live records (over all spaces) that trigger pruning at the next sync point."""

INDEX_AT = 96
"""A pipe's live records in one space beyond which `Hazards._keep` finds the ones
a new access supersedes through their sorted starts rather than a scan. Measured
per access, scan against index: 1.5 / 3.5 us with 4 live records, 16 / 5 us with
300, 147 / 9.6 us with 3000 (a burst of gather copies between two syncs)."""


@dataclass(slots=True)
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
    slot: int = -1  # the buffer slot of the kernel it accesses (`program.BufferSlot`)
    seq: int = 0  # its order among the records of its core (set when kept)

    def runs(self):
        starts = self.base + self.pattern.run_starts(self.offset) * self.itemsize
        return starts, self.pattern.runs()[1] * self.itemsize

    def progression(self) -> tuple[int, int, int, int]:
        """Its runs as (first start, count, step, length) in bytes: run i is
        [first + i * step, first + i * step + length)."""
        pattern = self.pattern
        count, elements = pattern.runs()
        step = 0
        if count > 1:  # as `run_starts` steps them
            step = (pattern.row_stride if type(pattern) is Strided else pattern.block_stride) * self.itemsize
        return self.lo, count, step, elements * self.itemsize


@dataclass(frozen=True, eq=False)
class Accesses:
    """What one instruction touches, as the race checker sees it: per access
    (space, writes, pattern, element size, span in bytes, contiguous, buffer slot);
    `gm` lists the accesses to GM. Fixed when the kernel is decoded; an execution
    adds the offsets."""

    op: Operation
    pipe: int
    operands: tuple[tuple, ...]
    gm: tuple[int, ...]

    def records(self, bases: list[int], offsets, clock: int):
        """(space, Record) of each access at element `offsets`, made at `clock` on its pipe."""
        pipe, op = self.pipe, self.op
        for (space, writes, pattern, itemsize, span_bytes, contiguous, slot), o in zip(self.operands, offsets):
            base = bases[slot]
            lo = base + o * itemsize
            yield space, Record(lo, lo + span_bytes, pipe, clock, writes, op, pattern, base, itemsize, o, contiguous, slot)


def _meeting(grouped: list[tuple]) -> tuple:
    """The pairs of `grouped` accesses, (lo, hi, group, slot, entry, access), to
    different slots of one group whose byte ranges meet: (entry, access, entry,
    access, distance in bytes from the first's start to the second's), the
    earlier entry first. A sweep over their starts: each access meets those of
    the accesses started before it that are still open."""
    if len(grouped) < 2:
        return ()
    grouped.sort()
    pairs, open_ = [], []
    for lo, hi, group, slot, n, i in grouped:
        open_ = [a for a in open_ if a[1] > lo]
        for a_lo, _, a_group, a_slot, a_n, a_i in open_:
            if a_group == group and a_slot != slot:
                (n1, i1, lo1), (n2, i2, lo2) = sorted(((a_n, a_i, a_lo), (n, i, lo)))
                pairs.append((n1, i1, n2, i2, lo2 - lo1))
        open_.append((lo, hi, group, slot, n, i))
    return tuple(sorted(pairs))


def describe(op: Operation) -> str:
    where = location_of(op)
    return f"'{op.name}' at {where}" if where is not None else f"'{op.name}'"


_clock = attrgetter("clock")
_seq = attrgetter("seq")


class Hazards:
    """Vector clocks and live accesses of one core (one block run)."""

    def __init__(
        self,
        space_count: int,
        space_pipes: list[tuple[int, ...]],
        space_names: list[str],
        scan_all: bool = False,
        verified: VerifiedSegments | None = None,
        gm_groups: dict[int, int] | None = None,
        order=None,
        bases: list[int] | None = None,
    ):
        self.vc = [[0] * NP for _ in range(NP)]
        self.learned: list = [None] * NP  # per pipe, the scalar snapshot it joined last (`learn`)
        # records[space][pipe]: the live accesses of `pipe` to `space`, in program
        # order, hence in clock order (a pipe's clock only grows): those another pipe
        # has not ordered yet are a suffix, those every pipe has ordered a prefix.
        self.records: list[list[list[Record]]] = [[[] for _ in range(NP)] for _ in range(space_count)]
        # starts[space][pipe]: (lo, seq, hi, writes) of each record of
        # records[space][pipe], sorted, once that list is longer than INDEX_AT (None
        # before): the records a new access supersedes are found by bisection (`_keep`)
        self.starts: list[list[list[tuple] | None]] = [[None] * NP for _ in range(space_count)]
        self.space_pipes = space_pipes
        # others[space][pipe]: the other pipes that touch `space`, whose accesses `pipe`'s may race with
        self.others = [[tuple(q for q in pipes if q != p) for p in range(NP)] for pipes in space_pipes]
        self.space_names = space_names
        self.live = 0
        self.prune_at = PRUNE_AT
        self.seq = 0  # records made so far: their order over all pipes
        self.scan_all = scan_all
        # The segments of this kernel checked so far (`segments.py`; None: every
        # access is checked when it is made, as `scan_all` does), and per GM buffer
        # slot its group of slots sharing bytes in this launch (absent: a group of its own).
        self.verified = None if scan_all else verified
        self.gm_space = space_names.index("gm") if "gm" in space_names else -1
        self.gm_groups = gm_groups or {}
        self.order = order if order is not None else itertools.count()  # numbers the accesses of the launch
        self.bases = bases  # byte address of each buffer slot's element 0 in its space
        self._start_segment((0,) * NP)

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

    def learn(self, pipe: int, scalar_clock) -> None:
        """Join the scalar unit's clock at issue (`scalar_clock`, an immutable snapshot)
        into `pipe`'s: once per snapshot, since a pipe's clock never goes back, a
        snapshot it has joined is covered for good."""
        if self.learned[pipe] is not scalar_clock:
            self.join(pipe, scalar_clock)
            self.learned[pipe] = scalar_clock

    def join_all(self) -> None:
        """A barrier of every pipe: each knows all; no access made before can race any more."""
        merged = [max(column) for column in zip(*self.vc)]
        for p in range(NP):
            self.vc[p] = list(merged)
        if self.verified is not None:
            self.end_segment()
            self.records = [[[] for _ in range(NP)] for _ in self.records]
            self.starts = [[None] * NP for _ in self.starts]
            self.live = 0
            self.prune_at = PRUNE_AT
            self._start_segment(tuple(merged))

    # ---- segments already checked (segments.py) ---------------------------------------

    def _start_segment(self, base_clock: tuple[int, ...]) -> None:
        self.base_clock = base_clock  # every pipe's clock at the barrier that began it
        # its instructions' accesses, unchecked: (Accesses, offsets, vc[pipe] then,
        # order in the launch); None: checked as they are made
        self.log: list[tuple] | None = [] if self.verified is not None else None

    def end_segment(self) -> None:
        """The segment ends (a barrier of every pipe, or the block's end): unless it
        matches a segment already checked, its accesses are checked now, in the order
        they were made (a race raises the CompileError the access would have raised)."""
        log = self.log
        if not log:
            return
        self.log = []
        key = self._segment_key(log)
        if self.verified.matches(key):
            return
        self._check_log(log)
        self.verified.add(key)

    def settle(self) -> None:
        """Check what the segment logged so far, and the rest of it as it is made
        (before a scalar read, whose value may steer loops and offsets)."""
        log, self.log = self.log, None
        if log:
            self._check_log(log)

    def unchecked_race(self) -> CompileError | None:
        """The race among the accesses not checked yet (after another error ended the
        run), or None. Its `race_order` says when in the launch it was made."""
        log, self.log = self.log, []
        try:
            self._check_log(log or ())
        except CompileError as race:
            return race
        return None

    def _segment_key(self, log: list[tuple]) -> tuple:
        """The segment as `segments.py` compares it: per instruction its accesses'
        places (a GM access's counted in bytes from the first access to its slot)
        and clock, and the pairs of GM accesses to different slots sharing bytes in
        this launch (a group of `gm_groups`) whose byte ranges meet, with their
        distance."""
        groups, bases = self.gm_groups, self.bases
        firsts: dict[int, int] = {}  # GM slot -> the byte of its first access
        grouped: list[tuple] = []  # (lo, hi, group, slot, entry, access) of GM accesses to grouped slots
        base = self.base_clock
        entries = []
        for n, (accesses, offsets, clock, _) in enumerate(log):
            where = tuple(offsets)
            if accesses.gm:
                where = list(where)
                for i in accesses.gm:
                    _, _, _, itemsize, span_bytes, _, slot = accesses.operands[i]
                    lo = bases[slot] + offsets[i] * itemsize
                    first = firsts.setdefault(slot, lo)
                    where[i] = (slot, lo - first)
                    group = groups.get(slot)
                    if group is not None:
                        grouped.append((lo, lo + span_bytes, group, slot, n, i))
                where = tuple(where)
            entries.append((id(accesses), where, tuple(map(sub, clock, base))))
        return (tuple(entries), _meeting(grouped))

    def _check_log(self, log) -> None:
        """Check the accesses of `log` as `access` would have when they were made: each
        with the clock its pipe had then."""
        vc, bases = self.vc, self.bases
        now = list(vc)
        for accesses, offsets, clock, order in log:
            pipe = accesses.pipe
            vc[pipe] = clock
            for space, record in accesses.records(bases, offsets, clock[pipe]):
                try:
                    self.access(space, pipe, record)
                except CompileError as race:
                    race.race_order = order
                    raise
        vc[:] = now

    def instruction(self, accesses: Accesses, offsets, clock: int) -> None:
        """An instruction made the accesses `accesses` at element `offsets`, its pipe's
        clock ticked to `clock`: logged for its segment's end (`end_segment`), or
        checked now."""
        log = self.log
        if log is not None:
            log.append((accesses, offsets, tuple(self.vc[accesses.pipe]), next(self.order)))
            return
        pipe = accesses.pipe
        for space, record in accesses.records(self.bases, offsets, clock):
            self.access(space, pipe, record)

    # ---- accesses -------------------------------------------------------------------

    def access(self, space: int, pipe: int, record: Record) -> None:
        """Check `record` (made by `pipe`) against the live accesses, then keep it.
        Only the accesses of other pipes that `pipe` has not ordered can race: the
        suffix of each pipe's list past what vc[pipe] knows of it. (With
        `scan_all`, every live access is looked at instead: `ge-sim --exact`.)"""
        if self.scan_all:
            earlier = self._first_racing(space, pipe, record)
            if earlier is not None:
                raise self._race(space, earlier, record, pipe)
            self._keep(space, pipe, record)
            return
        vc = self.vc[pipe]
        lists = self.records[space]
        lo, hi, writes = record.lo, record.hi, record.writes
        for q in self.others[space][pipe]:
            others = lists[q]
            known = vc[q]
            if not others or others[-1].clock <= known:
                continue
            for i in range(bisect_right(others, known, key=_clock), len(others)):
                r = others[i]
                if r.hi <= lo or r.lo >= hi or not (writes or r.writes):
                    continue
                if self._overlap(r, record):
                    raise self._race(space, self._first_racing(space, pipe, record), record, pipe)
        self._keep(space, pipe, record)

    def _keep(self, space: int, pipe: int, record: Record) -> None:
        """Add `record` to its pipe's live accesses, dropping those it supersedes: a
        later access of the same pipe covering an earlier one orders the same (any
        access racing with the earlier one races with the later one too). Only a
        contiguous record supersedes (a strided one does not touch every byte of
        its range). A short list is scanned; a list longer than `INDEX_AT` (a burst
        of hundreds of copies between two syncs) keeps its records' starts sorted,
        and the covered ones, which start in [lo, hi), are found by bisection: the
        same records (`scan_all`, the full simulation, always scans)."""
        own = self.records[space][pipe]
        record.seq = self.seq
        self.seq += 1
        starts = self.starts[space][pipe]
        if starts is None:
            if record.contiguous and own:
                lo, hi, writes = record.lo, record.hi, record.writes
                kept = [r for r in own if not (r.lo >= lo and r.hi <= hi and (writes or not r.writes))]
                if len(kept) != len(own):
                    self.live -= len(own) - len(kept)
                    self.records[space][pipe] = own = kept
            own.append(record)
            self.live += 1
            if len(own) > INDEX_AT and not self.scan_all:
                self.starts[space][pipe] = sorted((r.lo, r.seq, r.hi, r.writes) for r in own)
            return
        lo, hi, writes = record.lo, record.hi, record.writes
        if record.contiguous:
            first = bisect_left(starts, (lo,))
            end = bisect_right(starts, (hi, 1 << 62), first)  # an empty record at hi is covered too
            covered = [i for i in range(first, end) if starts[i][2] <= hi and (writes or not starts[i][3])]
            for i in reversed(covered):
                seq = starts[i][1]
                del starts[i]
                del own[bisect_left(own, seq, key=_seq)]
            self.live -= len(covered)
        insort(starts, (lo, record.seq, hi, writes))
        own.append(record)
        self.live += 1

    def _first_racing(self, space: int, pipe: int, record: Record) -> Record | None:
        """The earliest made of the live accesses `record` races with (a scan of all
        of them, in the order they were made), or None."""
        vc = self.vc[pipe]
        lo, hi, writes = record.lo, record.hi, record.writes
        for r in sorted((r for rs in self.records[space] for r in rs), key=_seq):
            if r.pipe == pipe or r.hi <= lo or r.lo >= hi:
                continue
            if (writes or r.writes) and vc[r.pipe] < r.clock and self._overlap(r, record):
                return r
        return None

    @staticmethod
    def _overlap(a: Record, b: Record) -> bool:
        """Whether a run of `a` meets a run of `b` (their byte ranges meet). Runs
        of equal steps (or one side a single run) are answered in closed form
        (`runs_meet`), others by `runs_overlap` over their starts: the same answer."""
        if a.contiguous and b.contiguous:
            return True
        a0, na, sa, la = a.progression()
        b0, nb, sb, lb = b.progression()
        if na == 1:
            if nb == 1:
                return a0 < b0 + lb and b0 < a0 + la
            if sb > 0:
                return runs_meet(b0 - a0, 0, nb - 1, sb, -lb, la)
        elif nb == 1:
            if sa > 0:
                return runs_meet(a0 - b0, 0, na - 1, sa, -la, lb)
        elif sa == sb and sa > 0:
            return runs_meet(b0 - a0, 1 - na, nb - 1, sa, -lb, la)
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
        for space, lists in enumerate(self.records):
            pipes = self.space_pipes[space]
            for p, records in enumerate(lists):
                if not records:
                    continue
                floor = min((vc[q][p] for q in pipes if q != p), default=1 << 62)
                if records[0].clock <= floor:
                    records = lists[p] = records[bisect_right(records, floor, key=_clock):]
                    starts = self.starts[space][p]
                    if starts is not None:
                        if len(records) <= INDEX_AT // 2:
                            self.starts[space][p] = None
                        else:
                            oldest = records[0].seq
                            starts[:] = [t for t in starts if t[1] >= oldest]
                total += len(records)
        self.live = total
        self.prune_at = max(PRUNE_AT, 2 * total)


def runs_meet(d: int, k_min: int, k_max: int, step: int, lo: int, hi: int) -> bool:
    """Whether some integer k in [k_min, k_max] has lo < d + k * step < hi (step > 0).
    Runs [b0 + j s, + lb) and [a0 + i s, + la) meet iff b0 - a0 + (j - i) s lies in
    (-lb, la): with d = b0 - a0 and k = j - i, `Hazards._overlap`'s closed form."""
    k = max(k_min, (lo - d) // step + 1)
    return k <= k_max and d + k * step < hi


class BlockOrder:
    """Race detection between the blocks of one launch on GM, with vector clocks
    over the blocks, for kernels whose phases meet at `npu.cross_set_flag` /
    `npu.cross_wait_flag` rather than at a barrier of every block.

    vc[c][b] is how many flags of block b are known set before block c's next
    access: block b's own entry counts its sets, a wait on b's n-th set joins the
    clock b had at that set, a barrier of every block (`npu.sync_all`) joins all.
    A GM access of block c made after its e-th set is ordered before another
    block's access only once that block knows c's (e+1)-th set. Every GM access
    is checked against the live accesses of the other blocks to overlapping bytes
    (a write against anything, a read against writes): an access that no chain
    of sets and waits orders is a race, whichever block's the simulation ran
    first. Accesses are kept per block in program order, in buckets of GM
    addresses, so that an access looks only at the unordered accesses near it."""

    BUCKET = 1 << 16  # GM bytes per bucket of live accesses

    def __init__(self):
        self.vc: dict[int, dict[int, int]] = {}
        self.posts: dict[int, list[dict[int, int]]] = {}
        # live[bucket][block]: (epoch, record) of the block's accesses touching the
        # bucket, all of them and its writes alone (a read is checked against writes)
        self.live: dict[int, dict[int, tuple[list, list]]] = {}

    def clock(self, block: int) -> dict[int, int]:
        vc = self.vc.get(block)
        if vc is None:
            vc = self.vc[block] = {}
        return vc

    def post(self, block: int) -> None:
        """Block `block` set its flag (everything it issued before has completed)."""
        vc = self.clock(block)
        vc[block] = vc.get(block, 0) + 1
        self.posts.setdefault(block, []).append(dict(vc))

    def join(self, block: int, needs) -> None:
        """Block `block` passed a wait for the (producer, count) flags `needs`."""
        vc = self.clock(block)
        for producer, count in needs:
            for b, n in self.posts[producer][count - 1].items():
                if n > vc.get(b, 0):
                    vc[b] = n

    def join_all(self) -> None:
        """Every block passed one barrier: everything before it is ordered."""
        merged: dict[int, int] = {}
        for vc in self.vc.values():
            for b, n in vc.items():
                merged[b] = max(merged.get(b, 0), n)
        for block in self.vc:
            self.vc[block] = dict(merged)
        self.live.clear()

    def access(self, block: int, record: Record) -> None:
        """Check block `block`'s GM access `record` against the other blocks' live
        ones (CompileError naming both instructions on a race), then keep it."""
        vc = self.clock(block)
        epoch = vc.get(block, 0)
        lo, hi, writes = record.lo, record.hi, record.writes
        buckets = range(lo // self.BUCKET, (hi - 1) // self.BUCKET + 1)
        which = 0 if writes else 1  # a write meets every access, a read only the writes
        for bucket in buckets:
            for other, kept in self.live.get(bucket, {}).items():
                if other == block:
                    continue
                known = vc.get(other, 0)  # other's accesses before its (known + 1)-th set are ordered
                for other_epoch, r in reversed(kept[which]):
                    if other_epoch < known:
                        break
                    if r.hi <= lo or r.lo >= hi:
                        continue
                    if Hazards._overlap(r, record):
                        raise self._race(block, record, other, r)
        entry = (epoch, record)
        for bucket in buckets:
            kept = self.live.setdefault(bucket, {}).get(block)
            if kept is None:
                kept = self.live[bucket][block] = ([], [])
            kept[0].append(entry)
            if writes:
                kept[1].append(entry)

    @staticmethod
    def _race(block: int, later: Record, other: int, earlier: Record) -> CompileError:
        first = "writes" if earlier.writes else "reads"
        second = "writes" if later.writes else "reads"
        lo, hi = max(earlier.lo, later.lo), min(earlier.hi, later.hi)
        return CompileError(
            f"race: '{later.op.name}' of block {block} {second} GM bytes [{lo}, {hi}) that {describe(earlier.op)} "
            f"of block {other} {first}, and no cross_set_flag/cross_wait_flag or sync_all orders them",
            later.op,
        )
