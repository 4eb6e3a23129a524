"""Fusion benchmark: kernels and estimated global-memory traffic of each example
before and after `ge-fuse`, and the issue's targets.

    python bench/fusion.py                 # every example, hardware preset ascend910
    python bench/fusion.py --hw tiny examples/bert_layer.mlir

For each example it prints one table: the raw graph, the graph after
`ge-graph-opt` (when that pipeline is registered; the baseline fusion is judged
against), and after `ge-fuse`. "GM bytes" follows `lowering/graph_to_fused/
traffic.py`: each kernel reads its distinct operands and writes its used results;
"activations" leaves out the weights, which every schedule reads once.

Targets (issue 4): BERT and LLaMA layers -60% kernels and -70% GM traffic;
ResNet block: every conv in exactly one fused op with its bias / activation, the
residual add + relu in its epilogue or in one group.
"""

from __future__ import annotations

import argparse
import glob
import os
import sys

from gecomp.dialects.context import make_context
from gecomp.core.passes import Instrumentation, available_passes, instrumented, parse_pass_pipeline, run_pipeline
from gecomp.core.parsing import load_module
from gecomp.dialects import ge
from gecomp.dialects.fused import Conv2DBiasActOp, GroupOp
from gecomp.lowering.graph_to_fused.traffic import TrafficEstimate, compute_ops, estimate

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGETS = {"bert_layer": (60.0, 70.0), "llama_layer": (60.0, 70.0)}


def compile_stages(path: str, hw: str):
    """[(stage name, module)] for raw, graph-opt (if registered) and fused."""
    ctx = make_context()
    module = load_module(ctx, path)
    stages = [("raw", module.clone())]
    if "ge-graph-opt" in available_passes():
        _run(ctx, module, "ge-graph-opt")
        stages.append(("ge-graph-opt", module.clone()))
    _run(ctx, module, f"ge-fuse{{hw={hw}}}")
    stages.append(("+ ge-fuse", module))
    return stages


def _run(ctx, module, pipeline: str) -> None:
    with instrumented(Instrumentation()):
        run_pipeline(parse_pass_pipeline(pipeline), ctx, module)


def _mb(n: int) -> str:
    return f"{n / 1e6:8.3f}"


def _change(before: int, after: int) -> str:
    return f"{100.0 * (after - before) / before:+6.1f}%" if before else "   n/a"


def table(name: str, estimates: list[tuple[str, TrafficEstimate]]) -> list[str]:
    base = estimates[-2][1]  # the graph fusion starts from
    lines = [
        f"{name}",
        f"  {'stage':<14} {'kernels':>7} {'change':>7}  {'GM MB (all)':>11} {'change':>7}  "
        f"{'activations MB':>14} {'change':>7}  {'weights MB':>10}",
    ]
    for stage, e in estimates:
        lines.append(
            f"  {stage:<14} {e.kernels:>7} {_change(base.kernels, e.kernels):>7}  {_mb(e.total_bytes):>11} "
            f"{_change(base.total_bytes, e.total_bytes):>7}  {_mb(e.activation_bytes):>14} "
            f"{_change(base.activation_bytes, e.activation_bytes):>7}  {_mb(e.weight_bytes):>10}"
        )
    return lines


def target_lines(name: str, estimates: list[tuple[str, TrafficEstimate]], fused_module) -> list[str]:
    base, after = estimates[-2][1], estimates[-1][1]
    lines = []
    if name in TARGETS:
        ops_target, bytes_target = TARGETS[name]
        ops_cut = 100.0 * (base.kernels - after.kernels) / base.kernels
        act_cut = 100.0 * (base.activation_bytes - after.activation_bytes) / base.activation_bytes
        all_cut = 100.0 * (base.total_bytes - after.total_bytes) / base.total_bytes
        floor = 100.0 * (base.total_bytes - (base.weight_bytes + _io_bytes(fused_module))) / base.total_bytes
        lines.append(f"  target kernels -{ops_target:.0f}%: {ops_cut:.1f}% {_verdict(ops_cut >= ops_target)}")
        lines.append(
            f"  target GM traffic -{bytes_target:.0f}%: activations {act_cut:.1f}% "
            f"{_verdict(act_cut >= bytes_target)}; with weights {all_cut:.1f}% "
            f"(at most {floor:.1f}% reachable: weights + graph inputs/outputs stay)"
        )
        raw = estimates[0][1]
        lines.append(
            f"  against the raw example: kernels {_change(raw.kernels, after.kernels).strip()}, "
            f"activations {_change(raw.activation_bytes, after.activation_bytes).strip()}, "
            f"with weights {_change(raw.total_bytes, after.total_bytes).strip()}"
        )
    if name == "resnet_block":
        lines += [f"  {line}" for line in resnet_check(fused_module)]
    return lines


def _io_bytes(module) -> int:
    from gecomp.core.signature import input_specs, main_function, output_specs

    main = main_function(module)
    return sum(s.dtype.itemsize * _count(s.shape) for s in (*input_specs(main), *output_specs(main)))


def _count(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _verdict(ok: bool) -> str:
    return "MET" if ok else "NOT MET"


def resnet_check(module) -> list[str]:
    """Every conv inside exactly one fused op with its bias / activation; the
    residual add and the final relu in a conv's epilogue or one group."""
    kernels = compute_ops(module)
    loose = [op for op in kernels if isinstance(op, ge.Conv2DOp | ge.AddOp | ge.ReluOp | ge.BatchNormOp)]
    lines, ok = [], not loose
    convs = 0
    for op in kernels:
        if isinstance(op, Conv2DBiasActOp):
            convs += 1
            parts = [f"bias={'yes' if op.bias is not None else 'no'}", f"residual={'yes' if op.residual else 'no'}"]
            lines.append(f"conv in fused.conv2d_bias_act ({', '.join(parts)}, act={op.attr_value('act')})")
            ok &= op.attr_value("act") == "relu"
        elif isinstance(op, GroupOp):
            names = [o.name for o in op.body_ops()]
            convs += names.count("ge.conv2d")
            lines.append(f"conv in fused.group: {', '.join(names)}")
            ok &= names.count("ge.conv2d") == 1 and names[-1] == "ge.relu"
    has_residual = any(op.residual is not None for op in kernels if isinstance(op, Conv2DBiasActOp)) or any(
        "ge.add" in [o.name for o in op.body_ops()] for op in kernels if isinstance(op, GroupOp)
    )
    ok &= convs == 2 and has_residual
    lines.append(f"target: both convs fused with bias/act, residual add + relu in an epilogue: {_verdict(ok)}")
    if loose:
        lines.append("left unfused: " + ", ".join(op.name for op in loose))
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", help="examples (default: examples/*.mlir)")
    parser.add_argument("--hw", default="ascend910", help="hardware preset for ge-fuse")
    args = parser.parse_args(argv)
    files = args.files or sorted(glob.glob(os.path.join(ROOT, "examples", "*.mlir")))
    for path in files:
        name = os.path.splitext(os.path.basename(path))[0]
        stages = compile_stages(path, args.hw)
        estimates = [(stage, estimate(module)) for stage, module in stages]
        print("\n".join(table(name, estimates) + target_lines(name, estimates, stages[-1][1])))
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
