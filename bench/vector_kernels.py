"""Vector kernels against their bounds: simulated cycles of one kernel (launch
excluded) next to the bandwidth bound (bytes the op must move / HBM bytes per
cycle) and the vector bound (the kernel's own vector work at one repeat per
cycle, spread over the cores), on the ascend910 preset.

    python bench/vector_kernels.py                 # the pipeline as configured
    python bench/vector_kernels.py --overlap       # with npu-double-buffer + npu-insert-sync
    python bench/vector_kernels.py --only softmax  # cases whose name contains it
"""

from __future__ import annotations

import argparse
import math
import time

from gecomp.dialects.context import make_context
from gecomp.core.parsing import parse_module
from gecomp.core.passes import parse_pass_pipeline, run_pipeline
from gecomp.simulator.run import execute
from gecomp.core.signature import input_specs, main_function, random_inputs

OVERLAP = "ge-to-npu,npu-double-buffer,npu-insert-sync,npu-plan-local-memory,npu-plan-gm"


def t(shape, dtype="f16") -> str:
    return f"tensor<{'x'.join(map(str, shape))}x{dtype}>"


def one(op: str, ins: list[str], out: str, attrs: str = "") -> str:
    args = ", ".join(f"%a{i}: {x}" for i, x in enumerate(ins))
    names = ", ".join(f"%a{i}" for i in range(len(ins)))
    attr = f" {{{attrs}}}" if attrs else ""
    return f"""func.func @main({args}) -> {out} {{
  %r = {op} {names}{attr} : ({", ".join(ins)}) -> {out}
  func.return %r : {out}
}}"""


def cases() -> list[tuple[str, str, int]]:
    """(name, module text, bytes the op must move at least)."""
    out = []
    for shape in ([4096, 4096],):
        n = math.prod(shape) * 2
        out.append((f"add {shape}", one("ge.add", [t(shape), t(shape)], t(shape)), 3 * n))
        out.append((f"gelu {shape}", one("ge.gelu", [t(shape)], t(shape)), 2 * n))
    for shape in ([1536, 128], [4096, 1024], [1024, 4096]):
        n = math.prod(shape) * 2
        p = t(shape[-1:])
        out.append((f"softmax {shape}", one("ge.softmax", [t(shape)], t(shape)), 2 * n))
        out.append((f"layer_norm {shape}", one("ge.layer_norm", [t(shape), p, p], t(shape)), 2 * n))
        out.append((f"rms_norm {shape}", one("ge.rms_norm", [t(shape), p], t(shape)), 2 * n))
    shape, n = [4096, 1024], 4096 * 1024 * 2
    out.append((f"reduce_sum last {shape}", one("ge.reduce_sum", [t(shape)], t([4096, 1]), "axes = [1]"), n))
    out.append((f"reduce_sum first {shape}", one("ge.reduce_sum", [t(shape)], t([1, 1024]), "axes = [0]"), n))
    out.append((f"reduce_max middle [64, 64, 1024]",
                one("ge.reduce_max", [t([64, 64, 1024])], t([64, 1, 1024]), "axes = [1]"), n))
    out.append((f"softmax axis 1 [64, 64, 1024]", one("ge.softmax", [t([64, 64, 1024])], t([64, 64, 1024]), "axis = 1"),
                2 * n))
    img = [8, 64, 56, 56]
    out.append((f"bias_add NCHW {img}", one("ge.bias_add", [t(img), t([64])], t(img), "axis = 1"),
                2 * math.prod(img) * 2))
    out.append((f"global_avg_pool {img}", one("ge.global_avg_pool", [t(img)], t(img[:2] + [1, 1])), math.prod(img) * 2))
    return out


def run(text: str, pipeline: str):
    ctx = make_context()
    module = parse_module(ctx, text, "bench.mlir")
    run_pipeline(parse_pass_pipeline(pipeline), ctx, module)
    report = execute(module, random_inputs(input_specs(main_function(module)), 0), hw="ascend910").report
    kernel = report.kernels[0]
    return kernel.end - kernel.start, kernel.block_dim, report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--overlap", action="store_true", help=f"compile with {OVERLAP}")
    parser.add_argument("--only", default="", help="run the cases whose name contains this")
    args = parser.parse_args()
    pipeline = OVERLAP if args.overlap else "ge-lower-to-npu"
    print(f"pipeline: {pipeline}")
    print(f"{'case':36s} {'cycles':>8s} {'bw bound':>9s} {'bw %':>6s} {'vec bound':>9s} {'cores':>5s} {'compile+sim':>11s}")
    for name, text, nbytes in cases():
        if args.only not in name:
            continue
        start = time.time()
        cycles, cores, report = run(text, pipeline)
        bound = nbytes / report.hw.hbm_bytes_per_cycle
        vector = report.roofline()["vector_cycles"]
        print(f"{name:36s} {cycles:8d} {bound:9.0f} {bound / cycles:6.1%} {vector:9.0f} {cores:5d} {time.time() - start:10.1f}s")


if __name__ == "__main__":
    main()
