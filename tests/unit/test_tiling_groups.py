"""The cube tiling search shares what fits between the runs of one item size
(`tiling._Group`: the K chunks, residencies and epilogue rows that fit L1 and UB
do not depend on the L0 step, nor on the sub-tile width unless UB fits fewer
than 16 rows) and bounds each group's staging once. On random shapes and
operands, the candidates must be exactly those that checking every candidate
afresh finds, in the same order, and the bounded search must pick what
estimating every candidate picks."""

from __future__ import annotations

import numpy as np
import pytest

from gecomp.lowering import tiling
from gecomp.lowering.tiling import EpilogueCost, GemmShape, best_cube_tiling, fitting_cube_tilings, rank_key
from gecomp.simulator.hardware import load_preset


class RandomOperand:
    """An operand whose granules, UB needs and residency are drawn at random."""

    def __init__(self, rng, side: str) -> None:
        self.cost = int(rng.integers(1, 5))
        self.setup = int(rng.integers(50, 400))
        if side == "a" and rng.random() < 0.5:
            self.mn_granule = int(rng.choice([7, 14, 28]))
        if rng.random() < 0.5:
            self.k_granule = int(rng.choice([16, 32, 72]))
        if side == "a":
            self.stays_in_l1 = bool(rng.random() < 0.6)
            self.mn_small_tiles = bool(rng.random() < 0.3)
        self.ub_per_element = int(rng.choice([0, 0, 2, 16]))

    def l1_elements(self, rows, cols):
        return rows * -(-cols // 16) * 16

    def stage_cycles(self, hw, rows, cols):
        return self.setup + self.cost * rows * cols * 2 // 73 + rows

    def load_cycles(self, hw, space, rows, cols):
        return 20 + rows * cols * 2 // 128

    def ub_bytes(self, rows, cols):
        return self.ub_per_element * rows * cols


def _cases(count: int, seed: int):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        m, n, k = (int(rng.choice([1, 7, 16, 49, 100, 196, 300, 784, 1000, 3136])) for _ in range(3))
        shape = GemmShape(int(rng.choice([1, 2, 3])), m, n, k, int(rng.choice([1, 1, 2])), in_bytes=int(rng.choice([2, 4])))
        # Long epilogue rows: UB may fit fewer than 16 rows, whose chunks then depend on the sub-tile.
        epilogue = EpilogueCost(int(rng.choice([8, 64, 400, 1600, 4000])), ub_fixed_bytes=128, copies=int(rng.choice([2, 4])))
        yield shape, RandomOperand(rng, "a"), [RandomOperand(rng, "b")] * shape.products, epilogue


def _afresh(hw, shape, a, bs, e, narrow: list):
    """Every candidate that fits, each checked on its own (L1, UB rows), in the search's order;
    `narrow` told, for each that fits L1, whether its rows depend on the sub-tile width."""
    cap = hw.capacity("l1")
    found = []
    for mb, n_block, nb, kb, chunks, resident in tiling._runs(hw, shape, a, bs):
        for kc in chunks:
            if tiling.l1_bytes(hw, shape, a, bs, mb, n_block, kc, False) > cap:
                break
            reserved = tiling.ub_reserved(a, mb, kc) + sum(tiling.ub_reserved(b, kc, n_block) for b in bs)
            fit = tiling._ub_rows(hw, e, mb, n_block, reserved)
            rows = tiling._chunk_rows(e, mb, nb, fit)
            narrow.append(len({tiling._chunk_rows(e, mb, width, fit) for width in (16, 32, 64, 128)}) > 1)
            if rows is None:
                continue
            found.append((mb, n_block, nb, kb, kc, False, rows))
            if resident and tiling.l1_bytes(hw, shape, a, bs, mb, n_block, kc, True) <= cap:
                found.append((mb, n_block, nb, kb, kc, True, rows))
    return found


@pytest.mark.parametrize("prefetched", [False, True])
@pytest.mark.parametrize("hw", ["tiny", "ascend910"])
def test_groups_and_bounded_search_match_every_candidate(hw, prefetched):
    preset = load_preset(hw)
    searched = narrow_by_width = 0
    for shape, a, bs, e in _cases(32 if hw == "tiny" else 12, 7 if prefetched else 11):
        for memo_ in (tiling._FITS, tiling._BESTS, tiling._SEARCHES):
            memo_.clear()
        narrow = []
        want = _afresh(preset, shape, a, bs, e, narrow)
        narrow_by_width += any(narrow)
        if not want:
            with pytest.raises(ValueError, match="no tiling"):
                best_cube_tiling(preset, shape, a, bs, e, prefetched)
            continue
        searched += 1
        _, fits = tiling._fitting(preset, shape, a, bs, e, prefetched)
        got = [(c.mb, c.n_block, c.nb, c.kb, c.kc, c.a_resident, rows) for c, rows, _ in fits.all()]
        assert got == want
        every = fitting_cube_tilings(preset, shape, a, bs, e, prefetched)
        best, count = best_cube_tiling(preset, shape, a, bs, e, prefetched)
        assert best == min(every, key=rank_key) and count == len(every) == len(want)
    assert searched >= 8
    assert narrow_by_width > 0  # some item's rows depend on the sub-tile width: that sharing is tested
