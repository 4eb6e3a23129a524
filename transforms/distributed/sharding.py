"""How each value of a graph lives on N devices, and how each op's layout rule
carries that from its operands to its results.

A value is *replicated* (every device holds all of it), *split* on a dim (device
d holds the d-th of N equal parts along it), or *partial* (every device holds a
summand; the value is their sum, what a row-parallel matmul leaves). An op's
rule looks at its operands' layouts and answers with the layout each operand
must have (a replicated value is split locally by slicing; a split one needs an
all_gather to become whole; a partial one an all_reduce) and the layouts of its
results. The rules know the ops' meaning, never a model: a softmax keeps a split
that is not on its axis, a matmul turns a split of its contraction dim into
partial sums, a reshape keeps a split whose dim survives whole in its result.

`propagate` runs the rules over a function in order and records every
conversion the requirements imply; `ge-partition`'s strategies choose the
starting layouts and which matmuls split their weight by columns, and build the
device functions from the resulting `Plan`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from xdsl.dialects import func
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from ...dialects import ge
from ...dialects.ge.elementwise import ELEMENTWISE_OPS


@dataclass(frozen=True)
class Layout:
    kind: str  # "replicated" | "split" | "partial"
    axis: int = -1

    def __str__(self) -> str:
        return f"split on dim {self.axis}" if self.kind == "split" else self.kind


REPLICATED = Layout("replicated")
PARTIAL = Layout("partial")


def split(axis: int) -> Layout:
    return Layout("split", axis)


def is_split(layout: Layout) -> bool:
    return layout.kind == "split"


def shard_type(t: TensorType, layout: Layout, devices: int) -> TensorType:
    """The type of one device's part of a value of type `t`."""
    if not is_split(layout):
        return t
    shape = list(t.get_shape())
    shape[layout.axis] //= devices
    return TensorType(t.element_type, shape)


@dataclass
class Step:
    """An op's rule applied: what its operands must be, what its results are, and
    (when it needs a split operand whole) why."""

    requires: list[Layout]
    results: list[Layout]
    why: str = ""


@dataclass
class Conversion:
    """A value made to change layout before an op uses it."""

    op: Operation
    operand: int
    source: Layout
    target: Layout
    why: str

    @property
    def gathers(self) -> bool:
        """Whether it needs a split value whole (an all_gather): what a good plan avoids."""
        return is_split(self.source) and self.target != self.source


@dataclass
class Plan:
    devices: int
    layouts: dict[SSAValue, Layout] = field(default_factory=dict)
    requires: dict[Operation, list[Layout]] = field(default_factory=dict)
    conversions: list[Conversion] = field(default_factory=list)
    columns: frozenset[Operation] = frozenset()
    """The matmuls that split their weight by columns (tensor parallelism)."""
    tokens: frozenset[Operation] = frozenset()
    """The ops that take their partial operands reduce-scattered by rows (dim 0)
    instead of all-reduced: from them on the tokens are split, the weights whole
    (`partition.py`'s token split)."""

    @property
    def gathers(self) -> list[Conversion]:
        return [c for c in self.conversions if c.gathers]

    @property
    def reductions(self) -> int:
        return len({c.op.operands[c.operand] for c in self.conversions if c.source == PARTIAL})


def shape(value: SSAValue) -> tuple[int, ...]:
    return tuple(value.type.get_shape())


def splittable(value: SSAValue, axis: int, devices: int) -> bool:
    dims = shape(value)
    return 0 <= axis < len(dims) and dims[axis] % devices == 0 and dims[axis] >= devices


# ---- the rules -------------------------------------------------------------------------------

Rule = Callable[[Operation, list[Layout], int, bool], Step]
"""(op, operand layouts, devices, split-columns decision) -> Step"""


def _whole(op: Operation, why: str) -> Step:
    return Step([REPLICATED] * len(op.operands), [REPLICATED] * len(op.results), why)


def _no_partials(layouts: list[Layout]) -> list[Layout]:
    return [REPLICATED if layout == PARTIAL else layout for layout in layouts]


