"""The model set's honest judge (bench/models/judge.py, bench/models/float64.py):
a row whose simulated outputs are outside tolerance of onnxruntime's passes only if
they are no further from the float64 truth than onnxruntime's are; the truth is
the model rewritten to double and run by onnx.reference."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from gecomp.bench.models import float64, judge, run  # noqa: E402
from gecomp.simulator.compare import worst_mismatch  # noqa: E402

F32 = np.dtype(np.float32)


# ---- the judge ------------------------------------------------------------------------


def _truth(seed: int = 0):
    rng = np.random.default_rng(seed)
    return rng.uniform(-1.0, 1.0, (4, 32))


def _verdict(truth, oracle, candidate, truth_calls=None):
    """The judge's verdict, its check against the oracle made as bench/models.py makes it."""
    mismatch = worst_mismatch("out", oracle, candidate, F32)
    vs_oracle = mismatch.ratio if mismatch else 0.0

    def exact():
        if truth_calls is not None:
            truth_calls.append(1)
        return [truth]

    return judge.judge([oracle], [candidate], F32, vs_oracle, exact)


def test_a_candidate_closer_to_the_truth_than_an_inexact_oracle_passes_by_the_f64_judge():
    truth = _truth()
    allowed = 1e-4 + 1e-4 * np.abs(truth)
    oracle = (truth + 3.0 * allowed).astype(np.float32)  # the oracle 3x the tolerance off
    candidate = (truth - 2.0 * allowed).astype(np.float32)  # 5x off the oracle, 2x off the truth
    verdict = _verdict(truth, oracle, candidate)
    assert verdict.vs_oracle > 4.5
    assert verdict.judge == judge.F64 and verdict.passed
    assert verdict.candidate_vs_truth == pytest.approx(2.0, rel=1e-2)
    assert verdict.oracle_vs_truth == pytest.approx(3.0, rel=1e-2)
    assert verdict.candidate_abs < verdict.oracle_abs


def test_a_candidate_further_from_the_truth_than_the_oracle_fails():
    truth = _truth()
    allowed = 1e-4 + 1e-4 * np.abs(truth)
    oracle = (truth + 3.0 * allowed).astype(np.float32)
    candidate = truth.astype(np.float32)
    candidate[2, 7] = truth[2, 7] - 3.5 * allowed[2, 7]  # one element worse than the oracle's worst
    verdict = _verdict(truth, oracle, candidate)
    assert verdict.judge == judge.FAIL and not verdict.passed
    assert verdict.candidate_vs_truth == pytest.approx(3.5, rel=1e-2)
    assert "[2, 7]" in verdict.note and "vs f64" in verdict.note


def test_within_tolerance_of_the_oracle_is_the_fast_path_and_never_computes_the_truth():
    truth = _truth()
    oracle = (truth + 3e-4).astype(np.float32)
    candidate = oracle + np.float32(5e-5)
    calls = []
    verdict = _verdict(truth, oracle, candidate, calls)
    assert verdict.judge == judge.ORT and verdict.candidate_vs_truth is None and not calls


def test_a_truth_that_cannot_be_computed_fails_the_row_and_says_why():
    oracle = np.zeros((2, 2), np.float32)
    candidate = oracle + np.float32(1.0)

    def broken():
        raise float64.Float64Error("node 'ln' (LayerNormalization) in 'g': its type U admits float but not double")

    verdict = judge.judge([oracle], [candidate], F32, 1e4, broken)
    assert verdict.judge == judge.FAIL and verdict.note.startswith("f64 truth: Float64Error: node 'ln'")


# ---- the float64 model ----------------------------------------------------------------


