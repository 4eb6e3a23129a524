"""Time to result at model scale (issue 35): how long a user waits, and how much
memory it takes, from an ONNX file to checked simulated outputs.

    python bench/time_to_result.py                          # every model of the set, then BERT-base
    python bench/time_to_result.py --models zoo.resnet50 --models bert_base
    python bench/time_to_result.py --models bert.torchscript --baseline 8a81dfd --markdown
    python bench/time_to_result.py --timeout 120            # CPU seconds per child run
    python bench/time_to_result.py --no-full                # skip the run with the shortcuts off
    python bench/time_to_result.py --approx                 # plus the approximate simulation's columns
    python bench/time_to_result.py --list

Rows: every model of the project's set (`gecomp.bench.models.names()`: the
committed exports and ONNX's light zoo, ResNet-50 among them) and `bert_base`, a
12-layer BERT-base (sequence 128, hidden 768, 12 heads, FFN 3072, BertConfig's
vocabulary) exported here from random weights with transformers and the
TorchScript exporter, as `bench/models/export.py` exports the set (needs torch and
transformers; exported once into the cache folder, `--cache`).

Columns, each measured in a child process of its own so that the peak resident
memory (the child's VmHWM) is the model's alone:

* import s: ONNX model -> ge module (`ge-translate`'s importer);
* compile s: `ge-compile` through the pass driver (what `ge-sim --pipeline ge-compile` runs);
* simulate s; compile and simulate CPU seconds (what a loaded machine does not
  inflate); instructions (npu instructions the cores executed) and instructions
  per CPU second; cycles;
* check: the simulated outputs against onnxruntime, as the worst error over the
  tolerance of the precision compiled (<= 1 passes, as `ge-sim --check` judges);
* RSS MiB: the child's peak resident memory;
* full: the same child with every shortcut off: the compiler's kernel cache and
  memoised estimates (GECOMP_KERNEL_CACHE=0) and the simulator's fast paths
  (`execute(shortcuts=False)`, as `ge-sim --exact`): its compile and simulate CPU
  seconds, instructions per CPU second and RSS; a row whose cycles, outputs or
  instruction count differ from the full run says so in its note;
* with `--approx`: the child of this tree also runs the approximate simulation
  (`execute(approx=True)`, as `ge-sim --approx`: outputs exact, cycles from a few
  timed blocks per launch) after the default one: its simulate CPU seconds, its
  instructions per CPU second *equivalent* (the default's instruction count, which
  it counts exactly, over its CPU seconds), its speedup over the default ("approx
  x") and its relative cycle error; a row whose approximate outputs or instruction
  count differ says so in its note;
* with `--baseline COMMIT`: that commit is checked out into a temporary git
  worktree (removed afterwards) and the same children run with its code
  (PYTHONPATH = a temporary folder whose `gecomp` is a link to the worktree: the
  repository root is the package); the ratio columns are baseline CPU seconds (RSS: MiB)
  over this tree's, so > 1 is faster (smaller) now. Both run in the same
  invocation, so the load of a shared machine largely cancels.

A child that runs out of `--timeout` (CPU seconds, so that a loaded machine does
not time a row out; also stopped after `WALL_FACTOR` times as many wall seconds)
keeps the columns it reached and its note names the step that did not finish; a
crash is a one-line note.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import resource
import signal
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BERT_BASE = "bert_base"
BERT_BASE_SEQUENCE = 128
WALL_FACTOR = 10  # wall seconds allowed per CPU second of --timeout (a machine loaded ten times over)
DEFAULT_CACHE = os.path.join(os.path.expanduser("~"), ".cache", "gecomp", "time_to_result")


# ---- the model files both trees read ---------------------------------------------------


def row_names() -> list[str]:
    from gecomp.bench import models

    return [*models.names(), BERT_BASE]


def prepare(name: str, folder: str, cache: str) -> tuple[str, str]:
    """Write `name` as `folder/name.onnx` (weights in place) and its inputs with
    onnxruntime's outputs as `folder/name.npz`: the files every child reads, so the
    current tree and a baseline run the very same model and data."""
    import onnx

    from gecomp.bench import models
    from gecomp.bench.models import run, stored

    if name == BERT_BASE:
        proto = stored.restore(onnx.load(bert_base_file(cache)))
        inputs = stored.inputs(proto)
    else:
        proto, inputs = models.load(name), models.inputs(name)
    want = run.onnxruntime_outputs(proto, inputs)
    model_file = os.path.join(folder, f"{name}.onnx")
    data_file = os.path.join(folder, f"{name}.npz")
    onnx.save(proto, model_file, save_as_external_data=proto.ByteSize() > 1_900_000_000)
    np.savez(data_file, **{f"input{i}": x for i, x in enumerate(inputs)},
             **{f"expected{i}": y for i, y in enumerate(want)})
    return model_file, data_file


def bert_base_file(cache: str) -> str:
    """The stripped BERT-base export (`stored.strip`: weights regenerated from their
    rows' statistics when loaded), exported once into `cache`."""
    path = os.path.join(cache, f"{BERT_BASE}.torchscript.onnx")
    if not os.path.exists(path):
        os.makedirs(cache, exist_ok=True)
        from gecomp.bench.models import export

        vocabulary = _bert_base_config().vocab_size
        spec = export.Spec(BERT_BASE, _build_bert_base, [{"kind": "integers", "low": 0, "high": vocabulary}],
                           ("input_ids",))
        export.export(spec, "torchscript", path + ".part")
        os.replace(path + ".part", path)
    return path


def _bert_base_config():
    """BertConfig's defaults are BERT-base: 12 layers, hidden 768, 12 heads, FFN 3072."""
    import transformers

    config = transformers.BertConfig()
    config._attn_implementation = "eager"  # the set's workaround (export.py)
    return config


def _build_bert_base():
    import torch
    import transformers

    from gecomp.bench.models import export

    torch.manual_seed(export.SEED)
    config = _bert_base_config()
    model = export._hidden_state(transformers.BertModel(config))
    return model, (torch.randint(0, config.vocab_size, (1, BERT_BASE_SEQUENCE)),)


# ---- one row in one child process ------------------------------------------------------


def measure(model_file: str, data_file: str, hw: str | None, full: bool, approx: bool = False) -> None:
    """Print the row as JSON lines, one after every step, `step` naming the one
    under way ("" when done), so that a parent that stops a slow child keeps the
    steps it finished. Uses only the entry points every release has had (the
    importer, the pass driver, `simulator.run.execute`), so a baseline tree runs it."""
    import onnx

    from gecomp.core.passes import parse_pass_pipeline, run_pipeline
    from gecomp.frontend.importer import import_model
    from gecomp.frontend.onnx_proto import model_from_proto
    from gecomp.simulator.compare import precision_floor, worst_mismatch
    from gecomp.simulator.run import execute

    row: dict = {}

    def emit(**values):
        row.update(values, rss_mib=_peak_rss_mib())
        print(json.dumps(row), flush=True)

    emit(step="import")
    proto = onnx.load(model_file)
    data = np.load(data_file)
    inputs = [data[f"input{i}"] for i in range(sum(k.startswith("input") for k in data.files))]
    want = [data[f"expected{i}"] for i in range(sum(k.startswith("expected") for k in data.files))]
    with _clocks() as spent:
        module = import_model(model_from_proto(proto))
    del proto
    emit(t_import=spent[0], cpu_import=spent[1], step="compile")
    with _clocks() as spent:
        run_pipeline(parse_pass_pipeline(f"ge-compile{{hw={hw}}}" if hw else "ge-compile"), _make_context(), module)
    emit(t_compile=spent[0], cpu_compile=spent[1], step="simulate")
    with _clocks() as spent:
        execution = execute(module, inputs, hw=hw, **simulator_options(full))
    report = execution.report
    floor = precision_floor(module)
    mismatches = [worst_mismatch(s.name, np.asarray(w), np.asarray(g), floor)
                  for s, w, g in zip(execution.outputs, want, execution.results)]
    worst = max((m for m in mismatches if m is not None), key=lambda m: m.ratio, default=None)
    emit(
        t_simulate=spent[0], cpu_simulate=spent[1], cycles=int(report.total_cycles), instructions=int(report.instructions),
        check=worst.ratio if worst else 0.0, worst=str(worst) if worst else "",
        outputs=len(execution.results) if len(execution.results) == len(want) else -1,
        digest=_digest(execution.results), step="approx" if approx else "",
    )
    if approx:
        with _clocks() as spent:
            approximate = execute(module, inputs, hw=hw, approx=True)
        emit(cpu_approx=spent[1], approx_cycles=int(approximate.report.total_cycles),
             approx_instructions=int(approximate.report.instructions), approx_digest=_digest(approximate.results),
             step="")


def _make_context():
    """The xDSL context of gecomp's dialects, from where the tree keeps it: a
    baseline older than 1e97e9b has it in `core.context`."""
    import importlib

    try:
        return importlib.import_module("gecomp.dialects.context").make_context()
    except ModuleNotFoundError:
        return importlib.import_module("gecomp.core.context").make_context()


@contextlib.contextmanager
def _clocks() -> Iterator[list[float]]:
    """[wall seconds, this process's CPU seconds] of the block: on a shared machine
    the CPU seconds are the figure that other people's work does not inflate."""
    spent = [time.perf_counter(), time.process_time()]
    yield spent
    spent[:] = [time.perf_counter() - spent[0], time.process_time() - spent[1]]


def simulator_options(full: bool) -> dict:
    """The keyword arguments of `execute` that turn every simulator shortcut off
    (`ge-sim --exact`); the compiler's caches are turned off by the environment
    (`run_child`)."""
    return {"shortcuts": False} if full else {}


def _digest(arrays) -> str:
    """A fingerprint of the outputs, to see that the full simulation computes the same."""
    import hashlib

    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(str((a.shape, a.dtype)).encode())
        h.update(a.tobytes())
    return h.hexdigest()[:16]


def _peak_rss_mib() -> float:
    """This process's peak resident memory (VmHWM: the high-water mark of its own
    address space, unlike ru_maxrss, which an exec'd child inherits from its parent)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


# ---- rows in the parent ----------------------------------------------------------------


@dataclass
class Child:
    """One child run's figures: the last JSON line it printed, and why it stopped early."""

    values: dict = field(default_factory=dict)
    note: str = ""

    def get(self, key):
        return self.values.get(key)


def run_child(model_file: str, data_file: str, hw: str | None, full: bool, timeout: float,
              pythonpath: str | None = None, approx: bool = False) -> Child:
    """`measure` in a child process within `timeout` CPU seconds (RLIMIT_CPU: the
    kernel stops it with SIGXCPU) and `WALL_FACTOR` times as many wall seconds; with
    `pythonpath`, the `gecomp` the child imports is the one found there (a baseline tree)."""
    command = [sys.executable, os.path.abspath(__file__), "--row", model_file, data_file]
    command += ["--hw", hw] if hw else []
    command += ["--full"] if full else []
    command += ["--approx-child"] if approx else []
    env = dict(os.environ)
    if full:
        from gecomp.core import memo

        env[memo.ENV] = "0"  # the kernel cache and the memoised estimates and tilings off
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (pythonpath, env.get("PYTHONPATH")) if p)
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=WALL_FACTOR * timeout, env=env,
                              cwd=ROOT, preexec_fn=lambda: _limit_cpu(timeout))
        out, err, code = done.stdout, done.stderr, done.returncode
        timed_out = code == -signal.SIGXCPU
    except subprocess.TimeoutExpired as e:
        out, err, code, timed_out = _text(e.stdout), _text(e.stderr), None, False
    lines = [line for line in out.splitlines() if line.startswith("{")]
    values = json.loads(lines[-1]) if lines else {}
    step = values.pop("step", "import")
    if timed_out:
        return Child(values, f"{step or 'run'}: did not finish in {timeout:g} CPU s")
    if code is None:
        return Child(values, f"{step or 'run'}: did not finish in {WALL_FACTOR * timeout:g} s (wall)")
    if code != 0:
        last = [line.strip() for line in err.splitlines() if line.strip()]
        return Child(values, f"crash in {step or 'run'}: {last[-1] if last else f'exit {code}'}")
    return Child(values)


