"""`ge-sim`: run a module and report what it computed (and, for npu modules, how
long it took on the simulated NPU)."""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

from ..dialects.context import make_context
from ..core.diagnostics import CompileError, argument_error
from ..core.parsing import load_module
from ..core.passes import Instrumentation, instrumented, parse_pass_pipeline, run_pipeline
from ..core import precision
from ..simulator.compare import compiled_floor, worst_mismatch
from ..simulator.hardware import load_preset
from ..simulator.limits import check_allocatable
from ..simulator.npu.localize import compare_each, first_mismatch, named_types, reference_by_name
from ..simulator.npu.localize import summary as localisation_summary
from ..simulator.run import execute, module_level
from ..core.signature import (
    input_specs,
    load_inputs,
    main_function,
    random_inputs,
    save_outputs,
    summarize,
)
from . import load_pattern_files, run_tool


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ge-sim",
        description="Run a ge / fused / npu module: ge and fused through the numpy "
        "reference interpreter, npu through the cycle-approximate simulator.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n"
        "  ge-sim examples/mlp.mlir --seed 1 --outputs out.npz\n"
        "  ge-sim examples/bert_layer.mlir --pipeline ge-graph-opt --check\n",
    )
    p.error = argument_error("ge-sim")
    p.add_argument("file", help="the module (.mlir); '-' reads standard input")
    p.add_argument("--pipeline", metavar="PIPE", default="", help="compile with this pass pipeline first")
    p.add_argument("--load-patterns", metavar="FILE.py", action="append", default=[],
                   help="register the FusionPattern classes of a Python file (repeatable)")
    p.add_argument("--hw", metavar="NAME", default=None, help="hardware preset name or file (npu level)")
    p.add_argument("--inputs", metavar="IN.npz", help="input arrays by name (default: random from --seed)")
    p.add_argument("--outputs", metavar="OUT.npz", help="write the results here")
    p.add_argument("--seed", type=_seed, default=0, help="seed of the random inputs, 0 or more (default 0)")
    p.add_argument("--report", action="store_true", help="print the execution report")
    p.add_argument(
        "--exact",
        "--no-shortcuts",
        dest="exact",
        action="store_true",
        help="npu level: run the full simulation, every simulator shortcut off (the default "
        "gives the same cycles and outputs, faster; this checks it)",
    )
    p.add_argument(
        "--approx",
        action="store_true",
        help="npu level: the approximate simulation: outputs and instruction count exact, cycles NOT the "
        "simulation's: each launch's results are computed without timing, and only a few blocks per launch "
        "(one per group running the same instructions in a phase) are timed, under the HBM load of the blocks "
        "they stand for; the others get their timing. Faster; the report says how many blocks were timed "
        "and race-checked (bench/sim_speed.py --approx prints the cycle error)",
    )
    p.add_argument(
        "--no-race-check",
        dest="check_races",
        action="store_false",
        help="npu level: skip the race checker (missing syncs between pipes are not detected); "
        "about twice as fast on large models, same cycles and outputs; the report says it was skipped",
    )
    p.add_argument("--json", metavar="FILE", help="write the report as JSON")
    p.add_argument("--trace", metavar="FILE", help="write a Chrome trace (npu level)")
    p.add_argument("--plot-timeline", "--plot", metavar="FILE.png|svg",
                   help="picture of cores x pipes over time, launches and phases marked (npu level)")
    p.add_argument("--plot-roofline", metavar="FILE.png|svg",
                   help="picture of each kernel's simulated cycles against its roofline bound")
    p.add_argument("--plot-memory", metavar="FILE.png|svg",
                   help="picture of the GM memory plan: buffers as offset x lifetime rectangles")
    p.add_argument(
        "--compare-each",
        action="store_true",
        help="accuracy localisation: compare every kernel's outputs with the reference "
        "interpreter's value of the same tensor; print the first beyond tolerance (exit 1)",
    )
    p.add_argument("--dump", metavar="DIR", help="with --compare-each: each compared output and its reference as DIR/NNN_kernel.npz")
    p.add_argument(
        "--check",
        action="store_true",
        help="also run the input module through the reference interpreter; exit 1 if "
        "the outputs differ beyond tolerance, printing the worst error",
    )
    p.add_argument("--devices", metavar="N", type=_devices, default=None,
                   help="run a module partitioned for N devices (ge-partition): each device's outputs; "
                   "--report / --json / --trace simulate the N chips and their links")
    p.add_argument("--collectives", metavar="ALGO", choices=("auto", "ring", "halving_doubling", "mesh", "hierarchical"), default=None,
                   help="with --devices: the collective algorithm (auto, ring, halving_doubling, mesh; "
                   "default: the preset's [interconnect] algorithm)")
    return p


