"""The time of a graph on one chip: compiled with a pipeline (`ge-compile` by
default) and run on the NPU simulator. The multi-device simulator asks it for
each device's compute runs; identical modules (the same text: tensor-parallel
devices run the same shapes) are compiled and simulated once."""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp

from ..dialects.context import make_context
from ..core.passes import parse_pass_pipeline, run_pipeline
from ..simulator.hardware import HardwarePreset
from ..simulator.npu import simulate
from ..core.signature import input_specs, main_function, random_inputs


class ComputeTimer:
    """Microseconds of a ge-level module on preset `hw` after `pipeline`, cached by
    module text. A module with no outputs computes nothing: 0."""

    def __init__(self, hw: HardwarePreset, pipeline: str = "ge-compile"):
        self.hw = hw
        self.pipeline = pipeline
        self.cache: dict[str, float] = {}

    def __call__(self, module: ModuleOp) -> float:
        key = str(module)
        if key not in self.cache:
            self.cache[key] = self._simulate(module)
        return self.cache[key]

    def _simulate(self, module: ModuleOp) -> float:
        if not main_function(module).function_type.outputs.data:
            return 0.0
        run_pipeline(parse_pass_pipeline(self.pipeline, {"hw": self.hw.name}), make_context(), module)
        inputs = random_inputs(input_specs(main_function(module)), 0)
        return simulate(module, inputs, hw=self.hw).report.time_us
