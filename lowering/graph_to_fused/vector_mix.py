"""`ge-vector-mix`: a batched matrix-vector product over a stack of planes
becomes a weighted sum of the planes, for the vector unit.

A mixture of experts' gate mixes the experts' outputs: with the experts grouped
(`ge-group-matmuls`) their outputs are one `[E, B, N]` tensor `H`, and each
task's mix is

    out[b, 0, :] = sum_e gate[b, 0, e] * H[e, b, :]
    = ge.batch_matmul(gate [B, 1, E], ge.transpose(H, [1, 0, 2]) [B, E, N])

On the cube this is B products of M = 1 (one sixteenth of each fractal used) and
K = E (one fractal's depth, padded), after the stack has been transposed and
converted to FRACTAL_NZ: three kernels (transpose, format change, product) that
each move the whole stack. Here it becomes

    out = sum_e plane(H, e) * column(gate, e)        # gate seen as [B, E]

where `plane(x, e)` is the `ge.slice` of index e along the leading axis (a
contiguous block of the ND tensor, which a fused vector group reads from its
offset instead of a copy) and `column(x, e)` the slice of index e along the last
axis (one value per row, taken out of the gate's tile in UB): see
`templates/groups.py`. The mixes of one stack become ONE fused group, built
here (automatic fusion would share the planes between groups and write them
out), reading each plane once; a softmax computing a gate for its mix alone
joins the group (its rows are the mix's rows), so the gate costs no kernel of
its own. With f16 operands the products and the sum are computed in f32 and
rounded once, as the cube accumulates in L0C (the product of two f16 values is
exact in f32), so the result matches the cube's up to the order of the
additions.

What rewrites: `ge.batch_matmul` with neither operand transposed, lhs `[b..., 1,
K]`, rhs the `ge.transpose` of an `[K, b..., N]` tensor that moves its leading
axis to the second-to-last place, the same batch dims on both sides (no
broadcast), a float type, 2 <= K <= MAX_PLANES: the sum is unrolled (a plane, a
column, a product and an addition per plane, per mix), and with K <= 8 the cube
would pad K to 16 as well as M.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType, f32
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from ...core import dtypes
from ...core.passes import record_statistic
from ...dialects import ge
from ...dialects.ge.base import shape_of
from .grouping import group_all

_ROW_GATES = (ge.SoftmaxOp, ge.LogSoftmaxOp)

MAX_PLANES = 8
"""Planes summed by one rewrite (module docstring)."""


def _stack(op: ge.BatchMatmulOp) -> SSAValue | None:
    """The `[K, b..., N]` stack `op`'s rhs transposes, if `op` is a mix (module
    docstring)."""
    if op.attr_value("transpose_a") or op.attr_value("transpose_b"):
        return None
    transpose = op.rhs.owner
    if not isinstance(transpose, ge.TransposeOp):
        return None
    lhs, rhs = shape_of(op.lhs.type), shape_of(op.rhs.type)
    rank = len(rhs)
    if len(lhs) != rank or lhs[-2] != 1 or lhs[:-2] != rhs[:-2] or not 2 <= rhs[-2] <= MAX_PLANES:
        return None
    if tuple(transpose.attr_value("perm")) != (*range(1, rank - 1), 0, rank - 1):
        return None
    if op.lhs.type.element_type != op.rhs.type.element_type or not dtypes.is_float(op.lhs.type.element_type):
        return None
    return transpose.input


def _column(value: SSAValue, index: int) -> ge.SliceOp:
    shape = shape_of(value.type)
    return ge.SliceOp.new(value, starts=[0] * (len(shape) - 1) + [index], ends=[*shape[:-1], index + 1], steps=[1] * len(shape))


def _plane(value: SSAValue, index: int) -> ge.SliceOp:
    shape = shape_of(value.type)
    return ge.SliceOp.new(
        value, starts=[index] + [0] * (len(shape) - 1), ends=[index + 1, *shape[1:]], steps=[1] * len(shape)
    )


class _Stack:
    """The mixes of one stack, as ops built before `before`: the planes of the
    stack (read once, shared by the mixes), then each mix's weighted sum."""

    def __init__(self, stack: SSAValue):
        self.stack = stack
        self.planes, *self.batch, self.n = shape_of(stack.type)
        self.element = stack.type.element_type
        self.wide = f32 if dtypes.byte_width(self.element) < 4 else self.element  # the cube's accumulator
        self.ops: list[Operation] = []  # the weighted sums (one fused group)
        self.outside: list[Operation] = []  # views of each gate and result (no kernel)
        self._plane_values: list[SSAValue] | None = None
        self.moved: list[Operation] = []  # ops of the graph joining the group (`_gate`)
        self.dead: list[Operation] = []  # the gates' reshapes, unused once the mixes are gone

    def _add(self, op: Operation, ops: list[Operation] | None = None) -> SSAValue:
        (self.ops if ops is None else ops).append(op)
        return op.results[0]

    def _cast(self, value: SSAValue, to, ops: list[Operation] | None = None) -> SSAValue:
        if value.type.element_type == to:
            return value
        return self._add(ge.CastOp.new(value, result_type=TensorType(to, shape_of(value.type))), ops)

    def _stack_planes(self) -> list[SSAValue]:
        if self._plane_values is None:
            self._plane_values = []
            for index in range(self.planes):
                plane = self._add(_plane(self.stack, index))
                plane = self._add(ge.ReshapeOp.new(plane, result_type=TensorType(self.element, (*self.batch, self.n))))
                self._plane_values.append(self._cast(plane, self.wide))
        return self._plane_values

    def _gate(self, lhs: SSAValue) -> SSAValue:
        """The gate `[b.., K]`: the value `lhs` is a reshape of (used by this mix
        alone) or a view of `lhs`. A softmax over the gate's last axis computing
        that value for this mix alone joins the group (`moved`): computed where
        its rows are read, instead of a kernel of its own."""
        shape = (*self.batch, self.planes)
        owner = lhs.owner
        if not (isinstance(owner, ge.ReshapeOp) and len(list(lhs.uses)) == 1 and shape_of(owner.input.type) == shape):
            return self._add(ge.ReshapeOp.new(lhs, result_type=TensorType(self.element, shape)), self.outside)
        source = owner.input
        producer = source.owner
        if isinstance(producer, _ROW_GATES) and len(list(source.uses)) == 1 and producer.attr_value("axis") % len(shape) == len(shape) - 1:
            self.moved.append(producer)
        self.dead.append(owner)
        return source

    def mix(self, op: ge.BatchMatmulOp) -> SSAValue:
        """The weighted sum standing for `op`, in `op`'s result type."""
        gate = self._gate(op.lhs)
        total: SSAValue | None = None
        for index, plane in enumerate(self._stack_planes()):
            weight = self._add(_column(gate, index))  # one value per row
            weight = self._cast(weight, self.wide)
            product = self._add(ge.MulOp.new(plane, weight))
            total = product if total is None else self._add(ge.AddOp.new(total, product))
        total = self._cast(total, self.element)
        return self._add(ge.ReshapeOp.new(total, result_type=op.results[0].type), self.outside)


