"""Det (the Leibniz formula, matrices up to 4 x 4) and MaxUnpool (a gather and a
where over the positions the import-time indices name), against onnx's reference
implementation on random cases beyond the node tests: batches of 1x1 to 4x4
matrices, a refused 5x5; 1-D, 2-D and 3-D unpooling with strides, pads, indices
named twice and an output_shape larger than the inferred one. One case of each
also through ge-compile and the simulator."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from onnx import TensorProto, helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from gecomp.frontend.conformance import BACKENDS, SuiteCase, run_case  # noqa: E402


def _case(node, inputs: dict[str, np.ndarray], rtol=1e-5, atol=1e-6) -> SuiteCase:
    kinds = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int64): TensorProto.INT64}
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(k, kinds[v.dtype], v.shape) for k, v in inputs.items()],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    want = ReferenceEvaluator(model).run(None, inputs)
    return SuiteCase(node.op_type, model, [(list(inputs.values()), want)], rtol=rtol, atol=atol)


@pytest.mark.parametrize("shape", [[1, 1], [3, 3], [2, 3, 4, 4], [5, 2, 2]])
def test_det_matches_the_reference(shape):
    x = np.random.default_rng(len(shape)).standard_normal(shape).astype(np.float32)
    result = run_case(_case(helper.make_node("Det", ["x"], ["y"]), {"x": x}, rtol=1e-4, atol=1e-5), BACKENDS["reference"])
    assert result.status == "passed", result.reason


def test_det_of_a_large_matrix_is_refused():
    x = np.ones([5, 5], np.float32)
    result = run_case(_case(helper.make_node("Det", ["x"], ["y"]), {"x": x}), BACKENDS["reference"])
    assert result.status == "unsupported" and "5 x 5 matrices" in result.reason


def _unpool_case(seed: int, spatial, kernel, strides, pads, extra=None) -> SuiteCase:
    rng = np.random.default_rng(seed)
    n = len(spatial)
    x = rng.standard_normal([2, 3, *spatial]).astype(np.float32)
    out = [(s - 1) * st - pads[d] - pads[n + d] + k for d, (s, st, k) in enumerate(zip(spatial, strides, kernel))]
    size = 2 * 3 * int(np.prod(out))
    indices = rng.integers(0, size, size=x.shape).astype(np.int64)
    indices.flat[1] = indices.flat[0]  # a position named twice: the later element wins
    inputs = {"x": x, "i": indices}
    names = ["x", "i"]
    if extra is not None:
        inputs["shape"] = np.array([2, 3, *(o + e for o, e in zip(out, extra))], np.int64)
        names.append("shape")
    node = helper.make_node("MaxUnpool", names, ["y"], kernel_shape=kernel, strides=strides, pads=pads)
    return _case(node, inputs)


@pytest.mark.parametrize(("spatial", "kernel", "strides", "pads", "extra"), [
    ([5], [3], [2], [1, 0], None),
    ([3, 4], [2, 3], [2, 2], [0, 1, 1, 0], [1, 2]),
    ([2, 3, 2], [2, 2, 2], [2, 1, 2], [0, 0, 0, 0, 0, 0], [0, 1, 0]),
])
def test_max_unpool_matches_the_reference(spatial, kernel, strides, pads, extra):
    result = run_case(_unpool_case(7, spatial, kernel, strides, pads, extra), BACKENDS["reference"])
    assert result.status == "passed", result.reason


def test_det_and_max_unpool_through_the_simulator():
    x = np.random.default_rng(9).standard_normal([3, 4, 4]).astype(np.float32)
    det = run_case(_case(helper.make_node("Det", ["x"], ["y"]), {"x": x}, rtol=1e-4, atol=1e-5), BACKENDS["npu"])
    unpool = run_case(_unpool_case(8, [3, 4], [2, 3], [2, 2], [0, 1, 1, 0], [1, 2]), BACKENDS["npu"])
    assert (det.status, det.reason, unpool.status, unpool.reason) == ("passed", "", "passed", "")
