"""ONNX ops defined by an ONNX function body (Attention, RotaryEmbedding, the
losses...) are imported by expanding the body: ONNX's own node test cases pass on
the reference interpreter and through ge-compile on the NPU simulator, an op
with a converter is never expanded, and an unsupported op inside a body is
refused naming the op it came from."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from gecomp.frontend.conformance import PASSED, backend_named, function_cases, run_case  # noqa: E402
from gecomp.frontend.converters import UnsupportedError  # noqa: E402
from gecomp.frontend.converters.registry import has_converter  # noqa: E402
from gecomp.frontend.importer import import_model  # noqa: E402
from gecomp.frontend.onnx_functions import expand_function_ops  # noqa: E402
from gecomp.frontend.onnx_proto import model_from_proto  # noqa: E402

EXPANDED = ["Attention", "RotaryEmbedding", "NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss", "CenterCropPad", "SwiGLU"]


@pytest.mark.parametrize("op", EXPANDED)
def test_function_op_cases_pass_on_the_reference(op):
    """Up to four of the op's cases, spread over its list (bench/onnx_conformance.py
    runs them all)."""
    cases = function_cases([op])[op]
    assert len(cases) >= 3, op
    backend = backend_named("reference")
    results = [run_case(case, backend, op) for case in cases[:: -(-len(cases) // 4)]]
    assert [f"{r.name}: {r.reason}" for r in results if r.status != PASSED] == []


@pytest.mark.parametrize("case_name", ["test_attention_4d_causal", "test_sce_mean_weight", "test_rotary_embedding"])
def test_function_op_cases_pass_on_the_npu(case_name):
    case = next(c for cases in function_cases().values() for c in cases if c.name == case_name)
    result = run_case(case, backend_named("npu"))
    assert result.status == PASSED, result.reason


def test_ops_with_a_converter_are_not_expanded():
    """LayerNormalization has both an ONNX body and a converter: the converter wins."""
    node = onnx.helper.make_node("LayerNormalization", ["x", "s", "b"], ["y"], axis=-1)
    graph = onnx.helper.make_graph(
        [node], "g",
        [onnx.helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, shape) for n, shape in (("x", [2, 8]), ("s", [8]), ("b", [8]))],
        [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 8])],
    )
    proto = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 18)])
    assert expand_function_ops(proto, has_converter) is proto


def _attention_model(**attributes):
    node = onnx.helper.make_node("Attention", ["q", "k", "v"], ["y"], **attributes)
    inputs = [onnx.helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, [1, 2, s, 8]) for n, s in (("q", 4), ("k", 6), ("v", 6))]
    graph = onnx.helper.make_graph([node], "g", inputs, [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)])
    return onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 23)])


def test_expanded_attention_matches_onnx_reference_and_fuses_into_flash_attention(tmp_path):
    from onnx.reference import ReferenceEvaluator

    from gecomp.simulator.reference import run_reference

    proto = _attention_model(is_causal=1, softcap=2.0)
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((1, 2, s, 8)).astype(np.float32) for s in (4, 6, 6))
    (want,) = ReferenceEvaluator(proto).run(None, {"q": q, "k": k, "v": v})
    module = import_model(model_from_proto(proto))
    (got,) = run_reference(module, [q, k, v])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)

    path = tmp_path / "attention.onnx"
    onnx.save(_attention_model(is_causal=1), path)
    mlir = subprocess.run(["ge-translate", str(path)], capture_output=True, text=True, check=True).stdout
    fused = subprocess.run(["ge-opt", "-", "--pass-pipeline", "ge-graph-opt,ge-fuse"], input=mlir,
                           capture_output=True, text=True, check=True).stdout
    assert "fused.flash_attention" in fused


def test_an_unsupported_op_in_a_body_is_refused_naming_where_it_came_from():
    case = next(c for c in function_cases(["Bernoulli"])["Bernoulli"])
    with pytest.raises(UnsupportedError, match=r"unsupported op type: RandomUniformLike \(1\); "
                                               r"the first is node 'Bernoulli#0/RandomUniformLike'"):
        import_model(model_from_proto(case.model))


def test_an_error_inside_an_expanded_body_points_at_the_ops_line(tmp_path):
    """A text model's Attention with key and query of different head sizes: the
    error, raised in the body, is located at the Attention node's line."""
    path = tmp_path / "attention.onnxtxt"
    path.write_text(
        '<ir_version: 10, opset_import: ["" : 23]>\n'
        "g (float[1,2,4,8] q, float[1,2,6,7] k, float[1,2,6,8] v) => (float[1,2,4,8] y) {\n"
        "  y = Attention (q, k, v)\n"
        "}\n"
    )
    done = subprocess.run(["ge-translate", str(path)], capture_output=True, text=True)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"{path}:3:3: error: node 'Attention#0/") and done.stderr.count("\n") == 1
