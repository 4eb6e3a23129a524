"""fused.flash_attention lowered to the mix kernel (cube products, online softmax
in UB): layouts BNSD and BSH, boolean and additive masks broadcast to the scores,
scale, sequence lengths of 1, odd ones and ones above a block, FRACTAL_NZ
operands; compile, simulate, compare with the reference interpreter."""

from __future__ import annotations

import pytest

from cube_lowering_testing import check_lowering, main_module, overlapped, tensor


def attention_module(batch, sq, sk, d, dv, layout="BNSD", heads=1, mask=None, scale=0.125, nz=False, dtype="f16") -> str:
    if layout == "BNSD":
        q, k, v, out = (*batch, sq, d), (*batch, sk, d), (*batch, sk, dv), (*batch, sq, dv)
    else:
        q, k, v, out = (*batch, sq, heads * d), (*batch, sk, heads * d), (*batch, sk, heads * dv), (*batch, sq, heads * dv)
    enc = "FRACTAL_NZ" if nz else None
    args, lines = [], []
    for name, shape, seed in (("q", q, 1), ("k", k, 2), ("v", v, 3)):
        if nz:
            lines.append(f"%{name} = ge.const #ge.random<normal, seed = {seed}, mean = 0.0, std = 1.0> : {tensor(shape, dtype, enc)}")
        else:
            args.append(f'%{name}: {tensor(shape, dtype)} {{ge.name = "{name}"}}')
    operands, types = "%q, %k, %v", [tensor(x, dtype, enc) for x in (q, k, v)]
    if mask is not None:
        shape, mask_type = mask
        args.append(f'%m: {tensor(shape, mask_type)} {{ge.name = "m"}}')
        operands += " mask %m"
        types.append(tensor(shape, mask_type))
    attrs = f'layout = "{layout}", num_heads = {heads}, scale = {scale}, mask_value = -30000.0'
    lines.append(f"%o = fused.flash_attention {operands} {{{attrs}}} : ({', '.join(types)}) -> {tensor(out, dtype)}")
    return main_module(args, lines, "%o", tensor(out, dtype))


@pytest.mark.parametrize(
    "batch,sq,sk,d,dv,mask",
    [
        ((2,), 17, 33, 16, 16, None),
        ((1, 2), 1, 5, 32, 16, ((1, 2, 1, 5), "i1")),
        ((3,), 40, 70, 16, 32, ((40, 70), "f16")),
        ((2,), 33, 17, 8, 24, ((2, 33, 1), "i1")),
        ((2,), 64, 40, 64, 64, None),  # blocks of 32: the first starts the running values, the second updates them
        ((1,), 16, 300, 16, 16, ((16, 300), "f16")),  # blocks of 64: pairs in a loop, then a short one
        ((1,), 16, 192, 16, 16, ((16, 192), "f16")),  # three blocks, none in a loop: the third is the last
        ((2,), 16, 200, 16, 16, None),  # three full blocks and a short one, none in a loop
        ((1,), 8, 350, 16, 16, ((8, 350), "i1")),  # a pair in the loop, then a full block and a short one
    ],
)
def test_attention_bnsd(batch, sq, sk, d, dv, mask):
    check_lowering(attention_module(batch, sq, sk, d, dv, mask=mask))


@pytest.mark.parametrize(
    "batch,sq,sk,mask",
    [
        ((8,), 16, 40, None),  # 4 items per core, one block each: item 0, a pair, then one more
        ((10,), 16, 40, ((10, 16, 40), "f16")),  # 5 per core: pairs of items in an scf.for
        ((2, 3), 32, 40, ((32, 40), "i1")),  # a batch of two dims, a boolean mask
        ((6,), 16, 200, ((16, 200), "f16")),  # four blocks per item (an even count): no pairs of items
        ((6,), 16, 150, None),  # three blocks per item, the last short
    ],
)
def test_attention_items_written_into_each_other(batch, sq, sk, mask):
    """Every core has the same items (more than one): each item's end (the last
    block's product and accumulation, the output) is written into the next
    item, around its first softmax."""
    check_lowering(attention_module(batch, sq, sk, 16, 16, mask=mask))


