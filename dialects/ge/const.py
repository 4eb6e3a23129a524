"""Constants: `ge.const` with a dense value or a seeded random one.

Real models carry megabytes of weights; examples and tests should not. A
`#ge.random<...>` value is a weight tensor described by its distribution and
seed: it prints in one line, reads back identically, and every level of the
compiler materialises the same numbers from it. Dense values print as hex once
they are large, as MLIR does, and conversion to numpy never goes through Python
lists.
"""

from __future__ import annotations

import math
import re

import numpy as np
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseIntOrFPElementsAttr,
    FloatData,
    IntAttr,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, ParametrizedAttribute
from xdsl.irdl import irdl_attr_definition, irdl_op_definition, prop_def, result_def, traits_def
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import ConstantLike, Pure
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.mlir_lexer import MLIRTokenKind

from ...core import dtypes
from .base import GEOp, fail, format_float


_DISTRIBUTION_PARAMETERS = {"normal": ("mean", "std"), "uniform": ("low", "high")}


@irdl_attr_definition
class RandomAttr(ParametrizedAttribute):
    """`#ge.random<normal, seed = 7, mean = 0.0, std = 0.02>` or
    `#ge.random<uniform, seed = 7, low = -1.0, high = 1.0>`: numpy's default
    generator seeded with `seed`. Integers draw from [low, high)."""

    name = "ge.random"
    distribution: StringAttr
    seed: IntAttr
    a: FloatData
    b: FloatData

    def __init__(self, distribution: str, seed: int, a: float, b: float):
        super().__init__(StringAttr(distribution), IntAttr(seed), FloatData(a), FloatData(b))

    @staticmethod
    def normal(seed: int, mean: float = 0.0, std: float = 1.0) -> RandomAttr:
        return RandomAttr("normal", seed, mean, std)

    @staticmethod
    def uniform(seed: int, low: float = 0.0, high: float = 1.0) -> RandomAttr:
        return RandomAttr("uniform", seed, low, high)

    def verify(self) -> None:
        if self.distribution.data not in _DISTRIBUTION_PARAMETERS:
            raise VerifyException(
                f"unknown distribution '{self.distribution.data}' (expected normal or uniform)"
            )
        if self.distribution.data == "normal" and not self.b.data >= 0:
            raise VerifyException(f"std must be 0 or more, got {self.b.data}")
        if self.distribution.data == "uniform" and not self.a.data <= self.b.data:
            raise VerifyException(f"low must not exceed high, got low = {self.a.data}, high = {self.b.data}")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            distribution = parser.parse_identifier()
            if distribution not in _DISTRIBUTION_PARAMETERS:
                parser.raise_error(f"unknown distribution '{distribution}' (expected normal or uniform)")
            values: dict[str, float] = {}
            for key in ("seed", *_DISTRIBUTION_PARAMETERS[distribution]):
                parser.parse_punctuation(",")
                parser.parse_keyword(key)
                parser.parse_punctuation("=")
                values[key] = parser.parse_integer() if key == "seed" else parser.parse_number()
        a, b = (float(values[k]) for k in _DISTRIBUTION_PARAMETERS[distribution])
        return [StringAttr(distribution), IntAttr(int(values["seed"])), FloatData(a), FloatData(b)]

    def print_parameters(self, printer: Printer) -> None:
        first, second = _DISTRIBUTION_PARAMETERS[self.distribution.data]
        printer.print_string(
            f"<{self.distribution.data}, seed = {self.seed.data}, "
            f"{first} = {format_float(self.a.data)}, {second} = {format_float(self.b.data)}>"
        )

    def materialize(self, t: TensorType) -> np.ndarray:
        rng = np.random.default_rng(self.seed.data)
        shape = tuple(t.get_shape())
        dtype = dtypes.to_numpy_dtype(t.element_type)
        low, high = self.a.data, self.b.data
        if self.distribution.data == "normal":
            values = rng.standard_normal(shape, dtype=np.float32) * np.float32(high) + np.float32(low)
        elif np.issubdtype(dtype, np.integer):
            values = rng.integers(math.ceil(low), math.ceil(high), size=shape)
        else:
            values = rng.uniform(low, high, size=shape)
        if dtype == np.bool_:
            return values >= (low + high) / 2
        return values.astype(dtype)


