"""Whether an attention mask is causal, read from the mask's values.

A mask is causal with offset `o` when query row i sees exactly the keys
j <= i + o (lower-triangular; o = Sk - Sq for queries at the end of a longer key
sequence) in every (batch, head). Then the flash-attention kernel need not
compute the key blocks above the diagonal, nor mask the blocks below it.

The values decide, never names: the mask is a `ge.const` or is computed from
constants alone (the Trilu, where, compare-of-iota chains exporters write); such
a chain is run with the ops' own semantics (`op.evaluate`). A hidden score must
vanish in the softmax for the blocks to be skipped exactly: a boolean mask's
fill, and a float mask's hidden entries, must be at most `HIDDEN_AT_MOST` (exp of
it is 0 in fp32 next to a visible score), and a float mask's visible entries 0.
"""

from __future__ import annotations

import numpy as np
from xdsl.ir import Operation, OpResult, SSAValue


HIDDEN_AT_MOST = -1.0e4
"""A masked score this low (or lower) contributes exp(<= -1e4 + ...) = 0 in fp32."""

MAX_CHAIN_OPS = 64
MAX_MASK_ELEMENTS = 1 << 24


def causal_offset(mask: SSAValue | None, mask_value: float, scores: tuple[int, ...]) -> int | None:
    """o if `mask` (broadcast to `scores` = (*batch, Sq, Sk)) is causal with offset
    o >= 0 and hides at least one key of some row, else None."""
    if mask is None or len(scores) < 2:
        return None
    shape = tuple(mask.type.get_shape())
    sq, sk = scores[-2:]
    if len(shape) < 2 or shape[-2:] != (sq, sk) or np.prod(shape) > MAX_MASK_ELEMENTS:
        return None
    values = constant_value(mask)
    if values is None:
        return None
    visible = _visible(values, mask_value)
    if visible is None:
        return None
    rows = visible.reshape(-1, sq, sk)
    offset = int(rows[0, 0].sum()) - 1  # row 0 sees keys 0..o
    if offset < 0 or offset >= sk - 1:
        return None  # a row that sees nothing, or nothing hidden
    expected = np.tri(sq, sk, offset, dtype=bool)
    return offset if bool((rows == expected).all()) else None


def _visible(values: np.ndarray, mask_value: float) -> np.ndarray | None:
    """Where the mask lets a score through, if every hidden score vanishes."""
    if values.dtype == np.bool_:
        return values if mask_value <= HIDDEN_AT_MOST else None
    visible = values == 0
    hidden = values[~visible]
    return visible if bool((hidden <= HIDDEN_AT_MOST).all()) else None


def constant_value(value: SSAValue) -> np.ndarray | None:
    """The value of `value` if it is computed from `ge.const`s alone (run with the
    ops' semantics), else None."""
    order = _constant_chain(value)
    if order is None:
        return None
    env: dict[SSAValue, np.ndarray] = {}
    for op in order:
        outputs = op.evaluate([env[v] for v in op.operands])
        env.update(zip(op.results, outputs, strict=True))
    return np.asarray(env[value])


def _constant_chain(value: SSAValue) -> list[Operation] | None:
    """The ops computing `value`, producers first, if they are all `ge` ops fed by
    constants only (none reads a function argument), at most MAX_CHAIN_OPS."""
    order: list[Operation] = []
    seen: set[Operation] = set()

    def visit(v: SSAValue) -> bool:
        if not isinstance(v, OpResult):
            return False
        op = v.op
        if op in seen:
            return True
        if not op.name.startswith("ge.") or op.regions or getattr(op, "evaluate", None) is None:
            return False
        if len(seen) >= MAX_CHAIN_OPS:
            return False
        seen.add(op)
        if not all(visit(operand) for operand in op.operands):
            return False
        order.append(op)
        return True

    return order if visit(value) else None
