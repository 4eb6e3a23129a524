"""A vector group's result converted to NC1HWC0 by the group's own kernel.

`fused-stage-conv-input` converts a convolution's NCHW input to NC1HWC0 with a
`ge.transdata` where reading NC1HWC0 is estimated faster. When that input is
the result of a vector `fused.group` read by nothing else (a
squeeze-and-excitation block's scaling, whose rows are the channels), the
conversion can go inside the group: its kernel then writes the NC1HWC0 image
itself (`channel_rows.py`: each tile's channel blocks transposed in UB before
the store), and the conversion is no kernel, no phase and no barrier, and no
second pass over the value.

The conversion is not free: the group's tiles become whole channel blocks (fewer
cores for a few channels of many pixels) and each block is transposed;
`conversion_cycles` estimates that [EST], and `fused-stage-conv-input` counts
it in place of the `ge.transdata` kernel and its phase.

Whether it can is the group template's own answer (`kernel_problem` of the
group with the conversion inside, built by `group_converting`): the one
predicate the form's estimate (`converts_itself`) and the rewrite
(`fold_conversion`) share, never a fallback after the lowering fails.
"""

from __future__ import annotations

import math
from collections.abc import Collection

from xdsl.ir import Operation, SSAValue

from ...dialects import fused, ge
from ...dialects.fused.kinds import PatternKind, pattern_kind
from ...dialects.ge.formats import Format, format_of, with_format
from ...simulator.hardware import HardwarePreset
from ...simulator.npu.costs import vector_cycles
from .kernel_exists import kernel_problem
from .templates.groups import GroupPlan


def producing_group(x: SSAValue, readers: Collection[Operation]) -> fused.GroupOp | None:
    """The vector group (no cube op) computing the ND value `x`, when only `readers` read `x`."""
    group = x.owner
    if not isinstance(group, fused.GroupOp) or format_of(x.type) != Format.ND:
        return None
    if any(use.operation not in readers for use in x.uses):
        return None
    if any(pattern_kind(op) == PatternKind.CUBE for op in group.body_ops()):
        return None
    return group


def group_converting(group: fused.GroupOp, x: SSAValue) -> fused.GroupOp:
    """A copy of `group` (not inserted) whose result `x` is converted to NC1HWC0
    inside its body, just before the yield."""
    index = list(group.results).index(x)
    body = group.body.clone()
    terminator = body.block.last_op
    value = terminator.operands[index]
    result_type = with_format(x.type, Format.NC1HWC0)
    change = ge.TransDataOp.new(value, src_format=Format.ND.value, dst_format=Format.NC1HWC0.value,
                                result_type=result_type)
    body.block.insert_op_before(change, terminator)
    terminator.operands[index] = change.result
    types = [r.type for r in group.results]
    types[index] = result_type
    converted = fused.GroupOp(list(group.operands), types, body)
    converted.attributes.update(group.attributes)
    return converted


def converts_itself(x: SSAValue, readers: Collection[Operation], hw: HardwarePreset) -> bool:
    """Whether the group computing `x` (read only by `readers`) can write it in
    NC1HWC0 itself: its kernel with the conversion inside exists."""
    group = producing_group(x, readers)
    if group is None:
        return False
    candidate = group_converting(group, x)
    try:
        return kernel_problem(candidate, hw) is None
    finally:
        candidate.erase()


def fold_conversion(change: ge.TransDataOp, hw: HardwarePreset) -> bool:
    """Move the ND -> NC1HWC0 `change` into the group computing its input when
    `converts_itself`; whether it did."""
    x = change.operands[0]
    if format_of(change.result.type) != Format.NC1HWC0 or not converts_itself(x, [change], hw):
        return False
    group = producing_group(x, [change])
    converted = group_converting(group, x)
    index = list(group.results).index(x)
    values = list(converted.results)
    for new, old in zip(values, group.results):
        new.name_hint = old.name_hint
    values[index].name_hint = change.result.name_hint or x.name_hint
    change.result.replace_all_uses_with(values[index])
    change.detach()
    change.erase()
    converted.location = group.location
    group.parent_block().insert_op_before(converted, group)
    for new, old in zip(values, group.results):
        old.replace_all_uses_with(new)
    group.detach()
    group.erase()
    return True


def conversion_cycles(x: SSAValue, hw: HardwarePreset) -> float:
    """What writing the group result `x` (N, C, H, W) in NC1HWC0 adds to its kernel
    [EST]: the typical core's extra rows (tiles of whole C0-channel blocks, or whole
    images when C is no multiple of C0, instead of an even share of the N*C rows),
    each costing the group's vector passes over its values' widths and its
    per-row GM traffic, and its blocks' transposes (and zeroing the padding
    channels)."""
    group = x.owner
    n, c, h, w = x.type.get_shape()
    itemsize = x.type.element_type.bitwidth // 8
    c0 = 32 // itemsize
    cores = hw.core_count
    if c % c0:
        images = math.ceil(n / cores)
        extra_rows = images * c - math.ceil(n * c / cores)
        blocks = images * math.ceil(c / c0)
        zeroing = vector_cycles(hw, "data_movement", blocks * c0 * h * w * itemsize)
    else:
        blocks = math.ceil(n * c // c0 / cores)
        extra_rows = blocks * c0 - math.ceil(n * c / cores)
        zeroing = 0
    plan = GroupPlan(group)
    widths = [max(plan.values[v].width for v in [*op.operands, *op.results] if v in plan.values)
              for op in group.body_ops() if any(v in plan.values for v in op.results)]
    read = sum(plan.values[a].width for a in group.block.args if a in plan.values and plan.values[a].kind == "full")
    per_row = (
        sum(widths) * itemsize / hw.vector_repeat_bytes * hw.vector_costs["binary"].slope
        + read * itemsize / hw.paths["gm_to_ub"].bytes_per_cycle
        + h * w * itemsize / hw.paths["ub_to_gm"].bytes_per_cycle
    )
    transposes = blocks * vector_cycles(hw, "data_movement", c0 * h * w * itemsize)
    return max(0, extra_rows) * per_row + transposes + zeroing