def _conv_bn_gemm_softmax_cast():
    """x (f32 1x3x8x8), steps (int64 1x10) -> Conv -> BatchNormalization -> Flatten
    -> Gemm -> + Cast(steps to float) * Constant(value_float) -> Softmax."""
    rng = np.random.default_rng(1)

    def weight(name, *shape, scale=0.5):
        return numpy_helper.from_array(rng.normal(0, scale, shape).astype(np.float32), name)

    initializers = [
        weight("w", 4, 3, 3, 3), weight("b", 4),
        weight("gamma", 4), weight("beta", 4), weight("mean", 4),
        numpy_helper.from_array(rng.uniform(0.5, 2.0, 4).astype(np.float32), "var"),
        weight("fc", 10, 4 * 8 * 8, scale=0.05), weight("fc_b", 10),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c", "gamma", "beta", "mean", "var"], ["n"], epsilon=1e-5),
        helper.make_node("Flatten", ["n"], ["f"]),
        helper.make_node("Gemm", ["f", "fc", "fc_b"], ["g"], transB=1),
        helper.make_node("Cast", ["steps"], ["s"], to=TensorProto.FLOAT),
        helper.make_node("Constant", [], ["k"], value_float=0.125),
        helper.make_node("Mul", ["s", "k"], ["sk"]),
        helper.make_node("Add", ["g", "sk"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["y"], axis=-1),
    ]
    graph = helper.make_graph(
        nodes, "small",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8]),
         helper.make_tensor_value_info("steps", TensorProto.INT64, [1, 10])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
        initializers,
        value_info=[helper.make_tensor_value_info("c", TensorProto.FLOAT, [1, 4, 8, 8])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    feeds = [rng.normal(0, 1, (1, 3, 8, 8)).astype(np.float32), np.arange(10, dtype=np.int64).reshape(1, 10)]
    return model, feeds


def test_the_float64_model_computes_what_the_f32_one_does_in_double():
    model, feeds = _conv_bn_gemm_softmax_cast()
    exact_model = float64.to_float64(model)
    onnx.checker.check_model(exact_model, full_check=True)  # types consistent, every f32 made f64
    assert all(t.data_type == TensorProto.DOUBLE for t in exact_model.graph.initializer)
    assert exact_model.graph.output[0].type.tensor_type.elem_type == TensorProto.DOUBLE
    assert [n.op_type for n in exact_model.graph.node] == [n.op_type for n in model.graph.node]
    assert model.graph.initializer[0].data_type == TensorProto.FLOAT  # the source is left alone

    (truth,) = float64.truth(model, feeds)
    (f32,) = run.onnxruntime_outputs(model, feeds)
    assert truth.dtype == np.float64 and truth.shape == (1, 10)
    assert worst_mismatch("y", truth, f32, F32) is None or worst_mismatch("y", truth, f32, F32).ratio <= 1
    assert np.abs(truth - f32).max() > 0  # computed in double, not f32 again
    assert float64.truth(model, feeds)[0].tobytes() == truth.tobytes()


def test_inputs_the_schema_fixes_to_float_stay_float():
    scales = numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")
    graph = helper.make_graph(
        [helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="nearest")], "resize",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 2, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 4, 4])], [scales],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    exact_model = float64.to_float64(model)
    onnx.checker.check_model(exact_model, full_check=True)
    assert [n.op_type for n in exact_model.graph.node] == ["Cast", "Resize"]
    x = np.arange(4, dtype=np.float32).reshape(1, 1, 2, 2)
    (y,) = float64.truth(model, [x])
    assert y.dtype == np.float64 and np.array_equal(y, np.repeat(np.repeat(x, 2, 2), 2, 3))


def test_an_op_that_cannot_compute_in_double_is_refused_by_name():
    graph = helper.make_graph(
        [helper.make_node("LayerNormalization", ["x", "s"], ["y", "mean"], name="ln")], "ln",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4]),
         helper.make_tensor_value_info("mean", TensorProto.FLOAT, [2, 1])],
        [numpy_helper.from_array(np.ones(4, np.float32), "s")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(float64.Float64Error, match="node 'ln' .*admits float but not double"):
        float64.to_float64(model)
    del model.graph.node[0].output[1]  # without its f32-only mean output, it computes in double
    del model.graph.output[1]
    onnx.checker.check_model(float64.to_float64(model), full_check=True)


def test_local_functions_and_f32_defaults_are_made_double():
    """A local function's body (Constant value_float) and ConstantOfShape's unset
    value (an f32 zero) compute in double too."""
    body = [
        helper.make_node("Constant", [], ["k"], value_float=1.0 / 3.0),
        helper.make_node("Mul", ["a", "k"], ["b"]),
    ]
    third = helper.make_function("local", "Third", ["a"], ["b"], body, [helper.make_opsetid("", 17)])
    shape = numpy_helper.from_array(np.array([1, 3], np.int64), "shape")
    graph = helper.make_graph(
        [helper.make_node("Third", ["x"], ["t"], domain="local"),
         helper.make_node("ConstantOfShape", ["shape"], ["z"]),
         helper.make_node("Add", ["t", "z"], ["y"])], "calls",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])], [shape],
    )
    model = helper.make_model(
        graph, functions=[third], opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)]
    )
    exact_model = float64.to_float64(model)
    onnx.checker.check_model(exact_model, full_check=True)
    x = np.array([[1.0, 2.0, 3.0]], np.float32)
    (y,) = float64.truth(model, [x])
    assert y.dtype == np.float64
    third_f32 = np.float64(np.float32(1.0 / 3.0))  # the model's constant, widened exactly
    np.testing.assert_allclose(y, x.astype(np.float64) * third_f32, rtol=1e-15)
