"""Reading the ONNX textual syntax (`.onnxtxt`) with lark, without the `onnx` package.

The grammar (`onnxtxt.lark`) only shapes the text; this module gives it ONNX's
meaning, following `onnx.parser` (onnx/defs/parser.cc) in its corners so both
read a file into the same graph:

* `float` is a scalar, `float[]` a tensor of unknown rank, `float[N, 3]` has a
  symbolic and a fixed dim;
* lists of names may hold empty entries (`Op(X, , Z)`); one trailing empty entry
  is dropped (`Op(X,)` has one input);
* tensor literals of 16-bit floats, bools and small integers are integers (the
  bit pattern for float16), as in `TensorProto.int32_data`;
* float attributes are single precision, an integer annotated `: float` becomes
  one, and an empty list needs its type annotated (`axes: ints = []`);
* in strings a backslash keeps the character after it, whatever it is.

Every error is a `CompileError` at `file:line:col`.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from lark import Lark, Token, Transformer, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken, VisitError

from ..core import dtypes
from ..core.diagnostics import CompileError, SourceLocation
from ..core.parsing import read_source
from .onnx_model import (
    ELEMENT_TYPE_CODES,
    Attribute,
    Graph,
    Model,
    Node,
    TensorValue,
    ValueInfo,
    element_type_name,
    numpy_dtype_of,
)

_GRAMMAR = Path(__file__).with_name("onnxtxt.lark")


@functools.cache
def _parser() -> Lark:
    return Lark(
        _GRAMMAR.read_text(),
        parser="lalr",
        propagate_positions=True,
        maybe_placeholders=True,
    )


def load_onnxtxt(path: str) -> Model:
    text = read_source(path)
    return parse_onnxtxt(text, "<stdin>" if path == "-" else path)


def parse_onnxtxt(text: str, filename: str = "<stdin>") -> Model:
    """The model written in `text`; errors point at `filename:line:col`."""
    try:
        tree = _parser().parse(text)
    except UnexpectedInput as e:
        raise _syntax_error(e, text, filename) from None
    try:
        return _ModelReader(filename).transform(tree)
    except VisitError as e:
        if isinstance(e.orig_exc, CompileError):
            raise e.orig_exc from None
        raise


# ---- syntax errors -------------------------------------------------------------------------

_TERMINAL_NAMES = {
    "ID": "an identifier",
    "INT": "an integer",
    "FLOAT": "a float",
    "STRING": "a string",
    "QUESTION": "'?'",
    "$END": "the end of the file",
}


def _describe_terminal(name: str) -> str:
    if name in _TERMINAL_NAMES:
        return _TERMINAL_NAMES[name]
    for terminal in _parser().terminals:
        if terminal.name == name:
            return f"'{terminal.pattern.value}'"
    return name


def _syntax_error(e: UnexpectedInput, text: str, filename: str) -> CompileError:
    if isinstance(e, UnexpectedEOF) or (isinstance(e, UnexpectedToken) and e.token.type == "$END"):
        line = text.count("\n") + 1
        col = len(text) - (text.rfind("\n") + 1) + 1
        expected = getattr(e, "accepts", None) or getattr(e, "expected", None) or []
        message = "unexpected end of file"
        if expected:
            message += ", expected " + _one_of(expected)
        return CompileError(message, SourceLocation(filename, line, col))
    where = SourceLocation(filename, e.line, e.column)
    if isinstance(e, UnexpectedCharacters):
        return CompileError(f"unexpected character {text[e.pos_in_stream]!r}", where)
    assert isinstance(e, UnexpectedToken)
    # `accepts` tries every token (exact); `expected` is LALR's merged lookahead.
    expected = getattr(e, "accepts", None) or e.expected
    return CompileError(f"expected {_one_of(expected)}, got '{e.token}'", where)


def _one_of(terminals) -> str:
    names = sorted({_describe_terminal(t) for t in terminals})
    return names[0] if len(names) == 1 else "one of " + ", ".join(names)


# ---- meaning -----------------------------------------------------------------------------------

_ATTRIBUTE_KINDS = (
    "float", "int", "string", "tensor", "graph", "sparse_tensor", "type_proto",
    "floats", "ints", "strings", "tensors", "graphs", "sparse_tensors", "type_protos",
)
_SINGLETON_OF_LIST = {"floats": "float", "ints": "int", "strings": "string", "tensors": "tensor",
                      "graphs": "graph", "sparse_tensors": "sparse_tensor", "type_protos": "type_proto"}
_LIST_OF_SINGLETON = {v: k for k, v in _SINGLETON_OF_LIST.items()}
_SPECIAL_FLOATS = {"inf": math.inf, "infinity": math.inf, "nan": math.nan}
_WRAPPED_KINDS = {"seq": "sequence", "optional": "optional", "sparse_tensor": "sparse_tensor"}
# Element types whose literals are integers (TensorProto.int32_data and friends).
_FLOAT_CODES = (1, 11, 14, 15)
# Floats written as their bit patterns, as onnx.parser keeps them in int32_data:
# float16, bfloat16, the float8 formats, float4e2m1, float8e8m0.
_BIT_PATTERN_CODES = (10, 16, 17, 18, 19, 20, 23, 24)


@dataclass
class _Type:
    kind: str
    elem_type: int | None = None
    dims: tuple | None = None
    word: Token | None = None
    """For `float`-like words: the token, which may turn out not to be a type (`inf`)."""


@dataclass
class _Value:
    """A single attribute value before the attribute's kind is settled."""

    kind: str
    value: object
    token: Token | None = None


