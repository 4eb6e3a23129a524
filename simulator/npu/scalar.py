"""The scalar unit's own work: `arith` index math and `scf` control flow, decoded
into closures over the register file (`core.regs`, a Python list per block;
index values are Python ints). Each op costs `scalar.instruction_cycles`, each loop iteration
`scalar.loop_iteration_cycles`, on the S pipe."""

from __future__ import annotations

import operator
from collections.abc import Callable

import numpy as np
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import Operation

from ...core.diagnostics import CompileError, op_error
from . import batch_scalar
from .hazards import S

Step = Callable[[object], None]


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _trunc_rem(a: int, b: int) -> int:
    return a - b * _trunc_div(a, b)


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


BINARY: dict[str, Callable[[int, int], int]] = {
    "arith.addi": operator.add,
    "arith.subi": operator.sub,
    "arith.muli": operator.mul,
    "arith.divui": operator.floordiv,
    "arith.divsi": _trunc_div,
    "arith.floordivsi": operator.floordiv,
    "arith.ceildivsi": _ceil_div,
    "arith.ceildivui": _ceil_div,
    "arith.remui": operator.mod,
    "arith.remsi": _trunc_rem,
    "arith.minsi": min,
    "arith.maxsi": max,
    "arith.minui": min,
    "arith.maxui": max,
    "arith.andi": operator.and_,
    "arith.ori": operator.or_,
    "arith.xori": operator.xor,
    "arith.shli": operator.lshift,
    "arith.shrsi": operator.rshift,
    "arith.shrui": operator.rshift,
}

CASTS = ("arith.index_cast", "arith.index_castui", "arith.extsi", "arith.extui", "arith.trunci")

CMPI: dict[int, Callable[[int, int], bool]] = {
    0: operator.eq,
    1: operator.ne,
    2: operator.lt,
    3: operator.le,
    4: operator.gt,
    5: operator.ge,
    6: operator.lt,
    7: operator.le,
    8: operator.gt,
    9: operator.ge,
}


def constant_value(op: arith.ConstantOp):
    value = op.value
    if isinstance(value, IntegerAttr):
        return value.value.data
    data = getattr(value, "value", None)
    if data is not None and hasattr(data, "data"):
        return data.data
    raise op_error(op, "the NPU simulator supports integer and float scalar constants only")


