"""Graph inputs bound to data at import: a static-shape compiler needs some
operands as constants (Reshape's shape, Slice's bounds, Expand's shape, axes given
as inputs), and when a model takes them as graph inputs the user supplies them
(`ge-translate --bind NAME=FILE.npy`, `--bind-npz FILE.npz`) and the conformance
harness binds the test data. Bound inputs become initializers, so the importer
folds what they feed like any other constant. One implementation for both users.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

import numpy as np

from ..core.diagnostics import CompileError
from .converters import CONVERTERS
from .converters.registry import has_converter
from .onnx_model import Graph, Model, Node, TensorValue, ValueInfo, element_type_name, element_type_of_dtype


def static_inputs(node: Node) -> tuple[int, ...]:
    """The input positions of `node` that must be import-time constants."""
    converter = converter_of(node)
    return converter.static_inputs if converter is not None else ()


def inputs_read_at_import(model: Model) -> set[str]:
    """The graph inputs whose data some import-time operand is computed from."""
    graph = model.graph
    nodes = list(_with_subgraph_nodes(graph.nodes))
    static = {
        node.inputs[i]
        for node in nodes
        for i in static_inputs(node)
        if i < len(node.inputs) and node.inputs[i]
    }
    needed = _computed_from(static, nodes)
    return {info.name for info in graph.inputs if info.name in needed}


def bind_inputs(model: Model, arrays: Mapping[str, np.ndarray]) -> Model:
    """`model` with the graph inputs named in `arrays` turned into initializers
    holding those arrays; each must be a graph input of the declared element type
    and shape (symbolic dims take any size)."""
    if not arrays:
        return model
    graph = model.graph
    declared = {info.name: info for info in graph.inputs}
    initializers = list(graph.initializers)
    for name, array in arrays.items():
        info = declared.get(name)
        if info is None:
            inputs = ", ".join(declared) or "none"
            raise CompileError(f"cannot bind '{name}': the model has no input of that name (inputs: {inputs})")
        array = np.asarray(array)
        initializers.append(TensorValue(name, _element_type(info, array), tuple(array.shape), array))
    inputs = [info for info in graph.inputs if info.name not in arrays]
    return dataclasses.replace(model, graph=dataclasses.replace(graph, inputs=inputs, initializers=initializers))


def _element_type(info: ValueInfo, array: np.ndarray) -> int:
    """The ONNX element type of `array`, checked against what `info` declares."""
    try:
        code = element_type_of_dtype(array.dtype)
    except KeyError:
        raise CompileError(f"cannot bind '{info.name}': ONNX has no element type for {array.dtype}") from None
    wrong_type = info.elem_type is not None and info.elem_type != code
    wrong_shape = info.dims is not None and (
        len(info.dims) != array.ndim or any(isinstance(d, int) and d != s for d, s in zip(info.dims, array.shape))
    )
    if wrong_type or wrong_shape:
        raise CompileError(
            f"cannot bind '{info.name}': the input is {info.describe()}, the data is "
            f"{element_type_name(code)}{list(array.shape)}"
        )
    return code


def converter_of(node: Node):
    """The converter of `node`, None if it has none (or is of another domain)."""
    return CONVERTERS[node.op_type] if has_converter(node.domain, node.op_type) else None


def _computed_from(names: Iterable[str], nodes: list[Node]) -> set[str]:
    """`names` and every value their data is computed from (not through ops that
    read only their input's shape, such as Shape)."""
    producers = {output: node for node in nodes for output in node.outputs if output}
    seen, stack = set(), list(names)
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        producer = producers.get(name)
        converter = converter_of(producer) if producer is not None else None
        if producer is not None and (converter is None or converter.reads_data):
            stack.extend(i for i in producer.inputs if i)
            stack.extend(_captured(producer))
    return seen


def _subgraphs(node: Node) -> list[Graph]:
    """The graph attributes of `node` (If's branches, Scan's and Loop's body)."""
    graphs = []
    for attribute in node.attributes.values():
        if attribute.kind == "graph":
            graphs.append(attribute.value)
        elif attribute.kind == "graphs":
            graphs.extend(attribute.value)
    return graphs


def _with_subgraph_nodes(nodes: Iterable[Node]) -> Iterable[Node]:
    """`nodes` and the nodes of their graph attributes, at any depth."""
    for node in nodes:
        yield node
        for graph in _subgraphs(node):
            yield from _with_subgraph_nodes(graph.nodes)


def _captured(node: Node) -> set[str]:
    """The values of enclosing graphs that `node`'s graph attributes read by name."""
    read, defined = set(), set()
    for graph in _subgraphs(node):
        defined.update(v.name for v in [*graph.inputs, *graph.initializers])
        for inner in _with_subgraph_nodes(graph.nodes):
            read.update(i for i in inner.inputs if i)
            defined.update(o for o in inner.outputs if o)
            for sub in _subgraphs(inner):
                defined.update(v.name for v in [*sub.inputs, *sub.initializers])
        read.update(v.name for v in graph.outputs)
    return read - defined
