"""ONNX ops imported as decompositions into ge ops (activations, Clip, Sum / Mean,
the reductions, the normalizations, GlobalMaxPool), each checked against
onnxruntime on random inputs of awkward shapes (sizes 1, 3, 17), in f32 and f16
where ONNX allows it, with the opset variants ONNX's node tests leave out (axes
as attributes, Clip's attribute bounds, GroupNormalization's opset-18 scale),
and values that would overflow a naive form (Softplus of 100). Then one graph
per family is compiled with ge-compile (the default preset and `tiny`) and
simulated against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import helper, numpy_helper  # noqa: E402

from gecomp.frontend.fuzz_paths import OK, PATHS_BY_NAME, import_graph, run_graph  # noqa: E402

REFERENCE = [PATHS_BY_NAME["reference"]]
COMPILED = [PATHS_BY_NAME["fused/ascend910"], PATHS_BY_NAME["fused/tiny"]]
SHAPE = (1, 3, 17)


def rand(*shape, dtype=np.float32, scale: float = 1.0, seed: int = 0, low: float | None = None) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.uniform(low, low + scale, shape) if low is not None else rng.standard_normal(shape) * scale
    return x.astype(dtype)


def make_model(nodes, inputs: dict[str, np.ndarray], outputs: list[str], opset: int,
               constants: dict[str, np.ndarray] | None = None):
    """A model of `nodes` whose graph inputs are `inputs` (their arrays give the
    types) and whose initializers are `constants`; the outputs have the first
    input's element type (true of every op here)."""
    output_type = helper.np_dtype_to_tensor_dtype(next(iter(inputs.values())).dtype)
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape) for n, a in inputs.items()],
        [helper.make_tensor_value_info(n, output_type, None) for n in outputs],
        [numpy_helper.from_array(a, n) for n, a in (constants or {}).items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def single(op: str, inputs: dict[str, np.ndarray], opset: int, constants=None, **attributes):
    names = [*inputs, *(constants or {})]
    node = helper.make_node(op, names, ["y"], **attributes)
    return make_model([node], inputs, ["y"], opset, constants)


def assert_matches(model, inputs, paths=REFERENCE, expected=None) -> None:
    """Every path's result within tolerance of onnxruntime's (or of `expected`)."""
    outcomes = run_graph(model, inputs, paths, expected)
    assert {p: str(o) for p, o in outcomes.items() if o.status != OK} == {}


# ---- activations ------------------------------------------------------------------------------

ACTIVATIONS = [
    ("Elu", 22, {"alpha": 0.5}),
    ("Selu", 22, {}),
    ("Selu", 22, {"alpha": 1.5, "gamma": 2.0}),
    ("HardSigmoid", 22, {"alpha": 0.3, "beta": 0.4}),
    ("HardSwish", 22, {}),
    ("Softplus", 22, {}),
    ("Softsign", 22, {}),
    ("Mish", 22, {}),
    ("Swish", 24, {}),
    ("Swish", 24, {"alpha": 0.7}),
    ("ThresholdedRelu", 22, {}),
    ("ThresholdedRelu", 22, {"alpha": -0.5}),
    ("Shrink", 22, {}),
    ("Shrink", 22, {"lambd": 1.5, "bias": 0.25}),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("op, opset, attributes", ACTIVATIONS, ids=lambda v: str(v))
def test_activation_matches_onnxruntime(op, opset, attributes, dtype):
    x = rand(*SHAPE, dtype=dtype, scale=4.0)
    assert_matches(single(op, {"x": x}, opset, **attributes), {"x": x})


@pytest.mark.parametrize("op", ["Elu", "Softplus", "Mish", "Selu"])
def test_activation_does_not_overflow_on_large_inputs(op):
    x = np.array([[-100.0, -30.0, -1.0, 0.0, 1e-3, 30.0, 88.0, 100.0, 3e38]], np.float32)
    assert_matches(single(op, {"x": x}, 22), {"x": x})


@pytest.mark.parametrize("dtype", [np.int8, np.int32])
@pytest.mark.parametrize("lambd, bias", [(0.5, 0.0), (1.5, 2.0), (2.0, -1.0)])
def test_shrink_of_integers(lambd, bias, dtype):
    x = np.arange(-8, 9, dtype=dtype).reshape(1, 17)
    assert_matches(single("Shrink", {"x": x}, 9, lambd=lambd, bias=bias), {"x": x})


def test_shrink_refuses_a_fractional_bias_on_integers():
    from gecomp.frontend.converters import UnsupportedError

    with pytest.raises(UnsupportedError, match="non-integral bias"):
        import_graph(single("Shrink", {"x": np.zeros((2,), np.int32)}, 9, bias=0.5))


@pytest.mark.parametrize("alpha", [1.0, 2.5, 0.5])
def test_celu_matches_onnxruntime(alpha):
    x = rand(3, 17, scale=4.0, seed=1)
    assert_matches(single("Celu", {"x": x}, 22, alpha=alpha), {"x": x})


@pytest.mark.parametrize("slope_shape", [(17,), (3, 1), (1,), (1, 3, 17)])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_prelu_slope_broadcasts_to_x(slope_shape, dtype):
    inputs = {"x": rand(*SHAPE, dtype=dtype), "slope": rand(*slope_shape, dtype=dtype, seed=2)}
    assert_matches(single("PRelu", inputs, 16), inputs)


def test_prelu_refuses_a_slope_that_widens_x():
    from gecomp.core.diagnostics import CompileError

    inputs = {"x": rand(3, 1), "slope": rand(3, 4)}
    with pytest.raises(CompileError, match="slope .* does not broadcast to X"):
        import_graph(single("PRelu", inputs, 16))


CLIPS = {
    "both bounds": ({"lo": np.float32(-0.5), "hi": np.float32(0.7)}, {}),
    "lower only": ({"lo": np.float32(-0.5)}, {}),
    "bounds crossed": ({"lo": np.float32(0.5), "hi": np.float32(-0.7)}, {}),
}


@pytest.mark.parametrize("name", sorted(CLIPS))
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_clip_with_run_time_bounds(name, dtype):
    bounds, _ = CLIPS[name]
    inputs = {"x": rand(*SHAPE, dtype=dtype), **{k: np.asarray(v, dtype) for k, v in bounds.items()}}
    names = ["x", "lo" if "lo" in bounds else "", *(["hi"] if "hi" in bounds else [])]
    node = helper.make_node("Clip", names, ["y"])
    assert_matches(make_model([node], inputs, ["y"], 13), inputs)


def test_clip_upper_bound_only_and_integers():
    x = np.arange(-8, 9, dtype=np.int8).reshape(1, 17)
    hi = np.array(3, np.int8)
    node = helper.make_node("Clip", ["x", "", "hi"], ["y"])
    assert_matches(make_model([node], {"x": x, "hi": hi}, ["y"], 13), {"x": x, "hi": hi})


@pytest.mark.parametrize("attributes", [{"min": -0.3, "max": 0.4}, {"max": 0.1}, {}])
def test_clip_with_attribute_bounds_opset_6(attributes):
    x = rand(*SHAPE)
    assert_matches(single("Clip", {"x": x}, 6, **attributes), {"x": x})


# ---- Sum, Mean -----------------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["Sum", "Mean"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_variadic_sum_and_mean_broadcast(op, dtype):
    inputs = {"a": rand(*SHAPE, dtype=dtype), "b": rand(17, dtype=dtype, seed=1), "c": rand(3, 1, dtype=dtype, seed=2)}
    assert_matches(single(op, inputs, 13), inputs)
    assert_matches(single(op, {"a": inputs["a"]}, 13), {"a": inputs["a"]})


# ---- reductions -----------------------------------------------------------------------------------

REDUCTIONS = ["ReduceMin", "ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp", "ReduceProd"]
AXES = [((0, 2), 0), ((-1,), 1), (None, 1), ((1,), 0)]


def reduction_input(op: str, shape=(3, 1, 17), dtype=np.float32) -> np.ndarray:
    if op == "ReduceLogSum":
        return rand(*shape, dtype=dtype, low=0.1, scale=2.0)
    if op == "ReduceProd":
        return rand(*shape, dtype=dtype, low=0.6, scale=0.8) * np.where(rand(*shape, seed=3) > 0, 1, -1).astype(dtype)
    return rand(*shape, dtype=dtype, scale=3.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("axes, keepdims", AXES, ids=str)
@pytest.mark.parametrize("op", REDUCTIONS)
def test_reduction_with_axes_input(op, axes, keepdims, dtype):
    x = reduction_input(op, dtype=dtype)
    constants = {} if axes is None else {"axes": np.array(axes, np.int64)}
    assert_matches(single(op, {"x": x}, 18, constants, keepdims=keepdims), {"x": x})


@pytest.mark.parametrize("paths", [REFERENCE, COMPILED], ids=["reference", "compiled"])
def test_fp16_l2_norms_of_values_whose_squares_overflow_fp16(paths):
    """Squares of fp16 values above 256 overflow (inf) where their norm does not:
    ReduceL2 and LpNormalization(p=2) square and sum in fp32, as onnxruntime."""
    x = rand(2, 3, 4, dtype=np.float16, scale=500.0)
    assert np.isinf(np.square(x)).any()
    assert_matches(single("ReduceL2", {"x": x}, 18, {"axes": np.array([-1], np.int64)}, keepdims=0), {"x": x}, paths)
    norm = np.sqrt(np.square(x.astype(np.float32)).sum(axis=1, keepdims=True))
    lp = single("LpNormalization", {"x": x}, 13, axis=1, p=2)
    assert_matches(lp, {"x": x}, paths, expected=[(x.astype(np.float32) / norm).astype(np.float16)])


@pytest.mark.parametrize("op", REDUCTIONS)
def test_reduction_with_axes_attribute_opset_13(op):
    x = reduction_input(op, shape=(2, 3, 5))
    assert_matches(single(op, {"x": x}, 13, axes=[0, -1], keepdims=0), {"x": x})


@pytest.mark.parametrize("op", REDUCTIONS)
def test_reduction_noop_with_empty_axes(op):
    x = reduction_input(op)
    assert_matches(single(op, {"x": x}, 18, noop_with_empty_axes=1), {"x": x})


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.int8])
def test_reduce_min_of_integers_at_the_type_limits(dtype):
    info = np.iinfo(dtype)
    x = np.array([[info.min, info.max, 0, 1], [info.max, info.max - 1, info.max, info.max]], dtype)
    assert_matches(single("ReduceMin", {"x": x}, 18, {"axes": np.array([1], np.int64)}), {"x": x})


def test_reduce_prod_of_integers_is_exact():
    x = np.array([[*range(1, 13), -1, 1, -1, 1, -1], [2] * 17], np.int32)  # -12! and 2^17
    assert_matches(single("ReduceProd", {"x": x}, 18, {"axes": np.array([1], np.int64)}), {"x": x})


def test_reduce_log_sum_exp_of_large_values_does_not_overflow():
    x = np.array([[1000.0, 999.0, -1000.0], [-np.inf, -np.inf, -np.inf], [np.inf, 1.0, 2.0]], np.float32)
    assert_matches(single("ReduceLogSumExp", {"x": x}, 18, {"axes": np.array([1], np.int64)}), {"x": x})


@pytest.mark.parametrize("shape", [(1, 3, 17), (2, 3, 4, 5), (1, 1, 1, 1, 3)])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_global_max_pool(shape, dtype):
    x = rand(*shape, dtype=dtype)
    assert_matches(single("GlobalMaxPool", {"x": x}, 22), {"x": x})


# ---- normalizations ----------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(1, 3, 17), (2, 3, 4, 5), (2, 1, 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_instance_normalization(shape, dtype):
    channels = shape[1]
    inputs = {"x": rand(*shape, dtype=dtype, scale=2.0) + 1, "s": rand(channels, dtype=dtype, seed=1),
              "b": rand(channels, dtype=dtype, seed=2)}
    assert_matches(single("InstanceNormalization", inputs, 22, epsilon=1e-3), inputs)


@pytest.mark.parametrize("opset, groups", [(21, 3), (21, 1), (21, 6), (18, 2), (18, 3)])
def test_group_normalization(opset, groups):
    x = rand(2, 6, 17, scale=2.0)
    per = 6 if opset >= 21 else groups
    inputs = {"x": x, "s": rand(per, seed=1), "b": rand(per, seed=2)}
    assert_matches(single("GroupNormalization", inputs, opset, num_groups=groups), inputs)


def test_group_normalization_refuses_groups_that_do_not_divide_the_channels():
    from gecomp.core.diagnostics import CompileError

    inputs = {"x": rand(1, 6, 3), "s": rand(6), "b": rand(6)}
    with pytest.raises(CompileError, match="num_groups 4 must be positive and divide"):
        import_graph(single("GroupNormalization", inputs, 21, num_groups=4))


@pytest.mark.parametrize("size", [1, 3, 5, 2, 8])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_lrn(size, dtype):
    x = rand(2, 5, 3, 4, dtype=dtype, scale=3.0)
    model = single("LRN", {"x": x}, 13, size=size, alpha=0.01, beta=0.6, bias=2.0)
    expected = None if size % 2 else [lrn_by_definition(x, size, alpha=0.01, beta=0.6, bias=2.0)]
    assert_matches(model, {"x": x}, expected=expected)


def lrn_by_definition(x: np.ndarray, size: int, alpha: float, beta: float, bias: float) -> np.ndarray:
    """LRN as ONNX states it, for the even sizes onnxruntime refuses: the squares
    summed over channels c - floor((size-1)/2) .. c + ceil((size-1)/2)."""
    wide = x.astype(np.float64)
    channels = x.shape[1]
    square_sum = np.zeros_like(wide)
    for c in range(channels):
        lo, hi = max(0, c - (size - 1) // 2), min(channels, c + -(-(size - 1) // 2) + 1)
        square_sum[:, c] = (wide[:, lo:hi] ** 2).sum(axis=1)
    return (wide / (bias + alpha / size * square_sum) ** beta).astype(x.dtype)


@pytest.mark.parametrize("axes", [None, [1], [0, 1, 2, 3], [2, 3]])
def test_mean_variance_normalization(axes):
    x = rand(2, 3, 4, 5, scale=2.0) + 0.5
    attributes = {} if axes is None else {"axes": axes}
    assert_matches(single("MeanVarianceNormalization", {"x": x}, 13, **attributes), {"x": x})


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_lp_normalization(p, axis, dtype):
    x = rand(3, 4, 17, dtype=dtype)
    x[1, 2, :] = 0  # a zero norm along the last axis
    assert_matches(single("LpNormalization", {"x": x}, 22, p=p, axis=axis), {"x": x})


# ---- compiled: one graph per family ---------------------------------------------------------------


def family_model(ops: list[tuple[str, dict]], inputs: dict[str, np.ndarray], opset: int, constants=None):
    """One node per (op, attributes) on the same inputs, each its own output."""
    nodes, outputs = [], []
    for i, (op, attributes) in enumerate(ops):
        operands = attributes.pop("inputs", list(inputs))
        nodes.append(helper.make_node(op, operands, [f"y{i}"], **attributes))
        outputs.append(f"y{i}")
    return make_model(nodes, inputs, outputs, opset, constants)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_activation_family_compiles(dtype):
    x = rand(2, 3, 17, scale=3.0, dtype=dtype)
    celu = [("Celu", {"alpha": 2.0})] if dtype == np.float32 else []  # ONNX's Celu is f32 only
    ops = [("Elu", {}), ("Selu", {}), *celu, ("HardSigmoid", {}), ("HardSwish", {}),
           ("Softplus", {}), ("Softsign", {}), ("Mish", {}), ("Swish", {"alpha": 0.7}),
           ("ThresholdedRelu", {"alpha": 0.3}), ("Shrink", {"lambd": 0.6, "bias": 0.2}),
           ("PRelu", {"inputs": ["x", "slope"]}), ("Clip", {"inputs": ["x", "lo", "hi"]}),
           ("Sum", {"inputs": ["x", "slope"]}), ("Mean", {"inputs": ["x", "slope", "x"]})]
    constants = {"slope": rand(17, seed=4, dtype=dtype), "lo": np.array(-0.5, dtype), "hi": np.array(1.5, dtype)}
    assert_matches(family_model(ops, {"x": x}, 24, constants), {"x": x}, COMPILED)


def test_reduction_family_compiles():
    x = reduction_input("ReduceProd", shape=(3, 4, 17))
    ops = [(op, {"inputs": ["x", "axes"], "keepdims": k}) for op in REDUCTIONS if op != "ReduceLogSum" for k in (0, 1)]
    ops.append(("GlobalMaxPool", {"inputs": ["x"]}))
    assert_matches(family_model(ops, {"x": x}, 18, {"axes": np.array([-1], np.int64)}), {"x": x}, COMPILED)


def test_normalization_family_compiles():
    x = rand(2, 6, 4, 5, scale=2.0)
    constants = {"s": rand(6, seed=1), "b": rand(6, seed=2)}
    ops = [("InstanceNormalization", {"inputs": ["x", "s", "b"]}),
           ("GroupNormalization", {"inputs": ["x", "s", "b"], "num_groups": 3}),
           ("LRN", {"inputs": ["x"], "size": 3}),
           ("MeanVarianceNormalization", {"inputs": ["x"]}),
           ("LpNormalization", {"inputs": ["x"], "axis": 1})]
    assert_matches(family_model(ops, {"x": x}, 21, constants), {"x": x}, COMPILED)
