"""`ge-fuse`: the graph -> fused lowering, pattern fusion then automatic fusion.

Named patterns go first so the subgraphs that have hand-written kernels
(attention, matmul + bias + activation, add + norm, ...) become those kernels;
automatic fusion then groups what is left. Both stages run as their own passes
(`ge-pattern-fuse`, `ge-auto-fuse`), so `--print-ir-after-all`, `--dump-dir` and
`--pass-statistics` show each.

Options: `patterns=false` / `auto=false` skip a stage; `hw` names the hardware
preset whose buffers and costs automatic fusion plans for; `max-size` bounds
the ops per group.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.passes import ModulePass

from ...core.passes import PipelinePass
from ...simulator.hardware import DEFAULT_PRESET
from .auto_fusion import AutoFusePass
from .pattern_fusion import PatternFusePass


@dataclass(frozen=True)
class FusePipelinePass(PipelinePass):
    """Lower ge to fused: named pattern fusion, then automatic fusion (ge-pattern-fuse, ge-auto-fuse)."""

    name = "ge-fuse"

    patterns: bool = True
    auto: bool = True
    hw: str = DEFAULT_PRESET
    max_size: int = 64

    def stages(self) -> list[ModulePass]:
        stages: list[ModulePass] = []
        if self.patterns:
            stages.append(PatternFusePass())
        if self.auto:
            stages.append(AutoFusePass(hw=self.hw, max_size=self.max_size))
        return stages
