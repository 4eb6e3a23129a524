"""The float64 truth of an f32 ONNX model: the same graph computed in double.

A deep f32 network evaluated by onnxruntime is itself inexact (each layer rounds
to f32, and the error grows with depth), so when the simulator and onnxruntime
disagree by more than the f32 tolerance, neither is the answer. The model made
double gives the answer to about 1e-15 relative: `to_float64` rewrites every
f32 tensor of the model to f64 (initializers, Constant values, tensor-valued
attributes such as ConstantOfShape's, the `to` / `dtype` attributes that name
f32, graph inputs, outputs and value infos, subgraphs and local functions), and
`truth` runs it with onnx.reference (the spec's numpy implementation, which
computes any op in double; onnxruntime's CPU provider lacks double kernels for
some ops, Conv among them in the builds we use).

Narrower floats (f16, bf16, float8) are left as written: a Cast to f16 inside
an f32 model is part of what the model computes. An input or output whose
schema fixes it to tensor(float) (Resize's scales, ...) is fed through a Cast to
f32 (and such an output cast back to double), so the graph stays valid. An op
whose type variable admits f32 but not f64 cannot give the truth; it is refused
(`Float64Error`, naming the node), never computed in f32 silently; only the
inputs and outputs a node has count (LayerNormalization's f32-only type U is that
of its optional mean and inverse deviation outputs, which exports leave off).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

FLOAT = 1  # onnx.TensorProto.FLOAT
DOUBLE = 11  # onnx.TensorProto.DOUBLE
_DTYPE_ATTRIBUTES = ("to", "dtype")  # integer attributes naming an element type


class Float64Error(ValueError):
    """The model cannot be computed in float64 as written (the message names the node)."""


def to_float64(model):
    """A copy of `model` (an onnx.ModelProto) that computes in float64 wherever the
    original computes in float32."""
    import onnx

    out = onnx.ModelProto()
    out.CopyFrom(model)
    opsets = {o.domain or "": o.version for o in out.opset_import}
    _graph(out.graph, opsets)
    for function in out.functions:
        local = {o.domain or "": o.version for o in function.opset_import} or opsets
        for info in function.value_info:
            _type(info.type)
        _nodes(function.node, local, function.name)
    return out


def truth(model, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The outputs of `model` computed in float64 (f32 inputs widened exactly),
    by onnx.reference on `to_float64(model)`."""
    from onnx.reference import ReferenceEvaluator

    exact = to_float64(model)
    initializers = {t.name for t in exact.graph.initializer}
    names = [i.name for i in exact.graph.input if i.name not in initializers]
    feeds = {n: (x.astype(np.float64) if x.dtype == np.float32 else x) for n, x in zip(names, inputs, strict=True)}
    with np.errstate(all="ignore"):
        return [np.asarray(o) for o in ReferenceEvaluator(exact).run(None, feeds)]


# ---- the rewrite ----------------------------------------------------------------------


def _graph(graph, opsets: dict[str, int]) -> None:
    for tensor in graph.initializer:
        _tensor(tensor)
    for sparse in graph.sparse_initializer:
        _tensor(sparse.values)
    for info in (*graph.input, *graph.output, *graph.value_info):
        _type(info.type)
    _nodes(graph.node, opsets, graph.name)


def _nodes(nodes, opsets: dict[str, int], where: str) -> None:
    """Rewrite `nodes` (a repeated NodeProto field) in place, inserting the casts
    that keep inputs and outputs the schema fixes to tensor(float) in float."""
    rewritten = []
    for node in nodes:
        for attribute in node.attribute:
            _attribute(attribute, node, opsets)
        if (node.domain or "") in ("", "ai.onnx"):
            _defaults(node, opsets)
        before, after = _fixed_float_casts(node, opsets, where)
        rewritten += [*before, node, *after]
    del nodes[:]
    nodes.extend(rewritten)


def _attribute(attribute, node, opsets: dict[str, int]) -> None:
    import onnx

    kind = attribute.type
    if kind == onnx.AttributeProto.TENSOR:
        _tensor(attribute.t)
    elif kind == onnx.AttributeProto.TENSORS:
        for tensor in attribute.tensors:
            _tensor(tensor)
    elif kind == onnx.AttributeProto.SPARSE_TENSOR:
        _tensor(attribute.sparse_tensor.values)
    elif kind == onnx.AttributeProto.TYPE_PROTO:
        _type(attribute.tp)
    elif kind == onnx.AttributeProto.GRAPH:
        _graph(attribute.g, opsets)
    elif kind == onnx.AttributeProto.GRAPHS:
        for graph in attribute.graphs:
            _graph(graph, opsets)
    elif kind == onnx.AttributeProto.INT and attribute.name in _DTYPE_ATTRIBUTES and attribute.i == FLOAT:
        if (node.domain or "") in ("", "ai.onnx"):
            attribute.i = DOUBLE


