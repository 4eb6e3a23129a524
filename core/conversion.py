"""Converting numbers between element types, as ONNX Cast defines it: the one
definition shared by `ge.cast`'s reference semantics and the NPU's `npu.vcast`,
so both compute the same thing.

* to bool: zero (either sign) is false, everything else (NaN too) true;
* float to integer: rounded by `rounding` (ONNX: `trunc`, towards zero), then
  wrapped to the width like every integer to integer conversion (200 -> i8 is
  -56; 9 -> i4 is -7);
* float to float: round to nearest even; out of range is +-inf where the format
  has infinities. The float8 formats take `saturate` (ONNX's default): values
  beyond the largest finite, infinities included, become +-largest finite;
  without it they become inf (e5m2) or NaN (the others), as ONNX's tables say.
  f4E2M1FN has neither inf nor NaN and always saturates (NaN becomes -0, as
  ONNX's reference does it);
* to f8E8M0FNU (powers of two 2^-127 .. 2^127, and NaN; no sign, no zero): the
  magnitude's exponent, `rounding` `ceil` (ONNX's `up`), `floor` (`down`) or
  `rint` (`nearest`, halfway 1.5 x 2^k rounds up). With `saturate`, zero and
  anything below 2^-127 become 2^-127 and anything above 2^127, infinity
  included, 2^127; without it they are NaN (ONNX's table for e8m0).
"""

from __future__ import annotations

import numpy as np

from . import dtypes

ROUNDINGS = ("rint", "floor", "ceil", "trunc")
"""How a float becomes an integer (or an f8E8M0FNU exponent)."""

_E8M0_BIAS = 127
_E8M0_NAN = 255


def convert(x: np.ndarray, dtype: np.dtype, rounding: str = "rint", saturate: bool = False) -> np.ndarray:
    """`x` (in its compute dtype) as an array of storage dtype `dtype`."""
    x = np.asarray(x)
    dtype = np.dtype(dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        if dtype == np.bool_:
            return x != 0
        if dtype == dtypes.to_numpy_dtype(dtypes.f8E8M0FNU):
            return _to_e8m0(x, rounding, saturate)
        if x.dtype == np.bool_:
            return x.astype(dtype)
        if dtypes.is_integer_dtype(dtype) and dtypes.is_float_dtype(x.dtype):
            return _wrapped(_ROUND[rounding](x), dtype)
        if dtypes.is_integer_dtype(dtype):
            return _wrapped(x, dtype)
        if saturate and dtypes.is_float8(dtypes.from_numpy_dtype(dtype)):
            largest = float(dtypes.float_info(dtype).max)
            x = np.clip(x, -largest, largest)
        return x.astype(dtype)


_ROUND = {"rint": np.rint, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc}


def _wrapped(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Integers (or integral floats) reduced modulo 2^bits into `dtype`'s range.
    Floats beyond the 64-bit range (and NaN) have no defined result; they go
    through numpy's conversion like any other."""
    if dtypes.is_float_dtype(x.dtype):
        if dtype.itemsize == 8:
            return x.astype(dtype)
        x = x.astype(np.int64)
    element_type = dtypes.from_numpy_dtype(dtype)
    bits = dtypes.integer_bits(element_type)
    if bits >= 8:
        return x.astype(dtype)  # numpy wraps integer conversions
    low = x.astype(np.int64) & ((1 << bits) - 1)
    if not dtypes.is_unsigned(element_type):
        low = np.where(low >= 1 << (bits - 1), low - (1 << bits), low)
    return low.astype(dtypes.compute_dtype(dtype)).astype(dtype)


def _to_e8m0(x: np.ndarray, rounding: str, saturate: bool) -> np.ndarray:
    magnitude = np.abs(x.astype(np.float64))  # negative input is unspecified: use |x|
    mantissa, exponent = np.frexp(magnitude)  # magnitude = mantissa * 2^exponent, mantissa in [0.5, 1)
    exponent = exponent.astype(np.int64) - 1  # magnitude = (2 * mantissa) * 2^exponent
    scaled = 2 * mantissa
    if rounding == "ceil":
        exponent += scaled > 1
    elif rounding == "rint":
        exponent += scaled >= 1.5
    elif rounding not in ("floor", "trunc"):
        raise ValueError(f"unknown rounding '{rounding}'")
    code = exponent + _E8M0_BIAS
    finite = np.isfinite(magnitude) & (magnitude > 0)
    low, high = 0, _E8M0_NAN - 1
    if saturate:
        code = np.where(np.isinf(magnitude), high, np.clip(code, low, high))
        code = np.where(magnitude == 0, low, code)
    else:
        code = np.where(finite & (code >= low) & (code <= high), code, _E8M0_NAN)
    code = np.where(np.isnan(magnitude), _E8M0_NAN, code)
    return code.astype(np.uint8).view(dtypes.to_numpy_dtype(dtypes.f8E8M0FNU))
