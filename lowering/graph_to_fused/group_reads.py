"""`ge-group-read-through`: a cube group reads an ND operand and converts it on load.

Layout puts a `ge.transdata` ND -> FRACTAL_NZ in front of every matmul operand;
a named fused op then reads the ND value itself (`pattern.py`: the MTE moves ND
into the fractal layout as it copies, so the conversion costs no kernel). A
`fused.group` made by automatic fusion kept its operands as they were, so the
conversion stayed a kernel of its own: one more launch, or one more phase of a
merged kernel with its barrier and its fill (`examples/mmoe.mlir`: the features'
conversion in front of the grouped experts, 1,560 cycles).

Here a group whose cube op reads a group operand that only a format change
feeds, and that nothing else reads, takes the change's source instead, the
change moving into its body in front of the cube op (the cube-group template
loads through it, `templates/cube_group.py`). It is kept only where the group
still has a kernel (`kernel_exists.kernel_problem`, the lowering's own
predicate); the change left without users is erased.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from ...core.passes import record_statistic
from ...dialects import fused, ge
from ...dialects.fused.kinds import PatternKind, pattern_kind
from ...simulator.hardware import DEFAULT_PRESET, load_preset
from ..fused_to_npu.kernel_exists import kernel_problem
from .graph import is_format_change, sole_user


def _cube_op(group: fused.GroupOp) -> Operation | None:
    cubes = [o for o in group.body_ops() if pattern_kind(o) == PatternKind.CUBE]
    return cubes[0] if len(cubes) == 1 else None


def _convertible_inputs(group: fused.GroupOp) -> list[int]:
    """Indices of the group operands its cube op alone reads, each the result of a
    format change used by this group alone."""
    cube = _cube_op(group)
    if cube is None:
        return []
    found = []
    for i, (outer, arg) in enumerate(zip(group.operands, group.block.args)):
        change = outer.owner
        if not (isinstance(change, Operation) and is_format_change(change)):
            continue
        if sole_user(outer) is not group or {u.operation for u in arg.uses} != {cube}:
            continue
        found.append(i)
    return found


def _reading_through(group: fused.GroupOp, index: int) -> fused.GroupOp:
    """A copy of `group` reading operand `index` before its format change, which
    moves into the copy's body (the original is left as it is)."""
    copy = group.clone()
    change = group.operands[index].owner
    block = copy.block
    old = block.args[index]
    new = block.insert_arg(change.operands[0].type, index)
    inner = ge.TransDataOp.new(new, **{k: str(change.attr_value(k)) for k in ("src_format", "dst_format")})
    block.insert_op_before(inner, block.first_op)
    old.replace_all_uses_with(inner.results[0])
    block.erase_arg(old)
    copy.operands = [*copy.operands[:index], change.operands[0], *copy.operands[index + 1 :]]
    return copy


def read_through(group: fused.GroupOp, hw) -> int:
    """Rewrites `group` (in its block) to read what it can before its format
    changes; returns how many operands it now reads so."""
    done = 0
    for index in _convertible_inputs(group):
        candidate = _reading_through(group, index)
        if kernel_problem(candidate, hw) is not None:
            candidate.erase()
            continue
        change = group.operands[index].owner
        group.parent.insert_op_before(candidate, group)
        for old, new in zip(group.results, candidate.results):
            old.replace_all_uses_with(new)
        group.detach()
        group.erase()
        if not change.results[0].uses:
            change.detach()
            change.erase()
        group = candidate
        done += 1
    return done


@dataclass(frozen=True)
class GroupReadThroughPass(ModulePass):
    """Cube groups read ND operands and convert them on load (module docstring)."""

    name = "ge-group-read-through"

    hw: str = DEFAULT_PRESET

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        hw = load_preset(self.hw)
        done = 0
        for f in op.walk():
            if not isinstance(f, func.FuncOp):
                continue
            for g in [o for o in f.body.block.ops if isinstance(o, fused.GroupOp)]:
                done += read_through(g, hw)
        record_statistic(self, "operands read before their format change", done)