def _limit_cpu(seconds: float) -> None:
    """In the child, before exec: SIGXCPU once it has used `seconds` of CPU."""
    limit = max(1, math.ceil(seconds))
    resource.setrlimit(resource.RLIMIT_CPU, (limit, limit + 5))


@dataclass
class Row:
    model: str
    fast: Child
    full: Child
    baseline: Child | None = None
    note: str = ""

    def cells(self) -> dict:
        fast, full, base = self.fast, self.full, self.baseline
        cells = {
            "model": self.model,
            "t_import": fast.get("t_import"), "t_compile": fast.get("t_compile"),
            "t_simulate": fast.get("t_simulate"), "cpu_compile": fast.get("cpu_compile"),
            "cpu_simulate": fast.get("cpu_simulate"), "instructions": fast.get("instructions"),
            "ips": _rate(fast), "cycles": fast.get("cycles"), "check": fast.get("check"),
            "rss": fast.get("rss_mib"),
            "full_compile": full.get("cpu_compile"), "full_simulate": full.get("cpu_simulate"),
            "full_ips": _rate(full), "full_rss": full.get("rss_mib"),
        }
        approx_cpu, cycles, approx_cycles = fast.get("cpu_approx"), fast.get("cycles"), fast.get("approx_cycles")
        if approx_cpu:
            cells.update(approx_simulate=approx_cpu, approx_ips=fast.get("instructions") / approx_cpu,
                         approx_x=_ratio(fast.get("cpu_simulate"), approx_cpu),
                         approx_error=100 * (approx_cycles / cycles - 1) if cycles else None)
        if base is not None:
            for key, value_key in (("x_import", "cpu_import"), ("x_compile", "cpu_compile"),
                                   ("x_simulate", "cpu_simulate"), ("x_rss", "rss_mib")):
                cells[key] = _ratio(base.get(value_key), fast.get(value_key))
        cells["note"] = "; ".join(n for n in self._notes() if n)
        return cells

    def _notes(self) -> Iterator[str]:
        yield self.note
        yield self.fast.note
        if self.fast.get("check") is not None and self.fast.get("check") > 1:
            yield f"outside tolerance: {self.fast.get('worst')}"
        if self.fast.get("outputs") == -1:
            yield "output count differs from onnxruntime"
        yield f"full: {self.full.note}" if self.full.note else ""  # also "not run (--no-full)"
        if self.fast.get("cycles") is not None and self.full.get("cycles") is not None:
            if self.fast.get("cycles") != self.full.get("cycles"):
                yield f"full simulation gives {self.full.get('cycles')} cycles"
            if self.fast.get("digest") != self.full.get("digest"):
                yield "full simulation's outputs differ"
            if self.fast.get("instructions") != self.full.get("instructions"):
                yield f"full simulation counts {self.full.get('instructions')} instructions"
        if self.fast.get("approx_digest") is not None:
            if self.fast.get("approx_digest") != self.fast.get("digest"):
                yield "approximate simulation's outputs differ"
            if self.fast.get("approx_instructions") != self.fast.get("instructions"):
                yield f"approximate simulation counts {self.fast.get('approx_instructions')} instructions"
        if self.baseline is not None:
            yield f"baseline: {self.baseline.note}" if self.baseline.note else ""
            cycles = self.baseline.get("cycles")
            if cycles is not None and self.fast.get("cycles") is not None and cycles != self.fast.get("cycles"):
                yield f"baseline {cycles} cycles"


