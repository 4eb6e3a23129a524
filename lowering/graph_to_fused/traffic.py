"""The estimate fusion is judged by: kernels launched and bytes moved through
global memory, before and after fusion.

Each top-level compute op of `@main` is one kernel (constants and the return are
not kernels). A kernel reads each distinct operand from global memory once and
writes each result that is used; so an unfused op pays for its inputs and
outputs, and a fused op or group only for its external ones (its intermediates
stay in on-chip buffers). Splat constants inside a group are immediates and cost
nothing. Weights (operands defined by `ge.const`) are counted separately: every
schedule reads them once, so fusion cannot save them.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.traits import IsTerminator

from ...core import dtypes
from ...dialects import ge
from ...core.signature import main_function


@dataclass(frozen=True)
class TrafficEstimate:
    kernels: int
    read_bytes: int
    written_bytes: int
    weight_bytes: int  # the part of read_bytes that reads constants

    @property
    def total_bytes(self) -> int:
        return self.read_bytes + self.written_bytes

    @property
    def activation_bytes(self) -> int:
        """Traffic fusion can change: everything but the weights."""
        return self.total_bytes - self.weight_bytes


def compute_ops(module: ModuleOp) -> list[Operation]:
    """The kernels of `@main`: top-level ops other than constants and the return."""
    block = main_function(module).body.block
    return [op for op in block.ops if not isinstance(op, ge.ConstOp) and not op.has_trait(IsTerminator)]


def estimate(module: ModuleOp) -> TrafficEstimate:
    read = written = weights = 0
    kernels = compute_ops(module)
    for op in kernels:
        for v in dict.fromkeys(op.operands):
            size = dtypes.tensor_bytes(v.type)
            read += size
            if isinstance(v.owner, ge.ConstOp):
                weights += size
        written += sum(dtypes.tensor_bytes(r.type) for r in op.results if r.uses)
    return TrafficEstimate(len(kernels), read, written, weights)
