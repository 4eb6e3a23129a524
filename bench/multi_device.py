"""Many devices: each model partitioned by each strategy, simulated on the preset's
server (N chips and their links), against one device.

    python bench/multi_device.py                         # the default table
    python bench/multi_device.py --model examples/llama_layer.mlir --strategy tp --devices 2,4,8
    python bench/multi_device.py --csv out.csv
    python bench/multi_device.py --model examples/llama_layer.mlir --devices 4 --runs runs/   # then ge-sim runs/*.mlir --pipeline ge-compile --report

    python bench/multi_device.py --model examples/llama_layer.mlir --devices 4 --chunks 1,2,4
    python bench/multi_device.py --model examples/llama_layer.mlir --devices 2,4,8 --token-split never,auto
    python bench/multi_device.py --llama-seq 512,1024 --devices 2,4,8   # the LLaMA layer at longer sequences

`--llama-seq S,...` adds the LLaMA-style layer of examples/llama_layer.mlir at
those sequence lengths (written by examples/build_llama_layer.py; the same
layer, only the tokens change) to the models measured.

Columns: devices, chunks (`ge-partition{chunks=K}`: the row-independent tail
run in K chunks of rows, so a chunk's collective overlaps the next chunk's
compute), tokens (`split` when the plan reduce-scatters a row-parallel product's
sums and runs what follows on 1/N of the tokens with whole weights,
`ge-partition{token-split=...}`; `--token-split never,auto,always` measures each
mode, auto by default: the pass's own estimate decides), simulated time (the slowest device), speedup over one device (the
unpartitioned graph through ge-compile on one chip), communication share
(communication time / time, on the busiest device), exposed communication (not
hidden behind compute), and the analytic bound, the larger of

* one device's time / N plus the collectives no schedule can hide, from the link
  model's closed forms: a collective is unhideable when every compute run of its
  device must end before it starts (it feeds this or an earlier collective of the
  in-order communication stream) or start after it ends (it reads this or a later
  one). A Megatron all_reduce is read by the very next op: unhideable; with
  chunks, only the last chunk's last collective is. Sends of a pipeline are left
  out (they overlap the next micro-batch);
* the collectives of the busiest device back to back (one communication stream).

The table prints both terms' communication: `unhid_us` (the unhideable
collectives of the first limit) and `serial_us` (the second). Chunks lower the
first (only the last chunk's last collective stays unhideable, and it is a
K-th of the bytes) and raise the second (every chunk's collective pays the
per-step latencies again).

Pipeline rows use 4 micro-batches. The ratio time / bound shows what the
partition loses beyond that: replicated work (layer norms, residual adds),
per-run kernel launches, weights streamed again per chunk, and stages that wait.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import os
import sys
import tempfile
import time
from dataclasses import dataclass

from gecomp.dialects.context import make_context
from gecomp.core.diagnostics import CompileError
from gecomp.core.parsing import load_module
from gecomp.core.passes import parse_pass_pipeline, run_pipeline
from gecomp.dialects import ge
from gecomp.simulator.hardware import load_preset
from gecomp.lowering.compute_time import ComputeTimer
from gecomp.lowering.plan.device_streams import segment_module, simulate_devices
from gecomp.simulator.multi_device import is_collective, unhideable_collectives

DEFAULT_CASES = [
    ("examples/mlp.mlir", "dp", [2, 4], [1]),
    ("examples/mlp.mlir", "tp", [2, 4], [1]),
    ("examples/mlp.mlir", "pp", [2, 4], [1]),
    ("examples/bert_layer.mlir", "tp", [2, 4, 8], [1, 2]),
    ("examples/llama_layer.mlir", "tp", [2, 4, 8], [1, 2]),
]


MICRO_BATCHES = 4
"""Pipeline rows split the batch into this many micro-batches."""


@dataclass
class Row:
    model: str
    strategy: str
    devices: int
    chunks: int
    time_us: float
    one_device_us: float
    comm_us: float
    exposed_us: float
    unhidden_us: float
    serial_us: float
    token_split: bool = False

    @property
    def bound_us(self) -> float:
        """The larger of the two lower limits (module docstring)."""
        return max(self.one_device_us / self.devices + self.unhidden_us, self.serial_us)

    @property
    def speedup(self) -> float:
        return self.one_device_us / self.time_us

    @property
    def comm_share(self) -> float:
        return self.comm_us / self.time_us


def llama_layer_at(seq: int, directory: str) -> str:
    """examples/build_llama_layer.py's layer at `seq` tokens, written to `directory`."""
    script = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "build_llama_layer.py")
    spec = importlib.util.spec_from_file_location("build_llama_layer", script)
    builder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(builder)
    path = os.path.join(directory, f"llama_layer_seq{seq}.mlir")
    with open(path, "w") as f:
        f.write(builder.llama_layer(seq))
    return path


def one_device_time(path: str, timer: ComputeTimer) -> float:
    return timer(load_module(make_context(), path))


