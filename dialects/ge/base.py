"""What every `ge` op shares: its textual form, its attributes, its shape rule and
its reference semantics.

An op is a class with operand/result definitions, a few typed attributes, and
two class methods:

* ``infer(types, a, declared)``: the result types from the operand types and the
  attributes (``a.axis``...). It raises ``VerifyException`` with a clear message
  when the operands are not acceptable, which makes it the op's verifier, and the
  builder ``Op.new(x, y, axis=1)`` uses it so passes never compute shapes by hand.
  Ops whose result cannot be inferred (reshape, cast, expand) read ``declared``,
  the result types the user wrote.
* ``compute(inputs, a, result_types)``: numpy reference semantics. Inputs arrive in
  their compute dtype (fp16 widened to fp32); the result is rounded to the
  declared element type by `evaluate`.

The textual form is one for all ops, close to MLIR's generic form but readable::

    %y = ge.conv2d %x, %w {strides = [2, 2], pads = [1, 1, 1, 1]} : (tensor<1x64x56x56xf16>, tensor<64x64x3x3xf16>) -> tensor<1x64x28x28xf16>

Attributes equal to their default are not printed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from enum import Enum
from types import SimpleNamespace
from typing import Any

import numpy as np
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
    f64,
    i1,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import IRDLOperation
from xdsl.irdl.operations import PropertyDef, VariadicDef, _PropertyFieldDef
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from ...core import dtypes
from ...core.diagnostics import op_error


class Kind(Enum):
    """The Python type an attribute holds, and how it is stored in the IR."""

    INT = "integer"
    INTS = "list of integers"
    FLOAT = "float"
    BOOL = "boolean"
    STR = "string"


REQUIRED = object()
"""Marks an attribute without a default: it must be given."""


class GEAttrField(_PropertyFieldDef):
    """A property with a `Kind` and a Python default, declared with `attr()`."""

    def __init__(self, kind: Kind, default: Any, choices: tuple[str, ...] | None):
        stored = None if default is REQUIRED else to_attribute(kind, default)
        super().__init__(PropertyDef, _STORAGE[kind], None, stored)
        self.kind = kind
        self.default = default
        self.choices = choices


def attr(kind: Kind, default: Any = REQUIRED, choices: tuple[str, ...] | None = None) -> Any:
    return GEAttrField(kind, default, choices)


_STORAGE: dict[Kind, type[Attribute]] = {
    Kind.INT: IntegerAttr,
    Kind.INTS: DenseArrayBase,
    Kind.FLOAT: FloatAttr,
    Kind.BOOL: IntegerAttr,
    Kind.STR: StringAttr,
}


def to_attribute(kind: Kind, value: Any) -> Attribute:
    """The stored form of `value`. Attributes are immutable values, so one object
    serves every op that stores the same value (as MLIR uniques them): the integer,
    boolean, string and integer-list ones are kept by value (`_INTERNED`), built
    once; a compile stores the same few hundred values a hundred thousand times
    (DenseNet-121: an attribute's construction, which xDSL verifies, was 4% of it)."""
    key = _intern_key(kind, value)
    if key is None:
        return _new_attribute(kind, value)
    found = _INTERNED.get(key)
    if found is None:
        if len(_INTERNED) >= _INTERNED_SIZE:
            _INTERNED.clear()
        found = _INTERNED[key] = _new_attribute(kind, value)
    return found


_INTERNED: dict[tuple, Attribute] = {}
_INTERNED_SIZE = 1 << 16


def _intern_key(kind: Kind, value: Any) -> tuple | None:
    """What `_new_attribute` builds its attribute from: (kind, normalised value), or
    None for a float (-0.0 equals 0.0, and a NaN itself) or a value of another type."""
    match kind:
        case Kind.INT | Kind.STR if type(value) in (int, str):
            return (kind, type(value), value)
        case Kind.BOOL:
            return (kind, bool(value))
        case Kind.INTS if type(value) in (tuple, list) and all(type(v) is int for v in value):
            return (kind, tuple(value))
    return None


def _new_attribute(kind: Kind, value: Any) -> Attribute:
    match kind:
        case Kind.INT:
            return IntegerAttr(int(value), i64)
        case Kind.INTS:
            return DenseArrayBase.from_list(i64, [int(v) for v in value])
        case Kind.FLOAT:
            return FloatAttr(float(value), f64)
        case Kind.BOOL:
            return IntegerAttr(1 if value else 0, i1)
        case Kind.STR:
            return StringAttr(str(value))


def from_attribute(kind: Kind, attribute: Attribute) -> Any:
    """The Python value of a stored attribute, or of one written by hand in the custom
    form (`[1, 1]` parses as an array, `1` where a float is expected as an integer)."""
    match kind, attribute:
        case Kind.INT, IntegerAttr() if attribute.type != i1:
            return attribute.value.data
        case Kind.INTS, DenseArrayBase():
            return tuple(int(v) for v in attribute.get_values())
        case Kind.INTS, ArrayAttr() if all(
            isinstance(v, IntegerAttr) and v.type != i1 for v in attribute.data
        ):
            return tuple(v.value.data for v in attribute.data)
        case Kind.FLOAT, FloatAttr():
            return float(attribute.value.data)
        case Kind.FLOAT, IntegerAttr() if attribute.type != i1:
            return float(attribute.value.data)
        case Kind.BOOL, IntegerAttr() if attribute.type == i1:
            return bool(attribute.value.data)
        case Kind.STR, StringAttr():
            return attribute.data
    article = "an" if kind.value[0] in "aeiou" else "a"
    raise ValueError(f"expected {article} {kind.value}, got {attribute}")


def format_float(value: float) -> str:
    """A float literal MLIR's lexer accepts and that reads back to the same value."""
    text = repr(float(value))
    if "e" in text and "." not in text:
        mantissa, exponent = text.split("e")
        text = f"{mantissa}.0e{exponent}"
    return text


def _format_value(kind: Kind, value: Any) -> str:
    match kind:
        case Kind.INTS:
            return "[" + ", ".join(str(v) for v in value) + "]"
        case Kind.FLOAT:
            return format_float(value)
        case Kind.BOOL:
            return "true" if value else "false"
        case Kind.STR:
            return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
        case _:
            return str(value)


_ATTR_FIELDS: dict[type, dict[str, GEAttrField]] = {}


class GEOp(IRDLOperation):
    """Base class of every `ge` op (and of the `fused` named ops, which share the form)."""

    def __init_subclass__(cls, **kwargs: Any):
        # Record the attribute schema now: `irdl_op_definition` replaces the field
        # objects by accessors once the class body has run.
        super().__init_subclass__(**kwargs)
        inherited: dict[str, GEAttrField] = {}
        for base in reversed(cls.__mro__[1:]):
            inherited.update(_ATTR_FIELDS.get(base, {}))
        own = {k: v for k, v in cls.__dict__.items() if isinstance(v, GEAttrField)}
        _ATTR_FIELDS[cls] = {**inherited, **own}

    @classmethod
    def attr_fields(cls) -> dict[str, GEAttrField]:
        """The op's typed attributes, by name, in declaration order."""
        return _ATTR_FIELDS[cls]

    # ---- semantics, overridden by each op -------------------------------------------

    @classmethod
    def infer(
        cls, types: Sequence[TensorType], a: SimpleNamespace, declared: Sequence[TensorType] | None
    ) -> TensorType | Sequence[TensorType]:
        raise NotImplementedError(f"{cls.name} has no shape rule")

    @classmethod
    def compute(
        cls, inputs: Sequence[np.ndarray], a: SimpleNamespace, result_types: Sequence[TensorType]
    ) -> np.ndarray | Sequence[np.ndarray]:
        raise NotImplementedError(f"{cls.name} has no reference semantics")

    # ---- attributes -------------------------------------------------------------------

    def attr_value(self, name: str) -> Any:
        field = self.attr_fields()[name]
        return from_attribute(field.kind, self.properties[name])

    def attr_values(self) -> SimpleNamespace:
        return SimpleNamespace(**{n: self.attr_value(n) for n in self.attr_fields() if n in self.properties})

    @classmethod
    def _namespace(cls, values: dict[str, Any]) -> SimpleNamespace:
        return SimpleNamespace(**values)

    @classmethod
    def _check_choices(cls, values: dict[str, Any]) -> None:
        for name, field in cls.attr_fields().items():
            if field.choices and values.get(name) not in field.choices:
                raise VerifyException(
                    f"attribute '{name}' must be one of {', '.join(field.choices)}, got '{values.get(name)}'"
                )

    # ---- building -----------------------------------------------------------------------

    @classmethod
    def new(
        cls,
        *operands: SSAValue | Operation,
        result_type: TensorType | Sequence[TensorType] | None = None,
        attributes: dict[str, Attribute] | None = None,
        **attrs: Any,
    ):
        """Build the op from operands and Python attribute values, inferring result
        types. `result_type` is needed only by ops whose result it defines."""
        values = cls._complete_attrs(attrs)
        operand_values = [SSAValue.get(o) for o in operands]
        types = [v.type for v in operand_values]
        declared = None
        if result_type is not None:
            declared = as_type_list(result_type)
        cls._check_choices(values)
        results = as_type_list(cls.infer(types, cls._namespace(values), declared))
        if declared is not None:
            results = _with_declared_encodings(results, declared)
        return cls.build(
            operands=cls._group(cls.get_irdl_definition().operands, operand_values),
            result_types=cls._group(cls.get_irdl_definition().results, results),
            properties={n: to_attribute(cls.attr_fields()[n].kind, v) for n, v in values.items()},
            attributes=attributes,
        )

    @classmethod
    def _complete_attrs(cls, attrs: dict[str, Any]) -> dict[str, Any]:
        unknown = set(attrs) - set(cls.attr_fields())
        if unknown:
            raise TypeError(f"{cls.name} has no attribute {', '.join(sorted(unknown))}")
        values = {}
        for name, field in cls.attr_fields().items():
            if name in attrs and attrs[name] is not None:
                values[name] = attrs[name]
            elif field.default is not REQUIRED:
                values[name] = field.default
            else:
                raise TypeError(f"{cls.name} needs attribute '{name}'")
        return values

    @staticmethod
    def _group(defs: Sequence[tuple[str, Any]], values: Sequence[Any]) -> list[Any]:
        """Split a flat list of operands (or results) over the op's definitions:
        at most one of them is variadic and takes what the others leave."""
        variadic = [i for i, (_, d) in enumerate(defs) if isinstance(d, VariadicDef)]
        if not variadic:
            return list(values)
        index = variadic[0]
        fixed = len(defs) - 1
        taken = len(values) - fixed
        return [*values[:index], list(values[index : index + taken]), *values[index + taken :]]

    # ---- verification ---------------------------------------------------------------

    def verify_(self) -> None:
        values = self._verified_attr_values()
        self._check_choices(vars(values))
        for t in (*self.operand_types, *self.result_types):
            if isinstance(t, TensorType) and not dtypes.is_supported(t.element_type):
                raise VerifyException(f"unsupported element type {t.element_type}")
            if isinstance(t, TensorType) and any(d < 0 for d in t.get_shape()):
                raise VerifyException(f"dynamic dimensions are not supported, got {t}")
        declared = list(self.result_types)
        inferred = as_type_list(self.infer(list(self.operand_types), values, declared))
        if len(inferred) != len(declared):
            raise VerifyException(f"expected {len(inferred)} results, got {len(declared)}")
        for i, (want, got) in enumerate(zip(inferred, declared)):
            if not isinstance(got, TensorType) or (
                tuple(want.get_shape()), want.element_type
            ) != (tuple(got.get_shape()), got.element_type):
                which = "result type" if len(declared) == 1 else f"result #{i} type"
                raise VerifyException(f"{which} {got} does not match the inferred type {want}")

    def _verified_attr_values(self) -> SimpleNamespace:
        """`attr_values`, where a property of the wrong kind (possible in the generic
        form, `<{axis = true}>`) is a verifier error rather than a crash."""
        for name, field in self.attr_fields().items():
            if name in self.properties:
                try:
                    from_attribute(field.kind, self.properties[name])
                except ValueError as e:
                    raise VerifyException(f"attribute '{name}': {e}") from None
        return self.attr_values()

    @property
    def operand_types(self) -> tuple[Attribute, ...]:
        return tuple(o.type for o in self.operands)

    @property
    def result_types(self) -> tuple[Attribute, ...]:
        return tuple(r.type for r in self.results)

    # ---- evaluation -----------------------------------------------------------------

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Reference semantics on numpy arrays of the operands' storage dtypes."""
        widened = [np.asarray(x).astype(dtypes.compute_dtype(np.asarray(x).dtype), copy=False) for x in inputs]
        result_types = [t for t in self.result_types]
        try:
            out = self.compute(widened, self.attr_values(), result_types)
        except EvaluationError as e:
            raise op_error(self, str(e)) from None
        outs = [out] if isinstance(out, np.ndarray) or np.isscalar(out) else list(out)
        return [
            _to_storage(np.asarray(o), t) for o, t in zip(outs, result_types, strict=True)
        ]

    # ---- textual form ---------------------------------------------------------------

    @classmethod
    def parse(cls, parser: Parser):
        operands = []
        if (first := parser.parse_optional_unresolved_operand()) is not None:
            operands.append(first)
            while parser.parse_optional_punctuation(",") is not None:
                operands.append(parser.parse_unresolved_operand())
        attr_pos = parser.pos
        written = parser.parse_optional_attr_dict()
        inputs, outputs, type_pos = cls._parse_function_type(parser, len(operands))
        definition = cls.get_irdl_definition()
        for defs, count, noun in (
            (definition.operands, len(inputs), "operand"),
            (definition.results, len(outputs), "result"),
        ):
            if (expected := _arity_mismatch(defs, count)) is not None:
                plural = "" if expected == "1" else "s"
                parser.raise_error(
                    f"{cls.name} takes {expected} {noun}{plural}, got {count}", type_pos, parser.pos
                )
        values = parser.resolve_operands(operands, inputs, parser.pos)
        properties, attributes = cls._split_written_attrs(parser, written, attr_pos)
        return cls.build(
            operands=cls._group(cls.get_irdl_definition().operands, values),
            result_types=cls._group(cls.get_irdl_definition().results, list(outputs)),
            properties=properties,
            attributes=attributes,
        )

    @classmethod
    def _parse_function_type(
        cls, parser: Parser, operand_count: int
    ) -> tuple[Sequence[Attribute], Sequence[Attribute], int]:
        """`: (inputs) -> outputs` after the operands and attributes: the input and
        output types and where they start (for errors about them), checking that
        the type lists one type per operand written."""
        parser.parse_punctuation(":")
        type_pos = parser.pos
        function_type = parser.parse_function_type()
        inputs, outputs = function_type.inputs.data, function_type.outputs.data
        if len(inputs) != operand_count:
            parser.raise_error(
                f"{cls.name} has {operand_count} operands but its type lists {len(inputs)}",
                type_pos,
                parser.pos,
            )
        return inputs, outputs, type_pos

    @classmethod
    def _split_written_attrs(
        cls, parser: Parser, written: dict[str, Attribute], pos: int
    ) -> tuple[dict[str, Attribute], dict[str, Attribute]]:
        properties, attributes = {}, {}
        for name, value in written.items():
            field = cls.attr_fields().get(name)
            if field is None:
                if "." not in name:
                    parser.raise_error(
                        f"{cls.name} has no attribute '{name}'"
                        + (f" (it has: {', '.join(cls.attr_fields())})" if cls.attr_fields() else ""),
                        pos,
                        pos,
                    )
                attributes[name] = value
                continue
            try:
                properties[name] = to_attribute(field.kind, from_attribute(field.kind, value))
            except ValueError as e:
                parser.raise_error(f"{cls.name} attribute '{name}': {e}", pos, pos)
        return properties, attributes

    def print(self, printer: Printer) -> None:
        if self.operands:
            printer.print_string(" ")
            printer.print_list(self.operands, printer.print_operand)
        self._print_attr_dict(printer)
        printer.print_string(" : ")
        printer.print_function_type(self.operand_types, self.result_types)

    def _print_attr_dict(self, printer: Printer) -> None:
        entries = []
        for name, field in self.attr_fields().items():
            if name not in self.properties:
                continue
            value = from_attribute(field.kind, self.properties[name])
            if field.default is not REQUIRED and value == field.default:
                continue
            entries.append(f"{name} = {_format_value(field.kind, value)}")
        extra = self.attributes
        if not entries and not extra:
            return
        printer.print_string(" {" + ", ".join(entries))
        for i, (name, value) in enumerate(extra.items()):
            printer.print_string(", " if entries or i else "")
            printer.print_identifier_or_string_literal(name)
            printer.print_string(" = ")
            printer.print_attribute(value)
        printer.print_string("}")


def _arity_mismatch(defs: Sequence[tuple[str, Any]], count: int) -> str | None:
    """How many values `defs` take ("2", "at least 1") if `count` does not fit them."""
    fixed = sum(not isinstance(d, VariadicDef) for _, d in defs)
    if len(defs) > fixed:
        return None if count >= fixed else f"at least {fixed}"
    return None if count == fixed else str(fixed)


class EvaluationError(Exception):
    """Raised by `compute` when the data make the op undefined (an index out of range)."""


def _to_storage(value: np.ndarray, t: TensorType) -> np.ndarray:
    dtype = dtypes.to_numpy_dtype(t.element_type)
    shape = tuple(t.get_shape())
    if value.shape != shape:
        value = np.broadcast_to(value, shape)
    with np.errstate(invalid="ignore", over="ignore"):
        # Not np.ascontiguousarray: it turns a rank-0 result into shape (1,).
        return np.asarray(value.astype(dtype, copy=False), order="C")


def as_type_list(types: TensorType | Sequence[TensorType]) -> list[TensorType]:
    """One result type or several as a list: `infer` and the builders' `result_type`
    take either, so that single-result ops need no brackets."""
    return [types] if isinstance(types, TensorType) else list(types)


def _with_declared_encodings(results: list[TensorType], declared: list[TensorType]) -> list[TensorType]:
    return [d if tuple(d.get_shape()) == tuple(r.get_shape()) else r for r, d in zip(results, declared)]


# ---- helpers for shape rules ----------------------------------------------------------


def fail(message: str) -> VerifyException:
    return VerifyException(message)


def shape_of(t: Attribute) -> tuple[int, ...]:
    if not isinstance(t, TensorType):
        raise fail(f"expected a ranked tensor, got {t}")
    return tuple(t.get_shape())


def like(t: TensorType, shape: Sequence[int] | None = None, element_type: Attribute | None = None) -> TensorType:
    """A tensor type like `t` with another shape or element type (no encoding)."""
    return TensorType(
        t.element_type if element_type is None else element_type,
        list(t.get_shape() if shape is None else shape),
    )


def normalize_axis(axis: int, rank: int, what: str = "axis") -> int:
    if not -rank <= axis < rank:
        raise fail(f"{what} {axis} is out of range for rank {rank}")
    return axis % rank


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(*[tuple(s) for s in shapes]))
    except ValueError:
        raise fail(
            "operands are not broadcast-compatible: "
            + " vs ".join(dtypes.format_shape(s) for s in shapes)
        ) from None


