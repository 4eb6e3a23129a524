"""What bounds a compiled module: its cycles when one resource of the NPU is free.

    python bench/what_if.py                                   # the BERT layer, ascend910
    python bench/what_if.py examples/llama_block.mlir
    python bench/what_if.py --pipeline 'ge-compile{merge=false}' --free gm,vector

The module is compiled once, for the preset as it is; the same instructions are
then simulated on copies of the preset where one resource costs nothing
(`simulator.hardware.idealized`: the HBM, every GM transfer, the local copies of
MTE1, the cube, the vector unit, the transfer and flag latencies, the launch).
Each column is the module's time with that resource alone made free, and the
last one with all of them free (what is left: the scalar unit, the per-row
descriptor cycles of transfers, the waits the program order imposes). A row per
phase of a merged kernel (`npu-merge-launches`), otherwise per kernel.

Read a column as "what this resource costs here": a phase that shrinks most
when GM transfers are free is bound by its data movement; one that barely moves
in any single column but shrinks in the last is bound by a chain of several
resources waiting on each other, which no single faster unit fixes.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time

from gecomp.dialects.context import make_context
from gecomp.core.diagnostics import CompileError
from gecomp.core.parsing import load_module
from gecomp.core.passes import parse_pass_pipeline, run_pipeline
from gecomp.simulator.hardware import IDEAL_RESOURCES, HardwarePreset, idealized, load_preset
from gecomp.simulator.npu import simulate
from gecomp.simulator.npu.report import SimulationReport
from gecomp.core.signature import input_specs, main_function, random_inputs


def rows_of(report: SimulationReport) -> list[tuple[str, int]]:
    """(name, cycles) per phase of a merged kernel, per kernel otherwise; the total last."""
    rows: list[tuple[str, int]] = []
    for kernel in report.kernels:
        if kernel.phases:
            rows += [(phase.name, phase.cycles) for phase in kernel.phases]
        else:
            rows.append((kernel.name, kernel.cycles))
    return rows + [("total", report.total_cycles)]


def variants_of(preset: HardwarePreset, resources: list[str]) -> list[tuple[str, HardwarePreset]]:
    """(label, preset) per column: as is, each resource free, then all of them.
    ValueError for an unknown resource (`idealized`)."""
    variants = [("as is", preset)] + [(f"{r} free", idealized(preset, r)) for r in resources]
    if len(resources) > 1:
        variants.append(("all free", functools.reduce(idealized, resources, preset)))
    return variants


def compile_module(path: str, pipeline: str):
    """(the compiled module, random inputs)."""
    ctx = make_context()
    module = load_module(ctx, path)
    inputs = random_inputs(input_specs(main_function(module)), 0)
    run_pipeline(parse_pass_pipeline(pipeline), ctx, module)
    return module, inputs


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", nargs="?", default="examples/bert_layer.mlir")
    parser.add_argument("--hw", default="ascend910")
    parser.add_argument("--pipeline", default="ge-compile")
    parser.add_argument(
        "--free", default=",".join(IDEAL_RESOURCES), help=f"resources, comma-separated: {', '.join(IDEAL_RESOURCES)}"
    )
    args = parser.parse_args(argv)
    try:
        preset = load_preset(args.hw)
        variants = variants_of(preset, [r for r in args.free.split(",") if r])
        module, inputs = compile_module(args.file, args.pipeline)
    except ValueError as e:
        parser.error(str(e))
    except CompileError as e:
        print(e.format(), file=sys.stderr)
        sys.exit(1)

    columns: list[list[tuple[str, int]]] = []
    began = time.perf_counter()
    for _, variant in variants:
        columns.append(rows_of(simulate(module, inputs, hw=variant, check_races=False).report))
    names = [name for name, _ in columns[0]]
    width = max(len(n) for n in names + ["phase"])
    print(f"{args.file} compiled with {args.pipeline} for {preset.name}; cycles with one resource free")
    print(f"{'phase':<{width}}" + "".join(f"{label:>13}" for label, _ in variants))
    for i, name in enumerate(names):
        base = columns[0][i][1]
        cells = [f"{base:>13}"]
        for column in columns[1:]:
            cycles = column[i][1]
            cells.append(f"{cycles:>6} {cycles / base:>5.0%}" if base else f"{cycles:>13}")
        print(f"{name:<{width}}" + "".join(cells))
    print(f"({len(variants)} simulations in {time.perf_counter() - began:.1f} s; % of the 'as is' cycles)")


if __name__ == "__main__":
    main()