class ScalarDecoder:
    """Mixin of the kernel decoder: closures for arith and scf ops."""

    def scalar_step(self, op: Operation) -> Step | None:
        """The closure for an arith / scf op (not a constant), or None if `op` is neither."""
        if op.name in BINARY:
            return self._binary(op, BINARY[op.name])
        if op.name in CASTS:
            return self._unary(op, lambda x: x)
        if isinstance(op, arith.CmpiOp):
            return self._binary(op, CMPI[op.predicate.value.data])
        if isinstance(op, arith.SelectOp):
            return self._select(op)
        if isinstance(op, scf.ForOp):
            return self._for(op)
        if isinstance(op, scf.IfOp):
            return self._if(op)
        return None

    def _batched(self) -> bool:
        """Whether registers may hold one value per block (`batch_scalar.py`): the
        approximate simulation's closures."""
        return getattr(self, "mode", "full") == "approx"

    def _binary(self, op: Operation, fn: Callable[[int, int], int]) -> Step:
        a, b = (self.reg(v) for v in op.operands)
        out = self.define(op.results[0])
        cost = self.hw.scalar_instruction_cycles
        if self._batched():
            lifted, array = batch_scalar.lifted(op, fn), np.ndarray

            def step(core) -> None:
                """As below; ints (every block alike) go to `fn` without the lifted
                function's call (a third of the approximate passes' scalar work)."""
                regs = core.regs
                core.s_time += cost
                core.busy[S] += cost
                x, y = regs[a], regs[b]
                try:
                    regs[out] = lifted(x, y) if type(x) is array or type(y) is array else fn(x, y)
                except ZeroDivisionError:
                    raise op_error(op, f"divides by zero ({x} / {y})") from None

            return step

        def step(core) -> None:
            regs = core.regs
            core.s_time += cost
            core.busy[S] += cost
            try:
                regs[out] = fn(regs[a], regs[b])
            except ZeroDivisionError:
                raise op_error(op, f"divides by zero ({regs[a]} / {regs[b]})") from None

        return step

    def _unary(self, op: Operation, fn: Callable[[int], int]) -> Step:
        a = self.reg(op.operands[0])
        out = self.define(op.results[0])
        cost = self.hw.scalar_instruction_cycles

        def step(core) -> None:
            regs = core.regs
            core.s_time += cost
            core.busy[S] += cost
            regs[out] = fn(regs[a])

        return step

    def _select(self, op: arith.SelectOp) -> Step:
        c, a, b = (self.reg(v) for v in op.operands)
        out = self.define(op.result)
        cost = self.hw.scalar_instruction_cycles
        if self._batched():
            select = batch_scalar.select

            def step(core) -> None:
                regs = core.regs
                core.s_time += cost
                core.busy[S] += cost
                regs[out] = select(regs[c], regs[a], regs[b])

            return step

        def step(core) -> None:
            regs = core.regs
            core.s_time += cost
            core.busy[S] += cost
            regs[out] = regs[a] if regs[c] else regs[b]

        return step

    def _for(self, op: scf.ForOp) -> Step:
        lb, ub, st = self.reg(op.lb), self.reg(op.ub), self.reg(op.step)
        inits = [self.reg(v) for v in op.iter_args]
        block = op.body.block
        iv = self.define(block.args[0])
        carried = [self.define(arg) for arg in block.args[1:]]
        body, yields = self.block_steps(block)
        results = [self.define(r) for r in op.results]
        cost = self.hw.loop_iteration_cycles
        run = self.run_steps(body)
        iterations = _batched_iterations if self._batched() else _iterations

        def step(core) -> None:
            regs = core.regs
            for dst, src in zip(carried, inits):
                regs[dst] = regs[src]
            for i in iterations(op, regs[lb], regs[ub], regs[st]):
                core.s_time += cost
                core.busy[S] += cost
                regs[iv] = i
                run(core)
                if carried:
                    values = [regs[y] for y in yields]
                    for dst, value in zip(carried, values):
                        regs[dst] = value
            for dst, src in zip(results, carried):
                regs[dst] = regs[src]

        if self._batched() and not op.results and self.only_computes(op):
            whole = step

            def step(core) -> None:  # noqa: F811 - skipped whole in a phase skipped (`approx.skips`)
                if not core.skip:
                    whole(core)

        return step

    def _if(self, op: scf.IfOp) -> Step:
        cond = self.reg(op.cond)
        results = [self.define(r) for r in op.results]
        branches = []
        for region in (op.true_region, op.false_region):
            if region.blocks:
                body, yields = self.block_steps(region.block)
                branches.append((self.run_steps(body), yields))
            else:
                branches.append((None, []))
        (then_run, then_yields), (else_run, else_yields) = branches
        cost = self.hw.scalar_instruction_cycles
        decide = batch_scalar.uniform if self._batched() else _same

        def step(core) -> None:
            regs = core.regs
            core.s_time += cost
            core.busy[S] += cost
            run, yields = (then_run, then_yields) if decide(regs[cond], op) else (else_run, else_yields)
            if run is not None:
                run(core)
            for dst, src in zip(results, yields):
                regs[dst] = regs[src]

        return step

    @staticmethod
    def run_steps(steps: list[Step]) -> Callable[[object], None]:
        steps = tuple(steps)

        def run(core) -> None:
            for step in steps:
                step(core)

        return run


def _same(value, op=None):
    return value


def _iterations(op: scf.ForOp, lower: int, upper: int, step: int) -> range:
    """The induction variable's values of a loop."""
    if step <= 0:
        raise op_error(op, f"step must be positive, got {step}")
    return range(lower, upper, step)


def _batched_iterations(op: scf.ForOp, lower, upper, step):
    return batch_scalar.iterations(op, lower, upper, step, _iterations)


def unsupported(op: Operation) -> CompileError:
    return op_error(op, "cannot be run by the NPU simulator (kernels hold npu, arith and scf ops)")
