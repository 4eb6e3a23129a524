"""Reading binary `.onnx` files (protobuf) into the neutral model of `onnx_model.py`.

This is the only module that needs the `onnx` package (the `onnx` extra); without
it, importing a binary model is a one-line error saying how to install it.

Models come as exporters write them, so before reading one this brings it into
the form the converters know, with onnx's own tools (`prepare`): model-local
functions (the dynamo exporter's) are inlined by `onnx.inliner`, and opsets
older than the converters handle are upgraded by `onnx.version_converter`, and
ops ONNX defines as functions (Attention, the losses...) that have no converter
are expanded into their schema's body (`onnx_functions.py`).
External data (weights in files beside the model) is loaded by `onnx.load`.
"""

from __future__ import annotations

import math
import sys

import numpy as np

from ..core.diagnostics import CompileError
from .onnx_model import Attribute, Graph, Model, Node, TensorValue, ValueInfo, element_type_name, numpy_dtype_of

_MISSING_ONNX = (
    "reading binary .onnx files needs the onnx package: pip install 'ge-compiler[onnx]' "
    "(the textual .onnxtxt form needs nothing extra)"
)

# AttributeProto.AttributeType -> our kind names
_ATTRIBUTE_KINDS = {
    0: "undefined",
    1: "float",
    2: "int",
    3: "string",
    4: "tensor",
    5: "graph",
    6: "floats",
    7: "ints",
    8: "strings",
    9: "tensors",
    10: "graphs",
    11: "sparse_tensor",
    12: "sparse_tensors",
    13: "type_proto",
    14: "type_protos",
}


def require_onnx():
    """The `onnx` module, or a CompileError saying how to get it."""
    try:
        import onnx
    except ImportError:
        raise CompileError(_MISSING_ONNX) from None
    return onnx


OLDEST_OPSET = 7
"""The oldest default-domain opset the converters handle (older ones broadcast
differently, with the `broadcast` attribute)."""
UPGRADE_OPSET = 13
"""What older models are converted to: the first opset with today's forms of
Reshape-like operands as inputs and per-axis Softmax."""


def load_onnx(path: str) -> Model:
    """Read a binary ONNX model (external data next to it is loaded too)."""
    onnx = require_onnx()
    from google.protobuf.message import DecodeError

    try:
        proto = onnx.load(path)
    except FileNotFoundError:
        raise CompileError(f"cannot open '{path}': No such file or directory") from None
    except (DecodeError, RuntimeError, ValueError, OSError, onnx.checker.ValidationError) as e:
        raise CompileError(f"'{path}' is not a readable ONNX model: {_first_line(e)}") from None
    if not proto.HasField("graph"):
        raise CompileError(f"'{path}' is not a readable ONNX model: it has no graph")
    return model_from_proto(proto)


def parse_onnx_text(text: str) -> Model:
    """A textual model read by onnx's own parser, so it can be prepared like a
    binary one (used for the text files the neutral reader cannot import as they
    are: old opsets, model-local functions)."""
    onnx = require_onnx()
    from onnx.parser import ParseError

    try:
        proto = onnx.parser.parse_model(text)
    except ParseError as e:
        raise CompileError(f"onnx cannot parse the model: {_first_line(e)}") from None
    return model_from_proto(proto)


def prepare(proto):
    """`proto` with its model-local functions inlined, an opset older than
    OLDEST_OPSET upgraded to UPGRADE_OPSET (onnx's inliner and version converter),
    and ops that have no converter but an ONNX function body expanded into it
    (`onnx_functions`); a model that needs none of it is returned as it is."""
    if len(proto.functions):
        from onnx.inliner import inline_local_functions

        proto = _library_step("inline the model-local functions", inline_local_functions, proto)
    opset = default_opset(proto)
    if opset is not None and opset < OLDEST_OPSET:
        from onnx.version_converter import convert_version

        from .legacy_opsets import per_channel_prelu_slopes

        proto = per_channel_prelu_slopes(proto, opset)
        proto = _library_step(f"convert opset {opset} to {UPGRADE_OPSET}", convert_version, proto, UPGRADE_OPSET)
    from .converters.registry import has_converter
    from .onnx_functions import expand_function_ops

    return _library_step("expand the ONNX function ops", expand_function_ops, proto, has_converter)


