"""The estimated time of a host plan: what the stream assignment weighs its
candidates by.

Streams pay off only where launches of different streams really run side by
side, and they cost what merging would have saved: `npu-merge-launches` joins
only launches that stand next to each other on one stream, so a plan that
spreads its launches over several streams (issued by depth, interleaved) keeps
a task dispatch (`launch.kernel_launch_us`, 3000 cycles on the 910) per launch,
where one stream pays one dispatch and a barrier (a few hundred cycles) per
launch after the first. When every launch fills the cores (MMoE's matrix
products each take 32 blocks), kernels on other streams only wait for cores,
and the dispatches of a chain of dependent launches add up on its critical
path: the streams plan ends slower than one stream.

So the decision is made on one figure, `estimated_cycles`, the host plan as it
will run: the launches in host order, the runs `npu-merge-launches` will join
(`mergeable_runs`, the pass's own rule) as one launch whose phases meet at a
barrier (`next_kernel_cycles`), events between streams, and the simulator's
timing rule (simulator/npu/plan.py): a launch starts its dispatch after its
stream is ready, its blocks go to the cores that become free first, its stream
is ready again when its last block ends. A block's duration is estimated from
its kernel's instructions (`pipe_work`: the busiest pipe, loops of constant
bounds counted in full), at least the launch's compulsory GM bytes at the HBM's
bandwidth shared by its blocks.
"""

from __future__ import annotations

import heapq
from collections import defaultdict

from ...dialects import npu
from ...simulator.hardware import HardwarePreset
from ...simulator.npu.costs import next_kernel_cycles
from ...transforms.npu.prefetch_constants import pipe_work
from .launches import DEFINITIONS, HostPlanModel
from .merge_launches import launch_block_dim, mergeable_runs


class PlanTimer:
    """Estimates the cycles of a module's host plan; kernels' block estimates are kept
    between calls, so candidate plans of one module are weighed cheaply."""

    def __init__(self, hw: HardwarePreset, merge: bool):
        self.hw = hw
        self.merge = merge
        self._work: dict[str, float] = {}

    def block_cycles(self, plan: HostPlanModel, launch: npu.LaunchOp) -> float:
        """One block of `launch`: its kernel's busiest pipe, at least its share of the
        launch's compulsory GM traffic at the HBM bandwidth."""
        kernel = launch.kernel_op()
        name = kernel.sym_name.data
        if name not in self._work:
            self._work[name] = max(pipe_work(kernel.entry.ops, self.hw).values(), default=0)
        model = plan.launch_of(launch)
        gm_bytes = sum(buffer.nbytes for buffer in model.buffers)
        return max(self._work[name], gm_bytes / self.hw.hbm_bytes_per_cycle)

    def estimated_cycles(self, plan: HostPlanModel) -> float:
        """The plan's end, as the simulator would time it with estimated blocks."""
        hw = self.hw
        block = plan.block
        runs = mergeable_runs(block, hw.core_count) if self.merge else []
        run_of = {launch: run for run in runs for launch in run}
        barrier = next_kernel_cycles(hw, merged=True)
        cores = [(0.0, c) for c in range(hw.core_count)]
        ready: dict[int, float] = defaultdict(float)
        reached: dict[int, float] = {}
        for op in block.ops:
            if isinstance(op, DEFINITIONS):
                continue
            if isinstance(op, npu.RecordEventOp):
                a = op.attr_values()
                reached[a.event] = ready[a.stream]
            elif isinstance(op, npu.WaitEventOp):
                a = op.attr_values()
                ready[a.stream] = max(ready[a.stream], reached.get(a.event, 0.0))
            elif isinstance(op, npu.LaunchOp):
                run = run_of.get(op, [op])
                if op is not run[0]:
                    continue  # timed with the first launch of its run
                phases = [self.block_cycles(plan, launch) for launch in run]
                duration = sum(phases) + barrier * (len(run) - 1)
                blocks = max(launch_block_dim(launch) for launch in run)
                stream = op.attr_values().stream
                ready[stream] = _place(cores, ready[stream] + hw.kernel_launch_cycles, blocks, duration)
        return max(ready.values(), default=0.0)


def _place(cores: list[tuple[float, int]], start: float, blocks: int, duration: float) -> float:
    """Run `blocks` blocks of `duration` from `start`, each on the core free first
    (`cores`: a heap of (free cycle, core), updated); returns when the last ends."""
    end = start
    for _ in range(blocks):
        free, core = heapq.heappop(cores)
        finish = max(start, free) + duration
        heapq.heappush(cores, (finish, core))
        end = max(end, finish)
    return end
