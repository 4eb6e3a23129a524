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
  type, attribute value or mode gecomp does not take), or the backend did for an
  element type no unit of the NPU computes the op in (`NoUnitForTypeError`: the
  cube multiplies no f64); `refusal_kind` names the kind of each refusal;
* failed: anything else (a wrong number, a crash, an unexpected import error).

The cases of the ops gecomp does not support are checked too (`run_refusals`):
each must be refused at import with a one-line `UnsupportedError`.

Inputs that the importer needs as constants (Reshape's shape, Slice's bounds...)
are graph inputs in many test cases; the harness binds them to the case's data,
as a static-shape compiler must (`binding.py`, which `ge-translate --bind` uses).

Whole suites (`run_suite`) run every case regardless of its ops: "node" is all
of ONNX's node test cases, each filed under a category (`case_category`: plain
tensors of the common element types, or the reason it is not), and
"pytorch-converted" / "pytorch-operator" are the model directories shipped in
the onnx wheel (`model.onnx`, `test_data_set_*/{input,output}_N.pb`), most of
them at opset 6, which the importer upgrades with onnx's version converter.

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
import glob
import os
import re
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from ..core import dtypes
from ..dialects.context import make_context
from ..core.diagnostics import CompileError, NoUnitForTypeError
from ..core.passes import Instrumentation, instrumented, parse_pass_pipeline, run_pipeline
from ..simulator.reference import run_reference
from ..simulator.run import execute
from .binding import bind_inputs, inputs_read_at_import
from .converters import CONVERTERS, UnsupportedError
from .importer import import_model
from .onnx_functions import has_function_body
from .onnx_model import Model, numpy_dtype_of
from .onnx_proto import model_from_proto, require_onnx

Backend = Callable[[ModuleOp, Sequence[np.ndarray]], Sequence[np.ndarray]]



@dataclass(frozen=True)
class Compiled:
    """A backend that compiles with `pipeline`, then runs the module at the level it
    reached (reference interpreter for ge / fused, NPU simulator for npu).

    It compiles as `ge-opt` does, verifying the module after every pass: invalid
    IR that happens to simulate (a float instruction on an integer buffer) is a
    failed case, not a pass."""

    pipeline: str

    def check(self) -> None:
        """Fail early (one line) if the pipeline does not exist."""
        parse_pass_pipeline(self.pipeline)

    def __call__(self, module: ModuleOp, inputs: Sequence[np.ndarray]) -> Sequence[np.ndarray]:
        with instrumented(Instrumentation(verify_each=True)):
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
    category: str = ""


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


def function_cases(op_types: Iterable[str] | None = None) -> dict[str, list]:
    """ONNX's node test cases of one op that has no converter but an ONNX function
    body (Attention, the losses...: the importer expands them), by op."""
    by_op: dict[str, list] = {}
    for case in _collected():
        nodes = case.model.graph.node
        if len(nodes) != 1 or _supported(nodes[0]) or not has_function_body(case.model, nodes[0]):
            continue
        if op_types is None or nodes[0].op_type in op_types:
            by_op.setdefault(nodes[0].op_type, []).append(case)
    return by_op


def run_function_cases(backend: str = "reference", op_types: Iterable[str] | None = None) -> list[CaseResult]:
    """`function_cases` run on `backend` (one CaseResult per case, filed under its op)."""
    chosen = backend_named(backend)
    return [run_case(case, chosen, op) for op, cases in function_cases(op_types).items() for case in cases]


def run_refusals(progress: Callable[[CaseResult], None] | None = None) -> list[CaseResult]:
    """ONNX's node test cases that use an op gecomp does not import (neither a
    converter nor an ONNX function body: Loop, NonZero, com.microsoft ops...),
    each filed under its first such op: every one must be
    refused at import with a one-line `UnsupportedError` (status unsupported);
    anything else (another error, a crash, a model that imports) is a failed case."""
    results = []
    for case in _collected():
        unsupported = [n for n in case.model.graph.node if not (_supported(n) or has_function_body(case.model, n))]
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
    ulps = NARROW_FLOAT_ULPS if len(model.graph.nodes) > 1 else 0
    for inputs, expected in case.data_sets:
        inputs, expected = _arrays(inputs), _arrays(expected)
        result = _run_data_set(model, inputs, expected, backend, (case.rtol, case.atol, ulps))
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


