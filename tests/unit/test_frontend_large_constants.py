"""Large weights: `ge.const` values print as hex and parse back exactly through the
direct hex path (xDSL's string lexer takes seconds on 100 MB), and weights read
from a file reach the constant without a copy (bench/import_speed.py measures)."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import TensorType

from gecomp.core import dtypes
from gecomp.dialects.context import make_context
from gecomp.core.diagnostics import CompileError
from gecomp.core.parsing import parse_module, verify_module
from gecomp.dialects.ge import ConstOp
from gecomp.frontend import ops
from gecomp.frontend.builder import GraphBuilder

ARRAYS = {
    "f32": np.random.default_rng(0).standard_normal((40, 75)).astype(np.float32),
    "f16": np.random.default_rng(1).standard_normal((3000,)).astype(np.float16),
    "i64": np.arange(-500, 500, dtype=np.int64).reshape(10, 100),
    "bool": np.random.default_rng(2).random((7, 31)) < 0.5,
    "special": np.array([np.inf, -np.inf, np.nan, -0.0] * 40, dtype=np.float32),
}


def const_module(array: np.ndarray):
    g = GraphBuilder("w")
    x = g.input(array.shape, dtypes.from_numpy_dtype(array.dtype), name="x")
    g.output(ops.identity(g.const(array)), name="w")
    g.output(x)
    return g.build()


def consts(module) -> list[ConstOp]:
    return [op for op in module.walk() if isinstance(op, ConstOp)]


@pytest.mark.parametrize("name", list(ARRAYS))
def test_hex_round_trip_is_exact(name):
    array = ARRAYS[name]
    text = str(const_module(array))
    assert 'dense<"0x' in text
    parsed = parse_module(make_context(), text, "w.mlir")
    verify_module(parsed)
    (op,) = consts(parsed)
    np.testing.assert_array_equal(op.as_array(), array)
    assert str(parsed) == text


def test_hex_splat_and_spacing():
    text = 'func.func @main() -> tensor<4x4xf32> {\n  %c = ge.const dense< "0x0000803F" > : tensor<4x4xf32>\n  func.return %c : tensor<4x4xf32>\n}'
    (op,) = consts(parse_module(make_context(), text))
    np.testing.assert_array_equal(op.as_array(), np.ones((4, 4), np.float32))


@pytest.mark.parametrize(
    "value, where, message",
    [
        ('dense<"0xZZ00803F">', "2:26", "invalid hex string in dense attribute"),
        ('dense<"0x0000803F00">', "2:41", "hex data of 5 bytes does not fit tensor<4x4xf32> (64 bytes)"),
    ],
)
def test_bad_hex_is_a_located_error(value, where, message):
    text = f"func.func @main() -> tensor<4x4xf32> {{\n  %c = ge.const {value} : tensor<4x4xf32>\n  func.return %c : tensor<4x4xf32>\n}}"
    with pytest.raises(CompileError) as info:
        parse_module(make_context(), text, "bad.mlir")
    assert str(info.value).startswith(f"bad.mlir:{where}: error: {message}")


def test_weights_read_from_bytes_are_not_copied():
    raw = np.arange(1000, dtype=np.float32).tobytes()
    weights = np.frombuffer(raw, dtype=np.float32).reshape(10, 100)
    op = ConstOp.from_array(weights, TensorType(dtypes.from_numpy_dtype(np.float32), [10, 100]))
    assert op.value.data.data is raw
    shifted = np.frombuffer(raw, dtype=np.float32)[1:]  # a view that does not start at the buffer
    assert ConstOp.from_array(shifted).value.data.data == shifted.tobytes()
