"""ONNX ops that ONNX itself defines as functions, expanded into their bodies.

Many recent ONNX ops (Attention, RotaryEmbedding, NegativeLogLikelihoodLoss,
SoftmaxCrossEntropyLoss, CenterCropPad, SwiGLU, ...) have a *function body* in
their schema: a small graph of simpler ONNX ops that defines them, sometimes
"context-dependent" (built for the node's attributes and input types). A runtime
that has no kernel of its own for such an op runs that body; so do we. A node of
an op with no converter whose schema (at the model's opset) has a body is
replaced by the body's nodes, its values renamed into the graph's namespace
(prefixed with the node's name and position, `Attention#3/`, so an error in a
body names the op it came from), and the body's own function ops are expanded
in turn. The bodies come from onnx
(`OpSchema.get_function_with_opset_version` and
`get_context_dependent_function_with_opset_version`), not from a second
definition here, so the numbers are ONNX's by construction; what the body's ops
need from the converters is checked as for any node.

Expansion needs the node's input types (context-dependent bodies depend on them),
taken from onnx's shape inference. Nodes inside subgraphs (If / Loop bodies) are
left alone: control flow is refused anyway.
"""

from __future__ import annotations

from collections.abc import Callable

MAX_DEPTH = 8
"""Function bodies using function ops, expanded at most this deep (ONNX's bodies
nest two or three levels)."""


SEPARATOR = "/"
"""Between the expanded node's `name#position` and a body node's own name."""


def expanded_from(node_name: str) -> int | None:
    """The position, in the graph as written, of the node whose expansion made the
    node called `node_name` (None for a node that was written)."""
    head, separator, _ = node_name.partition(SEPARATOR)
    position = head.rpartition("#")[2]
    return int(position) if separator and "#" in head and position.isdigit() else None


def expand_function_ops(proto, has_converter: Callable[[str, str], bool]):
    """`proto` with every top-level node of an op without a converter
    (`has_converter(domain, op_type)` is False) whose ONNX schema has a function
    body replaced by that body; `proto` itself if there is none."""
    import onnx

    if not any(not has_converter(n.domain, n.op_type) and has_function_body(proto, n) for n in proto.graph.node):
        return proto
    proto = _copy(onnx, proto)
    for _ in range(MAX_DEPTH):
        types = _value_types(onnx, proto)
        expanded, changed = [], False
        for index, node in enumerate(proto.graph.node):
            body = _body(onnx, proto, node, types, has_converter)
            if body is None:
                expanded.append(node)
                continue
            expanded.extend(_inline(*body, f"{node.name or node.op_type}#{index}{SEPARATOR}"))
            changed = True
        if not changed:
            break
        del proto.graph.node[:]
        proto.graph.node.extend(expanded)
    return proto


def has_function_body(proto, node) -> bool:
    """Whether ONNX defines `node`'s op, at the model's opset, by a function body."""
    import onnx

    return _schema(onnx, proto, node) is not None


def _schema(onnx, proto, node):
    """The schema of `node` at the model's opset of its domain, if it has a body."""
    version = _opset(proto, node)
    if version is None:
        return None
    try:
        schema = onnx.defs.get_schema(node.op_type, version, _domain(node.domain))
    except onnx.defs.SchemaError:
        return None
    if not (schema.function_opset_versions or schema.context_dependent_function_opset_versions):
        return None
    return schema


def _domain(domain: str) -> str:
    return "" if domain in ("", "ai.onnx") else domain


def _opset(proto, node) -> int | None:
    """The version the model imports of `node`'s domain."""
    domain = _domain(node.domain)
    return next((o.version for o in proto.opset_import if _domain(o.domain) == domain), None)


