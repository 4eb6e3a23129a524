"""Segments of a kernel's accesses that the race checker has already checked.

The blocks of a launch run one kernel on different data: block b's accesses are
mostly block 0's, with its GM offsets moved by a constant per buffer. Checking
each block's accesses again was half of a simulation's work. Between two
barriers of every pipe (`npu.pipe_barrier ALL`, `npu.sync_all`, the start and
end of a block) lies a *segment*: no access made before the barrier can race
with one after it (every pipe's vector clock covers it, `hazards.py`), so a
segment is checked on its own. A segment is described, instruction by
instruction, by

    (instruction, the places of its accesses, vc[pipe] - vc at the barrier)

where a local access's place is its offset (local buffers have one place per
kernel) and a GM access's place is its slot and its distance in bytes from the
first access to its slot in the segment (a block's own position in GM moved
away), and by the *meetings* of the segment: the pairs of GM accesses to two
slots that share bytes in this launch (the same buffer passed twice, views,
arena buffers on the same bytes: a group, `KernelProgram._shared_bytes`) whose
byte ranges meet here, each with the distance between their starts. (Until
issue 35's round, a segment whose grouped slots met was described by places
counted from the group's first access instead, so that a block reading one
arena buffer and writing another on the same bytes, or a buffer at a place
that moves with the block, matched no other block: EfficientNet-B0 checked 696
of its 2,570 segments; with meetings it checks 150.)

The accesses of a segment are logged as they are made (with the clock of their
pipe then) and checked when it ends, unless it matches a segment already
checked. The blocks of a launch run side by side (`lockstep.py`), so the first
block to end a segment checks it and the others find it. If anything ends the
run early (an error of any block), the accesses not yet checked are checked
first, and the race made first in the launch, if any, is the error
(`plan.py`): the same error as checking every access when it is made.

Claim: if a segment of a block has the description of a segment that was
checked and passed, no access of it races. Proof: the check of an access on
pipe p asks which live accesses of other pipes q overlap it (one of the two
writing) with a clock vc[p][q] does not cover; it depends on nothing else.
Entry for entry the two segments have the same instructions (hence pipes,
patterns, element sizes, spans and read / write modes), the same vector clocks
up to one constant per pipe (the same constant on both sides of every
comparison), and every pair of accesses overlapping here overlaps there: two
local accesses are at the same bytes; two GM accesses to one slot are at the
same distance from each other, which decides whether they overlap (a
pattern's runs move with its start); two GM accesses to different slots of one
group whose byte ranges meet here are a meeting, so there too, at the same
distance; two to different slots of one group that do not meet here cannot
overlap; two to slots of different groups, or to a slot alone in its own,
share no bytes (every access lies inside its buffer, the bounds being checked
at issue, before the race check). So every overlapping, unordered pair here is
one of the checked segment, where none was found. Tests:
tests/unit/test_sim_segments.py.

The description serves every launch of the kernel, since the GM slots
sharing bytes are found per launch (`KernelProgram.bind_arguments`).
`ge-sim --exact` (the full simulation) checks every access.
"""

from __future__ import annotations

from itertools import count


class VerifiedSegments:
    """The checked segments of one kernel (as `Hazards._segment_key` describes them)."""

    def __init__(self):
        self.keys: set[tuple] = set()
        self.checked = 0  # segments checked
        self.matched = 0  # segments that matched one already checked: not checked again

    def matches(self, key: tuple) -> bool:
        if key in self.keys:
            self.matched += 1
            return True
        return False

    def add(self, key: tuple) -> None:
        """A segment was checked and passed."""
        self.checked += 1
        self.keys.add(key)


class LaunchChecks:
    """The race checkers of one launch's blocks, numbering their accesses in the
    order they are made, so that a run ended early reports the race made first."""

    def __init__(self):
        self.order = count()
        self.checkers: list = []  # hazards.Hazards, one per block run

    def first_error(self, error: BaseException) -> BaseException:
        """What ends the run when `error` did: the race made first among the accesses
        not checked yet and `error` itself (a race found at a segment's end has its
        `race_order`; any other error happened after every access logged)."""
        races = [race for race in (hz.unchecked_race() for hz in self.checkers) if race is not None]
        if getattr(error, "race_order", None) is not None:
            races.append(error)
        return min(races, key=lambda race: race.race_order) if races else error