def vector_mix(module: ModuleOp) -> int:
    """Rewrite every mix of `module` (module docstring), the mixes of one stack as
    one fused group reading its planes once; returns how many."""
    mixes: dict[SSAValue, list[ge.BatchMatmulOp]] = {}
    for op in module.walk():
        if isinstance(op, ge.BatchMatmulOp) and all(isinstance(t, TensorType) for t in (op.lhs.type, op.rhs.type)):
            stack = _stack(op)
            if stack is not None and math.prod(shape_of(stack.type)) > 0:
                mixes.setdefault(stack, []).append(op)
    for stack, ops in mixes.items():
        built = _Stack(stack)
        results = [built.mix(op) for op in ops]
        block, last = ops[-1].parent_block(), ops[-1]
        for created in [*built.outside, *built.ops]:
            created.location = last.location
            block.insert_op_before(created, last)
        transposes = {op.rhs.owner for op in ops}
        for op, result in zip(ops, results):
            op.results[0].replace_all_uses_with(result)
            block.erase_op(op)
        for dead in [*built.dead, *transposes]:
            if not list(dead.results[0].uses):
                block.erase_op(dead)
        group_all([[*built.moved, *built.ops]], block)
    return sum(len(ops) for ops in mixes.values())


@dataclass(frozen=True)
class VectorMixPass(ModulePass):
    """Batched matrix-vector products over a transposed stack of planes (a mixture of experts' gates) as weighted sums of the planes, for the vector unit."""

    name = "ge-vector-mix"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        record_statistic(self.name, "mixes rewritten as weighted sums", vector_mix(op))
