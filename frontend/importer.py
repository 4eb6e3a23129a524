"""ONNX graph -> ge dialect: `func.func @main` with the ONNX inputs and outputs as
arguments and results (named by `ge.name`), one converter per node.

* Static shapes: symbolic input dims (`float[N, 128]`) take their sizes from
  `dims` (`ge-translate --dim N=8`); an unresolved one is an error at the input.
* Initializers and Constant nodes stay numpy arrays until an op uses them, then
  become one `ge.const` each (dense; printed as hex when large). An initializer
  also listed as an input (old exporters do that) is a constant, not an argument.
* Operands that must be known at import (Reshape's shape, axes, pads...) are
  folded: an import-time constant, or a chain of ge ops over constants, which is
  evaluated with the ops' reference semantics. Anything reached from a graph
  input is an error naming the node and the input.
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

from ..core.diagnostics import CompileError
from ..dialects.ge import ConstOp
from .builder import BuildError, GraphBuilder, Tensor, value_name
from .converters import CONVERTERS, Constant, NodeContext, UnsupportedError
from .converters.context import Value, ge_element_type
from .onnx_model import Graph, Model, Node, ValueInfo

DEFAULT_OPSET = 17
"""The default-domain opset assumed when a model imports none."""
OLDEST_OPSET = 7
"""Older opsets broadcast differently (the `broadcast` attribute); not supported."""


def import_model(model: Model, dims: Mapping[str, int] | None = None) -> ModuleOp:
    """The ge module of `model`; `dims` sizes its symbolic dims."""
    return _Importer(model, dict(dims or {})).run()


def load_model(path: str) -> Model:
    """Read `.onnx` (binary, needs the onnx package) or `.onnxtxt` (text) by extension;
    standard input (`-`) is read as text."""
    if path == "-" or path.endswith(".onnxtxt"):
        from .onnxtxt import load_onnxtxt

        return load_onnxtxt(path)
    if path.endswith(".onnx"):
        from .onnx_proto import load_onnx

        if not os.path.exists(path):
            raise CompileError(f"cannot open '{path}': No such file or directory")
        return load_onnx(path)
    raise CompileError(f"'{path}': expected a .onnx or .onnxtxt file")


def translate_file(path: str, dims: Mapping[str, int] | None = None) -> ModuleOp:
    """`ge-translate`: the ge module of an ONNX file."""
    return import_model(load_model(path), dims)


def static_inputs(node: Node) -> tuple[int, ...]:
    """The input positions of `node` that must be import-time constants."""
    converter = CONVERTERS.get(node.op_type) if node.domain in ("", "ai.onnx") else None
    return converter.static_inputs if converter is not None else ()


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
        self._folded: dict[SSAValue, np.ndarray | None] = {}

    def run(self) -> ModuleOp:
        opset = self.opset if self.opset is not None else DEFAULT_OPSET
        if opset < OLDEST_OPSET:
            raise UnsupportedError(f"opset {opset} is not supported (opset {OLDEST_OPSET} and newer)")
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

    def _convert(self, node: Node, index: int, opset: int) -> None:
        converter = CONVERTERS.get(node.op_type) if node.domain in ("", "ai.onnx") else None
        if converter is None:
            raise self._unknown_op(node, index)
        context = NodeContext(self, node, index, opset, converter)
        try:
            with self.builder.located(node.location):
                results = converter.function(context)
        except BuildError as e:
            raise CompileError(f"{node.describe(index)}: {e.message}", node.location) from None
        unread = sorted(set(node.attributes) - context.read_attributes)
        if unread:
            raise context.unsupported(f"attribute '{unread[0]}' is not supported")
        self._bind(node, index, context, results)

    def _unknown_op(self, node: Node, index: int) -> CompileError:
        where = node.describe(index)
        if (node.domain, node.op_type) in self.model.functions:
            return UnsupportedError(
                f"{where}: calls the model-local function '{node.qualified_op}'; functions are not inlined",
                node.location,
            )
        return UnsupportedError(
            f"{where}: op '{node.qualified_op}' is not supported (ge-translate --list-ops lists the supported ones)",
            node.location,
        )

    def _bind(self, node: Node, index: int, context: NodeContext, results) -> None:
        results = list(results) if isinstance(results, list | tuple) else [results]
        for i, name in enumerate(node.outputs):
            if not name:
                continue
            if i >= len(results) or results[i] is None:
                raise context.unsupported(f"output #{i} ('{name}') is not supported")
            value = results[i]
            if isinstance(value, Tensor) and value.name is None:
                value.name = name
            self.values[name] = value

    # ---- the ValueSource interface -------------------------------------------------------------

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
        folded = self._fold(value.value)
        if folded is None:
            source = self._graph_input_behind(value.value)
            raise context.fail(
                f"{what} must be a constant, but it "
                + (f"depends on graph input '{source}'" if source else "is computed at run time")
            )
        return folded

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
        return value.tensor

    def _fold(self, value: SSAValue) -> np.ndarray | None:
        """The value of `value` if it is computed from constants only."""
        if value in self._folded:
            return self._folded[value]
        op = value.owner
        result = None
        if isinstance(op, ConstOp):
            result = op.as_array()
        elif isinstance(op, Operation) and hasattr(op, "evaluate"):
            inputs = [self._fold(o) for o in op.operands]
            if all(i is not None for i in inputs):
                for r, array in zip(op.results, op.evaluate(inputs)):
                    self._folded[r] = array
                return self._folded[value]
        self._folded[value] = result
        return result

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
