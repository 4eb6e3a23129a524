"""Data movement kernels against their bandwidth bound.

Each case is one op (a transpose, a format conversion, ...) compiled alone by
`ge-lower-to-npu` and simulated. A pure data movement kernel reads and writes
every byte once, so its lower bound is the larger of

* HBM:   (GM bytes read + written) / the HBM's bytes per cycle, and
* cores: the busiest core's share of the bytes over its own GM -> UB path
  (per-core MTE2 bandwidth; MTE3 is faster and overlaps),

and the table prints the kernel's simulated cycles (launch overhead excluded)
against it; and against a floor that also counts the fixed latencies: a core
stores nothing before its first load has arrived, so its own path time plus
one GM -> UB and one UB -> GM latency (what small kernels run into). Run: `python bench/movement.py [--hw ascend910] [--quick]`.
"""

from __future__ import annotations

import argparse
import sys
import time


from gecomp.dialects.context import make_context
from gecomp.core.passes import parse_pass_pipeline, run_pipeline
from gecomp.dialects import ge
from gecomp.frontend.builder import GraphBuilder
from gecomp.simulator.hardware import load_preset
from gecomp.simulator.npu import simulate
from gecomp.core.signature import input_specs, main_function, random_inputs


def _transpose(shape, perm):
    return f"transpose {'x'.join(map(str, shape))} {perm}", shape, lambda g, x: g.op(ge.TransposeOp, x, perm=perm)


def _transdata(shape, src, dst):
    def body(g, x):
        if src != "ND":  # the source is made by a first conversion (not timed)
            x = g.op(ge.TransDataOp, x, src_format="ND", dst_format=src)
        return g.op(ge.TransDataOp, x, src_format=src, dst_format=dst)

    return f"transdata {'x'.join(map(str, shape))} {src}->{dst}", shape, body


CASES = [
    _transpose([128, 12, 64], [1, 0, 2]),
    _transpose([256, 16, 64], [1, 0, 2]),
    _transpose([12, 128, 64], [0, 2, 1]),
    _transpose([1024, 1024], [1, 0]),
    _transpose([2048, 2048], [1, 0]),
    _transdata([128, 768], "ND", "FRACTAL_NZ"),
    _transdata([128, 768], "FRACTAL_NZ", "ND"),
    _transdata([12, 128, 64], "ND", "FRACTAL_NZ"),
    _transdata([16, 256, 256], "FRACTAL_NZ", "ND"),
    _transdata([2048, 2048], "ND", "FRACTAL_NZ"),
    _transdata([2048, 2048], "FRACTAL_NZ", "ND"),
    _transdata([1, 64, 56, 56], "ND", "NC1HWC0"),
    _transdata([8, 64, 56, 56], "ND", "NC1HWC0"),
    _transdata([8, 64, 56, 56], "NC1HWC0", "ND"),
    _transdata([256, 256, 3, 3], "ND", "FRACTAL_Z"),
]
QUICK = {0, 2, 5, 6, 11}


def run_case(name, shape, body, hw: str, pipeline: str) -> tuple[float, float, int, float, str]:
    g = GraphBuilder("main", dtype="f16")
    x = g.input(shape, name="x")
    g.output(body(g, x), name="y")
    module = g.build()
    compile_start = time.perf_counter()
    run_pipeline(parse_pass_pipeline(pipeline.format(hw=hw)), make_context(), module)
    compile_s = time.perf_counter() - compile_start
    inputs = random_inputs(input_specs(main_function(module)), 0)
    report = simulate(module, inputs, hw=hw).report
    preset = load_preset(hw)
    kernel = report.kernels[-2] if len(report.kernels) > 1 and "output" in report.kernels[-1].name else report.kernels[-1]
    cycles = kernel.end - kernel.start
    read, written = (kernel.stats[_stat("gm_read")], kernel.stats[_stat("gm_written")])
    from_hbm = kernel.stats[_stat("hbm_compulsory")] if preset.l2_bytes else read  # L2 hits cost no HBM time
    hbm = (from_hbm + written) / preset.hbm_bytes_per_cycle
    per_core = read / kernel.block_dim / preset.paths["gm_to_ub"].bytes_per_cycle
    latencies = preset.paths["gm_to_ub"].latency + preset.paths["ub_to_gm"].latency
    return cycles, max(hbm, per_core), max(hbm, per_core + latencies), compile_s, f"{kernel.block_dim}"


def _stat(name: str) -> int:
    from gecomp.simulator.npu.program import STAT_INDEX

    return STAT_INDEX[name]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hw", default="ascend910")
    parser.add_argument("--quick", action="store_true", help="a few small cases")
    parser.add_argument("--pipeline", default="ge-lower-to-npu{{hw={hw}}}", help="the compile pipeline ({hw} is replaced)")
    args = parser.parse_args(argv)
    print(f"{'case':40} {'cores':>5} {'cycles':>7} {'bound':>7} {'of bound':>8} {'floor':>8} {'of it':>6} {'compile s':>9}")
    for i, (name, shape, body) in enumerate(CASES):
        if args.quick and i not in QUICK:
            continue
        cycles, bound, floor, compile_s, cores = run_case(name, shape, body, args.hw, args.pipeline)
        print(
            f"{name:40} {cores:>5} {cycles:>7.0f} {bound:>7.0f} {bound / cycles:>8.0%} {floor:>8.0f} "
            f"{floor / cycles:>6.0%} {compile_s:>9.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

