"""Differential runs of one ONNX graph: onnxruntime is the oracle, every gecomp path
is compared with it and classified.

Paths: the reference interpreter on the imported module, and `ge-compile` fused
and eager (`{fuse=false reuse=false streams=1}`) on the `ascend910` and `tiny`
presets, each compiled as `ge-opt` compiles (the verifier after every pass) and
run on the NPU simulator.

Each path ends in one status:

* ok: every output matches onnxruntime's in shape, element type and values,
  within `simulator.compare`'s tolerance of the least precise float type the
  module uses;
* refusal: a clean one-line `CompileError` (or `UnsupportedError`) before running;
* unjust refusal: a refusal on ascend910 although every node of the graph
  compiles alone (on the same path): fusion or layout made what lowering cannot;
* crash: any other exception, or a module the verifier rejects after a pass;
* miscompile: numbers beyond the tolerance (or a wrong shape or element type);
* sim error: the simulator refused the generated code (out of bounds, race...).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..dialects.context import make_context
from ..core.diagnostics import CompileError
from ..core.passes import Instrumentation, instrumented, parse_pass_pipeline, run_pipeline
from ..simulator.compare import precision_floor, worst_mismatch
from ..simulator.reference import run_reference
from ..simulator.run import execute
from .importer import import_model
from .onnx_proto import model_from_proto

OK, REFUSAL, UNJUST, CRASH, MISCOMPILE, SIM_ERROR = (
    "ok", "refusal", "unjust refusal", "crash", "miscompile", "sim error")
STATUSES = (OK, REFUSAL, UNJUST, CRASH, MISCOMPILE, SIM_ERROR)
FAILURES = (UNJUST, CRASH, MISCOMPILE, SIM_ERROR)

_EAGER = "fuse=false reuse=false streams=1 "


@dataclass(frozen=True)
class Path:
    name: str
    pipeline: str | None  # None: the reference interpreter
    hw: str | None = None


PATHS: tuple[Path, ...] = (
    Path("reference", None),
    Path("fused/ascend910", "ge-compile{hw=ascend910}", "ascend910"),
    Path("eager/ascend910", "ge-compile{" + _EAGER + "hw=ascend910}", "ascend910"),
    Path("fused/tiny", "ge-compile{hw=tiny}", "tiny"),
    Path("eager/tiny", "ge-compile{" + _EAGER + "hw=tiny}", "tiny"),
)
PATHS_BY_NAME = {p.name: p for p in PATHS}


@dataclass(frozen=True)
class Outcome:
    status: str
    message: str = ""

    @property
    def signature(self) -> tuple[str, str]:
        """The status and the message with its numbers and names blanked: two
        failures with one signature are the same bug (what reduction keeps)."""
        text = re.sub(r"%\w+|'[^']*'|\b[\w.]*\d[\w.]*\b", "#", self.message)
        return self.status, text[:120]

    def __str__(self) -> str:
        return f"{self.status}: {self.message}" if self.message else self.status


def oracle(model, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    """onnxruntime's outputs (graph optimisations off: the graph as written). A graph
    with a reduced-precision float (f16, bf16) runs one node at a time, so that every
    intermediate is rounded to its type as ONNX says: onnxruntime's CPU provider runs
    a chain of f16 ops it has no f16 kernels for (Reciprocal, Atan, Sqrt, ...) in
    f32 with the casts between them removed, skipping the roundings the graph asks
    for, which an ill-conditioned op (a norm over nearly equal values) amplifies
    beyond any f16 tolerance (tests/unit/test_fuzz_regressions.py,
    f16_instance_norm_chain_precision)."""
    if not _reduced_precision(model):
        return _session(model).run(None, inputs)
    from onnx import helper, numpy_helper

    initializers = {t.name: t for t in model.graph.initializer}
    values = {**{t.name: numpy_helper.to_array(t) for t in model.graph.initializer}, **inputs}
    for node in model.graph.node:
        names = [n for n in dict.fromkeys(node.input) if n]
        fed = [n for n in names if n not in initializers]
        graph = helper.make_graph(
            [node], "node",
            [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(values[n].dtype), values[n].shape)
             for n in fed],
            [helper.make_empty_tensor_value_info(n) for n in node.output if n],
            [initializers[n] for n in names if n in initializers],
        )
        single = helper.make_model(graph, opset_imports=model.opset_import)
        single.ir_version = model.ir_version
        results = _session(single).run(None, {n: values[n] for n in fed})
        values.update(zip([n for n in node.output if n], results))
    return [values[o.name] for o in model.graph.output]


def _reduced_precision(model) -> bool:
    """Whether any tensor of `model` (inferred types included) is f16 or bf16."""
    from onnx import TensorProto, shape_inference

    reduced = (TensorProto.FLOAT16, TensorProto.BFLOAT16)
    graph = shape_inference.infer_shapes(model).graph
    infos = (*graph.input, *graph.value_info, *graph.output)
    return (any(i.type.tensor_type.elem_type in reduced for i in infos)
            or any(t.data_type in reduced for t in graph.initializer)
            or any(a.name == "to" and a.i in reduced for n in graph.node for a in n.attribute))


def _session(model):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 4  # an invalid reduction candidate is no news
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def import_graph(model):
    """The ge module of an onnx ModelProto (CompileError if the importer refuses it)."""
    return import_model(model_from_proto(model))


def run_graph(model, inputs: dict[str, np.ndarray], paths: Sequence[Path] = PATHS,
              expected: list[np.ndarray] | None = None, judge_refusals: bool = True) -> dict[str, Outcome]:
    """Every path's outcome on one graph (`expected`: the oracle's outputs, computed
    if not given). An import failure is every path's outcome."""
    expected = oracle(model, inputs) if expected is None else expected
    try:
        module = import_graph(model)
    except Exception as e:  # noqa: BLE001 - classified, not raised
        outcome = _compile_failure(e)
        return {p.name: outcome for p in paths}
    arrays = [inputs[i.name] for i in model.graph.input]
    floor = precision_floor(module)
    outcomes = {}
    for path in paths:
        outcome = run_path(module.clone(), arrays, path, expected, floor)
        if judge_refusals and outcome.status == REFUSAL and path.hw == "ascend910" and _nodes_compile_alone(model, path):
            outcome = Outcome(UNJUST, outcome.message)
        outcomes[path.name] = outcome
    return outcomes


