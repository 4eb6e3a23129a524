"""`fused-ungroup`: put the ops of a `fused.group` that no kernel can run as one
kernel back into the graph, so each gets its own kernel.

Automatic fusion forms groups from what the graph allows (elementwise,
broadcast, injective, reduce ops and one cube op); the group kernels run a
large and growing subset of those bodies (`templates/groups.py`, the cube
kernels for groups with a cube op). For any other group, e.g. one gathering
rows or converting a format inside, this pass trades the fusion benefit for a
correct program: the body's ops are moved in front of the group, its block
arguments replaced by the group's operands and its results by the yielded
values. The decision is made by compiling the group's kernel once (into a
scratch kernel that is thrown away); `debug=true` prints why a group was split.
`--pass-statistics` counts the groups kept and split.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from ...core.passes import record_statistic
from ...dialects.fused import GroupOp
from ...simulator.hardware import load_preset
from .kernel_exists import kernel_problem


@dataclass(frozen=True)
class UngroupPass(ModulePass):
    """Inline every fused.group whose kernel cannot be built (see module docstring)."""

    name = "fused-ungroup"

    hw: str = "ascend910"
    debug: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        hw = load_preset(self.hw)
        for group in [o for o in op.walk() if isinstance(o, GroupOp)]:
            reason = kernel_problem(group, hw)
            if reason is None:
                record_statistic(self.name, "groups kept")
                continue
            if self.debug:
                print(f"[{self.name}] splitting the group at {group.location}: {reason}", file=sys.stderr)
            inline_group(group)
            record_statistic(self.name, "groups split")


def inline_group(group: GroupOp) -> None:
    """Replace `group` by the ops of its body (in order, before where it was)."""
    block = group.body.block
    for arg, operand in zip(block.args, group.operands):
        arg.replace_all_uses_with(operand)
    terminator = block.last_op
    for result, value in zip(group.results, terminator.operands):
        result.replace_all_uses_with(value)
    for body_op in [o for o in block.ops if o is not terminator]:
        body_op.detach()
        group.parent_block().insert_op_before(body_op, group)
    group.detach()
    group.erase()
