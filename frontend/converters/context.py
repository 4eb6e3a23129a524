"""What a converter sees of the ONNX node it translates: its inputs as builder
Tensors or folded constants, its attributes with ONNX defaults, the opset, and
the way to fail.

Converters never look at the importer's environment directly, so each stays a
small function from one node to ge ops.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from xdsl.dialects.builtin import TensorType

from ...core import dtypes
from ...core.diagnostics import CompileError
from ..builder import GraphBuilder, Tensor
from ..onnx_model import ELEMENT_TYPES, Graph, Node, TensorValue, element_type_name


class UnsupportedError(CompileError):
    """The model uses something outside what gecomp imports (an op, an element type,
    an attribute value): the input is valid ONNX, gecomp just does not take it."""


@dataclass
class Constant:
    """A value known at import time (an initializer, a Constant node, a folded
    shape): kept as numpy and turned into a `ge.const` only where an op uses it."""

    array: np.ndarray | None
    name: str = ""
    elem_type: int | None = None
    tensor: Tensor | None = field(default=None, repr=False)


Value = Tensor | Constant


class ValueSource(Protocol):
    """Where a converter's operands come from (the importer)."""

    builder: GraphBuilder

    def tensor(self, name: str, context: NodeContext) -> Tensor: ...

    def constant(self, name: str, context: NodeContext, what: str) -> np.ndarray: ...

    def subgraph(self, graph: Graph, inputs: list[Value], context: NodeContext) -> list[Value]: ...


@dataclass(frozen=True)
class Converter:
    """How one ONNX op becomes ge ops. `static_inputs` are the input positions that
    must be known at import time (shapes, axes, pads...): they arrive folded to
    numpy, and the conformance harness binds test data to them."""

    op_type: str
    function: Callable[[NodeContext], Sequence[Value | None] | Value]
    static_inputs: tuple[int, ...] = ()
    reads_data: bool = True
    """False for ops that read only their inputs' shapes and types (Shape, Size,
    EyeLike): a graph input feeding only those need not be bound to data."""


FOLD_LIMIT_BYTES = 64 << 20
"""Import-time evaluation makes no constant larger than this: expanding a small
constant to a huge one stays a run-time op rather than a huge `ge.const`."""


_MISSING = object()


