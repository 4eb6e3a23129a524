"""`fused-setup-groups`: a vector group whose one result another vector group
reads as one vector for every row is computed once per core by the reader's
kernel (its *setup*, `templates/groups.py`), not by a kernel of its own.

A squeeze-and-excitation block ends in two small products: the squeeze
(`C -> Cs` channels of the pooled means, then swish) and the excitation
(`Cs -> C`, sigmoid, the scaling of the image). Fusion makes each a vector
group, the squeeze's rows its Cs outputs, the excitation's its C channels; the
excitation reads the squeeze's result whole in every row. As two kernels they
are two phases of the merged launch, and the squeeze's phase is almost all
phase: its GM latencies and the barrier after it (bench/phase_anatomy.py
--by-source: 85% of its cycles are not work), for a few rows of work on a few
cores. Joined, each core of the excitation computes the whole squeeze before its
rows: it loads the squeeze's inputs whole (the C x Cs weights, once per core)
and runs its body over its own Cs rows in the row kernel's prologue.

The form is chosen by estimate (`setup_cycles` [EST], never a shape or a name):
the producer's kernel (its share of rows on one core, its loads and vector
passes) plus what a kernel boundary costs (`phase_boundary_cycles`), against
the producer's whole work on every core of the reader (its loads at one core's
bandwidth: C x Cs x 4 bytes are 176 cycles for 240 x 10 and 4,058 for
1152 x 48, when a phase boundary costs about 620). Its legality is the group
template's own: `kernel_problem` of the joined group, which the estimate and the
rewrite both ask.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.dialects.builtin import IntegerAttr, i64
from xdsl.ir import Block, Operation, Region, SSAValue

from ...dialects import fused, ge
from ...dialects.fused.kinds import PatternKind, pattern_kind
from ...simulator.hardware import HardwarePreset
from ...simulator.npu.costs import vector_cycles
from .fuse_separable import phase_boundary_cycles
from .kernel_exists import kernel_problem
from .split_k import FORM, FormChoicePass
from .templates.groups import _REDUCE_KINDS, SETUP, GroupPlan, GroupUnsupported, setup_ops

SEPARATE = "two kernels"
JOINED = "setup in the reader's kernel"

_TRANSCENDENTAL = {"ge.sigmoid", "ge.exp", "ge.tanh", "ge.log", "ge.erf", "ge.sqrt", "ge.rsqrt"}


@dataclass(frozen=True)
class SetupGroupsPass(FormChoicePass):
    """Vector groups read whole by one other group computed as its setup where that
    is estimated faster (see the module docstring)."""

    name = "fused-setup-groups"
    target_ops = (fused.GroupOp,)
    whole = SEPARATE

    def targets(self, op: Operation) -> bool:
        return setup_source(op) is not None

    def estimates(self, op: Operation, hw: HardwarePreset, next_kernel: float) -> dict[str, float]:
        source = setup_source(op)
        if source is None:  # an earlier rewrite took its producer
            return {SEPARATE: 0.0}
        producer = source[0]
        forms = {SEPARATE: setup_cycles(producer, hw, on_every_core=False) + phase_boundary_cycles(hw, next_kernel)}
        candidate = joined(op, *source)
        try:
            if kernel_problem(candidate, hw) is None:
                forms[JOINED] = setup_cycles(producer, hw, on_every_core=True)
        finally:
            candidate.erase()
        return forms

    def rewrite(self, op: Operation, verdict: str) -> str:
        source = setup_source(op)
        if verdict != JOINED or source is None:
            op.attributes.pop(FORM, None)  # a pin of this form is honoured: no later pass reads it
            return "groups kept"
        producer, reshapes, read = source
        new = joined(op, producer, reshapes, read)
        new.location = op.location
        op.parent_block().insert_op_before(new, op)
        for value, old in zip(new.results, op.results):
            value.name_hint = old.name_hint
            old.replace_all_uses_with(value)
        for dead in [op, *reversed(reshapes), producer]:
            dead.detach()
            dead.erase()
        return "groups computed as their reader's setup"


def setup_source(group: Operation) -> tuple[fused.GroupOp, list[ge.ReshapeOp], SSAValue] | None:
    """(producer, the reshapes between, the operand read) when an operand of the
    vector group `group` is, through reshapes read by nothing else, the one result
    of another vector group without a setup that nothing else reads."""
    if not _vector_group(group) or setup_ops(group):
        return None
    for read in dict.fromkeys(group.operands):
        if any(use.operation is not group for use in read.uses):
            continue
        value, reshapes = read, []
        while isinstance(value.owner, ge.ReshapeOp) and len(list(value.uses)) == 1:
            reshapes.insert(0, value.owner)
            value = value.owner.operands[0]
        producer = value.owner
        if (
            _vector_group(producer)
            and not setup_ops(producer)
            and len(producer.results) == 1
            and len(list(value.uses)) == 1
            and producer.parent is group.parent
        ):
            return producer, reshapes, read
    return None


def _vector_group(op: Operation) -> bool:
    return isinstance(op, fused.GroupOp) and all(pattern_kind(o) != PatternKind.CUBE for o in op.body_ops())


def joined(group: fused.GroupOp, producer: fused.GroupOp, reshapes: list[ge.ReshapeOp], read: SSAValue) -> fused.GroupOp:
    """A group (not inserted) computing `group`'s results with `producer`'s body
    and the `reshapes` as its setup, reading their inputs instead of `read`."""
    rest = [v for v in group.operands if v is not read]
    inputs = [*producer.operands, *rest]
    block = Block(arg_types=[v.type for v in inputs])
    mapping: dict[SSAValue, SSAValue] = dict(zip(producer.block.args, block.args))
    for op in producer.body_ops():
        block.add_op(op.clone(value_mapper=mapping))
    value = mapping[producer.block.last_op.operands[0]]
    for reshape in reshapes:
        clone = reshape.clone(value_mapper={reshape.operands[0]: value})
        block.add_op(clone)
        value = clone.results[0]
    extra = iter(block.args[len(producer.operands) :])
    for arg, operand in zip(group.block.args, group.operands):
        mapping[arg] = value if operand is read else next(extra)
    for op in group.block.ops:
        block.add_op(op.clone(value_mapper=mapping))
    new = fused.GroupOp(inputs, [r.type for r in group.results], Region(block))
    new.attributes.update({name: a for name, a in group.attributes.items() if name != FORM})
    new.attributes[SETUP] = IntegerAttr(len(producer.body_ops()) + len(reshapes), i64)
    return new


def setup_cycles(group: fused.GroupOp, hw: HardwarePreset, on_every_core: bool) -> float:
    """A vector group's work on the busiest core [EST]: its loads at one core's
    bandwidth and one vector instruction per op over its rows, all its rows
    (`on_every_core`: as a setup) or its share of the cores."""
    try:
        plan = GroupPlan(group)
    except GroupUnsupported:
        return math.inf
    rows = max(1, plan.rows)
    share = rows if on_every_core else math.ceil(rows / hw.core_count)
    itemsize = max(v.element_type.bitwidth // 8 for v in plan.values.values())
    loaded = 0
    for arg in plan.part.args:
        value = plan.values.get(arg)
        if value is not None:
            loaded += (share if value.kind == "full" else 1) * value.width * itemsize
    vector = 0.0
    for op in plan.part.ops:
        values = [plan.values[v] for v in [*op.operands, *op.results] if v in plan.values]
        if not op.results or op.results[0] not in plan.values or isinstance(op, (ge.ReshapeOp, ge.ConstOp)):
            continue
        width = max(v.width for v in values)
        kind = "reduce" if op.name in _REDUCE_KINDS else "transcendental" if op.name in _TRANSCENDENTAL else "binary"
        vector += vector_cycles(hw, kind, share * width * itemsize)
    return loaded / hw.paths["gm_to_ub"].bytes_per_cycle + vector
