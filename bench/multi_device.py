"""Many devices: each model partitioned by each strategy, simulated on the preset's
server (N chips and their links), against one device.

    python bench/multi_device.py                         # the default table
    python bench/multi_device.py --model examples/llama_layer.mlir --strategy tp --devices 2,4,8
    python bench/multi_device.py --csv out.csv

Columns: devices, simulated time (the slowest device), speedup over one device
(the unpartitioned graph through ge-compile on one chip), communication share
(communication time / time, on the busiest device), exposed communication (not
hidden behind compute), and the analytic bound: one device's time / N plus the
collectives that no schedule can hide (every collective whose result the next
compute reads; sends of a pipeline excluded, they overlap the next
micro-batch), from the link model's closed forms. Pipeline rows use 4
micro-batches. The ratio time / bound shows
what the partition loses beyond that: replicated work (layer norms, residual
adds), per-run kernel launches, and stages that wait.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from dataclasses import dataclass

from gecomp.dialects.context import make_context
from gecomp.core.diagnostics import CompileError
from gecomp.core.parsing import load_module
from gecomp.core.passes import parse_pass_pipeline, run_pipeline
from gecomp.dialects import ge
from gecomp.simulator.hardware import load_preset
from gecomp.lowering.compute_time import ComputeTimer
from gecomp.lowering.plan.device_streams import simulate_devices

DEFAULT_CASES = [
    ("examples/mlp.mlir", "dp", [2, 4]),
    ("examples/mlp.mlir", "tp", [2, 4]),
    ("examples/mlp.mlir", "pp", [2, 4]),
    ("examples/bert_layer.mlir", "tp", [2, 4, 8]),
    ("examples/llama_layer.mlir", "tp", [2, 4, 8]),
]


MICRO_BATCHES = 4
"""Pipeline rows split the batch into this many micro-batches."""


@dataclass
class Row:
    model: str
    strategy: str
    devices: int
    time_us: float
    one_device_us: float
    comm_us: float
    exposed_us: float
    bound_us: float

    @property
    def speedup(self) -> float:
        return self.one_device_us / self.time_us

    @property
    def comm_share(self) -> float:
        return self.comm_us / self.time_us


def one_device_time(path: str, timer: ComputeTimer) -> float:
    return timer(load_module(make_context(), path))


def measure(path: str, strategy: str, devices: int, hw: str, timer: ComputeTimer, one: float) -> Row:
    module = load_module(make_context(), path)
    micro = f" micro-batches={MICRO_BATCHES}" if strategy == "pp" else ""
    run_pipeline(parse_pass_pipeline(f"ge-partition{{devices={devices} strategy={strategy}{micro} hw={hw}}}"), make_context(), module)
    report = simulate_devices(module, timer, hw=hw)
    busiest = max(report.summaries, key=lambda s: s.comm_us)
    unhidden = max(
        sum(t.duration for t in report.tasks if t.device == d and t.kind == "comm" and isinstance(t.ops[0], ge.CollectiveOp))
        for d in range(devices)
    )
    return Row(path.rsplit("/", 1)[-1], strategy, devices, report.time_us, one, busiest.comm_us,
               max(s.exposed_comm_us for s in report.summaries), one / devices + unhidden)


def print_table(rows: list[Row], hw: str) -> None:
    print(f"many devices on {hw} (links and topology: simulator/presets/{hw}.toml [interconnect])")
    header = f"{'model':<18}{'strategy':>9}{'devices':>8}{'time_us':>10}{'1-dev_us':>10}{'speedup':>8}{'comm%':>7}{'exposed_us':>11}{'bound_us':>10}{'t/bound':>8}"
    print(header)
    for r in rows:
        print(
            f"{r.model:<18}{r.strategy:>9}{r.devices:>8}{r.time_us:>10.1f}{r.one_device_us:>10.1f}{r.speedup:>8.2f}"
            f"{100 * r.comm_share:>6.1f}%{r.exposed_us:>11.1f}{r.bound_us:>10.1f}{r.time_us / r.bound_us:>8.2f}"
        )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", action="append", help="a .mlir model (repeatable; default: the table's models)")
    p.add_argument("--strategy", default="tp", choices=("dp", "tp", "pp"))
    p.add_argument("--devices", default="2,4", help="comma-separated device counts")
    p.add_argument("--hw", default="ascend910")
    p.add_argument("--csv", metavar="FILE", help="also write the rows as CSV")
    args = p.parse_args(argv)
    cases = [(m, args.strategy, [int(d) for d in args.devices.split(",")]) for m in args.model] if args.model else DEFAULT_CASES
    timer = ComputeTimer(load_preset(args.hw), "ge-compile")
    rows = []
    start = time.perf_counter()
    try:
        for path, strategy, counts in cases:
            one = one_device_time(path, timer)
            for n in counts:
                try:
                    rows.append(measure(path, strategy, n, args.hw, timer, one))
                except CompileError as e:
                    print(f"{path} {strategy} x{n}: {e}", file=sys.stderr)
    except CompileError as e:
        print(e, file=sys.stderr)
        return 1
    print_table(rows, args.hw)
    print(f"({time.perf_counter() - start:.0f} s)")
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["model", "strategy", "devices", "time_us", "one_device_us", "speedup", "comm_us", "exposed_us", "bound_us"])
            for r in rows:
                writer.writerow([r.model, r.strategy, r.devices, f"{r.time_us:.3f}", f"{r.one_device_us:.3f}",
                                 f"{r.speedup:.3f}", f"{r.comm_us:.3f}", f"{r.exposed_us:.3f}", f"{r.bound_us:.3f}"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
