"""Bad ONNX models and bad `ge-translate` arguments: each is a one-line
CompileError naming the file and the initializer, node or argument at fault,
exit code 1, never a traceback and never a module that silently picks a meaning.

The models are built with onnx.helper, and the malformed initializers directly as
TensorProtos (onnx.helper.make_tensor refuses to make them)."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

from gecomp.core.diagnostics import CompileError
from gecomp.frontend.importer import translate_file

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

X = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
Y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])


def save(path, nodes, inputs=(X,), outputs=(Y,), initializers=()) -> str:
    graph = helper.make_graph(nodes, "g", list(inputs), list(outputs), list(initializers))
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return str(path)


def tensor(name: str, dims, raw: bytes | None = None, floats=None) -> TensorProto:
    """A float initializer whose data need not match its dims."""
    t = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=list(dims))
    if raw is not None:
        t.raw_data = raw
    if floats is not None:
        t.float_data.extend(floats)
    return t


def add_w(path, w: TensorProto) -> str:
    return save(path, [helper.make_node("Add", ["x", "w"], ["y"])], initializers=[w])


def error_of(path: str, dims=None) -> str:
    with pytest.raises(CompileError) as info:
        translate_file(path, dims)
    return info.value.format(path)


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ge-translate", *args], capture_output=True, text=True, timeout=300)


def one_line_failure(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 1 and done.stdout == ""
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr
    return done.stderr.strip()


# ---- (a) initializer data that does not match its dims -------------------------------------

@pytest.mark.parametrize("w, data", [
    (tensor("w", [2, 3], raw=np.zeros(5, np.float32).tobytes()), "20 bytes of raw_data"),
    (tensor("w", [2, 3], raw=np.zeros(7, np.float32).tobytes()), "28 bytes of raw_data"),
    (tensor("w", [2, 3], raw=b"\0" * 25), "25 bytes of raw_data"),
    (tensor("w", [2, 3], floats=[1.0] * 5), "5 values in float_data"),
    (tensor("w", [2, 3], floats=[1.0] * 7), "7 values in float_data"),
    (tensor("w", [2, 3]), "no data"),
])
def test_initializer_data_not_matching_its_dims(tmp_path, w, data):
    path = add_w(tmp_path / "m.onnx", w)
    assert error_of(path) == (
        f"{path}: error: initializer 'w': its data ({data}) does not match its type float[2, 3] (6 elements)"
    )


def test_initializer_with_a_negative_dim(tmp_path):
    path = add_w(tmp_path / "m.onnx", tensor("w", [2, -3], floats=[1.0] * 6))
    assert error_of(path) == f"{path}: error: initializer 'w' has a negative dim in its dims [2, -3]"


@pytest.mark.parametrize("data_type, field, type_text", [
    (TensorProto.FLOAT16, "int32_data", "float16[2, 3]"),
    (TensorProto.INT64, "int64_data", "int64[2, 3]"),
    (TensorProto.DOUBLE, "double_data", "double[2, 3]"),
])
def test_initializer_of_other_types_with_too_few_values(tmp_path, data_type, field, type_text):
    w = TensorProto(name="w", data_type=data_type, dims=[2, 3])
    getattr(w, field).extend([1] * 5)
    path = add_w(tmp_path / "m.onnx", w)
    assert one_line_failure(cli(path)) == (
        f"{path}: error: initializer 'w': its data (5 values in {field}) does not match its type {type_text} (6 elements)"
    )


def test_initializer_with_a_negative_dim_through_the_cli(tmp_path):
    path = add_w(tmp_path / "m.onnx", tensor("w", [2, -3], floats=[1.0] * 6))
    assert one_line_failure(cli(path)) == f"{path}: error: initializer 'w' has a negative dim in its dims [2, -3]"


def test_constant_attribute_with_short_data(tmp_path):
    value = tensor("", [2, 3], floats=[1.0] * 4)
    nodes = [helper.make_node("Constant", [], ["c"], value=value), helper.make_node("Add", ["x", "c"], ["y"])]
    path = save(tmp_path / "m.onnx", nodes)
    assert error_of(path) == (
        f"{path}: error: node 'c' (Constant): the tensor of attribute 'value': its data "
        "(4 values in float_data) does not match its type float[2, 3] (6 elements)"
    )


def test_initializer_mismatch_through_the_cli(tmp_path):
    path = add_w(tmp_path / "m.onnx", tensor("w", [2, 3], raw=b"\0" * 25))
    assert one_line_failure(cli(path)) == (
        f"{path}: error: initializer 'w': its data (25 bytes of raw_data) does not match its type "
        "float[2, 3] (6 elements)"
    )


# ---- (b) a value written twice --------------------------------------------------------------

def test_two_nodes_writing_one_output(tmp_path):
    nodes = [helper.make_node("Relu", ["x"], ["t"]), helper.make_node("Neg", ["x"], ["t"], name="neg"),
             helper.make_node("Abs", ["t"], ["y"])]
    path = save(tmp_path / "m.onnx", nodes)
    assert one_line_failure(cli(path)) == (
        f"{path}: error: node 'neg' (Neg) writes 't', which node #0 (Relu, output 't') already defines"
    )


def test_node_output_shadowing_a_graph_input(tmp_path):
    path = save(tmp_path / "m.onnx", [helper.make_node("Relu", ["x"], ["x"]), helper.make_node("Abs", ["x"], ["y"])])
    assert error_of(path) == f"{path}: error: node #0 (Relu, output 'x') writes 'x', which graph input 'x' already defines"


def test_node_output_shadowing_an_initializer(tmp_path):
    w = numpy_helper.from_array(np.ones((2, 3), np.float32), "w")
    nodes = [helper.make_node("Relu", ["x"], ["w"]), helper.make_node("Add", ["x", "w"], ["y"])]
    path = save(tmp_path / "m.onnx", nodes, initializers=[w])
    assert error_of(path) == f"{path}: error: node #0 (Relu, output 'w') writes 'w', which initializer 'w' already defines"


def test_an_initializer_listed_as_input_is_still_accepted(tmp_path):
    """Old exporters list initializers among the inputs too: not a second definition."""
    w = numpy_helper.from_array(np.full((2, 3), 2.0, np.float32), "w")
    w_input = helper.make_tensor_value_info("w", TensorProto.FLOAT, [2, 3])
    path = save(tmp_path / "m.onnx", [helper.make_node("Add", ["x", "w"], ["y"])], inputs=(X, w_input),
                initializers=[w])
    main = translate_file(path).body.block.first_op
    assert len(main.args) == 1


# ---- (c) --dim ---------------------------------------------------------------------------------

def symbolic_model(tmp_path) -> str:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])
    return save(tmp_path / "m.onnx", [helper.make_node("Relu", ["x"], ["y"])], inputs=(x,), outputs=(y,))


def test_dim_naming_no_symbolic_dim(tmp_path):
    path = symbolic_model(tmp_path)
    assert one_line_failure(cli(path, "--dim", "M=2")) == (
        f"{path}: error: --dim M=2: the model has no symbolic dim 'M' (its symbolic dims: N)"
    )


def test_dim_on_a_model_without_symbolic_dims(tmp_path):
    path = add_w(tmp_path / "m.onnx", numpy_helper.from_array(np.ones((2, 3), np.float32), "w"))
    assert one_line_failure(cli(path, "--dim", "N=3")) == (
        f"{path}: error: --dim N=3: the model has no symbolic dim 'N' (it has none)"
    )


@pytest.mark.parametrize("spec", ["N=0", "N=-1", "N=2.5", "N=x", "N", "=3"])
def test_dim_with_a_bad_size(tmp_path, spec):
    path = symbolic_model(tmp_path)
    assert one_line_failure(cli(path, "--dim", spec)) == (
        f"{path}: error: --dim expects NAME=SIZE with a positive integer size, got '{spec}'"
    )


def test_dim_sizes_a_symbolic_dim(tmp_path):
    main = translate_file(symbolic_model(tmp_path), {"N": 5}).body.block.first_op
    assert list(main.args[0].type.get_shape()) == [5, 3]


# ---- (d) element types gecomp lacks ------------------------------------------------------------

SUPPORTED = ("float, uint8, int8, uint16, int16, int32, int64, bool, float16, double, uint32, uint64, "
             "bfloat16, float8e4m3fn, float8e4m3fnuz, float8e5m2, float8e5m2fnuz, uint4, int4, float4e2m1, "
             "float8e8m0, uint2, int2")


@pytest.mark.parametrize("elem_type, name", [(TensorProto.COMPLEX64, "complex64"), (TensorProto.STRING, "string")])
def test_graph_input_of_an_unsupported_type(tmp_path, elem_type, name):
    x = helper.make_tensor_value_info("x", elem_type, [2, 3])
    y = helper.make_tensor_value_info("y", elem_type, [2, 3])
    path = save(tmp_path / "m.onnx", [helper.make_node("Identity", ["x"], ["y"])], inputs=(x,), outputs=(y,))
    assert one_line_failure(cli(path)) == (
        f"{path}: error: input 'x' has element type {name}, which gecomp does not support (supported: {SUPPORTED})"
    )


def test_initializer_of_an_unsupported_type(tmp_path):
    path = add_w(tmp_path / "m.onnx", numpy_helper.from_array(np.ones((2, 3), np.complex128), "w"))
    assert error_of(path) == (
        f"{path}: error: node #0 (Add, output 'y'): constant 'w' has element type complex128, which gecomp "
        f"does not support (supported: {SUPPORTED})"
    )


# ---- (e) values never produced -------------------------------------------------------------------

def test_node_input_never_produced(tmp_path):
    path = save(tmp_path / "m.onnx", [helper.make_node("Add", ["x", "nope"], ["y"])])
    assert error_of(path) == (
        f"{path}: error: node #0 (Add, output 'y'): input 'nope' is not defined by an earlier node, "
        "an input or an initializer"
    )


def test_node_input_produced_only_later(tmp_path):
    nodes = [helper.make_node("Abs", ["t"], ["y"]), helper.make_node("Relu", ["x"], ["t"])]
    path = save(tmp_path / "m.onnx", nodes)
    assert error_of(path) == (
        f"{path}: error: node #0 (Abs, output 'y'): input 't' is not defined by an earlier node, "
        "an input or an initializer"
    )


def test_graph_output_never_produced(tmp_path):
    path = save(tmp_path / "m.onnx", [helper.make_node("Relu", ["x"], ["t"])])
    assert one_line_failure(cli(path)) == f"{path}: error: output 'y' is not computed by any node"


# ---- (f) files that are no ONNX model ------------------------------------------------------------

@pytest.mark.parametrize("content, reason", [
    (b"", "it has no graph"),
    (b"hello, this is not onnx" * 3, "Error parsing message with type 'onnx.ModelProto': Wire format was corrupt"),
])
def test_not_an_onnx_file(tmp_path, content, reason):
    path = tmp_path / "m.onnx"
    path.write_bytes(content)
    assert one_line_failure(cli(str(path))) == f"{path}: error: '{path}' is not a readable ONNX model: {reason}"


def test_truncated_onnx_file(tmp_path):
    whole = add_w(tmp_path / "whole.onnx", numpy_helper.from_array(np.ones((2, 3), np.float32), "w"))
    path = tmp_path / "m.onnx"
    path.write_bytes(open(whole, "rb").read()[:40])
    assert one_line_failure(cli(str(path))).startswith(f"{path}: error: '{path}' is not a readable ONNX model: ")
