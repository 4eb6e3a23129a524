"""The host plan: `func.func @main` over GM memrefs, launching kernels on streams.

    module attributes {npu.gm_arena_bytes = 65536 : i64} {
      npu.kernel @k(...) attributes {block_dim = 8} { ... }
      func.func @main(%x: memref<1024xf16, #npu.space<gm>> {ge.name = "x"},
                      %y: memref<1024xf16, #npu.space<gm>> {ge.name = "y", npu.output}) {
        %t = npu.gm_buffer {offset = 0} : memref<1024xf16, #npu.space<gm>>
        npu.launch @k(%x, %t) {block_dim = 8, stream = 0}
        npu.record_event {stream = 0, event = 0}
        npu.wait_event {stream = 1, event = 0}
        npu.launch @k(%t, %y) {stream = 1}
        func.return
      }
    }

Constants (weights) live in GM too, outside the arena: `npu.gm_constant` holds
the graph-level value (dense or `#ge.random`) and its logical tensor type, whose
`#ge.format` encoding says how the bytes are laid out (dialects/ge/formats.py);
the host uploads them before the first launch. `npu.gm_view` reinterprets a GM
buffer with another shape (a reshape that moves nothing); it aliases the bytes of
its source, so for every check it IS its source::

    %w = npu.gm_constant {value = #ge.random<normal, seed = 1, mean = 0.0, std = 0.02>,
                          logical = tensor<64x64xf16, #ge.format<FRACTAL_NZ>>} : memref<4x4x16x16xf16, #npu.space<gm>>
    %v = npu.gm_view %t : memref<8x128xf16, #npu.space<gm>>

Arguments are the graph's inputs and outputs in GM, destination-passing:
outputs carry the unit attribute `npu.output` (and `ge.name` like inputs); @main
returns nothing. Intermediates are `npu.gm_buffer`s at byte offsets of one GM
arena whose size the module records as `npu.gm_arena_bytes` (optional: without
it the arena is as large as its furthest buffer). Kernels on one stream run in
launch order; `npu.record_event` marks the point a stream has reached and
`npu.wait_event` makes another stream wait for it (the latest record of that
event before the wait, in host order).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, DictionaryAttr, MemRefType, StringAttr, SymbolRefAttr, TensorType
from xdsl.ir import SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def, var_operand_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from ...core.symbols import lookup_symbol
from ..ge.base import Kind, to_attribute
from ..ge.const import RandomAttr, constant_value
from ..ge.formats import format_of, physical_shape, to_physical, with_format
from .base import OPTIONAL, NpuOp, Space, check_buffer_type, element_count, field, lookup_value, memref
from .instruction import enclosing

ARENA_ATTR = "npu.gm_arena_bytes"
"""Module attribute: the size in bytes of the GM arena holding `npu.gm_buffer`s."""

ARENA_LOWER_BOUND_ATTR = "npu.gm_arena_lower_bound_bytes"
"""Module attribute (set by `npu-plan-gm`): the most arena bytes live at any one time."""

ARENA_NO_REUSE_ATTR = "npu.gm_arena_no_reuse_bytes"
"""Module attribute (set by `npu-plan-gm`): the arena without any reuse (the sum of the buffers)."""

OUTPUT_ATTR = "npu.output"
"""@main argument attribute (unit): this GM argument is an output."""


def require_in_host(op: NpuOp) -> None:
    if enclosing(op, "func.func") is None or enclosing(op, "npu.kernel") is not None:
        raise VerifyException("belongs to the host plan (a func.func), not to a kernel")


@irdl_op_definition
class GmBufferOp(NpuOp):
    """An intermediate GM buffer at a byte offset of the module's GM arena."""

    name = "npu.gm_buffer"

    result = result_def(MemRefType)

    offset = field(Kind.INT, OPTIONAL)

    def check(self, a: SimpleNamespace) -> None:
        require_in_host(self)
        check_buffer_type(self.result.type, "the result", [Space.GM])
        if a.offset is not None and a.offset < 0:
            raise VerifyException(f"offset must be >= 0, got {a.offset}")


