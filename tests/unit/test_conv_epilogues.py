"""Convolution epilogues beyond bias + ReLU: ReLU6 (Clip(0, 6)), SiLU written as
x * sigmoid(x), HardSwish, sigmoid, a residual.

* the fused activations' definitions against closed forms;
* each activation in each conv kernel (gemm-1x1, img2col, the depthwise vector
  kernel) on random shapes, simulated against the reference interpreter;
* ONNX graphs as exporters write them (Clip, HardSwish, Mul(x, Sigmoid(x)))
  through ge-compile fused and eager, against the reference and onnxruntime,
  the fusion pinned (the conv takes the activation);
* legality: a conv epilogue the kernels cannot build is never formed, and every
  conv the fusion forms has a kernel (the one predicate, `kernel_exists`).
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from cube_lowering_testing import check_lowering, parse
from test_conv_algorithms import check_pinned, random_depthwise, random_general
from test_lower_cube_conv import conv_module

from gecomp.dialects.context import make_context
from gecomp.core.passes import parse_pass_pipeline, run_pipeline
from gecomp.dialects import fused
from gecomp.dialects.fused.base import ACTIVATIONS, activate
from gecomp.lowering.fused_to_npu.kernel_exists import kernel_problem
from gecomp.simulator.hardware import load_preset

NEW_ACTS = ("relu6", "hard_swish", "sigmoid", "silu")


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


CLOSED_FORMS = {
    "none": lambda x: x,
    "relu": lambda x: np.maximum(x, 0),
    "relu6": lambda x: np.clip(x, 0, 6),
    "hard_swish": lambda x: x * np.clip(x + 3, 0, 6) / 6,
    "sigmoid": _sigmoid,
    "silu": lambda x: x * _sigmoid(x),
}


@pytest.mark.parametrize("name", sorted(CLOSED_FORMS))
def test_fused_activation_definitions_match_their_closed_forms(name):
    x = np.random.default_rng(0).normal(0, 5, 1000).astype(np.float32)
    np.testing.assert_allclose(activate(name, x), CLOSED_FORMS[name](x.astype(np.float64)), rtol=1e-5, atol=1e-5)


def test_every_fused_activation_has_a_closed_form_here():
    assert set(ACTIVATIONS) - {"gelu", "gelu_tanh"} == set(CLOSED_FORMS)


# ---- each kernel ----------------------------------------------------------------------------


@pytest.mark.parametrize("act", NEW_ACTS)
def test_depthwise_vector_epilogue_random(act, capsys):
    seed = NEW_ACTS.index(act)
    params = {**random_depthwise(seed), "act": act, "x_format": "NC1HWC0", "y_format": "NC1HWC0"}
    check_pinned(conv_module(**params), "depthwise-vector", capsys)


@pytest.mark.parametrize("act", NEW_ACTS)
def test_img2col_epilogue_random(act, capsys):
    params = {**random_general(20 + NEW_ACTS.index(act)), "act": act}
    check_pinned(conv_module(**params), "img2col", capsys)


@pytest.mark.parametrize("act", NEW_ACTS)
@pytest.mark.parametrize("residual", [False, True], ids=["plain", "residual"])
def test_gemm_1x1_epilogue_random(act, residual, capsys):
    r = random.Random(NEW_ACTS.index(act))
    params = dict(n=r.choice([1, 2]), c=r.choice([8, 24]), o=r.choice([8, 40]), h=r.randint(2, 9), w=r.randint(2, 9),
                  bias=True, residual=residual, act=act, dtype=r.choice(["f16", "f32"]))
    text = conv_module(**params, kh=1, kw=1, pads=(0, 0, 0, 0), x_format="NC1HWC0", w_format="FRACTAL_Z",
                       y_format="NC1HWC0")
    check_pinned(text, "gemm-1x1", capsys)


# ---- ONNX graphs as exporters write them ------------------------------------------------------

def _onnx():
    onnx = pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    return onnx


def _conv_node(helper, x: str, w: str, b: str, y: str, groups: int = 1):
    return helper.make_node("Conv", [x, w, b], [y], pads=[1, 1, 1, 1], group=groups)


def _activation_nodes(helper, form: str, x: str, y: str) -> list:
    """`form` applied to `x` into `y`, as torch's exporters write it."""
    if form == "clip":
        return [helper.make_node("Clip", [x, "lo", "hi"], [y])]
    if form == "hard_swish":
        return [helper.make_node("HardSwish", [x], [y])]
    if form == "silu":
        return [helper.make_node("Sigmoid", [x], [x + "_s"]), helper.make_node("Mul", [x, x + "_s"], [y])]
    raise ValueError(form)