def _run_data_set(model: Model, inputs, expected, backend: Backend, tolerance: tuple[float, float, int]):
    try:
        bound, runtime_inputs = bind_static_inputs(model, inputs)
        module = import_model(bound)
    except UnsupportedError as e:
        return UNSUPPORTED, e.message
    except CompileError as e:
        return FAILED, f"import: {e.message}"
    try:
        with np.errstate(all="ignore"):
            outputs = backend(module, runtime_inputs)
    except NoUnitForTypeError as e:
        return UNSUPPORTED, e.message
    except CompileError as e:
        return FAILED, f"run: {e.message}"
    except Exception as e:  # noqa: BLE001 - a crash of the backend is a failed case, reported
        return FAILED, f"run: {type(e).__name__}: {e}"
    return _compare(bound, expected, outputs, *tolerance)


def bind_static_inputs(model: Model, inputs: Sequence[np.ndarray]) -> tuple[Model, list[np.ndarray]]:
    """`model` with the graph inputs that feed import-time operands turned into
    initializers holding their test data, and the remaining runtime inputs."""
    static = inputs_read_at_import(model)
    arrays = {
        info.name: np.asarray(array)
        for info, array in zip(model.graph.inputs, inputs)
        if info.name in static and isinstance(array, np.ndarray)
    }
    runtime = [array for info, array in zip(model.graph.inputs, inputs) if info.name not in arrays]
    return bind_inputs(model, arrays), runtime


def _compare(model: Model, expected, outputs, rtol: float, atol: float, ulps: int):
    names = [o.name for o in model.graph.outputs]
    if len(outputs) != len(expected):
        return FAILED, f"{len(outputs)} outputs, expected {len(expected)}"
    for name, want, got in zip(names, expected, outputs):
        want, got = np.asarray(want), np.asarray(got)
        if want.dtype != got.dtype:
            return FAILED, f"output '{name}': element type {got.dtype}, expected {want.dtype}"
        if want.shape != got.shape:
            return FAILED, f"output '{name}': shape {got.shape}, expected {want.shape}"
        if not _close(want, got, rtol, atol, ulps):
            error = np.abs(got.astype(np.float64) - want.astype(np.float64))
            return FAILED, f"output '{name}': max abs error {np.nanmax(error):.3g} (rtol {rtol}, atol {atol})"
    return None


def _close(want: np.ndarray, got: np.ndarray, rtol: float, atol: float, ulps: int = 0) -> bool:
    """Integers and booleans exactly; floats (ml_dtypes' too, compared as float64)
    within the case's tolerance, NaN matching NaN; float16 and bfloat16 outputs
    at no less than `ulps` units in the last place (relative)."""
    if not dtypes.is_float_dtype(want.dtype):
        return np.array_equal(want, got)
    if want.dtype.itemsize == 2:
        rtol = max(rtol, ulps * float(dtypes.float_info(want.dtype).eps))
    return bool(np.allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True))


NARROW_FLOAT_ULPS = 2
"""How far the float16 / bfloat16 outputs of a case of several nodes may be from
ONNX's: ONNX computes the expected values in that type, rounding after every
step (a float16 softmax's exp, its sum, then the product with V), where ge ops
compute in float32 and round once, so the two differ by an ulp or two however
right both are. So do the cases of one node that the importer expands into its
ONNX function body (Attention, the losses). A single op's case keeps its own
tolerance (a cast must round exactly)."""


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


def format_table(rows: Sequence[OpRow], markdown: bool = False, first: str = "op",
                 refused: str = "unsupported") -> str:
    """`rows` as a table; `first` and `refused` name the first and last columns."""
    header = (first, "cases", "passed", "failed", refused)
    lines = []
    if markdown:
        lines.append("| " + " | ".join(header) + " |")
        lines.append("|" + "|".join(["---"] + ["---:"] * 4) + "|")
        for r in rows:
            name = f"**{r.op_type}**" if r.op_type == "total" else r.op_type
            lines.append(f"| {name} | {r.cases} | {r.passed} | {r.failed} | {r.unsupported} |")
        return "\n".join(lines)
    width = max([20, *(len(r.op_type) + 2 for r in rows)])
    lines.append(f"{header[0]:<{width}}{header[1]:>7}{header[2]:>8}{header[3]:>8}{header[4]:>13}")
    for r in rows:
        if r.op_type == "total":
            lines.append("-" * (width + 36))
        lines.append(f"{r.op_type:<{width}}{r.cases:>7}{r.passed:>8}{r.failed:>8}{r.unsupported:>13}")
    return "\n".join(lines)


