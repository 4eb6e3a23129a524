"""`ge-opt`: parse, run a pass pipeline, print. The mlir-opt of this project.

Built on xDSL's `xDSLOptMain` for its flags and output targets; adds MLIR's
`--pass-pipeline` (with the `builtin.module(...)` wrapper), `--print-ir-after-all`
to stderr after every pass, `--dump-dir`, `--pass-statistics`, `--list-passes`,
and mlir-opt's `--verify-diagnostics`. Every user error is one located line and
exit code 1.
"""

from __future__ import annotations

import argparse
import os
import sys

from xdsl.dialects.builtin import Builtin, ModuleOp
from xdsl.passes import ModulePass
from xdsl.xdsl_opt_main import xDSLOptMain

from ..dialects.context import register_dialects
from ..core.diagnostics import CompileError, argument_error
from ..core.expected_diagnostics import check_diagnostics, collect_expectations
from ..core.parsing import parse_module, read_source, verify_module
from ..core.passes import (
    Instrumentation,
    available_passes,
    instrumented,
    parse_pass_pipeline,
    pass_summary,
    run_pipeline,
)
from . import load_pattern_files, run_tool

SPLIT_MARKER = "// -----"


class GEOptMain(xDSLOptMain):
    def __init__(self, args: list[str] | None = None):
        super().__init__(description=_DESCRIPTION, args=args)

    # ---- registration ----------------------------------------------------------------

    def register_all_dialects(self) -> None:
        # Loaded eagerly, as in `make_context`: without it `builtin.module` (the
        # first line of every printed module) would not parse back.
        self.ctx.load_dialect(Builtin)
        register_dialects(self.ctx)

    def register_all_passes(self) -> None:
        for name, factory in available_passes().items():
            self.register_pass(name, factory)

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        arg_parser.error = argument_error("ge-opt")
        arg_parser.formatter_class = argparse.RawDescriptionHelpFormatter
        arg_parser.epilog = _EPILOG
        for action in arg_parser._actions:
            if "--passes" in action.option_strings:
                action.option_strings.append("--pass-pipeline")
                arg_parser._option_string_actions["--pass-pipeline"] = action
                action.help = (
                    "comma-separated passes with options, e.g. 'cse,ge-fuse{max-size=32}'; "
                    "MLIR's 'builtin.module(...)' wrapper is accepted (see --list-passes)"
                )
            if "--split-input-file" in action.option_strings:
                action.help = (
                    "process each chunk between '// -----' lines as a file of its own; "
                    "a chunk's error is reported and the next chunk goes on (exit 1 if any failed)"
                )
            if "--verify-diagnostics" in action.option_strings:
                action.help = (
                    "check the '// expected-error @+1 {{...}}' annotations of the input "
                    "against the diagnostics produced; exit 1 on any mismatch"
                )
        arg_parser.add_argument(
            "--print-ir-after-all",
            action="store_true",
            help="print the IR after every pass to stderr, with MLIR's dump header",
        )
        arg_parser.add_argument(
            "--dump-dir",
            metavar="DIR",
            help="write the IR before the first pass (00_input.mlir) and after every "
            "pass (NN_<pass>.mlir) into DIR",
        )
        arg_parser.add_argument(
            "--pass-statistics",
            action="store_true",
            help="print what each pass did (counters) to stderr",
        )
        arg_parser.add_argument(
            "--list-passes", action="store_true", help="list the passes with their options and exit"
        )
        arg_parser.add_argument(
            "--graph",
            metavar="FILE.dot|png|svg",
            help="write the graph of @main after the passes (Graphviz DOT; PNG / SVG need the dot program)",
        )
        arg_parser.add_argument(
            "--load-patterns",
            metavar="FILE.py",
            action="append",
            default=[],
            help="register the FusionPattern classes of a Python file (repeatable); "
            "they run first in ge-pattern-fuse (docs/fusion.md)",
        )

    def setup_pipeline(self) -> None:
        # Pipelines are parsed in `run`, where errors become located messages.
        pass

    # ---- running -----------------------------------------------------------------------

    def run(self) -> int:
        if self.args.list_passes:
            print(list_passes())
            return 0
        load_pattern_files(self.args.load_patterns)
        passes = parse_pass_pipeline(self.args.passes)
        path = self.args.input_file or "-"
        filename = "<stdin>" if path == "-" else path
        text = read_source(path)
        chunks = _split(text) if self.args.split_input_file else [(text, 0)]
        outputs, failures, errors = [], [], 0
        for chunk, line_offset in chunks:
            try:
                module = parse_module(self.ctx, chunk, filename, line_offset)
                verify_module(module)
                self._apply(passes, module)
                outputs.append(self._print(module))
                if self.args.graph:
                    from ..simulator.npu.plots import write_graph

                    write_graph(module, self.args.graph)
                diagnostics = []
            except CompileError as e:
                if not self.args.verify_diagnostics:
                    # As mlir-opt: report the chunk's error and go on with the next.
                    print(e.format(), file=sys.stderr)
                    errors += 1
                    continue
                diagnostics = [e]
            if self.args.verify_diagnostics:
                failures += check_diagnostics(
                    collect_expectations(chunk, line_offset), diagnostics, filename
                )
        if not (errors and self.args.output_file):  # a failed run leaves no output file
            self._write("// -----\n".join(outputs))
        for failure in failures:
            print(failure, file=sys.stderr)
        return 1 if failures or errors else 0

    def _apply(self, passes: list[ModulePass], module: ModuleOp) -> None:
        instrumentation = Instrumentation(verify_each=not self.args.disable_verify)
        if self.args.print_ir_after_all:
            instrumentation.after_pass.append(self._print_after)
        if self.args.dump_dir:
            instrumentation.after_pass.append(self._dumper(module))
        with instrumented(instrumentation):
            run_pipeline(passes, self.ctx, module)
        if self.args.pass_statistics:
            report = instrumentation.statistics_report()
            print(report or "no pass statistics recorded", file=sys.stderr)
        if self.args.time_passes:
            for name, seconds in instrumentation.timings:
                print(f"{name}: {seconds:.4f} s", file=sys.stderr)

    def _print(self, module: ModuleOp) -> str:
        return self.output_resulting_program(module)

    def _print_after(self, p: ModulePass, module: ModuleOp) -> None:
        print(f"// -----// IR Dump After {p.name} //----- //", file=sys.stderr)
        print(self._print(module), file=sys.stderr)

    def _dumper(self, module: ModuleOp):
        directory = self.args.dump_dir
        try:
            os.makedirs(directory, exist_ok=True)
        except OSError as e:
            raise CompileError(f"cannot create dump directory '{directory}': {e.strerror}") from None
        counter = [0]
        self._dump_file(directory, "00_input.mlir", module)

        def dump(p: ModulePass, module: ModuleOp) -> None:
            counter[0] += 1
            self._dump_file(directory, f"{counter[0]:02d}_{p.name}.mlir", module)

        return dump

    def _dump_file(self, directory: str, name: str, module: ModuleOp) -> None:
        with open(os.path.join(directory, name), "w") as f:
            f.write(self._print(module))

    def _write(self, text: str) -> None:
        if self.args.output_file:
            try:
                with open(self.args.output_file, "w") as f:
                    f.write(text)
            except OSError as e:
                raise CompileError(f"cannot write '{self.args.output_file}': {e.strerror}") from None
        else:
            sys.stdout.write(text)


