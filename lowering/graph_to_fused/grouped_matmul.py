"""`ge-group-matmuls`: parallel expert MLPs become grouped (batched) matrix products.

A mixture of experts (MMoE, seed 000's MMOE case) runs G experts on one input:
G chains of `act(x @ W_g + b_g)` layers with weights of one shape and one
epilogue, whose outputs are stacked (`concat` of `reshape`s) for the gates to
mix. As separate kernels every expert layer is a small product on all the
cores (a 256x256x256 product per 32 cores: each core's tile too small to
pipeline), one launch or phase each; `ge-merge-matmuls` joins at most
`MAX_PRODUCTS` products of a shared lhs and none of the second layer's (each
expert has its own lhs). CANN runs such experts as one GroupedMatmul; here the
G products of a layer become one `ge.batch_matmul` over the stacked weights
(a `[G, K, N]` constant, biases `[G, 1, N]`), so one cube kernel tiles every
expert's product across the cores, with the bias and activation as its
epilogue (automatic fusion makes the batched product and its epilogue one cube
group). The first layer's shared lhs broadcasts over the group; each later
layer reads the previous layer's `[G, M, N]` result as its batch of lhs; the
stack the gates read is that result with the group axis moved to the concat's
axis (a transpose, replacing the concat's copy).

What groups: chains starting at G >= 2 2-D `ge.matmul`s of one lhs (not
transposed), by constant weights of one type (transposed or not: a transposed
weight, as `Gemm(transB=1)` exports write it, is stacked transposed back), each product followed by the same epilogue
(an optional `ge.bias_add` of a constant, then an optional unary activation, the
same op with the same attributes), each value used by the next link alone; a
chain extends while every expert's value feeds one such product of the same
kind; the chains end in one `ge.concat` of their values, each reshaped to
`[M, N]` with a unit dim at the concat's axis, in any order. Anything else is
left as it is (for `ge-merge-matmuls` and the fusion passes).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from ...core.passes import record_statistic
from ...dialects import ge
from ...dialects.ge.elementwise import UnaryOp


@dataclass(frozen=True)
class _Link:
    """One expert's layer: `act(lhs @ rhs + bias)`; `out` is its last value."""

    matmul: ge.MatmulOp
    bias: ge.BiasAddOp | None
    act: Operation | None

    @property
    def out(self) -> SSAValue:
        return (self.act or self.bias or self.matmul).results[0]

    @property
    def ops(self) -> list[Operation]:
        return [op for op in (self.act, self.bias, self.matmul) if op is not None]

    def kind(self) -> tuple:
        """What must agree between the experts of one layer."""
        act = None if self.act is None else (self.act.name, tuple(sorted(vars(self.act.attr_values()).items())))
        bias = None if self.bias is None else self.bias.bias.type
        transposed = self.matmul.attr_value("transpose_b")
        return (self.matmul.rhs.type, transposed, self.matmul.results[0].type, bias, act)


def _const(value: SSAValue) -> ge.ConstOp | None:
    return value.owner if isinstance(value.owner, ge.ConstOp) else None


def _only_use(value: SSAValue) -> Operation | None:
    uses = list(value.uses)
    return uses[0].operation if len(uses) == 1 else None


def _link(op: Operation) -> _Link | None:
    """The layer starting at `op`, if it is a groupable product."""
    if not isinstance(op, ge.MatmulOp) or op.attr_value("transpose_a"):
        return None
    if len(op.lhs.type.get_shape()) != 2 or _const(op.rhs) is None or len(op.rhs.type.get_shape()) != 2:
        return None
    bias = _only_use(op.result)
    if not (isinstance(bias, ge.BiasAddOp) and bias.input == op.result and _const(bias.bias) is not None) or (
        bias.attr_value("axis") % 2 != 1
    ):
        bias = None
    act = _only_use((bias or op).results[0])
    if not (isinstance(act, UnaryOp) and len(act.operands) == 1):
        act = None
    return _Link(op, bias, act)


def _next_link(link: _Link) -> _Link | None:
    user = _only_use(link.out)
    return _link(user) if isinstance(user, ge.MatmulOp) and user.lhs == link.out else None