def _rate(child: Child) -> float | None:
    """Instructions per CPU second of the simulation (single-threaded: its wall
    seconds on a quiet machine)."""
    n, t = child.get("instructions"), child.get("cpu_simulate")
    return n / t if n is not None and t else None


def _ratio(old, new) -> float | None:
    return old / new if old is not None and new else None


def measure_row(name: str, folder: str, cache: str, hw: str | None, timeout: float,
                baseline_path: str | None = None, full: bool = True, approx: bool = False) -> Row:
    """The row of `name`: its files prepared once, then a child with the shortcuts,
    one with them off and, given `baseline_path`, one with the baseline's code."""
    try:
        model_file, data_file = prepare(name, folder, cache)
    except Exception as e:  # noqa: BLE001 - the row says why
        return Row(name, Child(), Child(), None if baseline_path is None else Child(), f"not prepared: {_one_line(e)}")
    try:
        fast = run_child(model_file, data_file, hw, False, timeout, approx=approx)
        full = run_child(model_file, data_file, hw, True, timeout) if full else Child(note="not run (--no-full)")
        base = None if baseline_path is None else run_child(model_file, data_file, hw, False, timeout, baseline_path)
    finally:
        for path in (model_file, data_file, model_file + ".data"):
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)
    return Row(name, fast, full, base)


