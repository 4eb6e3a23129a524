"""An fp32 cube epilogue's last step writes its output tile itself: an
activation's last instruction, or the last addition of a bias / residual sum,
lands in the tile MTE3 stores from, with no vector copy after it (a copy the
fp32 BERT, GPT-2 and LLaMA exports paid at every row chunk of their GELU,
SiLU and residual epilogues). Numerics against the reference interpreter."""

from __future__ import annotations

import pytest
from cube_lowering_testing import check_lowering, main_module, parse, tensor


def _module(act: str, residual: bool) -> str:
    m, k, n = 64, 96, 80
    args = [f'%x: {tensor((m, k), "f32")} {{ge.name = "x"}}']
    lines = [
        f"%w = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.1> : {tensor((k, n), 'f32')}",
        f"%b = ge.const #ge.random<normal, seed = 2, mean = 0.0, std = 0.1> : {tensor((n,), 'f32')}",
    ]
    terms = "bias %b"
    types = f"{tensor((m, k), 'f32')}, {tensor((k, n), 'f32')}, {tensor((n,), 'f32')}"
    if residual:
        args.append(f'%r: {tensor((m, n), "f32")} {{ge.name = "r"}}')
        terms += " residual %r"
        types += f", {tensor((m, n), 'f32')}"
    lines.append(f'%y = fused.matmul_bias_act %x, %w {terms} {{act = "{act}"}} : ({types}) -> {tensor((m, n), "f32")}')
    return main_module(args, lines, "%y", tensor((m, n), "f32"))


@pytest.mark.parametrize("act,residual", [("gelu", False), ("silu", True), ("none", True), ("hard_swish", False)])
def test_f32_epilogue_needs_no_copy(act, residual):
    from gecomp.dialects import npu

    module = parse(_module(act, residual))
    check_lowering(module, "ascend910")
    copies = [op for op in module.walk() if isinstance(op, npu.VCopyOp)]
    assert not copies, f"{len(copies)} vector copies in the {act} epilogue"
