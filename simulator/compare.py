"""Comparing results against the reference: the tolerance per element type and the
worst error, reported the way `ge-sim --check` prints it.

An element passes when |actual - expected| <= atol + rtol * |expected|. fp16
gets 1e-2 for both: one fp16 rounding is 2^-11 ~ 4.9e-4, and a value that went
through a reduction or a fused kernel keeping fp32 intermediates differs from the
op-by-op reference by a few roundings. The other floats narrower than fp32
(bf16, float8, float4) get two units in the last place, 2 x eps, for both (bf16
1.6e-2, e4m3 0.25, e5m2 0.5, e2m1 1, e8m0 2: one rounding either way of a value
that is mostly produced by one conversion; their last place is already coarse).
Integers and booleans must match exactly.

A result is no more precise than the least precise float type it went through:
an f32 output computed from fp16 tensors is compared at fp16 tolerance
(`precision_floor` finds that type in a module). That includes the types the
compiler chose: a module compiled with a precision mode that computed ops in
f16 (`ge-compile{precision=...}`, recorded on the module, `core/precision.py`)
is compared with its f32 source at fp16 tolerance (`compiled_floor`), and one
compiled in its own types at the source's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

TOLERANCES: dict[np.dtype, tuple[float, float]] = {
    np.dtype(np.float16): (1e-2, 1e-2),
    np.dtype(np.float32): (1e-4, 1e-4),
    np.dtype(np.float64): (1e-9, 1e-9),
}


@dataclass(frozen=True)
class Mismatch:
    """The worst element of one output: where, what, and by how much over tolerance."""

    name: str
    index: tuple[int, ...]
    expected: float
    actual: float
    ratio: float  # |error| / allowed error; > 1 fails

    def __str__(self) -> str:
        return (
            f"{self.name}{list(self.index)}: expected {self.expected:.6g}, got {self.actual:.6g} "
            f"(error {abs(self.actual - self.expected):.3g}, {self.ratio:.3g}x the tolerance)"
        )


def tolerance(dtype: np.dtype, floor: np.dtype | None = None) -> tuple[float, float]:
    atol, rtol = _own_tolerance(dtype)
    if floor is not None and atol > 0:
        floor_atol, floor_rtol = _own_tolerance(floor)
        atol, rtol = max(atol, floor_atol), max(rtol, floor_rtol)
    return atol, rtol


def _own_tolerance(dtype: np.dtype) -> tuple[float, float]:
    """(atol, rtol) of one element type: the table, 2 x eps for the other floats,
    exact for everything else."""
    from ..core import dtypes

    dtype = np.dtype(dtype)
    if dtype in TOLERANCES:
        return TOLERANCES[dtype]
    if dtypes.is_float_dtype(dtype):
        two_ulps = 2 * float(dtypes.float_info(dtype).eps)
        return two_ulps, two_ulps
    return 0.0, 0.0


def precision_floor(module) -> np.dtype | None:
    """The least precise float element type of any tensor or memref in `module`
    (the one with the largest tolerance)."""
    from xdsl.dialects.builtin import MemRefType, TensorType

    from ..core import dtypes

    found = {
        dtypes.to_numpy_dtype(t.element_type)
        for op in module.walk()
        for t in (*(r.type for r in op.results), *(o.type for o in op.operands))
        if isinstance(t, TensorType | MemRefType) and dtypes.is_float(t.element_type)
    }
    return max(found, key=_own_tolerance) if found else None


def compiled_floor(source, compiled) -> np.dtype | None:
    """The tolerance floor for comparing `compiled` with the reference run of
    `source`: the source's own floor, lowered to f16 when the compiler recorded
    ops it computed in f16."""
    from ..core import precision

    floor = precision_floor(source)
    if not precision.recorded_lowered(compiled):
        return floor
    return least_precise(np.dtype(np.float16), floor)


def least_precise(*floors: np.dtype | None) -> np.dtype | None:
    """The float type with the loosest tolerance among `floors` (None ignored)."""
    found = [np.dtype(f) for f in floors if f is not None]
    return max(found, key=_own_tolerance) if found else None


def worst_mismatch(
    name: str, expected: np.ndarray, actual: np.ndarray, floor: np.dtype | None = None
) -> Mismatch | None:
    """The element furthest outside tolerance relative to its allowance, or None if
    the shapes match and the arrays are identical. `floor`: a float type the result
    went through, whose tolerance is the least allowed."""
    if expected.shape != actual.shape:
        return Mismatch(name, (), float("nan"), float("nan"), float("inf"))
    if expected.size == 0:
        return None
    atol, rtol = tolerance(expected.dtype, floor)
    e = expected.astype(np.float64)
    a = actual.astype(np.float64)
    both_nan = np.isnan(e) & np.isnan(a)
    same_inf = np.isinf(e) & (e == a)
    error = np.where(both_nan | same_inf, 0.0, np.abs(a - e))
    error = np.where(np.isnan(error), np.inf, error)
    allowed = atol + rtol * np.abs(np.where(np.isfinite(e), e, 0.0))
    ratio = np.where(error == 0, 0.0, error / np.where(allowed > 0, allowed, 1e-300))
    flat = int(np.argmax(ratio))
    worst = float(ratio.flat[flat])
    if worst == 0.0:
        return None
    index = tuple(int(i) for i in np.unravel_index(flat, expected.shape))
    return Mismatch(name, index, float(e.flat[flat]), float(a.flat[flat]), worst)