def _block(form: str, channels: int = 16, size: int = 8, seed: int = 0):
    """An MBConv-like block: expand 3x3 conv + act, depthwise 3x3 conv + act,
    squeeze-excitation (pool, 1x1 + act, 1x1 + sigmoid, scale), project 1x1 conv,
    residual add."""
    o = _onnx()
    helper, numpy_helper = o.helper, o.numpy_helper
    r = np.random.default_rng(seed)
    c, e, s = channels, 2 * channels, 4

    def const(name, *shape, std=0.3):
        return numpy_helper.from_array(r.normal(0, std, shape).astype(np.float32), name)

    inits = [const("w1", e, c, 3, 3), const("b1", e), const("wd", e, 1, 3, 3, std=1.0), const("bd", e),
             const("ws1", s, e, 1, 1), const("bs1", s), const("ws2", e, s, 1, 1), const("bs2", e),
             const("wp", c, e, 1, 1), const("bp", c),
             numpy_helper.from_array(np.array(0.0, np.float32), "lo"),
             numpy_helper.from_array(np.array(6.0, np.float32), "hi")]
    nodes = [_conv_node(helper, "x", "w1", "b1", "e0"), *_activation_nodes(helper, form, "e0", "e1"),
             _conv_node(helper, "e1", "wd", "bd", "d0", groups=e), *_activation_nodes(helper, form, "d0", "d1"),
             helper.make_node("GlobalAveragePool", ["d1"], ["p"]),
             helper.make_node("Conv", ["p", "ws1", "bs1"], ["q0"]), *_activation_nodes(helper, form, "q0", "q1"),
             helper.make_node("Conv", ["q1", "ws2", "bs2"], ["q2"]), helper.make_node("Sigmoid", ["q2"], ["q3"]),
             helper.make_node("Mul", ["d1", "q3"], ["m"]),
             helper.make_node("Conv", ["m", "wp", "bp"], ["y0"]), helper.make_node("Add", ["y0", "x"], ["y"])]
    shape = [1, c, size, size]
    graph = helper.make_graph(nodes, "block", [helper.make_tensor_value_info("x", o.TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", o.TensorProto.FLOAT, shape)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return model, [r.normal(0, 2, shape).astype(np.float32)]


def _fuse(module, hw: str) -> None:
    """ge-compile's graph and fusion stages (everything before ge-lower-to-npu)."""
    from gecomp.lowering.pipelines import CompilePipeline

    ctx = make_context()
    for stage in CompilePipeline(hw=hw).stages()[:-1]:
        stage.apply(ctx, module)


@pytest.mark.parametrize("form, act", [("clip", "relu6"), ("hard_swish", "hard_swish"), ("silu", "silu")])
def test_exported_block_fuses_its_epilogues_and_computes_as_onnxruntime(form, act):
    from gecomp.bench.models import run

    model, inputs = _block(form)
    want = run.onnxruntime_outputs(model, inputs)
    fusion = run.import_proto(model)
    _fuse(fusion, "tiny")
    convs = [op for op in fusion.walk() if isinstance(op, fused.Conv2DBiasActOp)]
    acts = sorted(op.attr_values().act for op in convs)
    # expand and depthwise take the activation, the projection none; the SE's two
    # single-pixel 1x1s are vector groups (ge-single-pixel-conv) holding the
    # activation and the sigmoid, so no activation is left as a kernel of its own
    assert acts == sorted([act, act, "none"]), acts
    func_ops = [op.name for op in next(op for op in fusion.walk() if op.name == "func.func").body.block.ops]
    assert func_ops.count("fused.group") == 2, func_ops
    assert not {"ge.clip", "ge.sigmoid", "ge.mul", "ge.min", "ge.max", "ge.relu"} & set(func_ops), func_ops
    group_ops = {inner.name for group in fusion.walk() if isinstance(group, fused.GroupOp) for inner in group.walk()}
    assert "ge.sigmoid" in group_ops, group_ops
    hw = load_preset("tiny")
    assert all(kernel_problem(op, hw) is None for op in convs)
    for pipeline in ("ge-compile{hw=tiny}", "ge-compile{hw=tiny fuse=false}"):
        module = run.import_proto(model)
        check_lowering(module, "tiny", pipeline=pipeline, inputs=inputs)
        simulated = run.simulate(module, inputs, want, hw="tiny")
        assert simulated.worst_ratio <= 1.0, f"{pipeline}: {simulated.worst}"


# ---- legality ----------------------------------------------------------------------------------

UNBUILDABLE = """
func.func @main(%x: tensor<1x4x6x6xf32>, %w: tensor<4x4x3x3xf32>, %r: tensor<1x1x6x6xf32>) -> tensor<1x4x6x6xf32> {
  %zero = ge.const dense<0.0> : tensor<f32>
  %six = ge.const dense<6.0> : tensor<f32>
  %0 = ge.conv2d %x, %w {pads = [1, 1, 1, 1]} : (tensor<1x4x6x6xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32>
  %1 = ge.add %0, %r : (tensor<1x4x6x6xf32>, tensor<1x1x6x6xf32>) -> tensor<1x4x6x6xf32>
  %2 = ge.maximum %1, %zero : (tensor<1x4x6x6xf32>, tensor<f32>) -> tensor<1x4x6x6xf32>
  %3 = ge.minimum %2, %six : (tensor<1x4x6x6xf32>, tensor<f32>) -> tensor<1x4x6x6xf32>
  func.return %3 : tensor<1x4x6x6xf32>
}
"""


def test_an_epilogue_no_conv_kernel_builds_is_not_formed_and_the_graph_still_computes():
    """A residual broadcast over channels ((1, 1, H, W)) is no operand the conv
    kernels read: the pattern asks the lowering's predicate and leaves the ops;
    the whole compile still matches the reference."""
    module = parse(UNBUILDABLE)
    fusion = module.clone()
    run_pipeline(parse_pass_pipeline("ge-pattern-fuse{hw=tiny}"), make_context(), fusion)
    assert not [op for op in fusion.walk() if isinstance(op, fused.Conv2DBiasActOp)]
    assert [op.name for op in fusion.walk() if op.name.startswith("ge.") and op.name != "ge.const"] == [
        "ge.conv2d", "ge.add", "ge.maximum", "ge.minimum"]
    check_lowering(module, "tiny", pipeline="ge-compile{hw=tiny}")
