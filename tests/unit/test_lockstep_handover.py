"""The lockstep's hand-overs (greenlet switches through the scheduler): blocks take
turns in cycle order, an error of one block reaches `run()` and unwinds the
others (no block's stack is left behind), and the lockstep runs again."""

from __future__ import annotations

import pytest

from gecomp.simulator.npu.lockstep import Block, Lockstep


def _block(lockstep: Lockstep, core: int, step: int, steps: int, log: list, fail_at: int | None = None) -> Block:
    def run():
        for i in range(steps):
            cycle = i * step
            if i == fail_at:
                raise ValueError(f"block {core} fails at {cycle}")
            log.append((core, cycle))
            lockstep.pace(cycle, 1, 0)  # faster than any fair share: it may hand over
        return core

    return Block(core, 0, run, lambda: None, lambda: None)


def test_blocks_take_turns_within_a_quantum_and_close():
    lockstep = Lockstep(quantum=100)
    log: list = []
    blocks = [_block(lockstep, 0, 70, 40, log), _block(lockstep, 1, 300, 10, log)]
    lockstep.run(blocks, lambda finished: None)
    lockstep.close()
    assert [b.result for b in blocks] == [0, 1]
    assert sorted(log) == sorted([(0, 70 * i) for i in range(40)] + [(1, 300 * i) for i in range(10)])
    # No block logged a cycle more than a quantum (plus its own step) past one the
    # other logged later: the turns follow the cycles.
    for k, (core, cycle) in enumerate(log):
        later_other = [c for o, c in log[k + 1 :] if o != core]
        if later_other:
            assert cycle <= min(later_other) + 100 + 300


def test_an_error_reaches_run_and_unwinds_the_other_blocks():
    lockstep = Lockstep(quantum=10)
    log: list = []
    blocks = [_block(lockstep, core, 50 + core, 20, log, fail_at=5 if core == 2 else None) for core in range(4)]
    with pytest.raises(ValueError, match="block 2 fails"):
        lockstep.run(blocks, lambda finished: None)
    assert all(b.glet is not None and b.glet.dead for b in blocks)  # every block had started: none is left parked
    assert sum(b.cancelled for b in blocks) == 3 and all(b.result is None for b in blocks)
    lockstep.close()
    assert not lockstep._workers
    # a fresh lockstep runs again after that
    again = Lockstep(quantum=10)
    blocks = [_block(again, core, 40, 5, []) for core in range(2)]
    again.run(blocks, lambda finished: None)
    again.close()
    assert [b.result for b in blocks] == [0, 1]
