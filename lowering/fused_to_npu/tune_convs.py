"""`fused-tune-convs`: choose each convolution's implementation by simulating the
best estimated ones (`simulated_tuning.py`).

`templates/conv_select.py` keeps the implementation (depthwise on the vector
unit, 1x1 as a GEMM, img2col) of least estimated cycles. The estimates are
closed forms of one kernel; this pass measures the module:

* the ops are the convolutions of `@main` with two or more legal
  implementations (each implementation's plan, the predicate the chooser and the
  builder share, built on a scratch kernel);
* a candidate is one of the op's `top` estimated-fastest implementations,
  compiled with the rest of `ge-lower-to-npu` (this pass's options);
* the winners are pinned as `npu.conv_algorithm`, which `ge-to-npu` honours.

`ge-compile{tune=N}` and `ge-lower-to-npu{tune=N}` run it with `top=N` before
`fused-tune-tilings` (the tilings are then tuned for the implementations kept).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from ...dialects import fused, ge
from ...simulator.hardware import HardwarePreset
from .kernel_exists import scratch_context
from .simulated_tuning import Choices, SimulatedTuningPass
from .templates.conv import conv_case
from .templates.conv_select import CONV_ALGORITHM, conv_plans, pin_algorithm, pinned_algorithm, ranked


def ranked_algorithms(op: Operation, hw: HardwarePreset) -> list[str]:
    """The convolution's legal implementations, estimated-fastest first."""
    return [plan.name for plan in ranked(conv_plans(conv_case(op, scratch_context(op, hw))))]


@dataclass(frozen=True)
class TuneConvsPass(SimulatedTuningPass):
    """Pin each convolution's implementation to the fastest, simulated, of its `top` best estimated ones."""

    name = "fused-tune-convs"
    subject = "convolutions"
    choice = "algorithms"
    attribute = CONV_ALGORITHM

    def candidates(self, ops: list[Operation], hw: HardwarePreset, module: ModuleOp) -> Choices:
        choices: Choices = []
        for position, op in enumerate(ops):
            if not isinstance(op, ge.Conv2DOp | fused.Conv2DBiasActOp):
                continue
            names = ranked_algorithms(op, hw)
            if len(names) < 2:
                continue
            current = pinned_algorithm(op) or names[0]
            choices.append((position, [n for n in names[: self.top] if n != current]))
        return choices

    def pin(self, op: Operation, choice: str) -> None:
        pin_algorithm(op, choice)

    def candidate_stages(self) -> list[ModulePass]:
        return self.kernel_stages()
