"""ONNX conformance: run ONNX's own backend node test cases through the importer
and a backend, and compare with the outputs ONNX expects.

The cases come from `onnx.backend.test.case.node.collect_testcases` (generated
by the onnx package, nothing downloaded). A case counts for an op when its graph
is that one op. The multi-node cases (ONNX functions expanded into their bodies,
e.g. `test_softmax_axis_0_expanded`) whose ops are all supported are run too,
reported on a line of their own (`MULTI_NODE`) outside the per-op totals.

Each case ends in one of three states:

* passed: imported, run, and every output matches in shape, element type and
  values (within the case's rtol/atol, as ONNX's runner checks them);
* unsupported: the importer refused it cleanly (`UnsupportedError`: an element
  type, attribute value or mode gecomp does not take);
* failed: anything else (a wrong number, a crash, an unexpected import error).

The cases of the ops gecomp does not support are checked too (`run_refusals`):
each must be refused at import with a one-line `UnsupportedError`.

Inputs that the importer needs as constants (Reshape's shape, Slice's bounds...)
are graph inputs in many test cases; the harness binds them to the case's data,
as a static-shape compiler must.

Backends are functions `(module, inputs) -> outputs` in `BACKENDS`:
"reference" runs the imported module on the reference interpreter; "npu" compiles
it with the `ge-compile` pipeline and executes the result, which
`simulator.run.execute` hands to the NPU simulator (until `ge-compile` is
registered, choosing it is a one-line "unknown pass" error). `pipeline:P` compiles
with any registered pipeline first (`pipeline:ge-graph-opt`, `pipeline:ge-fuse`),
checking that level against ONNX's numbers.
"""

from __future__ import annotations

import dataclasses
import functools
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from ..core import dtypes
from ..core.context import make_context
from ..core.diagnostics import CompileError
from ..core.passes import parse_pass_pipeline, run_pipeline
from ..simulator.reference import run_reference
from ..simulator.run import execute
from .converters import CONVERTERS, UnsupportedError
from .importer import import_model, static_inputs
from .onnx_model import Model, TensorValue, element_type_of_dtype, numpy_dtype_of
from .onnx_proto import model_from_proto, require_onnx

Backend = Callable[[ModuleOp, Sequence[np.ndarray]], Sequence[np.ndarray]]



@dataclass(frozen=True)
class Compiled:
    """A backend that compiles with `pipeline`, then runs the module at the level it
    reached (reference interpreter for ge / fused, NPU simulator for npu)."""

    pipeline: str

    def check(self) -> None:
        """Fail early (one line) if the pipeline does not exist."""
        parse_pass_pipeline(self.pipeline)

    def __call__(self, module: ModuleOp, inputs: Sequence[np.ndarray]) -> Sequence[np.ndarray]:
        run_pipeline(parse_pass_pipeline(self.pipeline), make_context(), module)
        return execute(module, inputs).results


BACKENDS: dict[str, Backend] = {
    "reference": run_reference,
    "npu": Compiled("ge-compile"),
}


def backend_named(name: str) -> Backend:
    """An entry of BACKENDS, or `pipeline:P` for any registered pass pipeline P."""
    if name in BACKENDS:
        return BACKENDS[name]
    if name.startswith("pipeline:"):
        return Compiled(name.removeprefix("pipeline:"))
    raise CompileError(f"unknown backend '{name}' (available: {', '.join(BACKENDS)}, pipeline:PIPELINE)")

PASSED, FAILED, UNSUPPORTED = "passed", "failed", "unsupported"
MULTI_NODE = "multi-node graphs"


@dataclass(frozen=True)
class CaseResult:
    name: str
    op_type: str
    status: str
    reason: str = ""


def node_cases(op_types: Iterable[str] | None = None, multi_node: bool = False) -> dict[str, list]:
    """ONNX's node test cases of each supported op (or of `op_types`), by op; with
    `multi_node`, also the cases of several nodes, all supported, under MULTI_NODE."""
    wanted = set(CONVERTERS) if op_types is None else set(op_types)
    cases = _collected()
    by_op: dict[str, list] = {op: [] for op in sorted(wanted)}
    if multi_node:
        by_op[MULTI_NODE] = []
    for case in cases:
        nodes = case.model.graph.node
        supported = all(_supported(n) for n in nodes)
        if len(nodes) == 1 and supported and nodes[0].op_type in wanted:
            by_op[nodes[0].op_type].append(case)
        elif len(nodes) > 1 and supported and multi_node:
            by_op[MULTI_NODE].append(case)
    return by_op


def _supported(node) -> bool:
    return node.domain in ("", "ai.onnx") and node.op_type in CONVERTERS


