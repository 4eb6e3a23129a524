"""`ge-translate`: import an ONNX model (binary `.onnx` or textual `.onnxtxt`) into
the ge dialect and print it."""

from __future__ import annotations

import argparse
import sys

import numpy as np

from xdsl.printer import Printer

from ..core.array_files import load_array_file
from ..core.diagnostics import CompileError, argument_error
from . import run_tool


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ge-translate",
        description="Import an ONNX model into the ge dialect: binary .onnx (needs the onnx "
        "package) or the ONNX textual syntax .onnxtxt ('-' reads text from standard input).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n"
        "  ge-translate examples/mlp.onnxtxt -o mlp.mlir\n"
        "  ge-translate model.onnx --dim batch=8 | ge-opt - -p canonicalize,cse\n"
        "  ge-translate model.onnx --bind shape=shape.npy --bind-npz axes.npz\n"
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
    p.add_argument(
        "--bind",
        metavar="NAME=FILE.npy",
        action="append",
        default=[],
        help="make graph input NAME a constant holding FILE.npy (repeatable): for inputs used as "
        "shapes, axes or bounds, which a static-shape compiler needs at import",
    )
    p.add_argument("--bind-npz", metavar="FILE.npz", action="append", default=[],
                   help="bind every array of FILE.npz to the graph input of its name (repeatable)")
    p.add_argument("--list-ops", action="store_true", help="list the supported ONNX ops and exit")
    p.error = argument_error("ge-translate")
    return p


def parse_dims(specs: list[str]) -> dict[str, int]:
    dims = {}
    for spec in specs:
        name, _, size = spec.partition("=")
        name, size = name.strip(), size.strip()
        if not name or not size.isdigit() or int(size) <= 0:
            raise CompileError(f"--dim expects NAME=SIZE with a positive integer size, got '{spec}'")
        if name in dims:
            raise CompileError(f"--dim {name} is given twice")
        dims[name] = int(size)
    return dims


def parse_bindings(specs: list[str], archives: list[str]) -> dict[str, np.ndarray]:
    """`--bind NAME=FILE.npy` and `--bind-npz FILE.npz` as {input name: array}."""
    bindings: dict[str, np.ndarray] = {}

    def bind(name: str, array: np.ndarray, source: str) -> None:
        if name in bindings:
            raise CompileError(f"input '{name}' is bound twice (again by {source})")
        bindings[name] = array

    for spec in specs:
        name, _, path = spec.partition("=")
        if not name.strip() or not path.strip():
            raise CompileError(f"--bind expects NAME=FILE.npy, got '{spec}'")
        array = _load(path.strip(), f"--bind {spec}")
        if not isinstance(array, np.ndarray):
            raise CompileError(f"--bind {spec}: not an .npy file (--bind-npz takes .npz archives)")
        bind(name.strip(), array, f"--bind {spec}")
    for path in archives:
        archive = _load(path, f"--bind-npz {path}")
        if not isinstance(archive, dict):
            raise CompileError(f"--bind-npz {path}: not an .npz archive")
        for name, array in archive.items():
            bind(name, array, f"--bind-npz {path}")
    return bindings


def _load(path: str, what: str):
    try:
        return load_array_file(path)
    except FileNotFoundError:
        raise CompileError(f"{what}: cannot open '{path}': No such file or directory") from None
    except (OSError, ValueError) as e:
        raise CompileError(f"{what}: '{path}' is not a readable .npy/.npz file ({str(e).splitlines()[0]})") from None


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

    module = translate_file(args.file, parse_dims(args.dim), parse_bindings(args.bind, args.bind_npz))
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
    """As every tool ends (`run_tool`): a usage error or a CompileError is one line
    with exit code 1, the model's file named once it is known; a closed pipe ends
    quietly."""
    parsed: list[argparse.Namespace] = []
    status = run_tool(lambda: parsed.append(build_parser().parse_args(argv)) or 0)
    if not parsed:
        return status
    return run_tool(lambda: run(parsed[0]), parsed[0].file)


if __name__ == "__main__":
    sys.exit(main())
