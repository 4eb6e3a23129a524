"""`fused.rotary_matmul` (the rotary embedding in a GEMM's epilogue, issue 29
item 3): its kernel against the reference interpreter on random shapes, the
pattern that makes it from the graph's structure, and LLaMA's attention as the
exporters write it compiling to it with onnxruntime's numbers."""

from __future__ import annotations

import pytest

from cube_lowering_testing import check_lowering, parse, tensor

from gecomp.dialects.context import make_context
from gecomp.core.diagnostics import CompileError
from gecomp.core.passes import parse_pass_pipeline, run_pipeline


def _rotary_module(m: int, k: int, n: int, dtype: str, factor_shape, extra_use: bool = False) -> str:
    """@main: (x @ w) * cos + (x @ wr) * sin, with random constants; `extra_use`
    also returns the first product (then it cannot fuse)."""
    x, w, out, f = tensor((m, k), dtype), tensor((k, n), dtype), tensor((m, n), dtype), tensor(factor_shape, dtype)
    results = f'{out} {{ge.name = "q"}}' + (f', {out} {{ge.name = "y"}}' if extra_use else "")
    returned = "%q, %y" if extra_use else "%q"
    types = f"{out}, {out}" if extra_use else out
    return f"""func.func @main(%x: {x} {{ge.name = "x"}}) -> ({results}) {{
  %w = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.1> : {w}
  %wr = ge.const #ge.random<normal, seed = 2, mean = 0.0, std = 0.1> : {w}
  %cos = ge.const #ge.random<uniform, seed = 3, low = -1.0, high = 1.0> : {f}
  %sin = ge.const #ge.random<uniform, seed = 4, low = -1.0, high = 1.0> : {f}
  %y = ge.matmul %x, %w : ({x}, {w}) -> {out}
  %yr = ge.matmul %x, %wr : ({x}, {w}) -> {out}
  %a = ge.mul %y, %cos : ({out}, {f}) -> {out}
  %b = ge.mul %sin, %yr : ({f}, {out}) -> {out}
  %q = ge.add %b, %a : ({out}, {out}) -> {out}
  func.return {returned} : {types}
}}"""


def _fused_names(text: str) -> list[str]:
    module = parse(text)
    run_pipeline(parse_pass_pipeline("ge-graph-opt,ge-fuse{auto=false}"), make_context(), module)
    return [op.name for op in module.walk()]


@pytest.mark.parametrize(
    "m,k,n,dtype,factor,biased,hw",
    [
        (33, 40, 50, "f16", "full", False, "tiny"),
        (16, 64, 128, "f32", "full", True, "tiny"),
        (17, 24, 64, "f16", "row", True, "tiny"),
        (128, 256, 256, "f32", "full", False, "ascend910"),
    ],
)
def test_rotary_matmul_kernel_matches_the_reference(m, k, n, dtype, factor, biased, hw):
    """The fused op's kernel (both products per tile, the rotation in the
    epilogue) on odd and fractal-sized shapes, f16 and f32, cos / sin full or one
    row broadcast, with and without biases, against the op's reference semantics."""
    f = tensor((m, n) if factor == "full" else (1, n), dtype)
    x, w, out, b = tensor((m, k), dtype), tensor((k, n), dtype), tensor((m, n), dtype), tensor((n,), dtype)
    names = ["x", "cos", "sin", "w", "wr"] + (["b", "br"] if biased else [])
    types = [x, f, f, w, w] + ([b, b] if biased else [])
    args = [f'%{n}: {t} {{ge.name = "{n}"}}' for n, t in zip(names, types)]
    text = f"""func.func @main({", ".join(args)}) -> ({out} {{ge.name = "q"}}) {{
  %q = fused.rotary_matmul {", ".join("%" + n for n in names)} {{rotated = [1], biased = {str(biased).lower()}}} : ({", ".join(types)}) -> {out}
  func.return %q : {out}
}}"""
    check_lowering(text, hw)