def default_opset(proto) -> int | None:
    """The imported version of the default domain ("" or "ai.onnx"), if any."""
    return next((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")), None)


def _library_step(what: str, function, *args):
    """One of onnx's model transformations; its failure is a one-line error."""
    try:
        return function(*args)
    except Exception as e:  # noqa: BLE001 - onnx raises RuntimeError, ValueError, its own C++ errors
        raise CompileError(f"cannot {what} (onnx: {_first_line(e)})") from None


def model_from_proto(proto) -> Model:
    """The neutral model of an `onnx.ModelProto`, prepared (`prepare`) first."""
    return model_as_read(prepare(proto))


def model_as_read(proto) -> Model:
    """The neutral model of an `onnx.ModelProto` as it is (not prepared): what the
    textual reader must agree with."""
    return Model(
        graph=graph_from_proto(proto.graph),
        opsets={o.domain: o.version for o in proto.opset_import},
        ir_version=proto.ir_version if proto.HasField("ir_version") else None,
        functions=[(f.domain, f.name) for f in proto.functions],
    )


def graph_from_proto(g) -> Graph:
    return Graph(
        name=g.name,
        inputs=[_value_info(v) for v in g.input],
        outputs=[_value_info(v) for v in g.output],
        nodes=[_node(n) for n in g.node],
        initializers=[tensor_from_proto(t, f"initializer '{t.name}'") for t in g.initializer],
        value_infos=[_value_info(v) for v in g.value_info],
    )


def tensor_from_proto(t, what: str) -> TensorValue:
    """The tensor `t` (`what` names it in errors: "initializer 'w'"); data that
    does not fill its dims exactly is an error, never a guess."""
    dims = tuple(int(d) for d in t.dims)
    if any(d < 0 for d in dims):
        raise CompileError(f"{what} has a negative dim in its dims {list(dims)}")
    dtype = numpy_dtype_of(t.data_type)
    array = None
    if dtype is not None:
        array = _raw_view(t, dtype, dims)
        if array is None:
            from onnx import numpy_helper

            try:
                array = np.asarray(numpy_helper.to_array(t))
            except ValueError:
                raise CompileError(
                    f"{what}: its data ({_stored_size(t)}) does not match its type "
                    f"{element_type_name(t.data_type)}{list(dims)} ({math.prod(dims)} elements)"
                ) from None
            if array.dtype != dtype:
                array = array.astype(dtype)
    return TensorValue(t.name, t.data_type, dims, array)


def _stored_size(t) -> str:
    """How much data `t` holds, as errors say it: "20 bytes of raw_data"."""
    if t.HasField("raw_data"):
        return f"{len(t.raw_data)} bytes of raw_data"
    fields = [(f.name, len(v)) for f, v in t.ListFields() if f.name.endswith("_data") and f.name != "external_data"]
    return ", ".join(f"{n} values in {name}" for name, n in fields) or "no data"


def _raw_view(t, dtype: np.dtype, dims: tuple[int, ...]) -> np.ndarray | None:
    """A read-only view of `raw_data` (little-endian, as ONNX stores it), so large
    weights are never copied on their way to a `ge.const`; None if the tensor is
    stored otherwise."""
    if sys.byteorder != "little" or not t.HasField("raw_data") or dtype.kind not in "biuf":
        return None
    raw = t.raw_data
    if len(raw) != dtype.itemsize * math.prod(dims):
        return None
    return np.frombuffer(raw, dtype=dtype).reshape(dims)


def _value_info(v) -> ValueInfo:
    t = v.type
    which = t.WhichOneof("value")
    if which != "tensor_type":
        kind = {
            "sequence_type": "sequence",
            "map_type": "map",
            "optional_type": "optional",
            "sparse_tensor_type": "sparse_tensor",
        }.get(which, "unknown type" if which is None else which)
        if which is None:
            return ValueInfo(v.name)
        return ValueInfo(v.name, kind=kind)
    tensor = t.tensor_type
    dims = None
    if tensor.HasField("shape"):
        dims = tuple(_dim(d) for d in tensor.shape.dim)
    return ValueInfo(v.name, tensor.elem_type, dims)


def _dim(d):
    which = d.WhichOneof("value")
    if which == "dim_value":
        return int(d.dim_value)
    if which == "dim_param":
        return d.dim_param
    return None


def _node(n) -> Node:
    return Node(
        op_type=n.op_type,
        inputs=list(n.input),
        outputs=list(n.output),
        attributes={a.name: _attribute(a, _node_name(n)) for a in n.attribute},
        name=n.name,
        domain=n.domain,
    )


def _node_name(n) -> str:
    """How errors name a node proto (as `Node.describe` does, without its index)."""
    output = next((o for o in n.output if o), "")
    return f"node '{n.name or output}' ({n.op_type})"


def _attribute(a, owner: str) -> Attribute:
    """Attribute `a` of the node `owner` names (for errors)."""
    kind = _ATTRIBUTE_KINDS.get(a.type, f"type#{a.type}")
    ref = a.ref_attr_name or None
    value = {
        "float": lambda: float(a.f),
        "int": lambda: int(a.i),
        "string": lambda: a.s.decode("utf-8", errors="replace"),
        "tensor": lambda: tensor_from_proto(a.t, f"{owner}: the tensor of attribute '{a.name}'"),
        "graph": lambda: graph_from_proto(a.g),
        "floats": lambda: tuple(float(f) for f in a.floats),
        "ints": lambda: tuple(int(i) for i in a.ints),
        "strings": lambda: tuple(s.decode("utf-8", errors="replace") for s in a.strings),
        "tensors": lambda: tuple(tensor_from_proto(t, f"{owner}: a tensor of attribute '{a.name}'") for t in a.tensors),
        "graphs": lambda: tuple(graph_from_proto(g) for g in a.graphs),
    }.get(kind, lambda: None)()
    return Attribute(a.name, kind, None if ref else value, ref)


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__
