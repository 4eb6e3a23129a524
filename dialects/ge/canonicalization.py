"""How `ge` ops carry their canonicalization patterns, and the small helpers the
patterns share.

An op opts in with the `Canonicalize()` trait (xDSL's
`HasCanonicalizationPatternsTrait`), so upstream `canonicalize` and our
`ge-simplify` both find its patterns. The patterns themselves live beside the
ops they rewrite, one module per op family (`canonicalize_elementwise.py`,
`canonicalize_shape.py`, `canonicalize_nn.py`, and `formats.py` for
`ge.transdata`), and register with `@patterns_for(OpClass, ...)`. This module
imports none of them at load time (they import the ops, which import this
trait), only when patterns are first asked for.

Every pattern replaces a value only by one of exactly the same type, encoding
included, so rewriting never changes a function's signature or a tensor's
physical format.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TypeVar

import numpy as np
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern
from xdsl.traits import HasCanonicalizationPatternsTrait

_PATTERN_MODULES = (
    ".canonicalize_elementwise",
    ".canonicalize_shape",
    ".canonicalize_nn",
    ".formats",
)

_REGISTRY: dict[type[Operation], list[RewritePattern]] = {}
_LOADED = False

P = TypeVar("P", bound=type[RewritePattern])


def patterns_for(*op_classes: type[Operation]) -> Callable[[P], P]:
    """Class decorator: register one instance of the pattern for these ops."""

    def register(pattern_class: P) -> P:
        instance = pattern_class()
        for op_class in op_classes:
            _REGISTRY.setdefault(op_class, []).append(instance)
        return pattern_class

    return register


def registered_patterns(op_class: type[Operation]) -> tuple[RewritePattern, ...]:
    """The canonicalization patterns registered for `op_class` (not its bases)."""
    global _LOADED
    if not _LOADED:
        _LOADED = True
        for module in _PATTERN_MODULES:
            importlib.import_module(module, __package__)
    return tuple(_REGISTRY.get(op_class, ()))


class Canonicalize(HasCanonicalizationPatternsTrait):
    """The op has canonicalization patterns registered with `patterns_for`."""

    def get_patterns(self, op: type[Operation]) -> tuple[RewritePattern, ...]:
        return registered_patterns(op)

    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        return ()


class GEPattern(RewritePattern):
    """A canonicalization pattern with a counter name for `--pass-statistics`."""

    COUNTER = "rewrites"


# ---- matching constants -----------------------------------------------------------------


def defining_op(value: SSAValue, op_class: type[Operation] | tuple[type[Operation], ...]):
    """The op defining `value` if it is an instance of `op_class`, else None."""
    owner = value.owner
    return owner if isinstance(owner, op_class) else None


def splat_scalar(value: SSAValue) -> float | int | bool | None:
    """The single value of a constant whose elements are all equal, else None.
    (`#ge.random` constants are never splats: they are not read.)"""
    from .const import ConstOp, dense_to_numpy

    const = defining_op(value, ConstOp)
    if const is None or not isinstance(const.value, DenseIntOrFPElementsAttr):
        return None
    array = dense_to_numpy(const.value)
    if array.size == 0:
        return None
    first = array.flat[0]
    if len(const.value) != 1 and not np.array_equal(array, np.full_like(array, first), equal_nan=True):
        return None
    return first.item()


def is_splat_of(value: SSAValue, number: float) -> bool:
    scalar = splat_scalar(value)
    return scalar is not None and not isinstance(scalar, bool) and scalar == number


def same_type(value: SSAValue, t) -> bool:
    """`value` can stand in for a result of type `t` (encoding included)."""
    return value.type == t


# ---- building constants -------------------------------------------------------------------


def splat_constant(scalar, t: TensorType):
    """A `ge.const` of type `t` whose elements are all `scalar`, stored as one element."""
    from .const import ConstOp, dense_from_numpy
    from ...core import dtypes

    one = np.asarray(scalar).astype(dtypes.to_numpy_dtype(t.element_type))
    single = dense_from_numpy(one, TensorType(t.element_type, []))
    value = DenseIntOrFPElementsAttr(t, single.data)
    return ConstOp.from_value(value, t)


def constant_from_array(array: np.ndarray, t: TensorType):
    """A `ge.const` of type `t` holding `array`: a splat when all elements are equal."""
    from .const import ConstOp, dense_from_numpy

    array = np.asarray(array)
    if array.size and np.array_equal(array, np.full_like(array, array.flat[0]), equal_nan=True):
        return splat_constant(array.flat[0], t)
    value = dense_from_numpy(array, t)
    return ConstOp.from_value(value, t)


def is_empty(t) -> bool:
    """A tensor type with no elements (a dim of size 0)."""
    return isinstance(t, TensorType) and 0 in t.get_shape()


def empty_constant(t: TensorType):
    """A `ge.const` of the zero-element type `t` (there is nothing it could hold)."""
    from ...core import dtypes

    return constant_from_array(np.empty(t.get_shape(), dtypes.to_numpy_dtype(t.element_type)), t)


def retyped_constant(const, t: TensorType):
    """The constant `const` seen as type `t` (same elements in row-major order, e.g. a
    reshape or a new format), without materialising it: dense data keep their
    bytes, a `#ge.random` value keeps its seed (numpy draws the same stream for any
    shape of the same size)."""
    from .const import ConstOp

    value = const.value
    if isinstance(value, DenseIntOrFPElementsAttr):
        value = DenseIntOrFPElementsAttr(t, value.data)
    return ConstOp.from_value(value, t)


def replace_with_value(rewriter: PatternRewriter, op: Operation, value: SSAValue) -> bool:
    """Replace single-result `op` by `value` if the types agree exactly."""
    if not same_type(value, op.results[0].type):
        return False
    rewriter.replace(op, [], [value])
    return True


def new_like(op: Operation, op_class, *operands: SSAValue, **attrs):
    """Build `op_class` on `operands` with `op`'s result type and location."""
    new = op_class.new(*operands, result_type=op.results[0].type, **attrs)
    new.location = op.location
    return new
