"""Causal flash attention: the mask recognised as lower-triangular (with an offset)
from its values, `causal = true` on `fused.flash_attention`, and the kernel
computing only the key blocks on and below the diagonal (the blocks every row of
an item sees unmasked). Numerics against the reference interpreter; the cube
work issued counted against the blocks that must be computed."""

from __future__ import annotations

import numpy as np
import pytest

from cube_lowering_testing import check_lowering, main_module, parse, tensor
from gecomp.dialects import fused

HW = "tiny"


def causal_mask(sq: int, sk: int, offset: int) -> np.ndarray:
    return np.tri(sq, sk, offset, dtype=bool)


def i1_const(name: str, mask: np.ndarray) -> str:
    """A ge.const of an i1 mask (MLIR's dense hex: one byte each)."""
    hexa = np.where(mask, 0xFF, 0).astype(np.uint8).tobytes().hex().upper()
    return f'%{name} = ge.const dense<"0x{hexa}"> : {tensor(mask.shape, "i1")}'


def fused_module(batch, sq, sk, d, offset, dtype="f16", layout="BNSD", heads=1, additive=False, causal=True, nz=False) -> str:
    """`fused.flash_attention` with a constant causal mask (boolean, or additive:
    0 where seen, -30000 elsewhere, computed by a ge.where; `nz`: then in
    FRACTAL_NZ, as exported GPT-2 / LLaMA masks reach the kernel)."""
    if layout == "BNSD":
        q, k, out = (*batch, sq, d), (*batch, sk, d), (*batch, sq, d)
    else:
        q, k, out = (*batch, sq, heads * d), (*batch, sk, heads * d), (*batch, sq, heads * d)
    args = [f'%{n}: {tensor(s, dtype)} {{ge.name = "{n}"}}' for n, s in (("q", q), ("k", k), ("v", k))]
    lines = [i1_const("m", causal_mask(sq, sk, offset))]
    mask, mask_type = "%m", tensor((sq, sk), "i1")
    if additive:
        lines += [
            f"%zero = ge.const dense<0.0> : {tensor((), dtype)}",
            f"%hide = ge.const dense<-30000.0> : {tensor((), dtype)}",
            f"%fm = ge.where %m, %zero, %hide : ({mask_type}, {tensor((), dtype)}, {tensor((), dtype)}) -> {tensor((sq, sk), dtype)}",
        ]
        mask, mask_type = "%fm", tensor((sq, sk), dtype)
        if nz:
            nz_type = tensor((sq, sk), dtype, "FRACTAL_NZ")
            lines.append(f'%fmn = ge.transdata %fm {{src_format = "ND", dst_format = "FRACTAL_NZ"}} : ({mask_type}) -> {nz_type}')
            mask, mask_type = "%fmn", nz_type
    attrs = f'layout = "{layout}", num_heads = {heads}, scale = 0.125, mask_value = -30000.0'
    if causal:
        attrs += f", causal = true, causal_offset = {offset}"
    types = ", ".join([tensor(q, dtype), tensor(k, dtype), tensor(k, dtype), mask_type])
    lines.append(f"%o = fused.flash_attention %q, %k, %v mask {mask} {{{attrs}}} : ({types}) -> {tensor(out, dtype)}")
    return main_module(args, lines, "%o", tensor(out, dtype))


@pytest.mark.parametrize(
    "batch,sq,sk,d,offset,dtype,layout,heads,additive,nz",
    [
        ((2,), 200, 200, 32, 0, "f16", "BNSD", 1, False, False),  # 13 tiles of 16 rows, the last short; blocks of 64
        ((1,), 130, 330, 16, 200, "f16", "BNSD", 1, False, False),  # queries at the end of longer keys: offset 200
        ((2, 2), 70, 90, 16, 20, "f32", "BNSD", 1, True, False),  # batch x heads, fp32, an additive mask
        ((), 96, 96, 16, 0, "f16", "BSH", 3, False, False),  # heads split from the hidden dim
        ((2,), 45, 45, 16, 3, "f32", "BSH", 2, False, False),
        ((3,), 33, 150, 16, 140, "f16", "BNSD", 1, True, False),  # the first rows see whole blocks only
        ((2,), 200, 200, 32, 0, "f16", "BNSD", 1, True, True),  # an additive FRACTAL_NZ mask
    ],
)
def test_causal_attention_matches_the_reference(batch, sq, sk, d, offset, dtype, layout, heads, additive, nz):
    check_lowering(fused_module(batch, sq, sk, d, offset, dtype, layout, heads, additive, nz=nz), HW)


def test_causal_attention_on_ascend910():
    check_lowering(fused_module((2,), 256, 256, 64, 0, layout="BSH", heads=2), "ascend910")