def _elementwise(op: Operation, layouts: list[Layout], devices: int, _: bool) -> Step:
    """Numpy broadcasting: a split carries to the result dim it is aligned with; the
    other operands are split alike where they have that dim, kept whole where they
    broadcast along it."""
    layouts = _no_partials(layouts)
    out_rank = len(shape(op.results[0]))
    result_axis = next(
        (layout.axis + out_rank - len(shape(v)) for v, layout in zip(op.operands, layouts) if is_split(layout)),
        None,
    )
    if result_axis is None:
        return Step(layouts, [REPLICATED] * len(op.results))
    requires = []
    for v in op.operands:
        axis = result_axis - (out_rank - len(shape(v)))
        broadcast = axis < 0 or shape(v)[axis] == 1
        requires.append(REPLICATED if broadcast else split(axis))
    return Step(requires, [split(result_axis)], "its operands are split on different dims")


def _bias_add(op: Operation, layouts: list[Layout], devices: int, _: bool) -> Step:
    x, _bias = _no_partials(layouts)
    axis = op.attr_value("axis") % len(shape(op.operands[0]))
    if not is_split(x):
        return Step([REPLICATED, REPLICATED], [REPLICATED])
    return Step([x, split(0) if x.axis == axis else REPLICATED], [x])


def _matrix_product(op: Operation, layouts: list[Layout], devices: int, columns: bool) -> Step:
    """(.., M, K) x (.., K, N): a split of M, N or a batch dim carries to the result;
    a split of K on both sides leaves partial sums; `columns` splits a replicated
    product's rhs by columns (the column-parallel half of a Megatron pair)."""
    lhs_v, rhs_v = op.operands
    rl, rr, ro = len(shape(lhs_v)), len(shape(rhs_v)), len(shape(op.results[0]))
    ta, tb = op.attr_value("transpose_a"), op.attr_value("transpose_b")
    m, k = (rl - 1, rl - 2) if ta else (rl - 2, rl - 1)
    k_r, n_r = (rr - 1, rr - 2) if tb else (rr - 2, rr - 1)
    lhs, rhs = _no_partials(layouts)

    def batch_of_rhs(out_axis: int) -> Layout:
        j = out_axis - (ro - rr)
        return split(j) if 0 <= j < rr - 2 and shape(rhs_v)[j] != 1 else REPLICATED

    def batch_of_lhs(out_axis: int) -> Layout:
        i = out_axis - (ro - rl)
        return split(i) if 0 <= i < rl - 2 and shape(lhs_v)[i] != 1 else REPLICATED

    why = "the operands are split in ways a product cannot combine"
    if is_split(lhs):
        if lhs.axis == m:
            return Step([lhs, REPLICATED], [split(ro - 2)], why)
        if lhs.axis == k:
            return Step([lhs, split(k_r)], [PARTIAL], why)
        out_axis = lhs.axis + ro - rl
        return Step([lhs, batch_of_rhs(out_axis)], [split(out_axis)], why)
    if is_split(rhs):
        if rhs.axis == n_r:
            return Step([REPLICATED, rhs], [split(ro - 1)], why)
        if rhs.axis == k_r:
            return Step([split(k), rhs], [PARTIAL], why)
        out_axis = rhs.axis + ro - rr
        return Step([batch_of_lhs(out_axis), rhs], [split(out_axis)], why)
    if columns and splittable(rhs_v, n_r, devices):
        return Step([REPLICATED, split(n_r)], [split(ro - 1)])
    return Step([REPLICATED, REPLICATED], [REPLICATED])


def _normalized_axes(op: Operation) -> set[int]:
    rank = len(shape(op.operands[0]))
    axis = op.attr_value("axis") % rank
    if isinstance(op, (ge.LayerNormOp, ge.RMSNormOp)):
        return set(range(axis, rank))
    return {axis}


def _normalization(op: Operation, layouts: list[Layout], devices: int, _: bool) -> Step:
    """Softmax and the trailing norms keep a split of a dim they do not normalise over."""
    x = _no_partials(layouts)[0]
    if is_split(x) and x.axis not in _normalized_axes(op):
        return Step([x] + [REPLICATED] * (len(op.operands) - 1), [x])
    return _whole(op, f"it normalises over dim {x.axis}, which is split")


def _batch_norm(op: Operation, layouts: list[Layout], devices: int, _: bool) -> Step:
    x = _no_partials(layouts)[0]
    if is_split(x) and x.axis != 1:
        return Step([x] + [REPLICATED] * (len(op.operands) - 1), [x])
    return _whole(op, "it normalises per channel over the split dim")


