"""ge-group-read-through (lowering/graph_to_fused/group_reads.py): a cube group whose
operand only a format change feeds reads the ND value and converts it on load;
the kernels compute what the reference does on random shapes (tiny preset), and
no conversion kernel is left in front; a conversion another op also reads stays."""

from __future__ import annotations

import pytest

from gecomp.core.passes import run_pipeline
from gecomp.core.signature import input_specs, main_function, random_inputs
from gecomp.dialects import fused, ge
from gecomp.dialects.context import make_context
from gecomp.core.parsing import verify_module
from gecomp.lowering.graph_to_fused.group_reads import GroupReadThroughPass
from gecomp.lowering.pipelines import CompilePipeline
from gecomp.simulator.npu import simulate
from gecomp.simulator.reference import run_reference

from graph_testing import assert_close, ops_of, parse


def t(*shape: int) -> str:
    return f"tensor<{'x'.join(map(str, shape))}xf16>"


def grouped(g: int, m: int, k: int, n: int, also_plain: bool = False) -> str:
    """relu(x @ W[g] + b[g]) over a stack of g weights; `also_plain`: x also feeds
    a plain product (its conversion then has two readers)."""
    extra, ret_types, ret = "", t(g, m, n), "%y"
    names = '{ge.name = "y"}'
    if also_plain:
        extra = (f"%v = ge.const #ge.random<normal, seed = 3, mean = 0.0, std = 0.1> : {t(k, n)}\n"
                 f"    %z = ge.matmul %x, %v : ({t(m, k)}, {t(k, n)}) -> {t(m, n)}\n    ")
        ret_types, ret = f"{t(g, m, n)}, {t(m, n)}", "%y, %z"
        names = '{ge.name = "y"}, ' + t(m, n) + ' {ge.name = "z"}'
    return f"""builtin.module {{
  func.func @main(%x: {t(m, k)} {{ge.name = "x"}}) -> ({t(g, m, n)} {names}) {{
    %w = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.125> : {t(g, k, n)}
    %m = ge.batch_matmul %x, %w : ({t(m, k)}, {t(g, k, n)}) -> {t(g, m, n)}
    %b = ge.const #ge.random<normal, seed = 2, mean = 0.0, std = 0.1> : {t(g, 1, n)}
    %a = ge.add %m, %b : ({t(g, m, n)}, {t(g, 1, n)}) -> {t(g, m, n)}
    %y = ge.relu %a : ({t(g, m, n)}) -> {t(g, m, n)}
    {extra}func.return {ret} : {ret_types}
  }}
}}"""


def _compiled(text: str):
    module = parse(text)
    run_pipeline(CompilePipeline(hw="tiny", merge=False).stages(), make_context(), module)
    return module


def _sources(module) -> list[str]:
    return [str(k.attributes["npu.sources"]) for k in module.walk() if k.name == "npu.kernel"]


@pytest.mark.parametrize("g,m,k,n", [(3, 32, 64, 16), (2, 48, 32, 32), (4, 16, 80, 48)])
def test_a_group_reads_its_nd_operand_and_computes_the_same(g, m, k, n):
    text = grouped(g, m, k, n)
    fused_module = parse(text)
    run_pipeline(CompilePipeline(hw="tiny").stages()[:-1], make_context(), fused_module)
    (group,) = ops_of(fused_module, fused.GroupOp)
    assert group.operands[0] is main_function(fused_module).args[0]
    assert isinstance(group.body_ops()[0], ge.TransDataOp)
    module = _compiled(text)
    assert not any("transdata" in s for s in _sources(module)), _sources(module)
    inputs = random_inputs(input_specs(main_function(module)), 0)
    assert_close(run_reference(parse(text), inputs), simulate(module, inputs, "tiny").outputs)


def _group(name: str, seed: int) -> str:
    w, nz = "tensor<64x16xf16, #ge.format<FRACTAL_NZ>>", "tensor<32x64xf16, #ge.format<FRACTAL_NZ>>"
    return f"""%w{name} = ge.const #ge.random<normal, seed = {seed}, mean = 0.0, std = 0.125> : {w}
    %{name} = fused.group %xn, %w{name} : ({nz}, {w}) -> tensor<32x16xf16> {{
    ^bb0(%a: {nz}, %b: {w}):
      %p = ge.matmul %a, %b : ({nz}, {w}) -> tensor<32x16xf16, #ge.format<FRACTAL_NZ>>
      %q = ge.transdata %p {{src_format = "FRACTAL_NZ", dst_format = "ND"}} : (tensor<32x16xf16, #ge.format<FRACTAL_NZ>>) -> tensor<32x16xf16>
      %r = ge.relu %q : (tensor<32x16xf16>) -> tensor<32x16xf16>
      fused.yield %r : tensor<32x16xf16>
    }}"""


@pytest.mark.parametrize("readers", [1, 2])
def test_a_conversion_read_by_another_op_stays_in_front(readers):
    groups = "\n    ".join(_group(f"y{i}", i + 1) for i in range(readers))
    results = ", ".join(f"%y{i}" for i in range(readers))
    types = ", ".join("tensor<32x16xf16>" for _ in range(readers))
    names = ", ".join(f'tensor<32x16xf16> {{ge.name = "y{i}"}}' for i in range(readers))
    text = f"""builtin.module {{
  func.func @main(%x: tensor<32x64xf16> {{ge.name = "x"}}) -> ({names}) {{
    %xn = ge.transdata %x {{src_format = "ND", dst_format = "FRACTAL_NZ"}} : (tensor<32x64xf16>) -> tensor<32x64xf16, #ge.format<FRACTAL_NZ>>
    {groups}
    func.return {results} : {types}
  }}
}}"""
    module = parse(text)
    GroupReadThroughPass(hw="tiny").apply(make_context(), module)
    verify_module(module)
    reads_x = [g for g in ops_of(module, fused.GroupOp) if g.operands[0] is main_function(module).args[0]]
    assert len(reads_x) == (1 if readers == 1 else 0)
    outer = [o for o in main_function(module).body.block.ops if isinstance(o, ge.TransDataOp)]
    assert len(outer) == (0 if reads_x else 1)
    inputs = random_inputs(input_specs(main_function(module)), 0)
    assert_close(run_reference(parse(text), inputs), run_reference(module, inputs))
