"""Running a module at whatever level it is: the reference interpreter for `ge`
and `fused`, the NPU simulator for `npu` (once a module holds npu kernels)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from .limits import check_allocatable
from .reference import run_reference
from ..core.signature import TensorSpec, input_specs, main_function, output_specs


@dataclass
class Execution:
    inputs: list[TensorSpec]
    outputs: list[TensorSpec]
    results: list[np.ndarray]
    level: str
    report: object | None = field(default=None)


def module_level(module: ModuleOp) -> str:
    """The lowest dialect the module uses: 'npu', 'fused' or 'ge'."""
    level = "ge"
    for op in module.walk():
        prefix = op.name.split(".", 1)[0]
        if prefix == "npu":
            return "npu"
        if prefix == "fused":
            level = "fused"
    return level


def execute(
    module: ModuleOp, inputs: Sequence[np.ndarray], hw: str | None = None, trace: bool = False, shortcuts: bool = True,
    check_races: bool = True, approx: bool = False,
) -> Execution:
    """Run @main: the reference interpreter for ge / fused, the NPU simulator for npu
    (then `report` is its `SimulationReport`; `trace` also records the Chrome trace;
    `shortcuts=False` runs the full simulation, as `ge-sim --exact`; `check_races=False`
    skips the race checker, as `ge-sim --no-race-check`; `approx=True` is the approximate
    simulation, as `ge-sim --approx`: exact outputs, approximate cycles)."""
    main = main_function(module)
    check_allocatable(module)
    level = module_level(module)
    if level == "npu":
        from .npu import simulate

        simulation = simulate(
            module, inputs, hw=hw, trace=trace, shortcuts=shortcuts, check_races=check_races, approx=approx
        )
        return Execution(input_specs(main), output_specs(main), simulation.outputs, level, simulation.report)
    results = run_reference(module, inputs)
    return Execution(input_specs(main), output_specs(main), results, level)
