"""The project's model set, end to end: one row per model (each export of
bench/models/ with both exporters, and ONNX's light zoo).

    python bench/models.py                         # every model, default budget
    python bench/models.py --only bert.dynamo --only zoo.resnet50
    python bench/models.py --no-compile --markdown # import and reference only
    python bench/models.py --timeout-s 60          # per-model budget (seconds)
    python bench/models.py --precision force_fp16  # ge-compile{precision=...} (ATC's modes)

Columns: imports (ok, or the one-line error), the reference interpreter against
onnxruntime (max abs error, and relative to the largest output), ge-compile
(default preset ascend910, through the pass driver with verification after every
pass, as `ge-opt -p ge-compile`), the simulated outputs against onnxruntime
(worst error over the tolerance of the precision compiled: <= 1 passes, as
`ge-sim --check` judges); only when that fails, the float64 truth (the model
computed in double by onnx.reference) and the simulator's and onnxruntime's
worst errors against it (x tol), and the judge that passed the row: "ort"
(within tolerance of onnxruntime), "f64" (no further from the truth than
onnxruntime is: bench/models/judge.py) or "fail"; kernels (each phase of a merged launch counted) and
launches (npu.launch ops: npu-merge-launches joins a stream's run), simulated cycles, the
module's roofline cycles and roofline / cycles, and the seconds spent importing,
compiling and simulating.

Each model runs in a child process of its own with a time budget: a crash is a
row ("crash: ValueError: ..."), and a model that does not finish in time keeps
the columns it reached, its last column saying which step ran out of time.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

COLUMNS = [
    ("model", "model"),
    ("imports", "imports"),
    ("ref_err", "ref vs ort (abs)"),
    ("ref_rel", "rel"),
    ("compiles", "compiles"),
    ("sim_check", "sim vs ort (x tol)"),
    ("sim_f64", "sim vs f64"),
    ("ort_f64", "ort vs f64"),
    ("judge", "judge"),
    ("kernels", "kernels"),
    ("launches", "launches"),
    ("cycles", "cycles"),
    ("roofline", "roofline"),
    ("ratio", "roofline/cycles"),
    ("t_import", "import s"),
    ("t_compile", "compile s"),
    ("t_simulate", "simulate s"),
    ("note", "note"),
]


# ---- one model (in the child process) --------------------------------------------------


def measure(name: str, compile_too: bool, hw: str, precision: str | None = None) -> None:
    """Print the row of `name` as JSON lines, one after every step, `step` naming
    the one under way ("" when done): the parent keeps the last line it got, so a
    step that runs out of time leaves the earlier ones and is named."""
    from gecomp.bench import models
    from gecomp.bench.models import float64, judge, run

    row = {"model": name}

    def emit(**values):
        row.update(values)
        print(json.dumps(row), flush=True)

    emit(step="loading")
    proto = models.load(name)
    inputs = models.inputs(name)
    emit(step="import")
    start = time.perf_counter()
    try:
        module = run.import_proto(proto)
    except Exception as e:  # noqa: BLE001 - the row says why
        emit(imports=_why(e), t_import=time.perf_counter() - start, step="")
        return
    emit(imports="ok", t_import=time.perf_counter() - start, step="reference")
    reference = run.reference(module, inputs)
    emit(step="onnxruntime")
    want = run.onnxruntime_outputs(proto, inputs)
    error, relative = run.max_errors(want, reference)
    emit(ref_err=error, ref_rel=relative, step="compile" if compile_too else "")
    if not compile_too:
        return
    start = time.perf_counter()
    try:
        run.compile_module(module, hw, precision)
    except Exception as e:  # noqa: BLE001
        emit(compiles=_why(e), t_compile=time.perf_counter() - start, step="")
        return
    emit(compiles="ok", t_compile=time.perf_counter() - start, step="simulate")
    start = time.perf_counter()
    try:
        sim = run.simulate(module, inputs, want, hw)
    except Exception as e:  # noqa: BLE001
        emit(sim_check=_why(e), t_simulate=time.perf_counter() - start, step="")
        return
    emit(
        sim_check=sim.worst_ratio, kernels=sim.kernels, launches=sim.launches, cycles=sim.cycles, roofline=sim.roofline_cycles,
        ratio=sim.roofline_cycles / sim.cycles if sim.cycles else None,
        t_simulate=time.perf_counter() - start, step="" if sim.worst_ratio <= 1 else "f64 truth",
    )
    verdict = judge.judge(want, sim.outputs, sim.floor, sim.worst_ratio, lambda: float64.truth(proto, inputs))
    emit(
        judge=verdict.judge, sim_f64=verdict.candidate_vs_truth, ort_f64=verdict.oracle_vs_truth,
        note=_judge_note(verdict, sim.worst), step="",
    )


def _judge_note(verdict, worst_vs_ort: str) -> str:
    """Why a row failed (its worst element against onnxruntime, and against the
    truth), or the absolute errors against the truth of a row the f64 judge passed."""
    if verdict.judge == "ort":
        return ""
    if verdict.judge == "f64":
        return f"vs f64 max abs: sim {verdict.candidate_abs:.3g}, ort {verdict.oracle_abs:.3g}"
    return "; ".join(part for part in (worst_vs_ort, verdict.note) if part)


def _why(e: BaseException) -> str:
    """A failure as one line: a CompileError's own message, else the exception type."""
    from gecomp.core.diagnostics import CompileError

    if isinstance(e, CompileError):
        return e.message.splitlines()[0] if e.message else "error"
    lines = str(e).strip().splitlines()
    return f"crash: {type(e).__name__}: {lines[0] if lines else ''}"


