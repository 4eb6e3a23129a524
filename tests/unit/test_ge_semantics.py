"""The `ge` dialect's reference semantics as a whole: every op has an independent
semantic test (the per-family files test_ge_elementwise / _nn / _normalization /
_shape), constants materialise what they say, and a verifier failure in a parsed
file is a located one-line error.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, ModuleOp, TensorType, f16, f32, i1, i32, i64
from xdsl.ir import Block, Region

from gecomp.dialects.context import make_context
from gecomp.core.diagnostics import CompileError
from gecomp.core.parsing import parse_module, verify_module
from gecomp.dialects.ge import GE_OPS, ConstOp, RandomAttr, dense_from_numpy
from gecomp.simulator.reference import run_reference

HERE = Path(__file__).parent


def test_every_ge_op_has_a_semantic_test():
    """Each op class is imported and used (named at least twice) by some unit test."""
    text = "\n".join(p.read_text() for p in sorted(HERE.glob("test_*.py")))
    missing = [op.name for op in GE_OPS if len(re.findall(rf"\b{op.__name__}\b", text)) < 2]
    assert not missing, f"ops without a semantic test: {missing}"


# ---- ge.const ---------------------------------------------------------------------------------


def run_constants(*ops: ConstOp) -> list[np.ndarray]:
    """The constants' values through `evaluate` and, after printing and re-parsing a
    module returning them, through the reference interpreter; both must agree."""
    types = [op.result.type for op in ops]
    block = Block()
    block.add_ops([*ops, func.ReturnOp(*(op.result for op in ops))])
    main = func.FuncOp("main", FunctionType.from_lists([], types), Region(block))
    module = parse_module(make_context(), str(ModuleOp([main])), "<constants>")
    verify_module(module)
    direct = [op.evaluate([])[0] for op in ops]
    for got, again in zip(direct, run_reference(module, []), strict=True):
        np.testing.assert_array_equal(got, again, strict=True)
    return direct


@pytest.mark.parametrize("dtype", (np.float32, np.float16, np.int32, np.int64, np.bool_))
@pytest.mark.parametrize("shape", [(3,), (2, 5), (1, 1), (11, 13)], ids=str)  # 143 elements print as hex
def test_dense_constant_round_trips(dtype, shape, rng):
    if dtype == np.bool_:
        array = rng.random(shape) < 0.5
    else:
        array = (rng.standard_normal(shape) * 100).astype(dtype)
    (value,) = run_constants(ConstOp.from_array(array))
    np.testing.assert_array_equal(value, array, strict=True)


def test_splat_constant_fills_its_type():
    module = parse_module(
        make_context(),
        """func.func @main() -> (tensor<3x4xf32>, tensor<2xi1>) {
  %c = ge.const dense<2.5> : tensor<3x4xf32>
  %t = ge.const dense<true> : tensor<2xi1>
  func.return %c, %t : tensor<3x4xf32>, tensor<2xi1>
}""",
    )
    verify_module(module)
    c, t = run_reference(module, [])
    np.testing.assert_array_equal(c, np.full((3, 4), 2.5, np.float32), strict=True)
    np.testing.assert_array_equal(t, np.array([True, True]), strict=True)


def test_random_normal_constant_is_seeded_and_distributed():
    t = TensorType(f32, [64, 64])
    a, b, c = run_constants(
        ConstOp.from_value(RandomAttr.normal(7, mean=0.5, std=2.0), t),
        ConstOp.from_value(RandomAttr.normal(7, mean=0.5, std=2.0), t),
        ConstOp.from_value(RandomAttr.normal(8, mean=0.5, std=2.0), t),
    )
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert abs(a.mean() - 0.5) < 0.1 and abs(a.std() - 2.0) < 0.1


@pytest.mark.parametrize("element_type", (f32, f16, i32, i64), ids=str)
def test_random_uniform_constant_stays_in_range(element_type):
    (value,) = run_constants(ConstOp.from_value(RandomAttr.uniform(3, low=-2.0, high=5.0), TensorType(element_type, [32, 32])))
    assert value.min() >= -2 and value.max() <= 5  # fp16 rounding may reach 5.0
    if element_type in (i32, i64):  # integers draw from [ceil(low), ceil(high))
        assert set(np.unique(value)) == set(range(-2, 5))


def test_random_i1_constant_is_about_half_true():
    (value,) = run_constants(ConstOp.from_value(RandomAttr.uniform(3), TensorType(i1, [1000])))
    assert value.dtype == np.bool_ and 400 < value.sum() < 600


def test_const_verifier_rejects_a_value_of_another_type():
    op = ConstOp.build(
        properties={"value": dense_from_numpy(np.ones(3, np.float32))}, result_types=[TensorType(f32, [4])]
    )
    with pytest.raises(Exception, match=r"value of type tensor<3xf32> does not match the result type tensor<4xf32>"):
        op.verify()


# ---- diagnostics from parsed files ---------------------------------------------------------------

BAD_GRAPHS = [
    (
        "%y = ge.matmul %a, %b : (tensor<8x64xf16>, tensor<32x16xf16>) -> tensor<8x16xf16>",
        "'ge.matmul' op contraction dims differ: lhs K=64, rhs K=32",
    ),
    (
        "%y = ge.conv2d %a, %b {groups = 3} : (tensor<8x64xf16>, tensor<32x16xf16>) -> tensor<8x16xf16>",
        "'ge.conv2d' op input must have rank 4, got tensor<8x64xf16>",
    ),
    (
        "%y = ge.add %a, %b : (tensor<8x64xf16>, tensor<32x16xf16>) -> tensor<8x16xf16>",
        "'ge.add' op operands are not broadcast-compatible: 8x64 vs 32x16",
    ),
    (
        "%y = ge.softmax %a {axis = 2} : (tensor<8x64xf16>) -> tensor<8x64xf16>",
        "'ge.softmax' op axis 2 is out of range for rank 2",
    ),
    (
        "%y = ge.reduce_sum %a {axes = [1]} : (tensor<8x64xf16>) -> tensor<8x64xf16>",
        "'ge.reduce_sum' op result type tensor<8x64xf16> does not match the inferred type tensor<8x1xf16>",
    ),
    (
        "%y = ge.slice %a {starts = [0, 0], ends = [8, 65], steps = [1, 1]} : (tensor<8x64xf16>) -> tensor<8x64xf16>",
        "'ge.slice' op slice [0:65:1] of dim 1 (size 64) is not normalized",
    ),
]


@pytest.mark.parametrize("line, message", BAD_GRAPHS, ids=[m.split("'")[1] for _, m in BAD_GRAPHS])
def test_verifier_error_in_a_file_is_one_located_line(line, message):
    result_type = line.rsplit("-> ", 1)[1]
    text = (
        f"func.func @main(%a: tensor<8x64xf16>, %b: tensor<32x16xf16>) -> {result_type} {{\n"
        f"  {line}\n"
        f"  func.return %y : {result_type}\n"
        "}\n"
    )
    module = parse_module(make_context(), text, "bad.mlir")
    with pytest.raises(CompileError) as info:
        verify_module(module)
    assert str(info.value) == f"bad.mlir:2:3: error: {message}"
