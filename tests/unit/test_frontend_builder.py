"""The Python graph builder: operators and op functions build the ops they say,
errors are raised at the offending line with the op's message, the built module
verifies and computes what numpy computes; the shipped examples are its output."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gecomp.dialects.context import make_context
from gecomp.core.parsing import parse_module
from gecomp.frontend import ops
from gecomp.frontend.builder import BuildError, GraphBuilder
from gecomp.simulator.reference import run_reference

ROOT = Path(__file__).resolve().parents[2]


def line_of(marker: str) -> int:
    """The line of this file holding `marker` (where an error must point)."""
    lines = inspect.getsource(sys.modules[__name__]).splitlines()
    return next(i for i, line in enumerate(lines, 1) if marker in line and "line_of(" not in line)


def op_names(module) -> list[str]:
    return [op.name for op in module.walk() if op.name.startswith("ge.")]


def test_operators_compute_what_numpy_computes():
    g = GraphBuilder("arith", dtype="f32")
    x = g.input([4, 3], name="x")
    y = g.input([3], name="y")
    w = np.arange(6, dtype=np.float32).reshape(3, 2)
    out = ((x + y) * 2.0 - 1 / (abs(x) + 1.0)) ** 2.0 @ w
    g.output(-out, name="out")
    g.output(1.0 - x[1:, ::-1], name="flipped")
    module = g.build()
    xs = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    ys = np.array([1, 2, 3], dtype=np.float32)
    got, flipped = run_reference(module, [xs, ys])
    np.testing.assert_allclose(got, -(((xs + ys) * 2 - 1 / (abs(xs) + 1)) ** 2 @ w), rtol=1e-5)
    np.testing.assert_array_equal(flipped, 1 - xs[1:, ::-1])
    assert "ge.abs" in op_names(module) and "ge.matmul" in op_names(module)


def test_op_functions_cover_the_dialect():
    from gecomp.dialects.ge import GE_OPS

    names = {op.name.removeprefix("ge.") for op in GE_OPS} - {"const"}
    assert names <= set(ops.__all__)
    assert ops.layer_norm.__doc__ == __import__("gecomp.dialects.ge", fromlist=["LayerNormOp"]).LayerNormOp.__doc__


@pytest.mark.parametrize(
    "index",
    [(1,), (slice(None), 2), (slice(1, None, 2), slice(None, None, -1)), (-1, slice(-2, None)),
     (slice(10, -10, -3),), (slice(5, 1),)],
)
def test_indexing_is_numpy_indexing(index):
    g = GraphBuilder()
    x = g.input([5, 4], name="x")
    g.output(x[index])
    xs = np.arange(20, dtype=np.float32).reshape(5, 4)
    (got,) = run_reference(g.build(), [xs])
    np.testing.assert_array_equal(got, xs[index])


def test_matmul_picks_the_batched_op_for_higher_ranks():
    g = GraphBuilder()
    a, b = g.input([2, 3, 4]), g.input([4, 5])
    g.output(a @ b)
    assert "ge.batch_matmul" in op_names(g.build())


def test_constants_random_and_names():
    g = GraphBuilder("c", dtype="f16")
    x = g.input([2, 8], name="x")
    w1, w2 = g.random([8, 8]), g.random([8, 8], std=1.0, seed=42)
    u = g.uniform([8], low=-1.0, high=1.0)
    y = ops.bias_add(x @ w1 @ w2, u)
    y.name = "y:out"
    g.output(y, name="y")
    text = str(g.build())
    assert "seed = 1, mean = 0.0, std = 0.02> : tensor<8x8xf16>" in text
    assert "seed = 42" in text and "#ge.random<uniform, seed = 2" in text
    assert "%y_out = ge.bias_add" in text and '{ge.name = "y"}' in text


def test_ops_with_explicit_results():
    g = GraphBuilder()
    x = g.input([2, 6], name="x")
    parts = ops.split(x, axis=1, sizes=[2, 4])
    joined = ops.concat([parts[1], parts[0]], axis=1)
    g.output(ops.cast(ops.reshape(joined, [3, -1]), "i32"))
    g.output(ops.expand(g.const(np.array([1.0], np.float32)), [2, 3]))
    xs = np.arange(12, dtype=np.float32).reshape(2, 6)
    cast, expanded = run_reference(g.build(), [xs])
    np.testing.assert_array_equal(cast, np.concatenate([xs[:, 2:], xs[:, :2]], 1).reshape(3, 4).astype(np.int32))
    assert expanded.shape == (2, 3)


# ---- errors at the call site -----------------------------------------------------------------


def test_shape_error_points_at_the_call():
    g = GraphBuilder()
    a, b = g.input([4, 8]), g.input([7, 3])
    with pytest.raises(BuildError) as info:
        a @ b  # the bad matmul
    error = info.value
    assert error.message == "'ge.matmul' op contraction dims differ: lhs K=8, rhs K=7"
    assert error.location.file == __file__
    assert error.location.line == line_of("# the bad matmul")


def test_dtype_error_points_at_the_call():
    g = GraphBuilder()
    a, b = g.input([4], "f16"), g.input([4], "f32")
    with pytest.raises(BuildError, match="operand element types differ: f16 vs f32") as info:
        ops.add(a, b)  # mixed types
    assert info.value.location.line == line_of("# mixed types")


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda g, x: ops.softmax(x, axis=5), "axis 5 is out of range for rank 2"),
        (lambda g, x: ops.reshape(x, [7, -1]), "cannot reshape"),
        (lambda g, x: ops.cast(x, "f80"), "unknown element type"),
        (lambda g, x: x @ g.input([4]), "rank >= 2"),
        (lambda g, x: x[7], "out of range"),
        (lambda g, x: x + GraphBuilder().input([2, 4]), "another graph"),
        (lambda g, x: ops.gather(x, x), "indices must be integers"),
    ],
)
def test_bad_calls_raise_build_errors(build, message):
    g = GraphBuilder()
    x = g.input([2, 4])
    with pytest.raises(BuildError, match=message):
        build(g, x)


def test_build_needs_outputs_and_happens_once():
    g = GraphBuilder("empty")
    x = g.input([2])
    with pytest.raises(BuildError, match="has no outputs"):
        g.build()
    g.output(ops.relu(x))
    g.build()
    with pytest.raises(BuildError, match="already built"):
        ops.relu(x)


def test_module_round_trips_with_locations_of_the_script():
    g = GraphBuilder("rt")
    x = g.input([2, 2], name="x")
    g.output(ops.tanh(x), name="y")  # the tanh
    module = g.build()
    tanh = next(op for op in module.walk() if op.name == "ge.tanh")
    assert tanh.location.line.data == line_of("# the tanh")
    assert str(parse_module(make_context(), str(module))) == str(module)


# ---- the examples are the builder's output ---------------------------------------------------


@pytest.mark.parametrize("script, output", [("build_mmoe.py", "mmoe.mlir"), ("build_wide_deep.py", "wide_deep.mlir")])
def test_examples_are_generated_by_their_scripts(tmp_path, script, output):
    generated = tmp_path / output
    subprocess.run([sys.executable, str(ROOT / "examples" / script), "-o", str(generated)],
                   check=True, capture_output=True, cwd=ROOT)
    body = lambda text: [line for line in text.splitlines() if not line.startswith("//")]  # noqa: E731
    assert body(generated.read_text()) == body((ROOT / "examples" / output).read_text())
