"""Design-space sweeps on Dask: a grid of presets x pass options x models x device
counts, each point compiled and simulated as one Dask task.

    python bench/sweep.py --models examples/mlp.mlir,examples/bert_layer.mlir \\
        --hw ascend910,tiny --options 'fuse=true;fuse=false' --devices 1,2,4 --csv out.csv

Points run on a `dask.distributed` cluster: a `LocalCluster` of one worker process
per core by default (`--workers N`), or the scheduler at `--scheduler ADDRESS`. A
point that fails (a strategy that does not apply, a preset without links) is a
row with its error; the sweep goes on. The table goes to stdout and `--csv`,
`--plot` draws time against the option per model and device count.
`--compare-workers` runs the sweep on 1 worker and then on `--workers`, and
prints the ratio of wall times.

A point with `devices = 1` compiles the model with `ge-compile{OPTIONS}` and
simulates it on the chip; with more, it partitions it first
(`ge-partition{devices=N strategy=S}`) and runs the multi-device simulator, each
device's compute compiled with the same options.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import logging
import os
import sys
import time
from dataclasses import asdict, dataclass

from ..core.diagnostics import CompileError, argument_error

FIELDS = ("model", "hw", "options", "strategy", "devices", "time_us", "comm_us", "exposed_us", "seconds", "error")


@dataclass(frozen=True)
class Point:
    model: str
    hw: str
    options: str
    strategy: str
    devices: int


@dataclass
class Result:
    model: str
    hw: str
    options: str
    strategy: str
    devices: int
    time_us: float | None = None
    comm_us: float | None = None
    exposed_us: float | None = None
    seconds: float = 0.0
    error: str = ""


def run_point(point: Point) -> Result:
    """Compile and simulate one point; any failure becomes the result's error."""
    from ..dialects.context import make_context
    from ..core.parsing import load_module
    from ..core.passes import parse_pass_pipeline, run_pipeline
    from ..simulator.hardware import load_preset
    from ..lowering.compute_time import ComputeTimer
    from ..lowering.plan.device_streams import simulate_devices

    start = time.perf_counter()
    result = Result(**asdict(point))
    pipeline = f"ge-compile{{{point.options}}}" if point.options else "ge-compile"
    try:
        ctx = make_context()
        module = load_module(ctx, point.model)
        timer = ComputeTimer(load_preset(point.hw), pipeline)
        if point.devices == 1:
            result.time_us = timer(module)
            result.comm_us = result.exposed_us = 0.0
        else:
            partition = f"ge-partition{{devices={point.devices} strategy={point.strategy} hw={point.hw}}}"
            run_pipeline(parse_pass_pipeline(partition), ctx, module)
            report = simulate_devices(module, timer, hw=point.hw)
            result.time_us = report.time_us
            result.comm_us = max(s.comm_us for s in report.summaries)
            result.exposed_us = max(s.exposed_comm_us for s in report.summaries)
    except CompileError as e:
        result.error = e.format(point.model)
    except Exception as e:  # noqa: BLE001 - a sweep reports every point, failed or not
        result.error = f"{type(e).__name__}: {e}"
    result.seconds = time.perf_counter() - start
    return result


def grid(models, presets, options, strategies, devices) -> list[Point]:
    points = []
    for model, hw, option, count in itertools.product(models, presets, options, devices):
        for strategy in strategies if count > 1 else ["none"]:
            points.append(Point(model, hw, option, strategy, count))
    return points


def run_sweep(points: list[Point], scheduler: str | None = None, workers: int | None = None) -> tuple[list[Result], float]:
    """Every point as a Dask task; (results in grid order, wall seconds)."""
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise CompileError("sweeps run on Dask: pip install 'gecomp[dask]' (dask.distributed)") from None
    start = time.perf_counter()
    if scheduler:
        client, cluster = Client(scheduler), None
    else:
        cluster = LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1, processes=True,
                               dashboard_address=None, silence_logs=logging.ERROR)
        client = Client(cluster)
    try:
        futures = client.map(run_point, points, pure=False)
        results = client.gather(futures)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    return list(results), time.perf_counter() - start