@pytest.mark.parametrize(
    "batch,sq,sk,heads,mask,nz",
    [
        ((), 20, 20, 2, ((20, 20), "i1"), False),
        ((2,), 17, 40, 3, ((1, 3, 17, 40), "f16"), False),
        ((), 33, 33, 2, None, True),
    ],
)
def test_attention_bsh(batch, sq, sk, heads, mask, nz):
    check_lowering(attention_module(batch, sq, sk, 16, 16, "BSH", heads, mask, nz=nz))


def test_attention_ascend910():
    check_lowering(attention_module((), 128, 160, 64, 64, "BSH", 4, ((128, 160), "i1")), "ascend910")


def test_attention_race_free_with_insert_sync():
    check_lowering(attention_module((2,), 40, 70, 16, 32, mask=((40, 70), "i1")), pipeline=overlapped("tiny"))


@pytest.mark.parametrize(
    "layout,mask,nz",
    [("BNSD", ((17, 33), "f32"), False), ("BSH", ((17, 33), "i1"), True)],
)
def test_attention_f32(layout, mask, nz):
    """fp32 inputs: the cube at its fp32 rate, P back to it in fp32."""
    check_lowering(attention_module((2,), 17, 33, 16, 16, layout, 2 if layout == "BSH" else 1, mask, nz=nz, dtype="f32"))


def _kernel_ops(module) -> list:
    from gecomp.dialects import npu

    (kernel,) = [op for op in module.walk() if isinstance(op, npu.KernelOp)]
    return kernel, list(kernel.walk())


def _copies_from(kernel, ops, name: str) -> list[int]:
    """Positions (in walk order) of the copies reading input `name` (q, k, v, m:
    the kernel's parameters in that order)."""
    from gecomp.dialects import npu

    param = kernel.entry.args["qkvm".index(name)]
    return [i for i, op in enumerate(ops) if isinstance(op, npu.CopyOp) and op.operands[0] is param]


def test_an_items_mask_loads_once_for_all_its_key_blocks():
    """Two key blocks of 64 (fp32 on ascend910) and a mask the UB has room for:
    one load of the item's mask rows, before its first K, read by both softmaxes."""
    from cube_lowering_testing import parse

    module = parse(attention_module((4,), 128, 128, 64, 64, mask=((128, 128), "f32"), dtype="f32"))
    check_lowering(module, "ascend910")
    kernel, ops = _kernel_ops(module)
    assert len(_copies_from(kernel, ops, "m")) == 1
    assert _copies_from(kernel, ops, "m")[0] < _copies_from(kernel, ops, "k")[0]


def test_v_is_staged_after_k_has_gone_to_l0b():
    """Without a mask loaded per block, V goes to MTE2 after the block's K has
    gone on to L0B, so the scores do not wait for V's landing; the last block's
    V goes with its own K (no V left for the item's end)."""
    from cube_lowering_testing import parse
    from gecomp.dialects import npu

    module = parse(attention_module((4,), 128, 128, 64, 64, dtype="f32"))
    check_lowering(module, "ascend910")
    kernel, ops = _kernel_ops(module)
    loads = [i for i, op in enumerate(ops) if isinstance(op, npu.LoadL0Op)]
    v_copies = _copies_from(kernel, ops, "v")
    k_copies = _copies_from(kernel, ops, "k")
    assert len(v_copies) == len(k_copies) == 2
    assert all(any(k < load < v for load in loads) for k, v in zip(k_copies, v_copies))
    assert v_copies[1] < next(i for i, op in enumerate(ops) if isinstance(op, npu.MmadOp) and i > k_copies[1])


def test_f32_attention_copies_no_full_tile():
    """fp32 scores and output: the exp writes P where the cube reads it from and
    the scaling by 1 / l writes the output tile, so no vector copy of a whole
    (rows x keys) or (rows x dv) tile is left (only the per-row running max)."""
    from cube_lowering_testing import parse
    from gecomp.dialects import npu

    module = parse(attention_module((4,), 128, 128, 64, 64, mask=((128, 128), "f32"), dtype="f32"))
    check_lowering(module, "ascend910")
    _, ops = _kernel_ops(module)
    copies = [op for op in ops if isinstance(op, npu.VCopyOp)]
    dims = [tuple(_dim(op, name) for name in ("rows", "cols")) for op in copies]
    assert dims and all(1 in d for d in dims), dims


def _dim(op, name: str) -> int:
    attr = op.attributes.get(name) or op.properties.get(name)
    return 1 if attr is None else attr.value.data
