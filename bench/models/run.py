"""The steps every use of the model set takes, shared by tests/unit/test_model_set.py
and bench/models.py: import as ge-translate does, run the reference interpreter
and onnxruntime, compile with ge-compile through the pass driver (verifying after
each pass, as ge-opt does), simulate, and compare."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


def import_proto(proto):
    """The ge module of an `onnx.ModelProto`, as `ge-translate` makes it."""
    from gecomp.frontend.importer import import_model
    from gecomp.frontend.onnx_proto import model_from_proto

    return import_model(model_from_proto(proto))


def reference(module, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    from gecomp.simulator.reference import run_reference

    with np.errstate(all="ignore"):
        return [np.asarray(r) for r in run_reference(module, inputs)]


def onnxruntime_outputs(proto, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """onnxruntime's outputs (CPU, graph optimisations off so that it computes
    the graph as written)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    session = ort.InferenceSession(proto.SerializeToString(), options, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    return session.run(None, dict(zip(names, inputs, strict=True)))


def max_errors(want: Sequence[np.ndarray], got: Sequence[np.ndarray]) -> tuple[float, float]:
    """(max abs error, that error relative to the largest |want|) over all outputs;
    a shape mismatch is an infinite error."""
    if len(want) != len(got):
        return float("inf"), float("inf")
    worst, scale = 0.0, 0.0
    for w, g in zip(want, got):
        w, g = np.asarray(w, np.float64), np.asarray(g, np.float64)
        if w.shape != g.shape:
            return float("inf"), float("inf")
        if w.size:
            worst = max(worst, float(np.nanmax(np.abs(w - g))) if np.isfinite(g).all() else float("inf"))
            scale = max(scale, float(np.max(np.abs(w))))
    return worst, worst / scale if scale else worst


def compile_module(module, hw: str = "ascend910", precision: str | None = None) -> None:
    """ge-compile `module` in place through the pass driver, verifying after every
    pass (what `ge-opt -p ge-compile` does); `precision`: ge-compile's precision
    mode (None: its default)."""
    from gecomp.dialects.context import make_context
    from gecomp.core.passes import Instrumentation, instrumented, parse_pass_pipeline, run_pipeline

    options = f"hw={hw}" + (f" precision={precision}" if precision else "")
    with instrumented(Instrumentation(verify_each=True)):
        run_pipeline(parse_pass_pipeline(f"ge-compile{{{options}}}"), make_context(), module)


@dataclass
class Simulated:
    outputs: list[np.ndarray]
    cycles: int
    roofline_cycles: float
    kernels: int  # the kernels launched, each phase of a merged launch counted
    launches: int  # npu.launch ops (npu-merge-launches makes one of a stream's run)
    worst_ratio: float  # worst |error| / tolerance over the outputs (> 1 fails)
    worst: str  # the worst element, as ge-sim --check prints it ("" if identical)
    floor: np.dtype | None = None  # the least precise float type computed in (the tolerance's)


def simulate(compiled, inputs: Sequence[np.ndarray], want: Sequence[np.ndarray], hw: str = "ascend910") -> Simulated:
    """Run a compiled module on the simulator and compare with `want` at the
    tolerance of the least precise float type the compiled module computes in."""
    from gecomp.dialects import npu
    from gecomp.simulator.compare import precision_floor, worst_mismatch
    from gecomp.simulator.run import execute

    execution = execute(compiled, inputs, hw=hw)
    floor = precision_floor(compiled)
    mismatches = [
        worst_mismatch(spec.name, np.asarray(w), np.asarray(g), floor)
        for spec, w, g in zip(execution.outputs, want, execution.results)
    ]
    mismatches = [m for m in mismatches if m is not None]
    worst = max(mismatches, key=lambda m: m.ratio, default=None)
    report = execution.report
    launches = [op for op in compiled.walk() if isinstance(op, npu.LaunchOp)]
    return Simulated(
        outputs=[np.asarray(r) for r in execution.results],
        cycles=int(report.total_cycles),
        roofline_cycles=float(report.roofline_cycles),
        kernels=sum(len(launch.kernel_op().phase_names()) or 1 for launch in launches),
        launches=len(launches),
        worst_ratio=worst.ratio if worst else 0.0,
        worst=str(worst) if worst else "",
        floor=floor,
    )
