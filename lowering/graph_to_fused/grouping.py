"""Turning a set of `ge` ops into a `fused.group`.

The group reads the values the ops take from outside (its operands, in first-use
order) and returns the values used outside (its results); splat constants are
copied into the body, where they become immediates instead of inputs. The ops
are moved, not recomputed: each original result used outside is replaced by the
group's result, and the block is re-ordered (stably) so the group sits where
its inputs are ready and before its users.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import Block, Operation, Region, SSAValue

from ...dialects import ge
from ...dialects.fused import GroupOp, YieldOp
from .fusion_graph import make_part
from .graph import erase_dead_providers, restore_topological_order


def build_group(ops: Sequence[Operation]) -> tuple[GroupOp, list[SSAValue]]:
    """A group computing `ops` (in block order); returns it and the original
    values its results stand for. The IR is not modified."""
    part = make_part(list(ops))
    body = Block(arg_types=[v.type for v in part.inputs])
    mapping: dict[SSAValue, SSAValue] = dict(zip(part.inputs, body.args))
    for op in ops:
        for v in op.operands:
            if v not in mapping and isinstance(v.owner, ge.ConstOp):
                const = v.owner.clone()
                body.add_op(const)
                mapping[v] = const.results[0]
    for op in ops:
        copy = op.clone(value_mapper=mapping)
        body.add_op(copy)
        mapping.update(zip(op.results, copy.results))
    body.add_op(YieldOp(*(mapping[v] for v in part.outputs)))
    group = GroupOp(part.inputs, [v.type for v in part.outputs], Region(body))
    return group, list(part.outputs)


def replace_by_group(ops: Sequence[Operation], block: Block) -> GroupOp:
    """Replaces `ops` of `block` by one `fused.group`."""
    group, replaced = build_group(ops)
    group.location = ops[-1].location
    block.insert_op_before(group, ops[0])
    for old, new in zip(replaced, group.results):
        old.replace_all_uses_with(new)
    operands = [v for op in ops for v in op.operands]
    for op in reversed(ops):
        op.detach()
        op.erase()
    erase_dead_providers(operands)
    return group


def group_all(groups: Sequence[Sequence[Operation]], block: Block) -> list[GroupOp]:
    """Replaces each op set (two ops or more) by a group, then restores the order."""
    made = [replace_by_group(ops, block) for ops in groups if len(ops) > 1]
    restore_topological_order(block)
    return made
