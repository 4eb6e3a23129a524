"""`KernelBuilder`: writing an `npu.kernel` from Python without drowning in SSA.

Kernel templates describe loops over tiles. Offsets are mostly compile-time
numbers with a loop variable or the block index mixed in, so index arithmetic
here takes `Index = int | SSAValue` and folds whatever is constant: `b.mul(i,
1024)` emits an `arith.muli` only when `i` is a loop variable, and `b.add(4, 8)`
is just 12. Constants are hoisted to the kernel entry and shared.

Instructions are emitted in program order at the current insertion point;
`loop` and `when` are context managers that open an `scf.for` / `scf.if` body::

    b = KernelBuilder("k0_add", [x.type, y.type, z.type])
    x, y, z = b.params
    tile = b.alloc([1024], f16, "ub")
    with b.loop(0, 8) as i:
        off = b.mul(i, 1024)
        b.emit(npu.CopyOp, x, off, tile, 0, cols=1024)
    kernel = b.finish(block_dim=8)
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType, UnitAttr
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from ...dialects import npu
from ...dialects.ge.base import Kind, to_attribute

Index = int | SSAValue
"""A compile-time number or an `index` SSA value."""


class KernelBuilder:
    def __init__(self, name: str, param_types: Sequence[Attribute], block_dim: int = 1):
        self.kernel = npu.KernelOp.empty(name, param_types, block_dim)
        self.params: list[SSAValue] = list(self.kernel.entry.args)
        self._entry = self.kernel.entry
        # Instructions go before `_anchor` in `_block`; constants before the first
        # non-constant op of the entry block.
        self._block: Block = self._entry
        self._anchor: Operation | None = self._entry.last_op
        self._constants: dict[int, SSAValue] = {}
        self._block_idx: SSAValue | None = None
        self._discarding = 0  # depth of `_discarded` emission (code that never runs)

    # ---- values -----------------------------------------------------------------------

    def index(self, value: Index) -> SSAValue:
        """`value` as an SSA index (constants hoisted to the entry and shared)."""
        if isinstance(value, SSAValue):
            return value
        if value not in self._constants:
            const = arith.ConstantOp(IntegerAttr(int(value), IndexType()))
            const.result.name_hint = f"c{value}" if value >= 0 else f"cm{-value}"
            self._entry.insert_op_before(const, self._entry.first_op)
            self._constants[value] = const.result
        return self._constants[value]

    def block_idx(self) -> SSAValue:
        if self._block_idx is None:
            op = npu.BlockIdxOp.new()
            op.result.name_hint = "block"
            first = next((o for o in self._entry.ops if not isinstance(o, arith.ConstantOp)), None)
            self._entry.insert_op_before(op, first)
            self._block_idx = op.result
        return self._block_idx

    def _arith(self, cls: type, a: Index, b: Index) -> SSAValue:
        return self._insert(cls(self.index(a), self.index(b))).result

    def add(self, a: Index, b: Index) -> Index:
        if isinstance(a, int) and isinstance(b, int):
            return a + b
        if b == 0:
            return a
        if a == 0:
            return b
        return self._arith(arith.AddiOp, a, b)

    def sub(self, a: Index, b: Index) -> Index:
        if isinstance(a, int) and isinstance(b, int):
            return a - b
        if b == 0:
            return a
        return self._arith(arith.SubiOp, a, b)

    def mul(self, a: Index, b: Index) -> Index:
        if isinstance(a, int) and isinstance(b, int):
            return a * b
        if a == 0 or b == 0:
            return 0
        if b == 1:
            return a
        if a == 1:
            return b
        return self._arith(arith.MuliOp, a, b)

    def floordiv(self, a: Index, b: int) -> Index:
        if isinstance(a, int):
            return a // b
        return a if b == 1 else self._arith(arith.FloorDivSIOp, a, b)

    def rem(self, a: Index, b: int) -> Index:
        if isinstance(a, int):
            return a % b
        return 0 if b == 1 else self._arith(arith.RemSIOp, a, b)

    def min(self, a: Index, b: Index) -> Index:
        if isinstance(a, int) and isinstance(b, int):
            return min(a, b)
        return self._arith(arith.MinSIOp, a, b)

    def max(self, a: Index, b: Index) -> Index:
        if isinstance(a, int) and isinstance(b, int):
            return max(a, b)
        return self._arith(arith.MaxSIOp, a, b)

    def affine(self, base: Index, *terms: tuple[Index, int]) -> Index:
        """`base + sum(value * coefficient)`, folded."""
        total = base
        for value, coefficient in terms:
            total = self.add(total, self.mul(value, coefficient))
        return total

    def equals(self, a: Index, b: Index) -> SSAValue:
        return self._insert(arith.CmpiOp(self.index(a), self.index(b), "eq")).result

    def less_than(self, a: Index, b: Index) -> SSAValue:
        return self._insert(arith.CmpiOp(self.index(a), self.index(b), "slt")).result

    # ---- buffers and instructions ------------------------------------------------------

    def alloc(self, shape: Sequence[int], element_type: Attribute, space: str, name: str | None = None) -> SSAValue:
        """A local buffer (its offset is planned later by npu-plan-local-memory)."""
        op = npu.AllocOp.new(result_type=npu.memref(list(shape), element_type, space))
        if name:
            op.result.name_hint = name
        self._entry.insert_op_before(op, self._after_allocs())
        return op.result

    def _after_allocs(self) -> Operation | None:
        """The entry block's first op after its constants and allocations."""
        return next(
            (o for o in self._entry.ops if not isinstance(o, arith.ConstantOp | npu.BlockIdxOp | npu.AllocOp)),
            None,
        )

    def emit(self, cls: type[npu.NpuOp], *operands: Index | SSAValue, result_type: Attribute | None = None, **attrs: Any):
        """One npu op; integer operands become index constants (offsets)."""
        values = [o if isinstance(o, SSAValue) else self.index(o) for o in operands]
        return self._insert(cls.new(*values, result_type=result_type, **attrs))

    def _insert(self, op: Operation) -> Operation:
        if self._anchor is None:
            self._block.add_op(op)
        else:
            self._block.insert_op_before(op, self._anchor)
        return op

    # ---- structure ------------------------------------------------------------------------

    @contextmanager
    def loop(self, start: Index, stop: Index, step: int = 1, name: str = "i", pipelined: bool = False) -> Iterator[Index]:
        """`scf.for` from start to stop; a single static iteration emits no loop, an
        empty static range emits nothing (the body is written into a discarded block).
        `pipelined`: the body already alternates its buffers (`{npu.pipelined}`, left
        alone by npu-double-buffer)."""
        if isinstance(start, int) and isinstance(stop, int) and stop - start <= step:
            if stop > start:
                yield start
            else:
                with self._discarded():
                    yield start
            return
        body = Block(arg_types=[IndexType()])
        body.args[0].name_hint = name
        body.add_op(scf.YieldOp())
        loop = self._insert(scf.ForOp(self.index(start), self.index(stop), self.index(step), [], body))
        if pipelined:
            loop.attributes[npu.PIPELINED_ATTR] = UnitAttr()
        with self._inside(body):
            yield body.args[0]

    @contextmanager
    def when(self, condition: SSAValue | bool) -> Iterator[None]:
        """`scf.if condition` (a static True just emits, a static False discards)."""
        if isinstance(condition, bool):
            if condition:
                yield
            else:
                with self._discarded():
                    yield
            return
        then = Block()
        then.add_op(scf.YieldOp())
        self._insert(scf.IfOp(condition, [], Region(then), Region()))
        with self._inside(then):
            yield

    def if_else(self, condition: SSAValue | bool) -> tuple:
        """Two context managers writing the `then` and `else` bodies of an `scf.if`
        (a static condition emits one of them and discards the other)."""
        if isinstance(condition, bool):
            return (self._emitting(), self._discarded()) if condition else (self._discarded(), self._emitting())
        then, otherwise = Block(), Block()
        then.add_op(scf.YieldOp())
        otherwise.add_op(scf.YieldOp())
        self._insert(scf.IfOp(condition, [], Region(then), Region(otherwise)))
        return self._inside(then), self._inside(otherwise)

    @contextmanager
    def _emitting(self) -> Iterator[None]:
        yield

    @contextmanager
    def _discarded(self) -> Iterator[None]:
        """Emission into a block that is thrown away (code that can never run)."""
        scratch = Block()
        scratch.add_op(scf.YieldOp())
        self._discarding += 1
        try:
            with self._inside(scratch):
                yield
        finally:
            self._discarding -= 1
        for op in reversed(list(scratch.ops)):
            op.detach()
            op.erase(safe_erase=False)

    @contextmanager
    def _inside(self, block: Block) -> Iterator[None]:
        saved = self._block, self._anchor
        self._block, self._anchor = block, block.last_op
        try:
            yield
        finally:
            self._block, self._anchor = saved

    @property
    def discarding(self) -> bool:
        """Whether what is emitted now is thrown away (a static branch or loop that never runs)."""
        return self._discarding > 0

    @contextmanager
    def at_entry(self) -> Iterator[None]:
        """Emission at the top of the kernel, after its constants and allocations:
        once per run, whatever loop the caller is emitting into (a buffer's
        one-time initialisation). Code that never runs (`discarding`) stays
        where it is, thrown away with it."""
        if self._discarding:
            yield
            return
        saved = self._block, self._anchor
        self._block, self._anchor = self._entry, self._after_allocs()
        try:
            yield
        finally:
            self._block, self._anchor = saved

    def finish(self, block_dim: int) -> npu.KernelOp:
        self.kernel.properties["block_dim"] = to_attribute(Kind.INT, block_dim)
        return self.kernel


def memref_type(value: SSAValue) -> MemRefType:
    t = value.type
    assert isinstance(t, MemRefType)
    return t
