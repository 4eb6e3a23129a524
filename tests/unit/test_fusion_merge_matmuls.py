"""`ge-merge-matmuls`: products of one lhs by weights of one shape become one
`fused.multi_matmul_bias_act` (lowering/graph_to_fused/merge_matmuls.py)."""

from __future__ import annotations

import pytest

from cube_lowering_testing import check_lowering
from gecomp.dialects.context import make_context
from gecomp.core.parsing import parse_module
from gecomp.core.passes import parse_pass_pipeline, run_pipeline
from gecomp.dialects import fused, ge

X = "tensor<40x64xf16>"
W = "tensor<64x48xf16>"
Y = "tensor<40x48xf16>"


def projection(i: int, bias: bool = True, act: str = "", weight_type: str = W, residual: str = "") -> str:
    """y_i = act(x @ w_i + b_i [+ residual]), the weight a random constant defined just
    before its product (after the previous product, as exporters write them)."""
    lines = [f"  %w{i} = ge.const #ge.random<normal, seed = {i + 1}, mean = 0.0, std = 0.1> : {weight_type}"]
    n = weight_type.split("x")[1]
    out_type = f"tensor<40x{n}xf16>"
    value = f"%m{i}"
    lines.append(f"  %m{i} = ge.matmul %x, %w{i} : ({X}, {weight_type}) -> {out_type}")
    if bias:
        bias_type = f"tensor<{n}xf16>"
        lines.append(f"  %b{i} = ge.const #ge.random<normal, seed = {i + 11}, mean = 0.0, std = 0.1> : {bias_type}")
        lines.append(f"  %c{i} = ge.add {value}, %b{i} : ({out_type}, {bias_type}) -> {out_type}")
        value = f"%c{i}"
    if residual:
        lines.append(f"  %r{i} = ge.add {value}, {residual} : ({out_type}, {out_type}) -> {out_type}")
        value = f"%r{i}"
    if act:
        lines.append(f"  %a{i} = ge.{act} {value} : ({out_type}) -> {out_type}")
        value = f"%a{i}"
    lines.append(f"  %y{i} = ge.identity {value} : ({out_type}) -> {out_type}")
    return "\n".join(lines)


def graph(*projections: str, extra_args: str = "") -> str:
    count = len(projections)
    outs = ", ".join(f'{Y} {{ge.name = "y{i}"}}' for i in range(count))
    return f"""func.func @main(%x: {X} {{ge.name = "x"}}{extra_args}) -> ({outs}) {{
{chr(10).join(projections)}
  func.return {", ".join(f"%y{i}" for i in range(count))} : {", ".join([Y] * count)}
}}"""


def fused_ops(text: str) -> list:
    ctx = make_context()
    module = parse_module(ctx, text, "h.mlir")
    run_pipeline(parse_pass_pipeline("ge-fuse{auto=false}"), ctx, module)
    return [op for op in module.walk() if isinstance(op, fused.MultiMatmulBiasActOp | fused.MatmulBiasActOp | ge.MatmulOp)]


def test_three_projections_of_one_input_become_one_kernel_with_three_products():
    ops = fused_ops(graph(*(projection(i) for i in range(3))))
    assert [type(op) for op in ops] == [fused.MultiMatmulBiasActOp]
    (merged,) = ops
    assert len(merged.results) == 3 and merged.attr_values().biased


@pytest.mark.parametrize("pipeline", ["ge-compile{hw=tiny}", "ge-compile{hw=ascend910}"])
def test_merged_projections_compute_what_the_graph_does(pipeline):
    text = graph(projection(0, act="gelu"), projection(1, act="gelu"), projection(2, act="gelu"))
    simulation = check_lowering(text, hw="tiny" if "tiny" in pipeline else "ascend910", pipeline=pipeline)
    assert len(simulation.report.kernels) == 1


def test_plain_matmuls_merge_too_and_more_than_three_split_in_threes():
    ops = fused_ops(graph(*(projection(i, bias=False) for i in range(5))))
    assert [len(op.results) for op in ops] == [3, 2]
    assert not any(op.attr_values().biased for op in ops)


def test_what_does_not_merge():
    # another activation, a residual: each keeps its own kernel
    text = graph(
        projection(0),
        projection(1, act="relu"),
        projection(2, residual="%x2"),
        extra_args=f', %x2: {Y} {{ge.name = "x2"}}',
    )
    ops = fused_ops(text)
    assert not any(isinstance(op, fused.MultiMatmulBiasActOp) for op in ops)
    assert len(ops) == 3


def test_a_weight_computed_after_the_first_product_blocks_the_merge():
    # w1 = w0 * 2 is computed from the graph: constant folding is off here, so it
    # is an op after the first product, which cannot move
    text = f"""func.func @main(%x: {X} {{ge.name = "x"}}, %w0: {W} {{ge.name = "w0"}}) -> ({Y} {{ge.name = "y0"}}, {Y} {{ge.name = "y1"}}) {{
  %y0 = ge.matmul %x, %w0 : ({X}, {W}) -> {Y}
  %w1 = ge.add %w0, %w0 : ({W}, {W}) -> {W}
  %y1 = ge.matmul %x, %w1 : ({X}, {W}) -> {Y}
  func.return %y0, %y1 : {Y}, {Y}
}}"""
    assert not any(isinstance(op, fused.MultiMatmulBiasActOp) for op in fused_ops(text))
    check_lowering(text, pipeline="ge-compile{hw=tiny}")


def test_merge_matmuls_false_keeps_the_kernels_apart():
    ctx = make_context()
    module = parse_module(ctx, graph(*(projection(i) for i in range(3))), "h.mlir")
    run_pipeline(parse_pass_pipeline("ge-fuse{auto=false merge-matmuls=false}"), ctx, module)
    assert sum(isinstance(op, fused.MatmulBiasActOp) for op in module.walk()) == 3
