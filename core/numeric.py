"""Vectorised special functions numpy lacks, shared by the reference semantics and
the simulator's vector unit so both compute the same thing."""

from __future__ import annotations

import numpy as np

_TWO_OVER_SQRT_PI = 1.1283791670955126


def erf(x: np.ndarray) -> np.ndarray:
    """Error function, accurate to ~1.2e-7 absolute (fp32 level) everywhere.

    |x| < 0.5: the Maclaurin series (exact to rounding there); elsewhere
    1 - erfc(|x|) with the Chebyshev fit of Numerical Recipes' `erfcc`
    (fractional error below 1.2e-7).
    """
    x = np.asarray(x, dtype=np.float64)
    ax = np.abs(x)
    x2 = x * x
    series = _TWO_OVER_SQRT_PI * x * (
        1 - x2 / 3 + x2**2 / 10 - x2**3 / 42 + x2**4 / 216 - x2**5 / 1320 + x2**6 / 9360
    )
    t = 1.0 / (1.0 + 0.5 * ax)
    poly = -ax * ax - 1.26551223 + t * (
        1.00002368
        + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 + t * (0.27886807
        + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))
    )
    tail = np.sign(x) * (1.0 - t * np.exp(poly))
    return np.where(ax < 0.5, series, tail)


def sigmoid(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


def gelu(x: np.ndarray, approximate: str = "none") -> np.ndarray:
    if approximate == "tanh":
        return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))
    return (0.5 * x * (1.0 + erf(x / np.sqrt(2.0)))).astype(x.dtype, copy=False)
