"""`npu-insert-sync`: the set_flag / wait_flag every kernel needs, and no more.

Kernels are generated without synchronisation. Within one AI core each pipe runs
its instructions in order, but pipes run concurrently: an instruction on one
pipe that touches bytes another pipe wrote (or reads, when it writes them) must
wait for it through a flag. This pass:

1. drops any sync already in the kernel (it owns synchronisation, so running it
   twice gives the same kernel);
2. finds the dependencies: pairs of instructions on different pipes that may
   touch common bytes, one writing, in the same iteration or across iterations
   of every enclosing loop (`sync_levels.py`, `access_conflicts.py`);
3. places flags level by level, each dependency covered directly or through
   other flags, then removes every flag the others make redundant
   (`sync_plan.py`, checked with vector clocks in `sync_clock.py`);
4. emits them and gives them event ids within the preset's `event_ids` per pipe
   pair, a flag that finds no free id becoming a `pipe_barrier ALL`
   (`sync_emit.py`).

Run it after `npu-plan-local-memory` and the dependencies are exact byte ranges
of the planned buffers; before it, buffers the planner may overlap (never live
at the same time) are treated as one, so the kernel stays race-free whatever the
planner does. The simulator's race check (vector clocks, independent of timing)
is the judge: every kernel this pass outputs has no race.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from ...core.diagnostics import op_error
from ...core.passes import record_statistic
from ...dialects import npu
from ...simulator.hardware import load_preset
from .access_conflicts import KernelAccesses, launches_by_kernel
from .buffers import SYNC_OPS
from .sync_emit import EmittedSync, allocate_event_ids, emit_syncs
from .sync_levels import KernelLevels
from .distinct_kernels import transform_kernels
from .sync_plan import PlannedSync, plan_kernel


@dataclass
class KernelSync:
    """What the pass did to one kernel."""

    dependencies: int
    planned: list[PlannedSync]
    emitted: list[EmittedSync]
    barriers: int  # flags that ran out of event ids

    @property
    def sync_ops(self) -> int:
        """set_flag, wait_flag and pipe_barrier ops in the kernel."""
        return sum(len(e.sets) + len(e.waits) for e in self.emitted) + self.barrier_ops

    @property
    def barrier_ops(self) -> int:
        return sum(e.barriers for e in self.emitted)


def strip_syncs(kernel: npu.KernelOp) -> int:
    """Remove every set_flag / wait_flag / pipe_barrier; returns how many."""
    syncs = [op for op in kernel.walk() if isinstance(op, SYNC_OPS)]
    for op in syncs:
        op.detach()
        op.erase()
    return len(syncs)


def plan_syncs(kernel: npu.KernelOp, event_ids: int = 4, launches: list | None = None) -> tuple[KernelLevels, list[PlannedSync]]:
    """The kernel's levels and the flags they need (the kernel must hold no sync);
    `launches`: the kernel's launches if known (`KernelAccesses`)."""
    levels = KernelLevels(kernel, KernelAccesses(kernel, launches=launches))
    return levels, plan_kernel(levels, event_ids)


def synchronize(
    kernel: npu.KernelOp, event_ids: int, leave_out: Collection[int] = (), launches: list | None = None
) -> KernelSync:
    """Replace the kernel's sync by what its dependencies need. `leave_out` drops
    planned flags by index: how tests show that each flag is needed."""
    strip_syncs(kernel)
    levels, planned = plan_syncs(kernel, event_ids, launches)
    kept = [p for i, p in enumerate(planned) if i not in leave_out]
    emitted = emit_syncs(levels, kept)
    demoted = allocate_event_ids(kernel, emitted, event_ids)
    dependencies = sum(len(level.dependencies) for level in levels.levels.values())
    return KernelSync(dependencies, kept, emitted, len(demoted))


def refuse_merged(kernel: npu.KernelOp) -> None:
    """The dependency analysis sees one phase of pipes; kernels joined by
    npu-merge-launches are synchronised phase by phase before they are joined."""
    for op in kernel.entry.ops:
        if isinstance(op, npu.KernelBarrierOp):
            raise op_error(
                op,
                f"npu-insert-sync cannot synchronise @{kernel.sym_name.data}: its phases are joined by {op.name} "
                f"(run npu-insert-sync before npu-merge-launches)",
            )


@dataclass(frozen=True)
class InsertSyncPass(ModulePass):
    """Insert the set_flag / wait_flag (pipe_barrier when event ids run out) that the cross-pipe dependencies of every kernel need, none redundant."""

    name = "npu-insert-sync"

    hw: str = "ascend910"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        event_ids = load_preset(self.hw).event_ids
        launches = launches_by_kernel(op)  # the host code is not changed here: one walk of it

        def sync(kernel: npu.KernelOp) -> KernelSync:
            refuse_merged(kernel)
            return synchronize(kernel, event_ids, launches=launches.get(kernel.sym_name.data, []))

        for result in transform_kernels(op, sync):  # once per distinct kernel
            record_statistic(self.name, "dependencies", result.dependencies)
            record_statistic(self.name, "flags", len(result.emitted) - result.barriers)
            record_statistic(self.name, "barriers for lack of event ids", result.barriers)
            record_statistic(self.name, "sync ops", result.sync_ops)
