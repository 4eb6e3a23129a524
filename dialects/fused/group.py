"""`fused.group`: a region of `ge` ops that runs as one kernel.

Automatic fusion makes these. The region is isolated from above: its block
arguments are the group's operands (the values the kernel reads from global
memory), and `fused.yield` names the values it writes back. Splat constants may
live inside (they become immediates). Its reference semantics are its body's,
evaluated op by op with the interpreter's own loop, so a group computes exactly
what the ops it holds computed before fusion::

    %r = fused.group %x, %b : (tensor<128x64xf16>, tensor<64xf16>) -> tensor<128x64xf16> {
    ^bb0(%a: tensor<128x64xf16>, %c: tensor<64xf16>):
      %0 = ge.add %a, %c : (tensor<128x64xf16>, tensor<64xf16>) -> tensor<128x64xf16>
      %1 = ge.relu %0 : (tensor<128x64xf16>) -> tensor<128x64xf16>
      fused.yield %1 : tensor<128x64xf16>
    }

An integer attribute `setup = N` (set by `fused-setup-groups`) says the first N
body ops are computed once per core before the kernel's rows (the NPU template,
`lowering/fused_to_npu/templates/groups.py`); it changes nothing of the semantics.

The verifier checks the structure and the one-kernel rule: `ge` ops only (no
opaque ones), and at most one cube op (a cube op with its epilogue).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    region_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import HasParent, IsolatedFromAbove, IsTerminator, Pure
from xdsl.utils.exceptions import VerifyException

from ..evaluation import evaluate_block
from .kinds import PatternKind, pattern_kind


@irdl_op_definition
class GroupOp(IRDLOperation):
    """A kernel made of `ge` ops (see the module docstring)."""

    name = "fused.group"
    inputs = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    body = region_def("single_block")
    traits = traits_def(IsolatedFromAbove(), Pure())

    def __init__(self, inputs: Sequence[SSAValue], result_types: Sequence[TensorType], body: Region):
        super().__init__(operands=[list(inputs)], result_types=[list(result_types)], regions=[body])

    @property
    def block(self) -> Block:
        return self.body.block

    def body_ops(self) -> list[Operation]:
        """The ops of the kernel, without the terminator."""
        return [op for op in self.block.ops if not isinstance(op, YieldOp)]

    # ---- verification -------------------------------------------------------------------

    def verify_(self) -> None:
        block = self.body.block
        arg_types = [a.type for a in block.args]
        if arg_types != [v.type for v in self.inputs]:
            raise VerifyException("body arguments must have the types of the group's operands")
        terminator = block.last_op
        if not isinstance(terminator, YieldOp):
            raise VerifyException("body must end with fused.yield")
        if [v.type for v in terminator.values] != [r.type for r in self.results]:
            raise VerifyException("fused.yield operand types must be the group's result types")
        cube_ops = []
        for op in self.body_ops():
            if not op.name.startswith("ge."):
                raise VerifyException(f"body may hold ge ops only, found '{op.name}'")
            if op.name == "ge.const":
                continue
            kind = pattern_kind(op)
            if kind == PatternKind.OPAQUE:
                raise VerifyException(f"'{op.name}' cannot be part of a fused kernel")
            if kind == PatternKind.CUBE:
                cube_ops.append(op)
        if len(cube_ops) > 1:
            raise VerifyException(f"a group holds at most one cube op, found {len(cube_ops)}")

    # ---- reference semantics --------------------------------------------------------------

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        return evaluate_block(self.body.block, list(inputs))

    # ---- textual form ------------------------------------------------------------------

    @classmethod
    def parse(cls, parser: Parser) -> GroupOp:
        operands = []
        if (first := parser.parse_optional_unresolved_operand()) is not None:
            operands.append(first)
            while parser.parse_optional_punctuation(",") is not None:
                operands.append(parser.parse_unresolved_operand())
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        function_type = parser.parse_function_type()
        inputs = function_type.inputs.data
        if len(inputs) != len(operands):
            parser.raise_error(f"fused.group has {len(operands)} operands but its type lists {len(inputs)}")
        values = parser.resolve_operands(operands, inputs, parser.pos)
        region = parser.parse_region()
        op = cls(values, function_type.outputs.data, region)
        op.attributes.update(attributes)
        return op

    def print(self, printer: Printer) -> None:
        if self.inputs:
            printer.print_string(" ")
            printer.print_list(self.inputs, printer.print_operand)
        if self.attributes:
            printer.print_string(" ")
            printer.print_attr_dict(self.attributes)
        printer.print_string(" : ")
        printer.print_function_type([v.type for v in self.inputs], [r.type for r in self.results])
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=True)


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Ends a `fused.group` body: the values the group returns."""

    name = "fused.yield"
    values = var_operand_def(TensorType)
    traits = traits_def(IsTerminator(), HasParent(GroupOp), Pure())
    assembly_format = "($values^ `:` type($values))? attr-dict"

    def __init__(self, *values: SSAValue | Operation):
        super().__init__(operands=[[SSAValue.get(v) for v in values]])


GROUP_OPS = (GroupOp, YieldOp)
