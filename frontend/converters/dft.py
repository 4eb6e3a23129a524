"""DFT as matrix products with constant twiddle tables.

Along the transformed axis the DFT is linear: with the signal's real and
imaginary parts as row vectors, each output part is a sum of two products with
(length x frequencies) matrices of cosines and sines, built here in float64 and
rounded once to the signal's type. `dft_length` (zero-padding or truncation)
only selects the matrices' rows; `onesided` keeps the frequencies 0..N/2;
`inverse` conjugates and divides by N; an inverse one-sided transform (irfft)
weighs the frequencies other than 0 and N/2 twice and has a real result.

The tables are exactly symmetric (cos(2pi(N-m)/N) = cos(2pi m/N), sin odd) and
exactly 0 or +-1 where the angle is a multiple of pi/2, so a component that is
zero in exact arithmetic (the imaginary part of a real signal's frequency 0
and N/2) comes out exactly zero, as ONNX's float64 FFT makes it, not a few
ulps of the input's size. The matmuls run on the cube.
"""

from __future__ import annotations

import math

import numpy as np

from ...core import dtypes
from ...dialects.ge import TransposeOp
from .. import ops
from ..builder import Tensor, matmul, slice_
from .context import NodeContext
from .registry import converts


def _tables(n: int) -> tuple[np.ndarray, np.ndarray]:
    """cos(2 pi m / n) and sin(2 pi m / n) for m in 0..n-1, exactly symmetric,
    exact at the multiples of pi/2."""
    m = np.arange(n)
    half = np.minimum(m, n - m)  # cos is even around n/2, sin odd
    cos = np.cos(2 * np.pi * half / n)
    sin = np.sin(2 * np.pi * half / n) * np.where(m <= n - m, 1.0, -1.0)
    quarter = (4 * m) % n == 0
    cos[quarter] = np.round(cos[quarter])
    sin[quarter] = np.round(sin[quarter])
    return cos, sin


def _matrices(length: int, n: int, inverse: bool, onesided: bool):
    """(real->real, imag->real, real->imag, imag->imag) matrices of shape
    (input length, output length)."""
    cos, sin = _tables(n)
    if inverse and onesided:  # irfft: Hermitian spectrum 0..n/2 in, n real values out
        k = np.arange(min(length, n // 2 + 1))[:, None]
        t = np.arange(n)[None, :]
        weight = np.where((k == 0) | (2 * k == n), 1.0, 2.0)
        angle = (k * t) % n
        rr = np.zeros((length, n))
        ir = np.zeros((length, n))
        rr[: k.shape[0]] = weight * cos[angle] / n
        ir[: k.shape[0]] = -weight * sin[angle] / n
        return rr, ir, None, None
    rows = min(length, n)
    out = n // 2 + 1 if onesided else n
    angle = (np.arange(rows)[:, None] * np.arange(out)[None, :]) % n
    c, s = np.zeros((length, out)), np.zeros((length, out))
    c[:rows], s[:rows] = cos[angle], sin[angle]
    sign, scale = (1.0, 1.0 / n) if inverse else (-1.0, 1.0)
    # (a + ib)(cos + i sign sin) = a cos - sign b sin + i (sign a sin + b cos)
    return c * scale, -sign * s * scale, sign * s * scale, c * scale


@converts("DFT", static=(1, 2))
def dft(c: NodeContext):
    x = c.input(0, "input")
    if c.opset >= 20:
        axis_value = c.ints_input(2, "axis")
        axis = axis_value[0] if axis_value else -2
    else:
        axis = c.int("axis", 1)
    inverse, onesided = bool(c.int("inverse", 0)), bool(c.int("onesided", 0))
    if x.rank < 2 or x.shape[-1] not in (1, 2):
        raise c.fail(f"input must end in a dim of 1 (real) or 2 (complex), got {x.type}")
    if not dtypes.is_float(x.dtype):
        raise c.fail(f"input must be floating point, got {x.type}")
    if not -x.rank <= axis < x.rank or axis % x.rank == x.rank - 1:
        raise c.fail(f"axis {axis} must name a signal dim of {x.type}, not the last")
    axis %= x.rank
    length = x.shape[axis]
    given = c.ints_input(1, "dft_length")
    n = given[0] if given else (2 * (length - 1) if inverse and onesided else length)
    if n <= 0:
        raise c.fail(f"dft_length must be positive, got {n}")
    if onesided and not inverse and x.shape[-1] == 2:
        raise c.fail("a one-sided DFT takes a real signal")
    rr, ir, ri, ii = _matrices(length, n, inverse, onesided)
    parts = [_along(c, _part(x, p), axis, length) for p in range(x.shape[-1])]
    real = _sum(c, parts, (rr, ir), x)
    if ri is None:
        return _stack(c, [real], axis, x)
    return _stack(c, [real, _sum(c, parts, (ri, ii), x)], axis, x)


def _part(x: Tensor, p: int) -> Tensor:
    return ops.reshape(slice_(x, [p], [p + 1], [x.rank - 1]), list(x.shape[:-1]))


def _along(c: NodeContext, part: Tensor, axis: int, length: int) -> tuple[Tensor, list[int]]:
    """`part` as rows of the signal (the axis last, the other dims merged), and
    the shape those other dims had."""
    perm = [d for d in range(part.rank) if d != axis] + [axis]
    moved = c.g.op(TransposeOp, part, perm=perm) if perm != list(range(part.rank)) else part
    others = list(moved.shape[:-1])
    return ops.reshape(moved, [math.prod(others), length]), others


def _sum(c: NodeContext, parts, matrices, x: Tensor) -> Tensor:
    """Sum over the signal's parts (real, imaginary) of part @ matrix."""
    numpy_type = dtypes.to_numpy_dtype(x.dtype)
    total = None
    for (rows, _), matrix in zip(parts, matrices):
        term = matmul(rows, c.g.const(matrix.astype(numpy_type)))
        total = term if total is None else total + term
    return total


def _stack(c: NodeContext, components: list[Tensor], axis: int, x: Tensor) -> Tensor:
    """The components (rows of the transformed axis) back in x's layout, stacked
    along a new last dim."""
    rank = x.rank - 1
    out = components[0].shape[-1]
    others = [d for i, d in enumerate(x.shape[:-1]) if i != axis]
    shaped = []
    for t in components:
        t = ops.reshape(t, [*others, out])
        perm = list(range(axis)) + [rank - 1] + list(range(axis, rank - 1))
        if perm != list(range(rank)):
            t = c.g.op(TransposeOp, t, perm=perm)
        shaped.append(ops.reshape(t, [*t.shape, 1]))
    return shaped[0] if len(shaped) == 1 else ops.concat(shaped, rank)