def _reduction(op: Operation, layouts: list[Layout], devices: int, _: bool) -> Step:
    x = _no_partials(layouts)[0]
    rank = len(shape(op.operands[0]))
    axes = {a % rank for a in op.attr_value("axes")} or set(range(rank))
    if is_split(x) and x.axis not in axes:
        out = x.axis if op.attr_value("keepdims") else x.axis - sum(a < x.axis for a in axes)
        return Step([x], [split(out)])
    return _whole(op, f"it reduces over dim {x.axis}, which is split")


def _transpose(op: Operation, layouts: list[Layout], devices: int, _: bool) -> Step:
    x = _no_partials(layouts)[0]
    if is_split(x):
        return Step([x], [split(list(op.attr_value("perm")).index(x.axis))])
    return Step([x], [x])


def reshaped_axis(before: Sequence[int], after: Sequence[int], axis: int, devices: int) -> int | None:
    """The dim of `after` that a split of dim `axis` of `before` becomes, if the
    reshape keeps each device's part contiguous: the dims in front hold the same
    number of elements, and the new dim splits evenly."""
    prefix = math.prod(before[:axis])
    for b in range(len(after)):
        if math.prod(after[:b]) == prefix and after[b] % devices == 0 and after[b] >= devices:
            return b
        if math.prod(after[:b]) > prefix:
            break
    return None


def _reshape(op: Operation, layouts: list[Layout], devices: int, _: bool) -> Step:
    x = _no_partials(layouts)[0]
    if not is_split(x):
        return Step([x], [x])
    b = reshaped_axis(shape(op.operands[0]), shape(op.results[0]), x.axis, devices)
    if b is None:
        return _whole(op, f"the reshape to {list(shape(op.results[0]))} does not keep dim {x.axis} whole")
    return Step([x], [split(b)])


def _expand(op: Operation, layouts: list[Layout], devices: int, _: bool) -> Step:
    """A broadcast keeps a split of a dim it does not broadcast (numpy alignment)."""
    x = _no_partials(layouts)[0]
    if not is_split(x):
        return Step([x], [x])
    out_axis = x.axis + len(shape(op.results[0])) - len(shape(op.operands[0]))
    if shape(op.operands[0])[x.axis] == shape(op.results[0])[out_axis]:
        return Step([x], [split(out_axis)])
    return _whole(op, f"it broadcasts the split dim {x.axis}")


def _batched_window(op: Operation, layouts: list[Layout], devices: int, _: bool) -> Step:
    """Convolutions and pools are independent per image: a split of the batch (dim 0) stays."""
    x = _no_partials(layouts)[0]
    if is_split(x) and x.axis == 0:
        return Step([x] + [REPLICATED] * (len(op.operands) - 1), [x])
    return _whole(op, "it mixes values along the split dim")


def _concat(op: Operation, layouts: list[Layout], devices: int, _: bool) -> Step:
    layouts = _no_partials(layouts)
    axis = op.attr_value("axis") % len(shape(op.results[0]))
    first = next((layout for layout in layouts if is_split(layout)), None)
    if first is None:
        return Step(layouts, [REPLICATED])
    if first.axis == axis:
        return _whole(op, "it concatenates along the split dim")
    return Step([first] * len(layouts), [first], "its operands are split on different dims")


def _slice(op: Operation, layouts: list[Layout], devices: int, _: bool) -> Step:
    x = _no_partials(layouts)[0]
    if not is_split(x):
        return Step([x], [x])
    dim = shape(op.operands[0])[x.axis]
    bounds = (op.attr_value("starts")[x.axis], op.attr_value("ends")[x.axis], op.attr_value("steps")[x.axis])
    if bounds == (0, dim, 1):
        return Step([x], [x])
    return _whole(op, f"it slices the split dim {x.axis}")


def _all_reduce(op: Operation, layouts: list[Layout], devices: int, _: bool) -> Step:
    """An all_reduce sums each element across the devices of its group: a split of
    its operand (in another sense than those devices', e.g. rows processed in
    chunks) carries to its result."""
    x = _no_partials(layouts)[0]
    return Step([x], [x])


