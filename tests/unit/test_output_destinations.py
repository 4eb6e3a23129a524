"""ge-to-npu writes a returned value into @main's output argument directly when
it can: also when the value is returned through ND reshapes (a model's last
norm reshaped to the batch's shape), whose producer then writes a view of the
output instead of a buffer of its own that one more kernel copies out."""

from __future__ import annotations

import pytest

from gecomp.dialects import npu
from vector_testing import compile_and_compare

RESHAPED = """
func.func @main(%x: tensor<32x64xf16> {ge.name = "x"}) -> (tensor<1x32x64xf16> {ge.name = "y"}) {
  %r = ge.relu %x : (tensor<32x64xf16>) -> tensor<32x64xf16>
  %y = ge.reshape %r : (tensor<32x64xf16>) -> tensor<1x32x64xf16>
  return %y : tensor<1x32x64xf16>
}
"""

TWICE = """
func.func @main(%x: tensor<32x64xf16> {ge.name = "x"}) -> (tensor<32x64xf16> {ge.name = "r"}, tensor<1x32x64xf16> {ge.name = "y"}) {
  %r = ge.relu %x : (tensor<32x64xf16>) -> tensor<32x64xf16>
  %y = ge.reshape %r : (tensor<32x64xf16>) -> tensor<1x32x64xf16>
  return %r, %y : tensor<32x64xf16>, tensor<1x32x64xf16>
}
"""

ARGUMENT = """
func.func @main(%x: tensor<32x64xf16> {ge.name = "x"}) -> (tensor<1x32x64xf16> {ge.name = "y"}) {
  %y = ge.reshape %x : (tensor<32x64xf16>) -> tensor<1x32x64xf16>
  return %y : tensor<1x32x64xf16>
}
"""


def launched(module) -> list[str]:
    return [op.callee.string_value() for op in module.walk() if isinstance(op, npu.LaunchOp)]


@pytest.mark.parametrize("merge", [False, True])
def test_a_reshaped_result_is_written_by_its_producer(merge):
    mismatch, _, module = compile_and_compare(RESHAPED, pipeline=f"ge-compile{{hw=tiny merge={str(merge).lower()}}}")
    assert mismatch is None, mismatch
    names = launched(module)
    assert len(names) == 1 and "_output_" not in names[0]


def test_a_value_returned_itself_and_reshaped_is_written_once_and_copied_once():
    mismatch, _, module = compile_and_compare(TWICE, pipeline="ge-compile{hw=tiny merge=false}")
    assert mismatch is None, mismatch
    assert sum("_output_" in name for name in launched(module)) == 1


def test_a_reshaped_argument_is_still_copied():
    mismatch, _, module = compile_and_compare(ARGUMENT, pipeline="ge-compile{hw=tiny merge=false}")
    assert mismatch is None, mismatch
    assert [("_output_" in name) for name in launched(module)] == [True]