def _cube_macs(module_text: str, hw: str) -> float:
    """The multiply-accumulates the kernel's cube instructions issued (their
    roofline cycles, `cube_min`, over the cycles per MAC)."""
    from gecomp.simulator.hardware import load_preset
    from gecomp.simulator.npu.costs import mmad_min_cycles
    from gecomp.simulator.npu.program import STAT_INDEX

    simulation = check_lowering(parse(module_text), hw)
    (kernel,) = simulation.report.kernels
    return kernel.stats[STAT_INDEX["cube_min"]] / mmad_min_cycles(load_preset(hw), 1, 1, 1)


@pytest.mark.parametrize("sq,sk,offset", [(200, 200, 0), (130, 330, 200), (64, 300, 7)])
def test_blocks_above_the_diagonal_issue_no_cube_instructions(sq, sk, offset):
    """Query tile i (rows q0.. q0 + mq - 1) computes S = Q K^T and P V over the
    keys its last row sees and no more: mq x (d + dv) MACs per key. Without the
    attribute, every key of every tile."""
    from gecomp.lowering.tiling import AttentionShape, choose_attention_tiling
    from gecomp.simulator.hardware import load_preset

    batch, d = 2, 16
    shape = AttentionShape(batch, sq, sk, d, d, 1, 2, offset)
    tiling = choose_attention_tiling(load_preset(HW), shape)
    mq = tiling.mq
    seen = [shape.visible_keys(q0, min(mq, sq - q0)) for q0 in range(0, sq, mq)]
    rows = [min(mq, sq - q0) for q0 in range(0, sq, mq)]
    expected = batch * sum(r * 2 * d * keys for r, keys in zip(rows, seen))
    assert _cube_macs(fused_module((batch,), sq, sk, d, offset), HW) == pytest.approx(expected)
    everything = batch * sq * 2 * d * sk
    assert _cube_macs(fused_module((batch,), sq, sk, d, offset, causal=False), HW) == pytest.approx(everything)
    assert expected < everything


