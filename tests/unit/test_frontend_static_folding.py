"""Models as exported: import-time evaluation of static subgraphs (checked against
onnxruntime), the import-time ops, old opsets upgraded by onnx's version converter,
model-local functions inlined, external data, `--bind` / `--bind-npz`, and the
one-line list of every unsupported op type."""

from __future__ import annotations

import os

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from gecomp.core.diagnostics import CompileError  # noqa: E402
from gecomp.frontend.converters import UnsupportedError  # noqa: E402
from gecomp.frontend.converters.context import FOLD_LIMIT_BYTES  # noqa: E402
from gecomp.frontend.importer import import_model, load_model, translate_file  # noqa: E402
from gecomp.frontend.onnxtxt import parse_onnxtxt  # noqa: E402
from gecomp.simulator.reference import run_reference  # noqa: E402
from gecomp.tools import ge_translate  # noqa: E402

HERE = os.path.dirname(__file__)
MASK_MODEL = os.path.join(HERE, "..", "lit", "frontend", "mask-folded.onnxtxt")


def onnxruntime_outputs(proto, feeds: dict) -> list[np.ndarray]:
    ort = pytest.importorskip("onnxruntime")
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def ge_ops(module) -> list[str]:
    return [op.name for op in module.walk() if op.name.startswith("ge.")]


def rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# ---- import-time evaluation ------------------------------------------------------------------


def test_exported_mask_subgraph_is_one_constant_and_matches_onnxruntime():
    text = open(MASK_MODEL).read()
    module = import_model(parse_onnxtxt(text, "mask.onnxtxt"))
    ops = ge_ops(module)
    # Shape, Gather, Range, Cast, Unsqueeze, Sub, Relu, Concat, ConstantOfShape,
    # Where and Expand all folded: one constant, the attention is what is left.
    assert sorted(ops) == sorted(["ge.transpose", "ge.batch_matmul", "ge.const", "ge.add", "ge.softmax",
                                  "ge.batch_matmul"])
    x = rand(1, 4, 8)
    (expected,) = onnxruntime_outputs(onnx.parser.parse_model(text), {"X": x})
    (actual,) = run_reference(module, [x])
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6)


STATIC_CHAIN = """<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3, 4] X) => (float[2, 12] Y, int32[2, 3] C, float[2, 3, 3] W, int64[5] R, int64 S, float[3, 3] E)
  <int64[1] zero = {0}, int64[1] one = {1}, float[3] v = {1, 2, 3}, bool[3] m = {1, 0, 1}> {
   s = Shape (X)
   i = Constant <value = int64 {0}> ()
   b = Gather (s, i)
   bz = Unsqueeze (b, zero)
   rest = Constant <value_ints = [-1]> ()
   shape = Concat <axis = 0> (bz, rest)
   Y = Reshape (X, shape)
   s2 = Shape <end = 2> (X)
   s3 = Shape <start = 0, end = -1> (X)
   big = Expand (v, s3)
   flat = Reshape (big, s2)
   C = Cast <to = 6> (flat)
   n = Neg (v)
   w = Where (m, v, n)
   last = Shape <start = -2, end = 2> (X)
   shape3 = Concat <axis = 0> (s2, last)
   W = Expand (w, shape3)
   lo = Constant <value = int64 {-3}> ()
   hi = Constant <value = int64 {7}> ()
   step = Constant <value = int64 {2}> ()
   R = Range (lo, hi, step)
   S = Size (X)
   tail = Shape <start = -2> (X)
   three = Slice (tail, zero, one)
   square = Concat <axis = 0> (three, three)
   filled = ConstantOfShape <value = float[1] {2}> (square)
   E = EyeLike <k = 1> (filled)
}
"""


def test_static_chains_fold_with_every_attribute_form():
    """Shape with start/end, Gather, Unsqueeze, Concat, Reshape, Cast, Expand of
    constants, Where with a constant condition, Range, Size, ConstantOfShape and
    EyeLike: every output but Y is a constant, and all agree with onnxruntime."""
    text = STATIC_CHAIN
    module = import_model(parse_onnxtxt(text, "t.onnxtxt"))
    assert ge_ops(module).count("ge.reshape") == 1  # Y's, of the graph input
    assert not {"ge.gather", "ge.concat", "ge.expand", "ge.where", "ge.cast", "ge.slice"} & set(ge_ops(module))
    x = rand(2, 3, 4)
    expected = onnxruntime_outputs(onnx.parser.parse_model(text), {"X": x})
    actual = run_reference(module, [x])
    for e, a in zip(expected, actual, strict=True):
        assert a.dtype == e.dtype and a.shape == e.shape
        np.testing.assert_allclose(a, e, rtol=1e-6)


