"""The race checker's live accesses: the default simulation finds the records a new
access supersedes by bisecting their sorted starts (`Hazards._keep`), the full one
(`scan_all`, `ge-sim --exact`) by scanning every live record. Both must keep the
same records, in the same order, through supersession and pruning: the races
found and the access each race names depend on nothing else."""

from __future__ import annotations

import random

import pytest

from gecomp.simulator.npu import hazards
from gecomp.simulator.npu.hazards import NP, Hazards, Record

SPACES = 2
PIPES = (1, 2, 3)  # the pipes touching both spaces in these runs


def _record(rng: random.Random, pipe: int, clock: int) -> Record:
    lo = rng.randrange(0, 512, 32)
    span = rng.choice((0, 32, 64, 96, 256))
    return Record(lo, lo + span, pipe, clock, rng.random() < 0.5, None, None, 0, 1, lo, rng.random() < 0.8)


def _kept(hz: Hazards) -> list[list[list[tuple]]]:
    return [[[(r.seq, r.lo, r.hi, r.writes) for r in rs] for rs in space] for space in hz.records]


@pytest.mark.parametrize("index_at", [2, 8, hazards.INDEX_AT])
@pytest.mark.parametrize("seed", range(6))
def test_indexed_and_scanned_supersession_keep_the_same_records(seed, index_at, monkeypatch):
    """`index_at`: lists longer than this are indexed (small: the index is made,
    used and dropped by pruning many times)."""
    monkeypatch.setattr(hazards, "INDEX_AT", index_at)
    rng = random.Random(seed)
    pipes = [tuple(PIPES)] * SPACES
    fast = Hazards(SPACES, pipes, ["a", "b"])
    full = Hazards(SPACES, pipes, ["a", "b"], scan_all=True)
    dropped = indexed = 0
    for _ in range(600):
        pipe, space = rng.choice(PIPES), rng.randrange(SPACES)
        if rng.random() < 0.1:  # a wait: pipe learns another's progress, then prunes
            other = rng.choice(PIPES)
            for hz in (fast, full):
                hz.join(pipe, hz.snapshot(other))
                hz.prune()
            continue
        clock = fast.tick(pipe)
        assert full.tick(pipe) == clock
        record = _record(rng, pipe, clock)
        before = fast.live
        fast._keep(space, pipe, record)
        full._keep(space, pipe, Record(**{f: getattr(record, f) for f in Record.__slots__}))
        dropped += before + 1 - fast.live
        assert _kept(fast) == _kept(full)
        assert fast.live == full.live
        indexed += any(starts is not None for space in fast.starts for starts in space)
    assert dropped > 50  # supersession happened: the comparison is not vacuous
    assert indexed > 0 or index_at == hazards.INDEX_AT
    assert NP > max(PIPES)


@pytest.mark.parametrize("seed", range(3))
def test_closed_form_overlap_equals_the_runs_search(seed, monkeypatch):
    """`Hazards._overlap` answers runs of equal steps (or a single run on one side)
    in closed form (`runs_meet`): on random strided and fractal patterns at random
    offsets and element sizes it equals `runs_overlap` over the runs' starts, and
    most pairs take the closed form."""
    from gecomp.dialects.npu.access import Fractal, Strided, runs_overlap

    rng = random.Random(seed)
    searched = []
    monkeypatch.setattr(hazards, "runs_overlap", lambda *a: searched.append(1) or runs_overlap(*a))

    def pattern():
        if rng.random() < 0.3:
            n0 = rng.choice((4, 16))
            return Fractal(rng.randint(1, 6), n0 * rng.randint(1, 4), n0 * rng.randint(1, 9), n0)
        return Strided(rng.randint(1, 6), rng.randint(1, 12), rng.randint(0, 30), rng.choice((1, 1, 0)))

    def record(p, itemsize: int) -> Record:
        base, offset = rng.choice((0, 8, 64)), rng.randint(0, 60)
        lo = base + offset * itemsize
        return Record(lo, lo + p.span * itemsize, 0, 0, True, None, p, base, itemsize, offset, p.runs()[0] == 1)

    pairs = meeting = 0
    while pairs < 3000:
        p = pattern()
        same_steps = rng.random() < 0.5  # the common case: the same layout on both sides
        a, b = record(p, 2), record(p if same_steps else pattern(), 2 if same_steps else rng.choice((1, 2, 4)))
        if a.hi <= b.lo or b.hi <= a.lo:
            continue
        pairs += 1
        (sa, la), (sb, lb) = a.runs(), b.runs()
        want = (a.contiguous and b.contiguous) or runs_overlap(sa, la, sb, lb)
        meeting += want
        assert Hazards._overlap(a, b) == want, (a, b)
    assert 0 < meeting < pairs
    assert len(searched) < pairs / 3