def dense_to_numpy(value: DenseIntOrFPElementsAttr) -> np.ndarray:
    t = value.type
    dtype = dtypes.to_numpy_dtype(t.element_type)
    shape = tuple(t.get_shape())
    raw = np.frombuffer(value.data.data, dtype=np.int8 if dtype == np.bool_ else dtype)
    if dtype == np.bool_:
        raw = raw != 0
    if raw.size == 1 and math.prod(shape) != 1:
        return np.broadcast_to(raw.reshape(()), shape)
    return raw.reshape(shape)


def dense_from_numpy(array: np.ndarray, t: TensorType | None = None) -> DenseIntOrFPElementsAttr:
    """A dense attribute holding `array` (cast to `t`'s element type when given)."""
    array = np.asarray(array)
    if t is None:
        t = TensorType(dtypes.from_numpy_dtype(array.dtype), list(array.shape))
    dtype = dtypes.to_numpy_dtype(t.element_type)
    data = np.ascontiguousarray(np.broadcast_to(array, tuple(t.get_shape())).astype(dtype, copy=False))
    if dtype == np.bool_:
        data = np.where(data, -1, 0).astype(np.int8)  # xDSL stores i1 true as all ones
    elif dtypes.is_integer_dtype(dtype) and dtypes.compute_dtype(dtype) != dtype:
        data = data.astype(dtypes.compute_dtype(dtype))  # i4 / i2 sign-extended to a byte, as xDSL stores them
    return DenseIntOrFPElementsAttr(t, BytesAttr(_bytes_of(data.astype(data.dtype.newbyteorder("<"), copy=False))))


def _bytes_of(array: np.ndarray) -> bytes:
    """The array's bytes; without a copy when the array views a whole `bytes` object
    (weights read from a file), which matters for 100 MB initializers."""
    base = array.base
    while isinstance(base, np.ndarray):
        base = base.base
    if (
        isinstance(base, bytes)
        and array.flags.c_contiguous
        and array.nbytes == len(base)
        and array.__array_interface__["data"][0] == np.frombuffer(base, np.uint8).__array_interface__["data"][0]
    ):
        return base
    return array.tobytes()


def constant_value(value: Attribute, t: TensorType) -> np.ndarray:
    if isinstance(value, DenseIntOrFPElementsAttr):
        return dense_to_numpy(value)
    if isinstance(value, RandomAttr):
        return value.materialize(t)
    raise ValueError(f"not a constant value: {value}")


@irdl_op_definition
class ConstOp(GEOp):
    """A constant tensor: `%w = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.02> : tensor<64x64xf16>`
    or `%c = ge.const dense<1.0> : tensor<4xf32>`."""

    name = "ge.const"
    value = prop_def(DenseIntOrFPElementsAttr | RandomAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure(), ConstantLike())

    @staticmethod
    def from_array(array: np.ndarray, t: TensorType | None = None) -> ConstOp:
        value = dense_from_numpy(array, t)
        return ConstOp.build(properties={"value": value}, result_types=[value.type])

    @staticmethod
    def from_value(value: Attribute, t: TensorType) -> ConstOp:
        return ConstOp.build(properties={"value": value}, result_types=[t])

    @classmethod
    def infer(cls, types, a, declared):
        raise AssertionError("ge.const is verified by verify_")

    def verify_(self) -> None:
        t = self.result.type
        if not dtypes.is_supported(t.element_type):
            raise fail(f"unsupported element type {t.element_type}")
        if isinstance(self.value, DenseIntOrFPElementsAttr):
            vt = self.value.type
            if not isinstance(vt, TensorType) or tuple(vt.get_shape()) != tuple(t.get_shape()) or (
                vt.element_type != t.element_type
            ):
                raise fail(f"value of type {vt} does not match the result type {t}")
            size, count = len(self.value), math.prod(t.get_shape())
            if size not in (1, count):
                raise fail(f"value holds {size} elements, the result type {count}")

    def evaluate(self, inputs) -> list[np.ndarray]:
        return [constant_value(self.value, self.result.type)]

    def as_array(self) -> np.ndarray:
        return constant_value(self.value, self.result.type)

    def is_splat(self) -> bool:
        return isinstance(self.value, DenseIntOrFPElementsAttr) and _is_splat(dense_to_numpy(self.value))

    @classmethod
    def parse(cls, parser: Parser) -> ConstOp:
        value = _parse_hex_dense(parser) or parser.parse_attribute()
        if isinstance(value, DenseIntOrFPElementsAttr):
            t = value.type
        else:
            parser.parse_punctuation(":")
            t = parser.parse_type()
        attributes = parser.parse_optional_attr_dict()
        return cls.build(properties={"value": value}, result_types=[t], attributes=attributes)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        if isinstance(self.value, DenseIntOrFPElementsAttr):
            _print_dense_value(self.value, printer)
        else:
            printer.print_attribute(self.value)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)
        if self.attributes:
            printer.print_string(" ")
            printer.print_attr_dict(self.attributes)


