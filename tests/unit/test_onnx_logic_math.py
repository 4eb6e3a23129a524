"""Comparisons, logic, IsNaN / IsInf, Mod, Sign, rounding and the trigonometric
ops: imported from one-node ONNX graphs and checked against onnxruntime (or
ONNX's reference where onnxruntime lacks the case) on random inputs that
broadcast, in the element types ONNX allows, with the values that trip naive
forms (ties for comparisons, NaN and infinities, halves for Round, negative
operands of both signs for Mod, values beyond 2^23 for Floor). The reference
interpreter runs every case; ge-compile (fused and eager, the default preset
and `tiny`) runs one graph per family, and a causal attention mask built from
positions at run time goes through the NPU the way exports compute it."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from gecomp.core.diagnostics import CompileError  # noqa: E402
from gecomp.frontend.fuzz_paths import OK, PATHS, PATHS_BY_NAME, import_graph, run_graph  # noqa: E402

REFERENCE = [PATHS_BY_NAME["reference"]]
COMPILED = [p for p in PATHS if p.pipeline is not None]


def model(nodes, inputs: dict[str, np.ndarray], outputs: dict[str, int], opset: int = 17, constants=None):
    """A graph of `nodes` over `inputs` (their arrays give the types); `outputs`
    maps each output to its ONNX element type; `constants` are initializers."""
    from onnx import numpy_helper

    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape) for n, a in inputs.items()],
        [helper.make_tensor_value_info(n, t, None) for n, t in outputs.items()],
        [numpy_helper.from_array(a, n) for n, a in (constants or {}).items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def single(op: str, inputs: dict[str, np.ndarray], output_type: int, opset: int = 17, **attributes):
    return model([helper.make_node(op, list(inputs), ["y"], **attributes)], inputs, {"y": output_type}, opset)


def assert_paths(onnx_model, inputs, paths=REFERENCE, onnx_reference: bool = False) -> None:
    """Every path within tolerance of onnxruntime (of ONNX's reference evaluator if
    `onnx_reference`: cases onnxruntime does not implement)."""
    expected = ReferenceEvaluator(onnx_model).run(None, inputs) if onnx_reference else None
    outcomes = run_graph(onnx_model, inputs, paths, expected)
    assert {p: str(o) for p, o in outcomes.items() if o.status != OK} == {}


def ties(shape, dtype, seed: int = 0) -> np.ndarray:
    """Small integers (so that equal elements are common) in `dtype`."""
    return np.random.default_rng(seed).integers(0, 4, shape).astype(dtype)


SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 65504.0, -3.5], dtype=np.float32)


# ---- comparisons and logic ----------------------------------------------------------------

COMPARISONS = ["Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"]


@pytest.mark.parametrize("op", COMPARISONS)
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.int64, np.int8, np.uint8])
def test_comparison_reference(op, dtype):
    a, b = ties((3, 1, 5), dtype, 1), ties((4, 5), dtype, 2)
    assert_paths(single(op, {"a": a, "b": b}, TensorProto.BOOL), {"a": a, "b": b})


@pytest.mark.parametrize("op", COMPARISONS)
def test_comparison_nan_and_infinities(op):
    a = np.tile(SPECIAL, (SPECIAL.size, 1))
    b = SPECIAL.reshape(-1, 1).copy()
    assert_paths(single(op, {"a": a, "b": b}, TensorProto.BOOL), {"a": a, "b": b}, REFERENCE + COMPILED)


@pytest.mark.parametrize("dtype", [np.float16, np.int32, np.int64])
def test_comparison_compiled(dtype):
    a, b = ties((2, 3, 40), dtype, 3), ties((3, 1), dtype, 4)
    assert_paths(single("Less", {"a": a, "b": b}, TensorProto.BOOL), {"a": a, "b": b}, COMPILED)


def test_equal_on_booleans():
    a, b = ties((6, 33), np.int32, 5) > 1, ties((33,), np.int32, 6) > 1
    assert_paths(single("Equal", {"a": a, "b": b}, TensorProto.BOOL), {"a": a, "b": b}, REFERENCE + COMPILED)


@pytest.mark.parametrize("op", ["And", "Or", "Xor"])
def test_logical(op):
    a, b = ties((3, 1, 17), np.int32, 7) > 1, ties((4, 17), np.int32, 8) > 1
    assert_paths(single(op, {"a": a, "b": b}, TensorProto.BOOL), {"a": a, "b": b}, REFERENCE + COMPILED)


def test_not():
    x = ties((5, 19), np.int32, 9) > 1
    assert_paths(single("Not", {"x": x}, TensorProto.BOOL), {"x": x}, REFERENCE + COMPILED)


def test_is_nan():
    for x in (np.tile(SPECIAL, (3, 1)), np.tile(SPECIAL, (3, 1)).astype(np.float16)):
        assert_paths(single("IsNaN", {"x": x}, TensorProto.BOOL), {"x": x}, REFERENCE + COMPILED)


@pytest.mark.parametrize("positive,negative", [(1, 1), (1, 0), (0, 1), (0, 0)])
def test_is_inf(positive, negative):
    for x in (np.tile(SPECIAL, (3, 1)), np.tile(SPECIAL, (3, 1)).astype(np.float16)):
        m = single("IsInf", {"x": x}, TensorProto.BOOL, opset=20, detect_positive=positive, detect_negative=negative)
        assert_paths(m, {"x": x}, REFERENCE + COMPILED[:1])


# ---- mod ------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmod", [0, 1])
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.int8, np.int16])
def test_integer_mod(fmod, dtype):
    rng = np.random.default_rng(10)
    a = rng.integers(-100, 100, (4, 1, 9)).astype(dtype)
    b = rng.choice([-7, -3, -1, 1, 2, 5, 11], (3, 9)).astype(dtype)
    assert_paths(single("Mod", {"a": a, "b": b}, helper.np_dtype_to_tensor_dtype(a.dtype), fmod=fmod), {"a": a, "b": b})


@pytest.mark.parametrize("fmod", [0, 1])
def test_integer_mod_compiled(fmod):
    rng = np.random.default_rng(11)
    a = rng.integers(-1000, 1000, (3, 40)).astype(np.int32)
    b = rng.choice([-7, -3, 1, 5, 64], (40,)).astype(np.int32)
    assert_paths(single("Mod", {"a": a, "b": b}, TensorProto.INT32, fmod=fmod), {"a": a, "b": b}, COMPILED)


def test_unsigned_mod_compiled():
    a = np.random.default_rng(12).integers(0, 255, (5, 33)).astype(np.uint8)
    b = np.random.default_rng(13).integers(1, 20, (33,)).astype(np.uint8)
    assert_paths(single("Mod", {"a": a, "b": b}, TensorProto.UINT8), {"a": a, "b": b}, REFERENCE + COMPILED[:1])


@pytest.mark.parametrize("fmod", [0, 1])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_float_mod(fmod, dtype):
    """fmod = 1 (C) and 0 (the divisor's sign, which ONNX's reference implements for
    floats too), with infinite, zero and NaN operands."""
    a = np.array([[5.5, -5.5, 7.0, -0.0, np.inf, np.nan, 3.0, -2.0, 1e4]], dtype=dtype).repeat(3, 0)
    b = np.array([[2.0], [-2.5], [np.inf]], dtype=dtype)
    b = np.where(np.arange(9) == 6, 0.0, b).astype(dtype)  # a zero divisor in column 6
    m = single("Mod", {"a": a, "b": b}, helper.np_dtype_to_tensor_dtype(a.dtype), fmod=fmod)
    assert_paths(m, {"a": a, "b": b}, REFERENCE + COMPILED[:1] + COMPILED[2:3], onnx_reference=True)


def test_mod_refuses_bad_fmod():
    a = np.ones((2,), np.int32)
    with pytest.raises(CompileError, match="attribute 'fmod' must be 0 or 1, got 2"):
        import_graph(single("Mod", {"a": a, "b": a}, TensorProto.INT32, fmod=2))


# ---- sign and rounding ----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.int64, np.int8])
def test_sign(dtype):
    x = np.tile(SPECIAL, (2, 1)) if np.dtype(dtype).kind == "f" else np.arange(-9, 9).reshape(2, 9)
    x = x.astype(dtype)
    paths = REFERENCE + COMPILED if dtype in (np.float32, np.int32) else REFERENCE + COMPILED[:1]
    # ONNX's reference (np.sign) keeps NaN; onnxruntime's f16 kernel gives 0.
    assert_paths(single("Sign", {"x": x}, helper.np_dtype_to_tensor_dtype(x.dtype)), {"x": x}, paths, onnx_reference=True)


ROUNDING_CASES = np.array(
    [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, -0.2, 3.7, -3.7, 2.0**23 + 1, -(2.0**24), 1e10, 3e38,
     np.inf, -np.inf, np.nan, 0.0],
    dtype=np.float32,
)


@pytest.mark.parametrize("op", ["Floor", "Ceil", "Round"])
def test_rounding(op):
    for x in (ROUNDING_CASES.reshape(2, 9), ROUNDING_CASES.reshape(2, 9).astype(np.float16)):
        assert_paths(single(op, {"x": x}, helper.np_dtype_to_tensor_dtype(x.dtype)), {"x": x}, REFERENCE + COMPILED[:2])


def test_rounding_float64():
    x = np.concatenate([ROUNDING_CASES.astype(np.float64), [2.0**52 + 1, 4503599627370495.5, -7.5]]).reshape(3, 7)
    for op in ("Floor", "Ceil", "Round"):
        assert_paths(single(op, {"x": x}, TensorProto.DOUBLE), {"x": x}, REFERENCE + COMPILED[:1])


def test_round_random_halves_compiled():
    x = (np.random.default_rng(14).integers(-200, 200, (7, 65)) / 2).astype(np.float32)
    assert_paths(single("Round", {"x": x}, TensorProto.FLOAT), {"x": x}, COMPILED[2:])


# ---- trigonometric and hyperbolic -------------------------------------------------------------

DOMAINS = {
    "Sin": (-10, 10), "Cos": (-10, 10), "Tan": (-1.5, 1.5), "Asin": (-1, 1), "Acos": (-1, 1), "Atan": (-20, 20),
    "Sinh": (-5, 5), "Cosh": (-5, 5), "Asinh": (-50, 50), "Acosh": (1, 50), "Atanh": (-0.99, 0.99),
}


@pytest.mark.parametrize("op", list(DOMAINS))
def test_trigonometric(op):
    low, high = DOMAINS[op]
    x = np.random.default_rng(15).uniform(low, high, (3, 4, 21)).astype(np.float32)
    assert_paths(single(op, {"x": x}, TensorProto.FLOAT), {"x": x}, REFERENCE + COMPILED[:1] + COMPILED[2:3])


@pytest.mark.parametrize("op", ["Sin", "Cos", "Asin"])
def test_trigonometric_float16(op):
    low, high = DOMAINS[op]
    x = np.random.default_rng(16).uniform(low, high, (5, 37)).astype(np.float16)
    assert_paths(single(op, {"x": x}, TensorProto.FLOAT16), {"x": x}, REFERENCE + COMPILED[:1] + COMPILED[2:3])


def test_trigonometric_outside_domain_is_nan():
    x = np.array([[-2.0, 2.0, 0.5], [0.0, 1.0, -1.0]], dtype=np.float32)
    for op in ("Asin", "Acos", "Acosh", "Atanh"):
        assert_paths(single(op, {"x": x}, TensorProto.FLOAT), {"x": x}, REFERENCE + COMPILED[:1])


def test_integer_input_to_a_float_op_is_one_line_error():
    x = np.ones((3,), np.int32)
    with pytest.raises(CompileError, match="must have a float element type, got i32") as e:
        import_graph(single("Floor", {"x": x}, TensorProto.INT32))
    assert "\n" not in e.value.message.strip()


# ---- a mask computed at run time ------------------------------------------------------------


def test_causal_padding_mask_from_positions_compiled():
    """Attention as decoders export it, with the mask from run-time positions and
    lengths: keep key j for query i where j <= i and j < length and the key is
    not padding (Equal + Not), i.e. And of three comparisons; masked scores get
    a large negative value with Where, then Softmax. Every compiled path."""
    positions = np.arange(16, dtype=np.int64)
    inputs = {
        "scores": np.random.default_rng(17).standard_normal((2, 4, 16, 16)).astype(np.float32),
        "q_pos": positions.reshape(16, 1),
        "k_pos": positions.reshape(1, 16),
        "length": np.array([11], dtype=np.int64),
        "pad": (np.random.default_rng(18).integers(0, 5, (2, 1, 1, 16)) == 0),
    }
    nodes = [
        helper.make_node("LessOrEqual", ["k_pos", "q_pos"], ["causal"]),
        helper.make_node("Less", ["k_pos", "length"], ["in_range"]),
        helper.make_node("Not", ["pad"], ["real"]),
        helper.make_node("And", ["causal", "in_range"], ["keep2"]),
        helper.make_node("And", ["keep2", "real"], ["keep"]),
        helper.make_node("Where", ["keep", "scores", "minus"], ["masked"]),
        helper.make_node("Softmax", ["masked"], ["y"], axis=-1),
    ]
    m = model(nodes, inputs, {"y": TensorProto.FLOAT}, constants={"minus": np.array(-1e4, np.float32)})
    assert_paths(m, inputs, REFERENCE + COMPILED)
