"""An ONNX model as plain Python data, independent of the `onnx` package.

Two readers produce it: the binary reader (`onnx_proto.py`, through the `onnx`
package) and the textual one (`onnxtxt.py`, through lark, no `onnx` needed). The
importer consumes only this form, so both file kinds share one path into the ge
dialect, and a test can check that both readers see the same graph by comparing
two of these models (`==` ignores source locations).

Element types keep ONNX's numeric codes (`TensorProto.DataType`); tensors hold
numpy arrays, of `ml_dtypes` types for the formats numpy lacks (bfloat16, float8,
float4, int4, int2: one element per byte, unpacked); strings have no array
(`array` is None); the importer rejects strings and complex numbers by name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import ml_dtypes
import numpy as np

from ..core import dtypes
from ..core.diagnostics import SourceLocation

# code -> (name in the textual syntax, numpy dtype or None)
ELEMENT_TYPES: dict[int, tuple[str, np.dtype | None]] = {
    1: ("float", np.dtype(np.float32)),
    2: ("uint8", np.dtype(np.uint8)),
    3: ("int8", np.dtype(np.int8)),
    4: ("uint16", np.dtype(np.uint16)),
    5: ("int16", np.dtype(np.int16)),
    6: ("int32", np.dtype(np.int32)),
    7: ("int64", np.dtype(np.int64)),
    8: ("string", None),
    9: ("bool", np.dtype(np.bool_)),
    10: ("float16", np.dtype(np.float16)),
    11: ("double", np.dtype(np.float64)),
    12: ("uint32", np.dtype(np.uint32)),
    13: ("uint64", np.dtype(np.uint64)),
    14: ("complex64", np.dtype(np.complex64)),
    15: ("complex128", np.dtype(np.complex128)),
    16: ("bfloat16", np.dtype(ml_dtypes.bfloat16)),
    17: ("float8e4m3fn", np.dtype(ml_dtypes.float8_e4m3fn)),
    18: ("float8e4m3fnuz", np.dtype(ml_dtypes.float8_e4m3fnuz)),
    19: ("float8e5m2", np.dtype(ml_dtypes.float8_e5m2)),
    20: ("float8e5m2fnuz", np.dtype(ml_dtypes.float8_e5m2fnuz)),
    21: ("uint4", np.dtype(ml_dtypes.uint4)),
    22: ("int4", np.dtype(ml_dtypes.int4)),
    23: ("float4e2m1", np.dtype(ml_dtypes.float4_e2m1fn)),
    24: ("float8e8m0", np.dtype(ml_dtypes.float8_e8m0fnu)),
    25: ("uint2", np.dtype(ml_dtypes.uint2)),
    26: ("int2", np.dtype(ml_dtypes.int2)),
}
ELEMENT_TYPE_CODES: dict[str, int] = {name: code for code, (name, _) in ELEMENT_TYPES.items()}
_CODE_OF_DTYPE: dict[np.dtype, int] = {
    dtype: code for code, (_, dtype) in ELEMENT_TYPES.items() if dtype is not None
}


def element_type_name(code: int | None) -> str:
    if code is None:
        return "unknown"
    return ELEMENT_TYPES.get(code, (f"type#{code}", None))[0]


def numpy_dtype_of(code: int) -> np.dtype | None:
    return ELEMENT_TYPES.get(code, ("", None))[1]


def element_type_of_dtype(dtype: np.dtype) -> int:
    return _CODE_OF_DTYPE[np.dtype(dtype)]


Dim = int | str | None
"""A dimension: a size, a symbolic name (`N`), or None for an unknown one (`?`)."""


@dataclass
class ValueInfo:
    """A typed name: a graph input or output, or an intermediate value's declared type.

    `kind` is "tensor" for tensors; sequences, maps, optionals and sparse tensors
    are recorded by kind only. `dims` is None when the rank is unknown."""

    name: str
    elem_type: int | None = None
    dims: tuple[Dim, ...] | None = None
    kind: str = "tensor"
    location: SourceLocation | None = field(default=None, compare=False)

    def describe(self) -> str:
        """The type as the textual syntax writes it: `float[N,128]`."""
        if self.kind != "tensor":
            return self.kind
        base = element_type_name(self.elem_type)
        if self.dims is None:
            return base + "[]"
        if not self.dims:
            return base
        return base + "[" + ",".join("?" if d is None else str(d) for d in self.dims) + "]"


@dataclass(eq=False)
class TensorValue:
    """A constant tensor: an initializer, or a tensor-valued attribute."""

    name: str
    elem_type: int
    dims: tuple[int, ...]
    array: np.ndarray | None
    location: SourceLocation | None = None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TensorValue):
            return NotImplemented
        if (self.name, self.elem_type, self.dims) != (other.name, other.elem_type, other.dims):
            return False
        if self.array is None or other.array is None:
            return self.array is None and other.array is None
        return (
            self.array.dtype == other.array.dtype
            and self.array.shape == other.array.shape
            and np.array_equal(self.array, other.array, equal_nan=dtypes.is_float_dtype(self.array.dtype))
        )

    def __repr__(self) -> str:
        return f"TensorValue({self.name!r}, {element_type_name(self.elem_type)}{list(self.dims)})"


@dataclass(eq=False)
class Attribute:
    """A node attribute. `kind` is ONNX's attribute type in lower case (`int`,
    `floats`, `tensor`, `graph`...); `ref` names a function attribute (`@alpha`)."""

    name: str
    kind: str
    value: Any
    ref: str | None = None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Attribute):
            return NotImplemented
        return (self.name, self.kind, self.ref) == (other.name, other.kind, other.ref) and _same(
            self.value, other.value
        )


def _same(a: Any, b: Any) -> bool:
    """Equality where NaN equals NaN (attribute values are compared, not computed with)."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (a != a and b != b)
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


@dataclass
class Node:
    op_type: str
    inputs: list[str]
    outputs: list[str]
    attributes: dict[str, Attribute] = field(default_factory=dict)
    name: str = ""
    domain: str = ""
    location: SourceLocation | None = field(default=None, compare=False)

    def describe(self, index: int) -> str:
        """How errors name the node: `node 'fc1' (Gemm)`, or by position and first
        output when it has no name."""
        if self.name:
            return f"node '{self.name}' ({self.qualified_op})"
        output = next((o for o in self.outputs if o), None)
        return f"node #{index} ({self.qualified_op}" + (f", output '{output}')" if output else ")")

    @property
    def qualified_op(self) -> str:
        return f"{self.domain}.{self.op_type}" if self.domain not in ("", "ai.onnx") else self.op_type


@dataclass
class Graph:
    name: str
    inputs: list[ValueInfo]
    outputs: list[ValueInfo]
    nodes: list[Node]
    initializers: list[TensorValue] = field(default_factory=list)
    value_infos: list[ValueInfo] = field(default_factory=list)


@dataclass
class Model:
    graph: Graph
    opsets: dict[str, int] = field(default_factory=dict)
    ir_version: int | None = None
    functions: list[tuple[str, str]] = field(default_factory=list)
    """(domain, name) of the model-local functions; their bodies are not kept."""

    def opset(self, domain: str = "") -> int | None:
        """The imported version of `domain` ("" and "ai.onnx" are the same)."""
        if domain in ("", "ai.onnx"):
            return self.opsets.get("", self.opsets.get("ai.onnx"))
        return self.opsets.get(domain)
