"""The ONNX importer: ops and opset variants not covered by ONNX's node tests,
checked numerically against onnx's reference evaluator; the binary path; constant
folding of shape operands; and every class of error, with its location."""

from __future__ import annotations

import numpy as np
import pytest

from gecomp.core.diagnostics import CompileError
from gecomp.frontend.converters import UnsupportedError
from gecomp.frontend.importer import import_model, translate_file
from gecomp.frontend.onnxtxt import parse_onnxtxt
from gecomp.simulator.reference import run_reference


def header(opset: int = 17) -> str:
    return f'<ir_version: 8, opset_import: ["" : {opset}]>\n'


def import_text(text: str, dims=None):
    return import_model(parse_onnxtxt(text, "t.onnxtxt"), dims)


def check_against_onnx(text: str, *inputs: np.ndarray, rtol: float = 1e-5) -> None:
    """Our import run by our reference interpreter == onnx's ReferenceEvaluator."""
    onnx_parser = pytest.importorskip("onnx.parser")
    from onnx.reference import ReferenceEvaluator

    proto = onnx_parser.parse_model(text)
    feeds = {i.name: x for i, x in zip(proto.graph.input, inputs)}
    expected = ReferenceEvaluator(proto).run(None, feeds)
    actual = run_reference(import_text(text), list(inputs))
    assert len(actual) == len(expected)
    for e, a in zip(expected, actual):
        assert a.dtype == e.dtype and a.shape == e.shape
        np.testing.assert_allclose(a, e, rtol=rtol, atol=1e-6)


def rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# ---- ops and variants, against onnx's reference -----------------------------------------------