def run_refusals(progress: Callable[[CaseResult], None] | None = None) -> list[CaseResult]:
    """ONNX's node test cases that use an op gecomp does not import (LSTM, NonZero,
    com.microsoft ops...), each filed under its first such op: every one must be
    refused at import with a one-line `UnsupportedError` (status unsupported);
    anything else (another error, a crash, a model that imports) is a failed case."""
    results = []
    for case in _collected():
        unsupported = [n for n in case.model.graph.node if not _supported(n)]
        if not unsupported:
            continue
        node = unsupported[0]
        op_type = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}"
        results.append(CaseResult(case.name, op_type, *_refusal(case)))
        if progress is not None:
            progress(results[-1])
    return results


def _refusal(case) -> tuple[str, str]:
    inputs = _arrays(case.data_sets[0][0]) if case.data_sets else []
    try:
        import_model(bind_static_inputs(model_from_proto(case.model), inputs)[0])
    except UnsupportedError as e:
        if "\n" in e.message:
            return FAILED, f"a refusal of several lines: {e.message!r}"
        return UNSUPPORTED, e.message
    except CompileError as e:
        return FAILED, f"import: not refused as unsupported: {e.message}"
    except Exception as e:  # noqa: BLE001 - a crash of the importer is what this looks for
        return FAILED, f"import: {type(e).__name__}: {e}"
    return FAILED, "imported, although it uses an unsupported op"


@functools.cache
def _collected() -> tuple:
    """ONNX's node test cases (generated by the onnx package: seconds, so once)."""
    require_onnx()
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return tuple(collect_testcases(None))


def run_case(case, backend: Backend, op_type: str = "") -> CaseResult:
    """Import, run and compare every data set of one test case."""
    model = model_from_proto(case.model)
    for inputs, expected in case.data_sets:
        inputs, expected = _arrays(inputs), _arrays(expected)
        result = _run_data_set(model, inputs, expected, backend, case.rtol, case.atol)
        if result is not None:
            status, reason = result
            return CaseResult(case.name, op_type, status, reason)
    return CaseResult(case.name, op_type, PASSED)


def _arrays(values) -> list:
    """Test data as numpy arrays (cases of exotic types hold TensorProtos; those without
    a numpy type stay protos, and the importer refuses their element type anyway)."""
    from onnx import TensorProto, numpy_helper

    arrays = []
    for v in values:
        if isinstance(v, TensorProto):
            v = numpy_helper.to_array(v) if numpy_dtype_of(v.data_type) is not None else v
        arrays.append(np.asarray(v) if isinstance(v, np.generic) else v)
    return arrays


def _run_data_set(model: Model, inputs, expected, backend: Backend, rtol: float, atol: float):
    bound, runtime_inputs = bind_static_inputs(model, inputs)
    try:
        module = import_model(bound)
    except UnsupportedError as e:
        return UNSUPPORTED, e.message
    except CompileError as e:
        return FAILED, f"import: {e.message}"
    try:
        with np.errstate(all="ignore"):
            outputs = backend(module, runtime_inputs)
    except CompileError as e:
        return FAILED, f"run: {e.message}"
    except Exception as e:  # noqa: BLE001 - a crash of the backend is a failed case, reported
        return FAILED, f"run: {type(e).__name__}: {e}"
    return _compare(bound, expected, outputs, rtol, atol)


def bind_static_inputs(model: Model, inputs: Sequence[np.ndarray]) -> tuple[Model, list[np.ndarray]]:
    """`model` with the graph inputs that feed import-time operands turned into
    initializers holding their test data, and the remaining runtime inputs."""
    graph = model.graph
    static = _computed_from({
        node.inputs[i]
        for node in graph.nodes
        for i in static_inputs(node)
        if i < len(node.inputs) and node.inputs[i]
    }, graph.nodes)
    initializers = list(graph.initializers)
    kept_inputs, runtime = [], []
    for info, array in zip(graph.inputs, inputs):
        if info.name in static and isinstance(array, np.ndarray):
            array = np.asarray(array)
            initializers.append(
                TensorValue(info.name, element_type_of_dtype(array.dtype), array.shape, array)
            )
        else:
            kept_inputs.append(info)
            runtime.append(array)
    bound_graph = dataclasses.replace(graph, inputs=kept_inputs, initializers=initializers)
    return dataclasses.replace(model, graph=bound_graph), runtime


def _computed_from(names: set[str], nodes) -> set[str]:
    """`names` and every value they are computed from."""
    producers = {output: node for node in nodes for output in node.outputs if output}
    seen, stack = set(), list(names)
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        producer = producers.get(name)
        if producer is not None and producer.op_type != "Shape":  # Shape reads no data
            stack.extend(i for i in producer.inputs if i)
    return seen