def _unquote(token: Token) -> str:
    return re.sub(r"\\(.)", r"\1", str(token)[1:-1], flags=re.S)


def _name(token: Token) -> str:
    return _unquote(token) if token.type == "STRING" else str(token)


def _float32(value: float) -> float:
    return float(np.float32(value))


class _ModelReader(Transformer):
    def __init__(self, filename: str):
        super().__init__()
        self.filename = filename

    def _at(self, thing) -> SourceLocation | None:
        line = getattr(thing, "line", None)
        column = getattr(thing, "column", None)
        if line is None or column is None:
            return None
        return SourceLocation(self.filename, line, column)

    def _error(self, message: str, where) -> CompileError:
        return CompileError(message, self._at(where))

    # ---- model -------------------------------------------------------------------------------

    def start(self, children):
        header = children[0] if isinstance(children[0], list) else []
        graph = next(c for c in children if isinstance(c, Graph))
        model = Model(graph=graph)
        for key, value, token in header:
            if key == "ir_version":
                model.ir_version = self._int_property(key, value, token)
            elif key == "opset_import":
                model.opsets = self._opsets(value, token)
            elif key not in ("producer_name", "producer_version", "domain", "model_version",
                             "doc_string", "metadata_props"):
                raise self._error(f"unknown model property '{key}'", token)
        model.functions = [c for c in children if isinstance(c, tuple)]
        return model

    def _int_property(self, key, value, token) -> int:
        if not isinstance(value, int):
            raise self._error(f"'{key}' must be an integer", token)
        return value

    def _opsets(self, value, token) -> dict[str, int]:
        if not isinstance(value, list) or any(not isinstance(v, int) for _, v in value):
            raise self._error('opset_import must be a list like ["" : 17]', token)
        return dict(value)

    def other_data_list(self, children):
        return list(children)

    def other_data(self, children):
        key, value = children
        return str(key), self._data_value(value), key

    def _data_value(self, value):
        if isinstance(value, Token):
            return int(value) if value.type == "INT" else _unquote(value)
        return value

    def pair_list(self, children):
        return [c for c in children if c is not None]

    def pair(self, children):
        key, value = children
        return _unquote(key), self._data_value(value)

    # ---- graphs --------------------------------------------------------------------------------

    def graph(self, children):
        name, inputs, outputs, *rest = children
        node_list = rest[-1]
        header = rest[0] if len(rest) == 2 else []
        initializers = [t for _, t in inputs if t is not None]
        initializers += [t for _, t in header if t is not None]
        return Graph(
            name=name,
            inputs=[v for v, _ in inputs],
            outputs=outputs,
            nodes=node_list,
            initializers=initializers,
            value_infos=[v for v, t in header if t is None],
        )

    def input_list(self, children):
        return [c for c in children if c is not None]

    output_list = input_list
    initializer_list = input_list

    @v_args(meta=True)
    def value_info_or_init(self, meta, children):
        t, name = self._checked(children[0]), children[1]
        data = children[2] if len(children) > 2 else None
        location = self._at(meta)
        info = ValueInfo(name, t.elem_type, t.dims, t.kind, location)
        if data is None:
            return info, None
        return info, self._tensor(name, t, data, location)

    @v_args(meta=True)
    def value_info(self, meta, children):
        if len(children) == 1:
            return ValueInfo(children[0], location=self._at(meta))
        t, name = self._checked(children[0]), children[1]
        return ValueInfo(name, t.elem_type, t.dims, t.kind, self._at(meta))

    def tensor_data(self, children):
        return [c for c in children if c is not None]

    def word_constant(self, children):
        word = children[-1]
        value = _SPECIAL_FLOATS.get(str(word).lower())
        if value is None:
            raise self._error(f"expected a number, got '{word}'", word)
        return -value if len(children) == 2 else value

    def _tensor(self, name: str, t: _Type, data, where: SourceLocation) -> TensorValue:
        if isinstance(data, list) and data and isinstance(data[0], tuple):
            raise CompileError(f"tensor '{name}': external data is not supported in .onnxtxt", where)
        if t.kind != "tensor" or t.dims is None or any(not isinstance(d, int) for d in t.dims):
            raise CompileError(f"tensor '{name}' needs a tensor type with numeric dims", where)
        count = math.prod(t.dims)
        if len(data) != count:
            raise CompileError(
                f"tensor '{name}' of type {ValueInfo(name, t.elem_type, t.dims).describe()} "
                f"needs {count} values, got {len(data)}",
                where,
            )
        return TensorValue(name, t.elem_type, t.dims, self._array(name, t, data, where), where)

    def _array(self, name: str, t: _Type, data, where) -> np.ndarray | None:
        code = t.elem_type
        dtype = numpy_dtype_of(code)
        if code == 8:  # string
            if any(not isinstance(v, Token) or v.type != "STRING" for v in data):
                raise CompileError(f"tensor '{name}' of strings needs string literals", where)
            return None
        values = [self._number(v) for v in data]
        if code not in _FLOAT_CODES and any(isinstance(v, float) for v in values):
            raise CompileError(
                f"tensor '{name}': {ValueInfo(name, code, ()).describe()} values are written as integers"
                + (f" ({element_type_name(code)} as its bit pattern, as in TensorProto.int32_data)"
                   if code in _BIT_PATTERN_CODES else ""),
                where,
            )
        if dtype is None:
            return None
        if code in _BIT_PATTERN_CODES:
            bits = np.array(values, dtype=np.int64).astype(np.uint16 if dtype.itemsize == 2 else np.uint8)
            array = bits.view(dtype)
        elif code == 9:
            array = np.array(values, dtype=np.int64) != 0
        elif code in _FLOAT_CODES:
            array = np.array(values, dtype=np.float64).astype(dtype)
        else:
            unsigned = dtypes.is_unsigned(dtypes.from_numpy_dtype(dtype))
            array = np.array(values, dtype=np.uint64 if unsigned else np.int64).astype(dtype)
        return array.reshape(t.dims)

    def _number(self, v):
        if isinstance(v, float):  # inf / nan words
            return v
        if isinstance(v, Token) and v.type == "INT":
            return int(v)
        if isinstance(v, Token) and v.type == "FLOAT":
            return float(v)
        raise self._error(f"expected a number, got {v}", v)

    # ---- types -------------------------------------------------------------------------------

    def tensor_type(self, children):
        name, shape = children[0], (children[1] if len(children) > 1 else ())
        return _Type("tensor", ELEMENT_TYPE_CODES.get(str(name)), shape, name)

    def _checked(self, t: _Type) -> _Type:
        """`t`, once its element type is known to be one."""
        if t.kind == "tensor" and t.elem_type is None:
            raise self._error(f"unknown element type '{t.word}'", t.word)
        return t

    def shape(self, children):
        if children == [None]:
            return None  # `float[]`: unknown rank
        return tuple(children)

    def dim(self, children):
        (token,) = children
        if token.type == "INT":
            return int(token)
        if token.type == "QUESTION":
            return None
        return _name(token)

    def wrapped_type(self, children):
        keyword, inner = children[0], self._checked(children[1])
        kind = _WRAPPED_KINDS.get(str(keyword))
        if kind is None:
            raise self._error(f"unknown type '{keyword}(...)'", keyword)
        return _Type(kind)

    def map_type(self, children):
        keyword = children[0]
        self._checked(children[-1])
        if str(keyword) != "map" or str(children[1]) not in ELEMENT_TYPE_CODES:
            raise self._error(f"unknown type '{keyword}(...)'", keyword)
        return _Type("map")

    # ---- nodes ---------------------------------------------------------------------------------

    def node_list(self, children):
        return list(children)

    @v_args(meta=True)
    def node(self, meta, children):
        label = ""
        if isinstance(children[0], _Label):
            label = children[0].name
            children = children[1:]
        outputs, op_name = children[0], children[1]
        body = children[-1]
        domain, op_type = op_name
        inputs, attributes = body
        return Node(op_type, inputs, outputs, attributes, label, domain, self._at(meta))

    def label(self, children):
        return _Label(children[0] if children and children[0] else "")

    def op_name(self, children):
        parts = [str(c) for c in children]
        return ".".join(parts[:-1]), parts[-1]

    def overload(self, children):
        return None

    def attrs_first(self, children):
        attributes, inputs = children
        return inputs, attributes

    def attrs_last(self, children):
        inputs = children[0]
        attributes = children[1] if len(children) > 1 else None
        return inputs, attributes or {}

    def id_list(self, children):
        entries = list(children)
        if entries and entries[-1] == "":
            entries.pop()
        return entries

    def id_entry(self, children):
        return children[0] if children and children[0] else ""

    def quotable_id(self, children):
        return _name(children[0])

    # ---- attributes --------------------------------------------------------------------------

    def attr_list(self, children):
        attributes = {}
        for a in children:
            attributes[a.name] = a
        return attributes

    def attr(self, children):
        name = children[0]
        annotation = children[1] if len(children) == 3 else None
        value = children[-1]
        if annotation is not None and annotation not in _ATTRIBUTE_KINDS:
            raise self._error(f"unknown attribute type '{annotation}'", name)
        if isinstance(value, list):
            return self._list_attribute(str(name), annotation, value, name)
        return self._single_attribute(str(name), annotation, value, name)

    def attr_type(self, children):
        return str(children[0])

    def _single_attribute(self, name, annotation, value: _Value, where) -> Attribute:
        if value.kind == "ref":
            return Attribute(name, annotation or "undefined", None, value.value)
        if annotation in _SINGLETON_OF_LIST:
            raise self._error(f"attribute '{name}' is annotated '{annotation}' but holds one value", where)
        value = self._as_kind(name, value, annotation, where)
        return Attribute(name, value.kind, value.value)

    def _as_kind(self, name: str, value: _Value, expected: str | None, where) -> _Value:
        if expected is None or expected == value.kind:
            return value
        if expected == "float" and value.kind == "int":
            return _Value("float", _float32(value.value))
        raise self._error(f"attribute '{name}': expected {_a(expected)} value, got {_a(value.kind)}", where)

    def _list_attribute(self, name, annotation, values: list, where) -> Attribute:
        values = [v for v in values if v is not None]
        if not values:
            if annotation is None:
                raise self._error(f"attribute '{name}': an empty list needs a type annotation, e.g. ': ints'", where)
            if annotation not in _SINGLETON_OF_LIST:
                raise self._error(f"attribute '{name}' is annotated '{annotation}' but holds a list", where)
            return Attribute(name, annotation, ())
        expected = _SINGLETON_OF_LIST.get(annotation) if annotation else None
        if annotation is not None and expected is None:
            raise self._error(f"attribute '{name}' is annotated '{annotation}' but holds a list", where)
        # Without an annotation the first element sets the kind of the rest (as in
        # onnx.parser: `[0.5, 1]` is floats, `[1, 0.5]` an error).
        expected = expected or values[0].kind
        values = [self._as_kind(name, v, expected, where) for v in values]
        if expected not in ("int", "float", "string"):
            raise self._error(f"attribute '{name}': lists of {expected}s are not supported in .onnxtxt", where)
        return Attribute(name, _LIST_OF_SINGLETON[expected], tuple(v.value for v in values))

    def value_list(self, children):
        return list(children)

    def int_value(self, children):
        return _Value("int", int(children[0]), children[0])

    def float_value(self, children):
        return _Value("float", _float32(float(children[0])), children[0])

    def string_value(self, children):
        return _Value("string", _unquote(children[0]), children[0])

    def negative_word(self, children):
        word = children[0]
        value = _SPECIAL_FLOATS.get(str(word).lower())
        if value is None:
            raise self._error(f"expected a number after '-', got '{word}'", word)
        return _Value("float", -value, word)

    def attr_ref(self, children):
        return _Value("ref", str(children[0]), children[0])

    def typed_value(self, children):
        t: _Type = children[0]
        tail = children[1] if len(children) > 1 else None
        if tail is not None:
            name, data = tail
            location = self._at(t.word)
            return _Value("tensor", self._tensor(name, self._checked(t), data, location), t.word)
        word = str(t.word)
        if t.elem_type is None and t.dims == () and word.lower() in _SPECIAL_FLOATS:
            return _Value("float", _SPECIAL_FLOATS[word.lower()], t.word)
        self._checked(t)
        return _Value("type_proto", None, t.word)

    def tensor_tail(self, children):
        data = children[-1]
        name = children[0] if len(children) == 2 and children[0] is not None else ""
        return name, data

    def graph_value(self, children):
        return _Value("graph", children[0], None)

    # ---- functions -----------------------------------------------------------------------------

    def function(self, children):
        header = children[0] if isinstance(children[0], list) else []
        name = next(c for c in children if isinstance(c, str))
        domain = next((v for k, v, _ in header if k == "domain"), "")
        return domain, name

    def fun_attr_list(self, children):
        return None

    def fun_params(self, children):
        return None

    def fun_param(self, children):
        return None

    def fun_value_infos(self, children):
        return None


def _a(kind: str) -> str:
    return ("an " if kind[0] in "aeiou" else "a ") + kind.replace("_", " ")


@dataclass
class _Label:
    name: str
