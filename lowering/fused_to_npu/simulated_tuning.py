"""Choosing among the lowering's alternatives by simulating them: what
`fused-tune-forms` and `fused-tune-tilings` share.

The lowering makes its choices (an op's form, a kernel's tiling) by closed-form
estimates of one core's pipes. The estimates do not see what the cores do to each
other through the shared HBM, nor how a kernel's head and tail meet its
neighbours' in a merged kernel; the simulator sees both. CANN tunes the same way:
its AOE runs candidates on the device and keeps the fastest.

A tuning pass lists, per op of `@main`, the choices worth trying: the estimate's
`top` best, besides the one the op has now (the estimate's, or one a user pinned
by an attribute). Then, op after op, it compiles the whole module with each of
those choices (and the choices kept so far for earlier ops), simulates it on
random inputs (seed 0), and keeps a choice if the module is faster than the best
so far: coordinate descent, `1 + sum of the choices tried` simulations, one sweep.
It pins the winners as attributes the lowering honours. A candidate that fails to
compile or to simulate is skipped; `debug=true` prints every simulated time, and
the candidates' own pass statistics and IR dumps are kept out of the run's.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from ...core.diagnostics import CompileError, location_of
from ...core.passes import Instrumentation, instrumented, record_statistic, run_pass
from ...dialects import npu
from ...simulator.hardware import HardwarePreset, load_preset
from ...simulator.npu import simulate
from ...core.signature import input_specs, main_function, random_inputs
from ..stages import form_stages, kernel_stages

Choices = list[tuple[int, list[Any]]]
"""(position of an op in `@main`'s body, the choices to try for it), in the order tried."""


@dataclass(frozen=True)
class SimulatedTuningPass(ModulePass):
    """Pin, op after op, the fastest simulated of each op's `top` best estimated choices.
    The options after `top` are those the candidates are compiled with."""

    subject: ClassVar[str]  # what is tuned, for the statistics: "kernels"
    choice: ClassVar[str]  # what is chosen, for the statistics: "tilings"
    attribute: ClassVar[str]  # the attribute that pins a choice, for the notes

    hw: str = "ascend910"
    top: int = 4
    debug: bool = False
    reuse: bool = True
    streams: int = 0
    double_buffer: bool = True
    merge: bool = True

    # ---- what a tuning pass says ------------------------------------------------------------

    def candidates(self, ops: list[Operation], hw: HardwarePreset, module: ModuleOp) -> Choices:
        """Per op with alternatives, those to try besides the one it has now."""
        raise NotImplementedError

    def pin(self, op: Operation, choice: Any) -> None:
        raise NotImplementedError

    def candidate_stages(self) -> list[ModulePass]:
        """The passes that compile a candidate (the rest of the lowering)."""
        raise NotImplementedError

    # ---- the search ---------------------------------------------------------------------------

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.top < 1:
            raise CompileError(f"{self.name}: top must be at least 1, got {self.top}")
        if any(isinstance(inner, npu.KernelOp) for inner in op.ops):
            raise CompileError(f"{self.name}: the module is already lowered to npu kernels; tune it before ge-to-npu")
        hw = load_preset(self.hw)
        main = main_function(op)
        ops = list(main.body.block.ops)
        choices = self.candidates(ops, hw, op)
        record_statistic(self.name, f"{self.subject} tuned", len(choices))
        if not any(trials for _, trials in choices):
            return
        inputs = random_inputs(input_specs(main), 0)
        pins: dict[int, Any] = {}
        best = self._cycles(ctx, op, inputs, pins)
        self._note("module", f"as given: {best} cycles")
        simulations = 1
        for position, trials in choices:
            for choice in trials:
                trial = {**pins, position: choice}
                cycles = self._try(ctx, op, inputs, trial, _describe(ops[position]), choice)
                simulations += 1
                if cycles is not None and cycles < best:
                    best, pins = cycles, trial
        for position, choice in pins.items():
            self.pin(ops[position], choice)
        record_statistic(self.name, f"{self.choice} changed", len(pins))
        record_statistic(self.name, "simulations", simulations)

    def _try(
        self, ctx: Context, module: ModuleOp, inputs, pins: dict[int, Any], target: str, choice: Any
    ) -> int | None:
        """The module's simulated cycles with these pins, or None if it fails."""
        try:
            cycles = self._cycles(ctx, module, inputs, pins)
        except CompileError as e:
            self._note(target, f"{self.attribute} = {choice!r} skipped: {e.message}")
            return None
        self._note(target, f"{self.attribute} = {choice!r}: {cycles} cycles")
        return cycles

    def _cycles(self, ctx: Context, module: ModuleOp, inputs, pins: dict[int, Any]) -> int:
        """Compile a copy of the module with the ops at these positions pinned, and simulate it."""
        copy = module.clone()
        ops = list(main_function(copy).body.block.ops)
        for position, choice in pins.items():
            self.pin(ops[position], choice)
        with instrumented(Instrumentation(verify_each=False)):  # the candidates' statistics and dumps are not the run's
            for stage in self.candidate_stages():
                run_pass(stage, ctx, copy)
        return simulate(copy, inputs, hw=self.hw).report.total_cycles

    def _note(self, subject: str, text: str) -> None:
        if self.debug:
            print(f"[{self.name}] {subject}: {text}", file=sys.stderr)

    def form_stages(self) -> list[ModulePass]:
        """The lowering's form passes with this pass's options (no tuning, no debug
        notes: the candidates' own notes are not the run's)."""
        return form_stages(self.hw, False, self.merge)

    def kernel_stages(self) -> list[ModulePass]:
        """The rest of the lowering after the forms, with this pass's options (no debug notes)."""
        return kernel_stages(self.hw, False, self.reuse, self.streams, self.double_buffer, self.merge)


def _describe(op: Operation) -> str:
    location = location_of(op)
    return f"{op.name} at {location}" if location is not None else op.name
