"""Compile time of `ge-compile` per example, and the share of each pass.

    python bench/compile_time.py                 # every example
    python bench/compile_time.py examples/bert_layer.mlir --pipeline 'ge-compile{fuse=false}'

Parsing and the per-pass verification are timed separately from the passes: they
are the driver's cost, not the compiler's. `cpu s` is the compile's CPU seconds,
which a shared machine's load does not inflate as it does the wall seconds.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

from gecomp.dialects.context import make_context
from gecomp.core.parsing import parse_module, verify_module
from gecomp.core.passes import Instrumentation, instrumented, parse_pass_pipeline, run_pipeline

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ["mlp", "resnet_block", "bert_layer", "llama_layer", "mmoe", "wide_deep"]


def compile_profile(path: Path, pipeline: str) -> tuple[float, float, dict[str, float], float]:
    """(parse seconds, total compile seconds, seconds per pass name, compile CPU seconds)."""
    ctx = make_context()
    text = path.read_text()
    start = time.perf_counter()
    module = parse_module(ctx, text, str(path))
    verify_module(module)
    parsed, cpu = time.perf_counter(), time.process_time()
    instrumentation = Instrumentation(verify_each=False)
    with instrumented(instrumentation):
        run_pipeline(parse_pass_pipeline(pipeline), ctx, module)
    done, cpu = time.perf_counter(), time.process_time() - cpu
    per_pass: dict[str, float] = defaultdict(float)
    for name, seconds in instrumentation.timings:
        per_pass[name] += seconds
    return parsed - start, done - parsed, dict(per_pass), cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="*", help="modules (default: every example)")
    parser.add_argument("--pipeline", default="ge-compile")
    parser.add_argument("--top", type=int, default=8, help="passes listed per example")
    args = parser.parse_args(argv)
    files = [Path(f) for f in args.files] or [ROOT / "examples" / f"{name}.mlir" for name in EXAMPLES]
    print(f"{'example':<16} {'parse s':>8} {'compile s':>10} {'cpu s':>7}  passes (share of compile time)")
    for path in files:
        parse_s, compile_s, per_pass, cpu_s = compile_profile(path, args.pipeline)
        ranked = sorted(per_pass.items(), key=lambda kv: kv[1], reverse=True)[: args.top]
        shares = ", ".join(f"{name} {seconds / compile_s:.0%}" for name, seconds in ranked)
        print(f"{path.stem:<16} {parse_s:>8.2f} {compile_s:>10.2f} {cpu_s:>7.2f}  {shares}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
