"""ge-group-matmuls (lowering/graph_to_fused/grouped_matmul.py): expert chains of any
count, depth, epilogue and stacking axis compute what they did as separate
products (reference interpreter before and after the rewrite), and through
ge-compile on the simulator (tiny preset) they match the reference; chains that
do not end in one stack are left alone."""

from __future__ import annotations

import pytest

from gecomp.dialects.context import make_context
from gecomp.core.parsing import verify_module
from gecomp.core.passes import run_pipeline
from gecomp.dialects import ge
from gecomp.lowering.graph_to_fused.grouped_matmul import group_matmuls
from gecomp.lowering.pipelines import CompilePipeline
from gecomp.simulator.npu import simulate
from gecomp.simulator.reference import run_reference
from gecomp.core.signature import input_specs, main_function, random_inputs

from graph_testing import assert_close, ops_of, parse

M, K, N = 16, 32, 16


def t(*shape: int) -> str:
    return f"tensor<{'x'.join(map(str, shape))}xf16>"


def experts(count: int, depth: int, act: str | None, bias: bool, axis: int, order: list[int], transposed: bool = False) -> str:
    """`count` chains of `depth` layers `act(h @ W + b)` from x, stacked along `axis`
    in `order`; `transposed`: weights stored (N, K), multiplied with transpose_b."""
    lines, seed = [], 0
    outs = []
    for e in range(count):
        h, width = "%x", K
        for d in range(depth):
            seed += 1
            name = f"e{e}l{d}"
            w = t(N, width) if transposed else t(width, N)
            flags = " {transpose_b = true}" if transposed else ""
            lines.append(f"%w{name} = ge.const #ge.random<normal, seed = {seed}, mean = 0.0, std = 0.2> : {w}")
            lines.append(f"%m{name} = ge.matmul {h}, %w{name}{flags} : ({t(M, width)}, {w}) -> {t(M, N)}")
            h = f"%m{name}"
            if bias:
                lines.append(f"%b{name} = ge.const #ge.random<normal, seed = {100 + seed}, mean = 0.0, std = 0.1> : {t(N)}")
                lines.append(f"%a{name} = ge.bias_add {h}, %b{name} : ({t(M, N)}, {t(N)}) -> {t(M, N)}")
                h = f"%a{name}"
            if act:
                lines.append(f"%r{name} = ge.{act} {h} : ({t(M, N)}) -> {t(M, N)}")
                h = f"%r{name}"
            width = N
        outs.append(h)
    piece = [M, N]
    piece.insert(axis, 1)
    stacked = [M, N]
    stacked.insert(axis, count)
    for e in range(count):
        lines.append(f"%s{e} = ge.reshape {outs[e]} : ({t(M, N)}) -> {t(*piece)}")
    inputs = ", ".join(f"%s{e}" for e in order)
    types = ", ".join(t(*piece) for _ in order)
    lines.append(f"%y = ge.concat {inputs} {{axis = {axis}}} : ({types}) -> {t(*stacked)}")
    body = "\n    ".join(lines)
    return f"""builtin.module {{
  func.func @main(%x: {t(M, K)} {{ge.name = "x"}}) -> ({t(*stacked)} {{ge.name = "y"}}) {{
    {body}
    func.return %y : {t(*stacked)}
  }}
}}"""


CASES = [
    (3, 2, "relu", True, 1, [0, 2, 1], False),
    (4, 1, "sigmoid", True, 0, [3, 2, 1, 0], True),
    (2, 3, None, False, 2, [0, 1], False),
    (5, 2, "tanh", False, 1, [0, 1, 2, 3, 4], True),
]


@pytest.mark.parametrize("count,depth,act,bias,axis,order,transposed", CASES)
def test_grouped_experts_compute_what_the_separate_ones_did(count, depth, act, bias, axis, order, transposed):
    text = experts(count, depth, act, bias, axis, order, transposed)
    module = parse(text)
    assert group_matmuls(main_function(module).body.block) == 1
    verify_module(module)
    assert len(ops_of(module, ge.BatchMatmulOp)) == depth
    assert not ops_of(module, ge.MatmulOp) and not ops_of(module, ge.ConcatOp)
    inputs = random_inputs(input_specs(main_function(module)), 0)
    assert_close(run_reference(parse(text), inputs), run_reference(module, inputs))


@pytest.mark.parametrize("count,depth,act,bias,axis,order,transposed", CASES[:2])
def test_grouped_experts_on_the_simulator(count, depth, act, bias, axis, order, transposed):
    text = experts(count, depth, act, bias, axis, order, transposed)
    module = parse(text)
    run_pipeline(CompilePipeline(hw="tiny").stages(), make_context(), module)
    inputs = random_inputs(input_specs(main_function(module)), 0)
    assert_close(run_reference(parse(text), inputs), simulate(module, inputs, "tiny").outputs)


def test_experts_not_stacked_are_left_alone():
    text = experts(3, 2, "relu", True, 1, [0, 1, 2])
    # the last expert's output also leaves the function: the stack is not its only use
    text = text.replace("func.return %y : tensor<16x3x16xf16>", "func.return %y, %re2l1 : tensor<16x3x16xf16>, tensor<16x16xf16>")
    text = text.replace('-> (tensor<16x3x16xf16> {ge.name = "y"})', '-> (tensor<16x3x16xf16> {ge.name = "y"}, tensor<16x16xf16> {ge.name = "z"})')
    module = parse(text)
    assert group_matmuls(main_function(module).body.block) == 0
    assert len(ops_of(module, ge.MatmulOp)) == 6
