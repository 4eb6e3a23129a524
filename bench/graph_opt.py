"""What `ge-graph-opt` does to each shipped example: op counts before and after,
the transdata left per cube op (with and without moving format-agnostic ops
into the cube's formats), the bytes those conversions move, and the time the
pipeline takes.

    python bench/graph_opt.py [examples/*.mlir ...]

Cube ops are matmul, batch_matmul and conv2d; "transdata / cube op" counts the
conversions left in the optimised graph (conversions of constants are folded
into re-typed constants and do not count).
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from pathlib import Path

from gecomp.core import dtypes
from gecomp.dialects.context import make_context
from gecomp.core.parsing import load_module
from gecomp.core.passes import Instrumentation, instrumented, parse_pass_pipeline, run_pipeline
from gecomp.dialects.ge import TransDataOp

ROOT = Path(__file__).resolve().parents[1]
CUBE_OPS = ("ge.matmul", "ge.batch_matmul", "ge.conv2d")


def ge_ops(module) -> Counter:
    return Counter(op.name for op in module.walk() if op.name.startswith("ge."))


def conversion_bytes(module) -> int:
    """Logical bytes converted by the transdata left in the module."""
    return sum(dtypes.tensor_bytes(op.result.type) for op in module.walk() if isinstance(op, TransDataOp))


def optimised(path: Path, pipeline: str):
    module = load_module(make_context(), str(path))
    start = time.perf_counter()
    with instrumented(Instrumentation()):
        run_pipeline(parse_pass_pipeline(pipeline), make_context(), module)
    return module, time.perf_counter() - start


def row(path: Path) -> dict[str, object]:
    before = ge_ops(load_module(make_context(), str(path)))
    module, seconds = optimised(path, "ge-graph-opt")
    after = ge_ops(module)
    unpropagated, _ = optimised(path, "ge-graph-opt{layout=false},ge-layout{propagate=false},ge-simplify")
    cube = sum(after[name] for name in CUBE_OPS)
    left = after["ge.transdata"]
    naive = ge_ops(unpropagated)["ge.transdata"]
    return {
        "example": path.stem,
        "ops before": sum(before.values()),
        "ops after": sum(after.values()),
        "non-const after": sum(after.values()) - after["ge.const"] - left,
        "cube ops": cube,
        "transdata": left,
        "transdata / cube op": f"{left / cube:.2f}" if cube else "-",
        "without propagation": f"{naive / cube:.2f}" if cube else "-",
        "converted KiB": f"{conversion_bytes(module) / 1024:.0f}",
        "KiB w/o propagation": f"{conversion_bytes(unpropagated) / 1024:.0f}",
        "opt time (s)": f"{seconds:.2f}",
    }


def table(rows: list[dict[str, object]]) -> str:
    headers = list(rows[0])
    widths = [max(len(h), *(len(str(r[h])) for r in rows)) for h in headers]
    lines = [" | ".join(h.rjust(w) for h, w in zip(headers, widths))]
    lines.append("-+-".join("-" * w for w in widths))
    lines += [" | ".join(str(r[h]).rjust(w) for h, w in zip(headers, widths)) for r in rows]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    paths = [Path(p) for p in argv] or sorted((ROOT / "examples").glob("*.mlir"))
    print(table([row(p) for p in paths]))
    print(
        "\nops: ge ops in @main (constants and transdata included); non-const after: "
        "ops that run on the device besides conversions.\n"
        "without propagation: every cube op converts its operands and result "
        "(ge-layout{propagate=false}) after the same graph optimisations."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
