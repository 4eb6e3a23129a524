"""Element types: the bridge between xDSL's builtin types and numpy dtypes.

Every level computes with numpy, so each element type the dialects accept has
exactly one numpy storage dtype, and one *compute* dtype: reduced-precision
floats are computed in fp32 and rounded when stored, as the NPU does (fp16 data,
fp32 accumulation), so reference results are not at the mercy of numpy's fp16
arithmetic.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import (
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    TensorType,
    f16,
    f32,
    f64,
    i1,
    i8,
    i32,
    i64,
)
from xdsl.ir import Attribute

_TO_NUMPY: dict[Attribute, np.dtype] = {
    f16: np.dtype(np.float16),
    f32: np.dtype(np.float32),
    f64: np.dtype(np.float64),
    i1: np.dtype(np.bool_),
    i8: np.dtype(np.int8),
    i32: np.dtype(np.int32),
    i64: np.dtype(np.int64),
}
_FROM_NUMPY: dict[np.dtype, Attribute] = {v: k for k, v in _TO_NUMPY.items()}

_BY_NAME: dict[str, Attribute] = {
    "f16": f16,
    "f32": f32,
    "f64": f64,
    "i1": i1,
    "bool": i1,
    "i8": i8,
    "i32": i32,
    "i64": i64,
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
            f"unknown element type '{name}' (expected one of {', '.join(_BY_NAME)})"
        ) from None


def is_float(element_type: Attribute) -> bool:
    return isinstance(element_type, Float16Type | Float32Type | Float64Type)


def is_integer(element_type: Attribute) -> bool:
    """Integers proper; i1 (bool) is not one."""
    return isinstance(element_type, IntegerType) and element_type.width.data > 1


def is_bool(element_type: Attribute) -> bool:
    return element_type == i1


def byte_width(element_type: Attribute) -> int:
    return to_numpy_dtype(element_type).itemsize


def compute_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype a value of `dtype` is computed in: fp16 widens to fp32."""
    return np.dtype(np.float32) if dtype == np.float16 else np.dtype(dtype)


def tensor_type(shape, element_type: Attribute, encoding: Attribute | None = None) -> TensorType:
    if encoding is None:
        return TensorType(element_type, list(shape))
    return TensorType(element_type, list(shape), encoding)


def tensor_bytes(t: TensorType) -> int:
    return int(np.prod(t.get_shape(), dtype=np.int64)) * byte_width(t.element_type)


def format_shape(shape) -> str:
    return "x".join(str(d) for d in shape) if len(shape) else "scalar"
