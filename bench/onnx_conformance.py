"""ONNX conformance of the importer: ONNX's own backend node test cases of every
supported op, imported with ge-translate's importer, run on a backend, compared
with ONNX's expected outputs. Prints a table per op and the totals.

    python bench/onnx_conformance.py                      # reference interpreter
    python bench/onnx_conformance.py --op Conv --op Pad -v   # some ops, list what did not pass
    python bench/onnx_conformance.py --markdown           # the README's table
    python bench/onnx_conformance.py --suite node --backend npu   # all 1884 cases, by category
    python bench/onnx_conformance.py --suite pytorch-converted    # the onnx wheel's model suites
    python bench/onnx_conformance.py --suite node --backend npu --progress   # each case as it ends
    python bench/onnx_conformance.py --suite node --backend npu --category other   # the non-plain cases
    python bench/onnx_conformance.py --backend npu --times        # each case's seconds: the slowest, those above 5 s
    python bench/onnx_conformance.py --backend npu --op MaxPool --times --slow-s 2

--suite runs a whole suite whatever its ops, printing passed / refused (a clean
one-line UnsupportedError at import, or NoUnitForTypeError from ge-compile for an
element type no NPU unit computes the op in: f64 products) / failed, then the
refused cases by kind (`refusal_kind`: op not supported, sequence or optional,
element type X, no NPU kernel for dtype X): `node` is every ONNX node test
case, counted by category (plain tensors of float32, float16, int8, uint8, int32,
int64 or bool without control flow or ML / training ops, against the others by
the reason they are not); `pytorch-converted` and `pytorch-operator` are the
model suites shipped in the onnx wheel.

Without --op it also checks that every node test case of an unsupported op is
refused at import with a one-line error (`run_refusals`).

--times measures every case (CPU seconds of this process, and wall seconds:
the machine may be shared) and prints the slowest cases and every one above
--slow-s (issue 35: no single node test above 5 s), then the seconds per op.

`--backend` picks an entry of `gecomp.frontend.conformance.BACKENDS`: `reference`
(the reference interpreter), `npu` (ge-compile, then the NPU simulator: it works
once the ge-compile pipeline is registered), or `pipeline:P` for any registered
pipeline P (`pipeline:ge-graph-opt`, `pipeline:ge-fuse`).
"""

from __future__ import annotations

import argparse
import sys
import time

from gecomp.core.diagnostics import CompileError
from gecomp.frontend.conformance import (
    BACKENDS,
    SUITES,
    UNSUPPORTED,
    format_table,
    node_cases,
    pass_rates,
    refusals_by_kind,
    run_conformance,
    run_function_cases,
    run_refusals,
    run_suite,
    summarize,
    summarize_categories,
    total_row,
)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", default="reference", metavar="|".join([*BACKENDS, "pipeline:P"]))
    p.add_argument("--op", action="append", dest="ops", metavar="OP", help="only this op (repeatable)")
    p.add_argument("-v", "--verbose", action="store_true", help="list every case that did not pass, with why")
    p.add_argument("--markdown", action="store_true", help="print the table in Markdown")
    p.add_argument("--no-multi-node", action="store_true",
                   help="skip the multi-node cases (expanded ONNX functions)")
    p.add_argument("--suite", choices=SUITES, help="run every case of a whole suite, whatever its ops")
    p.add_argument("--category", action="append", dest="categories", metavar="CATEGORY",
                   help="with --suite node, only the cases of this category (repeatable): "
                        "'plain tensors', 'other' (every non-plain case) or one of the others "
                        "('double', 'bfloat16', 'control flow'...)")
    p.add_argument("--progress", action="store_true",
                   help="print each case to stderr as it finishes (a whole suite on npu takes long)")
    p.add_argument("--function-ops", action="store_true",
                   help="the cases of ops without a converter that ONNX defines by a function body "
                        "(Attention, RotaryEmbedding, the losses...), which the importer expands")
    p.add_argument("--times", action="store_true",
                   help="time every case: print the slowest, each above --slow-s, and the seconds per op")
    p.add_argument("--slow-s", type=float, default=5.0, metavar="S",
                   help="with --times, list every case above S CPU seconds (default 5)")
    p.add_argument("--slowest", type=int, default=10, metavar="N", help="with --times, list at least the N slowest")
    args = p.parse_args(argv)
    if args.slow_s < 0 or args.slowest < 0:
        p.error(f"--slow-s and --slowest must not be negative (got {args.slow_s:g} and {args.slowest})")
    if args.suite:
        return _run_suite(args)
    if args.function_ops:
        return _run_function_ops(args)
    if args.times:
        node_cases(args.ops)  # ONNX's cases are generated once (seconds): not the first case's time
    clock = CaseClock() if args.times else None
    start = time.perf_counter()
    results = _run_or_report(run_conformance, args.backend, args.ops, not (args.no_multi_node or args.ops),
                             clock.lap if clock else None)
    if results is None:
        return 1
    rows = summarize(results, args.ops)
    print(format_table(rows, markdown=args.markdown))
    if clock is not None:
        print("\n" + clock.table(args.slow_s, args.slowest))
    total = total_row(rows)
    overall, in_scope = pass_rates(total)
    print(
        f"\nsingle-op cases: passed {total.passed} of {total.cases} ({overall:.1%}); "
        f"{in_scope:.1%} of the {total.cases - total.unsupported} not refused as unsupported "
        f"[{args.backend} backend, {time.perf_counter() - start:.1f} s]"
    )
    _print_refusals(results)
    refusals = [] if args.ops else run_refusals()
    if refusals:
        clean = sum(r.status == UNSUPPORTED for r in refusals)
        print(
            f"unsupported ops: {len(refusals)} cases of {len({r.op_type for r in refusals})} ops, "
            f"{clean} refused at import with a one-line error, {len(refusals) - clean} not"
        )
    _list_failures(args, [*results, *(r for r in refusals if r.status != UNSUPPORTED)])
    return 0


