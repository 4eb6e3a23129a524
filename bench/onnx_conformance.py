"""ONNX conformance of the importer: ONNX's own backend node test cases of every
supported op, imported with ge-translate's importer, run on a backend, compared
with ONNX's expected outputs. Prints a table per op and the totals.

    python bench/onnx_conformance.py                      # reference interpreter
    python bench/onnx_conformance.py --op Conv --op Pad -v   # some ops, list what did not pass
    python bench/onnx_conformance.py --markdown           # the README's table

Without --op it also checks that every node test case of an unsupported op is
refused at import with a one-line error (`run_refusals`).

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
    UNSUPPORTED,
    format_table,
    pass_rates,
    run_conformance,
    run_refusals,
    summarize,
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
    args = p.parse_args(argv)
    start = time.perf_counter()
    try:
        results = run_conformance(args.backend, args.ops, multi_node=not (args.no_multi_node or args.ops))
    except CompileError as e:
        print(f"error: {e.message}", file=sys.stderr)
        return 1
    rows = summarize(results, args.ops)
    print(format_table(rows, markdown=args.markdown))
    total = total_row(rows)
    overall, in_scope = pass_rates(total)
    print(
        f"\nsingle-op cases: passed {total.passed} of {total.cases} ({overall:.1%}); "
        f"{in_scope:.1%} of the {total.cases - total.unsupported} not refused as unsupported "
        f"[{args.backend} backend, {time.perf_counter() - start:.1f} s]"
    )
    refusals = [] if args.ops else run_refusals()
    if refusals:
        clean = sum(r.status == UNSUPPORTED for r in refusals)
        print(
            f"unsupported ops: {len(refusals)} cases of {len({r.op_type for r in refusals})} ops, "
            f"{clean} refused at import with a one-line error, {len(refusals) - clean} not"
        )
    if args.verbose:
        for r in [*results, *(r for r in refusals if r.status != UNSUPPORTED)]:
            if r.status != "passed":
                print(f"  {r.status:<12}{r.name}: {r.reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
