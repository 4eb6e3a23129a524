"""Kernels and what they are made of besides instructions.

    npu.kernel @vadd(%x: memref<65536xf16, #npu.space<gm>>, ...) attributes {block_dim = 8} {
      %b = npu.block_idx : index
      %n = npu.block_dim : index
      %xa = npu.alloc {offset = 0} : memref<4096xf16, #npu.space<ub>>
      ...
    }

A kernel runs once per core (block) of a launch; its arguments are GM memrefs,
`block_dim` is the number of blocks it is written for (the default of a launch).
`npu.block_idx` / `npu.block_dim` give the block's index and the launch's block
count. `npu.alloc` places a local buffer at a byte `offset` in its space (l1,
l0a, l0b, l0c, ub); the offset is optional in the IR because a later pass plans
it, but the simulator needs it. Loops are `scf.for` over `index` values with
`arith` index math; `scf.if` / `scf.yield` as usual. An `scf.for` marked
`{npu.pipelined}` already alternates its buffers from iteration to iteration
(written software-pipelined): `npu-double-buffer` leaves it alone.
"""

from __future__ import annotations

from types import SimpleNamespace

from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, IndexType, MemRefType, StringAttr
from xdsl.dialects.utils import parse_func_op_like
from xdsl.ir import Block, Region
from xdsl.irdl import (
    irdl_op_definition,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import IsolatedFromAbove, IsTerminator, Pure, SymbolOpInterface
from xdsl.utils.exceptions import VerifyException

from ..ge.base import Kind, to_attribute
from .base import OPTIONAL, NpuOp, Space, check_buffer_type, field, space_of
from .instruction import require_in_kernel

LOCAL_SPACES = (Space.L1, Space.L0A, Space.L0B, Space.L0C, Space.UB)

PIPELINED_ATTR = "npu.pipelined"
"""Unit attribute of an `scf.for` whose buffers already alternate between copies."""

PHASES_ATTR = "npu.phases"
"""Array of strings on a kernel split by `npu.sync_all`: its phases' names (the
kernels `npu-merge-launches` joined), which reports show."""


SOURCES_ATTR = "npu.sources"
"""Array of strings on a kernel: the op each of its phases (or the kernel, if it
has one phase) was lowered from (`fused.matmul_bias_act`, `ge.relu`,
`fused.group<mul,sigmoid,mul>`); profiles (`ge-prof`) group kernels by it."""


@irdl_op_definition
class ReturnOp(NpuOp):
    """The end of a kernel body (implicit in the textual form)."""

    name = "npu.return"
    traits = traits_def(IsTerminator())


@irdl_op_definition
class KernelOp(NpuOp):
    name = "npu.kernel"

    sym_name = prop_def(StringAttr)
    arg_attrs = opt_prop_def(ArrayAttr[DictionaryAttr])
    body = region_def("single_block")

    block_dim = field(Kind.INT)

    traits = traits_def(SymbolOpInterface(), IsolatedFromAbove())

    @staticmethod
    def empty(name: str, arg_types, block_dim: int) -> "KernelOp":
        """An empty kernel (body: the arguments and `npu.return`)."""
        block = Block(arg_types=list(arg_types))
        block.add_op(ReturnOp.new())
        return KernelOp.build(
            properties={"sym_name": StringAttr(name), "block_dim": to_attribute(Kind.INT, block_dim)},
            regions=[Region(block)],
        )

    @property
    def entry(self) -> Block:
        return self.body.block

    def phase_names(self) -> list[str]:
        """The names recorded in `npu.phases` (none if not recorded)."""
        names = self.attributes.get(PHASES_ATTR)
        if not isinstance(names, ArrayAttr):
            return []
        return [n.data for n in names.data if isinstance(n, StringAttr)]

    def sources(self) -> list[str]:
        """The op types recorded in `npu.sources` (none if not recorded)."""
        names = self.attributes.get(SOURCES_ATTR)
        if not isinstance(names, ArrayAttr):
            return []
        return [n.data for n in names.data if isinstance(n, StringAttr)]

    def check(self, a: SimpleNamespace) -> None:
        if a.block_dim < 1:
            raise VerifyException(f"block_dim must be >= 1, got {a.block_dim}")
        for i, arg in enumerate(self.entry.args):
            if space_of(arg.type) != Space.GM:
                raise VerifyException(f"argument #{i} must be a memref in gm, got {arg.type}")
        last = self.entry.last_op
        if not isinstance(last, ReturnOp):
            raise VerifyException("the body must end with npu.return")

    @classmethod
    def parse(cls, parser: Parser) -> "KernelOp":
        pos = parser.pos
        name, _inputs, outputs, region, extra, arg_attrs, _ = parse_func_op_like(
            parser, reserved_attr_names=("sym_name", "arg_attrs")
        )
        if outputs:
            parser.raise_error("an npu.kernel returns nothing (results go to GM arguments)", pos, parser.pos)
        properties, attributes = cls._split_written(parser, dict(extra.data) if extra else {}, pos)
        properties["sym_name"] = StringAttr(name)
        if arg_attrs is not None:
            properties["arg_attrs"] = arg_attrs
        block = region.block
        if block.last_op is None or not isinstance(block.last_op, ReturnOp):
            block.add_op(ReturnOp.new())
        return cls.build(properties=properties, attributes=attributes, regions=[region])

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        printer.print_string("(")
        attrs = self.arg_attrs.data if self.arg_attrs is not None else [None] * len(self.entry.args)
        for i, (arg, arg_attr) in enumerate(zip(self.entry.args, attrs)):
            if i:
                printer.print_string(", ")
            printer.print_block_argument(arg)
            if arg_attr is not None and arg_attr.data:
                printer.print_string(" ")
                printer.print_attr_dict(arg_attr.data)
        printer.print_string(")")
        printer.print_string(" attributes")
        self._print_attributes(printer)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_block_terminators=False)


@irdl_op_definition
class AllocOp(NpuOp):
    """A local buffer at a byte offset of its space (l1, l0a, l0b, l0c, ub)."""

    name = "npu.alloc"

    result = result_def(MemRefType)

    offset = field(Kind.INT, OPTIONAL)

    def check(self, a: SimpleNamespace) -> None:
        require_in_kernel(self)
        check_buffer_type(self.result.type, "the result", LOCAL_SPACES)
        if a.offset is not None and a.offset < 0:
            raise VerifyException(f"offset must be >= 0, got {a.offset}")


class BlockIdOp(NpuOp):
    result = result_def(IndexType)

    traits = traits_def(Pure())

    @classmethod
    def default_result_type(cls):
        return IndexType()

    def check(self, a: SimpleNamespace) -> None:
        require_in_kernel(self)


@irdl_op_definition
class BlockIdxOp(BlockIdOp):
    """This block's index in [0, block_dim)."""

    name = "npu.block_idx"


@irdl_op_definition
class BlockDimOp(BlockIdOp):
    """The launch's number of blocks."""

    name = "npu.block_dim"


STRUCTURE_OPS = (KernelOp, ReturnOp, AllocOp, BlockIdxOp, BlockDimOp)
