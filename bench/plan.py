"""Execution-plan benchmark: GM memory reuse and multi-stream scheduling per
example, against the issue's targets (issue 7).

    python bench/plan.py                              # every example, ge-compile, ascend910
    python bench/plan.py examples/mmoe.mlir --eager   # eager mode (fuse=false)
    python bench/plan.py --streams 1 2 4 0            # stream counts to time (0 = automatic)

Each example is compiled once up to the plan (the stages of
`ge-compile{merge=false}` before `npu-assign-streams`: the plans and times here
are of the launches as lowered, so the split passes weigh a second kernel as a
launch too), then planned several ways and simulated on the same random inputs:

* memory: the arena (intermediates) without reuse, the lower bound (the most
  bytes live at any one time under the schedule) and each placement strategy,
  with one stream and with automatic streams; "GM" adds the inputs, outputs and
  constants (what ge-sim reports as peak_gm_bytes);
* streams: simulated time with one stream, N streams and automatic streams.

Every variant's outputs are compared with the one-stream, no-reuse plan: they
must be identical (same kernels, same numbers, only addresses and order change).

Targets: planned / lower bound <= 1.10 on every example; automatic streams vs
one stream: MMOE >= 1.3x faster, no example slower.
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
import time

import numpy as np

from gecomp.dialects.context import make_context
from gecomp.core.diagnostics import CompileError
from gecomp.core.parsing import load_module
from gecomp.core.passes import Instrumentation, instrumented, run_pipeline
from gecomp.lowering.pipelines import CompilePipeline
from gecomp.lowering.plan import stages_before_plan
from gecomp.lowering.plan.memory import plan_gm
from gecomp.lowering.plan.placement import STRATEGIES
from gecomp.lowering.plan.streams import assign_streams
from gecomp.simulator.npu import simulate
from gecomp.core.signature import input_specs, main_function, random_inputs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RATIO_TARGET = 1.10
SPEEDUP_TARGETS = {"mmoe": 1.3}


def lowered(path: str, hw: str, fuse: bool):
    """The example after every ge-compile{merge=false} stage that comes before the plan."""
    module = load_module(make_context(), path)
    with instrumented(Instrumentation(verify_each=False)):
        run_pipeline(stages_before_plan(CompilePipeline(fuse=fuse, hw=hw, merge=False)), make_context(), module)
    return module


def variant(base, hw: str, streams: int, reuse: bool, strategy: str = "hybrid"):
    module = base.clone()
    schedule = assign_streams(module, streams)
    plan = plan_gm(module, hw, reuse, strategy)
    return module, schedule, plan


def run(module, hw: str, inputs):
    """(total cycles, time in us, outputs) of one simulation."""
    result = simulate(module, inputs, hw)
    return result.report.total_cycles, result.report.time_us, result.outputs


def identical(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    return all(np.array_equal(x, y, equal_nan=True) for x, y in zip(a, b))


def _mb(n: int) -> str:
    return f"{n / 1e6:9.3f}"


def memory_table(name: str, base, hw: str) -> list[float]:
    """Print the memory table; return planned / lower bound per stream setting."""
    print(f"\n{name}: GM memory (MB; arena = intermediates, GM = arena + inputs, outputs, constants)")
    header = f"{'streams':<9}{'strategy':<28}{'arena':>9}{'bound':>9}{'no reuse':>9}{'/bound':>8}{'vs none':>9}{'GM':>9}{'GM bound':>9}{'GM none':>9}{'in place':>9}{'plan s':>8}"
    print(header)
    ratios = []
    for streams in (1, 0):
        for strategy in STRATEGIES:
            start = time.perf_counter()
            _, schedule, plan = variant(base, hw, streams, True, strategy)
            seconds = time.perf_counter() - start
            ratio = plan.arena_bytes / plan.lower_bound_bytes if plan.lower_bound_bytes else 1.0
            saved = 100.0 * (plan.arena_bytes - plan.no_reuse_bytes) / plan.no_reuse_bytes if plan.no_reuse_bytes else 0.0
            label = "1" if streams == 1 else f"auto({schedule.stream_count})"
            chosen = plan.placement.strategy if strategy == "hybrid" else strategy
            print(
                f"{label:<9}{strategy if strategy != 'hybrid' else 'hybrid -> ' + chosen:<28}{_mb(plan.arena_bytes)}"
                f"{_mb(plan.lower_bound_bytes)}{_mb(plan.no_reuse_bytes)}{ratio:8.3f}{saved:+8.1f}%"
                f"{_mb(plan.arena_bytes + plan.fixed_bytes)}{_mb(plan.lower_bound_bytes + plan.fixed_bytes)}"
                f"{_mb(plan.no_reuse_bytes + plan.fixed_bytes)}{plan.in_place:9d}{seconds:8.2f}"
            )
            if strategy == "hybrid":
                ratios.append(ratio)
    return ratios


def streams_table(name: str, base, hw: str, stream_counts: list[int]) -> float | None:
    """Print the time table; return automatic vs one stream (speed-up)."""
    specs = input_specs(main_function(base))
    inputs = random_inputs(specs, 0)
    reference_module, _, _ = variant(base, hw, 1, False)
    reference_cycles, _, reference = run(reference_module, hw, inputs)
    print(f"\n{name}: simulated time on {hw} (eager reference: 1 stream, no reuse = {reference_cycles} cycles)")
    print(f"{'streams':<10}{'reuse':<7}{'cycles':>10}{'time_us':>10}{'speed-up':>10}{'events':>8}{'waits':>7}{'ids':>5}{'arena MB':>10}  outputs")
    one = None
    speedup = None
    for streams in stream_counts:
        for reuse in (False, True):
            module, schedule, plan = variant(base, hw, streams, reuse)
            cycles, time_us, outputs = run(module, hw, inputs)
            if streams == 1 and reuse:
                one = cycles
            label = "auto" if streams == 0 else str(streams)
            label += f"({schedule.stream_count})" if streams == 0 else ""
            factor = reference_cycles / cycles
            same = "identical" if identical(outputs, reference) else "DIFFERENT"
            print(
                f"{label:<10}{str(reuse).lower():<7}{cycles:>10}{time_us:>10.2f}{factor:>9.2f}x"
                f"{schedule.records:>8}{schedule.waits:>7}{schedule.event_ids:>5}{_mb(plan.arena_bytes):>10}  {same}"
            )
            if streams == 0 and reuse and one:
                speedup = one / cycles
    return speedup


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*")
    parser.add_argument("--hw", default="ascend910")
    parser.add_argument("--eager", action="store_true", help="ge-compile{fuse=false} (one kernel per op)")
    parser.add_argument("--streams", type=int, nargs="+", default=[1, 2, 4, 0])
    args = parser.parse_args(argv)
    files = args.files or sorted(glob.glob(os.path.join(ROOT, "examples", "*.mlir")))
    if 1 not in args.streams:
        args.streams.insert(0, 1)
    verdicts = []
    for path in files:
        name = os.path.splitext(os.path.basename(path))[0]
        try:
            base = lowered(path, args.hw, fuse=not args.eager)
        except CompileError as e:
            print(f"\n{name}: does not compile: {e}")
            verdicts.append((name, None, None))
            continue
        ratios = memory_table(name, base, args.hw)
        speedup = streams_table(name, base, args.hw, args.streams)
        verdicts.append((name, max(ratios), speedup))
    print(f"\ntargets: planned / lower bound <= {RATIO_TARGET}; automatic streams vs one stream >= 1.0x, MMOE >= 1.3x")
    print(f"{'example':<16}{'worst /bound':>13}{'speed-up':>10}  verdict")
    ok = True
    for name, ratio, speedup in verdicts:
        if ratio is None:
            print(f"{name:<16}{'-':>13}{'-':>10}  not compiled")
            ok = False
            continue
        met = ratio <= RATIO_TARGET and speedup >= SPEEDUP_TARGETS.get(name, 1.0)
        ok &= met
        print(f"{name:<16}{ratio:>13.3f}{speedup:>9.2f}x  {'met' if met else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