def table(results: list[Result]) -> str:
    lines = [f"{'model':<22}{'hw':<11}{'options':<22}{'strategy':<9}{'devices':>7}{'time_us':>11}{'comm_us':>10}{'exposed':>9}  error"]
    for r in results:
        number = lambda v: f"{v:.1f}" if v is not None else "-"  # noqa: E731
        lines.append(
            f"{os.path.basename(r.model):<22}{r.hw:<11}{(r.options or '-'):<22}{r.strategy:<9}{r.devices:>7}"
            f"{number(r.time_us):>11}{number(r.comm_us):>10}{number(r.exposed_us):>9}  {r.error}"
        )
    return "\n".join(lines)


def write_csv(path: str, results: list[Result]) -> None:
    try:
        with open(path, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=FIELDS)
            writer.writeheader()
            for r in results:
                writer.writerow(asdict(r))
    except OSError as e:
        raise CompileError(f"cannot write '{path}': {e.strerror}") from None


def plot(path: str, results: list[Result]) -> None:
    """Time against the option, a line per model, hw and device count."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    options = list(dict.fromkeys(r.options or "-" for r in results))
    fig, ax = plt.subplots(figsize=(8, 4.5))
    keys = dict.fromkeys((r.model, r.hw, r.strategy, r.devices) for r in results)
    for model, hw, strategy, devices in keys:
        by_option = {r.options or "-": r.time_us for r in results
                     if (r.model, r.hw, r.strategy, r.devices) == (model, hw, strategy, devices) and r.time_us is not None}
        if by_option:
            xs = [options.index(o) for o in by_option]
            label = f"{os.path.basename(model)} {hw} x{devices}" + (f" {strategy}" if devices > 1 else "")
            ax.plot(xs, list(by_option.values()), marker="o", label=label)
    ax.set_xticks(range(len(options)), options, rotation=20)
    ax.set_ylabel("simulated time (us)")
    ax.set_yscale("log")
    ax.set_title("sweep: time vs ge-compile options")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="sweep", description="Sweep presets x options x models x devices on Dask.")
    p.error = argument_error("sweep")
    p.add_argument("--models", default="examples/mlp.mlir", help="comma-separated .mlir models")
    p.add_argument("--hw", default="ascend910", help="comma-separated presets")
    p.add_argument("--options", default="", help="';'-separated ge-compile option sets, e.g. 'fuse=true;fuse=false'")
    p.add_argument("--strategies", default="tp", help="comma-separated ge-partition strategies for devices > 1")
    p.add_argument("--devices", default="1", help="comma-separated device counts")
    p.add_argument("--scheduler", metavar="ADDRESS", help="a running Dask scheduler (default: a local cluster)")
    p.add_argument("--workers", type=int, default=None, help="local cluster workers (default: one per core)")
    p.add_argument("--compare-workers", action="store_true", help="run on 1 worker, then on --workers; print the wall-time ratio")
    p.add_argument("--csv", metavar="FILE")
    p.add_argument("--plot", metavar="FILE.png")
    return p


def _split(text: str, sep: str = ",") -> list[str]:
    return [t.strip() for t in text.split(sep)] if text else [""]


def main(argv: list[str] | None = None) -> int:
    from . import run_tool

    def body() -> int:
        args = build_parser().parse_args(argv)
        try:
            counts = [int(d) for d in _split(args.devices)]
        except ValueError:
            raise CompileError(f"--devices expects comma-separated integers, got '{args.devices}'") from None
        if any(c < 1 for c in counts):
            raise CompileError("--devices: counts must be 1 or more")
        points = grid(_split(args.models), _split(args.hw), _split(args.options, ";"), _split(args.strategies), counts)
        if args.compare_workers:
            _, one = run_sweep(points, args.scheduler, 1)
        results, wall = run_sweep(points, args.scheduler, args.workers)
        print(table(results))
        failed = sum(1 for r in results if r.error)
        print(f"{len(results)} points, {failed} failed, {wall:.1f} s wall")
        if args.compare_workers:
            print(f"wall time: 1 worker {one:.1f} s, {args.workers or os.cpu_count()} workers {wall:.1f} s, ratio {one / wall:.2f}")
        if args.csv:
            write_csv(args.csv, results)
        if args.plot:
            plot(args.plot, results)
        return 0

    return run_tool(body)


if __name__ == "__main__":
    sys.exit(main())