@pytest.mark.parametrize("rotated,biased,dtype", [((1, 0), False, "f16"), ((0, 1, 1), True, "f32")])
def test_rotary_matmul_with_several_outputs_matches_the_reference(rotated, biased, dtype):
    """Rotated and plain outputs of one lhs in one kernel (Q, K and V of a LLaMA
    layer, ge-merge-matmuls' form): every product on each x tile, each output's
    own epilogue."""
    m, k, n = 33, 48, 64
    x, w, f, b, out = (tensor(s, dtype) for s in ((m, k), (k, n), (m, n), (n,), (m, n)))
    weights = [f"w{i}{r}" for i, turn in enumerate(rotated) for r in ("", "r")[: 1 + turn]]
    names = ["x", "cos", "sin", *weights, *(f"b{w}" for w in weights if biased)]
    types = [x, f, f, *([w] * len(weights)), *([b] * (len(weights) if biased else 0))]
    args = [f'%{name}: {t} {{ge.name = "{name}"}}' for name, t in zip(names, types)]
    results = [f"%r{i}" for i in range(len(rotated))]
    outs = ", ".join(f'{out} {{ge.name = "out{i}"}}' for i in range(len(rotated)))
    text = f"""func.func @main({", ".join(args)}) -> ({outs}) {{
  {", ".join(results)} = fused.rotary_matmul {", ".join("%" + n for n in names)} {{rotated = {list(rotated)}, biased = {str(biased).lower()}}} : ({", ".join(types)}) -> ({", ".join([out] * len(rotated))})
  func.return {", ".join(results)} : {", ".join([out] * len(rotated))}
}}"""
    check_lowering(text, "tiny")


def test_rotary_matmul_refuses_a_wrong_operand_count():
    x, w, f = tensor((16, 32)), tensor((32, 64)), tensor((16, 64))
    text = f"""func.func @main(%x: {x}, %w: {w}, %cos: {f}, %sin: {f}) -> {f} {{
  %q = fused.rotary_matmul %x, %cos, %sin, %w {{rotated = [1]}} : ({x}, {f}, {f}, {w}) -> {f}
  func.return %q : {f}
}}"""
    with pytest.raises(CompileError, match="takes lhs, cos, sin, then 2 weights"):
        parse(text)


@pytest.mark.parametrize("m,k,n,dtype,factor", [(32, 64, 64, "f16", (32, 64)), (20, 48, 96, "f32", (96,))])
def test_rotary_pattern_fuses_and_keeps_the_numbers(m, k, n, dtype, factor):
    text = _rotary_module(m, k, n, dtype, factor)
    names = _fused_names(text)
    assert names.count("fused.rotary_matmul") == 1
    assert not {"ge.matmul", "ge.mul", "ge.add"} & set(names)
    check_lowering(text, "tiny", pipeline="ge-compile{hw=tiny}")


def test_rotary_pattern_leaves_a_product_read_elsewhere():
    names = _fused_names(_rotary_module(32, 64, 64, "f16", (32, 64), extra_use=True))
    assert "fused.rotary_matmul" not in names
    assert "ge.add" in names


def test_llama_attention_export_rotates_in_the_gemm_epilogue():
    """LLaMA's attention as the exporters write it (rotate_half as slices, Neg and
    Concat on q and k): after ge-simplify folds the rotation into a second weight,
    the rotated Q and K projections and V are one fused.rotary_matmul (merged by
    ge-merge-matmuls), no auto-fused group is left around its products, and the
    compiled module matches onnxruntime."""
    pytest.importorskip("onnxruntime")
    from test_exported_idioms import HIDDEN, SEQ, Graph, _compiled_matches_onnxruntime, _fused_ops

    g = Graph()
    proto = g.model(g.attention("x", "div", True, rotary=True), [1, SEQ, HIDDEN])
    ops = _fused_ops(proto)
    assert ops.count("fused.rotary_matmul") == 1
    assert not {"fused.group", "fused.multi_matmul_bias_act", "fused.matmul_bias_act"} & set(ops)
    _compiled_matches_onnxruntime(proto)