def total_row(rows: Sequence[OpRow]) -> OpRow:
    return next(r for r in rows if r.op_type == "total")


def pass_rates(total: OpRow) -> tuple[float, float]:
    """(passed / all cases, passed / cases in scope): unsupported cases are out of scope."""
    in_scope = total.cases - total.unsupported
    return (total.passed / total.cases if total.cases else 1.0,
            total.passed / in_scope if in_scope else 1.0)


# ---- whole suites ---------------------------------------------------------------------------

SUITES = ("node", "pytorch-converted", "pytorch-operator")
PLAIN = "plain tensors"
_PLAIN_TYPES = {1, 2, 3, 6, 7, 9, 10}  # float, uint8, int8, int32, int64, bool, float16
_OTHER_TYPES = {
    4: "16/32/64-bit unsigned and int16", 5: "16/32/64-bit unsigned and int16",
    12: "16/32/64-bit unsigned and int16", 13: "16/32/64-bit unsigned and int16",
    8: "strings", 11: "double", 14: "complex", 15: "complex", 16: "bfloat16",
    17: "float8", 18: "float8", 19: "float8", 20: "float8", 24: "float8",
    21: "int4 and narrower", 22: "int4 and narrower", 23: "float4", 25: "int4 and narrower", 26: "int4 and narrower",
}
_OTHER_DOMAINS = {"ai.onnx.ml": "ML ops", "ai.onnx.preview.training": "training ops"}


@dataclass(frozen=True)
class SuiteCase:
    """A case of a model suite, shaped like onnx's node TestCase (what run_case reads)."""

    name: str
    model: object
    data_sets: list
    rtol: float = 1e-3
    atol: float = 1e-7


def case_category(model) -> str:
    """PLAIN for a case over plain tensors (float32, float16, int8, uint8, int32,
    int64, bool; no control flow, no ML or training domain), else the first reason
    it is not: an element type, "sequences and optionals", "control flow", a domain."""
    reasons = _other_reasons(model.graph)
    return reasons[0] if reasons else PLAIN


def _other_reasons(graph) -> list[str]:
    from onnx import AttributeProto

    reasons = []
    for info in [*graph.input, *graph.output, *graph.value_info]:
        kind = info.type.WhichOneof("value")
        if kind in ("sequence_type", "optional_type", "map_type", "sparse_tensor_type"):
            reasons.append("sequences and optionals")
        elif kind == "tensor_type":
            reasons.extend(_type_reason(info.type.tensor_type.elem_type))
    for tensor in graph.initializer:
        reasons.extend(_type_reason(tensor.data_type))
    for node in graph.node:
        if node.domain in _OTHER_DOMAINS:
            reasons.append(_OTHER_DOMAINS[node.domain])
        for a in node.attribute:
            if a.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS):
                reasons.append("control flow")
                for body in [a.g] if a.type == AttributeProto.GRAPH else a.graphs:
                    reasons.extend(_other_reasons(body))
            elif a.type == AttributeProto.TENSOR:
                reasons.extend(_type_reason(a.t.data_type))
            elif a.type == AttributeProto.INT and a.name in ("to", "dtype", "output_dtype"):
                reasons.extend(_type_reason(a.i))
    return reasons


def _type_reason(code: int) -> list[str]:
    return [] if code in _PLAIN_TYPES or code == 0 else [_OTHER_TYPES.get(code, f"element type {code}")]