CASES = {
    "squeeze, unsqueeze, reduce, split with attributes (opset 11)": (
        header(11) + "g (float[2, 1, 6] X) => (float[2, 6] S, float[1, 2, 1, 6] U, float[2, 1, 1] M, "
        "float[2, 1, 2] A, float[2, 1, 4] B) { S = Squeeze <axes = [1]> (X) U = Unsqueeze <axes = [0]> (X) "
        "M = ReduceMean <axes = [1, 2]> (X) A, B = Split <axis = 2, split = [2, 4]> (X) }",
        [rand(2, 1, 6)],
    ),
    "split into uneven parts (opset 18) and equal ones": (
        header(18) + "g (float[7, 2] X) => (float[3, 2] A, float[3, 2] B, float[1, 2] C, float[2, 1] D, "
        "float[2, 1] E) <int64[1] zero = {0}, int64[1] two = {2}> "
        "{ A, B, C = Split <num_outputs = 3> (X) T = Slice (X, zero, two) D, E = Split <axis = 1> (T) }",
        [rand(7, 2)],
    ),
    "slice with negative steps and clamped bounds": (
        header() + "g (float[5, 6] X) => (float[3, 2] Y, float[0, 6] E) "
        "<int64[2] s = {-1, 100}, int64[2] e = {-100, -5}, int64[2] a = {0, 1}, int64[2] st = {-2, -3},"
        " int64[1] s0 = {3}, int64[1] e0 = {1}> { Y = Slice (X, s, e, a, st) E = Slice (X, s0, e0) }",
        [rand(5, 6)],
    ),
    "pad: reflect, edge, wrap, value, axes": (
        header(19) + "g (float[3, 4] X) => (float[5, 8] R, float[4, 6] E, float[7, 5] W, float[3, 7] C) "
        "<int64[4] p = {1, 2, 1, 2}, int64[4] q = {0, 1, 1, 1}, int64[4] w = {2, 0, 2, 1}, "
        "int64[2] c = {1, 2}, float v = {-5}, int64[1] a = {-1}> { R = Pad <mode = \"reflect\"> (X, p) "
        "E = Pad <mode = \"edge\"> (X, q) W = Pad <mode = \"wrap\"> (X, w) C = Pad (X, c, v, a) }",
        [rand(3, 4)],
    ),
    "gemm: transposes, alpha, beta, broadcast matrix C": (
        header() + "g (float[4, 3] A, float[5, 4] B, float[1, 5] C) => (float[3, 5] Y) "
        "{ Y = Gemm <transA = 1, transB = 1, alpha = 0.5, beta = -2.0> (A, B, C) }",
        [rand(4, 3), rand(5, 4, seed=1), rand(1, 5, seed=2)],
    ),
    "matmul: 1-D operands and broadcast batches": (
        header() + "g (float[4] v, float[3, 4, 2] T, float[2, 1, 2, 4] U) => (float[3, 2] A, float[2, 3, 2, 2] B) "
        "{ A = MatMul (v, T) B = MatMul (U, T) }",
        [rand(4), rand(3, 4, 2, seed=1), rand(2, 1, 2, 4, seed=2)],
    ),
    "conv 1-D, grouped and dilated conv 2-D": (
        header() + "g (float[1, 4, 9] X, float[2, 4, 3] W, float[1, 4, 7, 7] Z, float[4, 2, 2, 2] V) "
        "=> (float[1, 2, 5] Y, float[1, 4, 7, 4] Q) { Y = Conv <strides = [2], pads = [1, 1]> (X, W) "
        "Q = Conv <group = 2, dilations = [2, 1], strides = [1, 2], auto_pad = \"SAME_LOWER\"> (Z, V) }",
        [rand(1, 4, 9), rand(2, 4, 3, seed=1), rand(1, 4, 7, 7, seed=2), rand(4, 2, 2, 2, seed=3)],
    ),
    "pools 1-D and 3-D, dilated, ceil mode": (
        header(19) + "g (float[1, 2, 9] X, float[1, 2, 5, 6, 7] Z) => (float[1, 2, 5] A, float[1, 2, 2, 3, 3] B, "
        "float[1, 2, 3, 3, 3] C) { A = MaxPool <kernel_shape = [3], strides = [2], pads = [1, 1]> (X) "
        "B = MaxPool <kernel_shape = [2, 2, 3], dilations = [2, 1, 1], strides = [2, 2, 2], ceil_mode = 1> (Z) "
        "C = AveragePool <kernel_shape = [3, 3, 3], pads = [1, 0, 1, 1, 1, 0], strides = [2, 2, 2], "
        "count_include_pad = 1> (Z) }",
        [rand(1, 2, 9), rand(1, 2, 5, 6, 7, seed=1)],
    ),
    "layer norm statistics outputs, broadcast scale, rms norm": (
        header(23) + "g (float[2, 3, 4] X, float[1, 4] S) => (float[2, 3, 4] Y, float[2, 3, 1] M, "
        "float[2, 3, 1] I, float[2, 3, 4] R) { Y, M, I = LayerNormalization (X, S) "
        "R = RMSNormalization <axis = -2> (X, S) }",
        [rand(2, 3, 4), rand(1, 4, seed=1)],
    ),
    "batch norm in training mode: rank 3, momentum, running statistics": (
        header(15) + "g (float[4, 3, 5] X, float[3] S, float[3] B, float[3] M, float[3] V) => (float[4, 3, 5] Y, "
        "float[3] RM, float[3] RV) { Y, RM, RV = BatchNormalization <training_mode = 1, momentum = 0.7, "
        "epsilon = 0.01> (X, S, B, M, V) }",
        [rand(4, 3, 5) * 2 + 1, rand(3, seed=1), rand(3, seed=2), rand(3, seed=3), np.abs(rand(3, seed=4))],
    ),
    "pow with mixed types, variadic max, where, cast": (
        header() + "g (float[3] X, int32[3] K, float[3] Z, bool[3] c) => (float[3] P, float[3] M, float[3] W, int32[3] C) "
        "{ P = Pow (X, K) M = Max (X, Z, X) W = Where (c, X, Z) C = Cast <to = 6> (Z) }",
        [rand(3), np.array([2, 3, 0], np.int32), rand(3, seed=1) * 4, np.array([True, False, True])],
    ),
    "shape-derived reshape (folded at import) and constants": (
        header() + "g (float[2, 3, 4] X) => (float[2, 12] Y, float[2, 3, 4] E) <int64[1] zero = {0}> "
        "{ s = Shape (X) i = Constant <value = int64 {0}> () b = Gather (s, i) rest = Constant <value_ints = [-1]> () "
        "bz = Unsqueeze (b, zero) shape = Concat <axis = 0> (bz, rest) Y = Reshape (X, shape) "
        "k = Constant <value = float[4] {1, 2, 3, 4}> () E = Add (X, k) }",
        [rand(2, 3, 4)],
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_matches_onnx_reference(name: str):
    text, inputs = CASES[name]
    check_against_onnx(text, *inputs)


def softmax_reference(x: np.ndarray, axis: int, log: bool) -> np.ndarray:
    """Softmax before opset 13: over the input flattened to 2-D at `axis`."""
    flat = x.reshape(int(np.prod(x.shape[:axis])), -1)
    shifted = flat - flat.max(axis=1, keepdims=True)
    e = np.exp(shifted)
    out = shifted - np.log(e.sum(axis=1, keepdims=True)) if log else e / e.sum(axis=1, keepdims=True)
    return out.reshape(x.shape)


def test_softmax_before_opset_13_flattens_at_axis():
    # (onnx's ReferenceEvaluator implements only the opset-13 meaning, so numpy here)
    x = rand(2, 3, 4)
    module = import_text(header(11) + "g (float[2, 3, 4] X) => (float[2, 3, 4] Y, float[2, 3, 4] L, "
                         "float[2, 3, 4] Z) { Y = Softmax (X) L = LogSoftmax <axis = 1> (X) Z = Softmax <axis = 0> (X) }")
    y, log, whole = run_reference(module, [x])
    np.testing.assert_allclose(y, softmax_reference(x, 1, False), rtol=1e-5)
    np.testing.assert_allclose(log, softmax_reference(x, 1, True), rtol=1e-5)
    np.testing.assert_allclose(whole, softmax_reference(x, 0, False), rtol=1e-5)


def test_negative_pads_crop():
    # (onnx's ReferenceEvaluator cannot pad negatively, so numpy here)
    x = rand(3, 4)
    module = import_text(header() + "g (float[3, 4] X) => (float[2, 5] C) <int64[4] n = {-1, 0, 0, 1}> "
                         "{ C = Pad (X, n) }")
    (cropped,) = run_reference(module, [x])
    np.testing.assert_array_equal(cropped, np.pad(x[1:], ((0, 0), (0, 1))))


def test_folded_shape_computation_leaves_no_ops():
    text, _ = CASES["shape-derived reshape (folded at import) and constants"]
    printed = str(import_text(text))
    for leftover in ("ge.concat", "ge.gather", "ge.const dense<[2, -1]>"):
        assert leftover not in printed


def test_initializer_listed_as_input_is_a_constant():
    module = import_text(header() + "g (float[2] X, float[2] W = {1, 2}) => (float[2] Y) { Y = Add (X, W) }")
    main = module.body.block.first_op
    assert len(main.function_type.inputs.data) == 1
    (result,) = run_reference(module, [np.array([1, 1], np.float32)])
    assert result.tolist() == [2.0, 3.0]


def test_binary_model_imports_like_its_text(tmp_path):
    onnx = pytest.importorskip("onnx")
    text = CASES["gemm: transposes, alpha, beta, broadcast matrix C"][0]
    path = tmp_path / "gemm.onnx"
    onnx.save(onnx.parser.parse_model(text), str(path))
    assert str(translate_file(str(path))) == str(import_text(text))


def test_dims_and_declared_outputs():
    text = header() + "g (float[N, 4] X) => (float[N, 4] Y) { Y = Relu (X) }"
    module = import_text(text, {"N": 3})
    assert "tensor<3x4xf32>" in str(module)


# ---- errors ----------------------------------------------------------------------------------

ERRORS = {
    "unsupported op": ("Y = NonZero (X)", "2:52", UnsupportedError, "model uses 1 unsupported op type: NonZero (1); the first is node #0 (NonZero, output 'Y')"),
    "custom domain": ("Y = com.acme.Gelu (X)", "2:52", UnsupportedError, "unsupported op type: com.acme.Gelu (1)"),
    "attribute": ("Y = Relu <alpha = 1.0> (X)", "2:52", UnsupportedError, "attribute 'alpha' is not supported"),
    "missing attribute": ("Y = Concat (X, X)", "2:52", CompileError, "attribute 'axis' is required"),
    "wrong attribute kind": ("Y = Softmax <axis = \"last\"> (X)", "2:52", CompileError, "attribute 'axis' must be int, got string"),
    "non-constant": ("Y = Reshape (X, X)", "2:52", CompileError, "input #1 ('shape') must be a constant, but it depends on graph input 'X'"),
    "shape rule": ("Y = Add (X, Z)", "2:52", CompileError, "'ge.add' op operands are not broadcast-compatible: 2x3 vs 4"),
    "training": (
        "r = Constant <value = float {0.5}> () t = Constant <value = bool {1}> () Y = Dropout (X, r, t)",
        "2:125", UnsupportedError, "node #2 (Dropout, output 'Y'): training mode is not supported",
    ),
    "2-D input to Conv": ("Y = Conv (X, X)", "2:52", CompileError, "rank 3, 4 or 5"),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_name_the_node_and_point_at_it(name: str):
    body, where, kind, message = ERRORS[name]
    text = header() + "g (float[2, 3] X, float[4] Z) => (float[2, 3] Y) { " + body + " }"
    with pytest.raises(kind) as info:
        import_text(text)
    assert str(info.value).startswith(f"t.onnxtxt:{where}: error: ")
    assert message in info.value.message


def test_missing_onnx_package_is_one_clear_error(monkeypatch, tmp_path):
    import sys

    path = tmp_path / "m.onnx"
    path.write_bytes(b"")
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(CompileError, match="needs the onnx package"):
        translate_file(str(path))


def test_old_opsets_are_refused():
    with pytest.raises(UnsupportedError, match="opset 6 is not supported"):
        import_text(header(6) + "g (float[2] X) => (float[2] Y) { Y = Relu (X) }")