@irdl_op_definition
class GmConstantOp(NpuOp):
    """A constant in GM: the graph-level `value` of type `logical`, stored in the
    physical layout of `logical`'s format (the memref has the physical shape)."""

    name = "npu.gm_constant"

    value = prop_def(DenseIntOrFPElementsAttr | RandomAttr)
    logical = prop_def(TensorType)
    result = result_def(MemRefType)

    @classmethod
    def of(cls, value, logical: TensorType) -> "GmConstantOp":
        fmt = format_of(logical)
        shape = physical_shape(logical.get_shape(), fmt, logical.element_type)
        result = memref(shape, logical.element_type, Space.GM)
        return cls.build(properties={"value": value, "logical": logical}, result_types=[result])

    def check(self, a: SimpleNamespace) -> None:
        require_in_host(self)
        t = check_buffer_type(self.result.type, "the result", [Space.GM])
        logical = self.logical
        if logical.element_type != t.element_type:
            raise VerifyException(f"element type {t.element_type} differs from the value's {logical.element_type}")
        expected = tuple(physical_shape(logical.get_shape(), format_of(logical), logical.element_type))
        if tuple(t.get_shape()) != expected:
            raise VerifyException(
                f"result shape {list(t.get_shape())} is not the physical shape {list(expected)} of {logical}"
            )
        if isinstance(self.value, DenseIntOrFPElementsAttr) and tuple(self.value.type.get_shape()) != tuple(
            logical.get_shape()
        ):
            raise VerifyException(f"value of type {self.value.type} does not match {logical}")

    def physical_data(self) -> np.ndarray:
        """The bytes the host uploads: the value in its physical layout."""
        logical = self.logical
        values = constant_value(self.value, with_format(logical, "ND"))
        return to_physical(np.asarray(values), format_of(logical), logical.element_type)

    @classmethod
    def parse(cls, parser: Parser) -> "GmConstantOp":
        pos = parser.pos
        written = parser.parse_optional_attr_dict()
        properties = {}
        for key, kind in (("value", (DenseIntOrFPElementsAttr, RandomAttr)), ("logical", TensorType)):
            if not isinstance(written.get(key), kind):
                parser.raise_error(f"npu.gm_constant needs '{key}' in its attribute dictionary", pos, pos)
            properties[key] = written[key]
        parser.parse_punctuation(":")
        return cls.build(properties=properties, result_types=[parser.parse_type()])

    def print(self, printer: Printer) -> None:
        printer.print_string(" {value = ")
        printer.print_attribute(self.value)
        printer.print_string(", logical = ")
        printer.print_attribute(self.logical)
        printer.print_string("} : ")
        printer.print_attribute(self.result.type)


@irdl_op_definition
class GmViewOp(NpuOp):
    """`source`'s bytes seen with another shape (same element type and count)."""

    name = "npu.gm_view"

    source = operand_def(MemRefType)
    result = result_def(MemRefType)

    @classmethod
    def of(cls, source: SSAValue, shape) -> "GmViewOp":
        t = source.type
        return cls.build(operands=[source], result_types=[memref(shape, t.element_type, Space.GM)])

    def check(self, a: SimpleNamespace) -> None:
        require_in_host(self)
        src = check_buffer_type(self.source.type, "the source", [Space.GM])
        dst = check_buffer_type(self.result.type, "the result", [Space.GM])
        if src.element_type != dst.element_type or element_count(src) != element_count(dst):
            raise VerifyException(f"cannot view {src} as {dst}: element type and count must agree")


WRITES_ATTR = "npu.writes"
"""Dictionary on an `npu.launch`: argument position -> the name of the graph
value the kernel writes there (`{"2" = "h_bias_nz"}`). Buffer names may be those
of other values once GM is reused; this says what each write holds
(`ge-sim --compare-each` compares it with the reference value of that name)."""


