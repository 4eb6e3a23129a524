"""Element types: the bridge between xDSL's builtin types and numpy dtypes.

Every level computes with numpy, so each element type the dialects accept has
exactly one numpy storage dtype, and one *compute* dtype: floats narrower than
fp32 (f16, bf16, the float8 and float4 formats) are computed in fp32 and rounded
once when stored, as the NPU does (fp16 data, fp32 accumulation), so reference
results are not at the mercy of numpy's (or ml_dtypes') narrow arithmetic.

The formats numpy lacks (bfloat16, float8 e4m3fn / e4m3fnuz / e5m2 / e5m2fnuz /
e8m0fnu, float4 e2m1fn, int4 / uint4, int2 / uint2) are stored as `ml_dtypes`
arrays, one element per byte (or two for bfloat16): sub-byte types are not
packed anywhere inside gecomp, so addresses stay element offsets; the ONNX
reader unpacks what files pack. Sub-byte integers compute in 8 bits and wrap
on store.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import ml_dtypes
import numpy as np
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float4E2M1FNType,
    Float8E4M3FNType,
    Float8E4M3FNUZType,
    Float8E5M2FNUZType,
    Float8E5M2Type,
    Float8E8M0FNUType,
    IntegerType,
    MemRefType,
    Signedness,
    TensorType,
    f16,
    f32,
    f64,
    i1,
    i8,
    i16,
    i32,
    i64,
)
from xdsl.ir import Attribute


@dataclass(frozen=True)
class ElementType:
    """One supported element type: its xDSL type, numpy storage dtype and the names
    users may spell it with (the first is MLIR's)."""

    type: Attribute
    storage: np.dtype
    names: tuple[str, ...]


def _unsigned(width: int) -> IntegerType:
    return IntegerType(width, Signedness.UNSIGNED)


bf16 = BFloat16Type()
f8E4M3FN = Float8E4M3FNType()
f8E4M3FNUZ = Float8E4M3FNUZType()
f8E5M2 = Float8E5M2Type()
f8E5M2FNUZ = Float8E5M2FNUZType()
f8E8M0FNU = Float8E8M0FNUType()
f4E2M1FN = Float4E2M1FNType()
i2, i4 = IntegerType(2), IntegerType(4)
ui2, ui4, ui8, ui16, ui32, ui64 = (_unsigned(w) for w in (2, 4, 8, 16, 32, 64))

ELEMENT_TYPES: tuple[ElementType, ...] = tuple(
    ElementType(t, np.dtype(d), names)
    for t, d, names in (
        # the original seven first: the order is what the tables iterate in
        (f16, np.float16, ("f16", "float16", "half")),
        (f32, np.float32, ("f32", "float32", "float")),
        (f64, np.float64, ("f64", "float64", "double")),
        (i1, np.bool_, ("i1", "bool")),
        (i8, np.int8, ("i8", "int8")),
        (i32, np.int32, ("i32", "int32")),
        (i64, np.int64, ("i64", "int64")),
        (bf16, ml_dtypes.bfloat16, ("bf16", "bfloat16")),
        (f8E4M3FN, ml_dtypes.float8_e4m3fn, ("f8E4M3FN", "float8_e4m3fn")),
        (f8E4M3FNUZ, ml_dtypes.float8_e4m3fnuz, ("f8E4M3FNUZ", "float8_e4m3fnuz")),
        (f8E5M2, ml_dtypes.float8_e5m2, ("f8E5M2", "float8_e5m2")),
        (f8E5M2FNUZ, ml_dtypes.float8_e5m2fnuz, ("f8E5M2FNUZ", "float8_e5m2fnuz")),
        (f8E8M0FNU, ml_dtypes.float8_e8m0fnu, ("f8E8M0FNU", "float8_e8m0fnu")),
        (f4E2M1FN, ml_dtypes.float4_e2m1fn, ("f4E2M1FN", "float4_e2m1fn")),
        (i2, ml_dtypes.int2, ("i2", "int2")),
        (i4, ml_dtypes.int4, ("i4", "int4")),
        (i16, np.int16, ("i16", "int16")),
        (ui2, ml_dtypes.uint2, ("ui2", "uint2")),
        (ui4, ml_dtypes.uint4, ("ui4", "uint4")),
        (ui8, np.uint8, ("ui8", "uint8")),
        (ui16, np.uint16, ("ui16", "uint16")),
        (ui32, np.uint32, ("ui32", "uint32")),
        (ui64, np.uint64, ("ui64", "uint64")),
    )
)

_TO_NUMPY: dict[Attribute, np.dtype] = {e.type: e.storage for e in ELEMENT_TYPES}
_FROM_NUMPY: dict[np.dtype, Attribute] = {e.storage: e.type for e in ELEMENT_TYPES}
_BY_NAME: dict[str, Attribute] = {name: e.type for e in ELEMENT_TYPES for name in e.names}

_FLOATS = frozenset({f16, f32, f64, bf16, f8E4M3FN, f8E4M3FNUZ, f8E5M2, f8E5M2FNUZ, f8E8M0FNU, f4E2M1FN})
_FLOAT8 = frozenset({f8E4M3FN, f8E4M3FNUZ, f8E5M2, f8E5M2FNUZ, f8E8M0FNU})
_SUB_BYTE_INTEGERS = {
    np.dtype(ml_dtypes.int2): np.dtype(np.int8),
    np.dtype(ml_dtypes.int4): np.dtype(np.int8),
    np.dtype(ml_dtypes.uint2): np.dtype(np.uint8),
    np.dtype(ml_dtypes.uint4): np.dtype(np.uint8),
}


def supported_element_types() -> tuple[Attribute, ...]:
    return tuple(_TO_NUMPY)


def is_supported(element_type: Attribute) -> bool:
    return element_type in _TO_NUMPY


def to_numpy_dtype(element_type: Attribute) -> np.dtype:
    try:
        return _TO_NUMPY[element_type]
    except KeyError:
        raise ValueError(f"unsupported element type {element_type}") from None


def from_numpy_dtype(dtype: np.dtype | type) -> Attribute:
    try:
        return _FROM_NUMPY[np.dtype(dtype)]
    except KeyError:
        raise ValueError(f"unsupported numpy dtype {np.dtype(dtype)}") from None


def element_type_by_name(name: str) -> Attribute:
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ValueError(
            f"unknown element type '{name}' (expected one of {', '.join(e.names[0] for e in ELEMENT_TYPES)})"
        ) from None


def is_float(element_type: Attribute) -> bool:
    return element_type in _FLOATS


def is_narrow_float(element_type: Attribute) -> bool:
    """A float narrower than fp32: computed in fp32, rounded once when stored."""
    return is_float(element_type) and to_numpy_dtype(element_type).itemsize < 4


def is_float8(element_type: Attribute) -> bool:
    """The float8 formats, whose conversions take ONNX's `saturate` (and for
    f8E8M0FNU a rounding mode)."""
    return element_type in _FLOAT8


def is_integer(element_type: Attribute) -> bool:
    """Integers proper; i1 (bool) is not one."""
    return isinstance(element_type, IntegerType) and element_type.width.data > 1


def is_unsigned(element_type: Attribute) -> bool:
    return is_integer(element_type) and element_type.signedness.data == Signedness.UNSIGNED


def is_bool(element_type: Attribute) -> bool:
    return element_type == i1


def byte_width(element_type: Attribute) -> int:
    """Bytes one element takes in memory (sub-byte types take a whole byte)."""
    return to_numpy_dtype(element_type).itemsize


def integer_bits(element_type: Attribute) -> int:
    """The width of an integer type in bits (i4 -> 4, though it is stored in a byte)."""
    assert is_integer(element_type), element_type
    return element_type.width.data


def float_info(dtype: np.dtype | Attribute):
    """`finfo` of a float element type or dtype (ml_dtypes' for the formats numpy lacks)."""
    dtype = to_numpy_dtype(dtype) if isinstance(dtype, Attribute) else np.dtype(dtype)
    return ml_dtypes.finfo(dtype)


def is_float_dtype(dtype: np.dtype) -> bool:
    """numpy's floats and ml_dtypes' (which numpy does not count as floating)."""
    dtype = np.dtype(dtype)
    return dtype.kind == "f" or (dtype in _FROM_NUMPY and is_float(_FROM_NUMPY[dtype]))


def is_integer_dtype(dtype: np.dtype) -> bool:
    """numpy's integers and ml_dtypes' sub-byte ones (bool is not one)."""
    dtype = np.dtype(dtype)
    return dtype.kind in "iu" or dtype in _SUB_BYTE_INTEGERS


def compute_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype a value of `dtype` is computed in: floats narrower than fp32 widen
    to fp32, sub-byte integers to 8 bits of the same signedness."""
    dtype = np.dtype(dtype)
    if dtype in _SUB_BYTE_INTEGERS:
        return _SUB_BYTE_INTEGERS[dtype]
    if is_float_dtype(dtype) and dtype.itemsize < 4:
        return np.dtype(np.float32)
    return dtype


def lowest_value(dtype: np.dtype):
    """The value no other value of `dtype` (a compute dtype) is below: -inf for
    floats, the minimum for integers, False for bool (an empty max's result)."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return False
    if is_integer_dtype(dtype):
        return ml_dtypes.iinfo(dtype).min
    return -np.inf


@functools.cache
def is_exactly_representable(narrow: Attribute, wide: Attribute) -> bool:
    """Whether every value of float type `narrow` (NaN, infinities and signed zeros
    aside) converts to float type `wide` and back unchanged. Checked on every bit
    pattern of types up to 16 bits, so bf16 -> f16 (range) and f16 -> bf16
    (precision) are both found lossy."""
    a, b = to_numpy_dtype(narrow), to_numpy_dtype(wide)
    if not (is_float(narrow) and is_float(wide)):
        return False
    if a.itemsize > 2:
        return b.itemsize >= a.itemsize and b.kind == "f"
    bits = np.arange(2 ** (8 * a.itemsize), dtype=np.uint16 if a.itemsize == 2 else np.uint8)
    with np.errstate(all="ignore"):
        values = bits.view(a).astype(np.float64)
        values = values[np.isfinite(values)]
        back = values.astype(b).astype(np.float64)
    return bool(np.array_equal(values, back))


def tensor_type(shape, element_type: Attribute, encoding: Attribute | None = None) -> TensorType:
    if encoding is None:
        return TensorType(element_type, list(shape))
    return TensorType(element_type, list(shape), encoding)


def tensor_bytes(t: TensorType | MemRefType) -> int:
    return int(np.prod(t.get_shape(), dtype=np.int64)) * byte_width(t.element_type)


def format_shape(shape) -> str:
    return "x".join(str(d) for d in shape) if len(shape) else "scalar"
