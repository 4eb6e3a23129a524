"""What every `npu` op shares: address spaces, pipes, typed attributes, and one
textual form.

Every op prints as::

    [%r =] npu.<op> <operand>, <operand>, ... [{attributes}] [: <result type>]

where a buffer operand is written `%buffer[%offset]`: a memref in an address
space and a FLAT ELEMENT OFFSET into it (an `index` value, so `scf.for`
induction variables and `arith` index math drive addressing). A plain `%value`
is an index operand. Operand types are not repeated: they are the types of the
values, defined earlier (kernel arguments, `npu.alloc`, `arith.constant`).
Attributes equal to their default are not printed.

Attributes are declared on the op class with `field(Kind.X, default)`; `OPTIONAL`
means the attribute may be absent (e.g. a buffer offset that a later pass plans).
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from types import SimpleNamespace
from typing import Any

from xdsl.dialects.builtin import IndexType, MemRefType
from xdsl.dialects.utils.enum_attribute import EnumAttribute
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import IRDLOperation, irdl_attr_definition
from xdsl.irdl.operations import OptPropertyDef, PropertyDef, _PropertyFieldDef
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from ...core import dtypes
from ..ge.base import Kind, from_attribute, to_attribute
# The ge dialect's attribute storage and literal syntax, shared so both levels print alike.
from ..ge.base import _STORAGE as _KIND_STORAGE
from ..ge.base import _format_value as format_value

# ---- address spaces and pipes ---------------------------------------------------------


class Space(StrEnum):
    GM = "gm"
    L1 = "l1"
    L0A = "l0a"
    L0B = "l0b"
    L0C = "l0c"
    UB = "ub"


@irdl_attr_definition
class SpaceAttr(EnumAttribute[Space]):
    """`#npu.space<ub>`: the address space of a memref (its `memory_space`)."""

    name = "npu.space"

    def print_parameter(self, printer: Printer) -> None:
        printer.print_string(f"<{self.data.value}>")

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> Space:
        with parser.in_angle_brackets():
            return parser.parse_str_enum(Space)


PIPES = ("S", "MTE1", "MTE2", "MTE3", "M", "V", "FIX")
"""The in-order pipes of an AI core: Scalar, the three memory transfer engines,
the cube (M), the vector unit (V) and the FixPipe."""

ALL_PIPES = "ALL"
"""`npu.pipe_barrier {pipe = "ALL"}`: wait until every pipe has drained."""


def memref(shape: Sequence[int], element_type: Attribute, space: Space | str) -> MemRefType:
    """`memref<shape x element_type, #npu.space<space>>`. A type is an immutable
    value: one object per distinct type serves every buffer of it (`_MEMREFS`; the
    lowering asks the same few types thousands of times, and xDSL verifies each
    construction: 6% of a GridSample node test's compile)."""
    shape = tuple(shape)
    if not all(type(d) is int for d in shape):  # numpy integers hash as ints (and xDSL refuses them)
        return MemRefType(element_type, list(shape), memory_space=SpaceAttr(Space(space)))
    key = (shape, element_type, Space(space))
    found = _MEMREFS.get(key)
    if found is None:
        if len(_MEMREFS) >= _MEMREFS_SIZE:
            _MEMREFS.clear()
        found = _MEMREFS[key] = MemRefType(element_type, list(shape), memory_space=SpaceAttr(key[2]))
    return found


_MEMREFS: dict[tuple, MemRefType] = {}
_MEMREFS_SIZE = 1 << 14


def space_of(t: Attribute) -> Space | None:
    """The address space of a memref type, or None if it has none / is no memref."""
    if isinstance(t, MemRefType) and isinstance(t.memory_space, SpaceAttr):
        return t.memory_space.data
    return None


def element_count(t: MemRefType) -> int:
    count = 1
    for d in t.get_shape():
        count *= d
    return count


def element_bytes(t: MemRefType) -> int:
    return dtypes.byte_width(t.element_type)


def buffer_bytes(t: MemRefType) -> int:
    return element_count(t) * element_bytes(t)


def check_buffer_type(t: Attribute, what: str, spaces: Sequence[Space | str]) -> MemRefType:
    """`t` as a memref in one of `spaces` with a static shape and a supported element
    type, else a VerifyException phrased for operand `what`."""
    space = space_of(t)
    if space is None:
        raise VerifyException(f"{what} must be a memref in an #npu.space, got {t}")
    if space not in spaces:
        allowed = ", ".join(str(s) for s in spaces)
        raise VerifyException(f"{what} must be in {allowed}, got a buffer in {space}")
    if any(d < 0 for d in t.get_shape()):
        raise VerifyException(f"{what} must have a static shape, got {t}")
    if not dtypes.is_supported(t.element_type):
        raise VerifyException(f"{what} has unsupported element type {t.element_type}")
    return t


# ---- typed attributes -------------------------------------------------------------------

REQUIRED = object()
"""Marks an attribute that must be given."""

OPTIONAL = object()
"""Marks an attribute that may be absent (no default)."""


class NpuField(_PropertyFieldDef):
    """A property with a `Kind` and a Python default (or REQUIRED / OPTIONAL)."""

    def __init__(self, kind: Kind, default: Any, choices: tuple[str, ...] | None):
        has_default = default is not REQUIRED and default is not OPTIONAL
        definition = OptPropertyDef if default is OPTIONAL else PropertyDef
        stored = to_attribute(kind, default) if has_default else None
        super().__init__(definition, _KIND_STORAGE[kind], None, stored)
        self.kind = kind
        self.default = default
        self.choices = choices

    @property
    def has_default(self) -> bool:
        return self.default is not REQUIRED and self.default is not OPTIONAL


def field(kind: Kind, default: Any = REQUIRED, choices: tuple[str, ...] | None = None) -> Any:
    return NpuField(kind, default, choices)


_FIELDS: dict[type, dict[str, NpuField]] = {}


# ---- the base op ------------------------------------------------------------------------


class NpuOp(IRDLOperation):
    """Base class of every `npu` op: typed attributes and the uniform textual form.

    Subclasses declare IRDL operands in textual order (a buffer operand is a memref
    operand directly followed by its `index` offset operand), attributes with
    `field(...)`, and implement `check(a)` (the verifier, on the attribute values
    `a`) raising `VerifyException`.
    """

    def __init_subclass__(cls, **kwargs: Any):
        # Record the attribute schema before irdl_op_definition replaces the fields.
        super().__init_subclass__(**kwargs)
        inherited: dict[str, NpuField] = {}
        for base in reversed(cls.__mro__[1:]):
            inherited.update(_FIELDS.get(base, {}))
        own = {k: v for k, v in cls.__dict__.items() if isinstance(v, NpuField)}
        _FIELDS[cls] = {**inherited, **own}

    @classmethod
    def fields(cls) -> dict[str, NpuField]:
        return _FIELDS[cls]

    # ---- attributes ---------------------------------------------------------------

    def attr_values(self) -> SimpleNamespace:
        """Python values of every attribute; absent OPTIONAL ones are None."""
        values = {}
        for name, f in self.fields().items():
            stored = self.properties.get(name)
            values[name] = None if stored is None else from_attribute(f.kind, stored)
        return SimpleNamespace(**values)

    # ---- building -------------------------------------------------------------------

    @classmethod
    def new(cls, *operands: SSAValue | Operation, result_type: Attribute | None = None, **attrs: Any):
        """Build from operands (buffer, offset, buffer, offset, ...) and Python
        attribute values; None leaves an attribute at its default / absent."""
        unknown = set(attrs) - set(cls.fields())
        if unknown:
            raise TypeError(f"{cls.name} has no attribute {', '.join(sorted(unknown))}")
        properties = {}
        for name, f in cls.fields().items():
            value = attrs.get(name)
            if value is None and f.default is REQUIRED:
                raise TypeError(f"{cls.name} needs attribute '{name}'")
            if value is not None:
                properties[name] = to_attribute(f.kind, value)
        result_type = result_type if result_type is not None else cls.default_result_type()
        return cls.build(
            operands=[SSAValue.get(o) for o in operands],
            result_types=[] if result_type is None else [result_type],
            properties=properties,
        )

    @classmethod
    def default_result_type(cls) -> Attribute | None:
        """The result type `new` uses when none is given (ops whose result is always index)."""
        return None

    # ---- verification ---------------------------------------------------------------

    def verify_(self) -> None:
        a = self.attr_values()
        for name, f in self.fields().items():
            value = getattr(a, name)
            if f.choices and value is not None and value not in f.choices:
                raise VerifyException(f"attribute '{name}' must be one of {', '.join(f.choices)}, got '{value}'")
        self.check(a)

    def check(self, a: SimpleNamespace) -> None:
        """The op's own verifier (attribute values in `a`)."""

    # ---- textual form ---------------------------------------------------------------

    @classmethod
    def parse(cls, parser: Parser):
        start = parser.pos
        # An op without operands must not take the next line's `%result = ...` for one.
        items = _parse_operand_list(parser) if cls.operand_syntax() or _operand_follows_on_line(parser) else []
        cls._check_operand_syntax(parser, items, start)
        attr_pos = parser.pos
        written = parser.parse_optional_attr_dict()
        properties, attributes = cls._split_written(parser, written, attr_pos)
        result_types = []
        has_result = bool(cls.get_irdl_definition().results)
        if parser.parse_optional_punctuation(":") is not None:
            if not has_result:
                parser.raise_error(f"{cls.name} has no result, so no ': type'", start, start)
            result_types.append(parser.parse_type())
        elif has_result:
            parser.raise_error(f"{cls.name} needs its result type: ': <type>'", start, start)
        operands = [value for item in items for value in item]
        return cls.build(operands=operands, result_types=result_types, properties=properties, attributes=attributes)

    @classmethod
    def operand_syntax(cls) -> list[str]:
        """The textual operands: `%name[%offset]` for a buffer, `%name` otherwise."""
        names = [name for name, _ in cls.get_irdl_definition().operands]
        syntax = []
        for i, name in enumerate(names):
            if name.endswith("offset"):
                continue
            buffer = i + 1 < len(names) and names[i + 1].endswith("offset")
            syntax.append(f"%{name}[%offset]" if buffer else f"%{name}")
        return syntax

    @classmethod
    def _check_operand_syntax(cls, parser: Parser, items: list[list[SSAValue]], start: int) -> None:
        syntax = cls.operand_syntax()
        shapes = ["[" in s for s in syntax]
        if len(items) != len(syntax) or any((len(item) == 2) != shape for item, shape in zip(items, shapes)):
            expected = ", ".join(syntax) or "no operands"
            parser.raise_error(f"{cls.name} takes {expected}", start, parser.pos)

    @classmethod
    def _split_written(
        cls, parser: Parser, written: dict[str, Attribute], pos: int
    ) -> tuple[dict[str, Attribute], dict[str, Attribute]]:
        properties, attributes = {}, {}
        for name, value in written.items():
            f = cls.fields().get(name)
            if f is None:
                if "." not in name:
                    known = f" (it has: {', '.join(cls.fields())})" if cls.fields() else ""
                    parser.raise_error(f"{cls.name} has no attribute '{name}'{known}", pos, pos)
                attributes[name] = value
                continue
            try:
                properties[name] = to_attribute(f.kind, from_attribute(f.kind, value))
            except ValueError as e:
                parser.raise_error(f"{cls.name} attribute '{name}': {e}", pos, pos)
        return properties, attributes

    def print(self, printer: Printer) -> None:
        _print_operand_list(printer, list(self.operands))
        self._print_attributes(printer)
        if self.results:
            printer.print_string(" : ")
            printer.print_attribute(self.results[0].type)

    def _print_attributes(self, printer: Printer) -> None:
        entries = []
        for name, f in self.fields().items():
            stored = self.properties.get(name)
            if stored is None:
                continue
            value = from_attribute(f.kind, stored)
            if f.has_default and value == f.default:
                continue
            entries.append(f"{name} = {format_value(f.kind, value)}")
        if not entries and not self.attributes:
            return
        printer.print_string(" {" + ", ".join(entries))
        for i, (name, value) in enumerate(self.attributes.items()):
            printer.print_string(", " if entries or i else "")
            printer.print_identifier_or_string_literal(name)
            printer.print_string(" = ")
            printer.print_attribute(value)
        printer.print_string("}")


def lookup_value(parser: Parser) -> SSAValue | None:
    """An already-defined SSA value (`%name` or `%name#i`), or None if none is next."""
    unresolved = parser.parse_optional_unresolved_operand()
    if unresolved is None:
        return None
    values = parser.ssa_values.get(unresolved.operand_name)
    if values is None:
        parser.raise_error(f"value %{unresolved.operand_name} is used before it is defined", unresolved.span)
    if unresolved.index >= len(values):
        parser.raise_error(f"%{unresolved.operand_name} has {len(values)} values", unresolved.span)
    return values[unresolved.index]


def _parse_operand_rest(parser: Parser, value: SSAValue) -> list[SSAValue]:
    """After `%value`: an optional `[%offset]` makes it a buffer operand."""
    if parser.parse_optional_punctuation("[") is None:
        return [value]
    offset = lookup_value(parser)
    if offset is None:
        parser.raise_error("expected an index offset: %buffer[%offset]")
    parser.parse_punctuation("]")
    return [value, offset]


def _operand_follows_on_line(parser: Parser) -> bool:
    """Whether a `%value` follows on the op's own line (then it is an operand, and
    `_check_operand_syntax` says the op takes none)."""
    token = parser._current_token
    before = parser.lexer.input.content[: token.span.start].rstrip(" \t")
    return token.text.startswith("%") and not before.endswith("\n")


def _parse_operand_list(parser: Parser) -> list[list[SSAValue]]:
    """The textual operands, each [value] or [buffer, offset]."""
    first = lookup_value(parser)
    if first is None:
        return []
    items = [_parse_operand_rest(parser, first)]
    while parser.parse_optional_punctuation(",") is not None:
        value = lookup_value(parser)
        if value is None:
            parser.raise_error("expected an operand (%value or %buffer[%offset])")
        items.append(_parse_operand_rest(parser, value))
    return items


def _print_operand_list(printer: Printer, operands: list[SSAValue]) -> None:
    """Buffers with their offsets as `%buf[%off]`, other operands as `%v`."""
    i = 0
    first = True
    while i < len(operands):
        printer.print_string(" " if first else ", ")
        first = False
        printer.print_operand(operands[i])
        if isinstance(operands[i].type, MemRefType) and i + 1 < len(operands) and isinstance(
            operands[i + 1].type, IndexType
        ):
            printer.print_string("[")
            printer.print_operand(operands[i + 1])
            printer.print_string("]")
            i += 1
        i += 1