def _integer_at_least(minimum: int, what: str):
    """An argparse type: an integer `minimum` or more, else a message naming `what`."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid {what} '{text}': expected an integer {minimum} or more") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"invalid {what} {value}: expected an integer {minimum} or more")
        return value

    return parse


_devices = _integer_at_least(1, "device count")
_seed = _integer_at_least(0, "seed")
"""numpy seeds are non-negative integers."""


def _check_arguments(args: argparse.Namespace) -> None:
    """Mistakes in the flags are reported before any work is done."""
    if args.approx and args.exact:
        raise CompileError("--approx and --exact exclude each other: --exact is the full simulation")
    if args.approx and (args.trace or args.plot_timeline):
        raise CompileError("--trace and --plot-timeline need every block's timing: drop --approx")
    if args.collectives is not None and args.devices is None:
        raise CompileError("--collectives applies to a multi-device run: give --devices N")
    if args.hw is not None:
        load_preset(args.hw)
    for flag in ("outputs", "json", "trace"):
        path = getattr(args, flag)
        if path is not None and os.path.isdir(path):
            raise CompileError(f"--{flag} '{path}' is a directory; give a file name")


def run(args: argparse.Namespace) -> int:
    _check_arguments(args)
    load_pattern_files(args.load_patterns)
    ctx = make_context()
    module = load_module(ctx, args.file)
    reference_module = module.clone() if args.check else None
    passes = parse_pass_pipeline(args.pipeline, {"hw": args.hw} if args.hw else None)
    instrumentation = Instrumentation()
    source_module, graph_types = (module.clone(), {}) if args.compare_each else (None, None)
    if graph_types is not None:
        instrumentation.after_pass.append(lambda p, m: module_level(m) != "npu" and graph_types.update(named_types(m)))
    with instrumented(instrumentation):
        run_pipeline(passes, ctx, module)
    if source_module is not None:
        return _compare_each(args, source_module, module, graph_types)
    if args.devices is not None:
        from . import ge_sim_devices

        return ge_sim_devices.run(args, module, reference_module, _check, _write)

    check_allocatable(module)
    specs = input_specs(main_function(module))
    inputs = load_inputs(args.inputs, specs) if args.inputs else random_inputs(specs, args.seed)
    pictures = {"timeline": args.plot_timeline, "roofline": args.plot_roofline, "memory": args.plot_memory}
    execution = execute(
        module, inputs, hw=args.hw, trace=bool(args.trace or args.plot_timeline), shortcuts=not args.exact,
        check_races=args.check_races, approx=args.approx,
    )
    if execution.report is None and (args.json or args.trace or any(pictures.values())):
        raise CompileError(
            f"--json, --trace and --plot-* need an npu-level module; this one is at the "
            f"{execution.level} level (compile it with --pipeline ge-compile)"
        )

    for spec, array in zip(execution.outputs, execution.results):
        print(summarize(spec, array))
    if args.outputs:
        save_outputs(args.outputs, execution.outputs, execution.results)
    if args.report:
        print(f"level: {execution.level} (reference interpreter)" if execution.report is None else execution.report)
        if precision.summary(module):
            print(precision.summary(module))
    if args.json:
        _write(args.json, _report_json(execution.report, module))
    if args.trace:
        _write(args.trace, execution.report.trace_text())
    _draw(pictures, module, execution.report)

    if reference_module is not None:
        expected = execute(reference_module, inputs).results
        return _check(execution.outputs, expected, execution.results, compiled_floor(reference_module, module))
    return 0


def _report_json(report, module) -> str:
    """The report's JSON, with `precision` (mode and ops computed in f16) when the
    module records a precision mode."""
    data = report.as_json()
    mode = precision.recorded_mode(module)
    if mode is not None:
        data["precision"] = {"mode": mode, "lowered": precision.recorded_lowered(module)}
    return json.dumps(data, indent=2)


def _draw(pictures: dict[str, str | None], module, report) -> None:
    """The --plot-* pictures (matplotlib is imported only when one is asked for)."""
    if not any(pictures.values()):
        return
    from ..simulator.npu import plots

    if pictures["timeline"]:
        plots.timeline(report, pictures["timeline"])
    if pictures["roofline"]:
        plots.roofline(report, pictures["roofline"])
    if pictures["memory"]:
        plots.memory_plan(module, report, pictures["memory"])


def _compare_each(args: argparse.Namespace, source, compiled, graph_types) -> int:
    """`--compare-each`: every kernel's outputs against the reference's values."""
    if module_level(compiled) != "npu":
        raise CompileError("--compare-each needs a pipeline that reaches the npu level (e.g. --pipeline ge-compile)")
    check_allocatable(compiled)
    specs = input_specs(main_function(source))
    inputs = load_inputs(args.inputs, specs) if args.inputs else random_inputs(specs, args.seed)
    reference = reference_by_name(source, inputs)
    outputs = compare_each(compiled, graph_types, reference, inputs, hw=args.hw, floor=compiled_floor(source, compiled))
    print(localisation_summary(outputs))
    if args.dump:
        _dump(args.dump, outputs, reference)
    return 1 if first_mismatch(outputs) is not None else 0


def _dump(directory: str, outputs, reference) -> None:
    try:
        os.makedirs(directory, exist_ok=True)
        for i, o in enumerate(x for x in outputs if x.actual is not None):
            np.savez(os.path.join(directory, f"{i:03d}_{o.kernel}.npz"), actual=o.actual, expected=reference[o.compared_with])
    except OSError as e:
        raise CompileError(f"cannot write to --dump '{directory}': {e.strerror}") from None


def _write(path: str, text: str) -> None:
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    except OSError as e:
        raise CompileError(f"cannot write '{path}': {e.strerror}") from None


def _check(specs, expected, actual, floor) -> int:
    mismatches = [worst_mismatch(s.name, e, a, floor) for s, e, a in zip(specs, expected, actual)]
    failing = [m for m in mismatches if m is not None and m.ratio > 1.0]
    worst = max((m for m in mismatches if m is not None), key=lambda m: m.ratio, default=None)
    if failing:
        for m in failing:
            print(f"check: FAILED {m}", file=sys.stderr)
        return 1
    print(f"check: ok (worst {worst})" if worst else "check: ok (identical)")
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_tool(lambda: run(build_parser().parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