def _compare(model: Model, expected, outputs, rtol: float, atol: float):
    names = [o.name for o in model.graph.outputs]
    if len(outputs) != len(expected):
        return FAILED, f"{len(outputs)} outputs, expected {len(expected)}"
    for name, want, got in zip(names, expected, outputs):
        want, got = np.asarray(want), np.asarray(got)
        if want.dtype != got.dtype:
            return FAILED, f"output '{name}': element type {got.dtype}, expected {want.dtype}"
        if want.shape != got.shape:
            return FAILED, f"output '{name}': shape {got.shape}, expected {want.shape}"
        if not _close(want, got, rtol, atol):
            error = np.abs(got.astype(np.float64) - want.astype(np.float64))
            return FAILED, f"output '{name}': max abs error {np.nanmax(error):.3g} (rtol {rtol}, atol {atol})"
    return None


def _close(want: np.ndarray, got: np.ndarray, rtol: float, atol: float) -> bool:
    """Integers and booleans exactly; floats (ml_dtypes' too, compared as float64)
    within the case's tolerance, NaN matching NaN."""
    if not dtypes.is_float_dtype(want.dtype):
        return np.array_equal(want, got)
    return bool(np.allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True))


@dataclass
class OpRow:
    op_type: str
    cases: int = 0
    passed: int = 0
    failed: int = 0
    unsupported: int = 0

    def add(self, result: CaseResult) -> None:
        self.cases += 1
        setattr(self, result.status, getattr(self, result.status) + 1)


def run_conformance(backend: str = "reference", op_types: Iterable[str] | None = None,
                    multi_node: bool = True,
                    progress: Callable[[CaseResult], None] | None = None) -> list[CaseResult]:
    """Every node test case of the supported ops (or `op_types`) on `backend`, and
    the multi-node cases if asked."""
    run = backend_named(backend)
    if isinstance(run, Compiled):
        run.check()
    results = []
    for op_type, cases in node_cases(op_types, multi_node).items():
        for case in cases:
            result = run_case(case, run, op_type)
            results.append(result)
            if progress is not None:
                progress(result)
    return results


def summarize(results: Sequence[CaseResult], op_types: Iterable[str] | None = None) -> list[OpRow]:
    """One row per op (in `op_types` order, default: alphabetical), the total of
    those, then the multi-node row if there were such cases."""
    single = [r for r in results if r.op_type != MULTI_NODE]
    rows = {op: OpRow(op) for op in (op_types or sorted({r.op_type for r in single}))}
    total = OpRow("total")
    for r in single:
        rows.setdefault(r.op_type, OpRow(r.op_type)).add(r)
        total.add(r)
    multi = OpRow(MULTI_NODE)
    for r in results:
        if r.op_type == MULTI_NODE:
            multi.add(r)
    return [*rows.values(), total, *([multi] if multi.cases else [])]


def format_table(rows: Sequence[OpRow], markdown: bool = False) -> str:
    header = ("op", "cases", "passed", "failed", "unsupported")
    lines = []
    if markdown:
        lines.append("| " + " | ".join(header) + " |")
        lines.append("|" + "|".join(["---"] + ["---:"] * 4) + "|")
        for r in rows:
            name = f"**{r.op_type}**" if r.op_type == "total" else r.op_type
            lines.append(f"| {name} | {r.cases} | {r.passed} | {r.failed} | {r.unsupported} |")
        return "\n".join(lines)
    lines.append(f"{header[0]:<20}{header[1]:>7}{header[2]:>8}{header[3]:>8}{header[4]:>13}")
    for r in rows:
        if r.op_type == "total":
            lines.append("-" * 56)
        lines.append(f"{r.op_type:<20}{r.cases:>7}{r.passed:>8}{r.failed:>8}{r.unsupported:>13}")
    return "\n".join(lines)


def total_row(rows: Sequence[OpRow]) -> OpRow:
    return next(r for r in rows if r.op_type == "total")


def pass_rates(total: OpRow) -> tuple[float, float]:
    """(passed / all cases, passed / cases in scope): unsupported cases are out of scope."""
    in_scope = total.cases - total.unsupported
    return (total.passed / total.cases if total.cases else 1.0,
            total.passed / in_scope if in_scope else 1.0)


__all__ = [
    "BACKENDS",
    "CaseResult",
    "OpRow",
    "bind_static_inputs",
    "format_table",
    "node_cases",
    "pass_rates",
    "total_row",
    "run_case",
    "run_conformance",
    "run_refusals",
    "summarize",
]