def _run_function_ops(args) -> int:
    start = time.perf_counter()
    results = _run_or_report(run_function_cases, args.backend, args.ops)
    if results is None:
        return 1
    rows = summarize(results, args.ops)
    print(format_table(rows, markdown=args.markdown))
    total = total_row(rows)
    print(f"\nfunction ops: passed {total.passed} of {total.cases} [{args.backend} backend, "
          f"{time.perf_counter() - start:.1f} s]")
    _print_refusals(results)
    _list_failures(args, results)
    return 0


def _run_suite(args) -> int:
    start = time.perf_counter()
    results = _run_or_report(run_suite, args.suite, args.backend, _progress if args.progress else None,
                             args.categories)
    if results is None:
        return 1
    rows = summarize_categories(results) if args.suite == "node" else summarize(results, [args.suite])[:1]
    print(format_table(rows, markdown=args.markdown, first="category" if args.suite == "node" else "suite",
                       refused="refused"))
    passed = sum(r.status == "passed" for r in results)
    print(f"\n{args.suite}: passed {passed} of {len(results)} ({passed / max(len(results), 1):.1%}) "
          f"[{args.backend} backend, {time.perf_counter() - start:.1f} s]")
    _print_refusals(results)
    _list_failures(args, results)
    return 0


class CaseClock:
    """Each case's CPU and wall seconds, from the end of the previous case to its
    own end (`lap` is `run_conformance`'s progress callback)."""

    def __init__(self):
        self.cpu, self.wall = time.process_time(), time.perf_counter()
        self.laps: list[tuple[float, float, object]] = []  # (cpu s, wall s, result)

    def lap(self, result) -> None:
        cpu, wall = time.process_time(), time.perf_counter()
        self.laps.append((cpu - self.cpu, wall - self.wall, result))
        self.cpu, self.wall = cpu, wall

    def table(self, slow_s: float, slowest: int) -> str:
        """The cases above `slow_s` CPU seconds (at least the `slowest` ones), slowest
        first, then the CPU seconds per op, most first."""
        laps = sorted(self.laps, key=lambda lap: -lap[0])
        above = sum(cpu > slow_s for cpu, _, _ in laps)
        lines = [f"{'case':<56}{'op':<24}{'status':<13}{'CPU s':>8}{'wall s':>8}"]
        for cpu, wall, r in laps[: max(above, slowest)]:
            lines.append(f"{r.name:<56}{r.op_type:<24}{r.status:<13}{cpu:>8.2f}{wall:>8.2f}")
        total = sum(cpu for cpu, _, _ in laps)
        lines.append(f"{above} of {len(laps)} cases above {slow_s:g} CPU s; all cases {total:.1f} CPU s")
        per_op: dict[str, list[float]] = {}
        for cpu, _, r in laps:
            per_op.setdefault(r.op_type, []).append(cpu)
        lines.append("\nCPU s per op (cases, slowest case): " + "; ".join(
            f"{op} {sum(t):.1f} ({len(t)}, {max(t):.1f})"
            for op, t in sorted(per_op.items(), key=lambda item: -sum(item[1]))))
        return "\n".join(lines)


def _print_refusals(results) -> None:
    kinds = refusals_by_kind(results)
    if kinds:
        print("refused, by kind: " + "; ".join(f"{kind} {count}" for kind, count in kinds.items()))


def _progress(result) -> None:
    print(f"{result.status:<12}{result.category or result.op_type:<32}{result.name}", file=sys.stderr, flush=True)


def _run_or_report(run, *args):
    """`run(*args)`, or None after printing its CompileError (a bad backend name)."""
    try:
        return run(*args)
    except CompileError as e:
        print(f"error: {e.message}", file=sys.stderr)
        return None


def _list_failures(args, results) -> None:
    if args.verbose:
        for r in results:
            if r.status != "passed":
                print(f"  {r.status:<12}{r.name}: {r.reason}")


if __name__ == "__main__":
    sys.exit(main())
