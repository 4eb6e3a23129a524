"""Comparing results against the reference: the tolerance per element type and the
worst error, reported the way `ge-sim --check` prints it.

An element passes when |actual - expected| <= atol + rtol * |expected|. fp16
gets 1e-2 for both: one fp16 rounding is 2^-11 ~ 4.9e-4, and a value that went
through a reduction or a fused kernel keeping fp32 intermediates differs from the
op-by-op reference by a few roundings. Integers and booleans must match exactly.

A result is no more precise than the least precise float type it went through:
an f32 output computed from fp16 tensors is compared at fp16 tolerance
(`precision_floor` finds that type in a module).
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
    atol, rtol = TOLERANCES.get(np.dtype(dtype), (0.0, 0.0))
    if floor is not None and atol > 0:
        floor_atol, floor_rtol = TOLERANCES.get(np.dtype(floor), (0.0, 0.0))
        atol, rtol = max(atol, floor_atol), max(rtol, floor_rtol)
    return atol, rtol


def precision_floor(module) -> np.dtype | None:
    """The least precise float element type of any tensor or memref in `module`."""
    from xdsl.dialects.builtin import MemRefType, TensorType

    from ..core import dtypes

    found = {
        dtypes.to_numpy_dtype(t.element_type)
        for op in module.walk()
        for t in (*(r.type for r in op.results), *(o.type for o in op.operands))
        if isinstance(t, TensorType | MemRefType) and dtypes.is_float(t.element_type)
    }
    return min(found, key=lambda d: d.itemsize) if found else None


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
