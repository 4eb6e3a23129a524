"""`fused-tune-tilings`: choose each cube kernel's tiling by simulating the best
estimated ones.

The tiler ranks the tilings that fit by a closed-form estimate of their time
(`lowering/tiling.py`). The estimate follows one core's pipes; it does not see
what the cores do to each other through the shared HBM (a tiling that stages its
whole A panel with a core's first item has every core ask the HBM for its
weights at once, later), nor how a kernel's head and tail meet its neighbours'
in a merged kernel. The simulator sees both. CANN tunes tilings the same way:
its AOE runs candidates on the device and keeps the fastest. This pass runs them
on the simulator:

* it lowers a copy of the module to find the ops whose kernels choose among
  several tilings (the cube kernels);
* op after op, it compiles the module with each other of that op's `top`
  estimated-fastest tilings (the rest of `ge-lower-to-npu` with this pass's
  options), simulates it on random inputs, and keeps the tiling if the whole
  module is faster than with the best found so far: `1 + sum(min(top, tilings)
  - 1)` simulations in all, starting from the module as given (the
  estimated-fastest tilings, or those a `npu.tiling_rank` already pins);
* it pins the winners with `npu.tiling_rank` attributes, which `ge-to-npu` honours.

Tilings change the time, never the numbers a kernel computes (up to the order
of fp32 accumulation). A candidate that fails to compile or to simulate is
skipped. `debug=true` prints every simulated time. `ge-compile{tune=N}` and
`ge-lower-to-npu{tune=N}` run this pass with `top=N` just before `ge-to-npu`.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from ...core.diagnostics import CompileError, location_of
from ...core.passes import Instrumentation, instrumented, record_statistic, run_pass
from ...simulator.hardware import load_preset
from ...simulator.npu import simulate
from ...simulator.signature import input_specs, main_function, random_inputs
from .convert import tiling_choices
from .templates.cube_kernel import TILING_RANK, pin_rank, pinned_rank


@dataclass(frozen=True)
class TuneTilingsPass(ModulePass):
    """Pin each cube kernel's tiling to the fastest, simulated, of its `top` best estimated ones."""

    name = "fused-tune-tilings"

    hw: str = "ascend910"
    top: int = 4
    debug: bool = False
    reuse: bool = True
    streams: int = 0
    double_buffer: bool = True
    merge: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.top < 1:
            raise CompileError(f"{self.name}: top must be at least 1, got {self.top}")
        hw = load_preset(self.hw)
        main = main_function(op)
        ops = list(main.body.block.ops)
        choices = [
            (position, [r for r in range(min(self.top, count)) if r != pinned_rank(ops[position])])
            for position, count in tiling_choices(op, hw)
        ]
        record_statistic(self.name, "kernels tuned", len(choices))
        if not any(trials for _, trials in choices):
            return
        inputs = random_inputs(input_specs(main), 0)
        ranks: dict[int, int] = {}
        best = self._cycles(ctx, op, inputs, ranks)
        self._note("module", f"as given: {best} cycles")
        simulations = 1
        for position, trials in choices:
            for rank in trials:
                trial = {**ranks, position: rank}
                cycles = self._try(ctx, op, inputs, trial, _describe(ops[position]), rank)
                simulations += 1
                if cycles is not None and cycles < best:
                    best, ranks = cycles, trial
        for position, rank in ranks.items():
            pin_rank(ops[position], rank)
        record_statistic(self.name, "tilings changed", len(ranks))
        record_statistic(self.name, "simulations", simulations)

    def _try(self, ctx: Context, module: ModuleOp, inputs, ranks: dict[int, int], target: str, rank: int) -> int | None:
        """The module's simulated cycles with these ranks, or None if it fails."""
        try:
            cycles = self._cycles(ctx, module, inputs, ranks)
        except CompileError as e:
            self._note(target, f"{TILING_RANK} = {rank} skipped: {e.message}")
            return None
        self._note(target, f"{TILING_RANK} = {rank}: {cycles} cycles")
        return cycles

    def _cycles(self, ctx: Context, module: ModuleOp, inputs, ranks: dict[int, int]) -> int:
        """Compile a copy of the module with the ops at these positions pinned to
        these ranks, and simulate it."""
        from ..pipelines import LowerToNpuPipeline  # which runs this pass: imported here, not at the top

        copy = module.clone()
        ops = list(main_function(copy).body.block.ops)
        for position, rank in ranks.items():
            pin_rank(ops[position], rank)
        lowering = LowerToNpuPipeline(
            hw=self.hw, reuse=self.reuse, streams=self.streams, double_buffer=self.double_buffer, merge=self.merge
        )
        with instrumented(Instrumentation(verify_each=False)):  # the trials' own statistics and dumps are not the run's
            for stage in lowering.kernel_stages():
                run_pass(stage, ctx, copy)
        return simulate(copy, inputs, hw=self.hw).report.total_cycles

    def _note(self, subject: str, text: str) -> None:
        if self.debug:
            print(f"[{self.name}] {subject}: {text}", file=sys.stderr)


def _describe(op) -> str:
    location = location_of(op)
    return f"{op.name} at {location}" if location is not None else op.name