# ---- the table (in the parent) ---------------------------------------------------------


def guarded_row(name: str, compile_too: bool, hw: str, timeout_s: float, precision: str | None = None) -> dict:
    """The row of `name`, measured in a child process within `timeout_s`."""
    command = [sys.executable, os.path.abspath(__file__), "--row", name, "--hw", hw]
    if not compile_too:
        command.append("--no-compile")
    if precision:
        command += ["--precision", precision]
    start = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
        out, err, code, timed_out = done.stdout, done.stderr, done.returncode, False
    except subprocess.TimeoutExpired as e:
        out, err, code, timed_out = _text(e.stdout), _text(e.stderr), None, True
    lines = [line for line in out.splitlines() if line.startswith("{")]
    row = json.loads(lines[-1]) if lines else {"model": name}
    step = row.pop("step", "")  # the step under way; "" once the last one is done
    if timed_out and (step or not lines):
        row["note"] = f"{step or 'run'}: did not finish in {timeout_s:.0f} s"
        if step == "simulate":
            row["t_simulate"] = None
    elif not timed_out and code != 0:
        last = [line for line in err.strip().splitlines() if line.strip()]
        row["note"] = f"crash in {step or 'run'}: {last[-1] if last else f'exit {code}'}"
    row["seconds"] = time.perf_counter() - start
    return row


def _progress(row: dict) -> str:
    """One line per finished model on standard error, while the table waits for all."""
    steps = [f"{key}={_cell(key, row[key])}" for key, _ in COLUMNS[1:] if row.get(key) not in (None, "")]
    return f"  {row['model']} ({row['seconds']:.0f} s): {', '.join(steps)}"


def _text(data) -> str:
    if data is None:
        return ""
    return data.decode(errors="replace") if isinstance(data, bytes) else data


def _cell(key: str, value) -> str:
    if value is None or value == "":
        return ""
    if isinstance(value, str):
        return value
    if key in ("ref_err", "ref_rel", "sim_check", "sim_f64", "ort_f64"):
        return f"{value:.2g}"
    if key == "ratio":
        return f"{value:.1%}"
    if key.startswith("t_"):
        return f"{value:.1f}"
    if isinstance(value, float):
        return f"{value:,.0f}"
    return f"{value:,}"


def format_table(rows: list[dict], markdown: bool) -> str:
    headers = [title for _, title in COLUMNS]
    cells = [[_cell(key, row.get(key)) for key, _ in COLUMNS] for row in rows]
    if markdown:
        lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
        lines += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in cells]
        return "\n".join(lines)
    widths = [max(len(h), *(min(len(r[i]), 60) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells]
    return "\n".join(lines)


def summary(rows: list[dict], compile_too: bool) -> str:
    imported = sum(r.get("imports") == "ok" for r in rows)
    matched = sum(r.get("ref_rel") is not None and r["ref_rel"] <= 1e-4 for r in rows)
    text = f"{len(rows)} models: {imported} import, {matched} match onnxruntime on the reference interpreter"
    if compile_too:
        compiled = sum(r.get("compiles") == "ok" for r in rows)
        checked = sum(r.get("judge") in ("ort", "f64") for r in rows)
        by_truth = sum(r.get("judge") == "f64" for r in rows)
        text += f", {compiled} compile, {checked} simulate within tolerance"
        if by_truth:
            text += f" ({by_truth} of them no further from the float64 truth than onnxruntime: judge f64)"
    unfinished = [r["model"] for r in rows if "did not finish" in str(r.get("note", ""))]
    if unfinished:
        text += f"; did not finish in the budget: {', '.join(unfinished)}"
    return text


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", action="append", metavar="NAME", help="only this model (repeatable; see --list)")
    p.add_argument("--no-compile", action="store_true", help="import and reference only")
    p.add_argument("--markdown", action="store_true", help="print the table in Markdown")
    p.add_argument("--timeout-s", type=float, default=300.0, help="time budget per model (default 300)")
    p.add_argument("--hw", default="ascend910", help="hardware preset (default ascend910)")
    p.add_argument("--precision", metavar="MODE", help="ge-compile's precision mode (force_fp16, "
                   "allow_fp32_to_fp16, must_keep_origin_dtype, allow_mix_precision; default: ge-compile's)")
    p.add_argument("--list", action="store_true", help="list the models and exit")
    p.add_argument("--row", metavar="NAME", help=argparse.SUPPRESS)  # the child process
    args = p.parse_args(argv)
    compile_too = not args.no_compile
    if args.row:
        measure(args.row, compile_too, args.hw, args.precision)
        return 0
    from gecomp.bench import models

    known = models.names()
    if args.list:
        print("\n".join(known))
        return 0
    unknown = [n for n in args.only or () if n not in known]
    if unknown:
        print(f"error: unknown model(s) {', '.join(unknown)} (see --list)", file=sys.stderr)
        return 1
    if args.timeout_s <= 0:
        print("error: --timeout-s must be positive", file=sys.stderr)
        return 1
    if args.precision:
        from gecomp.core.diagnostics import CompileError
        from gecomp.transforms.graph.precision import check_mode

        try:
            check_mode(args.precision, "--precision")
        except CompileError as e:
            print(e.format(), file=sys.stderr)
            return 1
    rows = []
    for name in args.only or known:
        rows.append(guarded_row(name, compile_too, args.hw, args.timeout_s, args.precision))
        print(_progress(rows[-1]), file=sys.stderr, flush=True)
    print(format_table(rows, args.markdown))
    print("\n" + summary(rows, compile_too))
    return 0


if __name__ == "__main__":
    sys.exit(main())
