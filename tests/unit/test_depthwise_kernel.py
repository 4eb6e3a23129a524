"""The depthwise vector kernel's structure (`templates/depthwise_conv.py`): row
tiles that share one body (moved into the image at run time, the pads around
them zeros), one branch-free loop per group of tiles, double-buffered; numerics
against the reference interpreter on random shapes (strides, pads, 3x3 and 5x5,
odd sizes, f16 and f32, NCHW and NC1HWC0), the simulator's race check on; its
taps' `npu.vmla` bit for bit a `vmul` then a `vadd`. Also
the range npu-insert-sync gives a clamped offset (`IndexFacts._clamped`), which
lets the moved tiles' reads miss the other buffer of the pair."""

from __future__ import annotations

import random
import re

import numpy as np
import pytest
from cube_lowering_testing import check_lowering, parse, compile_module
from npu_testing import gm, kernel_module, local, run
from test_lower_cube_conv import conv_module
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr
from xdsl.ir import Block

from gecomp.dialects import npu
from gecomp.lowering.fused_to_npu.templates.conv_select import pin_algorithm
from gecomp.transforms.npu.access_conflicts import IndexFacts
from gecomp.transforms.npu.affine import Interval


def random_row_tiled(seed: int) -> dict:
    """A depthwise convolution whose planes are tall enough to be cut into row tiles
    on the tiny preset (its UB holds a few rows of them)."""
    r = random.Random(seed)
    k = r.choice([3, 5])
    s = r.choice([1, 2])
    pad = r.randint(0, k // 2)
    c = r.choice([8, 13, 24, 40])
    return dict(
        n=r.choice([1, 2]), c=c, o=c, groups=c, h=r.randint(40, 61), w=r.randint(12, 23), kh=k, kw=k,
        strides=(s, s), pads=(pad, r.randint(0, k // 2), r.randint(0, k // 2), pad), bias=r.random() < 0.7,
        act=r.choice([None, "relu6", "silu"]), dtype=r.choice(["f16", "f32"]),
        x_format="NC1HWC0", y_format="NC1HWC0",
    )


def _depthwise_kernel(module) -> npu.KernelOp:
    return next(k for k in module.walk() if isinstance(k, npu.KernelOp) and "depthwise" in str(k.attributes))


def _compiled(params: dict, hw: str):
    module = parse(conv_module(**params))
    pin_algorithm(next(op for op in module.walk() if op.name in ("ge.conv2d", "fused.conv2d_bias_act")),
                  "depthwise-vector")
    return module


@pytest.mark.parametrize("seed", range(6))
def test_row_tiles_share_one_body_and_match_the_reference(seed, capsys):
    """Tall planes: moving row tiles (one loop body for every whole tile), the
    numbers those of the reference."""
    params = random_row_tiled(seed)
    check_lowering(_compiled(params, "tiny"), "tiny", pipeline="ge-lower-to-npu{hw=tiny debug=true}")
    note = next(line for line in capsys.readouterr().err.splitlines() if "depthwise conv" in line)
    found = re.search(r"-> (\d+)x\d+: .* x (\d+)x(\d+) tile\(s\) of (\d+)x\d+ outputs; .*; (\d+) tile bodies", note)
    out_rows, row_tiles, col_tiles, tile_rows, bodies = map(int, found.groups())
    assert row_tiles > 1, note  # the case under test
    lanes = 16 if params["dtype"] == "f16" else 8
    channel_cases = 1 if params["c"] % lanes == 0 or params["c"] < lanes else 2
    if col_tiles == 1:  # whole rows: the whole row tiles one body, a shorter last one another
        assert bodies == channel_cases * (1 + (out_rows % tile_rows != 0)), note


@pytest.mark.parametrize("seed", range(3))
def test_nchw_row_tiles_match_the_reference(seed):
    """The same on NCHW input and output (the kernel transposes to and from C0 lanes)."""
    params = {**random_row_tiled(seed + 10), "x_format": None, "y_format": None}
    check_lowering(_compiled(params, "tiny"), "tiny")


def test_moving_row_tiles_are_one_double_buffered_loop():
    """96 channels of 32x32 at stride 2 on ascend910 (MobileNetV2's shape): the
    tile loop holds no branch, and its input buffer has a second copy (the next
    tile loads while the vector unit computes this one)."""
    params = dict(n=1, c=96, o=96, groups=96, h=32, w=32, kh=3, kw=3, strides=(2, 2), pads=(1, 1, 1, 1),
                  bias=True, act="relu6", dtype="f32", x_format="NC1HWC0", y_format="NC1HWC0")
    module = _compiled(params, "ascend910")
    check_lowering(module, "ascend910")
    kernel = next(k for k in module.walk() if isinstance(k, npu.KernelOp))
    loops = [op for op in kernel.walk() if isinstance(op, scf.ForOp)]
    tile_loop = next(op for op in loops if any(isinstance(i, npu.VMulOp) for i in op.walk()))
    assert not any(isinstance(op, scf.IfOp) for op in tile_loop.walk())
    names = {op.result.name_hint for op in kernel.walk() if isinstance(op, npu.AllocOp)}
    assert {"in", "in_pong"} <= names, names


def _index(block: Block, value: int):
    op = arith.ConstantOp(IntegerAttr(value, IndexType()))
    block.add_op(op)
    return op.result


def test_a_clamped_offset_is_bounded():
    """max(min(x, 0), -2) lies in [-2, 0] and min(max(x - 5, 0), 3) in [0, 3]
    whatever x is; an unclamped x stays unbounded."""
    block = Block()
    x = npu.BlockIdxOp.new()
    block.add_op(x)
    low = arith.MinSIOp(x.result, _index(block, 0))
    high = arith.MaxSIOp(low.result, _index(block, -2))
    shifted = arith.AddiOp(x.result, _index(block, -5))
    up = arith.MaxSIOp(shifted.result, _index(block, 0))
    capped = arith.MinSIOp(up.result, _index(block, 3))
    for op in (low, high, shifted, up, capped):
        block.add_op(op)
    facts = IndexFacts()
    assert facts.range(high.result) == Interval(-2, 0)
    assert facts.range(capped.result) == Interval(0, 3)
    assert facts.range(low.result) == Interval(None, 0)
    assert facts.range(x.result) == Interval(None, None)


@pytest.mark.parametrize("dtype", ["f16", "f32"])
def test_vmla_is_vmul_then_vadd_bit_for_bit(dtype):
    """`npu.vmla` (acc += a * w, w one row broadcast to every row) gives the bits a
    `vmul` into a scratch tile and a `vadd` into acc give: the product rounded to
    the element type, then the sum."""
    rows, cols = 16, 16
    n = rows * cols
    acc_in = "npu.vcopy %ub[%c0], %uz[%c0] {cols = " + str(n) + "}"
    strides = "strides = [16, 0, 16]"
    fused = f"{acc_in}\n  npu.vmla %ua[%c0], %uw[%c0], %uz[%c0] {{rows = {rows}, cols = {cols}, {strides}}}"
    split = (f"{acc_in}\n  npu.vmul %ua[%c0], %uw[%c0], %up[%c0] {{rows = {rows}, cols = {cols}, {strides}}}\n"
             f"  npu.vadd %uz[%c0], %up[%c0], %uz[%c0] {{cols = {n}}}")
    rng = np.random.default_rng(3)
    np_type = np.float16 if dtype == "f16" else np.float32
    a, b = (rng.standard_normal(n).astype(np_type) for _ in range(2))
    outputs = [run(_mla_kernel(body, n, dtype), [a, b]).outputs[0] for body in (fused, split)]
    np.testing.assert_array_equal(outputs[0], outputs[1])
    w = b[:cols].astype(np.float64)
    np.testing.assert_allclose(outputs[0].astype(np.float64),
                               b + (a.reshape(rows, cols) * w).reshape(-1), rtol=2e-3, atol=2e-3)


def _mla_kernel(body: str, n: int, dtype: str) -> str:
    """a, b (n elements in GM) -> ua, ub in UB, uw = the first row of b; `body` writes uz; uz -> z."""
    text = f"""
  %ua = npu.alloc {{offset = 0}} : {local(n, "ub", dtype)}
  %ub = npu.alloc {{offset = 4096}} : {local(n, "ub", dtype)}
  %uw = npu.alloc {{offset = 8192}} : {local(n, "ub", dtype)}
  %up = npu.alloc {{offset = 12288}} : {local(n, "ub", dtype)}
  %uz = npu.alloc {{offset = 16384}} : {local(n, "ub", dtype)}
  npu.copy %a[%c0], %ua[%c0] {{cols = {n}}}
  npu.copy %b[%c0], %ub[%c0] {{cols = {n}}}
  npu.copy %b[%c0], %uw[%c0] {{cols = 16}}
  npu.set_flag {{src = "MTE2", dst = "V", event = 0}}
  npu.wait_flag {{src = "MTE2", dst = "V", event = 0}}
  {body}
  npu.set_flag {{src = "V", dst = "MTE3", event = 0}}
  npu.wait_flag {{src = "V", dst = "MTE3", event = 0}}
  npu.copy %uz[%c0], %z[%c0] {{cols = {n}}}"""
    return kernel_module(text, {"a": gm(n, dtype), "b": gm(n, dtype)}, {"z": gm(n, dtype)})


@pytest.mark.parametrize("params", [
    dict(c=960, h=2, w=2, dtype="f32", act="relu6", strides=(1, 1), pads=(1, 1, 1, 1), kh=3, kw=3),
    dict(c=672, h=4, w=4, dtype="f16", act="silu", strides=(2, 2), pads=(2, 2, 2, 2), kh=5, kw=5),
    dict(c=576, h=4, w=5, dtype="f32", act=None, strides=(1, 1), pads=(1, 0, 1, 1), kh=3, kw=3),
    dict(c=1152, h=2, w=2, dtype="f32", act="silu", strides=(1, 1), pads=(2, 2, 2, 2), kh=5, kw=5, y_format=None),
    dict(c=480, h=3, w=5, dtype="f16", act="relu6", strides=(1, 1), pads=(1, 1, 1, 1), kh=3, kw=3, y_format=None, n=2),
    dict(c=672, h=4, w=4, dtype="f32", act=None, strides=(2, 2), pads=(2, 1, 2, 1), kh=5, kw=5, y_format=None),
], ids=["960x2x2", "672x4x4-5x5-s2", "576x4x5-odd-pads", "1152x2x2-nchw-out", "2x480x3x5-f16-nchw-out",
        "672x4x4-s2-nchw-out"])
def test_small_planes_share_a_tile_and_match_the_reference(params, capsys):
    """Many small planes (MobileNetV2's and EfficientNet-B0's last stages): several
    whole planes per tile, the numbers those of the reference; an NCHW result
    (EfficientNet's, for its squeeze-and-excitation) too, its planes' channel
    rows stored in one copy."""
    full = dict(n=1, o=params["c"], groups=params["c"], bias=True, x_format="NC1HWC0", y_format="NC1HWC0")
    full = {**full, **params, "o": params["c"], "groups": params["c"]}
    check_lowering(_compiled(full, "ascend910"), "ascend910", pipeline="ge-lower-to-npu{hw=ascend910 debug=true}")
    note = next(line for line in capsys.readouterr().err.splitlines() if "depthwise conv" in line)
    assert int(re.search(r"(\d+) plane\(s\) per tile", note).group(1)) > 1, note


def _live(size: int, out: int, k: int, stride: int, pad: int) -> int:
    return sum(any(0 <= o * stride + i - pad < size for o in range(out)) for i in range(k)) or 1


@pytest.mark.parametrize("seed", range(4))
def test_taps_reading_only_padding_have_no_instruction(seed):
    """A window wider than the map it slides over (5x5 over 1 or 2 pixels, 7x7 over 1 to 3,
    EfficientNet's last stages): the taps at which every output reads padding
    add zeros, so each tile issues a vmul / vmla for the live taps only; the
    numbers those of the reference."""
    r = random.Random(seed)
    k, s = r.choice([5, 7]), r.choice([1, 2])
    h, w, c = r.randint(1, k // 2), r.randint(1, k // 2), r.choice([8, 13, 24])
    fmt = r.choice(["NC1HWC0", None])
    params = dict(n=r.choice([1, 2]), c=c, o=c, groups=c, h=h, w=w, kh=k, kw=k, strides=(s, s), pads=(k // 2,) * 4,
                  bias=False, act=None, dtype=r.choice(["f16", "f32"]), x_format=fmt, y_format=fmt)
    module = _compiled(params, "tiny")
    check_lowering(module, "tiny")
    kernel = next(k for k in module.walk() if isinstance(k, npu.KernelOp) and any(isinstance(i, npu.VMlaOp) for i in k.walk()))
    firsts = sum(isinstance(op, npu.VMulOp) for op in kernel.walk())
    taps = firsts + sum(isinstance(op, npu.VMlaOp) for op in kernel.walk())
    oh, ow = (h + 2 * (k // 2) - k) // s + 1, (w + 2 * (k // 2) - k) // s + 1
    assert taps == firsts * _live(h, oh, k, s, k // 2) * _live(w, ow, k, s, k // 2) < firsts * k * k, params
