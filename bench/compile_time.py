"""Compile time of `ge-compile` per example or model, and the share of each pass.

    python bench/compile_time.py                 # every example
    python bench/compile_time.py examples/bert_layer.mlir --pipeline 'ge-compile{fuse=false}'
    python bench/compile_time.py zoo.resnet50 zoo.densenet121   # models of the set (bench/models)
    python bench/compile_time.py zoo.resnet50 --profile 25      # plus cProfile's 25 costliest calls
    python bench/compile_time.py examples/mmoe.mlir --digest 'ge-graph-opt,ge-fuse'   # IR fingerprint

Parsing (or importing, for a model of the set) and the per-pass verification are
timed separately from the passes: they are the driver's cost, not the compiler's.
`cpu s` is the compile's CPU seconds, which a shared machine's load does not
inflate as it does the wall seconds. `--digest` prints, instead of times, the
SHA-256 of the module printed after the pipeline: run it with two trees
(PYTHONPATH) to show that a compile-time change leaves the output byte-identical.
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import io
import pstats
import sys
import time
from collections import defaultdict
from pathlib import Path

from gecomp.dialects.context import make_context
from gecomp.core.parsing import parse_module, verify_module
from gecomp.core.passes import Instrumentation, instrumented, parse_pass_pipeline, run_pipeline

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ["mlp", "resnet_block", "bert_layer", "llama_layer", "mmoe", "wide_deep"]


def load(source: str, ctx):
    """(name, module, seconds to get it): a `.mlir` file parsed and verified, or a
    model of the set (`zoo.resnet50`, `bert.torchscript`: bench/models) imported."""
    start = time.perf_counter()
    if source.endswith(".mlir"):
        path = Path(source)
        module = parse_module(ctx, path.read_text(), str(path))
        verify_module(module)
        return path.stem, module, time.perf_counter() - start
    from gecomp.bench import models
    from gecomp.frontend.importer import import_model
    from gecomp.frontend.onnx_proto import model_from_proto

    module = import_model(model_from_proto(models.load(source)))
    return source, module, time.perf_counter() - start


def compile_profile(source: str, pipeline: str, profiler: cProfile.Profile | None = None):
    """(name, load seconds, total compile seconds, seconds per pass name, compile CPU seconds, module)."""
    ctx = make_context()
    name, module, load_s = load(source, ctx)
    parsed, cpu = time.perf_counter(), time.process_time()
    instrumentation = Instrumentation(verify_each=False)
    with instrumented(instrumentation):
        if profiler is not None:
            profiler.enable()
        run_pipeline(parse_pass_pipeline(pipeline), ctx, module)
        if profiler is not None:
            profiler.disable()
    done, cpu = time.perf_counter(), time.process_time() - cpu
    per_pass: dict[str, float] = defaultdict(float)
    for pass_name, seconds in instrumentation.timings:
        per_pass[pass_name] += seconds
    return name, load_s, done - parsed, dict(per_pass), cpu, module


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sources", nargs="*", metavar="FILE|MODEL",
                        help="modules (.mlir) or models of the set (default: every example)")
    parser.add_argument("--pipeline", default="ge-compile")
    parser.add_argument("--top", type=int, default=8, help="passes listed per example")
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="also print cProfile's N costliest calls (cumulative) of each compile")
    parser.add_argument("--digest", metavar="PIPELINE",
                        help="print the SHA-256 of the module printed after PIPELINE instead of times")
    args = parser.parse_args(argv)
    sources = args.sources or [str(ROOT / "examples" / f"{name}.mlir") for name in EXAMPLES]
    if args.digest:
        for source in sources:
            name, *_, module = compile_profile(source, args.digest)
            print(f"{name:<24} {hashlib.sha256(str(module).encode()).hexdigest()}")
        return 0
    print(f"{'example':<16} {'load s':>8} {'compile s':>10} {'cpu s':>7}  passes (share of compile time)")
    for source in sources:
        profiler = cProfile.Profile() if args.profile else None
        name, load_s, compile_s, per_pass, cpu_s, _ = compile_profile(source, args.pipeline, profiler)
        ranked = sorted(per_pass.items(), key=lambda kv: kv[1], reverse=True)[: args.top]
        shares = ", ".join(f"{pass_name} {seconds / compile_s:.0%}" for pass_name, seconds in ranked)
        print(f"{name:<16} {load_s:>8.2f} {compile_s:>10.2f} {cpu_s:>7.2f}  {shares}", flush=True)
        if profiler is not None:
            text = io.StringIO()
            pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(args.profile)
            print(text.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())