def _is_splat(array: np.ndarray) -> bool:
    if array.size <= 1:
        return True
    flat = array.reshape(-1)
    head = flat[:64]  # most non-splat values differ early: no full-size temporary for them
    first = flat[:1]
    if not np.array_equal(head, np.broadcast_to(first, head.shape), equal_nan=True):
        return False
    return np.array_equal(flat, np.broadcast_to(first, flat.shape), equal_nan=True)


_HEX_OPEN = re.compile(r'\s*<\s*"0x')
_HEX_CLOSE = re.compile(r"\s*>")


def _parse_hex_dense(parser: Parser) -> DenseIntOrFPElementsAttr | None:
    """`dense<"0x...">` read straight from the source text: xDSL's lexer copies and
    unescapes a string literal several times, which takes seconds for the hex of
    100 MB of weights. Anything else (or a malformed literal) is left to xDSL."""
    token = parser._current_token
    if token.kind != MLIRTokenKind.BARE_IDENT or token.text != "dense":
        return None
    text = parser.lexer.input.content
    opening = _HEX_OPEN.match(text, token.span.end)
    if opening is None:
        return None
    end = text.find('"', opening.end())
    closing = _HEX_CLOSE.match(text, end + 1) if end >= 0 else None
    if closing is None:
        return None
    try:
        data = bytes.fromhex(text[opening.end() : end])
    except ValueError:
        parser.raise_error("invalid hex string in dense attribute", opening.end(), end)
    parser._resume_from(closing.end())
    parser.parse_punctuation(":", " after a dense attribute")
    type_pos = parser.pos
    t = parser.parse_type()
    if not isinstance(t, TensorType) or not dtypes.is_supported(t.element_type):
        parser.raise_error(f"expected a tensor type of a supported element type, got {t}", type_pos, parser.pos)
    width, count = dtypes.byte_width(t.element_type), math.prod(t.get_shape())
    if len(data) not in (width, width * count):
        parser.raise_error(
            f"hex data of {len(data)} bytes does not fit {t} ({width * count} bytes)", type_pos, parser.pos
        )
    return DenseIntOrFPElementsAttr(t, BytesAttr(data))


def _print_dense_value(value: DenseIntOrFPElementsAttr, printer: Printer) -> None:
    """`dense<...>` without the type; splats and large values without Python lists."""
    array = dense_to_numpy(value)
    if not _is_splat(array):
        if array.size > 100:
            printer.print_string('dense<"0x')
            printer.print_string(value.data.data.hex().upper())  # no concatenated copy of it
            printer.print_string('">')
            return
        value.print_without_type(printer)
        return
    printer.print_string("dense<")
    scalar = array.flat[0] if array.size else None
    if scalar is None:
        pass
    elif array.dtype == np.bool_:
        printer.print_string("true" if scalar else "false")
    elif dtypes.is_integer_dtype(array.dtype):
        printer.print_string(str(int(scalar)))
    else:
        printer.print_float(float(scalar), value.type.element_type)
    printer.print_string(">")