@contextlib.contextmanager
def baseline_tree(commit: str) -> Iterator[str]:
    """A folder for PYTHONPATH in which `gecomp` is `commit`'s tree (a temporary git
    worktree, removed on the way out)."""
    folder = tempfile.mkdtemp(prefix="gecomp-baseline-")
    tree = os.path.join(folder, "tree")
    added = subprocess.run(["git", "-C", ROOT, "worktree", "add", "--detach", tree, commit],
                           capture_output=True, text=True)
    if added.returncode != 0:
        shutil.rmtree(folder, ignore_errors=True)
        message = added.stderr.strip().splitlines()
        raise SystemExit(f"error: --baseline {commit}: {message[-1] if message else 'git worktree add failed'}")
    try:
        path = os.path.join(folder, "path")
        os.mkdir(path)
        os.symlink(tree, os.path.join(path, "gecomp"))
        yield path
    finally:
        subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", tree], capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


# ---- the table -------------------------------------------------------------------------

COLUMNS = [
    ("model", "model"),
    ("t_import", "import s"),
    ("t_compile", "compile s"),
    ("t_simulate", "simulate s"),
    ("cpu_compile", "compile cpu s"),
    ("cpu_simulate", "simulate cpu s"),
    ("instructions", "instructions"),
    ("ips", "instr/cpu s"),
    ("cycles", "cycles"),
    ("check", "check (x tol)"),
    ("rss", "RSS MiB"),
    ("full_compile", "full: compile cpu s"),
    ("full_simulate", "full: simulate cpu s"),
    ("full_ips", "full: instr/cpu s"),
    ("full_rss", "full: RSS MiB"),
]
APPROX_COLUMNS = [
    ("approx_simulate", "approx: simulate cpu s"),
    ("approx_ips", "approx: instr/cpu s equiv"),
    ("approx_x", "approx x"),
    ("approx_error", "approx: cycle err %"),
]
BASELINE_COLUMNS = [
    ("x_import", "import x"),
    ("x_compile", "compile x"),
    ("x_simulate", "simulate x"),
    ("x_rss", "RSS x"),
]


