"""Differential fuzzing against onnxruntime: random valid ONNX graphs of the ops the
importer supports, run by onnxruntime and by every gecomp path, each path's
outcome classified; a failing graph is reduced to a minimal one, printed in
ONNX's textual syntax and saved.

    python bench/fuzz.py --seed 0 --count 200 --budget-s 900
    python bench/fuzz.py --seed 3 --count 1 --first 17 -v     # graph 17 of seed 3 alone
    python bench/fuzz.py --seed 0 --count 50 --paths fused/tiny,eager/tiny
    python bench/fuzz.py --seed 0 --count 50 --ops Conv,MatMul,Add,Relu   # these ops only

Graph i of seed S is always the same graph (`frontend/fuzz_graphs.py`); paths
and statuses are those of `frontend/fuzz_paths.py`. Failures (crash, miscompile,
sim error, a refusal on ascend910 of a graph whose nodes each compile alone)
are reduced on the first path that shows them (`frontend/fuzz_reduce.py`) and
saved as DIR/<seed>-<index>-<path>.onnxtxt, its first lines comments naming the
failure. The run stops starting graphs after --budget-s seconds; the table at
the end counts the graphs run. Exit status 1 if any graph failed.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter

import numpy as np

from gecomp.core.diagnostics import CompileError
from gecomp.frontend.fuzz_graphs import generate, op_types
from gecomp.frontend.fuzz_paths import FAILURES, PATHS, PATHS_BY_NAME, STATUSES, run_graph
from gecomp.frontend.fuzz_reduce import reduce_graph, to_text


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        paths = _paths(args.paths)
        ops = _ops(args.ops)
    except CompileError as e:
        print(f"error: {e.message}", file=sys.stderr)
        return 1
    start = time.monotonic()
    counts = {p.name: Counter() for p in paths}
    failures: list[tuple[str, str, str, str]] = []  # graph, path, outcome, saved file
    graphs = 0
    for index in range(args.first, args.first + args.count):
        if time.monotonic() - start > args.budget_s:
            print(f"budget of {args.budget_s:g} s spent after {graphs} graphs", file=sys.stderr)
            break
        g = generate(args.seed, index, args.min_nodes, args.max_nodes, ops)
        outcomes = run_graph(g.model, g.inputs, paths)
        graphs += 1
        for name, outcome in outcomes.items():
            counts[name][outcome.status] += 1
        bad = {name: o for name, o in outcomes.items() if o.status in FAILURES}
        if args.verbose or bad:
            shown = ", ".join(f"{n}: {o}" for n, o in outcomes.items() if o.status != "ok") or "ok"
            print(f"[{g.name}] {len(g.model.graph.node)} nodes: {shown}", flush=True)
        if bad:
            name, outcome = next(iter(bad.items()))
            saved = _reduce_and_save(args, g, PATHS_BY_NAME[name], outcome)
            failures.append((g.name, name, str(outcome), saved))
    print(format_table(graphs, counts, [p.name for p in paths]))
    print(f"\n{graphs} graphs (seed {args.seed}, from index {args.first}) in {time.monotonic() - start:.0f} s")
    for graph, path, outcome, saved in failures:
        print(f"  {graph} {path}: {outcome[:200]}{f'  -> {saved}' if saved else ''}")
    return 1 if failures else 0


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=_natural, default=0, help="the seed (graph i of a seed is always the same)")
    p.add_argument("--count", type=_natural, default=100, help="graphs to generate")
    p.add_argument("--first", type=_natural, default=0, help="index of the first graph")
    p.add_argument("--budget-s", type=float, default=600.0, help="start no graph after this many seconds")
    p.add_argument("--min-nodes", type=_natural, default=3)
    p.add_argument("--max-nodes", type=_natural, default=20)
    p.add_argument("--paths", default=",".join(p.name for p in PATHS),
                   help="comma-separated paths (default: all): " + ", ".join(p.name for p in PATHS))
    p.add_argument("--ops", default="", help="comma-separated ops to draw from (default: every op the fuzzer "
                   "knows that the importer supports); graph i of a seed then differs")
    p.add_argument("--out", default="fuzz-failures", metavar="DIR", help="where reduced failures are saved")
    p.add_argument("--reduce-s", type=float, default=120.0, help="time for reducing one failure (0: no reduction)")
    p.add_argument("-v", "--verbose", action="store_true", help="a line per graph, not only per failing one")
    return p


def _natural(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer 0 or more, got '{text}'") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer 0 or more, got {value}")
    return value


def _paths(text: str):
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in PATHS_BY_NAME]
    if unknown or not names:
        raise CompileError(f"unknown path '{unknown[0] if unknown else text}' (paths: {', '.join(PATHS_BY_NAME)})")
    return [PATHS_BY_NAME[n] for n in names]


def _ops(text: str) -> list[str] | None:
    names = [n.strip() for n in text.split(",") if n.strip()]
    known = op_types()
    unknown = [n for n in names if n not in known]
    if unknown:
        raise CompileError(f"unknown op '{unknown[0]}' (ops: {', '.join(known)})")
    return names or None


def _reduce_and_save(args, g, path, outcome) -> str:
    model, inputs = g.model, g.inputs
    if args.reduce_s > 0:
        model, inputs = reduce_graph(model, inputs, path, outcome, budget_s=args.reduce_s, seed=args.seed)
    text = to_text(model)
    print(f"  reduced ({len(model.graph.node)} nodes) on {path.name}: {outcome}\n" + _indent(text), flush=True)
    os.makedirs(args.out, exist_ok=True)
    file = os.path.join(args.out, f"{g.name}-{path.name.replace('/', '-')}.onnxtxt")
    with open(file, "w") as f:
        f.write(f"# {g.name} on {path.name}: {outcome}\n".replace("\n", " ").rstrip() + "\n" + text + "\n")
    np.savez(file.removesuffix(".onnxtxt") + ".npz", **inputs)
    return file


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


def format_table(graphs: int, counts: dict[str, Counter], names: list[str]) -> str:
    """graphs, then per path: ok, refusal, unjust refusal, crash, miscompile, sim error."""
    header = f"{'path':<18}" + "".join(f"{s:>16}" for s in STATUSES)
    lines = [f"graphs: {graphs}", header, "-" * len(header)]
    for name in names:
        lines.append(f"{name:<18}" + "".join(f"{counts[name][s]:>16}" for s in STATUSES))
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
