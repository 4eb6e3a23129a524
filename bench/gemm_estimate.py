"""The cube tiling's estimate against the simulator, over a grid of GEMM shapes.

    python bench/gemm_estimate.py                          # the default grid, ascend910
    python bench/gemm_estimate.py --m 64,256 --kn 1024x2816 --products 1,2
    python bench/gemm_estimate.py --csv out.csv

Each point is one f16 product `x (M x K) @ W (K x N)` with a constant W (two
products sharing x and a SwiGLU on them with `--products 2`: a
fused.gated_matmul, the LLaMA FFN's gate / up), compiled with ge-compile
(the one-kernel form pinned: a split-K form is two kernels and another
estimate) and simulated on the preset. Columns: the chosen tiling (items,
per core, A resident, K chunk), its estimate (`lowering/tiling.py`, cycles of
the kernel), the simulated kernel's cycles, and the error (estimate /
simulated - 1). `--ranks R` also pins the tilings ranked 1..R-1 by the
estimate (`npu.tiling_rank`): whether the estimate orders them as the
simulator does, and the cycles lost by taking rank 0 (`regret`).
The summary gives the mean and worst absolute error, by M and overall.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import re
import sys
import time

from xdsl.dialects.builtin import IntegerAttr, i64

from gecomp.core.parsing import parse_module
from gecomp.core.passes import parse_pass_pipeline, run_pipeline
from gecomp.core.signature import input_specs, main_function, random_inputs
from gecomp.dialects.context import make_context
from gecomp.lowering.fused_to_npu.split_k import pin_form
from gecomp.lowering.pipelines import CompilePipeline
from gecomp.simulator.npu import simulate

DEFAULT_M = (16, 64, 256, 1024, 4096)
DEFAULT_KN = ((256, 256), (1024, 1024), (1024, 2816), (2816, 1024), (256, 8192), (8192, 256), (4096, 4096))
LINE = re.compile(r"@(\S+): cube .*items of (\d+) x (\d+) \(.* (\d+) per core on (\d+) cores\)(, A resident in L1)?, K in L1 chunks of (\d+).*estimated (\d+) cycles")


def module_text(m: int, k: int, n: int, products: int) -> str:
    x, w, y = f"tensor<{m}x{k}xf16>", f"tensor<{k}x{n}xf16>", f"tensor<{m}x{n}xf16>"
    lines = [f"%w0 = ge.const #ge.random<normal, seed = 7, mean = 0.0, std = 0.02> : {w}",
             f"%p0 = ge.matmul %x, %w0 : ({x}, {w}) -> {y}"]
    if products == 2:
        lines += [f"%w1 = ge.const #ge.random<normal, seed = 8, mean = 0.0, std = 0.02> : {w}",
                  f"%p1 = ge.matmul %x, %w1 : ({x}, {w}) -> {y}",
                  f"%s = ge.silu %p0 : ({y}) -> {y}",
                  f"%y = ge.mul %s, %p1 : ({y}, {y}) -> {y}"]
    out = "%y" if products == 2 else "%p0"
    body = "\n  ".join(lines)
    return (f'func.func @main(%x: {x} {{ge.name = "x"}}) -> ({y} {{ge.name = "out"}}) {{\n  {body}\n'
            f"  func.return {out} : {y}\n}}")


def measure(m: int, k: int, n: int, products: int, hw: str, rank: int = 0) -> dict:
    """Compile (one kernel, the tiling of `rank`) and simulate one point."""
    text = module_text(m, k, n, products)
    module = parse_module(make_context(), text, "gemm.mlir")
    stages = CompilePipeline(hw=hw, debug=True).stages()
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        run_pipeline(stages[:-1], make_context(), module)
        cubes = [op for op in module.walk() if op.name.startswith("fused.") and "matmul" in op.name]
        for op in cubes:
            if op.name == "fused.matmul_bias_act":  # the op fused-split-k chooses a form for
                pin_form(op, "one kernel")
            if rank:
                op.attributes["npu.tiling_rank"] = IntegerAttr(rank, i64)
        run_pipeline(stages[-1:], make_context(), module)
    found = [LINE.search(line) for line in err.getvalue().splitlines() if ": cube " in line]
    found = [f for f in found if f]
    if len(found) != 1:
        raise RuntimeError(f"{m}x{k}x{n}: expected one cube kernel, got {len(found)}")
    f = found[0]
    sim = simulate(module, random_inputs(input_specs(main_function(module)), 0), hw=hw, check_races=False)
    # The cube kernel's own phase: a merged launch may hold a layout conversion after it.
    (cycles,) = [p.end - p.start for kr in sim.report.kernels for p in kr.phases or [kr] if p.name == f.group(1)]
    est = int(f.group(8))
    return dict(m=m, k=k, n=n, products=products, rank=rank, mb=int(f.group(2)), n_block=int(f.group(3)),
                per_core=int(f.group(4)), cores=int(f.group(5)), resident=bool(f.group(6)), kc=int(f.group(7)),
                estimate=est, simulated=cycles, error=est / cycles - 1)


def summary(rows: list[dict]) -> None:
    chosen = [r for r in rows if r["rank"] == 0]
    print("\nabsolute error of the chosen tiling's estimate (mean / worst), by M:")
    for m in sorted({r["m"] for r in chosen}):
        errs = [abs(r["error"]) for r in chosen if r["m"] == m]
        print(f"  M={m:<5} {100 * sum(errs) / len(errs):5.1f}% / {100 * max(errs):5.1f}%  ({len(errs)} points)")
    errs = [abs(r["error"]) for r in chosen]
    signed = [r["error"] for r in chosen]
    print(f"  all     {100 * sum(errs) / len(errs):5.1f}% / {100 * max(errs):5.1f}%  (mean signed {100 * sum(signed) / len(signed):+.1f}%, {len(errs)} points)")
    regrets = []
    for r in chosen:
        peers = [p for p in rows if (p["m"], p["k"], p["n"], p["products"]) == (r["m"], r["k"], r["n"], r["products"])]
        if len(peers) > 1:
            regrets.append(r["simulated"] / min(p["simulated"] for p in peers) - 1)
    if regrets:
        print(f"regret of rank 0 against the best simulated of the ranks tried: mean {100 * sum(regrets) / len(regrets):.1f}%, "
              f"worst {100 * max(regrets):.1f}% ({len(regrets)} shapes)")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--m", default=",".join(map(str, DEFAULT_M)))
    p.add_argument("--kn", default=",".join(f"{k}x{n}" for k, n in DEFAULT_KN), help="KxN,... pairs")
    p.add_argument("--products", default="1,2")
    p.add_argument("--ranks", type=int, default=1, help="also pin the tilings ranked 1..R-1")
    p.add_argument("--hw", default="ascend910")
    p.add_argument("--csv")
    args = p.parse_args(argv)
    ms = [int(v) for v in args.m.split(",")]
    kns = [tuple(int(v) for v in pair.split("x")) for pair in args.kn.split(",")]
    rows = []
    start = time.perf_counter()
    print(f"{'M':>5}{'K':>6}{'N':>6}{'prod':>5}{'rank':>5}{'item':>10}{'/core':>6}{'cores':>6}{'Ares':>5}{'kc':>5}{'estimate':>10}{'simulated':>10}{'error':>8}")
    for products in (int(v) for v in args.products.split(",")):
        for m in ms:
            for k, n in kns:
                for rank in range(args.ranks):
                    try:
                        r = measure(m, k, n, products, args.hw, rank)
                    except Exception as e:  # noqa: BLE001 - a point that fails is reported, the sweep goes on
                        print(f"{m:>5}{k:>6}{n:>6}{products:>5}{rank:>5}  failed: {str(e).splitlines()[0][:120]}", flush=True)
                        continue
                    rows.append(r)
                    print(f"{m:>5}{k:>6}{n:>6}{products:>5}{rank:>5}{r['mb']:>5}x{r['n_block']:<4}{r['per_core']:>6}{r['cores']:>6}"
                          f"{'y' if r['resident'] else '':>5}{r['kc']:>5}{r['estimate']:>10}{r['simulated']:>10}{100 * r['error']:>7.1f}%", flush=True)
    if rows:
        summary(rows)
    print(f"({time.perf_counter() - start:.0f} s)")
    if args.csv and rows:
        with open(args.csv, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
