"""Index offsets as affine expressions over SSA "atoms", with value ranges.

The npu passes ask one question of an offset: can two accesses touch the same
bytes? Offsets are `arith` index math over constants, loop induction variables,
`npu.block_idx` and whatever else the kernel computes. `affine_of` folds the
linear part (constants, `addi`, `subi`, `muli` by a constant, casts) into
`const + sum(coeff * atom)`; everything else (a division, a value read from
memory, ...) becomes an opaque atom of its own.

`Interval` is the arithmetic the comparison needs: the range of a difference of
two offsets, where an end may be unbounded (None).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import BlockArgument, SSAValue


@dataclass(frozen=True)
class Affine:
    """`const + sum(coeff * atom for atom, coeff in terms)`."""

    const: int
    terms: dict[SSAValue, int] = field(default_factory=dict)

    @property
    def is_constant(self) -> bool:
        return not self.terms

    def plus(self, other: Affine, sign: int = 1) -> Affine:
        terms = dict(self.terms)
        for atom, coeff in other.terms.items():
            terms[atom] = terms.get(atom, 0) + sign * coeff
        return Affine(self.const + sign * other.const, {a: c for a, c in terms.items() if c})

    def scaled(self, factor: int) -> Affine:
        if factor == 0:
            return Affine(0)
        return Affine(self.const * factor, {a: c * factor for a, c in self.terms.items()})

    def shifted(self, amount: int) -> Affine:
        return Affine(self.const + amount, self.terms)


def constant_int(value: SSAValue) -> int | None:
    """The integer an `arith.constant` defines, or None."""
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


_CASTS = (arith.IndexCastOp, arith.ExtSIOp, arith.ExtUIOp)


class AffineCache:
    """`affine_of` with memoisation over one kernel."""

    def __init__(self):
        self._cache: dict[SSAValue, Affine] = {}

    def __call__(self, value: SSAValue) -> Affine:
        found = self._cache.get(value)
        if found is None:
            found = self._compute(value)
            self._cache[value] = found
        return found

    def _compute(self, value: SSAValue) -> Affine:
        known = constant_int(value)
        if known is not None:
            return Affine(known)
        owner = value.owner
        if isinstance(owner, arith.AddiOp):
            return self(owner.lhs).plus(self(owner.rhs))
        if isinstance(owner, arith.SubiOp):
            return self(owner.lhs).plus(self(owner.rhs), -1)
        if isinstance(owner, arith.MuliOp):
            lhs, rhs = self(owner.lhs), self(owner.rhs)
            if rhs.is_constant:
                return lhs.scaled(rhs.const)
            if lhs.is_constant:
                return rhs.scaled(lhs.const)
        if isinstance(owner, _CASTS):
            return self(owner.operands[0])
        return Affine(0, {value: 1})


def loop_of_induction_variable(atom: SSAValue) -> scf.ForOp | None:
    """The scf.for whose induction variable `atom` is, or None."""
    if isinstance(atom, BlockArgument) and atom.index == 0:
        loop = atom.block.parent_op()
        if isinstance(loop, scf.ForOp):
            return loop
    return None


def constant_bounds(loop: scf.ForOp) -> tuple[int, int, int] | None:
    """(lb, ub, step) when all three are constants."""
    bounds = tuple(constant_int(v) for v in (loop.lb, loop.ub, loop.step))
    return None if None in bounds else bounds  # type: ignore[return-value]


def trip_count(loop: scf.ForOp) -> int | None:
    """The number of iterations when the bounds are constants."""
    bounds = constant_bounds(loop)
    if bounds is None:
        return None
    lb, ub, step = bounds
    return max(0, -(-(ub - lb) // step)) if step > 0 else None


def induction_range(atom: SSAValue) -> Interval | None:
    """The values a loop induction variable with constant bounds takes."""
    loop = loop_of_induction_variable(atom)
    trips = trip_count(loop) if loop is not None else None
    if not trips:
        return None
    lb, _, step = constant_bounds(loop)
    return Interval(lb, lb + step * (trips - 1))


@dataclass(frozen=True)
class Interval:
    """Integers in [lo, hi]; None is an unbounded end."""

    lo: int | None
    hi: int | None

    @staticmethod
    def point(value: int) -> Interval:
        return Interval(value, value)

    def __add__(self, other: Interval) -> Interval:
        lo = None if self.lo is None or other.lo is None else self.lo + other.lo
        hi = None if self.hi is None or other.hi is None else self.hi + other.hi
        return Interval(lo, hi)

    def scaled(self, factor: int) -> Interval:
        if factor == 0:
            return Interval.point(0)
        lo = None if self.lo is None else self.lo * factor
        hi = None if self.hi is None else self.hi * factor
        return Interval(lo, hi) if factor > 0 else Interval(hi, lo)

    @property
    def constant(self) -> int | None:
        return self.lo if self.lo is not None and self.lo == self.hi else None


UNBOUNDED = Interval(None, None)