@pytest.mark.parametrize("dtype", ["f16", "f32"])
def test_the_fully_seen_blocks_read_no_mask(dtype):
    """The mask is read for the diagonal blocks only (whether an item's mask
    loads whole or per block): with one batch each query tile's body runs once,
    so its copies from the mask are all the mask read, and they cover each
    tile's rows times the keys of its masked blocks, far less than the mask."""
    from gecomp.dialects import npu
    from gecomp.lowering.tiling import AttentionShape, choose_attention_tiling
    from gecomp.simulator.hardware import load_preset

    sq = sk = 256
    module = parse(fused_module((1,), sq, sk, 16, 0, dtype))
    check_lowering(module, HW)
    (kernel,) = [op for op in module.walk() if isinstance(op, npu.KernelOp)]
    mask = kernel.entry.args[3]
    read = sum(
        op.attr_values().rows * op.attr_values().cols
        for op in kernel.walk()
        if isinstance(op, npu.CopyOp) and op.operands[0] is mask
    )
    itemsize = 2 if dtype == "f16" else 4
    tiling = choose_attention_tiling(load_preset(HW), AttentionShape(1, sq, sk, 16, 16, 1, itemsize, 0))
    diagonal = sum(tiling.mq * (q0 + tiling.mq - (q0 + 1) // tiling.sk * tiling.sk) for q0 in range(0, sq, tiling.mq))
    assert read == diagonal


# ---- recognition --------------------------------------------------------------------------------


def _pattern_module(mask_lines: list[str], mask: str, mask_type: str, fill: float = -10000.0, sq=16, sk=16) -> str:
    s, k, d = tensor((2, sq, sk)), tensor((2, sk, 16)), tensor((2, sq, 16))
    lines = [
        *mask_lines,
        f"%s = ge.batch_matmul %q, %k {{transpose_b = true}} : ({d}, {k}) -> {s}",
        f"%fill = ge.const dense<{fill}> : tensor<f16>",
        f"%ms = ge.where {mask}, %s, %fill : ({mask_type}, {s}, tensor<f16>) -> {s}",
        f"%p = ge.softmax %ms : ({s}) -> {s}",
        f"%o = ge.batch_matmul %p, %v : ({s}, {k}) -> {d}",
    ]
    args = [f'%q: {d} {{ge.name = "q"}}', f'%k: {k} {{ge.name = "k"}}', f'%v: {k} {{ge.name = "v"}}']
    if mask == "%arg_mask":
        args.append(f'%arg_mask: {mask_type} {{ge.name = "m"}}')
    return main_module(args, lines, "%o", d)


def _fused_attrs(text: str):
    from cube_lowering_testing import compile_module

    module = compile_module(parse(text), "ge-pattern-fuse")
    (op,) = [op for op in module.walk() if isinstance(op, fused.FlashAttentionOp)]
    return op.attr_values()


def test_a_constant_lower_triangular_mask_is_causal():
    a = _fused_attrs(_pattern_module([i1_const("m", causal_mask(16, 16, 0))], "%m", tensor((16, 16), "i1")))
    assert a.causal and a.causal_offset == 0


def test_an_offset_is_read_from_the_values():
    a = _fused_attrs(_pattern_module([i1_const("m", causal_mask(16, 48, 32))], "%m", tensor((16, 48), "i1"), sk=48))
    assert a.causal and a.causal_offset == 32


def test_a_compare_of_iotas_is_causal():
    """key index <= query index, as exporters write it (arange, unsqueeze, compare)."""
    lines = [
        f"%kj = ge.const dense<{list(range(16))}> : tensor<16xi32>",
        f"%qi = ge.const dense<{[[i] for i in range(16)]}> : tensor<16x1xi32>",
        '%m = ge.compare %kj, %qi {predicate = "le"} : (tensor<16xi32>, tensor<16x1xi32>) -> tensor<16x16xi1>',
    ]
    a = _fused_attrs(_pattern_module(lines, "%m", tensor((16, 16), "i1")))
    assert a.causal and a.causal_offset == 0


@pytest.mark.parametrize(
    "case",
    ["argument", "not triangular", "fill too high", "upper", "all seen"],
)
def test_masks_that_are_not_causal_are_left_alone(case):
    mask_type = tensor((16, 16), "i1")
    if case == "argument":
        text = _pattern_module([], "%arg_mask", mask_type)
    else:
        values = {
            "not triangular": causal_mask(16, 16, 0) ^ np.eye(16, k=-3, dtype=bool),
            "fill too high": causal_mask(16, 16, 0),
            "upper": causal_mask(16, 16, 0).T,
            "all seen": np.ones((16, 16), bool),
        }[case]
        text = _pattern_module([i1_const("m", values)], "%m", mask_type, fill=-1.0 if case == "fill too high" else -10000.0)
    assert not _fused_attrs(text).causal


def test_the_attribute_needs_a_mask():
    from gecomp.core.diagnostics import CompileError

    q = tensor((16, 16))
    text = main_module(
        [f'%q: {q} {{ge.name = "q"}}'],
        [f"%o = fused.flash_attention %q, %q, %q {{causal = true}} : ({q}, {q}, {q}) -> {q}"],
        "%o",
        q,
    )
    with pytest.raises(CompileError, match="causal needs a mask"):
        parse(text)


def test_the_causal_schedule_only_where_it_lowers_the_busiest_cores_work():
    """GPT-2's 4 heads x 128 tokens on 32 cores: one item of 16 rows per core, the
    core with the last rows computes every key either way: every block computed,
    masked (the kernel without per-tile bodies); 8 heads x 256 tokens: causal."""
    from gecomp.lowering.tiling import AttentionShape, choose_attention_tiling
    from gecomp.simulator.hardware import load_preset

    hw = load_preset("ascend910")
    one_each = choose_attention_tiling(hw, AttentionShape(4, 128, 128, 64, 64, 1, 2, 0))
    assert one_each.shape.causal_offset is None and "would not lower" in one_each.explain()
    several = choose_attention_tiling(hw, AttentionShape(8, 256, 256, 64, 64, 1, 2, 0))
    assert several.shape.causal_offset == 0
    check_lowering(fused_module((), 128, 128, 64, 0, layout="BSH", heads=4), "ascend910")


def test_a_device_run_is_timed_with_its_causal_mask():
    """The multi-device simulator times each compute run as a module of its own,
    float weights replaced by random ones; a boolean mask is kept (its values
    decide which blocks the attention kernel computes), so the run's attention
    is still recognised causal."""
    from gecomp.core.parsing import parse_module
    from gecomp.dialects.context import make_context
    from gecomp.lowering.plan.device_streams import device_tasks, segment_module
    from cube_lowering_testing import compile_module

    s, k = tensor((2, 16, 16)), tensor((2, 16, 16))
    text = f"""builtin.module attributes {{ge.devices = 2 : i64}} {{
  func.func @device0(%q: {k}, %k: {k}, %v: {k}) -> {k} attributes {{ge.device = 0 : i64}} {{
    {i1_const("m", causal_mask(16, 16, 0))}
    %s = ge.batch_matmul %q, %k {{transpose_b = true}} : ({k}, {k}) -> {s}
    %fill = ge.const dense<-10000.0> : tensor<f16>
    %ms = ge.where %m, %s, %fill : ({tensor((16, 16), "i1")}, {s}, tensor<f16>) -> {s}
    %p = ge.softmax %ms : ({s}) -> {s}
    %o = ge.batch_matmul %p, %v : ({s}, {k}) -> {k}
    %r = ge.all_reduce %o {{devices = 2}} : ({k}) -> {k}
    func.return %r : {k}
  }}
}}"""
    module = parse_module(make_context(), text, "<test>")
    run = device_tasks(next(iter(module.ops)), 0)[0]
    segment = compile_module(segment_module(run), "ge-pattern-fuse")
    (op,) = [op for op in segment.walk() if isinstance(op, fused.FlashAttentionOp)]
    assert op.attr_values().causal
