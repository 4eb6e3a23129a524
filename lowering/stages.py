"""The passes that take a fused module to a finished npu module, as lists.

`ge-lower-to-npu` (`pipelines.py`) runs them, and so do the tuning passes
(`fused_to_npu/simulated_tuning.py`), which compile every candidate with the
rest of the lowering. The lists live here, below both, so that the tuning
passes read them without importing the pipeline that runs the tuning passes.
"""

from __future__ import annotations

from xdsl.passes import ModulePass

from ..transforms.npu.double_buffer import DoubleBufferPass
from ..transforms.npu.insert_sync import InsertSyncPass
from ..transforms.npu.plan_local_memory import PlanLocalMemoryPass
from ..transforms.npu.prefetch_constants import PrefetchConstantsPass
from .fused_to_npu.convert import ToNpuPass
from .fused_to_npu.depthwise_mean import DepthwiseMeanPass
from .fused_to_npu.fuse_separable import DepthwisePointwisePass
from .fused_to_npu.materialize_broadcasts import MaterializeBroadcastsPass
from .fused_to_npu.setup_groups import SetupGroupsPass
from .fused_to_npu.share_cores import ShareCoresPass
from .fused_to_npu.split_k import SplitKPass
from .fused_to_npu.split_k_conv import SplitKConvPass
from .fused_to_npu.split_norm import SplitMatmulNormPass
from .fused_to_npu.split_pool import SplitPoolPass
from .fused_to_npu.stage_conv_input import StageConvInputPass
from .fused_to_npu.ungroup import UngroupPass
from .plan.memory import PlanGmPass
from .plan.merge_launches import MergeLaunchesPass
from .plan.narrow_sync import NarrowSyncPass
from .plan.streams import AssignStreamsPass


def form_stages(hw: str, debug: bool, merge: bool) -> list[ModulePass]:
    """Each fused op in the form its kernels take: split normalised products,
    split-K products and 1x1 convolutions, depthwise convolutions joined to a 1x1 convolution beside them, groups that cannot be one kernel ungrouped, max pools whose
    window has no kernel split into rows and columns, pools of a depthwise
    convolution's output computed by its kernel, vector groups read whole by
    one other group computed as its setup, broadcasts materialised
    where a kernel cannot read them, independent products paired on half the
    cores each where one shared phase is faster."""
    return [
        SplitMatmulNormPass(hw=hw, debug=debug, merge=merge),
        SplitKPass(hw=hw, debug=debug, merge=merge),
        StageConvInputPass(hw=hw, debug=debug, merge=merge),
        DepthwisePointwisePass(hw=hw, debug=debug, merge=merge),
        SplitKConvPass(hw=hw, debug=debug, merge=merge),
        UngroupPass(hw=hw, debug=debug),
        SplitPoolPass(hw=hw),
        DepthwiseMeanPass(hw=hw, debug=debug, merge=merge),
        SetupGroupsPass(hw=hw, debug=debug, merge=merge),
        MaterializeBroadcastsPass(hw=hw),
        ShareCoresPass(hw=hw, debug=debug, merge=merge),
    ]


def kernel_stages(
    hw: str, debug: bool, reuse: bool, streams: int, double_buffer: bool, merge: bool
) -> list[ModulePass]:
    """From the fused graph in kernel forms to the finished npu module: kernels,
    double buffering, local memory, synchronisation, streams, GM planning, and
    (with `merge`) merged launches with their constants prefetched, and the
    barriers no block needs (each reads only what its own block wrote since
    the last barrier kept) turned into flags nobody waits for
    (`npu-narrow-sync{widest=0}`: a wait for other blocks costs the barrier's
    flag round trip, so only waits for nobody are sure to gain)."""
    return [
        ToNpuPass(hw=hw, debug=debug, merge=merge),
        DoubleBufferPass(enable=double_buffer, hw=hw),
        PlanLocalMemoryPass(hw=hw),
        InsertSyncPass(hw=hw),
        AssignStreamsPass(streams=streams, hw=hw, merge=merge, debug=debug),
        PlanGmPass(hw=hw, reuse=reuse),
        *([MergeLaunchesPass(hw=hw), PrefetchConstantsPass(hw=hw), NarrowSyncPass(hw=hw, widest=0)] if merge else []),
    ]
