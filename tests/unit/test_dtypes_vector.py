"""Vector kernels on the element types beyond f16 / f32 / i32: integer arithmetic
on i16, i8 and the unsigned integers (numpy's wraparound, ONNX's truncating
division), max pooling of integers, and arithmetic, reductions and softmax on
bf16 and float8 (computed in fp32, rounded once). Compiled with
`ge-lower-to-npu{hw=tiny}` (tiles, tails and two cores on small tensors) and
simulated; integers must match the reference interpreter exactly."""

from __future__ import annotations

import numpy as np
import pytest

from vector_testing import assert_matches, compile_and_compare, one_op, tensor

INTEGERS = ["i16", "ui8", "ui16", "ui32", "ui64", "i8"]
SHAPE = [37, 30]


def _extremes(dtype: str, shape, seed: int) -> np.ndarray:
    """Values over the whole range of the type, its ends included (wraparound)."""
    info = np.iinfo(np.dtype({"i16": np.int16, "ui8": np.uint8, "ui16": np.uint16, "ui32": np.uint32,
                              "ui64": np.uint64, "i8": np.int8}[dtype]))
    rng = np.random.default_rng(seed)
    values = rng.integers(info.min, info.max, size=shape, dtype=info.dtype, endpoint=True)
    values.flat[:4] = [info.min, info.max, 0, 1]
    return values


@pytest.mark.parametrize("dtype", INTEGERS)
@pytest.mark.parametrize("op", ["ge.add", "ge.sub", "ge.mul", "ge.maximum", "ge.minimum"])
def test_integer_binary_wraps_like_numpy(op, dtype):
    t = tensor(SHAPE, dtype)
    inputs = [_extremes(dtype, SHAPE, 1), _extremes(dtype, SHAPE, 2)]
    assert_matches(one_op(op, [t, t], t), inputs=inputs)


@pytest.mark.parametrize("dtype", INTEGERS)
def test_integer_binary_with_broadcasts_and_scalars(dtype):
    full, row, scalar = tensor(SHAPE, dtype), tensor(SHAPE[-1:], dtype), tensor([], dtype)
    for op in ("ge.sub", "ge.mul"):
        assert_matches(one_op(op, [full, row], full), inputs=[_extremes(dtype, SHAPE, 3), _extremes(dtype, SHAPE[-1:], 4)])
    text = f"""func.func @main(%x: {full}) -> {full} {{
  %c = ge.const dense<3> : {scalar}
  %y = ge.sub %x, %c : ({full}, {scalar}) -> {full}
  func.return %y : {full}
}}"""
    assert_matches(text, inputs=[_extremes(dtype, SHAPE, 5)])  # x - 3 below zero wraps for unsigned types


@pytest.mark.parametrize("dtype", INTEGERS)
def test_integer_divide_truncates_towards_zero(dtype):
    x = _extremes(dtype, SHAPE, 6)
    rng = np.random.default_rng(7)
    signed = dtype.startswith("i")
    divisors = [-7, -3, -1, 1, 2, 5, 9] if signed else [1, 2, 3, 7, 200]
    y = rng.choice(divisors, size=SHAPE).astype(x.dtype)
    if dtype == "ui64":
        x = x % (1 << 53)  # through fp64: exact below 2^53
    t = tensor(SHAPE, dtype)
    assert_matches(one_op("ge.div", [t, t], t), inputs=[x, y])


def test_signed_division_of_the_minimum_by_minus_one_wraps():
    x = np.array([[-32768, -32767, 7, -7]], np.int16)
    y = np.array([[-1, -1, -2, 2]], np.int16)
    t = tensor([1, 4], "i16")
    assert_matches(one_op("ge.div", [t, t], t), inputs=[x, y])


@pytest.mark.parametrize("dtype", ["ui8", "i8", "i16"])
def test_integer_max_pool(dtype):
    x = _extremes(dtype, [2, 5, 9, 11], 8)
    text = one_op("ge.max_pool2d", [tensor([2, 5, 9, 11], dtype)], tensor([2, 5, 5, 6], dtype),
                  attrs="kernel = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1]")
    assert_matches(text, inputs=[x])


@pytest.mark.parametrize("dtype", ["bf16", "f8E4M3FN", "f8E5M2"])
def test_narrow_float_arithmetic(dtype):
    t = tensor(SHAPE, dtype)
    for op in ("ge.add", "ge.mul", "ge.div"):
        assert_matches(one_op(op, [t, t], t))
    for op in ("ge.exp", "ge.sigmoid", "ge.gelu", "ge.neg"):
        assert_matches(one_op(op, [t], t))


def test_bf16_reduction_and_softmax_accumulate_in_fp32():
    x, row = tensor([33, 300], "bf16"), tensor([33, 1], "bf16")
    assert_matches(one_op("ge.reduce_sum", [x], row, attrs="axes = [1], keepdims = true"))
    assert_matches(one_op("ge.reduce_mean", [x], row, attrs="axes = [1], keepdims = true"))
    assert_matches(one_op("ge.softmax", [x], x, attrs="axis = -1"), atol=1e-3)


def test_fused_group_of_mixed_types():
    """An auto-fused group: bf16 in, a cast chain through float8, ui8 arithmetic."""
    text = """func.func @main(%x: tensor<40x64xbf16>, %u: tensor<40x64xui8>) -> (tensor<40x64xf32>, tensor<40x64xui8>) {
  %e = ge.exp %x : (tensor<40x64xbf16>) -> tensor<40x64xbf16>
  %q = ge.cast %e : (tensor<40x64xbf16>) -> tensor<40x64xf8E4M3FN>
  %f = ge.cast %q : (tensor<40x64xf8E4M3FN>) -> tensor<40x64xf32>
  %s = ge.mul %u, %u : (tensor<40x64xui8>, tensor<40x64xui8>) -> tensor<40x64xui8>
  %t = ge.sub %s, %u : (tensor<40x64xui8>, tensor<40x64xui8>) -> tensor<40x64xui8>
  func.return %f, %t : tensor<40x64xf32>, tensor<40x64xui8>
}"""
    rng = np.random.default_rng(9)
    import ml_dtypes

    inputs = [rng.standard_normal((40, 64)).astype(ml_dtypes.bfloat16), rng.integers(0, 256, (40, 64)).astype(np.uint8)]
    for pipeline in ("ge-compile{hw=tiny}", "ge-compile{fuse=false hw=tiny}"):
        mismatch, _, module = compile_and_compare(text, pipeline=pipeline, inputs=inputs)
        assert mismatch is None, mismatch
        assert "saturate = true" in str(module)
