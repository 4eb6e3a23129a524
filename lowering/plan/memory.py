"""`npu-plan-gm`: byte offsets of the host plan's intermediate GM buffers in one
arena, reusing the bytes of buffers that are no longer live.

Steps (GE's memory reuse, seed 000/001: tensors whose lifetimes do not overlap
share memory):

1. in-place reuse (`in_place.py`): an output takes over the bytes of an input
   that dies at the same launch when the kernel is proven to allow it; the
   output becomes an `npu.gm_view` of the input, one buffer from then on;
2. lifetimes under the concurrent schedule (`lifetimes.py`): buffers conflict
   unless every use of one is ordered (stream order, events) before every use
   of the other, so planning stays correct whatever the streams do;
3. placement (`placement.py`): greedy by size, best fit in lifetime order,
   greedy by breadth, or the hybrid keeping the smallest (the default).

Only arena buffers move: @main's inputs and outputs and the constants are
memory of their own, never overwritten while live. Without reuse
(`reuse=false`, eager mode) every buffer gets bytes of its own, one after
another: the baseline reuse is measured against.

The module records the arena size (`npu.gm_arena_bytes`), its lower bound (the
most bytes live at once) and its size without reuse; `--pass-statistics`
shows them with the whole GM (arena + inputs, outputs and constants, as the
simulator counts its peak): `peak_gm_bytes`, `gm_lower_bound_bytes`,
`gm_no_reuse_bytes`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.passes import ModulePass

from ...core.diagnostics import CompileError
from ...core.passes import record_statistic
from ...dialects import npu
from ...dialects.ge.base import Kind, to_attribute
from ...dialects.npu.host import ARENA_LOWER_BOUND_ATTR, ARENA_NO_REUSE_ATTR
from ...simulator.hardware import load_preset
from .in_place import apply_in_place, in_place_candidates
from .launches import HostPlanModel, hoist_definitions
from .lifetimes import GM_BUFFER_ALIGNMENT, aligned, arena_lifetimes, conflict_sets, lower_bound
from .placement import STRATEGIES, Placement, place, sequential


@dataclass(frozen=True)
class GmPlan:
    """What the planner decided, for statistics and benchmarks."""

    placement: Placement
    arena_bytes: int
    lower_bound_bytes: int
    no_reuse_bytes: int
    fixed_bytes: int  # inputs, outputs and constants
    in_place: int


@dataclass(frozen=True)
class PlanGmPass(ModulePass):
    """Place the host plan's GM intermediates in one arena, reusing dead buffers' bytes."""

    name = "npu-plan-gm"

    hw: str = "ascend910"
    reuse: bool = True
    strategy: str = "hybrid"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.strategy not in STRATEGIES:
            raise CompileError(f"npu-plan-gm: unknown strategy '{self.strategy}' (one of {', '.join(STRATEGIES)})")
        result = plan_gm(op, self.hw, self.reuse, self.strategy)
        for counter, amount in (
            ("buffers placed", len(result.placement.offsets)),
            ("in-place reuses", result.in_place),
            ("arena bytes", result.arena_bytes),
            ("peak_gm_bytes", result.arena_bytes + result.fixed_bytes),
            ("gm_lower_bound_bytes", result.lower_bound_bytes + result.fixed_bytes),
            ("gm_no_reuse_bytes", result.no_reuse_bytes + result.fixed_bytes),
        ):
            record_statistic(self.name, counter, amount)


def plan_gm(module: ModuleOp, hw: str, reuse: bool, strategy: str = "hybrid") -> GmPlan:
    """Plan the arena of `module` in place (offsets and module attributes)."""
    preset = load_preset(hw)
    alignment = max(GM_BUFFER_ALIGNMENT, preset.alignment["gm"])
    plan = HostPlanModel(module)
    no_reuse = sum(aligned(b.nbytes, alignment) for b in plan.buffers if b.in_arena)
    fixed = sum(b.nbytes for b in plan.buffers if not b.in_arena)
    in_place = []
    if reuse:
        in_place = in_place_candidates(plan, preset)
        if in_place:
            apply_in_place(plan, in_place)
            hoist_definitions(plan.block)
            plan = HostPlanModel(module)
    lifetimes = arena_lifetimes(plan, alignment)
    placement = place(lifetimes, conflict_sets(lifetimes), strategy) if reuse else sequential(lifetimes)
    arena = placement.size
    placed = {life.buffer: offset for life, offset in zip(lifetimes, placement.offsets)}
    for buffer in plan.buffers:
        if not buffer.in_arena:
            continue
        if buffer not in placed:  # never used: anywhere will do
            placed[buffer] = 0 if reuse else arena
            arena = max(arena, placed[buffer] + aligned(buffer.nbytes, alignment))
        buffer.value.owner.properties["offset"] = to_attribute(Kind.INT, placed[buffer])
    bound = lower_bound(lifetimes)
    module.attributes[npu.ARENA_ATTR] = IntegerAttr(arena, i64)
    module.attributes[ARENA_LOWER_BOUND_ATTR] = IntegerAttr(bound, i64)
    module.attributes[ARENA_NO_REUSE_ATTR] = IntegerAttr(no_reuse, i64)
    return GmPlan(placement, arena, bound, no_reuse, fixed, len(in_place))