@irdl_op_definition
class LaunchOp(NpuOp):
    """Runs `@callee` on `block_dim` cores (default: the kernel's) on `stream`."""

    name = "npu.launch"

    callee = prop_def(SymbolRefAttr)
    args = var_operand_def(MemRefType)

    block_dim = field(Kind.INT, OPTIONAL)
    stream = field(Kind.INT, 0)

    @classmethod
    def calling(cls, callee: str, args, block_dim: int | None = None, stream: int = 0) -> "LaunchOp":
        """`npu.launch @callee(args...)`, built from Python values."""
        properties = {"callee": SymbolRefAttr(callee), "stream": to_attribute(Kind.INT, stream)}
        if block_dim is not None:
            properties["block_dim"] = to_attribute(Kind.INT, block_dim)
        return cls.build(operands=[[SSAValue.get(a) for a in args]], properties=properties)

    def kernel_op(self):
        return lookup_symbol(self, self.callee)  # not a scan per launch (core/symbols.py)

    def written_values(self) -> dict[int, str]:
        """`npu.writes`: argument position -> name of the value written there."""
        writes = self.attributes.get(WRITES_ATTR)
        if not isinstance(writes, DictionaryAttr):
            return {}
        return {int(k): v.data for k, v in writes.data.items() if isinstance(v, StringAttr)}

    def record_writes(self, names: dict[int, str]) -> None:
        if names:
            self.attributes[WRITES_ATTR] = DictionaryAttr({str(i): StringAttr(n) for i, n in sorted(names.items())})

    def check(self, a: SimpleNamespace) -> None:
        require_in_host(self)
        if a.stream < 0:
            raise VerifyException(f"stream must be >= 0, got {a.stream}")
        if a.block_dim is not None and a.block_dim < 1:
            raise VerifyException(f"block_dim must be >= 1, got {a.block_dim}")
        kernel = self.kernel_op()
        if kernel is None or kernel.name != "npu.kernel":
            raise VerifyException(f"{self.callee} is not an npu.kernel of this module")
        params = [arg.type for arg in kernel.entry.args]
        given = [v.type for v in self.args]
        if len(params) != len(given):
            raise VerifyException(f"@{kernel.sym_name.data} takes {len(params)} arguments, got {len(given)}")
        for i, (want, got) in enumerate(zip(params, given)):
            if want != got:
                raise VerifyException(f"argument #{i} is {got}, @{kernel.sym_name.data} expects {want}")

    @classmethod
    def parse(cls, parser: Parser) -> "LaunchOp":
        callee = parser.parse_symbol_name()

        def operand():
            value = lookup_value(parser)
            if value is None:
                parser.raise_error("expected a GM buffer operand")
            return value

        args = parser.parse_comma_separated_list(parser.Delimiter.PAREN, operand)
        pos = parser.pos
        properties, attributes = cls._split_written(parser, parser.parse_optional_attr_dict(), pos)
        properties["callee"] = SymbolRefAttr(callee)
        return cls.build(operands=[args], properties=properties, attributes=attributes)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_attribute(self.callee)
        printer.print_string("(")
        printer.print_list(self.args, printer.print_operand)
        printer.print_string(")")
        self._print_attributes(printer)


class EventOp(NpuOp):
    stream = field(Kind.INT, 0)
    event = field(Kind.INT)

    def check(self, a: SimpleNamespace) -> None:
        require_in_host(self)
        if a.stream < 0 or a.event < 0:
            raise VerifyException(f"stream and event must be >= 0, got {a.stream} and {a.event}")


@irdl_op_definition
class RecordEventOp(EventOp):
    """Marks the point `stream` has reached (all its launches so far)."""

    name = "npu.record_event"


@irdl_op_definition
class WaitEventOp(EventOp):
    """`stream` waits until the latest earlier record of `event` is reached."""

    name = "npu.wait_event"


HOST_OPS = (GmBufferOp, GmConstantOp, GmViewOp, LaunchOp, RecordEventOp, WaitEventOp)
