"""If, Scan and Loop unrolled at import (frontend/converters/control_flow.py),
beyond their ONNX node tests: a reversed Scan stacking along axis 1 with two
states, an If whose condition folds from a shape and whose branch reads the
enclosing graph, a Loop stopped by its folded condition, all against
onnxruntime, on the reference interpreter and through the NPU simulator; a
condition over run-time data refused with the input named; the inputs a branch
reads by name bound when something static needs them; a Scan in a function
body renamed with the body."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper  # noqa: E402

from gecomp.core.diagnostics import CompileError  # noqa: E402
from gecomp.frontend.binding import inputs_read_at_import  # noqa: E402
from gecomp.frontend.conformance import BACKENDS  # noqa: E402
from gecomp.frontend.importer import import_model  # noqa: E402
from gecomp.frontend.onnx_proto import model_from_proto  # noqa: E402

F = TensorProto.FLOAT


def _model(nodes, inputs, outputs, opset=17, initializers=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _check(model, feeds, backends=("reference", "npu")):
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    for backend in backends:
        got = BACKENDS[backend](import_model(model_from_proto(model)), list(feeds.values()))
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=backend)


def _scan_model():
    """Two states (a running sum and a running max) over x reversed along axis 1,
    the per-step sums stacked along axis 1 of the output."""
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "x_t"], ["s_out"]),
         helper.make_node("Max", ["m_in", "x_t"], ["m_out"]),
         helper.make_node("Mul", ["s_out", "scale"], ["y_t"])],
        "body",
        [helper.make_tensor_value_info(n, F, [3]) for n in ("s_in", "m_in", "x_t")],
        [helper.make_tensor_value_info(n, F, [3]) for n in ("s_out", "m_out", "y_t")],
    )
    scan = helper.make_node("Scan", ["s0", "m0", "x"], ["s", "m", "y"], body=body, num_scan_inputs=1,
                            scan_input_axes=[1], scan_input_directions=[1], scan_output_axes=[1])
    return _model(
        [scan],
        [helper.make_tensor_value_info("s0", F, [3]), helper.make_tensor_value_info("m0", F, [3]),
         helper.make_tensor_value_info("x", F, [3, 4])],
        [helper.make_tensor_value_info("s", F, [3]), helper.make_tensor_value_info("m", F, [3]),
         helper.make_tensor_value_info("y", F, [3, 4])],
        initializers=[onnx.numpy_helper.from_array(np.array(0.5, np.float32), "scale")],
    )


def test_scan_reversed_with_two_states_matches_onnxruntime():
    rng = np.random.default_rng(0)
    feeds = {"s0": rng.standard_normal(3).astype(np.float32), "m0": np.full(3, -9, np.float32),
             "x": rng.standard_normal((3, 4)).astype(np.float32)}
    _check(_scan_model(), feeds)


def _if_model():
    """The branch taken depends on x's rank (known at import); each reads x and
    a value of the enclosing graph."""
    then_branch = helper.make_graph([helper.make_node("Mul", ["x", "two"], ["t"])], "then", [],
                                    [helper.make_tensor_value_info("t", F, [2, 3])])
    else_branch = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [],
                                    [helper.make_tensor_value_info("e", F, [2, 3])])
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Size", ["shape"], ["rank"]),
        helper.make_node("Constant", [], ["two_dims"], value=helper.make_tensor("v", TensorProto.INT64, [], [2])),
        helper.make_node("Equal", ["rank", "two_dims"], ["is_2d"]),
        helper.make_node("Constant", [], ["two"], value=helper.make_tensor("w", F, [], [2.0])),
        helper.make_node("If", ["is_2d"], ["y"], then_branch=then_branch, else_branch=else_branch),
    ]
    return _model(nodes, [helper.make_tensor_value_info("x", F, [2, 3])], [helper.make_tensor_value_info("y", F, [2, 3])])


def test_if_with_a_condition_folded_from_a_shape_takes_its_branch():
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
    _check(_if_model(), {"x": x})


def test_if_over_run_time_data_is_an_error_naming_the_input():
    model = _if_model()
    model.graph.node[5].input[0] = "c"
    model.graph.input.append(helper.make_tensor_value_info("c", TensorProto.BOOL, []))
    with pytest.raises(CompileError, match=r"\(If, output 'y'\): input #0 \('cond'\) must be a constant, "
                                           r"but it depends on graph input 'c'") as e:
        import_model(model_from_proto(model))
    assert "\n" not in e.value.message


def test_a_branch_reading_a_graph_input_binds_it_when_a_static_operand_needs_it():
    """The branch's result is a Reshape shape: the input it reads by name (not
    as a node input) must be bound, like any input a static operand comes from."""
    branch = helper.make_graph([helper.make_node("Identity", ["shape_in"], ["s"])], "b", [],
                               [helper.make_tensor_value_info("s", TensorProto.INT64, [2])])
    nodes = [
        helper.make_node("Constant", [], ["yes"], value=helper.make_tensor("v", TensorProto.BOOL, [], [True])),
        helper.make_node("If", ["yes"], ["shape"], then_branch=branch, else_branch=branch),
        helper.make_node("Reshape", ["x", "shape"], ["y"]),
    ]
    model = model_from_proto(_model(
        nodes,
        [helper.make_tensor_value_info("x", F, [6]), helper.make_tensor_value_info("shape_in", TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("y", F, None)],
    ))
    assert inputs_read_at_import(model) == {"shape_in"}


def test_loop_stops_where_its_folded_condition_does():
    """Trip count 10, but the body's condition (iteration < 3) ends it after 4
    steps: the carried value and the stacked scan output have 4 steps' worth."""
    body = helper.make_graph(
        [helper.make_node("Constant", [], ["three"], value=helper.make_tensor("t", TensorProto.INT64, [], [3])),
         helper.make_node("Less", ["i", "three"], ["go"]),
         helper.make_node("Add", ["acc_in", "x"], ["acc_out"]),
         helper.make_node("Identity", ["acc_out"], ["seen"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []), helper.make_tensor_value_info("c", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_in", F, [2])],
        [helper.make_tensor_value_info("go", TensorProto.BOOL, []), helper.make_tensor_value_info("acc_out", F, [2]),
         helper.make_tensor_value_info("seen", F, [2])],
    )
    nodes = [
        helper.make_node("Constant", [], ["trips"], value=helper.make_tensor("m", TensorProto.INT64, [], [10])),
        helper.make_node("Constant", [], ["start"], value=helper.make_tensor("s", TensorProto.BOOL, [], [True])),
        helper.make_node("Loop", ["trips", "start", "acc0"], ["acc", "history"], body=body),
    ]
    model = _model(nodes, [helper.make_tensor_value_info("acc0", F, [2]), helper.make_tensor_value_info("x", F, [2])],
                   [helper.make_tensor_value_info("acc", F, [2]), helper.make_tensor_value_info("history", F, [4, 2])])
    _check(model, {"acc0": np.array([1, 2], np.float32), "x": np.array([0.5, -1], np.float32)})


def test_scan_in_a_function_body_is_renamed_with_the_body():
    """Two LinearAttention nodes expand to two Scans whose bodies read their own
    function's values: each body must read its own copy."""
    from gecomp.frontend.converters.registry import has_converter
    from gecomp.frontend.onnx_functions import expand_function_ops

    shape = [1, 2, 4]
    nodes = [helper.make_node("LinearAttention", ["q", "k", "v"], [f"o{i}"], q_num_heads=1, kv_num_heads=1)
             for i in range(2)]
    proto = _model(nodes, [helper.make_tensor_value_info(n, F, shape) for n in "qkv"],
                   [helper.make_tensor_value_info(f"o{i}", F, shape) for i in range(2)], opset=27)
    expanded = expand_function_ops(proto, has_converter)
    scans = [n for n in expanded.graph.node if n.op_type == "Scan"]
    assert len(scans) == 2
    defined = {o for n in expanded.graph.node for o in n.output}
    for scan in scans:
        body = next(a.g for a in scan.attribute if a.name == "body")
        local = {i.name for i in body.input} | {o for n in body.node for o in n.output}
        captured = {i for n in body.node for i in n.input if i and i not in local}
        assert captured and captured <= defined
        assert all(name.startswith(scan.name.split("/")[0]) for name in captured)
