"""The element types beyond f16 / f32: bf16, the float8 and float4 formats, i2 / i4,
i16 and the unsigned integers. Every one is a type of the ge dialect (constants
and arguments round-trip through the textual form), has a numpy storage dtype
(ml_dtypes' for the formats numpy lacks) and a compute dtype, a tolerance from
its precision, random inputs and npz files."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from xdsl.dialects.builtin import f16, f32, f64

from gecomp.core import dtypes
from gecomp.dialects.context import make_context
from gecomp.core.parsing import parse_module, verify_module
from gecomp.simulator.compare import precision_floor, tolerance, worst_mismatch
from gecomp.simulator.reference import run_reference
from gecomp.core.signature import TensorSpec, load_inputs, random_inputs, save_outputs

NEW_TYPES = {
    "bf16": ml_dtypes.bfloat16,
    "f8E4M3FN": ml_dtypes.float8_e4m3fn,
    "f8E4M3FNUZ": ml_dtypes.float8_e4m3fnuz,
    "f8E5M2": ml_dtypes.float8_e5m2,
    "f8E5M2FNUZ": ml_dtypes.float8_e5m2fnuz,
    "f8E8M0FNU": ml_dtypes.float8_e8m0fnu,
    "f4E2M1FN": ml_dtypes.float4_e2m1fn,
    "i2": ml_dtypes.int2,
    "i4": ml_dtypes.int4,
    "i16": np.int16,
    "ui2": ml_dtypes.uint2,
    "ui4": ml_dtypes.uint4,
    "ui8": np.uint8,
    "ui16": np.uint16,
    "ui32": np.uint32,
    "ui64": np.uint64,
}


def _module(text: str):
    module = parse_module(make_context(), text, "test.mlir")
    verify_module(module)
    return module


@pytest.mark.parametrize("name", NEW_TYPES)
def test_type_maps_to_its_storage_dtype_and_back(name):
    t = dtypes.element_type_by_name(name)
    assert str(t) == name
    assert dtypes.to_numpy_dtype(t) == np.dtype(NEW_TYPES[name])
    assert dtypes.from_numpy_dtype(NEW_TYPES[name]) == t
    assert dtypes.is_supported(t)


def test_classification():
    assert dtypes.is_float(dtypes.bf16) and dtypes.is_narrow_float(dtypes.bf16)
    assert dtypes.is_float8(dtypes.f8E5M2) and not dtypes.is_float8(dtypes.bf16)
    assert not dtypes.is_narrow_float(f32) and dtypes.is_narrow_float(f16)
    assert dtypes.is_integer(dtypes.i4) and not dtypes.is_unsigned(dtypes.i4)
    assert dtypes.is_unsigned(dtypes.ui8) and dtypes.integer_bits(dtypes.ui4) == 4
    assert dtypes.byte_width(dtypes.i4) == 1 and dtypes.byte_width(dtypes.bf16) == 2
    assert dtypes.compute_dtype(np.dtype(ml_dtypes.float8_e4m3fn)) == np.float32
    assert dtypes.compute_dtype(np.dtype(ml_dtypes.int4)) == np.int8
    assert dtypes.compute_dtype(np.dtype(ml_dtypes.uint2)) == np.uint8
    assert dtypes.compute_dtype(np.dtype(np.uint16)) == np.uint16
    assert dtypes.compute_dtype(np.dtype(np.float64)) == np.float64


@pytest.mark.parametrize(
    "narrow,wide,exact",
    [
        (f16, f32, True),
        (dtypes.f8E4M3FN, f16, True),
        (dtypes.f8E5M2, dtypes.bf16, True),
        (dtypes.f8E8M0FNU, dtypes.bf16, True),
        (dtypes.f4E2M1FN, dtypes.f8E4M3FN, True),
        (f32, f64, True),
        (dtypes.bf16, f16, False),  # range
        (f16, dtypes.bf16, False),  # precision
        (dtypes.f8E8M0FNU, f16, False),  # 2^-127 .. 2^127
        (f32, f16, False),
    ],
)
def test_exactly_representable(narrow, wide, exact):
    assert dtypes.is_exactly_representable(narrow, wide) == exact


def test_constants_and_arguments_round_trip():
    text = """func.func @main(%x: tensor<3xbf16>, %u: tensor<3xui16>) -> (tensor<3xbf16>, tensor<3xui16>, tensor<2xi4>, tensor<2xf8E5M2FNUZ>, tensor<2xf4E2M1FN>, tensor<2xui2>, tensor<2xf8E8M0FNU>, tensor<300xi4>) {
  %c = ge.const dense<[1.5, -2.0, 3.0]> : tensor<3xbf16>
  %a = ge.add %x, %c : (tensor<3xbf16>, tensor<3xbf16>) -> tensor<3xbf16>
  %k = ge.const dense<[65535, 1, 7]> : tensor<3xui16>
  %s = ge.sub %u, %k : (tensor<3xui16>, tensor<3xui16>) -> tensor<3xui16>
  %i = ge.const dense<[-8, 7]> : tensor<2xi4>
  %f = ge.const dense<[0.5, -57344.0]> : tensor<2xf8E5M2FNUZ>
  %h = ge.const dense<[-6.0, 0.5]> : tensor<2xf4E2M1FN>
  %q = ge.const dense<3> : tensor<2xui2>
  %e = ge.const dense<[0.25, 1024.0]> : tensor<2xf8E8M0FNU>
  %w = ge.const #ge.random<uniform, seed = 3, low = -8.0, high = 8.0> : tensor<300xi4>
  func.return %a, %s, %i, %f, %h, %q, %e, %w : tensor<3xbf16>, tensor<3xui16>, tensor<2xi4>, tensor<2xf8E5M2FNUZ>, tensor<2xf4E2M1FN>, tensor<2xui2>, tensor<2xf8E8M0FNU>, tensor<300xi4>
}"""
    module = _module(text)
    printed = str(module)
    again = _module(printed)
    assert str(again) == printed
    inputs = [np.array([1, 2, 3], ml_dtypes.bfloat16), np.array([0, 5, 7], np.uint16)]
    first, second = run_reference(module, inputs), run_reference(again, inputs)
    for a, b in zip(first, second, strict=True):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    a, s, i, f, h, q, e, w = first
    assert a.dtype == ml_dtypes.bfloat16 and list(a.astype(float)) == [2.5, 0.0, 6.0]
    assert list(s) == [1, 4, 0]  # 0 - 65535 wraps
    assert list(i.astype(int)) == [-8, 7]
    assert list(f.astype(float)) == [0.5, -57344.0] and list(h.astype(float)) == [-6.0, 0.5]
    assert list(q.astype(int)) == [3, 3] and list(e.astype(float)) == [0.25, 1024.0]
    assert w.dtype == ml_dtypes.int4 and -8 <= w.astype(int).min() and w.astype(int).max() <= 7


def test_large_dense_of_a_new_type_prints_as_hex_and_reads_back():
    values = np.arange(-100, 100).astype(ml_dtypes.bfloat16)
    from gecomp.dialects.ge import ConstOp

    op = ConstOp.from_array(values)
    text = f"""func.func @main() -> tensor<200xbf16> {{
  %c{str(op)[str(op).index(" = ") :]}
  func.return %c : tensor<200xbf16>
}}"""
    assert '"0x' in text
    (result,) = run_reference(_module(text), [])
    assert np.array_equal(result, values)


def test_verifier_rejects_arithmetic_the_type_lacks():
    with pytest.raises(Exception, match="float element type"):
        _module("""func.func @main(%x: tensor<4xui8>) -> tensor<4xui8> {
  %y = ge.exp %x : (tensor<4xui8>) -> tensor<4xui8>
  func.return %y : tensor<4xui8>
}""")


def test_tolerances_follow_precision():
    assert tolerance(np.float16) == (1e-2, 1e-2)
    assert tolerance(ml_dtypes.bfloat16) == (2**-6, 2**-6)
    assert tolerance(ml_dtypes.float8_e4m3fn) == (0.25, 0.25)
    assert tolerance(ml_dtypes.float8_e5m2) == (0.5, 0.5)
    assert tolerance(ml_dtypes.int4) == (0.0, 0.0) and tolerance(np.uint16) == (0.0, 0.0)
    # one rounding of e4m3 passes, two units in the last place more does not
    expected = np.array([1.0], ml_dtypes.float8_e4m3fn)
    assert worst_mismatch("r", expected, np.array([1.125], ml_dtypes.float8_e4m3fn)) is not None
    assert worst_mismatch("r", expected, np.array([1.125], ml_dtypes.float8_e4m3fn)).ratio <= 1
    assert worst_mismatch("r", expected, np.array([1.75], ml_dtypes.float8_e4m3fn)).ratio > 1
    assert worst_mismatch("r", np.array([3], ml_dtypes.int4), np.array([2], ml_dtypes.int4)).ratio > 1


def test_precision_floor_is_the_least_precise_float():
    module = _module("""func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = ge.cast %x : (tensor<4xf32>) -> tensor<4xbf16>
  %b = ge.cast %a : (tensor<4xbf16>) -> tensor<4xf8E4M3FN>
  %c = ge.cast %b : (tensor<4xf8E4M3FN>) -> tensor<4xf16>
  %d = ge.cast %c : (tensor<4xf16>) -> tensor<4xf32>
  func.return %d : tensor<4xf32>
}""")
    assert precision_floor(module) == np.dtype(ml_dtypes.float8_e4m3fn)


def test_random_inputs_and_npz_files(tmp_path):
    specs = [TensorSpec(n, dtypes.tensor_type([64], dtypes.element_type_by_name(n))) for n in NEW_TYPES]
    arrays = random_inputs(specs, seed=4)
    for spec, array in zip(specs, arrays):
        assert array.dtype == spec.dtype and array.shape == (64,)
        if dtypes.is_float_dtype(array.dtype):
            values = array.astype(np.float64)
            assert np.isfinite(values).all() and len(np.unique(values)) > 2
    path = str(tmp_path / "values.npz")
    save_outputs(path, specs, arrays)
    for array, back in zip(arrays, load_inputs(path, specs), strict=True):
        assert back.dtype == array.dtype and np.array_equal(back.view(np.uint8), array.view(np.uint8))