def _cell(key: str, value) -> str:
    if value is None or value == "":
        return ""
    if isinstance(value, str):
        return value
    if key.startswith("x_"):
        return f"{value:.2f}"
    if key == "check":
        return f"{value:.2g}"
    if key == "approx_error":
        return f"{value:+.2f}"
    if key == "approx_x":
        return f"{value:.2f}"
    if key.startswith(("t_", "cpu_")) or key in ("full_compile", "full_simulate", "approx_simulate"):
        return f"{value:.1f}"
    return f"{value:,.0f}"


def format_table(rows: list[Row], markdown: bool, baseline: str | None = None, approx: bool = False) -> str:
    columns = COLUMNS + (APPROX_COLUMNS if approx else [])
    columns += [(k, f"{t} vs {baseline[:10]}") for k, t in BASELINE_COLUMNS] if baseline else []
    columns += [("note", "note")]
    headers = [title for _, title in columns]
    body = [[_cell(key, row.cells().get(key)) for key, _ in columns] for row in rows]
    if markdown:
        lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
        lines += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in body]
        return "\n".join(lines)
    widths = [max(len(h), *(min(len(r[i]), 60) for r in body)) if body else len(h) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in body]
    return "\n".join(lines)


def progress_line(row: Row, baseline: str | None = None) -> str:
    """A finished row's figures, printed as it finishes, so that a run stopped early
    keeps the rows it measured."""
    cells = row.cells()
    keys = [key for key, _ in COLUMNS[1:] + APPROX_COLUMNS]
    keys += ([key for key, _ in BASELINE_COLUMNS] if baseline else []) + ["note"]
    titles = dict(COLUMNS + APPROX_COLUMNS + BASELINE_COLUMNS + [("note", "note")])
    return ", ".join(f"{titles[key]} {_cell(key, cells.get(key))}" for key in keys if _cell(key, cells.get(key)))


