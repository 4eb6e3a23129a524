"""Small queries and edits on a graph block that every fusion needs: who uses a
value, which constant it is, whether fusing a set of ops would create a cycle,
and restoring a valid op order after ops were merged.

The graph is the body of `func.func @main`: one block, ops in an order where
every value is defined before it is used.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, Operation, SSAValue

from ...dialects import ge

TRANSPARENT_OPS = (ge.DropoutOp, ge.IdentityOp)
"""Ops that are the identity on values at inference; epilogue chains look through
them (they vanish from the fused op). `ge.transdata` (a format change that keeps
the logical value) is transparent too, by name: see `is_transparent`."""


def is_transparent(op: Operation | None) -> bool:
    if op is None:
        return False
    return isinstance(op, TRANSPARENT_OPS) or is_format_change(op)


def _same_shape(a: SSAValue, b: SSAValue) -> bool:
    return tuple(a.type.get_shape()) == tuple(b.type.get_shape())


def users(value: SSAValue) -> list[Operation]:
    """The ops using `value`, once each, in no particular order."""
    seen: dict[int, Operation] = {}
    for use in value.uses:
        seen.setdefault(id(use.operation), use.operation)
    return list(seen.values())


def sole_user(value: SSAValue) -> Operation | None:
    """The op using `value` if it is its only use, else None."""
    return value.get_user_of_unique_use()


def producer(value: SSAValue, *types: type[Operation]) -> Operation | None:
    """The op defining `value` if it is one of `types` (any op when none given)."""
    owner = value.owner
    if not isinstance(owner, Operation):
        return None
    return owner if not types or isinstance(owner, types) else None


def splat_constant(value: SSAValue) -> float | None:
    """The value of a `ge.const` holding one repeated number, else None."""
    const = producer(value, ge.ConstOp)
    if const is None or not isinstance(value.type, TensorType) or not const.is_splat():
        return None  # a #ge.random value is never a splat: no need to draw it
    array = np.asarray(const.as_array())
    return float(array.flat[0]) if array.size else None


def shape(value: SSAValue) -> tuple[int, ...]:
    return tuple(value.type.get_shape())


def both_orders(op: Operation) -> tuple[tuple[SSAValue, SSAValue], ...]:
    """A commutative binary op's operands as (a, b) and (b, a), for matching
    either way round."""
    lhs, rhs = op.operands
    return (lhs, rhs), (rhs, lhs)


def other_operand(op: Operation, value: SSAValue) -> SSAValue | None:
    """For a binary op with `value` as one operand, the other one (None if `value`
    is both)."""
    lhs, rhs = op.operands
    if lhs is value and rhs is not value:
        return rhs
    if rhs is value and lhs is not value:
        return lhs
    return None


# ---- cycles --------------------------------------------------------------------------------


def positions(block: Block) -> dict[Operation, int]:
    return {op: i for i, op in enumerate(block.ops)}


def depends_on(values: Iterable[SSAValue], ops: Sequence[Operation], order: dict[Operation, int]) -> Operation | None:
    """An op of `ops` that one of `values` (transitively) depends on, else None.

    Fusing `ops` into one op whose operands are `values` creates a cycle exactly
    when such an op exists. The search goes backwards and stops at ops placed
    before the earliest of `ops`, which cannot depend on them.
    """
    targets = set(ops)
    earliest = min(order[op] for op in ops)
    stack = [v.owner for v in values if isinstance(v.owner, Operation)]
    seen: set[Operation] = set()
    while stack:
        op = stack.pop()
        if op in seen or order.get(op, -1) < earliest:
            continue
        if op in targets:
            return op
        seen.add(op)
        stack.extend(v.owner for v in op.operands if isinstance(v.owner, Operation))
    return None


def external_operands(ops: Sequence[Operation]) -> list[SSAValue]:
    """Operands of `ops` defined outside them, in first-use order, without repeats."""
    inside = {r for op in ops for r in op.results}
    seen: dict[SSAValue, None] = {}
    for op in ops:
        for v in op.operands:
            if v not in inside:
                seen.setdefault(v, None)
    return list(seen)


# ---- order ---------------------------------------------------------------------------------


def is_topologically_ordered(block: Block) -> bool:
    defined: set[SSAValue] = set(block.args)
    for op in block.ops:
        if any(v not in defined and _defined_in(v, block) for v in op.operands):
            return False
        defined.update(op.results)
    return True


def _defined_in(value: SSAValue, block: Block) -> bool:
    owner = value.owner
    return value in block.args if isinstance(owner, Block) else owner.parent_block() is block


def restore_topological_order(block: Block) -> bool:
    """Reorders `block` so every value is defined before its uses, keeping the
    current order wherever it is already valid (Kahn's algorithm, earliest op
    first). Returns whether anything moved. Ops that were fused can leave a
    user of one of their results ahead of the fused op; this moves it after."""
    if is_topologically_ordered(block):
        return False
    ops = list(block.ops)
    index = {op: i for i, op in enumerate(ops)}
    waiting = {op: 0 for op in ops}
    dependents: dict[Operation, list[Operation]] = {op: [] for op in ops}
    for op in ops:
        for producer_op in {v.owner for v in op.operands if isinstance(v.owner, Operation) and v.owner in index}:
            waiting[op] += 1
            dependents[producer_op].append(op)
    ready = [(index[op], op) for op in ops if waiting[op] == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        _, op = heapq.heappop(ready)
        order.append(op)
        for d in dependents[op]:
            waiting[d] -= 1
            if waiting[d] == 0:
                heapq.heappush(ready, (index[d], d))
    if len(order) != len(ops):
        raise AssertionError("the graph has a cycle")
    for op in ops:
        block.detach_op(op)
    block.add_ops(order)
    return True


def erase_dead_providers(candidates: Iterable[SSAValue]) -> int:
    """Erases the producers of `candidates` that lost their last use and only
    provide data: constants (a fused op took their value as an attribute) and
    `ge.transdata` (fused ops read through it), and then theirs."""
    erased = 0
    stack = list(candidates)
    while stack:
        op = producer(stack.pop())
        if op is None or op.parent is None or any(r.uses for r in op.results):
            continue
        if not (isinstance(op, ge.ConstOp) or is_format_change(op)):
            continue
        stack.extend(op.operands)
        op.detach()
        op.erase()
        erased += 1
    return erased


# ---- looking through transparent ops ------------------------------------------------------


def is_format_change(op: Operation | None) -> bool:
    """A `ge.transdata` keeping the logical shape: the identity on values."""
    return op is not None and op.name == "ge.transdata" and _same_shape(op.operands[0], op.results[0])


def skip_forward(v: SSAValue, absorbed: list[Operation]) -> SSAValue:
    """Follows single-use transparent ops after `v`, appending them to `absorbed`."""
    while is_transparent(user := sole_user(v)):
        absorbed.append(user)
        v = user.results[0]
    return v


def skip_back(v: SSAValue, absorbed: list[Operation]) -> SSAValue:
    """Follows transparent producers of `v` whose result is used only once,
    appending them to `absorbed`; returns the value they started from."""
    while v.has_one_use() and is_transparent(op := producer(v)):
        absorbed.append(op)
        v = op.operands[0]
    return v


def through_format_changes(v: SSAValue) -> SSAValue:
    """The value `v` is a (chain of) format change(s) of. A fused op reads it
    directly and converts on load, as the NPU's MTE does (ND -> NZ)."""
    while is_format_change(op := producer(v)):
        v = op.operands[0]
    return v
