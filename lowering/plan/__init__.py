"""The whole-graph execution plan: where GM buffers live, which stream runs what.

* `launches.py`: the host plan as the planners see it (buffers, launches, order);
* `streams.py`: `npu-assign-streams`, streams and events;
* `timing.py`: the estimated time of a host plan, which automatic streams are chosen by;
* `lifetimes.py`: buffer lifetimes under the concurrent schedule, the lower bound;
* `placement.py`: the placement strategies;
* `in_place.py`: outputs written over inputs that die at the same launch;
* `memory.py`: `npu-plan-gm`, the GM arena plan;
* `merge_launches.py`: `npu-merge-launches`, consecutive launches as the phases of one kernel;
* `narrow_sync.py`: `npu-narrow-sync`, each phase's blocks waiting only for the blocks they depend on.
"""

from __future__ import annotations


def stages_before_plan(pipeline) -> list:
    """The leaf passes of a compile pipeline (`ge-compile`, `ge-lower-to-npu`) up to,
    not including, the execution plan: what benchmarks and tests plan several ways."""
    from ...core.passes import PipelinePass
    from .memory import PlanGmPass
    from .merge_launches import MergeLaunchesPass
    from .narrow_sync import NarrowSyncPass
    from .streams import AssignStreamsPass

    stages = []
    for stage in pipeline.stages():
        if isinstance(stage, PipelinePass):
            stages += stages_before_plan(stage)
        elif not isinstance(stage, (AssignStreamsPass, PlanGmPass, MergeLaunchesPass, NarrowSyncPass)):
            stages.append(stage)
    return stages
