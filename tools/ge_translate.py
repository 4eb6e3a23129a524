"""`ge-translate`: import an ONNX model (binary `.onnx` or textual `.onnxtxt`) into
the ge dialect and print it."""

from __future__ import annotations

import argparse
import sys

from xdsl.printer import Printer

from ..core.diagnostics import CompileError


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ge-translate",
        description="Import an ONNX model into the ge dialect: binary .onnx (needs the onnx "
        "package) or the ONNX textual syntax .onnxtxt ('-' reads text from standard input).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n"
        "  ge-translate examples/mlp.onnxtxt -o mlp.mlir\n"
        "  ge-translate model.onnx --dim batch=8 | ge-opt - -p canonicalize,cse\n"
        "  ge-translate --list-ops\n",
    )
    p.add_argument("file", nargs="?", help="the model (.onnx or .onnxtxt)")
    p.add_argument("-o", "--output", metavar="OUT.mlir", help="write the IR here (default: standard output)")
    p.add_argument(
        "--dim",
        metavar="NAME=SIZE",
        action="append",
        default=[],
        help="size of a symbolic input dim (repeatable), e.g. --dim N=8",
    )
    p.add_argument("--list-ops", action="store_true", help="list the supported ONNX ops and exit")
    return p


def parse_dims(specs: list[str]) -> dict[str, int]:
    dims = {}
    for spec in specs:
        name, _, size = spec.partition("=")
        if not name or not size.strip().isdigit():
            raise CompileError(f"--dim expects NAME=SIZE with a non-negative integer size, got '{spec}'")
        dims[name.strip()] = int(size)
    return dims


def list_ops() -> str:
    from ..frontend.converters import CONVERTERS

    return "\n".join(sorted(CONVERTERS))


def run(args: argparse.Namespace) -> int:
    if args.list_ops:
        print(list_ops())
        return 0
    if not args.file:
        raise CompileError("no input file (see ge-translate --help)")
    from ..frontend.importer import translate_file

    module = translate_file(args.file, parse_dims(args.dim))
    if args.output:
        try:
            with open(args.output, "w") as f:
                _print(module, f)
        except OSError as e:
            raise CompileError(f"cannot write '{args.output}': {e.strerror}") from None
    else:
        _print(module, sys.stdout)
    return 0


def _print(module, stream) -> None:
    Printer(stream=stream).print_op(module)
    stream.write("\n")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return run(args)
    except CompileError as e:
        print(e.format(args.file), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
