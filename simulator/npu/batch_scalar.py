"""The scalar unit of many blocks at once: registers holding one value per block.

The approximate simulation (`approx.py`) runs the blocks of a launch that take
the same path through the kernel as one batch (`batched.py`). A register whose
value is the same for every block of the batch stays a Python int; one that
differs (it depends on `npu.block_idx`) is a numpy int64 array with one entry
per block. The arith ops below give, entry by entry, what `scalar.py`'s give
per block (floor division and remainder as Python's, the truncating ones as
`scalar._trunc_div`, a division by zero the same located error). Control flow
(`scf.for` bounds, `scf.if` conditions) must be the same for every block of a
batch: where it is not, `uniform` raises `Diverged` with the values, and the
batch is split by them and run again (nothing has been computed yet: a batch
only records its instructions, `batched.py`). `arith.select` needs no split:
it picks entry by entry.

Index values are small (addresses and loop bounds), so int64 holds what the
Python ints of a single block hold; a value beyond it raises.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...core.diagnostics import CompileError

INT64_LIMIT = 2**62
"""Array registers whose magnitude reaches this are refused (a product of two of
them could wrap, where Python's ints would not)."""


class Diverged(Exception):
    """The blocks of a batch take different paths at a control decision: `values`,
    one per block of the batch."""

    def __init__(self, values: np.ndarray, op=None):
        super().__init__("blocks of a batch diverge")
        self.values = values
        self.op = op


def uniform(value, op=None):
    """`value` as a Python scalar if it is the same for every block, else `Diverged`."""
    if type(value) is not np.ndarray:
        return value
    first = value[0]
    if (value == first).all():
        return first.item()
    raise Diverged(value, op)


def iterations(op, lower, upper, step, single):
    """An `scf.for`'s induction values, per block where the bounds differ: the
    blocks must make the same number of trips (a grid-stride loop starting at
    `block_idx` does), else `Diverged` with the trip counts. `single(op, lower,
    upper, step)` is the per-block range (`scalar._iterations`)."""
    if type(lower) is not np.ndarray and type(upper) is not np.ndarray and type(step) is not np.ndarray:
        return single(op, lower, upper, step)
    if np.any(np.asarray(step) <= 0):
        bad = np.broadcast_to(np.asarray(step), np.broadcast(lower, upper, step).shape)
        single(op, 0, 0, int(bad[int(np.argmax(bad <= 0))]))  # raises the per-block error
    trips = uniform(np.maximum(0, -(-(np.asarray(upper) - lower) // step)), op)
    return (lower + k * step for k in range(trips))


def _trunc_div(a, b):
    q = np.abs(a) // np.abs(b)
    return np.where((np.asarray(a) >= 0) == (np.asarray(b) >= 0), q, -q)


def _trunc_rem(a, b):
    return a - b * _trunc_div(a, b)


def _ceil_div(a, b):
    return -(-a // b)


VECTOR: dict[str, Callable] = {
    "arith.divsi": _trunc_div,
    "arith.remsi": _trunc_rem,
    "arith.ceildivsi": _ceil_div,
    "arith.ceildivui": _ceil_div,
    "arith.minsi": np.minimum,
    "arith.maxsi": np.maximum,
    "arith.minui": np.minimum,
    "arith.maxui": np.maximum,
}
"""The ops whose per-block function (`scalar.BINARY`) is not numpy's on arrays;
the others (+, -, *, floor division and remainder, bitwise ops, shifts and
comparisons) are Python operators, which numpy gives the same meaning entry by
entry."""

DIVIDES = {"arith.divui", "arith.divsi", "arith.floordivsi", "arith.ceildivsi", "arith.ceildivui", "arith.remui",
           "arith.remsi"}


def lifted(op, fn: Callable[[int, int], int]) -> Callable:
    """`fn` (a per-block binary function of `scalar.py`) taking array registers too."""
    vector = VECTOR.get(op.name, fn)
    divides = op.name in DIVIDES

    def apply(a, b):
        if type(a) is not np.ndarray and type(b) is not np.ndarray:
            return fn(a, b)
        if divides and np.any(np.asarray(b) == 0):
            j = int(np.argmax(np.broadcast_to(np.asarray(b) == 0, np.broadcast(a, b).shape)))
            fn(_entry(a, j), _entry(b, j))  # raises the per-block error
        result = vector(np.asarray(a, dtype=np.int64) if type(a) is not np.ndarray else a, b)
        if result.dtype != np.bool_ and np.abs(result).max() >= INT64_LIMIT:
            raise CompileError(f"index value beyond 2^62 in a batch of blocks ({op.name})")
        return result

    return apply


def _entry(value, j: int) -> int:
    return value[j].item() if type(value) is np.ndarray else value


def select(c, a, b):
    """`arith.select`, entry by entry where the condition is an array."""
    if type(c) is not np.ndarray:
        return a if c else b
    return np.where(c, a, b)


def check_offsets(op, offsets, checks, check_offset) -> None:
    """The bounds and alignment checks of `instructions._issue_checks` on offsets
    that may be arrays: the first block out of bounds raises the per-block error."""
    for n, span, buffer, writes, align in checks:
        o = offsets[n]
        if type(o) is not np.ndarray:
            if o < 0 or o + span > buffer.numel or (align and o % align):
                check_offset(op, o, span, buffer, writes, align)
            continue
        bad = (o < 0) | (o + span > buffer.numel)
        if align:
            bad |= o % align != 0
        if bad.any():
            check_offset(op, int(o[int(np.argmax(bad))]), span, buffer, writes, align)