class NodeContext:
    def __init__(self, source: ValueSource, node: Node, index: int, opset: int, converter: Converter):
        self.source = source
        self.node = node
        self.index = index
        self.opset = opset
        self.converter = converter
        self.read_attributes: set[str] = set()

    @property
    def g(self) -> GraphBuilder:
        return self.source.builder

    # ---- errors ----------------------------------------------------------------------------

    def fail(self, message: str) -> CompileError:
        return CompileError(f"{self.node.describe(self.index)}: {message}", self.node.location)

    def unsupported(self, message: str) -> UnsupportedError:
        return UnsupportedError(f"{self.node.describe(self.index)}: {message}", self.node.location)

    # ---- inputs ------------------------------------------------------------------------------

    @property
    def input_count(self) -> int:
        return len(self.node.inputs)

    def has_input(self, i: int) -> bool:
        return i < len(self.node.inputs) and self.node.inputs[i] != ""

    def input(self, i: int, what: str = "") -> Tensor:
        """Input `i` as a Tensor (constants become `ge.const` here)."""
        if not self.has_input(i):
            raise self.fail(f"input #{i}{_role(what)} is required")
        return self.source.tensor(self.node.inputs[i], self)

    def optional_input(self, i: int) -> Tensor | None:
        return self.input(i) if self.has_input(i) else None

    def inputs(self) -> list[Tensor]:
        return [self.input(i) for i in range(self.input_count) if self.has_input(i)]

    def constant(self, i: int, what: str = "") -> np.ndarray | None:
        """The value of static input `i` (None if absent), folded at import time."""
        assert i in self.converter.static_inputs, f"{self.node.op_type} input {i} is not declared static"
        if not self.has_input(i):
            return None
        return self.source.constant(self.node.inputs[i], self, f"input #{i}{_role(what)}")

    def ints_input(self, i: int, what: str = "") -> tuple[int, ...] | None:
        value = self.constant(i, what)
        if value is None:
            return None
        if value.dtype.kind not in "iu":
            raise self.fail(f"input #{i}{_role(what)} must hold integers, got {value.dtype}")
        return tuple(int(v) for v in value.reshape(-1))

    # ---- attributes ------------------------------------------------------------------------

    def has_attr(self, name: str) -> bool:
        return name in self.node.attributes

    def _attr(self, name: str, kinds: tuple[str, ...], default: Any) -> Any:
        self.read_attributes.add(name)
        attribute = self.node.attributes.get(name)
        if attribute is None:
            if default is _MISSING:
                raise self.fail(f"attribute '{name}' is required")
            return default
        if attribute.ref is not None:
            raise self.unsupported(f"attribute '{name}' refers to a function attribute (@{attribute.ref})")
        if attribute.kind not in kinds:
            raise self.fail(f"attribute '{name}' must be {' or '.join(kinds)}, got {attribute.kind}")
        return attribute.value

    def int(self, name: str, default: Any = _MISSING) -> int:
        return self._attr(name, ("int",), default)

    def float(self, name: str, default: Any = _MISSING) -> float:
        value = self._attr(name, ("float", "int"), default)
        return value if value is None else float(value)

    def string(self, name: str, default: Any = _MISSING) -> str:
        return self._attr(name, ("string",), default)

    def ints(self, name: str, default: Any = _MISSING) -> tuple[int, ...] | None:
        value = self._attr(name, ("ints",), default)
        return value if value is None else tuple(value)

    def strings(self, name: str, default: Any = _MISSING) -> tuple[str, ...] | None:
        value = self._attr(name, ("strings",), default)
        return value if value is None else tuple(str(v) for v in value)

    def floats(self, name: str, default: Any = _MISSING) -> tuple[float, ...] | None:
        value = self._attr(name, ("floats",), default)
        return value if value is None else tuple(value)

    def tensor(self, name: str, default: Any = _MISSING) -> TensorValue:
        return self._attr(name, ("tensor",), default)

    def graph(self, name: str) -> Graph:
        return self._attr(name, ("graph",), _MISSING)

    def subgraph(self, name: str, inputs: Sequence[Value] = ()) -> list[Value]:
        """The outputs of graph attribute `name` imported inline with its inputs
        bound to `inputs` (If's branches, Scan's body: control flow whose
        decisions are known at import)."""
        return self.source.subgraph(self.graph(name), list(inputs), self)

    def ignore(self, *names: str) -> None:
        """Attributes that do not change the inference result (`momentum`, `seed`)."""
        self.read_attributes.update(names)

    # ---- results -------------------------------------------------------------------------------

    def const(self, array: np.ndarray) -> Constant:
        """A result known at import time."""
        return Constant(np.asarray(array))

    def result_type(self, x: Tensor, shape: Sequence[int], element_type=None) -> TensorType:
        return TensorType(x.dtype if element_type is None else element_type, [int(d) for d in shape])

    def output_used(self, i: int) -> bool:
        return i < len(self.node.outputs) and self.node.outputs[i] != ""


def ge_element_type(code: int | None, what: str, error: Callable[[str], CompileError]):
    """The ge element type of ONNX element type `code`, or an UnsupportedError."""
    element_type = _GE_ELEMENT_TYPES.get(code)
    if element_type is None:
        raise error(
            f"{what} has element type {element_type_name(code)}, which gecomp does not support "
            f"(supported: {SUPPORTED_ELEMENT_TYPES})"
        )
    return element_type


def _ge_element_types() -> dict[int, object]:
    """ONNX element type code -> ge element type, for every code gecomp has a type for."""
    found = {}
    for code, (_, dtype) in ELEMENT_TYPES.items():
        try:
            found[code] = dtypes.from_numpy_dtype(dtype) if dtype is not None else None
        except ValueError:
            continue
    return {code: t for code, t in found.items() if t is not None}


_GE_ELEMENT_TYPES = _ge_element_types()
SUPPORTED_ELEMENT_TYPES = ", ".join(ELEMENT_TYPES[code][0] for code in sorted(_GE_ELEMENT_TYPES))


def _role(what: str) -> str:
    return f" ('{what}')" if what else ""
