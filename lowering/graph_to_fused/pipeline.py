"""`ge-fuse`: the graph -> fused lowering: pattern fusion, automatic fusion, then
merging the matrix products that share an lhs.

Named patterns go first so the subgraphs that have hand-written kernels
(attention, matmul + bias + activation, add + norm, ...) become those kernels;
automatic fusion then groups what is left (its cube groups reading their ND
operands through the format changes in front of them, `ge-group-read-through`); the products of one lhs left as
kernels of their own then merge into one. Each stage runs as its own pass
(`ge-pattern-fuse`, `ge-auto-fuse`, `ge-merge-matmuls`), so `--print-ir-after-all`, `--dump-dir` and
`--pass-statistics` show each.

Options: `patterns=false` / `auto=false` / `merge-matmuls=false` skip a stage; `hw` names the hardware
preset whose buffers and costs automatic fusion plans for; `max-size` bounds
the ops per group.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.passes import ModulePass

from ...core.passes import PipelinePass
from ...simulator.hardware import DEFAULT_PRESET
from .auto_fusion import AutoFusePass
from .group_reads import GroupReadThroughPass
from .merge_matmuls import MergeMatmulsPass
from .pattern_fusion import PatternFusePass


@dataclass(frozen=True)
class FusePipelinePass(PipelinePass):
    """Lower ge to fused: named pattern fusion, automatic fusion, matmul merging (ge-pattern-fuse, ge-auto-fuse, ge-merge-matmuls)."""

    name = "ge-fuse"

    patterns: bool = True
    auto: bool = True
    merge_matmuls: bool = True
    hw: str = DEFAULT_PRESET
    max_size: int = 64

    def stages(self) -> list[ModulePass]:
        stages: list[ModulePass] = []
        if self.patterns:
            stages.append(PatternFusePass(hw=self.hw))
        if self.auto:
            stages.append(AutoFusePass(hw=self.hw, max_size=self.max_size))
            stages.append(GroupReadThroughPass(hw=self.hw))
        if self.merge_matmuls:
            stages.append(MergeMatmulsPass())
        return stages
