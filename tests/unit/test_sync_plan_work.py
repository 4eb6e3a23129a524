"""The shortcuts that keep `npu-insert-sync`'s planning proportional to the work
give the plan of the straightforward clocks: a pipe learning the scalar unit's
clock only when it has changed since (`ClockRun._learn_scalar`), the nested
nodes' events made once per level (`LevelPlanner._nested_events`), and runs
that go only as far as the question asked (`ClockRun.reach`). Checked on
random kernels, with and without double buffering (nested loops, tokens,
chains), against the clocks that join the scalar unit's every time, the
events made anew for every schedule and every run made to its end at once."""

from __future__ import annotations

import pytest

from gecomp.transforms.npu import sync_clock, sync_plan
from gecomp.transforms.npu.insert_sync import synchronize
from gecomp.transforms.npu.sync_levels import S
from npu_pass_testing import compiled, kernel_of
from npu_random_kernels import random_kernel


def _straightforward_learn(self, pipe):
    row = self.vc[pipe]
    if pipe != S:
        sync_clock._join(row, self.vc[S])
    return row


def _fresh_events(self):
    gaps = range(self.level.size + 1)
    return [self._after_node(gap) for gap in gaps], [self._before_node(gap) for gap in gaps]


_lazy_init = sync_clock.ClockRun.__init__


def _eager_init(self, *args, **kwargs):
    _lazy_init(self, *args, **kwargs)
    self.complete()


def _synchronised(text: str) -> tuple[str, list]:
    module = compiled(text, "npu-double-buffer{hw=tiny}")
    kernel = kernel_of(module)
    result = synchronize(kernel, 4)
    return str(module), [(str(p.level.block.parent_op().name if p.level.block.parent_op() else ""), p.sync) for p in result.planned]


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("planned", [True, False])
def test_the_planner_shortcuts_give_the_straightforward_plan(seed, planned, monkeypatch):
    text = random_kernel(seed, planned)
    fast = _synchronised(text)
    monkeypatch.setattr(sync_clock.ClockRun, "_learn_scalar", _straightforward_learn)
    monkeypatch.setattr(sync_plan.LevelPlanner, "_nested_events", _fresh_events)
    monkeypatch.setattr(sync_clock.ClockRun, "__init__", _eager_init)
    slow = _synchronised(text)
    assert fast[1], "the kernel needs no flag: nothing is compared"
    assert fast == slow