def _body(onnx, proto, node, types, has_converter):
    """(`node` with its default attributes, the FunctionProto defining it: the
    newest body not after the model's opset), or None if it keeps its own
    converter or has no body."""
    if has_converter(node.domain, node.op_type):
        return None
    schema = _schema(onnx, proto, node)
    if schema is None:
        return None
    node = _with_defaults(onnx, node, schema)
    plain = list(schema.function_opset_versions)
    dependent = list(schema.context_dependent_function_opset_versions)
    opset = _opset(proto, node)
    version = max((v for v in plain + dependent if v <= opset), default=min(plain + dependent))
    if version in plain:
        text = schema.get_function_with_opset_version(version)
    else:
        input_types = [types.get(name, onnx.TypeProto()).SerializeToString() for name in node.input]
        text = schema.get_context_dependent_function_with_opset_version(version, node.SerializeToString(), input_types)
    if not text:
        return None
    function = onnx.FunctionProto()
    function.ParseFromString(text)
    return node, function


def _with_defaults(onnx, node, schema):
    """`node` with the schema's default values of the attributes it leaves out,
    which the body's attribute references (`ref_attr_name`) may read."""
    present = {a.name for a in node.attribute}
    defaults = [a.default_value for name, a in schema.attributes.items() if name not in present and a.default_value.name]
    if not defaults:
        return node
    node = _copy(onnx, node)
    node.attribute.extend(defaults)
    return node


def _inline(node, function, prefix: str) -> list:
    """The body's nodes with the function's formal inputs and outputs renamed to
    the node's actual values, its other values prefixed, and attribute
    references replaced by the node's attributes (dropped when absent)."""
    names = {formal: actual for formal, actual in zip(function.input, node.input)}
    names.update({formal: "" for formal in list(function.input)[len(node.input):]})
    for formal, actual in zip(function.output, node.output):
        if actual:
            names[formal] = actual
    attributes = {a.name: a for a in node.attribute}

    def rename(name: str) -> str:
        if name in names:
            return names[name]
        return prefix + name if name else ""

    return [_renamed(inner, rename, attributes, prefix) for inner in function.node]


def _renamed(inner, rename: Callable[[str], str], attributes: dict, prefix: str):
    """A copy of body node `inner` with its values renamed, its attribute
    references resolved, and the same done inside its graph attributes (an If
    branch or a Scan body reads the function's values by name)."""
    copy = type(inner)()
    copy.CopyFrom(inner)
    copy.name = prefix + (inner.name or inner.op_type)
    copy.input[:] = [rename(n) for n in inner.input]
    copy.output[:] = [rename(n) for n in inner.output]
    resolved = []
    for attribute in copy.attribute:
        if attribute.ref_attr_name:
            if attribute.ref_attr_name not in attributes:
                continue
            value = type(attribute)()
            value.CopyFrom(attributes[attribute.ref_attr_name])
            value.name = attribute.name
            resolved.append(value)
            continue
        for graph in [attribute.g] if attribute.HasField("g") else attribute.graphs:
            _rename_graph(graph, rename, attributes, prefix)
        resolved.append(attribute)
    del copy.attribute[:]
    copy.attribute.extend(resolved)
    return copy


def _rename_graph(graph, rename: Callable[[str], str], attributes: dict, prefix: str) -> None:
    """Renames, in place, every value of a body node's graph attribute."""
    for info in [*graph.input, *graph.output, *graph.value_info]:
        info.name = rename(info.name)
    for tensor in graph.initializer:
        tensor.name = rename(tensor.name)
    nodes = [_renamed(node, rename, attributes, prefix) for node in graph.node]
    del graph.node[:]
    graph.node.extend(nodes)


def _value_types(onnx, proto) -> dict:
    """name -> TypeProto of every value onnx's shape inference can type."""
    try:
        inferred = onnx.shape_inference.infer_shapes(proto)
    except Exception:  # noqa: BLE001 - inference is best effort; bodies that need types then fail by name
        inferred = proto
    graph = inferred.graph
    types = {v.name: v.type for v in [*graph.input, *graph.value_info, *graph.output]}
    for tensor in graph.initializer:
        t = onnx.TypeProto()
        t.tensor_type.elem_type = tensor.data_type
        for d in tensor.dims:
            t.tensor_type.shape.dim.add().dim_value = d
        types.setdefault(tensor.name, t)
    return types


def _copy(onnx, message):
    copy = type(message)()
    copy.CopyFrom(message)
    return copy
