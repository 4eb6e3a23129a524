"""`fused-tune-forms`: choose the form of each op that `fused-split-matmul-norm`,
`fused-split-k` or `fused-depthwise-pointwise` (a depthwise convolution with a
1x1 convolution beside it) may rewrite by simulating the best estimated ones
(`simulated_tuning.py`).

Those passes keep an op whole or split it (a matrix product and a norm; a split-K
product in 2, 4 or 8 slices and the kernel adding its partials), by estimates
of each form's kernels. The estimates cannot see how the partials' kernel and
the product share the HBM with their neighbours in a merged kernel: on the BERT
layer the attention output projection is estimated fastest in 2 slices, and runs
faster as a matrix product and a norm. This pass measures the forms:

* the ops are those either pass targets that have several forms whose kernels fit;
* op after op, it compiles the module with each other of the op's `top`
  estimated-fastest forms (the rest of `ge-lower-to-npu` with this pass's
  options, the tilings by estimate), simulates it, and keeps the form if the
  module is faster than with the best found so far, starting from the module as
  given (the estimate's forms, or those an `npu.form` already pins);
* it pins the winners with `npu.form` attributes, which both passes honour (the
  matmul a "split" leaves is then fused-split-k's to split or not, by estimate).

A form changes the kernels, not what the op computes (up to the order of fp32
sums). The pass is not part of `ge-compile{tune=N}`: run after it, the tilings
tuner starts from the forms that are fastest with the estimated tilings, which
need not be the fastest once tilings are tuned (the BERT layer: 40119 cycles
against 40110 with the tilings tuned alone). Tuning both together would tune the
tilings of every form tried.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from ...simulator.hardware import HardwarePreset
from ...simulator.npu.costs import next_kernel_cycles
from .simulated_tuning import Choices, SimulatedTuningPass
from .convert import FORM_PASSES
from .fuse_separable import DepthwisePointwisePass
from .split_k import FORM, FormChoicePass, pin_form, pinned_form


@dataclass(frozen=True)
class TuneFormsPass(SimulatedTuningPass):
    """Pin the form of each op the split passes rewrite to the fastest, simulated, of its `top` best estimated ones."""

    name = "fused-tune-forms"
    subject = "ops"
    choice = "forms"
    attribute = FORM

    def candidates(self, ops: list[Operation], hw: HardwarePreset, module: ModuleOp) -> Choices:
        form_passes: list[FormChoicePass] = [p(hw=self.hw, merge=self.merge) for p in (*FORM_PASSES, DepthwisePointwisePass)]
        next_kernel = next_kernel_cycles(hw, self.merge)
        choices: Choices = []
        for position, op in enumerate(ops):
            chooser = next((p for p in form_passes if p.targets(op)), None)
            if chooser is None:
                continue
            estimates = chooser.estimates(op, hw, next_kernel)
            ranked = sorted((f for f in estimates if math.isfinite(estimates[f])), key=estimates.get)
            if len(ranked) < 2:
                continue
            current = pinned_form(op, estimates) or ranked[0]
            choices.append((position, [f for f in ranked[: self.top] if f != current]))
        return choices

    def pin(self, op: Operation, choice: str) -> None:
        pin_form(op, choice)

    def candidate_stages(self) -> list[ModulePass]:
        return [*self.form_stages(), *self.kernel_stages()]