def _defaults(node, opsets: dict[str, int]) -> None:
    """Attributes whose absence, or whose scalar form, means f32: an unset `dtype`
    / `to` defaulting to FLOAT (RandomNormal, ...), ConstantOfShape's unset value
    (an f32 zero), Constant's value_float / value_floats; each made explicitly double."""
    import onnx
    from onnx import defs, helper

    present = {a.name for a in node.attribute}
    try:
        schema = defs.get_schema(node.op_type, opsets.get(node.domain or "", 1), node.domain or "")
    except defs.SchemaError:
        return
    for name in _DTYPE_ATTRIBUTES:
        attribute = schema.attributes.get(name)
        if name not in present and attribute is not None and attribute.default_value.i == FLOAT:
            if attribute.default_value.type == onnx.AttributeProto.INT:
                node.attribute.append(helper.make_attribute(name, DOUBLE))
    if node.op_type == "ConstantOfShape" and "value" not in present:
        node.attribute.append(helper.make_attribute("value", helper.make_tensor("value", DOUBLE, [1], [0.0])))
    for attribute in list(node.attribute):
        if attribute.name in ("value_float", "value_floats"):
            data = attribute.f if attribute.name == "value_float" else list(attribute.floats)
            shape = [] if attribute.name == "value_float" else [len(data)]
            value = helper.make_tensor("value", onnx.TensorProto.DOUBLE, shape, np.atleast_1d(np.float64(data)).tolist())
            node.attribute.remove(attribute)
            node.attribute.append(helper.make_attribute("value", value))


def _tensor(tensor) -> None:
    """Rewrite an f32 TensorProto as f64 in place (values widened exactly)."""
    from onnx import numpy_helper

    if tensor.data_type != FLOAT:
        return
    if tensor.data_location == 1:  # TensorProto.EXTERNAL
        raise Float64Error(f"initializer '{tensor.name}': external data is not loaded (load the model with its data)")
    widened = numpy_helper.from_array(numpy_helper.to_array(tensor).astype(np.float64), tensor.name)
    tensor.CopyFrom(widened)


def _type(type_proto) -> None:
    """Rewrite f32 element types in a TypeProto (tensor, sparse, sequence, optional, map)."""
    which = type_proto.WhichOneof("value")
    if which in ("tensor_type", "sparse_tensor_type"):
        held = getattr(type_proto, which)
        if held.elem_type == FLOAT:
            held.elem_type = DOUBLE
    elif which == "sequence_type":
        _type(type_proto.sequence_type.elem_type)
    elif which == "optional_type":
        _type(type_proto.optional_type.elem_type)
    elif which == "map_type":
        _type(type_proto.map_type.value_type)


def _fixed_float_casts(node, opsets: dict[str, int], where: str):
    """Casts around `node` for the parameters its schema fixes to tensor(float):
    (Casts to f32 before it, Casts back to f64 after it). Refuses a type variable
    that admits f32 but not f64."""
    from onnx import defs, helper

    domain = node.domain or ""
    try:
        schema = defs.get_schema(node.op_type, opsets.get(domain, opsets.get("ai.onnx", 1)), domain)
    except defs.SchemaError:
        return [], []  # a local function or a custom op: its body, if any, is rewritten on its own
    variables = {c.type_param_str: set(c.allowed_type_strs) for c in schema.type_constraints}
    used = [_formal(schema.inputs, i) for i, name in enumerate(node.input) if name]
    used += [_formal(schema.outputs, i) for i, name in enumerate(node.output) if name]
    for formal in used:  # LayerNormalization's f32-only U types its optional outputs, mostly absent
        allowed = variables.get(formal.type_str) if formal is not None else None
        if allowed and "tensor(float)" in allowed and "tensor(double)" not in allowed:
            raise Float64Error(
                f"node '{node.name or node.op_type}' ({node.op_type}) in '{where}': its type {formal.type_str} "
                f"admits float but not double, so it cannot be computed in float64"
            )
    before, after = [], []
    for i, name in enumerate(node.input):
        if name and _fixed_float(_formal(schema.inputs, i)):
            cast = f"{name}__f32_for_{node.name or node.op_type}_{i}"
            before.append(helper.make_node("Cast", [name], [cast], to=FLOAT))
            node.input[i] = cast
    for i, name in enumerate(node.output):
        if name and _fixed_float(_formal(schema.outputs, i)):
            raw = f"{name}__f32"
            after.append(helper.make_node("Cast", [raw], [name], to=DOUBLE))
            node.output[i] = raw
    return before, after


def _formal(parameters, index: int):
    """The formal parameter of the `index`th actual one (the last is variadic)."""
    if not parameters:
        return None
    return parameters[min(index, len(parameters) - 1)]


def _fixed_float(formal) -> bool:
    return formal is not None and formal.type_str == "tensor(float)"
