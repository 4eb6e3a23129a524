"""Rows longer than UB: layer_norm, rms_norm, softmax and log_softmax take the
chunked kernel of `templates/normalization.py` (statistics gathered chunk by
chunk, then each chunk normalised), on tiny for rows of a few thousand elements
and on ascend910 for rows of 10^5; softmax over an inner axis too. Random shapes (a fixed seed) against the
reference interpreter, the ONNX graphs that `bench/fuzz.py` found refused on
tiny against onnxruntime on every path, and the legality predicate fusion asks
agreeing with the lowering."""

from __future__ import annotations

import numpy as np
import pytest

from vector_testing import assert_matches, one_op, tensor

CHUNKED = "longer than UB"


def _shapes(seed: int, count: int) -> list[tuple[list[int], int, str]]:
    """(shape, axis, dtype) with a normalised size of 1100 to 9000 elements (more
    than tiny's UB holds with its temporaries), odd sizes included."""
    rng = np.random.default_rng(seed)
    cases = []
    for _ in range(count):
        cols = int(rng.integers(1100, 9000))
        rows = int(rng.integers(1, 6))
        dtype = str(rng.choice(["f16", "f32"]))
        if rng.random() < 0.3 and cols % 3 == 0:  # normalised over two dims
            cases.append(([rows, 3, cols // 3], 1, dtype))
        else:
            cases.append(([rows, cols], -1, dtype))
    return cases


def _lower(hw: str) -> dict:
    return {"pipeline": f"ge-lower-to-npu{{hw={hw} debug=true}}", "hw": hw}


def _inputs(shape, axis, dtype, params: int, seed: int = 0, offset: float = 0.0):
    rng = np.random.default_rng(seed)
    np_type = np.float16 if dtype == "f16" else np.float32
    x = (offset + rng.uniform(-2, 2, shape)).astype(np_type)
    normalized = shape[axis % len(shape):]
    return [x, *(rng.uniform(0.5, 1.5, normalized).astype(np_type) for _ in range(params))]


@pytest.mark.parametrize("shape,axis,dtype", _shapes(34, 4), ids=str)
@pytest.mark.parametrize("op", ["ge.layer_norm", "ge.rms_norm"])
def test_long_norm_rows_on_tiny(op, shape, axis, dtype, capsys):
    params = 2 if op == "ge.layer_norm" else 1
    t, p = tensor(shape, dtype), tensor(shape[axis % len(shape):], dtype)
    text = one_op(op, [t] + [p] * params, t, f"axis = {axis}, epsilon = 1.0e-05")
    assert_matches(text, inputs=_inputs(shape, axis, dtype, params), **_lower("tiny"))
    assert CHUNKED in capsys.readouterr().err


@pytest.mark.parametrize("shape,axis,dtype", _shapes(35, 3), ids=str)
@pytest.mark.parametrize("op", ["ge.softmax", "ge.log_softmax"])
def test_long_softmax_rows_on_tiny(op, shape, axis, dtype, capsys):
    if axis != -1:
        shape, axis = [shape[0], shape[1] * shape[2]], -1
    t = tensor(shape, dtype)
    # probabilities of a wide row are small numbers: a tight absolute tolerance
    atol = 1e-5 if op == "ge.softmax" else None
    assert_matches(one_op(op, [t], t, "axis = -1"), inputs=_inputs(shape, -1, dtype, 0), atol=atol, **_lower("tiny"))
    assert CHUNKED in capsys.readouterr().err


@pytest.mark.parametrize("op,shape,axis,dtype,hw", [
    ("ge.softmax", [2000, 2], 0, "f32", "tiny"),
    ("ge.softmax", [2, 3000, 5], 1, "f16", "tiny"),
    ("ge.log_softmax", [1, 5000, 33], 1, "f16", "tiny"),
    ("ge.log_softmax", [3, 1500, 7], 1, "f32", "tiny"),
    ("ge.softmax", [100000, 3], 0, "f32", "ascend910"),
], ids=str)
def test_long_softmax_over_an_inner_axis(op, shape, axis, dtype, hw, capsys):
    """Softmax over an axis with elements after it: an item is a few columns of
    one (axis x inner) slab, its chunks strided (axis x columns) tiles."""
    t = tensor(shape, dtype)
    atol = 1e-5 if op == "ge.softmax" else None
    assert_matches(one_op(op, [t], t, f"axis = {axis}"), atol=atol, **_lower(hw))
    assert "columns of a" in capsys.readouterr().err


def test_layer_norm_of_values_far_from_zero():
    """The sums are of x shifted by its first element: a mean of 200 with a spread
    of 2 does not cancel E[x^2] - E[x]^2 away in fp32."""
    shape = [2, 3001]
    t, p = tensor(shape, "f32"), tensor(shape[-1:], "f32")
    text = one_op("ge.layer_norm", [t, p, p], t, "axis = -1, epsilon = 1.0e-05")
    assert_matches(text, inputs=_inputs(shape, -1, "f32", 2, offset=200.0), **_lower("tiny"))


@pytest.mark.parametrize("op,shape,dtype", [
    ("ge.softmax", [1, 70001], "f32"),
    ("ge.layer_norm", [2, 131072], "f16"),
])
def test_very_long_rows_on_ascend910(op, shape, dtype, capsys):
    """Rows of 10^5 elements (an exact-erf GELU's row in a wav2vec2, a long
    sequence's scores) were refused on ascend910 too."""
    t, p = tensor(shape, dtype), tensor(shape[-1:], dtype)
    if op == "ge.softmax":
        text, inputs, atol = one_op(op, [t], t, "axis = -1"), _inputs(shape, -1, dtype, 0), 1e-7
    else:
        text = one_op(op, [t, p, p], t, "axis = -1, epsilon = 1.0e-05")
        inputs, atol = _inputs(shape, -1, dtype, 2), None
    assert_matches(text, inputs=inputs, atol=atol, **_lower("ascend910"))
    assert CHUNKED in capsys.readouterr().err


def test_rows_that_fit_keep_the_row_kernel(capsys):
    t, p = tensor([4, 1030]), tensor([1030])
    assert_matches(one_op("ge.layer_norm", [t, p, p], t, "axis = -1, epsilon = 1.0e-05"), **_lower("tiny"))
    assert CHUNKED not in capsys.readouterr().err


# ---- the ONNX graphs of the fuzzer, every path against onnxruntime --------------------------

ONNX_GRAPHS = {
    # the three fuzz refusals on tiny (rows of 1440 and 2244), and what fusion makes of them
    "rms_norm_1440_f16": 'g (float16[2,5,1440] x, float16[1440] s) => (float16[2,5,1440] y) '
                         '{ y = RMSNormalization<axis=-1>(x, s) }',
    "layer_norm_2244": 'g (float[3,2244] x, float[2244] s, float[2244] b) => (float[3,2244] y) '
                       '{ y = LayerNormalization<axis=-1>(x, s, b) }',
    "add_layer_norm_3000": 'g (float[4,3000] x, float[4,3000] r, float[3000] s, float[3000] b) => (float[4,3000] y) '
                           '{ t = Add(x, r)\n y = LayerNormalization<axis=-1>(t, s, b) }',
    "matmul_rms_norm_3000": 'g (float[8,64] a, float[64,3000] w, float[3000] s) => (float[8,3000] y) '
                            '{ t = MatMul(a, w)\n y = RMSNormalization<axis=-1>(t, s) }',
    "gelu_softmax_f16": 'g (float16[3,17000] x) => (float16[3,17000] y) { t = Gelu(x)\n y = Softmax<axis=1>(t) }',
}


@pytest.mark.parametrize("name", sorted(ONNX_GRAPHS))
def test_long_rows_on_every_path(name):
    pytest.importorskip("onnxruntime")
    from onnx import helper, parser

    from gecomp.frontend.fuzz_paths import OK, PATHS, run_graph

    model = parser.parse_model('<ir_version: 10, opset_import: ["" : 23]>\n' + ONNX_GRAPHS[name])
    rng = np.random.default_rng(0)
    inputs = {}
    for info in model.graph.input:
        t = info.type.tensor_type
        shape = [d.dim_value for d in t.shape.dim]
        inputs[info.name] = rng.uniform(-2, 2, shape).astype(helper.tensor_dtype_to_np_dtype(t.elem_type))
    outcomes = run_graph(model, inputs, PATHS)
    assert {p: str(o) for p, o in outcomes.items() if o.status != OK} == {}


def test_the_legality_predicate_agrees():
    """The predicate fusion and layout ask builds the template itself: a long
    ge.layer_norm has a kernel on tiny; the whole-row fused.add_layer_norm of
    the same rows does not (so fusion leaves the add and the norm apart)."""
    from gecomp.dialects.context import make_context
    from gecomp.core.parsing import parse_module
    from gecomp.lowering.fused_to_npu.kernel_exists import kernel_problem
    from gecomp.simulator.hardware import load_preset

    x, p = tensor([4, 3000], "f32"), tensor([3000], "f32")
    fused = f"""func.func @main(%x: {x}, %r: {x}, %g: {p}, %b: {p}) -> {x} {{
  %y, %s = fused.add_layer_norm %x, %r, %g, %b {{epsilon = 1.0e-05}} : ({x}, {x}, {p}, {p}) -> ({x}, {x})
  %z = ge.layer_norm %s, %g, %b {{axis = -1, epsilon = 1.0e-05}} : ({x}, {p}, {p}) -> {x}
  func.return %z : {x}
}}"""
    module = parse_module(make_context(), fused)
    ops = {op.name: op for op in module.walk() if op.name in ("ge.layer_norm", "fused.add_layer_norm")}
    tiny = load_preset("tiny")
    assert kernel_problem(ops["ge.layer_norm"], tiny) is None
    assert "one row of 3000 elements" in kernel_problem(ops["fused.add_layer_norm"], tiny)