def _stack_order(chains: list[list[_Link]]) -> tuple[ge.ConcatOp, list[ge.ReshapeOp], list[int]] | None:
    """The concat stacking the chains' last values (its reshapes, and the chain of
    each of its inputs), if they end in one (see the module docstring)."""
    reshapes = [_only_use(chain[-1].out) for chain in chains]
    if not all(isinstance(r, ge.ReshapeOp) for r in reshapes):
        return None
    concat = _only_use(reshapes[0].result)
    if not isinstance(concat, ge.ConcatOp) or len(concat.inputs) != len(chains):
        return None
    position = {r.result: i for i, r in enumerate(reshapes)}
    if any(_only_use(r.result) is not concat for r in reshapes) or set(concat.inputs) != set(position):
        return None
    axis = concat.attr_value("axis") % len(concat.result.type.get_shape())
    rows_cols = list(chains[0][-1].out.type.get_shape())
    if list(reshapes[0].result.type.get_shape()) != rows_cols[:axis] + [1] + rows_cols[axis:]:
        return None
    return concat, reshapes, [position[v] for v in concat.inputs]


def _stacked_const(values: list[SSAValue], shape: list[int], transposed: bool = False) -> ge.ConstOp:
    arrays = [(_const(v).as_array().T if transposed else _const(v).as_array()).reshape(shape) for v in values]
    t = values[0].type
    return ge.ConstOp.from_array(np.stack(arrays), TensorType(t.element_type, [len(values), *shape]))


def _grouped_layer(lhs: SSAValue, layer: list[_Link], block: Block, before: Operation) -> SSAValue:
    """`act(lhs @ stack(W) + stack(b))` for one layer of the experts, before `before`."""
    first = layer[0]
    transposed = first.matmul.attr_value("transpose_b")
    k, n = reversed(first.matmul.rhs.type.get_shape()) if transposed else first.matmul.rhs.type.get_shape()
    new: list[Operation] = []
    weights = _stacked_const([link.matmul.rhs for link in layer], [k, n], transposed)
    new += [weights, ge.BatchMatmulOp.new(lhs, weights.result)]
    if first.bias is not None:
        biases = _stacked_const([link.bias.bias for link in layer], [1, n])
        new += [biases, ge.AddOp.new(new[-1].results[0], biases.result)]
    if first.act is not None:
        new.append(type(first.act).new(new[-1].results[0], **vars(first.act.attr_values())))
    for op in new:
        op.location = first.matmul.location
        block.insert_op_before(op, before)
    return new[-1].results[0]


def group_matmuls(block: Block) -> int:
    """Rewrite the block's expert chains (see the module docstring); how many groups."""
    starts: dict[tuple, list[_Link]] = defaultdict(list)
    for op in block.ops:
        link = _link(op)
        if link is not None:
            starts[(link.matmul.lhs, link.kind())].append(link)
    made = 0
    for first_layer in starts.values():
        if len(first_layer) >= 2 and _group(first_layer, block):
            made += 1
    return made


def _group(first_layer: list[_Link], block: Block) -> bool:
    chains = [[link] for link in first_layer]
    while True:
        following = [_next_link(chain[-1]) for chain in chains]
        if any(link is None for link in following) or len({link.kind() for link in following}) != 1:
            break
        for chain, link in zip(chains, following):
            chain.append(link)
    found = _stack_order(chains)
    if found is None:
        return False
    concat, reshapes, order = found
    chains = [chains[i] for i in order]
    value = first_layer[0].matmul.lhs
    for depth in range(len(chains[0])):
        value = _grouped_layer(value, [chain[depth] for chain in chains], block, concat)
    axis = concat.attr_value("axis") % len(concat.result.type.get_shape())
    perm = [1, 2]
    perm.insert(axis, 0)
    if perm != [0, 1, 2]:
        transpose = ge.TransposeOp.new(value, perm=perm)
        transpose.location = concat.location
        block.insert_op_before(transpose, concat)
        value = transpose.result
    concat.result.replace_all_uses_with(value)
    dead = [concat, *reshapes, *(op for chain in chains for link in reversed(chain) for op in link.ops)]
    constants = {c for chain in chains for link in chain for c in (_const(link.matmul.rhs), link.bias and _const(link.bias.bias)) if c}
    for op in dead:
        block.erase_op(op)
    for const in constants:
        if not list(const.result.uses):
            block.erase_op(const)
    return True


@dataclass(frozen=True)
class GroupMatmulsPass(ModulePass):
    """Expert MLPs of one input (same weight shapes and epilogue, stacked by a concat) as batched products of stacked weights."""

    name = "ge-group-matmuls"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in op.walk():
            if isinstance(function, func.FuncOp) and function.body.blocks:
                made = group_matmuls(function.body.block)
                if made:
                    record_statistic(self.name, "expert groups", made)
