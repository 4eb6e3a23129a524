"""Helpers for the cube lowering tests: build a one-op graph, compile it to npu
kernels, simulate, and compare with the reference interpreter."""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from gecomp.dialects.context import make_context
from gecomp.core.parsing import parse_module, verify_module
from gecomp.core.passes import parse_pass_pipeline, run_pipeline
from gecomp.simulator.compare import worst_mismatch
from gecomp.simulator.npu import simulate
from gecomp.simulator.reference import run_reference
from gecomp.core.signature import input_specs, main_function, output_specs, random_inputs


def parse(text: str) -> ModuleOp:
    module = parse_module(make_context(), text, "test.mlir")
    verify_module(module)
    return module


def compile_module(module: ModuleOp, pipeline: str) -> ModuleOp:
    run_pipeline(parse_pass_pipeline(pipeline), make_context(), module)
    return module


def check_lowering(text_or_module, hw: str = "tiny", seed: int = 0, pipeline: str | None = None, inputs=None):
    """Compile (`ge-lower-to-npu{hw}` by default), simulate on `hw`, and assert every
    output matches the reference within simulator/compare.py's tolerance.
    Returns the simulation."""
    module = parse(text_or_module) if isinstance(text_or_module, str) else text_or_module
    main = main_function(module)
    specs = input_specs(main)
    names = [s.name for s in output_specs(main)]
    if inputs is None:
        inputs = random_inputs(specs, seed)
    expected = run_reference(module.clone(), inputs)
    compile_module(module, pipeline or f"ge-lower-to-npu{{hw={hw}}}")
    simulation = simulate(module, inputs, hw=hw)
    for name, want, got in zip(names, expected, simulation.outputs, strict=True):
        mismatch = worst_mismatch(name, np.asarray(want), np.asarray(got))
        assert mismatch is None or mismatch.ratio <= 1.0, str(mismatch)
    return simulation


def simulated_cycles(module: ModuleOp, text: str, hw: str = "ascend910") -> int:
    """The compiled `module`'s simulated time on the random inputs (seed 0) of the
    source `text`'s signature."""
    inputs = random_inputs(input_specs(main_function(parse(text))), 0)
    return simulate(module, inputs, hw=hw).report.total_cycles


def main_module(args: list[str], lines: list[str], result: str, result_type: str) -> str:
    """`func.func @main(args) -> result_type` with `lines` as its body, returning `result`
    named "out"; a dummy input when every operand is a constant."""
    args = args or [f'%dummy: {tensor((1,))} {{ge.name = "dummy"}}']
    body = "\n".join(f"  {line}" for line in lines)
    return f"""func.func @main({", ".join(args)}) -> ({result_type} {{ge.name = "out"}}) {{
{body}
  func.return {result} : {result_type}
}}"""


def tensor(shape, dtype: str = "f16", encoding: str | None = None) -> str:
    dims = "x".join(str(d) for d in shape)
    enc = f", #ge.format<{encoding}>" if encoding else ""
    return f"tensor<{dims}x{dtype}{enc}>" if dims else f"tensor<{dtype}{enc}>"


def overlapped(hw: str) -> str:
    """The lowering with npu-insert-sync (and npu-double-buffer) in place of
    npu-serialize: the simulator's race check then judges the kernels' flags."""
    return ",".join(
        f"{p}{{hw={hw}}}"
        for p in ("ge-to-npu", "npu-double-buffer", "npu-plan-local-memory", "npu-insert-sync", "npu-plan-gm")
    )
