"""`ge-materialize-broadcasts`: give an elementwise op whose operands broadcast in a
way its row-tile kernel cannot read (two separate runs of broadcast dims, such
as (2, 1, 3, 8) against (2, 5, 3, 1)) an explicit `ge.expand` of the operands
that do not already have the result's shape.

The vector kernels read operands that are whole rows, one value per row, one
row for all rows, or rows repeating in one pattern (`row_kernel.py`); anything
else would need a gather per row. The expand kernel (data movement) writes the
broadcast operand out in full (one operand at a time, until the elementwise
kernel builds): one more GM round trip, only where nothing better exists.
The decision is the kernel's own: the op's template is built once into a
scratch kernel; ops that build are left alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.passes import ModulePass

from ...core.passes import record_statistic
from ...dialects import ge
from ...dialects.fused import GroupOp
from ...simulator.hardware import load_preset
from .kernel_exists import kernel_problem

_BROADCASTING = tuple(ge.ELEMENTWISE_OPS)


@dataclass(frozen=True)
class MaterializeBroadcastsPass(ModulePass):
    """Expand the operands of elementwise ops whose broadcast no vector kernel reads (see module docstring)."""

    name = "ge-materialize-broadcasts"

    hw: str = "ascend910"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        hw = load_preset(self.hw)
        for candidate in list(op.walk()):
            if not isinstance(candidate, _BROADCASTING) or isinstance(candidate.parent_op(), GroupOp):
                continue  # (inside a group, the group kernel decides)
            result = candidate.results[0].type
            if all(o.type.get_shape() == result.get_shape() for o in candidate.operands):
                continue
            problem = kernel_problem(candidate, hw)
            if problem is None or "broadcast" not in problem:
                continue
            for index, operand in enumerate(candidate.operands):
                shape = tuple(operand.type.get_shape())
                if shape == tuple(result.get_shape()) or _numel(shape) == 1:
                    continue
                target = TensorType(operand.type.element_type, result.get_shape(), operand.type.encoding)
                expand = ge.ExpandOp.new(operand, result_type=target)
                candidate.parent_block().insert_op_before(expand, candidate)
                candidate.operands[index] = expand.results[0]
                record_statistic(self.name, "operands expanded")
                if kernel_problem(candidate, hw) is None:
                    break


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n
