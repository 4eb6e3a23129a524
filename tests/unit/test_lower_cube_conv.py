"""ge.conv2d and fused.conv2d_bias_act lowered to the cube (implicit GEMM):
strides, pads, dilations, groups, every supported format of input (NCHW,
NC1HWC0), weights (OIHW, FRACTAL_Z) and result (NCHW, NC1HWC0); compile,
simulate, compare with the reference interpreter."""

from __future__ import annotations

import pytest

from cube_lowering_testing import check_lowering, main_module, overlapped, parse, tensor


def out_size(size: int, kernel: int, stride: int, before: int, after: int, dilation: int) -> int:
    return (size + before + after - (kernel - 1) * dilation - 1) // stride + 1


def conv_module(
    n=1, c=3, h=9, w=9, o=5, kh=3, kw=3, strides=(1, 1), pads=(1, 1, 1, 1), dilations=(1, 1), groups=1,
    x_format=None, w_format=None, y_format=None, bias=False, residual=False, act=None, dtype="f16",
) -> str:
    """conv2d (fused.conv2d_bias_act when bias / residual / act are given) of an input
    (an argument in NCHW, a constant in NC1HWC0) with constant weights. An
    NC1HWC0 result goes through a second, 1x1 convolution back to NCHW."""
    oh = out_size(h, kh, strides[0], pads[0], pads[2], dilations[0])
    ow = out_size(w, kw, strides[1], pads[1], pads[3], dilations[1])
    xt, wt = tensor((n, c, h, w), dtype, x_format), tensor((o, c // groups, kh, kw), dtype, w_format)
    yt = tensor((n, o, oh, ow), dtype, y_format)
    lines = [f"%w = ge.const #ge.random<normal, seed = 2, mean = 0.0, std = 0.3> : {wt}"]
    args = []
    if x_format:
        lines.append(f"%x = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 1.0> : {xt}")
    else:
        args.append(f'%x: {xt} {{ge.name = "x"}}')
    attrs = f"strides = {list(strides)}, pads = {list(pads)}, dilations = {list(dilations)}, groups = {groups}"
    operands, types = "%x, %w", [xt, wt]
    if bias:
        args.append(f'%bias: {tensor((o,), dtype)} {{ge.name = "bias"}}')
        operands += " bias %bias"
        types.append(tensor((o,), dtype))
    if residual:
        rt = tensor((n, o, oh, ow), dtype)
        args.append(f'%res: {rt} {{ge.name = "res"}}')
        operands += " residual %res"
        types.append(rt)
    fused = bias or residual or act
    op = "fused.conv2d_bias_act" if fused else "ge.conv2d"
    if act:
        attrs += f', act = "{act}"'
    lines.append(f"%y = {op} {operands} {{{attrs}}} : ({', '.join(types)}) -> {yt}")
    result, rtype = "%y", yt
    if y_format:
        w2 = tensor((4, o, 1, 1), dtype, "FRACTAL_Z")
        rtype = tensor((n, 4, oh, ow), dtype)
        lines.append(f"%w2 = ge.const #ge.random<normal, seed = 3, mean = 0.0, std = 0.3> : {w2}")
        lines.append(f"%z = ge.conv2d %y, %w2 : ({yt}, {w2}) -> {rtype}")
        result = "%z"
    return main_module(args, lines, result, rtype)


@pytest.mark.parametrize(
    "params",
    [
        dict(),  # NCHW, OIHW weights (eager mode)
        dict(c=20, o=17, strides=(2, 2), pads=(0, 1, 2, 1)),
        dict(c=17, o=16, kh=2, kw=3, dilations=(2, 1), pads=(1, 0, 1, 2)),
        dict(c=32, o=8, groups=2, kh=1, kw=1, pads=(0, 0, 0, 0)),
        dict(c=6, o=6, groups=3, strides=(1, 2)),
        dict(n=2, c=16, h=5, w=7, o=3, bias=True, residual=True, act="relu"),
        dict(n=2, c=4, h=1, w=4, o=4, groups=4, kh=1, kw=4, pads=(0, 0, 0, 0), bias=True),
    ],
    ids=["eager", "stride-pads", "dilation", "groups-1x1", "groups-odd", "batch-fused", "depthwise-bias"],
)
def test_conv_nchw(params):
    check_lowering(conv_module(**params))


@pytest.mark.parametrize(
    "params",
    [
        dict(w_format="FRACTAL_Z"),  # NCHW in, NCHW out with FRACTAL_Z weights: weights as A
        dict(c=20, o=17, w_format="FRACTAL_Z", y_format="NC1HWC0", bias=True, act="gelu"),
        dict(c=20, o=33, x_format="NC1HWC0", w_format="FRACTAL_Z", strides=(2, 1)),
        dict(c=32, o=32, groups=2, x_format="NC1HWC0", w_format="FRACTAL_Z", y_format="NC1HWC0"),
        dict(n=2, c=16, o=16, x_format="NC1HWC0", w_format="FRACTAL_Z", residual=True, act="silu"),
    ],
    ids=["fz-nchw", "fz-5hd-out", "5hd-in", "5hd-groups", "5hd-residual"],
)
def test_conv_fractal_formats(params):
    check_lowering(conv_module(**params))


@pytest.mark.parametrize(
    "params",
    [
        dict(c=5, o=9),  # NCHW, OIHW weights: 8-channel blocks
        dict(c=20, o=17, w_format="FRACTAL_Z", y_format="NC1HWC0", bias=True, act="relu", strides=(2, 1)),
        dict(c=12, o=10, kh=1, kw=1, pads=(0, 0, 0, 0), x_format="NC1HWC0", w_format="FRACTAL_Z"),
        dict(c=16, o=16, groups=2, x_format="NC1HWC0", w_format="FRACTAL_Z", y_format="NC1HWC0", residual=True),
        dict(c=17, o=16, kh=2, kw=3, dilations=(2, 1), pads=(1, 0, 1, 2), x_format="NC1HWC0", w_format="FRACTAL_Z",
             y_format="NC1HWC0", bias=True),
        dict(c=24, o=16, h=6, w=6, x_format="NC1HWC0", w_format="FRACTAL_Z", y_format="NC1HWC0", act="relu"),
        dict(c=8, o=8, h=1, w=40, kh=1, kw=3, pads=(0, 1, 0, 1), x_format="NC1HWC0", w_format="FRACTAL_Z"),
        dict(c=16, o=16, h=11, w=13, strides=(2, 3), dilations=(1, 2), pads=(1, 2, 0, 1), x_format="NC1HWC0",
             w_format="FRACTAL_Z", y_format="NC1HWC0", bias=True),
        dict(c=3, o=16, h=12, w=11, kh=5, kw=5, strides=(2, 2), pads=(2, 2, 2, 2), w_format="FRACTAL_Z",
             y_format="NC1HWC0", act="relu"),
    ],
    ids=["nchw", "fz-5hd-out", "5hd-1x1", "5hd-groups", "5hd-dilation", "5hd-3x3", "5hd-1d", "5hd-strided",
         "nchw-stem"],
)
def test_conv_f32(params):
    """fp32: C0 = 8 channel blocks (NC1HWC0, FRACTAL_Z), the cube at its fp32 rate."""
    check_lowering(conv_module(**params, dtype="f32"))


def test_conv_ascend910():
    check_lowering(conv_module(c=64, o=64, h=20, w=20, w_format="FRACTAL_Z", y_format="NC1HWC0", bias=True, act="relu"), "ascend910")


def test_conv_race_free_with_insert_sync():
    params = dict(c=20, o=17, w_format="FRACTAL_Z", y_format="NC1HWC0", bias=True, act="relu", strides=(2, 1))
    check_lowering(conv_module(**params), pipeline=overlapped("tiny"))


@pytest.mark.parametrize("strides", [(1, 1), (2, 2)], ids=["stride-1", "stride-2"])
def test_conv_f32_gather_is_one_run_per_copy(strides):
    """fp32 img2col keeps the image's 8-channel blocks in L1, and a strided window
    reads a slab de-interleaved by the vector unit (one phase per pixel of the
    stride): a window position's pixels of an output row are consecutive on both
    sides, so one copy (UB slab -> L1) gathers every output row of the tile, a
    contiguous run per row (OW pixels x 8 channels), not a 32-byte run per
    pixel and a copy per row."""
    from gecomp.dialects import npu

    module = parse(conv_module(c=16, o=16, h=8, w=8, strides=strides, x_format="NC1HWC0", w_format="FRACTAL_Z",
                               y_format="NC1HWC0", dtype="f32"))
    check_lowering(module)  # compiled in place
    gathers = [op for op in module.walk() if isinstance(op, npu.CopyOp) and op.spaces() == ("ub", "l1")]
    assert gathers
    for op in gathers:
        a = op.attr_values()
        assert (a.cols, a.strides[1]) == (8 * 8 // strides[1], a.cols)


@pytest.mark.parametrize(
    "params",
    [
        dict(c=3, o=16, h=13, w=12, kh=5, kw=5, strides=(2, 2), pads=(2, 2, 2, 2)),  # the stem: every block short
        dict(c=11, o=8, h=9, w=10, kh=3, kw=3, strides=(1, 2), pads=(1, 0, 2, 1)),  # a full block, then a short one
        dict(c=16, o=8, h=7, w=9, kh=2, kw=3, pads=(0, 1, 1, 1)),  # full blocks, an odd count of slab rows
    ],
    ids=["stem", "short-last-block", "full-blocks"],
)
def test_conv_nchw_rows_staged_in_turn(params):
    """An NCHW input's rows are loaded into two staging buffers in turn before the
    vector unit transposes them into the slab, so that a row's load does not wait
    for the previous row's transpose; when every channel block is the short last
    one (C < C0) the planes no load writes are zeroed once per slab, outside the
    row loop. Numerics against the reference with the kernels' own flags
    (npu-insert-sync, the race checker on), f32 and f16."""
    from gecomp.dialects import npu

    for dtype in ("f32", "f16"):
        module = parse(conv_module(**params, w_format="FRACTAL_Z", y_format="NC1HWC0", bias=True, act="relu",
                                   dtype=dtype))
        check_lowering(module, pipeline=overlapped("tiny"))
        planes = [op for op in module.walk() if isinstance(op, npu.AllocOp) and op.results[0].name_hint
                  and op.results[0].name_hint.startswith("planes")]
        assert len(planes) == 2
        loads = [op for op in module.walk() if isinstance(op, npu.CopyOp) and op.spaces() == ("gm", "ub")
                 and op.operands[2] in [p.results[0] for p in planes]]
        assert {op.operands[2] for op in loads} == {p.results[0] for p in planes}
        zeroings = [op for op in module.walk() if isinstance(op, npu.VDupOp)
                    and op.operands[0] in [p.results[0] for p in planes]]
        c, c0 = params["c"], 8 if dtype == "f32" else 16
        if c % c0 == 0:
            assert not zeroings  # every load writes all C0 planes
        else:
            assert zeroings
            if c < c0:  # zeroed once per slab, never in the row loop
                assert not any(_in_loop(op, "irow") for op in zeroings)


def _in_loop(op, name: str) -> bool:
    from xdsl.dialects import scf

    parent = op.parent_op()
    while parent is not None:
        if isinstance(parent, scf.ForOp) and parent.body.block.args[0].name_hint == name:
            return True
        parent = parent.parent_op()
    return False