def test_expanding_beyond_the_limit_stays_a_run_time_op():
    """A broadcast to more than FOLD_LIMIT_BYTES is not made a constant."""
    side = int(np.sqrt(FOLD_LIMIT_BYTES / 4)) + 16
    text = (
        '<ir_version: 8, opset_import: ["" : 17]>\n'
        f"g (float[1] X) => (float[{side}, {side}] Y) <int64[2] s = {{{side}, {side}}}> {{\n"
        "   z = ConstantOfShape <value = float[1] {1}> (s)\n   Y = Add (z, X)\n}"
    )
    module = import_model(parse_onnxtxt(text, "t.onnxtxt"))
    assert sorted(ge_ops(module)) == ["ge.add", "ge.const", "ge.expand"]


def test_range_needs_constant_inputs():
    text = (
        '<ir_version: 8, opset_import: ["" : 17]>\n'
        "g (int64 N) => (int64[4] Y) <int64 zero = {0}, int64 one = {1}> { Y = Range (zero, N, one) }"
    )
    with pytest.raises(CompileError, match=r"\(Range, output 'Y'\): input #1 \('limit'\) must be a constant, "
                                           r"but it depends on graph input 'N'"):
        import_model(parse_onnxtxt(text, "t.onnxtxt"))


# ---- opsets, functions, external data ---------------------------------------------------------


def test_opset_6_model_is_converted_and_matches_onnxruntime(tmp_path):
    """Add with the opset-6 `broadcast` attribute, BatchNormalization with its
    opset-6 form: upgraded by onnx.version_converter to opset 13."""
    x, w = rand(2, 3, 4), rand(4, seed=1)
    scale, bias, mean, var = rand(3, seed=2), rand(3, seed=3), rand(3, seed=4), np.abs(rand(3, seed=5)) + 0.5
    weights = [(w, "W"), (scale, "scale"), (bias, "bias"), (mean, "mean"), (var, "var")]
    graph = helper.make_graph(
        [
            helper.make_node("Add", ["X", "W"], ["A"], broadcast=1),
            helper.make_node("BatchNormalization", ["A", "scale", "bias", "mean", "var"], ["B"], is_test=1),
            helper.make_node("Relu", ["B"], ["Y"]),
        ],
        "old",
        # IR version 3: initializers are listed as inputs too, as old exporters wrote them
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, a.shape) for a, n in [(x, "X"), *weights]],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2, 3, 4])],
        [numpy_helper.from_array(a, n) for a, n in weights],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 6)], ir_version=3)
    path = tmp_path / "old.onnx"
    onnx.save(proto, str(path))
    (actual,) = run_reference(translate_file(str(path)), [x])
    converted = onnx.version_converter.convert_version(proto, 13)
    (expected,) = onnxruntime_outputs(converted, {"X": x})
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6)


def test_old_opset_text_model_is_read_by_onnx_and_converted(tmp_path):
    path = tmp_path / "old.onnxtxt"
    path.write_text('<ir_version: 3, opset_import: ["" : 6]>\n'
                    "g (float[2, 3] X, float[3] B) => (float[2, 3] Y) { Y = Add <broadcast = 1> (X, B) }")
    x, b = rand(2, 3), rand(3, seed=1)
    (y,) = run_reference(translate_file(str(path)), [x, b])
    np.testing.assert_allclose(y, x + b)


def test_unconvertible_model_is_one_line_error(tmp_path):
    graph = helper.make_graph([helper.make_node("Upsample", ["X"], ["Y"], scales=[1.0, 2.0], mode="bogus")],
                              "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2, 6])])
    path = tmp_path / "bad.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 6)], ir_version=3), str(path))
    with pytest.raises(CompileError) as info:
        translate_file(str(path))
    assert "\n" not in info.value.message


def test_model_local_functions_are_inlined():
    """A dynamo-style model: the graph calls a model-local function (twice)."""
    text = (
        '<ir_version: 8, opset_import: ["" : 17, "local" : 1]>\n'
        "g (float[2, 3] X) => (float[2, 3] Y) { T = local.Gate (X) Y = local.Gate (T) }\n"
        '<domain: "local", opset_import: ["" : 17]>\n'
        "Gate (x) => (y) { s = Sigmoid (x) y = Mul (x, s) }"
    )
    proto = onnx.parser.parse_model(text)
    model = load_model_from_text(text)
    module = import_model(model)
    assert "ge.sigmoid" in ge_ops(module)
    x = rand(2, 3)
    (expected,) = onnxruntime_outputs(proto, {"X": x})
    (actual,) = run_reference(module, [x])
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6)


def load_model_from_text(text: str):
    from gecomp.frontend.onnx_proto import model_from_proto

    return model_from_proto(onnx.parser.parse_model(text))


def test_local_function_in_text_file_is_inlined_through_onnx(tmp_path):
    path = tmp_path / "f.onnxtxt"
    path.write_text('<ir_version: 8, opset_import: ["" : 17, "local" : 1]>\n'
                    "g (float[2] X) => (float[2] Y) { Y = local.Twice (X) }\n"
                    '<domain: "local", opset_import: ["" : 17]>\nTwice (x) => (y) { y = Add (x, x) }')
    (y,) = run_reference(translate_file(str(path)), [np.array([1, 2], np.float32)])
    assert y.tolist() == [2.0, 4.0]


