"""Converters added for the node-test target of issue 31, beyond their ONNX node
tests: the exact integer matrix product and convolution when K is longer than
one float32-exact chunk, Compress with a run-time condition refused with the
input named, and DFT against numpy's float64 FFT at a length the node tests
do not use."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from onnx import TensorProto, helper  # noqa: E402

from gecomp.core.diagnostics import CompileError  # noqa: E402
from gecomp.frontend.importer import import_model  # noqa: E402
from gecomp.frontend.onnx_proto import model_from_proto  # noqa: E402
from gecomp.simulator.reference import run_reference  # noqa: E402


def _run(op, inputs, types, out_type, initializers=(), opset=21, **attrs):
    names = [*inputs, *(n for n, _ in initializers)]
    graph = helper.make_graph(
        [helper.make_node(op, names, ["y"], **attrs)], "g",
        [helper.make_tensor_value_info(k, types[k], v.shape) for k, v in inputs.items()],
        [helper.make_tensor_value_info("y", out_type, None)],
        [onnx.numpy_helper.from_array(v, k) for k, v in initializers],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    return run_reference(import_model(model_from_proto(model)), list(inputs.values()))[0]


def test_matmul_integer_is_exact_over_long_k():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, (3, 1200), dtype=np.uint8)
    b = rng.integers(0, 256, (1200, 5), dtype=np.uint8)
    zero = np.array(0, np.uint8)
    got = _run("MatMulInteger", {"a": a, "b": b}, {"a": TensorProto.UINT8, "b": TensorProto.UINT8},
               TensorProto.INT32, initializers=[("za", zero), ("zb", zero)])
    want = a.astype(np.int64) @ b.astype(np.int64)
    assert want.max() > 1 << 24  # beyond float32's exact integers
    np.testing.assert_array_equal(got, want)


def test_conv_integer_is_exact_over_many_channels():
    rng = np.random.default_rng(1)
    x = rng.integers(0, 256, (1, 150, 4, 4), dtype=np.uint8)
    w = rng.integers(0, 256, (2, 150, 3, 3), dtype=np.uint8)
    got = _run("ConvInteger", {"x": x, "w": w}, {"x": TensorProto.UINT8, "w": TensorProto.UINT8},
               TensorProto.INT32, opset=10)
    from onnx.reference import ReferenceEvaluator

    node = helper.make_node("ConvInteger", ["x", "w"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.UINT8, x.shape),
                                            helper.make_tensor_value_info("w", TensorProto.UINT8, w.shape)],
                              [helper.make_tensor_value_info("y", TensorProto.INT32, None)])
    want = ReferenceEvaluator(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 10)])).run(
        None, {"x": x, "w": w})[0]
    assert np.abs(want).max() > 1 << 24
    np.testing.assert_array_equal(got, want)


def test_compress_needs_a_constant_condition():
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    with pytest.raises(CompileError, match="condition.*must be a constant.*graph input 'cond'"):
        _run("Compress", {"x": x, "cond": np.array([True, False, True])},
             {"x": TensorProto.FLOAT, "cond": TensorProto.BOOL}, TensorProto.FLOAT, axis=0)


@pytest.mark.parametrize("inverse,onesided", [(0, 0), (1, 0), (0, 1)])
def test_dft_matches_float64_fft(inverse, onesided):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 7, 3, 1 if onesided else 2)).astype(np.float32)
    got = _run("DFT", {"x": x}, {"x": TensorProto.FLOAT}, TensorProto.FLOAT, opset=19, axis=1,
               inverse=inverse, onesided=onesided)
    signal = x[..., 0].astype(np.float64) + (0 if onesided else 1j * x[..., 1])
    want = (np.fft.ifft if inverse else np.fft.fft)(signal, axis=1)
    if onesided:
        want = want[:, : 7 // 2 + 1]
    np.testing.assert_allclose(got, np.stack([want.real, want.imag], -1), rtol=1e-5, atol=1e-5)
