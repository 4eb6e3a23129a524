"""ONNX graph -> ge dialect: `func.func @main` with the ONNX inputs and outputs as
arguments and results (named by `ge.name`), one converter per node.

* Static shapes: symbolic input dims (`float[N, 128]`) take their sizes from
  `dims` (`ge-translate --dim N=8`); an unresolved one is an error at the input.
* Initializers and Constant nodes stay numpy arrays until an op uses them, then
  become one `ge.const` each (dense; printed as hex when large). An initializer
  also listed as an input (old exporters do that) is a constant, not an argument.
* Everything static is evaluated at import: after a node is converted, if its
  results are computed from constants only (initializers, Constant nodes, Shape
  results, values computed from those), they are evaluated with the ge ops' own
  reference semantics (`evaluate`) and bound as constants; the ge ops die. So
  masks, position ids and rotary tables of exported models arrive as constants.
  No folded constant exceeds FOLD_LIMIT_BYTES (a broadcast to something huge
  stays a run-time op).
* Operands that must be known at import (Reshape's shape, axes, pads...) are
  such constants; one reached from a graph input is an error naming the node and
  the input (`ge-translate --bind` makes an input a constant).
* Before anything is converted, the whole graph is checked for ops without a
  converter: one error lists every unsupported op type with its count.
* Binary models are prepared with onnx's own tools (`onnx_proto.prepare`: local
  functions inlined, opsets older than 7 upgraded); a text model that needs that
  is read by onnx's parser.
* Every error names the node (`node 'fc' (Gemm): ...`) and points at its line in
  an .onnxtxt file. Unsupported ops, element types and attribute values raise
  `UnsupportedError`, a `CompileError`.

Ops are emitted through the Python `GraphBuilder`, so they are checked by their
shape rules as they are made; dead ops (folded shape computations) are removed
at the end.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.transforms.dead_code_elimination import region_dce

from ..core import dtypes
from ..core.diagnostics import CompileError
from ..core.parsing import read_source
from ..dialects.ge import ConstOp
from .binding import bind_inputs, converter_of, static_inputs
from .builder import BuildError, GraphBuilder, Tensor, value_name
from .converters import Constant, NodeContext, UnsupportedError
from .converters.context import FOLD_LIMIT_BYTES, Value, ge_element_type
from .onnx_model import Graph, Model, Node, ValueInfo
from .onnx_proto import OLDEST_OPSET

DEFAULT_OPSET = 17
"""The default-domain opset assumed when a model imports none."""

__all__ = ["DEFAULT_OPSET", "OLDEST_OPSET", "import_model", "load_model", "static_inputs", "translate_file"]


def import_model(model: Model, dims: Mapping[str, int] | None = None) -> ModuleOp:
    """The ge module of `model`; `dims` sizes its symbolic dims."""
    return _Importer(model, dict(dims or {})).run()


def load_model(path: str) -> Model:
    """Read `.onnx` (binary, needs the onnx package) or `.onnxtxt` (text) by extension;
    standard input (`-`) is read as text. A text model that needs onnx's
    preparation (`_prepared_by_onnx`) is read again by onnx's parser, so that it
    is prepared as binary models are."""
    if path == "-" or path.endswith(".onnxtxt"):
        from .onnxtxt import parse_onnxtxt

        text = read_source(path)
        model = parse_onnxtxt(text, "<stdin>" if path == "-" else path)
        if _prepared_by_onnx(model):
            from .onnx_proto import parse_onnx_text

            return _with_locations(parse_onnx_text(text), model)
        return model
    if path.endswith(".onnx"):
        from .onnx_proto import load_onnx

        if not os.path.exists(path):
            raise CompileError(f"cannot open '{path}': No such file or directory")
        return load_onnx(path)
    raise CompileError(f"'{path}': expected a .onnx or .onnxtxt file")


def _with_locations(prepared: Model, text: Model) -> Model:
    """`prepared` (read by onnx's parser, which keeps no locations) with the
    locations of the same text as our reader saw it, so errors still point at
    its lines: nodes matched by their outputs, values by their names, and the
    nodes of an expanded function op (`onnx_functions`) at the op's line."""
    from .onnx_functions import expanded_from

    nodes = {tuple(node.outputs): node.location for node in text.graph.nodes}
    written = [node.location for node in text.graph.nodes]
    for node in prepared.graph.nodes:
        node.location = nodes.get(tuple(node.outputs))
        origin = expanded_from(node.name) if node.location is None else None
        if origin is not None and origin < len(written):
            node.location = written[origin]
    values = {v.name: v.location for v in text.graph.inputs + text.graph.outputs + text.graph.initializers}
    for v in prepared.graph.inputs + prepared.graph.outputs + prepared.graph.initializers:
        v.location = values.get(v.name)
    return prepared


def _prepared_by_onnx(model: Model) -> bool:
    """Whether a text model needs onnx's preparation (`onnx_proto.prepare`): it has
    model-local functions, an old opset, or ops without a converter that may be
    ONNX function ops to expand (only if onnx is installed: without it, those
    are refused as unsupported)."""
    opset = model.opset("")
    if model.functions or (opset is not None and opset < OLDEST_OPSET):
        return True
    if all(converter_of(node) is not None for node in model.graph.nodes):
        return False
    import importlib.util

    return importlib.util.find_spec("onnx") is not None


def translate_file(path: str, dims: Mapping[str, int] | None = None,
                   bindings: Mapping[str, np.ndarray] | None = None) -> ModuleOp:
    """`ge-translate`: the ge module of an ONNX file, the graph inputs named in
    `bindings` made constants holding those arrays."""
    model = load_model(path)
    check_dims(model.graph, dims or {})
    return import_model(bind_inputs(model, bindings or {}), dims)


def check_dims(graph: Graph, dims: Mapping[str, int]) -> None:
    """Each of `dims` (`ge-translate --dim`) must name a symbolic dim of the
    graph's inputs or outputs and be a positive size: a misspelt name would
    otherwise be ignored silently."""
    symbolic = list(dict.fromkeys(
        d for info in graph.inputs + graph.outputs for d in (info.dims or ()) if isinstance(d, str)
    ))
    for name, size in dims.items():
        if name not in symbolic:
            known = f"its symbolic dims: {', '.join(symbolic)}" if symbolic else "it has none"
            raise CompileError(f"--dim {name}={size}: the model has no symbolic dim '{name}' ({known})")
        if not isinstance(size, int) or size <= 0:
            raise CompileError(f"--dim {name}={size}: a size must be a positive integer")


class _Importer:
    """Walks the graph once; also the `ValueSource` converters read operands from
    (`tensor`, `constant`)."""

    def __init__(self, model: Model, dims: dict[str, int]):
        self.model = model
        self.graph: Graph = model.graph
        self.dims = dims
        self.builder = GraphBuilder(self.graph.name or "main")
        self.values: dict[str, Value] = {}
        self.opset = model.opset("")
        self._opset_version = self.opset if self.opset is not None else DEFAULT_OPSET
        self._static: dict[SSAValue, bool] = {}
        self._folded: dict[SSAValue, np.ndarray] = {}

    def run(self) -> ModuleOp:
        opset = self._opset_version
        if opset < OLDEST_OPSET:
            raise UnsupportedError(
                f"opset {opset} is not supported (opset {OLDEST_OPSET} and newer; load_model and "
                "ge-translate convert older models with onnx.version_converter)"
            )
        if not self.graph.outputs:
            raise CompileError(f"graph '{self.graph.name}' has no outputs")
        self._check_ops(self.graph.nodes)
        self._check_names()
        for tensor in self.graph.initializers:
            self.values[tensor.name] = Constant(tensor.array, tensor.name, tensor.elem_type)
        for info in self.graph.inputs:
            if info.name not in self.values:
                self._add_input(info)
        for index, node in enumerate(self.graph.nodes):
            self._convert(node, index, opset)
        for info in self.graph.outputs:
            self._add_output(info)
        module = self.builder.build()
        region_dce(module.body.block.first_op.body)
        return module

    # ---- inputs and outputs --------------------------------------------------------------

    def _add_input(self, info: ValueInfo) -> None:
        def error(message: str) -> UnsupportedError:
            return UnsupportedError(message, info.location)

        what = f"input '{info.name}'"
        if info.kind != "tensor":
            raise error(f"{what} is {_a(info.kind)}; only tensors are supported")
        element_type = ge_element_type(info.elem_type, what, error)
        if info.dims is None:
            raise error(f"{what} has an unknown rank; gecomp compiles static shapes")
        shape = [self._static_dim(info, i, d) for i, d in enumerate(info.dims)]
        with self.builder.located(info.location):
            self.values[info.name] = self.builder.input(shape, element_type, name=info.name)

    def _static_dim(self, info: ValueInfo, i: int, d) -> int:
        """Dim `i` of input `info`: a size, or a symbolic one sized by `dims`."""
        if isinstance(d, int):
            return d
        if d is None:
            raise CompileError(
                f"input '{info.name}' has an unknown dim {i} ({info.describe()}); gecomp compiles static shapes",
                info.location,
            )
        if d not in self.dims:
            raise CompileError(
                f"input '{info.name}' has the dynamic dim '{d}' (dim {i} of {info.describe()}); "
                f"give it a size with --dim {d}=SIZE",
                info.location,
            )
        return self.dims[d]

    def _add_output(self, info: ValueInfo) -> None:
        if info.name not in self.values:
            raise CompileError(f"output '{info.name}' is not computed by any node", info.location)
        with self.builder.located(info.location):
            tensor = self._materialize(info.name, self.values[info.name], None)
        self._check_declared(info, tensor)
        self.builder.output(tensor, name=info.name)

    def _check_declared(self, info: ValueInfo, tensor: Tensor) -> None:
        """A declared output type must agree with what the graph computes."""
        if info.kind != "tensor":
            raise UnsupportedError(f"output '{info.name}' is {_a(info.kind)}; only tensors are supported",
                                   info.location)
        same_type = info.elem_type is None or ge_element_type(
            info.elem_type, f"output '{info.name}'", lambda m: UnsupportedError(m, info.location)
        ) == tensor.dtype
        same_shape = info.dims is None or (
            len(info.dims) == tensor.rank
            and all(
                d is None or (d if isinstance(d, int) else self.dims.get(d, s)) == s
                for d, s in zip(info.dims, tensor.shape)
            )
        )
        if not (same_type and same_shape):
            raise CompileError(
                f"output '{info.name}' is declared {info.describe()} but computes {tensor.type}",
                info.location,
            )

    # ---- nodes -------------------------------------------------------------------------------

    def _check_ops(self, nodes: list[Node]) -> None:
        """One error for every op type without a converter, with its count, at
        the first such node."""
        counts: dict[str, int] = {}
        first: tuple[int, Node] | None = None
        functions = set()
        for index, node in enumerate(nodes):
            if converter_of(node) is None:
                counts[node.qualified_op] = counts.get(node.qualified_op, 0) + 1
                first = first or (index, node)
                if (node.domain, node.op_type) in self.model.functions:
                    functions.add(node.qualified_op)
        if first is None:
            return
        index, node = first
        listed = ", ".join(f"{op} ({count})" for op, count in counts.items())
        kinds = f"{len(counts)} unsupported op type" + ("s" if len(counts) > 1 else "")
        note = f"; model-local functions ({', '.join(sorted(functions))}) are inlined by load_model" if functions else ""
        raise UnsupportedError(
            f"model uses {kinds}: {listed}; the first is {node.describe(index)}{note} "
            "(ge-translate --list-ops lists the supported ones)",
            node.location,
        )

    def _check_names(self) -> None:
        """Every value has one producer (initializer, graph input or node output),
        and every node input is produced before the node: otherwise which value a
        name means is ambiguous, and the module would silently pick one."""
        producers: dict[str, str] = {}
        initializers = {tensor.name for tensor in self.graph.initializers}

        def produce(name: str, by: str, location) -> None:
            if name in producers:
                raise CompileError(f"{by} writes '{name}', which {producers[name]} already defines", location)
            producers[name] = by

        for tensor in self.graph.initializers:
            produce(tensor.name, f"initializer '{tensor.name}'", tensor.location)
        for info in self.graph.inputs:
            if info.name not in initializers:
                produce(info.name, f"graph input '{info.name}'", info.location)
        for index, node in enumerate(self.graph.nodes):
            for name in node.inputs:
                if name and name not in producers:
                    raise CompileError(
                        f"{node.describe(index)}: input '{name}' is not defined by an earlier node, "
                        "an input or an initializer", node.location)
            for name in node.outputs:
                if name:
                    produce(name, node.describe(index), node.location)

    def _convert(self, node: Node, index: int, opset: int) -> None:
        converter = converter_of(node)
        context = NodeContext(self, node, index, opset, converter)
        try:
            with self.builder.located(node.location):
                results = converter.function(context)
        except BuildError as e:
            raise CompileError(f"{node.describe(index)}: {e.message}", node.location) from None
        unread = sorted(set(node.attributes) - context.read_attributes)
        if unread:
            raise context.unsupported(f"attribute '{unread[0]}' is not supported")
        results = list(results) if isinstance(results, list | tuple) else [results]
        self._bind(node, context, self._evaluated(results))

    def _evaluated(self, results: list) -> list:
        """`results` as Constants if every one computed at run time can be
        evaluated now (see `_is_static`), else as they are."""
        computed = [r for r in results if isinstance(r, Tensor) and not isinstance(r.value.owner, ConstOp)]
        if not computed or not all(self._is_static(r.value) for r in computed):
            return results
        return [Constant(self._fold(r.value)) if any(r is t for t in computed) else r for r in results]

    def _bind(self, node: Node, context: NodeContext, results: list) -> None:
        for i, name in enumerate(node.outputs):
            if not name:
                continue
            if i >= len(results) or results[i] is None:
                raise context.unsupported(f"output #{i} ('{name}') is not supported")
            value = results[i]
            if value.name in (None, ""):
                value.name = name
            self.values[name] = value

    # ---- the ValueSource interface -------------------------------------------------------------

    def subgraph(self, graph: Graph, inputs: list[Value], context: NodeContext) -> list[Value]:
        """The outputs of `graph` (an If branch, one step of a Scan body) imported
        inline: its inputs bound to `inputs`, its nodes converted like the main
        graph's, reading the enclosing graphs' values by name. Its own names are
        visible only inside it, so a body imported once per step does not clash."""
        if len(inputs) != len(graph.inputs):
            raise context.fail(f"its graph '{graph.name}' takes {len(graph.inputs)} inputs, given {len(inputs)}")
        self._check_ops(graph.nodes)
        enclosing = dict(self.values)
        try:
            for tensor in graph.initializers:
                self.values[tensor.name] = Constant(tensor.array, tensor.name, tensor.elem_type)
            self.values.update((info.name, value) for info, value in zip(graph.inputs, inputs))
            for index, node in enumerate(graph.nodes):
                self._convert(node, index, self._opset_version)
            return [self._lookup(info.name, context) for info in graph.outputs]
        finally:
            self.values = enclosing

    def tensor(self, name: str, context: NodeContext) -> Tensor:
        """The value called `name` as an SSA value (a constant becomes a `ge.const`)."""
        return self._materialize(name, self._lookup(name, context), context)

    def constant(self, name: str, context: NodeContext, what: str) -> np.ndarray:
        """The import-time value of `name`, or an error naming the node and the
        graph input it depends on."""
        value = self._lookup(name, context)
        if isinstance(value, Constant):
            self._check_constant(value, context)
            return value.array
        if not self._is_static(value.value):
            source = self._graph_input_behind(value.value)
            raise context.fail(
                f"{what} must be a constant, but it "
                + (f"depends on graph input '{source}' (ge-translate --bind {source}=FILE.npy makes it one)"
                   if source else "is computed at run time")
            )
        return self._fold(value.value)

    def _lookup(self, name: str, context: NodeContext) -> Value:
        value = self.values.get(name)
        if value is None:
            raise context.fail(f"input '{name}' is not defined by an earlier node, an input or an initializer")
        return value

    def _check_constant(self, value: Constant, context: NodeContext | None) -> None:
        """Constants read from the file may have element types gecomp lacks."""
        if value.elem_type is None:
            return

        def error(message: str) -> UnsupportedError:
            return context.unsupported(message) if context is not None else UnsupportedError(message)

        ge_element_type(value.elem_type, f"constant '{value.name}'", error)

    def _materialize(self, name: str, value: Value, context: NodeContext | None) -> Tensor:
        if isinstance(value, Tensor):
            return value
        if value.tensor is None:
            self._check_constant(value, context)
            value.tensor = self.builder.const(value.array, name=value_name(value.name or name))
            self._folded[value.tensor.value] = value.array
        return value.tensor

    # ---- import-time evaluation ----------------------------------------------------------------

    def _is_static(self, value: SSAValue) -> bool:
        """Whether `value` can be evaluated at import: a `ge.const`, or the result
        of an op with reference semantics over such values, none of whose results
        is larger than FOLD_LIMIT_BYTES. (Decided before evaluating anything, so
        a weight is never read just to find out that a graph input is involved.)"""
        known = self._static.get(value)
        if known is None:
            op = value.owner
            known = isinstance(op, ConstOp) or (
                isinstance(op, Operation)
                and hasattr(op, "evaluate")
                and all(dtypes.tensor_bytes(r.type) <= FOLD_LIMIT_BYTES for r in op.results)
                and all(self._is_static(o) for o in op.operands)
            )
            self._static[value] = known
        return known

    def _fold(self, value: SSAValue) -> np.ndarray:
        """The value of a static `value` (`_is_static`), by the ops' own `evaluate`."""
        if value not in self._folded:
            op = value.owner
            if isinstance(op, ConstOp):
                self._folded[value] = op.as_array()
            else:
                with np.errstate(all="ignore"):
                    arrays = op.evaluate([self._fold(o) for o in op.operands])
                self._folded.update(zip(op.results, arrays))
        return self._folded[value]

    def _graph_input_behind(self, value: SSAValue) -> str | None:
        """The name of a graph input `value` is computed from, if any."""
        seen, stack = set(), [value]
        while stack:
            v = stack.pop()
            if v in seen:
                continue
            seen.add(v)
            if isinstance(v, BlockArgument):
                return next((n for n, t in self.values.items() if isinstance(t, Tensor) and t.value is v), None)
            if isinstance(v.owner, Operation):
                stack.extend(v.owner.operands)
        return None


def _a(kind: str) -> str:
    return ("an " if kind[0] in "aeiou" else "a ") + kind.replace("_", " ")
