"""The cube tiling search remembers what fits for a shape and its operands' costs
(`tiling._FITS`) and shares it between the search with and without the first
chunk of B prefetched: fusion's scratch build asks one, the merged kernel's phase
the other. Sharing must give exactly the tiling and count each search finds
from scratch, whichever is asked first."""

from __future__ import annotations

import pytest

from gecomp.core import memo
from gecomp.lowering import tiling
from gecomp.lowering.tiling import EpilogueCost, GemmShape, best_cube_tiling, fitting_cube_tilings
from gecomp.simulator.hardware import load_preset


class KeyedOperand:
    """A row-major operand whose costs depend on `scale` alone (its `cost_key`), so
    the search may be memoised."""

    def __init__(self, scale: int) -> None:
        self.scale = scale
        self.cost_key = ("keyed", scale)

    def l1_elements(self, rows, cols):
        return rows * -(-cols // 16) * 16

    def stage_cycles(self, hw, rows, cols):
        return 200 + self.scale * rows * cols * 2 // 73 + rows

    def load_cycles(self, hw, space, rows, cols):
        return 20 + rows * cols * 2 // 128


EPILOGUE = EpilogueCost(8, ub_fixed_bytes=128, copies=4)
SHAPES = [GemmShape(1, 128, 768, 768), GemmShape(1, 3136, 256, 64), GemmShape(1, 784, 128, 1152), GemmShape(1, 49, 2048, 512),
          GemmShape(3, 100, 300, 1000, 2)]


def _fresh(preset, shape, a, bs, prefetched):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(memo.ENV, "0")
        return best_cube_tiling(preset, shape, a, bs, EPILOGUE, prefetched), \
            fitting_cube_tilings(preset, shape, a, bs, EPILOGUE, prefetched)


@pytest.mark.parametrize("first", [False, True])
@pytest.mark.parametrize("hw", ["tiny", "ascend910"])
def test_prefetched_and_plain_searches_share_what_fits_exactly(hw, first):
    preset = load_preset(hw)
    for shape in SHAPES:
        a, bs = KeyedOperand(1), [KeyedOperand(2)] * shape.products
        for memo_ in (tiling._FITS, tiling._BESTS, tiling._SEARCHES):
            memo_.clear()
        estimates = {}
        for prefetched in (first, not first):
            try:
                want_best, want_all = _fresh(preset, shape, a, bs, prefetched)
            except ValueError:
                with pytest.raises(ValueError, match="no tiling"):
                    best_cube_tiling(preset, shape, a, bs, EPILOGUE, prefetched)
                continue
            hits = tiling._FITS.hits
            assert best_cube_tiling(preset, shape, a, bs, EPILOGUE, prefetched) == want_best
            assert fitting_cube_tilings(preset, shape, a, bs, EPILOGUE, prefetched) == want_all
            assert tiling._FITS.hits > hits  # the second search at least reused the first's fits
            estimates[prefetched] = [t.estimate for t in want_all]
        if shape == SHAPES[0] and hw == "ascend910":  # prefetching changes estimates: the sharing is tested
            assert estimates[True] != estimates[False]