def suite_cases(suite: str) -> list:
    """The cases of `suite` (SUITES): onnx's node test cases, or the model
    directories of the onnx wheel's backend test data."""
    if suite == "node":
        return list(_collected())
    if suite not in SUITES:
        raise CompileError(f"unknown suite '{suite}' (available: {', '.join(SUITES)})")
    onnx = require_onnx()
    from onnx import numpy_helper

    root = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", suite)

    def tensors(directory: str, kind: str) -> list:
        paths = glob.glob(os.path.join(directory, f"{kind}_*.pb"))
        paths.sort(key=lambda p: int(p.rsplit("_", 1)[1].removesuffix(".pb")))
        return [numpy_helper.to_array(onnx.load_tensor(p)) for p in paths]

    cases = []
    for name in sorted(os.listdir(root)):
        directory = os.path.join(root, name)
        sets = sorted(glob.glob(os.path.join(directory, "test_data_set_*")))
        data = [(tensors(d, "input"), tensors(d, "output")) for d in sets]
        cases.append(SuiteCase(name, onnx.load(os.path.join(directory, "model.onnx")), data))
    return cases


def run_suite(suite: str, backend: str = "reference",
              progress: Callable[[CaseResult], None] | None = None,
              categories: Iterable[str] | None = None) -> list[CaseResult]:
    """Every case of `suite` on `backend`, whatever its ops (a case using an op
    gecomp lacks is refused at import), each result with its category; with
    `categories`, only the cases of those (`in_categories`: a whole run of the node
    suite through the simulator takes hours, so it is run in parts)."""
    run = backend_named(backend)
    if isinstance(run, Compiled):
        run.check()
    wanted = None if categories is None else tuple(categories)
    results = []
    for case in suite_cases(suite):
        category = case_category(case.model)
        if wanted is not None and not in_categories(category, wanted):
            continue
        result = dataclasses.replace(run_case(case, run, suite), category=category)
        results.append(result)
        if progress is not None:
            progress(result)
    return results


OTHER = "other"

_REFUSAL_KINDS = (
    (re.compile(r"unsupported op types?: "), "op not supported"),
    (re.compile(r"is an? (sequence|optional)"), "sequence or optional"),
    (re.compile(r"has element type (\w+), which gecomp does not support"), "element type {0}"),
    (re.compile(r"has no NPU kernel for element type (\w+)"), "no NPU kernel for dtype {0}"),
    (re.compile(r"^node #\d+ \((\w+), output '[^']*'\): (.+)$"), "{0}: {1}"),  # an attribute, mode or output
)


def refusal_kind(reason: str) -> str:
    """The kind of a refusal, from its one-line reason: an op gecomp does not
    import, a sequence or optional, an element type refused at import, an element
    type with no NPU unit for the op, an op's attribute, mode or output refused
    (named with the op, not the node); else the reason itself (a kind to look at)."""
    for pattern, kind in _REFUSAL_KINDS:
        if (match := pattern.search(reason)) is not None:
            return kind.format(*match.groups())
    return reason


def refusals_by_kind(results: Sequence[CaseResult]) -> dict[str, int]:
    """Refused cases counted by `refusal_kind`, most first."""
    counts: dict[str, int] = {}
    for r in results:
        if r.status == UNSUPPORTED:
            kind = refusal_kind(r.reason)
            counts[kind] = counts.get(kind, 0) + 1
    return dict(sorted(counts.items(), key=lambda item: -item[1]))


def in_categories(category: str, wanted: Sequence[str]) -> bool:
    """Whether a case of `category` is among `wanted`: category names, PLAIN, or
    OTHER for every category but PLAIN."""
    return category in wanted or (OTHER in wanted and category != PLAIN)


def summarize_categories(results: Sequence[CaseResult]) -> list[OpRow]:
    """One row for the plain-tensor cases, one for all the others, then one per
    reason of the others (most cases first)."""
    plain, other = OpRow(PLAIN), OpRow(OTHER)
    reasons: dict[str, OpRow] = {}
    for r in results:
        (plain if r.category == PLAIN else other).add(r)
        if r.category != PLAIN:
            reasons.setdefault(r.category, OpRow(f"  {r.category}")).add(r)
    return [plain, other, *sorted(reasons.values(), key=lambda row: -row.cases)]


__all__ = [
    "BACKENDS",
    "SUITES",
    "case_category",
    "in_categories",
    "refusal_kind",
    "refusals_by_kind",
    "run_suite",
    "suite_cases",
    "summarize_categories",
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
