"""The npu dialect: builders, access patterns, the textual form, the docstring's
example, and how @main names npu-level inputs and outputs."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, FunctionType, IndexType, ModuleOp, UnitAttr, f16, f32
from xdsl.ir import Block, Region

from gecomp.core.diagnostics import CompileError
from gecomp.dialects import npu
from gecomp.dialects.npu.access import Fractal, Strided, runs_overlap
from gecomp.core.signature import input_specs, output_specs
from npu_testing import parse, run

LIT = Path(__file__).resolve().parents[1] / "lit" / "npu"


def test_every_op_has_a_round_trip_and_a_verifier_test():
    roundtrip = (LIT / "roundtrip.mlir").read_text()
    written = set(re.findall(r"\b(npu\.\w+)", "\n".join(l for l in roundtrip.splitlines() if not l.startswith("//"))))
    assert {op.name for op in npu.NPU_OPS} - {"npu.return"} <= written
    invalid = (LIT / "invalid.mlir").read_text()
    assert invalid.count("expected-error") >= 25


def test_build_a_kernel_from_python():
    gm = npu.memref([1024], f16, "gm")
    ub = npu.memref([1024], f16, "ub")
    kernel = npu.KernelOp.empty("double", [gm, gm], block_dim=1)
    x, y = kernel.entry.args
    c0 = arith.ConstantOp.from_int_and_width(0, IndexType())
    buffer = npu.AllocOp.new(result_type=ub, offset=0)
    block = npu.BlockIdxOp.new()
    ops = [
        c0,
        block,
        buffer,
        npu.CopyOp.new(x, c0, buffer, c0, cols=1024),
        npu.SetFlagOp.new(src="MTE2", dst="V", event=0),
        npu.WaitFlagOp.new(src="MTE2", dst="V", event=0),
        npu.VAddOp.new(buffer, c0, buffer, c0, buffer, c0, cols=1024),
        npu.SetFlagOp.new(src="V", dst="MTE3", event=0),
        npu.WaitFlagOp.new(src="V", dst="MTE3", event=0),
        npu.CopyOp.new(buffer, c0, y, c0, cols=1024),
    ]
    kernel.entry.insert_ops_before(ops, kernel.entry.last_op)
    main_block = Block(arg_types=[gm, gm])
    main_block.add_ops([npu.LaunchOp.calling("double", main_block.args), func.ReturnOp()])
    main = func.FuncOp("main", FunctionType.from_lists([gm, gm], []), Region(main_block))
    main.arg_attrs = ArrayAttr([DictionaryAttr({}), DictionaryAttr({"npu.output": UnitAttr()})])
    module = ModuleOp([kernel, main])
    text = str(module)
    assert "%3 = npu.block_idx : index" in text
    assert "npu.copy %0[%2], %4[%2] {cols = 1024}" in text
    assert "npu.vadd %4[%2], %4[%2], %4[%2] {cols = 1024}" in text
    assert "npu.launch @double(%0, %1)" in text
    assert str(parse(text)) == text
    x_in = np.arange(1024, dtype=np.float16)
    assert np.array_equal(run(text, [x_in]).outputs[0], x_in * 2)
    assert ops[3].pipe_name() == "MTE2" and ops[-1].pipe_name() == "MTE3" and ops[6].pipe_name() == "V"
    assert ops[3].path() == "gm_to_ub"


def test_pipes_follow_the_spaces():
    assert npu.COPY_PIPES == {
        ("gm", "l1"): "MTE2",
        ("gm", "ub"): "MTE2",
        ("l1", "ub"): "MTE1",
        ("ub", "gm"): "MTE3",
        ("ub", "l1"): "MTE3",
    }
    module = parse((LIT / "roundtrip.mlir").read_text())
    fixpipes = [op for op in module.walk() if isinstance(op, npu.FixpipeOp)]
    assert [f.pipe_name() for f in fixpipes] == ["FIX", "V"]


def addresses(pattern, offset: int) -> np.ndarray:
    """Element addresses of a pattern, by brute force from its definition."""
    if isinstance(pattern, Strided):
        r, c = np.meshgrid(range(pattern.rows), range(pattern.cols), indexing="ij")
        return offset + r * pattern.row_stride + c * pattern.col_stride
    r, c = np.meshgrid(range(pattern.rows), range(pattern.cols), indexing="ij")
    return offset + (c // pattern.n0) * pattern.block_stride + r * pattern.n0 + c % pattern.n0


PATTERNS = [
    Strided(1, 10, 10),
    Strided(4, 8, 8),
    Strided(4, 8, 12),
    Strided(3, 8, 0),
    Strided(5, 7, 3, 0),
    Strided(5, 7, 0, 0),
    Strided(3, 8, 5),
    Fractal(4, 32, 64),
    Fractal(5, 48, 80),
    Fractal(3, 16, 48),
]


@pytest.mark.parametrize("pattern", PATTERNS, ids=str)
def test_patterns_view_runs_and_span(pattern):
    offset = 3
    flat = np.arange(1000, dtype=np.int64)
    want = addresses(pattern, offset)
    view = pattern.viewer()(flat, offset)
    if isinstance(pattern, Fractal):
        from gecomp.dialects.npu.access import fractal_to_tile

        view = fractal_to_tile(view)
    np.testing.assert_array_equal(np.broadcast_to(view, want.shape), want)
    assert pattern.span == want.max() - offset + 1
    count, length = pattern.runs()
    runs = np.unique((pattern.run_starts(offset)[:, None] + np.arange(length)).reshape(-1))
    np.testing.assert_array_equal(runs, np.unique(want))
    overlapping_rows = isinstance(pattern, Strided) and pattern.col_stride == 1 and 0 < pattern.row_stride < pattern.cols
    assert (count * length > np.unique(want).size) if overlapping_rows else (count * length == np.unique(want).size)


def test_exact_overlap_of_runs_against_brute_force():
    rng = np.random.default_rng(0)
    for _ in range(300):
        a_starts = np.sort(rng.choice(60, size=rng.integers(1, 6), replace=False))
        b_starts = np.sort(rng.choice(60, size=rng.integers(1, 6), replace=False))
        a_len, b_len = (int(x) for x in rng.integers(1, 8, size=2))
        a = {s + i for s in a_starts for i in range(a_len)}
        b = {s + i for s in b_starts for i in range(b_len)}
        assert runs_overlap(a_starts, a_len, b_starts, b_len) == bool(a & b)


def test_textual_form_errors_are_located():
    text = """npu.kernel @k(%g: memref<64xf16, #npu.space<gm>>) attributes {block_dim = 1} {
  %c0 = arith.constant 0 : index
  npu.copy %g[%c0], %nope[%c0] {cols = 64}
}"""
    with pytest.raises(CompileError) as info:
        parse(text)
    assert info.value.format() == "test.mlir:3:21: error: value %nope is used before it is defined"


def test_an_op_without_operands_leaves_the_next_line_alone_and_refuses_one_on_its_own():
    """`npu.sync_all` then `%i = ...`: the next op's result is not its operand; an
    operand written on its own line is a located error."""
    body = "npu.kernel @k() attributes {block_dim = 1} {\n  %%j = npu.block_idx : index\n  npu.sync_all%s\n  %%i = npu.block_idx : index\n}"
    parse(body % "")
    with pytest.raises(CompileError) as info:
        parse(body % " %j")
    assert info.value.format() == "test.mlir:3:16: error: npu.sync_all takes no operands"


def test_the_docstring_example_runs():
    doc = npu.__doc__
    example = doc[doc.index("    builtin.module {") : doc.index("The textual form")]
    text = "\n".join(line[4:] for line in example.splitlines())
    rng = np.random.default_rng(0)
    x, y = (rng.standard_normal(16384).astype(np.float16) for _ in range(2))
    result = run(text, [x, y], hw="ascend910")
    expected = np.maximum(x.astype(np.float32) + y.astype(np.float32), 0).astype(np.float16)
    np.testing.assert_array_equal(result.outputs[0], expected)


def test_npu_level_names_follow_the_graph_level():
    text = """func.func @main(%a: memref<4xf16, #npu.space<gm>> {ge.name = "x"}, %b: memref<2x3xf32, #npu.space<gm>>,
                     %o: memref<4xf16, #npu.space<gm>> {npu.output}, %p: memref<8xf16, #npu.space<gm>> {ge.name = "y", npu.output}) {
  func.return
}"""
    main = parse(text).ops.first
    assert [(s.name, s.shape, s.dtype) for s in input_specs(main)] == [("x", (4,), np.float16), ("arg1", (2, 3), np.float32)]
    assert [(s.name, s.shape) for s in output_specs(main)] == [("result0", (4,)), ("y", (8,))]


def test_attribute_values_and_defaults():
    module = parse((LIT / "roundtrip.mlir").read_text())
    copies = [op for op in module.walk() if isinstance(op, npu.CopyOp)]
    a = copies[0].attr_values()
    assert (a.rows, a.cols, a.strides) == (16, 64, (256, 64))
    b = copies[1].attr_values()
    assert (b.rows, b.strides) == (1, None) and copies[1].row_strides(b) == [4096, 4096]
    allocs = [op for op in module.walk() if isinstance(op, npu.AllocOp)]
    assert [op.attr_values().offset for op in allocs][:2] == [0, None]
    costs = {op.name: op.COST for op in npu.VECTOR_OPS}
    assert (costs["npu.vadd"], costs["npu.vdiv"], costs["npu.vexp"], costs["npu.vreduce_max"]) == (
        "binary", "divide", "transcendental", "reduce")
    assert f32 == npu.memref([4], f32, "ub").element_type
