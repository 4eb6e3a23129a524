"""The cycle-approximate NPU simulator: runs an `npu`-level module, computing the
results with numpy and the time they take on a hardware preset.

    from gecomp.simulator.npu import simulate
    result = simulate(module, inputs, hw="tiny")      # result.outputs, result.report

How it is built (one concept per file):

* `plan.py`: the host plan: GM memory, launches, streams and events; the plan's
  own checks (cross-stream races, GM arena reuse while live);
* `program.py`: a kernel decoded once into closures (`scalar.py` for arith/scf,
  `instructions.py` for npu instructions); static checks (capacity, alignment,
  event ids);
* `core.py`: one core running one block: in-order pipes fed by the scalar unit,
  flags, deadlock detection;
* `lockstep.py`: the blocks of a launch simulated side by side, so that the
  cores meet the shared HBM and L2 in cycle order;
* `hazards.py`: race detection with vector clocks over the pipes;
  `segments.py`: the accesses between barriers of every pipe checked at the
  barrier, once per distinct segment of the launch's blocks;
* `costs.py`: the cost model in closed form; `hbm.py`: the HBM all cores share;
  `l2.py`: the L2 cache in front of it (presets with an `[l2]` table);
* `report.py`: `--report` text, `--json`, `--trace`; `anatomy.py`: a traced
  phase split into fill, work, drain, spread and barrier (bench/phase_anatomy.py).

Every error in the program (out of bounds, misaligned, over capacity, race,
deadlock, unbalanced flags, event id beyond the preset, GM buffers overlapping
while live) is a `CompileError` located at the instruction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from ...core.collector import cyclic_gc_paused  # ResNet-50's simulation 15.2 -> 10.4 CPU s with it
from ...core.diagnostics import CompileError
from ..hardware import HardwarePreset, load_preset
from ...core.signature import input_specs, is_npu_host, main_function
from .blas import single_threaded_blas
from .approx import WeightedMemory
from .l2 import GlobalMemory
from .plan import HostPlan, run_plan
from .report import KernelRecord, SimulationReport, planned_arena


@dataclass
class Simulation:
    outputs: list[np.ndarray]
    report: SimulationReport


def simulate(
    module: ModuleOp,
    inputs: Sequence[np.ndarray],
    hw: HardwarePreset | str | None = None,
    trace: bool = False,
    check_races: bool = True,
    after_launch=None,
    shortcuts: bool = True,
    approx: bool = False,
) -> Simulation:
    """Run `module`'s `@main` host plan on positional `inputs` (the non-output arguments).
    `after_launch(launch)`, if given, sees each launch (`plan.Launch`) once it has run,
    its GM buffers holding what it wrote (`--compare-each` snapshots them).
    `check_races=False` (`ge-sim --no-race-check`) skips the race checker (2% of
    ResNet-50's simulation since segments already checked are not checked again,
    `segments.py`); the report says so, cycles and outputs are the same.
    `shortcuts=False` is the full simulation (`ge-sim --exact`): every fast path off,
    the same cycles, outputs and errors, slower; tests/unit/test_sim_shortcuts.py
    compares the two.
    `approx=True` is the approximate simulation (`ge-sim --approx`, `approx.py`): the
    same outputs and instruction count, cycles from a few timed blocks per launch
    (not the simulation's: an error the report and the benches state), faster."""
    preset = hw if isinstance(hw, HardwarePreset) else load_preset(hw)
    single_threaded_blas()
    main = main_function(module)
    if not is_npu_host(main):
        raise CompileError("@main is not an npu host plan (its arguments must be GM memrefs)", main)
    specs = input_specs(main)
    if len(inputs) != len(specs):
        raise CompileError(f"@main takes {len(specs)} inputs, got {len(inputs)}", main)
    if approx and trace:
        raise CompileError("a trace (--trace, --plot-timeline) needs every block's timing: drop --approx")
    memory = WeightedMemory(preset) if approx else GlobalMemory(preset)
    with cyclic_gc_paused():  # decoding allocates closures by the hundred thousand too
        plan = HostPlan(module, main, preset, memory, shortcuts, approx)
    plan.allocate(list(inputs))
    kernels: list[KernelRecord] = []
    events: list | None = [] if trace else None

    def record(launch, start: int, blocks) -> None:
        program = launch.program
        kernels.append(
            KernelRecord.of(
                preset, program.name, launch.stream, launch.block_dim, start, blocks, program.op.phase_names(),
                program.op.sources(),
            )
        )
        if events is not None:
            events.extend((core_id, *event) for core_id, _, _, core in blocks for event in core.trace)
        if after_launch is not None:
            after_launch(launch)

    with np.errstate(all="ignore"), cyclic_gc_paused():
        total = run_plan(plan, check_races, trace, record)
    timeline = memory.bandwidth_timeline() if trace else None
    report = SimulationReport(
        preset, total, kernels, plan.peak_gm_bytes, plan.arena_bytes, events, timeline, **planned_arena(module),
        races_checked=check_races, approximate=plan.tally if approx else None,
    )
    return Simulation(plan.outputs(), report)
