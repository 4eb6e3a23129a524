"""The shape, indexing, linear-algebra and recurrent ONNX converters (Tile,
DepthToSpace, SpaceToDepth, Trilu, CumSum, GatherElements, ScatterElements,
ScatterND, OneHot, Resize, Upsample, ConvTranspose, Einsum, LSTM, GRU, RNN,
dilated MaxPool) against onnxruntime on random inputs of awkward sizes, and a
small graph of each family compiled with ge-compile and run on the simulator."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper  # noqa: E402

from gecomp.core.diagnostics import CompileError  # noqa: E402
from gecomp.frontend.importer import import_model  # noqa: E402
from gecomp.frontend.onnx_proto import model_from_proto  # noqa: E402
from gecomp.simulator.reference import run_reference  # noqa: E402

_TYPES = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int64): TensorProto.INT64,
          np.dtype(np.int32): TensorProto.INT32}


def _model(op, inputs, n_outputs=1, opset=17, initializers=(), **attrs):
    """One `op` node over graph inputs `inputs` (name -> array) and constant
    `initializers` (name -> array); outputs y0, y1..."""
    names = [*inputs, *(name for name, _ in initializers)]
    node_inputs = attrs.pop("node_inputs", None) or names
    outputs = [f"y{i}" for i in range(n_outputs)]
    graph = helper.make_graph(
        [helper.make_node(op, node_inputs, outputs, **attrs)],
        "g",
        [helper.make_tensor_value_info(k, _TYPES[v.dtype], v.shape) for k, v in inputs.items()],
        [onnx.ValueInfoProto(name=o) for o in outputs],
        [onnx.numpy_helper.from_array(v, k) for k, v in initializers],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _expected(model, inputs):
    """onnxruntime's outputs; ONNX's reference where onnxruntime lacks the form
    (batch-first recurrent layouts)."""
    batch_first = any(a.name == "layout" and a.i == 1 for n in model.graph.node for a in n.attribute)
    if batch_first:
        from onnx.reference import ReferenceEvaluator

        return ReferenceEvaluator(model).run(None, inputs)
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, inputs)


def _check(model, inputs, rtol=1e-4, atol=1e-5, compiled=False):
    want = _expected(model, inputs)
    module = import_model(model_from_proto(model))
    got = run_reference(module, list(inputs.values()))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    if compiled:
        _compiled(module, inputs, want, rtol=max(rtol, 1e-3), atol=max(atol, 1e-3))


def _compiled(module, inputs, want, rtol, atol):
    """ge-compile on the tiny preset and the default one, then the simulator."""
    from gecomp.dialects.context import make_context
    from gecomp.core.passes import parse_pass_pipeline, run_pipeline
    from gecomp.simulator.run import execute

    for pipeline in ("ge-compile{hw=tiny}", "ge-compile"):
        m = module.clone()
        run_pipeline(parse_pass_pipeline(pipeline), make_context(), m)
        got = execute(m, list(inputs.values())).results
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


rng = np.random.default_rng(7)


def _rand(*shape):
    return rng.standard_normal(shape).astype(np.float32)


# ---- data movement ------------------------------------------------------------------------


@pytest.mark.parametrize("shape,repeats", [((1,), (3,)), ((3, 1, 17), (1, 2, 1)), ((2, 3), (17, 1))])
def test_tile(shape, repeats):
    x = _rand(*shape)
    _check(_model("Tile", {"x": x}, initializers=[("r", np.array(repeats, np.int64))]), {"x": x})


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
@pytest.mark.parametrize("shape,block", [((1, 4, 3, 17), 2), ((3, 9, 1, 2), 3)])
def test_depth_to_space_and_back(mode, shape, block):
    x = _rand(*shape)
    _check(_model("DepthToSpace", {"x": x}, blocksize=block, mode=mode), {"x": x})
    y = _rand(shape[0], shape[1] // block ** 2, shape[2] * block, shape[3] * block)
    _check(_model("SpaceToDepth", {"x": y}, blocksize=block), {"x": y})


@pytest.mark.parametrize("upper", [0, 1])
@pytest.mark.parametrize("k", [-2, 0, 3])
def test_trilu(upper, k):
    x = _rand(3, 17, 5)
    _check(_model("Trilu", {"x": x}, initializers=[("k", np.array(k, np.int64))], upper=upper), {"x": x})


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
@pytest.mark.parametrize("exclusive,reverse", [(0, 0), (1, 0), (0, 1), (1, 1)])
@pytest.mark.parametrize("shape,axis", [((17,), 0), ((3, 1), 1), ((3, 17), -1), ((1, 3), 0)])
def test_cumsum(dtype, exclusive, reverse, shape, axis):
    x = (rng.standard_normal(shape) * 10).astype(dtype)
    model = _model("CumSum", {"x": x}, initializers=[("axis", np.array(axis, np.int64))],
                   exclusive=exclusive, reverse=reverse)
    _check(model, {"x": x})


@pytest.mark.parametrize("exclusive,reverse", [(0, 0), (1, 1)])
@pytest.mark.parametrize("shape,axis", [((17,), 0), ((3, 5), -1)])
def test_cumprod(exclusive, reverse, shape, axis):
    x = (rng.standard_normal(shape) * 0.5 + 1).astype(np.float32)
    model = _model("CumProd", {"x": x}, opset=26, initializers=[("axis", np.array(axis, np.int64))],
                   exclusive=exclusive, reverse=reverse)
    from onnx.reference import ReferenceEvaluator

    (want,) = ReferenceEvaluator(model).run(None, {"x": x})
    (got,) = run_reference(import_model(model_from_proto(model)), [x])
    np.testing.assert_allclose(got, want, rtol=1e-5)


@pytest.mark.parametrize("opset,axis", [(11, 1), (11, 0), (13, 1), (13, -1)])
def test_hardmax_in_both_forms(opset, axis):
    """Before opset 13 Hardmax works on the input flattened to 2-D at `axis`."""
    x = np.round(rng.standard_normal((2, 3, 4)), 1).astype(np.float32)
    _check(_model("Hardmax", {"x": x}, opset=opset, axis=axis), {"x": x})


@pytest.mark.parametrize("block_size", [0, 2, 3])
def test_quantize_then_dequantize_per_axis_and_blocked(block_size):
    x = (rng.standard_normal((4, 7)) * 3).astype(np.float32)
    blocks = -(-7 // block_size) if block_size else 7
    scale = (rng.random((4, blocks) if block_size else (7,)) + 0.1).astype(np.float32)
    zero = rng.integers(-20, 20, scale.shape).astype(np.int8)
    quantize = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], axis=1, block_size=block_size)
    dequantize = helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=1, block_size=block_size)
    graph = helper.make_graph(
        [quantize, dequantize], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [onnx.ValueInfoProto(name="q"), onnx.ValueInfoProto(name="y")],
        [onnx.numpy_helper.from_array(scale, "s"), onnx.numpy_helper.from_array(zero, "z")],
    )
    _check(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)]), {"x": x})


# ---- indexing -----------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_elements(axis):
    x = _rand(3, 17)
    indices = rng.integers(-x.shape[axis], x.shape[axis], size=(1, 17) if axis == 0 else (3, 5))
    _check(_model("GatherElements", {"x": x}, initializers=[("i", indices)], axis=axis), {"x": x})


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_scatter_elements(reduction):
    data, updates = _rand(3, 17), _rand(3, 4)
    indices = rng.integers(-17, 17, size=(3, 4)) if reduction != "none" else np.array(
        [rng.permutation(17)[:4] for _ in range(3)])
    model = _model("ScatterElements", {"data": data, "u": updates}, opset=18,
                   initializers=[("i", indices)], node_inputs=["data", "i", "u"], axis=1, reduction=reduction)
    _check(model, {"data": data, "u": updates})


@pytest.mark.parametrize("reduction", ["none", "add", "max"])
def test_scatter_nd(reduction):
    data = _rand(4, 3, 17)
    indices = np.array([[[0, 1], [3, 2]], [[1, 0], [0, 1]]]) if reduction != "none" else np.array([[[0, 1]], [[3, 2]]])
    updates = _rand(*indices.shape[:-1], 17)
    model = _model("ScatterND", {"data": data, "u": updates}, opset=18, initializers=[("i", indices)],
                   node_inputs=["data", "i", "u"], reduction=reduction)
    _check(model, {"data": data, "u": updates})


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_one_hot(axis):
    indices = np.array([[0, 3, -1], [16, 2, 1]], np.int64)
    values = np.array([-2.0, 5.0], np.float32)
    model = _model("OneHot", {"v": values}, initializers=[("i", indices), ("d", np.array(17, np.int64))],
                   node_inputs=["i", "d", "v"], axis=axis)
    _check(model, {"v": values})


@pytest.mark.parametrize("axis", [0, -1])
def test_gather_elements_run_time_indices(axis):
    x = _rand(3, 17)
    indices = rng.integers(-x.shape[axis], x.shape[axis], size=(2, 5)).astype(np.int32)
    _check(_model("GatherElements", {"x": x, "i": indices}, axis=axis), {"x": x, "i": indices})


def test_run_time_scatter_indices_are_refused_with_the_input_named():
    data, updates = _rand(3, 4), _rand(3, 4)
    indices = np.zeros((3, 4), np.int64)
    model = _model("ScatterElements", {"d": data, "i": indices, "u": updates})
    with pytest.raises(CompileError, match="indices.*graph input 'i'"):
        import_model(model_from_proto(model))


# ---- Resize / Upsample --------------------------------------------------------------------


_RESIZES = [
    dict(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
    dict(mode="nearest", coordinate_transformation_mode="half_pixel", nearest_mode="round_prefer_floor"),
    dict(mode="nearest", coordinate_transformation_mode="align_corners", nearest_mode="round_prefer_ceil"),
    dict(mode="linear", coordinate_transformation_mode="half_pixel"),
    dict(mode="linear", coordinate_transformation_mode="align_corners"),
    dict(mode="linear", coordinate_transformation_mode="pytorch_half_pixel"),
    dict(mode="linear", coordinate_transformation_mode="asymmetric"),
    dict(mode="cubic", coordinate_transformation_mode="half_pixel"),
]


@pytest.mark.parametrize("attrs", _RESIZES, ids=lambda a: "-".join(a.values()))
@pytest.mark.parametrize("scales", [(1, 1, 2, 3), (1, 1, 0.5, 1.75)])
def test_resize_scales(attrs, scales):
    # Output sizes exact (input * scale): where they are not, align_corners differs
    # between onnxruntime (the floored size) and ONNX's reference (the product),
    # whose numbers the converter and ONNX's node tests follow.
    x = _rand(1, 3, 6, 4)
    model = _model("Resize", {"x": x}, opset=13, node_inputs=["x", "", "s"],
                   initializers=[("s", np.array(scales, np.float32))], **attrs)
    _check(model, {"x": x})


@pytest.mark.parametrize("attrs", _RESIZES[:2] + _RESIZES[3:5], ids=lambda a: "-".join(a.values()))
def test_resize_sizes(attrs):
    x = _rand(1, 1, 3, 17)
    model = _model("Resize", {"x": x}, opset=13, node_inputs=["x", "", "", "s"],
                   initializers=[("s", np.array([1, 1, 7, 5], np.int64))], **attrs)
    _check(model, {"x": x})


def test_upsample_nearest():
    x = _rand(1, 3, 1, 17)
    model = _model("Upsample", {"x": x}, opset=9, initializers=[("s", np.array([1, 1, 3, 2], np.float32))],
                   mode="nearest")
    _check(model, {"x": x})


# ---- ConvTranspose ------------------------------------------------------------------------


_CONV_T = [
    dict(),
    dict(strides=[2, 3]),
    dict(strides=[2, 2], pads=[1, 0, 2, 1], output_padding=[1, 1]),
    dict(dilations=[2, 1], strides=[1, 2]),
    dict(strides=[2, 2], auto_pad="SAME_UPPER"),
]


@pytest.mark.parametrize("attrs", _CONV_T, ids=str)
@pytest.mark.parametrize("group", [1, 3])
def test_conv_transpose_2d(attrs, group):
    x = _rand(1, 3, 5, 17)
    w = _rand(3, 2, 3, 2)
    b = _rand(2 * group)
    _check(_model("ConvTranspose", {"x": x}, initializers=[("w", w), ("b", b)], group=group, **attrs), {"x": x},
           rtol=1e-4, atol=1e-4)


def test_conv_transpose_1d():
    x = _rand(3, 2, 17)
    w = _rand(2, 1, 3)
    _check(_model("ConvTranspose", {"x": x}, initializers=[("w", w)], strides=[3], pads=[1, 0]), {"x": x},
           atol=1e-4)


# ---- Einsum -------------------------------------------------------------------------------


@pytest.mark.parametrize("equation,shapes", [
    ("bij,bjk->bik", [(3, 1, 17), (3, 17, 2)]),
    ("bhqd,bhkd->bhqk", [(1, 3, 17, 4), (1, 3, 5, 4)]),
    ("bhqk,bhkd->bhqd", [(1, 3, 17, 5), (1, 3, 5, 4)]),
    ("ij,jk", [(3, 17), (17, 1)]),
    ("...ij,...jk", [(2, 3, 4), (2, 4, 17)]),
    ("ij->ji", [(3, 17)]),
    ("i,j->ij", [(3,), (17,)]),
    ("ij->i", [(3, 17)]),
    ("bi,bi->b", [(17, 3), (17, 3)]),
    ("...ii->...i", [(3, 5, 5)]),
    ("ij,jk,kl->il", [(2, 3), (3, 17), (17, 1)]),
])
def test_einsum(equation, shapes):
    inputs = {f"x{i}": _rand(*s) for i, s in enumerate(shapes)}
    _check(_model("Einsum", inputs, equation=equation), inputs, atol=1e-4)


def test_einsum_bad_equation_is_one_line_error():
    x = _rand(3, 4)
    with pytest.raises(CompileError, match="cannot read the term"):
        import_model(model_from_proto(_model("Einsum", {"x": x}, equation="i1->i")))


# ---- recurrent ----------------------------------------------------------------------------


def _recurrent(op, gates, direction, layout, initial, batch=3, seq=4, width=17, hidden=5, **attrs):
    dirs = 2 if direction == "bidirectional" else 1
    x = _rand(batch, seq, width) if layout else _rand(seq, batch, width)
    consts = [("W", _rand(dirs, gates * hidden, width) * 0.5), ("R", _rand(dirs, gates * hidden, hidden) * 0.5),
              ("B", _rand(dirs, 2 * gates * hidden) * 0.5)]
    names = ["x", "W", "R", "B", ""]
    if initial:
        state = (batch, dirs, hidden) if layout else (dirs, batch, hidden)
        consts.append(("h0", _rand(*state)))
        names.append("h0")
        if op == "LSTM":
            consts.append(("c0", _rand(*state)))
            names.append("c0")
    n_outputs = 3 if op == "LSTM" else 2
    model = _model(op, {"x": x}, n_outputs=n_outputs, opset=14, initializers=consts, node_inputs=names,
                   hidden_size=hidden, direction=direction, layout=layout, **attrs)
    return model, {"x": x}


@pytest.mark.parametrize("op,gates", [("LSTM", 4), ("GRU", 3), ("RNN", 1)])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("layout,initial", [(0, False), (1, True)])
def test_recurrent(op, gates, direction, layout, initial):
    _check(*_recurrent(op, gates, direction, layout, initial), atol=1e-5)


def test_gru_linear_before_reset_and_lstm_options():
    _check(*_recurrent("GRU", 3, "forward", 0, True, linear_before_reset=1))
    _check(*_recurrent("LSTM", 4, "bidirectional", 0, True, clip=0.7, input_forget=1))
    _check(*_recurrent("RNN", 1, "forward", 0, False, activations=["Relu"]))
    _check(*_recurrent("GRU", 3, "forward", 0, False, activations=["HardSigmoid", "Softsign"],
                       activation_alpha=[0.3], activation_beta=[0.4]))


# ---- compiled, one small graph per family ----------------------------------------------------


@pytest.mark.parametrize("build", [
    lambda: (_model("Tile", {"x": (x := _rand(3, 1, 5))}, initializers=[("r", np.array([1, 2, 3], np.int64))]),
             {"x": x}),
    lambda: (_model("CumSum", {"x": (x := _rand(3, 17))}, initializers=[("a", np.array(1, np.int64))], reverse=1),
             {"x": x}),
    lambda: (_model("ScatterElements", {"d": (d := _rand(3, 5)), "u": (u := _rand(3, 2))}, opset=18,
                    initializers=[("i", np.array([[0, 0], [4, 1], [2, 2]]))], node_inputs=["d", "i", "u"],
                    axis=1, reduction="add"), {"d": d, "u": u}),
    lambda: (_model("Resize", {"x": (x := _rand(1, 2, 3, 5))}, opset=13, node_inputs=["x", "", "s"],
                    initializers=[("s", np.array([1, 1, 2, 1.5], np.float32))], mode="linear"), {"x": x}),
    lambda: (_model("ConvTranspose", {"x": (x := _rand(1, 2, 3, 5))}, initializers=[("w", _rand(2, 3, 3, 3))],
                    strides=[2, 2], pads=[1, 1, 0, 0]), {"x": x}),
    lambda: (_model("Einsum", {"a": (a := _rand(2, 3, 4)), "b": (b := _rand(2, 5, 4))}, equation="bik,bjk->bij"),
             {"a": a, "b": b}),
    lambda: _recurrent("LSTM", 4, "bidirectional", 0, True, seq=3, batch=1, width=3, hidden=4),
    lambda: (_model("GatherElements", {"x": (x := _rand(3, 5)), "i": (i := np.array([[4, -1], [0, 2]]))}, axis=1),
             {"x": x, "i": i}),
    lambda: (_model("TopK", {"x": (x := _rand(3, 17))}, n_outputs=2, initializers=[("k", np.array([2], np.int64))]),
             {"x": x}),
], ids=["tile", "cumsum", "scatter", "resize", "conv_transpose", "einsum", "lstm", "gather_elements", "top_k"])
def test_compiled(build):
    model, inputs = build()
    _check(model, inputs, atol=1e-4, compiled=True)


# ---- dilated MaxPool ------------------------------------------------------------------------


@pytest.mark.parametrize("attrs,shape", [
    (dict(kernel_shape=[3, 2], dilations=[2, 3]), (1, 3, 17, 17)),
    (dict(kernel_shape=[3, 3], dilations=[2, 2], strides=[2, 3], pads=[1, 2, 2, 1]), (2, 1, 17, 5)),
    (dict(kernel_shape=[2, 3], dilations=[3, 2], strides=[2, 2], ceil_mode=1), (1, 2, 17, 16)),
    (dict(kernel_shape=[3], dilations=[2], strides=[2]), (1, 3, 17)),
    (dict(kernel_shape=[2, 2, 3], dilations=[2, 2, 2], strides=[1, 2, 1]), (1, 1, 5, 6, 17)),
], ids=["2d", "strided-padded", "ceil", "1d", "3d"])
def test_dilated_max_pool(attrs, shape):
    x = _rand(*shape)
    _check(_model("MaxPool", {"x": x}, **attrs), {"x": x})


def test_dilated_max_pool_is_one_native_pool():
    """Its cost does not grow with the window: one ge.max_pool2d, no slice per element."""
    x = _rand(1, 2, 17, 17)
    module = import_model(model_from_proto(_model("MaxPool", {"x": x}, kernel_shape=[5, 5], dilations=[3, 2])))
    names = [op.name for op in module.walk()]
    assert names.count("ge.max_pool2d") == 1 and names.count("ge.slice") <= 1


# ---- ArgMax / ArgMin / TopK -----------------------------------------------------------------


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
@pytest.mark.parametrize("axis,keepdims,last", [(0, 1, 0), (1, 0, 1), (-1, 1, 1)])
def test_arg_extremum(op, dtype, axis, keepdims, last):
    x = rng.integers(-3, 4, size=(3, 17)).astype(dtype)  # ties on purpose
    _check(_model(op, {"x": x}, axis=axis, keepdims=keepdims, select_last_index=last), {"x": x})


@pytest.mark.parametrize("largest", [1, 0])
@pytest.mark.parametrize("k,axis", [(1, -1), (3, 1), (3, 0)])
def test_top_k(largest, k, axis):
    x = rng.integers(-5, 6, size=(3, 17)).astype(np.float32)  # ties go to the lower index
    model = _model("TopK", {"x": x}, n_outputs=2, initializers=[("k", np.array([k], np.int64))],
                   axis=axis, largest=largest)
    _check(model, {"x": x})
