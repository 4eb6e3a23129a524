"""`ge-prof`: where a model's device time goes, by op type, in eager mode (one
kernel per op) beside graph mode (fused and planned), as seed 000's profiling
table; `--csv DIR` also writes an msprof-like op_summary.csv per mode."""

from __future__ import annotations

import argparse
import os
import sys

from ..dialects.context import make_context
from ..core.diagnostics import CompileError, argument_error
from ..core.parsing import load_module
from ..core.passes import Instrumentation, instrumented, parse_pass_pipeline, run_pipeline
from ..simulator.compare import compiled_floor, worst_mismatch
from ..simulator.hardware import load_preset
from ..simulator.limits import check_allocatable
from ..simulator.npu.profile import comparison_table, write_op_summary
from ..simulator.run import execute
from ..core.signature import input_specs, main_function, random_inputs
from . import load_pattern_files, run_tool

EAGER = "ge-compile{{fuse=false reuse=false streams=1 hw={hw}}}"
GRAPH = "ge-compile{{hw={hw}}}"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ge-prof",
        description=__doc__.splitlines()[0].removeprefix("`ge-prof`: ") + " " + " ".join(__doc__.splitlines()[1:]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n"
        "  ge-prof examples/bert_layer.mlir\n"
        "  ge-prof model.mlir --hw tiny --csv prof/ --markdown\n",
    )
    p.error = argument_error("ge-prof")
    p.add_argument("file", help="a ge-level module (.mlir); '-' reads standard input")
    p.add_argument("--hw", metavar="NAME", default="ascend910", help="hardware preset (default ascend910)")
    p.add_argument("--eager", metavar="PIPE", help=f"eager-mode pipeline (default {EAGER.format(hw='HW')})")
    p.add_argument("--graph", metavar="PIPE", help=f"graph-mode pipeline (default {GRAPH.format(hw='HW')})")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    p.add_argument("--csv", metavar="DIR", help="write op_summary_eager.csv and op_summary_graph.csv here")
    p.add_argument("--markdown", action="store_true", help="print the table in Markdown")
    p.add_argument("--load-patterns", metavar="FILE.py", action="append", default=[],
                   help="register the FusionPattern classes of a Python file (repeatable)")
    return p


def run(args: argparse.Namespace) -> int:
    load_preset(args.hw)
    if args.seed < 0:
        raise CompileError(f"--seed must be 0 or more, got {args.seed}")
    load_pattern_files(args.load_patterns)
    modes = {"eager": args.eager or EAGER.format(hw=args.hw), "graph": args.graph or GRAPH.format(hw=args.hw)}
    pipelines = {name: parse_pass_pipeline(text) for name, text in modes.items()}
    source = load_module(make_context(), args.file)
    check_allocatable(source)
    inputs = random_inputs(input_specs(main_function(source)), args.seed)
    expected = execute(source.clone(), inputs).results
    reports = {}
    for name, passes in pipelines.items():
        module = source.clone()
        with instrumented(Instrumentation(verify_each=True)):
            run_pipeline(passes, make_context(), module)
        execution = execute(module, inputs, hw=args.hw)
        if execution.report is None:
            raise CompileError(f"the {name} pipeline '{modes[name]}' does not reach the npu level")
        _check(name, execution, expected, compiled_floor(source, module))
        reports[name] = execution.report
    print(comparison_table(reports, markdown=args.markdown))
    if args.csv:
        os.makedirs(args.csv, exist_ok=True)
        for name, report in reports.items():
            write_op_summary(os.path.join(args.csv, f"op_summary_{name}.csv"), report)
    return 0


def _check(mode: str, execution, expected, floor) -> None:
    """Both modes must compute the reference's numbers: a profile of wrong code
    would be misleading."""
    for spec, want, got in zip(execution.outputs, expected, execution.results):
        mismatch = worst_mismatch(spec.name, want, got, floor)
        if mismatch is not None and mismatch.ratio > 1.0:
            raise CompileError(f"{mode} mode computes wrong numbers: {mismatch}")


def main(argv: list[str] | None = None) -> int:
    return run_tool(lambda: run(build_parser().parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