def _split(text: str) -> list[tuple[str, int]]:
    """Chunks between `// -----` lines, with the line offset of each. Only a line
    that is the marker splits (as in mlir-opt), not a comment that mentions it."""
    lines = text.split("\n")
    chunks, start = [], 0
    for index, line in enumerate(lines):
        if line.startswith(SPLIT_MARKER) and not line[len(SPLIT_MARKER) :].strip():
            chunks.append(("\n".join(lines[start:index]), start))
            start = index + 1
    chunks.append(("\n".join(lines[start:]), start))
    return chunks


def list_passes() -> str:
    lines = ["Passes (use as -p 'a,b{option=value}'):"]
    for name, factory in sorted(available_passes().items()):
        doc, options = pass_summary(factory)
        lines.append(f"  {name:<24} {doc}")
        if options:
            lines.append(f"  {'':<24}   options: {' '.join(options)}")
    return "\n".join(lines)


_DESCRIPTION = "ge-opt: run passes over ge / fused / npu IR (the mlir-opt of gecomp)"
_EPILOG = """examples:
  ge-opt examples/mlp.mlir -p canonicalize,cse
  ge-opt examples/bert_layer.mlir -p ge-compile --dump-dir out/
  ge-opt in.mlir --pass-pipeline 'builtin.module(cse,dce)' --print-ir-after-all
  ge-opt --list-passes
"""


def main(argv: list[str] | None = None) -> int:
    return run_tool(lambda: GEOptMain(args=argv).run())


if __name__ == "__main__":
    sys.exit(main())
