"""Import speed of large models: an MLP with ~100 MB of fp32 weights, as a binary
.onnx file, through the importer, the printer, and back through the parser.

    python bench/import_speed.py              # 100 MB of weights
    python bench/import_speed.py --mb 20      # smaller

The point to check: importing is dominated by reading the file (onnx.load, the
first row), not by gecomp; the printed IR (weights as hex) parses back at a
similar speed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np


def make_mlp(path: str, megabytes: float, batch: int = 8, layers: int = 4) -> int:
    """Writes an MLP (MatMul + Add + Relu per layer) whose weights total about
    `megabytes`; returns the weight bytes."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    hidden = int((megabytes * 1e6 / 4 / layers) ** 0.5)
    rng = np.random.default_rng(0)
    nodes, initializers, x = [], [], "x"
    for i in range(layers):
        w = (rng.standard_normal((hidden, hidden), dtype=np.float32) * 0.02)
        b = np.zeros(hidden, dtype=np.float32)
        initializers += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(b, f"b{i}")]
        nodes += [
            helper.make_node("MatMul", [x, f"w{i}"], [f"h{i}"], name=f"fc{i}"),
            helper.make_node("Add", [f"h{i}", f"b{i}"], [f"a{i}"]),
            helper.make_node("Relu", [f"a{i}"], [f"y{i}"]),
        ]
        x = f"y{i}"
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, hidden])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [batch, hidden])],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, path)
    return sum(t.nbytes for t in (numpy_helper.to_array(i) for i in initializers))


def timed(label: str, rows: list, function):
    start = time.perf_counter()
    result = function()
    rows.append((label, time.perf_counter() - start))
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mb", type=float, default=100.0, help="weight megabytes (default 100)")
    p.add_argument("--keep", metavar="DIR", help="write the files here and keep them")
    args = p.parse_args(argv)

    import onnx
    from xdsl.printer import Printer

    from gecomp.dialects.context import make_context
    from gecomp.core.parsing import parse_module, read_source, verify_module
    from gecomp.frontend.importer import translate_file

    directory = args.keep or tempfile.mkdtemp(prefix="gecomp-import-")
    os.makedirs(directory, exist_ok=True)
    model_path = os.path.join(directory, "mlp.onnx")
    mlir_path = os.path.join(directory, "mlp.mlir")
    weight_bytes = make_mlp(model_path, args.mb)

    rows: list[tuple[str, float]] = []
    timed("read the .onnx file (onnx.load)", rows, lambda: onnx.load(model_path))
    module = timed("import (read + convert to ge)", rows, lambda: translate_file(model_path))

    def write():
        with open(mlir_path, "w") as f:
            Printer(stream=f).print_op(module)
            f.write("\n")

    timed("print the ge module to .mlir", rows, write)
    text = timed("read the .mlir text", rows, lambda: read_source(mlir_path))
    parsed = timed("parse the .mlir (xDSL + ge.const)", rows, lambda: parse_module(make_context(), text, mlir_path))
    timed("verify", rows, lambda: verify_module(parsed))
    timed("ge-translate (command, end to end)", rows,
          lambda: subprocess.run(["ge-translate", model_path, "-o", mlir_path], check=True))
    timed("ge-opt round trip (command: parse, verify, print)", rows,
          lambda: subprocess.run(["ge-opt", mlir_path, "-o", os.devnull], check=True))

    print(f"MLP with {weight_bytes / 1e6:.1f} MB of fp32 weights; .onnx {os.path.getsize(model_path) / 1e6:.1f} MB, "
          f".mlir {os.path.getsize(mlir_path) / 1e6:.1f} MB")
    print(f"{'step':<52}{'seconds':>9}")
    for label, seconds in rows:
        print(f"{label:<52}{seconds:>9.2f}")
    read, imported = rows[0][1], rows[1][1]
    print(f"\nreading the file is {read / imported:.0%} of the import")
    if not args.keep:
        for path in (model_path, mlir_path):
            os.remove(path)
        os.rmdir(directory)
    return 0


if __name__ == "__main__":
    sys.exit(main())
