"""`ge.cast` between the element types, as ONNX Cast defines it (opset 19+
`saturate`, opset 24+ `round_mode`): ONNX's tables written out, agreement with
ONNX's reference implementation on a grid of values, and the NPU's `npu.vcast`
computing bit for bit what the reference interpreter computes."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

from gecomp.core import dtypes
from gecomp.dialects.context import make_context
from gecomp.core.conversion import convert
from gecomp.core.parsing import parse_module, verify_module
from gecomp.core.passes import parse_pass_pipeline, run_pipeline
from gecomp.simulator.reference import run_reference
from gecomp.simulator.run import execute

INF, NAN = math.inf, math.nan
SPECIALS = np.array([0.0, -0.0, NAN, INF, -INF, 1e6, -1e6, 0.47892547, 1e-7, -1e-7], np.float32)
FLOAT8 = {
    "f8E4M3FN": (ml_dtypes.float8_e4m3fn, 448.0),
    "f8E4M3FNUZ": (ml_dtypes.float8_e4m3fnuz, 240.0),
    "f8E5M2": (ml_dtypes.float8_e5m2, 57344.0),
    "f8E5M2FNUZ": (ml_dtypes.float8_e5m2fnuz, 57344.0),
}


def cast_module(src: str, dst: str, shape=(len(SPECIALS),), attrs: str = "") -> str:
    t_in, t_out = f"tensor<{'x'.join(map(str, shape))}x{src}>", f"tensor<{'x'.join(map(str, shape))}x{dst}>"
    attr_text = f" {{{attrs}}}" if attrs else ""
    return f"""func.func @main(%x: {t_in}) -> {t_out} {{
  %y = ge.cast %x{attr_text} : ({t_in}) -> {t_out}
  func.return %y : {t_out}
}}"""


def reference_cast(x: np.ndarray, src: str, dst: str, attrs: str = "") -> np.ndarray:
    module = parse_module(make_context(), cast_module(src, dst, x.shape, attrs), "cast.mlir")
    verify_module(module)
    (y,) = run_reference(module, [x.astype(dtypes.to_numpy_dtype(dtypes.element_type_by_name(src)))])
    return y


def values(array: np.ndarray) -> list[float]:
    return [float(v) for v in array.astype(np.float64)]


def same(a: list[float], b: list[float]) -> bool:
    """Equal, NaN equal to NaN, signs of zero compared."""
    return all((math.isnan(x) and math.isnan(y)) or (x == y and math.copysign(1, x) == math.copysign(1, y))
               for x, y in zip(a, b, strict=True))


# ---- ONNX's tables ------------------------------------------------------------------------


@pytest.mark.parametrize("name", FLOAT8)
def test_float8_saturating_table(name):
    _, largest = FLOAT8[name]
    got = values(reference_cast(SPECIALS, "f32", name))
    no_negative_zero = name.endswith("UZ")
    zero_minus = 0.0 if no_negative_zero else -0.0
    # 0, -0, NaN, Inf, -Inf, [x] > max, [x] < -max, then ordinary rounding
    assert same(got[:7], [0.0, zero_minus, NAN, largest, -largest, largest, -largest])
    assert got[7] == 0.46875 if "E4M3" in name else got[7] == 0.5
    assert got[8] == 0.0 and same([got[9]], [zero_minus])


@pytest.mark.parametrize("name", FLOAT8)
def test_float8_non_saturating_table(name):
    got = values(reference_cast(SPECIALS, "f32", name, "saturate = false"))
    overflow = [INF, -INF, INF, -INF] if name == "f8E5M2" else [NAN] * 4
    assert same(got[2:7], [NAN, *overflow])


def test_float8_rounds_to_nearest_even():
    x = np.array([1.0625, 1.1875, 1.0624, 464.0, 465.0], np.float32)  # ties, just below a tie, max + half ulp
    assert values(reference_cast(x, "f32", "f8E4M3FN")) == [1.0, 1.25, 1.0, 448.0, 448.0]
    got = values(reference_cast(x, "f32", "f8E4M3FN", "saturate = false"))
    assert got[:3] == [1.0, 1.25, 1.0] and got[3] == 448.0 and math.isnan(got[4])


@pytest.mark.parametrize(
    "mode,expected",
    [
        ("up", [2.0**-127, 0.125, 0.25, 2.0, 2.0, 4.0, 2.0**127, 2.0**-127]),
        ("down", [2.0**-127, 0.0625, 0.25, 1.0, 1.0, 2.0, 2.0**127, 2.0**-127]),
        ("nearest", [2.0**-127, 0.125, 0.25, 1.0, 2.0, 4.0, 2.0**127, 2.0**-127]),
    ],
)
def test_e8m0_rounding_modes_saturating(mode, expected):
    x = np.array([0.0, 0.124, 0.25, 1.1, 1.5, 3.0, INF, 1e-39], np.float32)
    attrs = f'round_mode = "{mode}"' if mode != "up" else ""
    assert values(reference_cast(x, "f32", "f8E8M0FNU", attrs)) == expected


def test_e8m0_without_saturation_is_nan_out_of_range():
    x = np.array([0.0, INF, NAN, 1e-39, 0.5, 2e38, 3e38], np.float32)  # 3e38 is nearer 2^128
    got = values(reference_cast(x, "f32", "f8E8M0FNU", 'saturate = false, round_mode = "nearest"'))
    assert all(math.isnan(v) for v in got[:4]) and got[4] == 0.5 and got[5] == 2.0**127 and math.isnan(got[6])


def test_float_to_integer_truncates_then_wraps():
    x = np.arange(-9, 16).astype(np.float32) + 0.75
    assert values(reference_cast(x, "f32", "i4")) == [float((int(v) + 8) % 16 - 8) for v in np.trunc(x)]
    assert values(reference_cast(x, "f32", "ui2")) == [float(int(v) % 4) for v in np.trunc(x)]
    assert values(reference_cast(np.array([200, -1, 70000], np.int32), "i32", "i8")) == [-56.0, -1.0, 112.0]
    assert values(reference_cast(np.array([-1, 300], np.int16), "i16", "ui8")) == [255.0, 44.0]


def test_bool_and_narrow_floats():
    x = np.array([0.0, -0.0, NAN, 0.5], np.float32)
    assert list(reference_cast(x, "f32", "i1")) == [False, False, True, True]
    assert values(reference_cast(np.array([True, False]), "i1", "f8E4M3FN")) == [1.0, 0.0]
    assert values(reference_cast(np.array([True, False]), "i1", "f8E8M0FNU")) == [1.0, 2.0**-127]
    # bf16 keeps the range of fp32 and 8 bits of precision; f4E2M1FN saturates at 6
    assert values(reference_cast(np.array([3e38, 1.00390625, 1.01171875], np.float32), "f32", "bf16")) == [
        float(np.float32(3e38).astype(ml_dtypes.bfloat16)), 1.0, 1.015625]
    assert values(reference_cast(np.array([9.0, -INF, 0.3], np.float32), "f32", "f4E2M1FN")) == [6.0, -6.0, 0.5]


def test_cast_attributes_print_when_not_default_and_are_checked():
    text = cast_module("f32", "f8E8M0FNU", attrs='saturate = false, round_mode = "down"')
    module = parse_module(make_context(), text, "cast.mlir")
    verify_module(module)
    assert 'ge.cast %x {saturate = false, round_mode = "down"}' in str(module)
    assert "{" not in str(parse_module(make_context(), cast_module("f32", "f16"), "c.mlir")).split("ge.cast")[1].split(":")[0]
    bad = parse_module(make_context(), cast_module("f32", "f8E8M0FNU", attrs='round_mode = "even"'), "bad.mlir")
    with pytest.raises(Exception, match="round_mode.*must be one of up, down, nearest"):
        verify_module(bad)


# ---- agreement with ONNX's reference -------------------------------------------------------

_ONNX_CODES = {"f32": 1, "f16": 10, "f64": 11, "bf16": 16, "f8E4M3FN": 17, "f8E4M3FNUZ": 18, "f8E5M2": 19,
               "f8E5M2FNUZ": 20, "ui4": 21, "i4": 22, "f4E2M1FN": 23, "f8E8M0FNU": 24, "ui2": 25, "i2": 26,
               "i16": 5, "ui8": 2, "ui16": 4}


def _grid() -> np.ndarray:
    """Specials, both signs of powers of two from 2^-20 to 2^20 and values between."""
    powers = 2.0 ** np.arange(-20, 21)
    between = np.concatenate([powers * 1.3, powers * 1.5, powers * 1.0625, powers * 1.9999])
    positive = np.concatenate([powers, between, [0.0, 255.0, 300.0, 448.0, 449.0, 57344.0, 61440.0, 1e30]])
    return np.concatenate([positive, -positive, [NAN, INF, -INF]]).astype(np.float32)


@pytest.mark.parametrize("dst", [n for n in _ONNX_CODES if n not in ("f32", "f64") and not n.startswith(("i", "u"))])
@pytest.mark.parametrize("src", ["f32", "f16"])
@pytest.mark.parametrize("saturate", [True, False])
def test_agrees_with_onnx_reference(src, dst, saturate):
    op_cast = pytest.importorskip("onnx.reference.ops.op_cast")
    with np.errstate(over="ignore"):
        x = _grid().astype(dtypes.to_numpy_dtype(dtypes.element_type_by_name(src)))
    if dst == "f8E8M0FNU":
        x = np.abs(x)  # negative input is unspecified for e8m0
    with np.errstate(all="ignore"):
        want = op_cast.cast_to(x, _ONNX_CODES[dst], saturate, "up")
    got = reference_cast(x, src, dst, "" if saturate else "saturate = false")
    if dst == "f8E8M0FNU":
        # the spec's table: saturating, infinity is E8M0_MAX (ONNX's reference gives NaN);
        # without saturation zero and infinity are NaN (the reference keeps 2^-127 and NaN)
        keep = np.isfinite(x) & ((x != 0) | saturate)
        want, got = want[keep], got[keep]
    assert np.array_equal(got.view(np.uint8), want.view(np.uint8))


# ---- the NPU ---------------------------------------------------------------------------------

NPU_CASES = [
    ("f32", "f8E4M3FN", ""),
    ("f32", "f8E4M3FN", "saturate = false"),
    ("f16", "f8E4M3FNUZ", ""),
    ("f32", "f8E5M2", ""),
    ("f32", "f8E5M2", "saturate = false"),
    ("f16", "f8E5M2FNUZ", "saturate = false"),
    ("f32", "f8E8M0FNU", ""),
    ("f16", "f8E8M0FNU", 'round_mode = "nearest"'),
    ("f32", "f8E8M0FNU", 'saturate = false, round_mode = "down"'),
    ("f32", "bf16", ""),
    ("f32", "f4E2M1FN", ""),
    ("f32", "i4", ""),
    ("f16", "ui2", ""),
    ("i32", "f8E5M2", ""),
    ("i1", "f8E8M0FNU", ""),
    ("bf16", "f32", ""),
    ("f8E4M3FN", "f16", ""),
    ("f8E8M0FNU", "f16", ""),
    ("f8E5M2FNUZ", "i1", ""),
    ("f4E2M1FN", "f32", ""),
    ("i4", "f32", ""),
    ("ui4", "ui8", ""),
    ("i16", "i8", ""),
    ("ui16", "f16", ""),
]


def _inputs(src: str, shape) -> np.ndarray:
    dtype = dtypes.to_numpy_dtype(dtypes.element_type_by_name(src))
    count = math.prod(shape)
    if dtype == np.bool_:
        return (np.arange(count) % 3 == 0).reshape(shape)
    if dtypes.is_integer_dtype(dtype):
        return (np.arange(count) - count // 2).reshape(shape).astype(dtype)
    pattern = np.resize(_grid(), count).reshape(shape)
    with np.errstate(over="ignore"):
        return (np.abs(pattern) if float(dtypes.float_info(dtype).min) >= 0 else pattern).astype(dtype)


@pytest.mark.parametrize("src,dst,attrs", NPU_CASES, ids=lambda v: v if v else "default")
def test_npu_cast_equals_the_reference_bit_for_bit(src, dst, attrs):
    shape = (37, 45)
    text = cast_module(src, dst, shape, attrs)
    ctx = make_context()
    module = parse_module(ctx, text, "cast.mlir")
    verify_module(module)
    x = _inputs(src, shape)
    (expected,) = run_reference(module, [x])
    run_pipeline(parse_pass_pipeline("ge-compile{hw=tiny}"), ctx, module)
    assert "npu.vcast" in str(module) or "npu.vcmps" in str(module)
    if "saturate = false" not in attrs and dtypes.is_float8(dtypes.element_type_by_name(dst)) and src != "i1":
        assert "saturate = true" in str(module)
    (actual,) = execute(module, [x], hw="tiny").results
    assert actual.dtype == expected.dtype
    assert np.array_equal(actual.view(np.uint8), expected.view(np.uint8))


def test_vcast_saturate_needs_a_float8_destination():
    text = """npu.kernel @k(%x: memref<64xf32, #npu.space<gm>>) attributes {block_dim = 1} {
  %c0 = arith.constant 0 : index
  %a = npu.alloc : memref<64xf32, #npu.space<ub>>
  %b = npu.alloc : memref<64xf16, #npu.space<ub>>
  npu.vcast %a[%c0], %b[%c0] {cols = 64, saturate = true}
  func.return
}"""
    with pytest.raises(Exception, match="'saturate' needs a float8 destination, got f16"):
        verify_module(parse_module(make_context(), "builtin.module {\n" + text + "\n}", "k.mlir"))


def test_conversion_of_integers_keeps_64_bit_values():
    assert convert(np.array([2.0**63 + 2.0**40]), np.uint64, "trunc")[0] == 2**63 + 2**40
    assert convert(np.array([-3]), np.uint64)[0] == 2**64 - 3