def run_path(module, arrays: list[np.ndarray], path: Path, expected: list[np.ndarray], floor) -> Outcome:
    """Compile `module` (which this changes) for `path`, run it and compare."""
    if path.pipeline is None:
        try:
            with np.errstate(all="ignore"):
                actual = run_reference(module, arrays)
        except Exception as e:  # noqa: BLE001
            return _compile_failure(e)
        return compare(expected, actual, floor)
    try:
        compile_module(module, path.pipeline)
    except Exception as e:  # noqa: BLE001
        return _compile_failure(e)
    try:
        with np.errstate(all="ignore"):
            actual = execute(module, arrays, hw=path.hw).results
    except CompileError as e:
        return Outcome(SIM_ERROR, e.message)
    except Exception as e:  # noqa: BLE001
        return Outcome(CRASH, f"simulator: {type(e).__name__}: {_first_line(e)}")
    return compare(expected, actual, floor)


def compile_module(module, pipeline: str) -> None:
    """Compile as `ge-opt` does: the verifier after every pass."""
    with instrumented(Instrumentation(verify_each=True)):
        run_pipeline(parse_pass_pipeline(pipeline), make_context(), module)


def compare(expected: list[np.ndarray], actual: list[np.ndarray], floor) -> Outcome:
    if len(expected) != len(actual):
        return Outcome(MISCOMPILE, f"{len(actual)} outputs, expected {len(expected)}")
    for i, (want, got) in enumerate(zip(expected, actual)):
        want, got = np.asarray(want), np.asarray(got)
        if want.dtype != got.dtype:
            return Outcome(MISCOMPILE, f"output {i}: element type {got.dtype}, expected {want.dtype}")
        mismatch = worst_mismatch(f"output {i}", want, got, floor)
        if mismatch is not None and mismatch.ratio > 1.0:
            if want.shape != got.shape:
                return Outcome(MISCOMPILE, f"output {i}: shape {got.shape}, expected {want.shape}")
            return Outcome(MISCOMPILE, str(mismatch))
    return Outcome(OK)


def _compile_failure(e: BaseException) -> Outcome:
    if isinstance(e, CompileError):
        message = e.message
        if "(after pass '" in message:
            return Outcome(CRASH, f"invalid IR: {message}")
        if "\n" in message.strip():
            return Outcome(CRASH, f"a refusal of several lines: {message.strip().splitlines()[0]}")
        return Outcome(REFUSAL, message)
    return Outcome(CRASH, f"{type(e).__name__}: {_first_line(e)}")


def _first_line(e: BaseException) -> str:
    lines = [line for line in str(e).splitlines() if line.strip()]
    return lines[0].strip() if lines else ""


# ---- one node alone ----------------------------------------------------------------------


def single_node_models(model) -> list:
    """One model per node of `model`: the node, its constant inputs as initializers,
    the others as graph inputs of their inferred types."""
    from onnx import helper, shape_inference

    inferred = shape_inference.infer_shapes(model)
    types = {v.name: v for v in (*inferred.graph.value_info, *inferred.graph.input, *inferred.graph.output)}
    initializers = {t.name: t for t in model.graph.initializer}
    models = []
    for node in model.graph.node:
        inputs = [types[n] for n in dict.fromkeys(node.input) if n and n not in initializers]
        outputs = [types[n] for n in node.output if n in types]
        consts = [initializers[n] for n in dict.fromkeys(node.input) if n in initializers]
        graph = helper.make_graph([node], "alone", inputs, outputs, consts)
        single = helper.make_model(graph, opset_imports=model.opset_import)
        single.ir_version = model.ir_version
        models.append(single)
    return models


def _nodes_compile_alone(model, path: Path) -> bool:
    for single in single_node_models(model):
        try:
            compile_module(import_graph(single), path.pipeline)
        except Exception:  # noqa: BLE001 - any failure: the refusal may be just
            return False
    return True


__all__ = [
    "CRASH", "FAILURES", "MISCOMPILE", "OK", "Outcome", "PATHS", "PATHS_BY_NAME", "Path", "REFUSAL",
    "SIM_ERROR", "STATUSES", "UNJUST", "compare", "compile_module", "import_graph", "oracle",
    "run_graph", "run_path", "single_node_models",
]