def measure(path: str, strategy: str, devices: int, chunks: int, hw: str, timer: ComputeTimer, one: float, runs: str | None = None,
            token_split: str = "never") -> Row:
    module = load_module(make_context(), path)
    micro = f" micro-batches={MICRO_BATCHES}" if strategy == "pp" else ""
    tokens = f" token-split={token_split}" if strategy == "tp" else ""
    options = f"devices={devices} strategy={strategy}{micro} chunks={chunks} hw={hw}{tokens}"
    run_pipeline(parse_pass_pipeline(f"ge-partition{{{options}}}"), make_context(), module)
    report = simulate_devices(module, timer, hw=hw)
    model = path.rsplit("/", 1)[-1].removesuffix(".mlir")
    split = any(op.name == "ge.reduce_scatter" for op in module.walk())
    if runs:
        write_runs(report, os.path.join(runs, f"{model}_{strategy}{devices}_chunks{chunks}{'_tokens' if split else ''}"))
    busiest = max(report.summaries, key=lambda s: s.comm_us)
    per_device = [[t for t in report.tasks if t.device == d] for d in range(devices)]
    unhidden = max(sum(t.duration for t in unhideable_collectives(tasks)) for tasks in per_device)
    back_to_back = max(sum(t.duration for t in tasks if is_collective(t)) for tasks in per_device)
    return Row(model, strategy, devices, chunks, report.time_us, one, busiest.comm_us,
               max(s.exposed_comm_us for s in report.summaries), unhidden, back_to_back, split)


def write_runs(report, prefix: str) -> None:
    """Device 0's compute runs as modules of their own (`segment_module`, what the
    simulator timed): `ge-sim PREFIX_run1.mlir --pipeline ge-compile --report` gives
    a run's kernels, to see where a device's time goes."""
    compute = [t for t in report.tasks if t.device == 0 and t.kind == "compute"]
    for i, task in enumerate(compute, 1):
        with open(f"{prefix}_run{i}.mlir", "w") as f:
            f.write(str(segment_module(task)) + "\n")


def print_table(rows: list[Row], hw: str) -> None:
    print(f"many devices on {hw} (links and topology: simulator/presets/{hw}.toml [interconnect])")
    header = f"{'model':<22}{'strategy':>9}{'devices':>8}{'chunks':>7}{'tokens':>7}{'time_us':>10}{'1-dev_us':>10}{'speedup':>8}{'comm%':>7}{'exposed_us':>11}{'unhid_us':>9}{'serial_us':>10}{'bound_us':>10}{'t/bound':>8}"
    print(header)
    for r in rows:
        print(
            f"{r.model:<22}{r.strategy:>9}{r.devices:>8}{r.chunks:>7}{'split' if r.token_split else 'whole':>7}{r.time_us:>10.1f}{r.one_device_us:>10.1f}{r.speedup:>8.2f}"
            f"{100 * r.comm_share:>6.1f}%{r.exposed_us:>11.1f}{r.unhidden_us:>9.1f}{r.serial_us:>10.1f}{r.bound_us:>10.1f}{r.time_us / r.bound_us:>8.2f}"
        )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", action="append", help="a .mlir model (repeatable; default: the table's models)")
    p.add_argument("--strategy", default="tp", choices=("dp", "tp", "pp"))
    p.add_argument("--devices", default="2,4", help="comma-separated device counts")
    p.add_argument("--chunks", default="1", help="comma-separated chunk counts (ge-partition chunks=K)")
    p.add_argument("--token-split", default="auto", help="comma-separated ge-partition token-split modes for tp rows (never, auto, always)")
    p.add_argument("--hw", default="ascend910")
    p.add_argument("--llama-seq", metavar="S,...", help="also the LLaMA-style layer at these sequence lengths (strategy tp)")
    p.add_argument("--csv", metavar="FILE", help="also write the rows as CSV")
    p.add_argument("--runs", metavar="DIR", help="also write each row's device-0 compute runs there, one .mlir each")
    args = p.parse_args(argv)
    counts = [int(d) for d in args.devices.split(",")]
    chunk_counts = [int(k) for k in args.chunks.split(",")]
    token_modes = args.token_split.split(",")
    if args.runs:
        os.makedirs(args.runs, exist_ok=True)
    cases = [(m, args.strategy, counts, chunk_counts) for m in args.model] if args.model else []
    if args.llama_seq:
        directory = tempfile.mkdtemp(prefix="multi_device_")
        cases += [(llama_layer_at(int(s), directory), "tp", counts, chunk_counts) for s in args.llama_seq.split(",")]
    cases = cases or DEFAULT_CASES
    timer = ComputeTimer(load_preset(args.hw), "ge-compile")
    rows = []
    start = time.perf_counter()
    try:
        for path, strategy, counts, chunk_counts in cases:
            one = one_device_time(path, timer)
            for n in counts:
                for k in chunk_counts:
                    # chunks run all_reduce tails: with chunks > 1 the tokens stay whole.
                    for mode in token_modes if strategy == "tp" and k == 1 else ["never"]:
                        try:
                            rows.append(measure(path, strategy, n, k, args.hw, timer, one, args.runs, mode))
                        except CompileError as e:
                            print(f"{path} {strategy} x{n} chunks={k} token-split={mode}: {e}", file=sys.stderr)
    except CompileError as e:
        print(e, file=sys.stderr)
        return 1
    print_table(rows, args.hw)
    print(f"({time.perf_counter() - start:.0f} s)")
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["model", "strategy", "devices", "chunks", "token_split", "time_us", "one_device_us", "speedup", "comm_us", "exposed_us", "unhidden_us", "serial_us", "bound_us"])
            for r in rows:
                writer.writerow([r.model, r.strategy, r.devices, r.chunks, int(r.token_split), f"{r.time_us:.3f}", f"{r.one_device_us:.3f}",
                                 f"{r.speedup:.3f}", f"{r.comm_us:.3f}", f"{r.exposed_us:.3f}", f"{r.unhidden_us:.3f}",
                                 f"{r.serial_us:.3f}", f"{r.bound_us:.3f}"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