def _gather(op: Operation, layouts: list[Layout], devices: int, _: bool) -> Step:
    """An embedding lookup: split indices give the result split where their dims
    land (after `axis`); split data keeps its split off the gathered dim."""
    data, indices = _no_partials(layouts)
    rank = len(shape(op.operands[0]))
    axis = op.attr_value("axis") % rank
    if is_split(indices):
        return Step([REPLICATED, indices], [split(axis + indices.axis)], "its data and indices are both split")
    if is_split(data) and data.axis != axis:
        out = data.axis if data.axis < axis else data.axis + len(shape(op.operands[1])) - 1
        return Step([data, REPLICATED], [split(out)])
    return _whole(op, f"it gathers along the split dim {axis}")


_RULES: dict[type[Operation], Rule] = {
    **{cls: _elementwise for cls in ELEMENTWISE_OPS},
    ge.BiasAddOp: _bias_add,
    ge.MatmulOp: _matrix_product,
    ge.BatchMatmulOp: _matrix_product,
    ge.SoftmaxOp: _normalization,
    ge.LogSoftmaxOp: _normalization,
    ge.LayerNormOp: _normalization,
    ge.RMSNormOp: _normalization,
    ge.BatchNormOp: _batch_norm,
    ge.ReduceSumOp: _reduction,
    ge.ReduceMeanOp: _reduction,
    ge.ReduceMaxOp: _reduction,
    ge.TransposeOp: _transpose,
    ge.ReshapeOp: _reshape,
    ge.ExpandOp: _expand,
    ge.Conv2DOp: _batched_window,
    ge.MaxPool2DOp: _batched_window,
    ge.AvgPool2DOp: _batched_window,
    ge.GlobalAvgPoolOp: _batched_window,
    ge.ConcatOp: _concat,
    ge.SliceOp: _slice,
    ge.GatherOp: _gather,
    ge.AllReduceOp: _all_reduce,
}


def step(op: Operation, layouts: list[Layout], devices: int, columns: bool) -> Step:
    rule = _RULES.get(type(op))
    if rule is None:
        if any(layout != REPLICATED for layout in layouts):
            return _whole(op, "ge-partition has no layout rule for it")
        return _whole(op, "")
    result = rule(op, layouts, devices, columns)
    # A split the devices cannot share evenly is no split: the operand stays whole.
    result.requires = [
        r if not is_split(r) or splittable(v, r.axis, devices) else REPLICATED
        for r, v in zip(result.requires, op.operands)
    ]
    result.results = [
        r if not is_split(r) or splittable(v, r.axis, devices) else REPLICATED
        for r, v in zip(result.results, op.results)
    ]
    return result


# ---- propagation -----------------------------------------------------------------------------


def propagate(
    function: func.FuncOp,
    devices: int,
    arguments: Sequence[Layout],
    columns: set[Operation] = frozenset(),
    tokens: set[Operation] = frozenset(),
) -> Plan:
    """The layouts of every value of `function` from its arguments' layouts, with the
    conversions the ops' rules require (results end replicated)."""
    block = function.body.block
    return propagate_ops(block.ops, devices, dict(zip(block.args, arguments, strict=True)), columns, tokens)


def propagate_ops(
    ops: Sequence[Operation],
    devices: int,
    initial: dict[SSAValue, Layout],
    columns: set[Operation] = frozenset(),
    tokens: set[Operation] = frozenset(),
) -> Plan:
    """`propagate` over a run of ops whose outside operands have the layouts
    `initial` (a value it does not name is replicated). An op in `tokens` sees its
    partial operands as split by rows (dim 0): the rule then asks for them so, a
    reduce_scatter, and the split carries on from its results."""
    plan = Plan(devices, tokens=frozenset(tokens))
    plan.layouts.update(initial)
    for op in ops:
        layouts = [plan.layouts.get(v, REPLICATED) for v in op.operands]
        if isinstance(op, func.ReturnOp):
            s = Step([REPLICATED] * len(layouts), [], "an output is whole on every device")
        else:
            seen = layouts
            if op in tokens:
                seen = [split(0) if have == PARTIAL and splittable(v, 0, devices) else have for v, have in zip(op.operands, layouts)]
            s = step(op, seen, devices, op in columns)
        for i, (have, want) in enumerate(zip(layouts, s.requires)):
            if have != want:
                plan.conversions.append(Conversion(op, i, have, want, s.why))
        plan.requires[op] = s.requires
        plan.layouts.update(zip(op.results, s.results, strict=True))
    return plan
