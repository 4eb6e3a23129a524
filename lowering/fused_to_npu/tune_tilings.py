"""`fused-tune-tilings`: choose each cube kernel's tiling by simulating the best
estimated ones (`simulated_tuning.py`).

The tiler ranks the tilings that fit by a closed-form estimate of their time
(`lowering/tiling.py`). The estimate follows one core's pipes; it does not see
what the cores do to each other through the shared HBM (a tiling that stages its
whole A panel with a core's first item has every core ask the HBM for its
weights at once, later), nor how a kernel's head and tail meet its neighbours'
in a merged kernel. This pass measures them on the simulator:

* the ops are those whose kernels choose among several tilings (the cube
  kernels), found by lowering a copy of the module;
* a candidate is one of the op's `top` estimated-fastest tilings, compiled with
  the rest of `ge-lower-to-npu` (this pass's options);
* the winners are pinned as `npu.tiling_rank` (the tiling's place in the
  estimate's ranking), which `ge-to-npu` honours.

Tilings change the time, never the numbers a kernel computes (up to the order
of fp32 accumulation). `ge-compile{tune=N}` and `ge-lower-to-npu{tune=N}` run
this pass with `top=N` just before `ge-to-npu`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from ...simulator.hardware import HardwarePreset
from .convert import tiling_choices
from .simulated_tuning import Choices, SimulatedTuningPass
from .templates.cube_kernel import TILING_RANK, pin_rank, pinned_rank


@dataclass(frozen=True)
class TuneTilingsPass(SimulatedTuningPass):
    """Pin each cube kernel's tiling to the fastest, simulated, of its `top` best estimated ones."""

    name = "fused-tune-tilings"
    subject = "kernels"
    choice = "tilings"
    attribute = TILING_RANK

    def candidates(self, ops: list[Operation], hw: HardwarePreset, module: ModuleOp) -> Choices:
        return [
            (position, [r for r in range(min(self.top, count)) if r != pinned_rank(ops[position])])
            for position, count in tiling_choices(module, hw, self.merge)
        ]

    def pin(self, op: Operation, choice: int) -> None:
        pin_rank(op, choice)

    def candidate_stages(self) -> list[ModulePass]:
        return self.kernel_stages()
