"""`ge.transdata` and the `#ge.format<...>` encoding: type rule, verifier messages,
reference semantics (identity on logical values, through the real layouts) and
the textual form. The layouts themselves are tested in test_graph_formats.py."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import TensorType, f16, f32
from xdsl.ir import Block
from xdsl.utils.exceptions import VerifyException

from gecomp.dialects.context import make_context
from gecomp.core.diagnostics import CompileError
from gecomp.core.parsing import parse_module, verify_module
from gecomp.dialects.ge import Format, FormatAttr, TransDataOp
from gecomp.dialects.ge.formats import format_of, with_format
from gecomp.simulator.reference import run_reference


def test_builder_infers_the_encoded_result_type():
    block_arg = TensorType(f16, [20, 33])
    block = Block(arg_types=[block_arg])
    op = TransDataOp.new(block.args[0], src_format="ND", dst_format="FRACTAL_NZ")
    assert op.result.type == with_format(block_arg, Format.FRACTAL_NZ)
    op.verify()
    back = TransDataOp.new(op.result, src_format="FRACTAL_NZ", dst_format="ND")
    assert format_of(back.result.type) == Format.ND


@pytest.mark.parametrize(
    "fmt, shape, dtype",
    [("FRACTAL_NZ", (17, 33), np.float16), ("FRACTAL_NZ", (2, 3, 5), np.float32),
     ("NC1HWC0", (2, 20, 3, 3), np.float16), ("FRACTAL_Z", (17, 5, 3, 3), np.float32),
     ("FRACTAL_NZ", (4, 40), np.bool_)],
)
def test_semantics_are_the_identity_on_logical_values(run_op, rng, fmt, shape, dtype):
    x = (rng.standard_normal(shape) > 0) if dtype == np.bool_ else rng.standard_normal(shape).astype(dtype)
    inside = run_op(TransDataOp, x, src_format="ND", dst_format=fmt)
    np.testing.assert_array_equal(inside, x, strict=True)


@pytest.mark.parametrize(
    "operand, result, attrs, message",
    [
        (TensorType(f16, [4, 4]), with_format(TensorType(f16, [4, 4]), "FRACTAL_NZ"),
         {"src_format": "NC1HWC0", "dst_format": "FRACTAL_NZ"},
         "input format ND does not match src_format NC1HWC0"),
        (TensorType(f16, [4]), with_format(TensorType(f16, [4, 1]), "FRACTAL_NZ"),
         {"src_format": "ND", "dst_format": "FRACTAL_NZ"},
         "format FRACTAL_NZ needs rank >= 2, got rank 1"),
        (TensorType(f16, [4, 4]), with_format(TensorType(f16, [4, 4]), "FRACTAL_NZ"),
         {"src_format": "ND", "dst_format": "NC1HWC0"},
         "format NC1HWC0 needs a rank-4 tensor, got rank 2"),
        (TensorType(f16, [4, 4]), TensorType(f16, [4, 4]),
         {"src_format": "ND", "dst_format": "FRACTAL_NZ"},
         "result format ND does not match dst_format FRACTAL_NZ"),
        (TensorType(f16, [4, 4]), TensorType(f32, [4, 4]),
         {"src_format": "ND", "dst_format": "ND"},
         "does not match the inferred type"),
        (TensorType(f16, [4, 4]), TensorType(f16, [4, 4]),
         {"src_format": "ND", "dst_format": "NHWC"},
         "attribute 'dst_format' must be one of ND, NC1HWC0, FRACTAL_NZ, FRACTAL_Z, got 'NHWC'"),
    ],
)
def test_verifier_messages(verify_message, operand, result, attrs, message):
    assert message in verify_message(TransDataOp, [operand], [result], **attrs)


MODULE = """
func.func @main(%x: tensor<1x20x5x5xf16>) -> tensor<1x20x5x5xf16> {
  %a = ge.transdata %x {src_format = "ND", dst_format = "NC1HWC0"} : (tensor<1x20x5x5xf16>) -> tensor<1x20x5x5xf16, #ge.format<NC1HWC0>>
  %r = ge.relu %a : (tensor<1x20x5x5xf16, #ge.format<NC1HWC0>>) -> tensor<1x20x5x5xf16, #ge.format<NC1HWC0>>
  %b = ge.transdata %r {src_format = "NC1HWC0", dst_format = "ND"} : (tensor<1x20x5x5xf16, #ge.format<NC1HWC0>>) -> tensor<1x20x5x5xf16>
  func.return %b : tensor<1x20x5x5xf16>
}
"""


def test_text_round_trip_and_reference_run(rng):
    module = parse_module(make_context(), MODULE, "m.mlir")
    verify_module(module)
    again = parse_module(make_context(), str(module), "again.mlir")
    assert str(again) == str(module)
    assert "#ge.format<NC1HWC0>" in str(module)
    x = rng.standard_normal((1, 20, 5, 5)).astype(np.float16)
    (y,) = run_reference(again, [x])
    np.testing.assert_array_equal(y, np.maximum(x, 0), strict=True)


def test_format_attribute_rejects_unknown_formats():
    assert FormatAttr("FRACTAL_Z").format.data == "FRACTAL_Z"
    bad = MODULE.replace("#ge.format<NC1HWC0>>\n  %r", "#ge.format<NCHW>>\n  %r", 1)
    with pytest.raises(CompileError, match="unknown format 'NCHW'"):
        parse_module(make_context(), bad, "bad.mlir")
    with pytest.raises(VerifyException, match="ND is written as no encoding"):
        FormatAttr("ND").verify()