def test_external_data_model_loads(tmp_path):
    w = rand(64, 32, seed=3)
    graph = helper.make_graph([helper.make_node("MatMul", ["X", "W"], ["Y"])], "g",
                              [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 64])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2, 32])],
                              [numpy_helper.from_array(w, "W")])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = tmp_path / "model.onnx"
    onnx.save(proto, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
              location="weights.bin", size_threshold=0)
    assert (tmp_path / "weights.bin").stat().st_size == w.nbytes
    x = rand(2, 64)
    (y,) = run_reference(translate_file(str(path)), [x])
    np.testing.assert_allclose(y, x @ w, rtol=1e-5, atol=1e-5)
    (tmp_path / "weights.bin").unlink()
    with pytest.raises(CompileError) as info:
        translate_file(str(path))
    assert "\n" not in info.value.message


# ---- --bind ----------------------------------------------------------------------------------

BOUND = """<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3] X, int64[2] S, int64[1] A) => (float[3, 2] Y, float[2, 1] R) {
   [reshape] Y = Reshape (X, S)
   R = ReduceSum <keepdims = 1> (X, A)
}
"""


def test_bind_and_bind_npz_make_inputs_constants(tmp_path, capsys):
    model = tmp_path / "m.onnxtxt"
    model.write_text(BOUND)
    np.save(tmp_path / "s.npy", np.array([3, 2]))
    np.savez(tmp_path / "a.npz", A=np.array([1]))
    out = tmp_path / "m.mlir"
    assert ge_translate.main([str(model), "--bind", f"S={tmp_path / 's.npy'}",
                              "--bind-npz", str(tmp_path / "a.npz"), "-o", str(out)]) == 0
    from gecomp.dialects.context import make_context
    from gecomp.core.parsing import load_module

    module = load_module(make_context(), str(out))
    x = rand(2, 3)
    expected = onnxruntime_outputs(onnx.parser.parse_model(BOUND),
                                   {"X": x, "S": np.array([3, 2]), "A": np.array([1])})
    actual = run_reference(module, [x])  # one argument left: X
    for e, a in zip(expected, actual, strict=True):
        np.testing.assert_allclose(a, e, rtol=1e-6)


def test_unbound_shape_input_error_names_the_input_and_the_node(tmp_path, capsys):
    model = tmp_path / "m.onnxtxt"
    model.write_text(BOUND)
    assert ge_translate.main([str(model)]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err
    assert "node 'reshape' (Reshape): input #1 ('shape') must be a constant, but it depends on graph input 'S'" in err


@pytest.mark.parametrize("args, message", [
    (["--bind", "T={dir}/s.npy"], "cannot bind 'T': the model has no input of that name (inputs: X, S, A)"),
    (["--bind", "S={dir}/s32.npy"], "cannot bind 'S': the input is int64[2], the data is int32[2]"),
    (["--bind", "S={dir}/missing.npy"], "cannot open"),
    (["--bind", "S"], "--bind expects NAME=FILE.npy"),
    (["--bind", "S={dir}/s.npy", "--bind", "S={dir}/s.npy"], "input 'S' is bound twice"),
])
def test_bad_bindings_are_one_line_errors(tmp_path, capsys, args, message):
    model = tmp_path / "m.onnxtxt"
    model.write_text(BOUND)
    np.save(tmp_path / "s.npy", np.array([3, 2]))
    np.save(tmp_path / "s32.npy", np.array([3, 2], np.int32))
    assert ge_translate.main([str(model), *(a.format(dir=tmp_path) for a in args)]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and message in err


# ---- every unsupported op at once --------------------------------------------------------------


def test_every_unsupported_op_is_listed_with_its_count():
    nodes = [
        helper.make_node("Relu", ["X"], ["a"]),
        helper.make_node("NonZero", ["a"], ["n1"], name="first"),
        helper.make_node("Attention", ["a"], ["m1"], domain="com.microsoft"),
        helper.make_node("NonZero", ["X"], ["n2"]),
        helper.make_node("Attention", ["X"], ["m2"], domain="com.microsoft"),
        helper.make_node("Unique", ["X"], ["u"]),
        helper.make_node("Attention", ["a"], ["m3"], domain="com.microsoft"),
        helper.make_node("Relu", ["a"], ["Y"]),
    ]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [4])])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.microsoft", 1)])
    from gecomp.frontend.onnx_proto import model_from_proto

    with pytest.raises(UnsupportedError) as info:
        import_model(model_from_proto(proto))
    assert info.value.message == (
        "model uses 3 unsupported op types: NonZero (2), com.microsoft.Attention (3), Unique (1); "
        "the first is node 'first' (NonZero) (ge-translate --list-ops lists the supported ones)"
    )


def test_load_model_reads_text_without_onnx_when_it_can(tmp_path):
    path = tmp_path / "m.onnxtxt"
    path.write_text(BOUND)
    assert load_model(str(path)).graph.nodes[0].location is not None  # the neutral reader, located
