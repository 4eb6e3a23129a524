"""The compilation pipelines: `ge-lower-to-npu` (fused graph -> runnable npu module)
and `ge-compile` (graph -> runnable npu module, every level)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.passes import ModulePass

from ..core.passes import PipelinePass
from ..transforms.npu.plan_local_memory import PlanLocalMemoryPass
from ..transforms.npu.serialize import SerializePass
from .fused_to_npu.convert import ToNpuPass
from .plan.memory import PlanGmPass


@dataclass(frozen=True)
class LowerToNpuPipeline(PipelinePass):
    """Kernels and host plan, then synchronisation and memory planning (ge/fused -> npu)."""

    name = "ge-lower-to-npu"

    hw: str = "ascend910"
    debug: bool = False

    def stages(self) -> list[ModulePass]:
        return [
            ToNpuPass(hw=self.hw, debug=self.debug),
            SerializePass(),
            PlanLocalMemoryPass(hw=self.hw),
            PlanGmPass(hw=self.hw),
        ]


@dataclass(frozen=True)
class CompilePipeline(PipelinePass):
    """The whole compiler: graph optimisation, fusion, lowering to NPU instructions."""

    name = "ge-compile"

    fuse: bool = True
    hw: str = "ascend910"
    debug: bool = False

    def stages(self) -> list[ModulePass]:
        from ..core.passes import available_passes

        passes = available_passes()
        stages: list[ModulePass] = [passes["ge-graph-opt"]()()]
        if self.fuse:
            stages.append(passes["ge-fuse"]()(hw=self.hw))
        stages.append(LowerToNpuPipeline(hw=self.hw, debug=self.debug))
        return stages
