"""`ge-constant-fold`: evaluate at compile time every op whose operands are all
constants (GE's constant folding), so the device never recomputes what the
graph already knows (shape arithmetic on initializers, weights transposed or
cast once, masks built from constants).

An op is evaluated with its own reference semantics (`GEOp.evaluate`), so a
folded graph computes exactly the numbers the unfolded one did. Three cases
avoid materialising data:

* a reshape or transdata of a constant re-types it (dense bytes and `#ge.random`
  seeds do not depend on the shape or the physical format);
* an elementwise or shape op whose constant operands are splats gives a splat,
  computed once on the scalars (a broadcast scalar stays one element);
* anything else is evaluated only if neither its results nor the `#ge.random`
  constants it reads are larger than `max-bytes` (default 1 MiB): a random
  weight that is merely consumed is never turned into dense hex.

Tensors with no elements are known too, whatever computed them: an op whose
results are all empty becomes empty constants, and an empty operand (a graph
input of shape 2x0x4 included) counts as a constant, so a reduction over an
empty set folds to its identity (0 for a sum, the lowest value for a max) and
no kernel ever sees a zero-sized tensor.

Ops whose evaluation is undefined (an integer division by zero, an index out of
range) are left for run time, which reports them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from ...core import dtypes
from ...core.diagnostics import CompileError
from ...core.passes import record_statistic
from ...dialects.ge import (
    BinaryOp,
    ConstOp,
    ExpandOp,
    GEOp,
    RandomAttr,
    ReshapeOp,
    SliceOp,
    TransDataOp,
    TransposeOp,
    UnaryOp,
    WhereOp,
)
from ...dialects.ge.base import EvaluationError
from ...dialects.ge.canonicalization import (
    constant_from_array,
    defining_op,
    empty_constant,
    is_empty,
    retyped_constant,
    splat_constant,
    splat_scalar,
)

DEFAULT_MAX_BYTES = 1 << 20

_RETYPING_OPS = (ReshapeOp, TransDataOp)
"""Same elements in the same row-major order: the result is the constant re-typed."""

_SPLAT_ELEMENTWISE = (UnaryOp, BinaryOp, WhereOp)
_SPLAT_MOVEMENT = (ExpandOp, TransposeOp, SliceOp)


@dataclass(frozen=True)
class ConstantFoldPass(ModulePass):
    """Evaluate ops whose operands are all constants (results up to max-bytes)."""

    name = "ge-constant-fold"
    max_bytes: int = DEFAULT_MAX_BYTES

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        folded = too_large = 0
        for candidate in list(op.walk()):
            if _all_results_empty(candidate):
                _replace(candidate, [empty_constant(r.type) for r in candidate.results], [])
                folded += 1
                continue
            constants = _constant_operands(candidate)
            if constants is None:
                continue
            replacement = fold(candidate, constants, self.max_bytes)
            if replacement is None:
                too_large += _exceeds(candidate, constants, self.max_bytes)
                continue
            _replace(candidate, replacement, constants)
            folded += 1
        record_statistic(self.name, "ops folded", folded)
        record_statistic(self.name, "ops over max-bytes left unfolded", too_large)


def _constant_operands(op: Operation) -> list[ConstOp] | None:
    """The defining constants of `op`'s operands, if `op` is a foldable ge op. An
    empty operand computed at run time gets an (empty) constant of its own."""
    if not isinstance(op, GEOp) or isinstance(op, ConstOp) or not op.operands:
        return None
    constants = [defining_op(v, ConstOp) for v in op.operands]
    if any(c is None and not is_empty(v.type) for c, v in zip(constants, op.operands)):
        return None
    for i, (c, v) in enumerate(zip(constants, op.operands)):
        if c is None:
            constants[i] = empty_constant(v.type)
            Rewriter.insert_op(constants[i], InsertPoint.before(op))
            op.operands[i] = constants[i].result
    return constants


def _all_results_empty(op: Operation) -> bool:
    return (
        isinstance(op, GEOp) and not isinstance(op, ConstOp) and bool(op.results)
        and all(is_empty(r.type) for r in op.results)
    )





def fold(op: GEOp, constants: Sequence[ConstOp], max_bytes: int = DEFAULT_MAX_BYTES) -> list[ConstOp] | None:
    """The constants `op` evaluates to, or None if it is not folded."""
    if isinstance(op, _RETYPING_OPS):
        return [retyped_constant(constants[0], op.results[0].type)]
    scalars = [splat_scalar(c.result) for c in constants]
    if all(s is not None for s in scalars):
        splat = _fold_splats(op, scalars)
        if splat is not None:
            return splat
    if _exceeds(op, constants, max_bytes):
        return None
    try:
        arrays = op.evaluate([c.as_array() for c in constants])
    except (EvaluationError, CompileError):
        return None
    return [constant_from_array(a, r.type) for a, r in zip(arrays, op.results, strict=True)]


def _fold_splats(op: GEOp, scalars: list) -> list[ConstOp] | None:
    """The splat result of an elementwise or movement op of splats (None otherwise)."""
    (result,) = op.results if len(op.results) == 1 else (None,)
    if result is None:
        return None
    if isinstance(op, _SPLAT_MOVEMENT):
        return [splat_constant(scalars[0], result.type)]
    if not isinstance(op, _SPLAT_ELEMENTWISE):
        return None
    inputs = [
        np.asarray(s, dtype=dtypes.compute_dtype(dtypes.to_numpy_dtype(v.type.element_type)))
        for s, v in zip(scalars, op.operands)
    ]
    try:
        with np.errstate(all="ignore"):
            value = op.compute(inputs, op.attr_values(), [result.type])
    except EvaluationError:
        return None
    return [splat_constant(np.asarray(value).reshape(()), result.type)]


def _exceeds(op: GEOp, constants: Sequence[ConstOp], max_bytes: int) -> bool:
    """Whether folding would write a result or read a `#ge.random` constant larger
    than `max_bytes`."""
    results = sum(dtypes.tensor_bytes(r.type) for r in op.results)
    random_inputs = [c for c in constants if isinstance(c.value, RandomAttr)]
    return results > max_bytes or any(dtypes.tensor_bytes(c.result.type) > max_bytes for c in random_inputs)


def _replace(op: GEOp, replacement: list[ConstOp], constants: Sequence[ConstOp]) -> None:
    """Put the new constants where `op` was, keep its names, and drop constants that
    nothing uses any more."""
    for old, new in zip(op.results, replacement, strict=True):
        new.result.name_hint = old.name_hint
    Rewriter.replace_op(op, replacement, [c.result for c in replacement])
    for const in {id(c): c for c in constants}.values():
        if not const.result.uses:
            Rewriter.erase_op(const)