def _text(data) -> str:
    if data is None:
        return ""
    return data.decode(errors="replace") if isinstance(data, bytes) else data


def _one_line(e: BaseException) -> str:
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    return f"{type(e).__name__}: {lines[0] if lines else ''}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", action="append", metavar="NAME", help="only this model (repeatable; see --list)")
    p.add_argument("--timeout", type=float, default=600.0,
                   help=f"CPU seconds per child run (default 600; also {WALL_FACTOR}x as many wall seconds)")
    p.add_argument("--no-full", action="store_true", help="skip the run with every simulator shortcut off")
    p.add_argument("--baseline", metavar="COMMIT", help="also run the rows with this commit's code; print ratios")
    p.add_argument("--approx", action="store_true",
                   help="also run the approximate simulation (ge-sim --approx): its CPU s, speedup and cycle error")
    p.add_argument("--markdown", action="store_true", help="print the table in Markdown")
    p.add_argument("--hw", default=None, help="hardware preset (default: ge-compile's)")
    p.add_argument("--cache", default=DEFAULT_CACHE, help=f"folder of the BERT-base export (default {DEFAULT_CACHE})")
    p.add_argument("--list", action="store_true", help="list the rows and exit")
    p.add_argument("--row", nargs=2, metavar=("MODEL.onnx", "DATA.npz"), help=argparse.SUPPRESS)  # the child
    p.add_argument("--full", action="store_true", help=argparse.SUPPRESS)  # the child: shortcuts off
    p.add_argument("--approx-child", action="store_true", help=argparse.SUPPRESS)  # the child: approx too
    args = p.parse_args(argv)
    if args.row:
        measure(*args.row, args.hw, args.full, args.approx_child)
        return 0
    known = row_names()
    if args.list:
        print("\n".join(known))
        return 0
    unknown = [n for n in args.models or () if n not in known]
    if unknown:
        print(f"error: unknown model(s) {', '.join(unknown)} (see --list)", file=sys.stderr)
        return 1
    if args.timeout <= 0:
        print("error: --timeout must be positive", file=sys.stderr)
        return 1
    # SIGTERM unwinds like Ctrl-C, so the baseline's worktree is removed
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(f"stopped (SIGTERM) after {len(rows)} row(s)"))
    rows: list[Row] = []
    with contextlib.ExitStack() as stack:
        baseline_path = stack.enter_context(baseline_tree(args.baseline)) if args.baseline else None
        folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="gecomp-ttr-"))
        for name in args.models or known:
            start = time.perf_counter()
            rows.append(measure_row(name, folder, args.cache, args.hw, args.timeout, baseline_path, not args.no_full,
                                    args.approx))
            print(f"  {name}: {time.perf_counter() - start:.0f} s; {progress_line(rows[-1], args.baseline)}",
                  file=sys.stderr, flush=True)
    print(format_table(rows, args.markdown, args.baseline, args.approx))
    return 0


if __name__ == "__main__":
    sys.exit(main())
