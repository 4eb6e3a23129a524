"""The cube multiplies bf16 (as the 910B's does, at the f16 rate, accumulating in
fp32, the FixPipe rounding once to bf16), and refuses f64, for which the NPU has no
unit, with `NoUnitForTypeError`: one line naming the op and the type, which the
ONNX conformance bench counts as refused ("no NPU kernel for dtype f64"), not failed.

Products are compiled for the `tiny` preset (several tiles and cores on small
shapes) and simulated against the reference interpreter (fp32 products rounded
once to bf16)."""

from __future__ import annotations

import pytest

from vector_testing import assert_matches, one_op, tensor

from gecomp.core.diagnostics import NoUnitForTypeError
from gecomp.core.parsing import parse_module
from gecomp.core.passes import parse_pass_pipeline, run_pipeline
from gecomp.dialects.context import make_context


@pytest.mark.parametrize(("m", "k", "n", "ta", "tb"), [(37, 70, 45, False, False), (16, 33, 17, True, False),
                                                     (65, 20, 31, False, True)])
def test_bf16_matmul_on_the_cube(m, k, n, ta, tb):
    a, b = tensor([k, m] if ta else [m, k], "bf16"), tensor([n, k] if tb else [k, n], "bf16")
    attrs = f"transpose_a = {str(ta).lower()}, transpose_b = {str(tb).lower()}"
    assert_matches(one_op("ge.matmul", [a, b], tensor([m, n], "bf16"), attrs=attrs))


def test_bf16_batch_matmul_with_a_fused_epilogue():
    """A batched product, then bias and relu fused into its epilogue (computed in
    fp32 from L0C, rounded once)."""
    a, b, bias, out = tensor([3, 20, 40], "bf16"), tensor([3, 40, 24], "bf16"), tensor([24], "bf16"), tensor([3, 20, 24], "bf16")
    text = f"""func.func @main(%a: {a}, %b: {b}, %c: {bias}) -> {out} {{
  %p = ge.batch_matmul %a, %b : ({a}, {b}) -> {out}
  %q = ge.add %p, %c : ({out}, {bias}) -> {out}
  %r = ge.relu %q : ({out}) -> {out}
  func.return %r : {out}
}}"""
    assert_matches(text, pipeline="ge-compile{hw=tiny}")


def test_f64_products_are_refused_by_type():
    a = tensor([8, 8], "f64")
    module = parse_module(make_context(), one_op("ge.matmul", [a, a], a), "test.mlir")
    with pytest.raises(NoUnitForTypeError, match=r"'ge.matmul' op has no NPU kernel for element type f64: "
                                                 r"the cube multiplies f16, bf16, f32$"):
        run_pipeline(parse_pass_pipeline("ge-lower-to-npu{hw=tiny}"), make_context(), module)


def test_refusal_kinds():
    from gecomp.frontend.conformance import refusal_kind

    assert refusal_kind("'ge.batch_matmul' op has no NPU kernel for element type f64: the cube multiplies f16, "
                        "bf16, f32") == "no NPU kernel for dtype f64"
    assert refusal_kind("model uses 1 unsupported op type: StringSplit (1); the first is node #0") == "op not supported"
    assert refusal_kind("input 'x' is a sequence; only tensors are supported") == "sequence or optional"
    assert refusal_kind("input 'x' has element type string, which gecomp does not support (...)") == "element type string"
    assert refusal_kind("node #0 (MaxPool, output 'y'): the Indices output is not supported") == \
        "MaxPool: the Indices output is not supported"
    assert refusal_kind("something new") == "something new"


def test_bf16_convolution_on_the_cube():
    """A 3x3 convolution in bf16 goes through the cube (the convolution's type check
    is the cube's, which takes bf16)."""
    x, w, out = tensor([1, 16, 8, 8], "bf16"), tensor([32, 16, 3, 3], "bf16"), tensor([1, 32, 8, 8], "bf16")
    assert_matches(one_op("ge.conv2d", [x, w], out, attrs="pads = [1, 1, 1, 1]"), pipeline="ge-compile{hw=tiny}")


def test_f64_convolutions_are_refused_by_type():
    """A convolution no implementation takes in f64 is refused as a matmul is (one
    line, by kind, naming the cube's types), not with every candidate's reason."""
    x, w, out = tensor([1, 16, 8, 8], "f64"), tensor([32, 16, 3, 3], "f64"), tensor([1, 32, 8, 8], "f64")
    module = parse_module(make_context(), one_op("ge.conv2d", [x, w], out, attrs="pads = [1, 1, 1, 1]"), "test.mlir")
    with pytest.raises(NoUnitForTypeError, match=r"'ge.conv2d' op has no NPU kernel for element type f64: "
                                                 r"the cube multiplies f16, bf16, f32$"):
        run_pipeline(parse_pass_pipeline("ge-lower-to-npu{hw=tiny}"), make_context(), module)