def same_element_type(types: Sequence[TensorType], what: str = "operand") -> Attribute:
    element_types = [t.element_type for t in types]
    if any(e != element_types[0] for e in element_types):
        raise fail(
            f"{what} element types differ: " + " vs ".join(str(e) for e in element_types)
        )
    return element_types[0]


def require_float(t: TensorType, what: str = "operand") -> None:
    if not dtypes.is_float(t.element_type):
        raise fail(f"{what} must have a float element type, got {t.element_type}")


def require_numeric(t: TensorType, what: str = "operand") -> None:
    if dtypes.is_bool(t.element_type):
        raise fail(f"{what} must be numeric, got {t.element_type}")


def require_rank(t: TensorType, rank: int | Sequence[int], what: str = "operand") -> None:
    ranks = (rank,) if isinstance(rank, int) else tuple(rank)
    if len(shape_of(t)) not in ranks:
        expected = " or ".join(str(r) for r in ranks)
        raise fail(f"{what} must have rank {expected}, got {t}")


def require_length(values: Sequence[int], length: int, name: str) -> None:
    if len(values) != length:
        raise fail(f"attribute '{name}' must have {length} values, got {len(values)}")


def require_positive(values: Sequence[int], name: str) -> None:
    if any(v <= 0 for v in values):
        raise fail(f"attribute '{name}' must be positive, got {list(values)}")


def require_non_negative(values: Sequence[int], name: str) -> None:
    if any(v < 0 for v in values):
        raise fail(f"attribute '{name}' must be non-negative, got {list(values)}")


def num_elements(shape: Sequence[int]) -> int:
    return math.prod(shape)
