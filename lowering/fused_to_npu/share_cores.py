"""`fused-share-cores`: two independent cube products next to each other, each
tiled for half the cores, so that they run side by side in one phase.

Every product is tiled for all the cores, and in a merged kernel each is a phase
of its own: its blocks fill (load their first operands), work, drain, and meet
at the barrier. Two products that do not read each other's results (MMoE's two
task towers, each reading its own gate's mix) could instead run at the same
time on disjoint halves of the cores, as CANN runs independent tasks on the
cores its streams leave free: one phase, one fill, one barrier, each product
twice the work per core. npu-merge-launches puts two launches side by side when
their blocks fit the cores together and they touch no common GM bytes
(`plan/side_by_side.py`); this pass makes products fit.

Chosen by estimate, with the estimates the form choices use (`split_k.estimates`,
the tiling's own, after a barrier when the op has a kernel before it): the pair
is tiled for half the cores when the slower of the two so tiled is faster than
both on all the cores, one after the other, plus the barrier the second phase
pays (`next_kernel_cycles`). Each chosen op carries `npu.cores` (the cores its
tiling may use: `ge-to-npu` tiles it for a preset with that many) and
`npu.shared_phase` (`with_next` on the first, `with_previous` on the second):
the GM plan (`plan/lifetimes.py`) keeps the pair's buffers apart as if the two
ran at once, which they will. Only with `merge` (side by side needs a merged
kernel) and only `fused.matmul_bias_act` (the products the estimate covers).
`debug=true` prints each pair's estimates; `--pass-statistics` counts pairs.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, i64
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from ...core.passes import record_statistic
from ...dialects import fused
from ...simulator.hardware import HardwarePreset, load_preset
from ...simulator.npu.costs import next_kernel_cycles
from ..plan.launches import SHARED_PHASE_ATTR
from .launches import kernel_before, launches_kernel
from .split_k import SplitKPass, debug_line, estimates

CORES_ATTR = "npu.cores"
"""On a fused op: the cores `ge-to-npu` tiles its kernel for (fewer than the preset's)."""


def tiling_cores(op: Operation, hw: HardwarePreset) -> HardwarePreset:
    """The preset `op`'s kernel is tiled for: `hw` with `npu.cores` cores if set."""
    attr = op.attributes.get(CORES_ATTR)
    if not isinstance(attr, IntegerAttr) or attr.value.data >= hw.core_count:
        return hw
    key = (id(hw), max(1, attr.value.data))
    if key not in _FEWER_CORES:  # one preset object per count (kernel keys name it)
        _FEWER_CORES[key] = (hw, dataclasses.replace(hw, core_count=key[1]))
    return _FEWER_CORES[key][1]


_FEWER_CORES: dict[tuple[int, int], tuple[HardwarePreset, HardwarePreset]] = {}


def _estimate(op: fused.MatmulBiasActOp, hw: HardwarePreset) -> float:
    return estimates(op, hw, 0, after_barrier=kernel_before(op))[SplitKPass.whole]


def _reads_results_of(later: Operation, earlier: Operation) -> bool:
    """Whether `later` reads a result of `earlier`, directly or through ops that
    launch nothing (views, aliases) in between."""
    derived: set[SSAValue] = set(earlier.results)
    op = earlier.next_op
    while op is not None and op is not later:
        if any(v in derived for v in op.operands):
            derived.update(op.results)
        op = op.next_op
    return any(v in derived for v in later.operands)


WINDOW = 4
"""How many launches further a product looks for its partner (moved next to it)."""


def _needed_views(op: Operation, after: Operation) -> list[Operation]:
    """The ops between `after` and `op` that launch nothing and whose results `op`
    reads (directly or through each other): they move with it."""
    needed: list[Operation] = []
    wanted = set(op.operands)
    cursor = op.prev_op
    while cursor is not None and cursor is not after:
        if not launches_kernel(cursor) and any(r in wanted for r in cursor.results):
            needed.append(cursor)
            wanted.update(cursor.operands)
        cursor = cursor.prev_op
    return needed[::-1]


@dataclass(frozen=True)
class ShareCoresPass(ModulePass):
    """Pairs of independent, adjacent products tiled for half the cores each where the estimates say one shared phase is faster (module docstring)."""

    name = "fused-share-cores"

    hw: str = "ascend910"
    debug: bool = False
    merge: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not self.merge:
            return
        hw = load_preset(self.hw)
        half = dataclasses.replace(hw, core_count=hw.core_count // 2)
        if half.core_count < 1:
            return
        barrier = next_kernel_cycles(hw, True)
        pairs = 0
        for function in op.walk():
            if isinstance(function, func.FuncOp) and function.body.blocks:
                pairs += self._pair_products(function, hw, half, barrier)
        record_statistic(self.name, "products paired on half the cores", pairs)

    def _pair_products(self, function: func.FuncOp, hw: HardwarePreset, half: HardwarePreset, barrier: float) -> int:
        """Pairs by decreasing gain; each second product moved right after its first."""
        launches = [o for o in function.body.block.ops if launches_kernel(o)]
        cache: dict[tuple[int, int], float] = {}

        def estimate(o: Operation, preset: HardwarePreset) -> float:
            key = (id(o), preset.core_count)
            if key not in cache:
                cache[key] = _estimate(o, preset)
            return cache[key]

        gains = []
        for i, a in enumerate(launches):
            if not isinstance(a, fused.MatmulBiasActOp) or CORES_ATTR in a.attributes:
                continue
            for j in range(i + 1, min(i + 1 + WINDOW, len(launches))):
                b = launches[j]
                if not isinstance(b, fused.MatmulBiasActOp) or CORES_ATTR in b.attributes:
                    continue
                if any(_reads_results_of(b, launches[k]) for k in range(i, j)):
                    continue
                apart = estimate(a, hw) + estimate(b, hw) + barrier
                together = max(estimate(a, half), estimate(b, half))
                if self.debug:
                    debug_line(
                        self.name,
                        f"{a.name} at {a.location} with {b.name} at {b.location}: {apart:.0f} cycles "
                        f"in two phases, {together:.0f} side by side on {half.core_count} cores each",
                    )
                if together < apart:
                    gains.append((apart - together, i, j))
        taken: set[int] = set()
        made = 0
        for _, i, j in sorted(gains, key=lambda g: (-g[0], g[1], g[2])):
            if i in taken or j in taken:
                continue
            taken.update((i, j))
            a, b = launches[i], launches[j]
            block = function.body.block
            for moved in [*_needed_views(b, a), b]:
                moved.detach()
                block.insert_op_after(moved, a)
                a = moved
            for o, mark in ((launches[i], "with_next"), (b, "with_previous")):
                o.attributes[CORES_ATTR] = IntegerAttr(half.core_count, i64)
                o.attributes[SHARED_PHASE_ATTR] = StringAttr(mark)
            made += 1
        return made
