"""The convolution implementations chosen by cost (`templates/conv_select.py`):
each algorithm, pinned with `npu.conv_algorithm`, on random shapes (groups,
strides, dilations, pads, 1x1, depthwise, odd sizes) compiled and simulated
against the reference interpreter; the chooser's choice and its refusals."""

from __future__ import annotations

import random
import re

import pytest
from cube_lowering_testing import check_lowering, compile_module, main_module, parse, tensor
from test_lower_cube_conv import conv_module

from gecomp.dialects.context import make_context
from gecomp.core.diagnostics import CompileError
from gecomp.dialects import fused, ge
from gecomp.lowering.fused_to_npu.split_k import pin_form
from gecomp.lowering.fused_to_npu.templates.conv_select import CONV_ALGORITHM, pin_algorithm
from gecomp.lowering.fused_to_npu.tune_convs import TuneConvsPass


def _conv_ops(module):
    return [op for op in module.walk() if isinstance(op, ge.Conv2DOp | fused.Conv2DBiasActOp)]


def estimates(line: str) -> tuple[dict[str, int], str | None]:
    """The chooser's debug note: estimate per legal algorithm, and the chosen one."""
    found = re.findall(r"([\w-]+) estimated (\d+) cycles( \(chosen\))?", line)
    return {name: int(cycles) for name, cycles, _ in found}, next((n for n, _, c in found if c), None)


def check_pinned(text: str, algorithm: str, capsys, hw: str = "tiny") -> None:
    """Compile `text` with its first convolution pinned to `algorithm`, simulate,
    compare with the reference (check_lowering), and check the kernel is that one."""
    module = parse(text)
    pin_algorithm(_conv_ops(module)[0], algorithm)
    check_lowering(module, hw, pipeline=f"ge-lower-to-npu{{hw={hw} debug=true}}")
    notes = [line for line in capsys.readouterr().err.splitlines() if "estimated" in line and ", groups " in line]
    assert estimates(notes[0])[1] == algorithm, notes


def random_depthwise(seed: int) -> dict:
    """A depthwise convolution of random odd sizes, window, strides, dilations, pads."""
    r = random.Random(seed)
    kh, kw = r.choice([(3, 3), (5, 5), (3, 1), (1, 3), (2, 3)])
    dilations = (r.choice([1, 2]), r.choice([1, 2]))
    strides = (r.choice([1, 2]), r.choice([1, 2, 3]))
    pads = tuple(r.randint(0, k - 1) for k in (kh, kw, kh, kw))
    c = r.choice([3, 8, 13, 24, 40])
    h, w = r.randint((kh - 1) * dilations[0] + 1, 17), r.randint((kw - 1) * dilations[1] + 1, 17)
    return dict(
        n=r.choice([1, 2]), c=c, o=c, groups=c, h=h, w=w, kh=kh, kw=kw, strides=strides, pads=pads,
        dilations=dilations, bias=r.random() < 0.5, act=r.choice([None, "relu", "silu", "gelu"]),
        dtype=r.choice(["f16", "f32"]),
    )


@pytest.mark.parametrize("seed", range(8))
def test_depthwise_vector_random_nchw(seed, capsys):
    """NCHW in and out (the vector kernel transposes to and from C0 lanes)."""
    check_pinned(conv_module(**random_depthwise(seed)), "depthwise-vector", capsys)


@pytest.mark.parametrize("seed", range(8, 12))
def test_depthwise_vector_random_5hd(seed, capsys):
    """NC1HWC0 in and out, as ge-layout lays depthwise convolutions out; the result
    goes on through a 1x1 convolution (the GEMM)."""
    params = {**random_depthwise(seed), "x_format": "NC1HWC0", "y_format": "NC1HWC0"}
    check_pinned(conv_module(**params), "depthwise-vector", capsys)


def test_depthwise_vector_ascend910(capsys):
    params = dict(n=2, c=96, o=96, groups=96, h=28, w=28, kh=3, kw=3, strides=(2, 2), pads=(1, 1, 1, 1),
                  bias=True, act="relu", dtype="f32", x_format="NC1HWC0", y_format="NC1HWC0")
    check_pinned(conv_module(**params), "depthwise-vector", capsys, "ascend910")


def test_depthwise_on_the_cube_still_computes_the_same(capsys):
    """img2col on a depthwise convolution (NCHW, OIHW weights: its only legal form)."""
    check_pinned(conv_module(**random_depthwise(3)), "img2col", capsys)


@pytest.mark.parametrize(
    "params",
    [
        dict(n=2, c=24, o=40, h=7, w=5, dtype="f32"),
        dict(n=1, c=20, o=33, h=9, w=11, bias=True, act="relu", dtype="f16"),
        dict(n=2, c=32, o=32, groups=2, h=6, w=6, dtype="f16"),
        dict(n=1, c=64, o=16, h=4, w=13, residual=True, act="silu", dtype="f32"),
    ],
    ids=["f32", "f16-bias-relu", "groups", "residual"],
)
@pytest.mark.parametrize("algorithm", ["gemm-1x1", "img2col"])
def test_1x1(params, algorithm, capsys):
    """A 1x1 convolution of an NC1HWC0 input with FRACTAL_Z weights: both the GEMM
    and img2col compute it."""
    text = conv_module(**params, kh=1, kw=1, pads=(0, 0, 0, 0), x_format="NC1HWC0", w_format="FRACTAL_Z",
                       y_format="NC1HWC0")
    check_pinned(text, algorithm, capsys)


def test_1x1_ascend910(capsys):
    text = conv_module(n=1, c=256, o=64, h=14, w=14, kh=1, kw=1, pads=(0, 0, 0, 0), x_format="NC1HWC0",
                       w_format="FRACTAL_Z", y_format="NC1HWC0", bias=True, act="relu", dtype="f32")
    check_pinned(text, "gemm-1x1", capsys, "ascend910")


def random_general(seed: int) -> dict:
    r = random.Random(seed)
    kh, kw = r.choice([(3, 3), (1, 1), (5, 3), (7, 7), (2, 1)])
    groups = r.choice([1, 1, 2])
    # K chunks are whole channel blocks: a 7x7 window of 16 channels does not fit tiny's L1.
    c, o = groups * (8 if kh * kw > 9 else r.choice([8, 16])), groups * r.choice([8, 16])
    dilations = (r.choice([1, 2]), r.choice([1, 2]))
    strides = (r.choice([1, 2]), r.choice([1, 2, 3]))
    pads = tuple(r.randint(0, k - 1) for k in (kh, kw, kh, kw))
    h, w = r.randint((kh - 1) * dilations[0] + 1, 15), r.randint((kw - 1) * dilations[1] + 1, 15)
    return dict(n=r.choice([1, 2]), c=c, o=o, groups=groups, h=h, w=w, kh=kh, kw=kw, strides=strides, pads=pads,
                dilations=dilations, dtype=r.choice(["f16", "f32"]), x_format="NC1HWC0", w_format="FRACTAL_Z",
                y_format="NC1HWC0", bias=r.random() < 0.5)


@pytest.mark.parametrize("seed", range(6))
def test_img2col_random(seed, capsys):
    check_pinned(conv_module(**random_general(seed)), "img2col", capsys)


def test_a_pinned_algorithm_that_does_not_apply_is_a_located_error():
    module = parse(conv_module(c=16, o=16, kh=3, kw=3, x_format="NC1HWC0", w_format="FRACTAL_Z"))
    pin_algorithm(_conv_ops(module)[0], "gemm-1x1")
    with pytest.raises(CompileError, match=r"npu.conv_algorithm = gemm-1x1: a 3x3 window") as error:
        compile_module(module, "ge-lower-to-npu{hw=tiny}")
    assert "test.mlir:" in str(error.value)


def test_the_chooser_keeps_the_estimated_fastest(capsys):
    """Unpinned, the kernel is the legal plan of least estimate."""
    module = parse(conv_module(**{**random_depthwise(5), "x_format": "NC1HWC0", "y_format": "NC1HWC0"}))
    check_lowering(module, "tiny", pipeline="ge-lower-to-npu{hw=tiny debug=true}")
    lines = [x for x in capsys.readouterr().err.splitlines() if ", groups " in x and "estimated" in x]
    assert len(lines) == 2
    for line in lines:
        cycles, chosen = estimates(line)
        assert cycles[chosen] == min(cycles.values()), line


def test_compiled_depthwise_reads_nc1hwc0_and_runs_on_the_vector_unit(capsys):
    """Through ge-compile: ge-layout puts depthwise convolutions in NC1HWC0 and the
    chooser takes the vector kernel (a few instructions per tile, no mmad)."""
    x, w, y = tensor((1, 24, 12, 12), "f32"), tensor((24, 1, 3, 3), "f32"), tensor((1, 24, 12, 12), "f32")
    w0 = tensor((24, 24, 1, 1), "f32")
    lines = [
        f"%w0 = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.3> : {w0}",
        f"%w = ge.const #ge.random<normal, seed = 2, mean = 0.0, std = 0.3> : {w}",
        f"%a = ge.conv2d %x, %w0 : ({x}, {w0}) -> {y}",
        f"%r = ge.relu %a : ({y}) -> {y}",
        f"%d = ge.conv2d %r, %w {{pads = [1, 1, 1, 1], groups = 24}} : ({y}, {w}) -> {y}",
        f"%o = ge.relu %d : ({y}) -> {y}",
    ]
    text = main_module([f'%x: {x} {{ge.name = "x"}}'], lines, "%o", y)
    check_lowering(text, "ascend910", pipeline="ge-compile{hw=ascend910 debug=true}")
    line = next(x for x in capsys.readouterr().err.splitlines() if "groups 24:" in x)
    assert estimates(line)[1] == "depthwise-vector", line


CONV_THEN_1X1 = """func.func @main(%x: tensor<2x24x7x5xf32> {ge.name = "x"}) -> (tensor<2x40x7x5xf32> {ge.name = "y"}) {
  %w0 = ge.const #ge.random<normal, seed = 3, mean = 0.0, std = 0.2> : tensor<24x24x3x3xf32>
  %w = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.2> : tensor<40x24x1x1xf32>
  %y0 = ge.conv2d %x, %w0 {pads = [1, 1, 1, 1]} : (tensor<2x24x7x5xf32>, tensor<24x24x3x3xf32>) -> tensor<2x24x7x5xf32>
  %r0 = ge.relu %y0 : (tensor<2x24x7x5xf32>) -> tensor<2x24x7x5xf32>
  %y = ge.conv2d %r0, %w : (tensor<2x24x7x5xf32>, tensor<40x24x1x1xf32>) -> tensor<2x40x7x5xf32>
  func.return %y : tensor<2x40x7x5xf32>
}"""


def test_tune_simulates_the_best_n_and_pins_the_fastest(capsys):
    """fused-tune-convs simulates the 1x1 convolution's other legal implementation and
    pins whichever made the module faster; the tuned module computes the same."""
    module = parse(CONV_THEN_1X1)
    compile_module(module, "ge-graph-opt,ge-fuse{hw=tiny}")
    TuneConvsPass(hw="tiny", top=2, debug=True).apply(make_context(), module)
    err = capsys.readouterr().err
    given = int(re.search(r"as given: (\d+) cycles", err).group(1))
    tried = re.findall(r"npu.conv_algorithm = '([\w-]+)': (\d+) cycles", err)
    assert [name for name, _ in tried] == ["img2col"], err  # the 1x1 one's alternative; the 3x3 has one
    pins = {op.attributes[CONV_ALGORITHM].data for op in _conv_ops(module) if CONV_ALGORITHM in op.attributes}
    assert pins == ({"img2col"} if int(tried[0][1]) < given else set())
    check_lowering(module, "tiny", pipeline="ge-lower-to-npu{hw=tiny}")


@pytest.mark.parametrize(
    "params",
    [
        dict(c=1, o=32, w=400, kw=10, strides=(1, 5), pads=(0, 0, 0, 0)),
        dict(c=8, o=16, w=300, kw=3, strides=(1, 2), pads=(0, 2, 0, 3), dilations=(1, 2), bias=True, act="relu"),
        dict(c=5, o=8, w=257, kw=5, pads=(0, 4, 0, 1), dtype="f16"),
        dict(c=16, o=16, w=333, kw=3, pads=(0, 1, 0, 1), x_format="NC1HWC0", w_format="FRACTAL_Z", y_format="NC1HWC0"),
        dict(n=2, c=8, o=8, h=3, w=200, kh=3, kw=3, strides=(1, 3), pads=(0, 2, 0, 2), x_format="NC1HWC0",
             w_format="FRACTAL_Z"),
    ],
    ids=["wav2vec2-like", "stride-dilation-pads", "f16-left-pad", "5hd", "5hd-kh3-batch"],
)
def test_img2col_one_row_outputs_tile_along_the_row(params, capsys):
    """A 1-D convolution (one output row) is tiled along the row, each tile reading
    its input segment (clipped at the image's ends): long rows fit (issue 34's
    wav2vec2 `no tiling of (512 x 80) @ (80 x 799) fits`)."""
    params = {"n": 1, "h": 1, "kh": 1, "dtype": "f32", **params}
    check_pinned(conv_module(**params), "img2col", capsys)


def test_wav2vec2_first_conv_compiles_on_ascend910(capsys):
    x, w, y = tensor((1, 1, 1, 4000), "f32"), tensor((512, 1, 1, 10), "f32"), tensor((1, 512, 1, 799), "f32")
    lines = [f"%w = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.2> : {w}",
             f"%y = ge.conv2d %x, %w {{strides = [1, 5]}} : ({x}, {w}) -> {y}"]
    check_pinned(main_module([f'%x: {x} {{ge.name = "x"}}'], lines, "%y", y), "img2col", capsys, "ascend910")


@pytest.mark.parametrize("y_format", [None, "NC1HWC0"], ids=["nchw-out", "5hd-out"])
@pytest.mark.parametrize("dtype", ["f16", "f32"])
def test_1x1_of_an_nchw_input_is_a_gemm(y_format, dtype, capsys):
    """NCHW input (its (C x P) rows, whole channel blocks) as the GEMM's operand: an
    EfficientNet squeeze-excitation 1x1 on the pooled input reads no UB slabs."""
    text = conv_module(n=2, c=32, o=24, h=3, w=5, kh=1, kw=1, pads=(0, 0, 0, 0), w_format="FRACTAL_Z",
                       y_format=y_format, bias=True, act="silu", dtype=dtype)
    check_pinned(text, "gemm-1x1", capsys)


@pytest.mark.parametrize("algorithm", ["gemm-1x1", "img2col"])
def test_fp32_nz_operands_stage_whole_8_column_blocks(algorithm, capsys):
    """fp32 FRACTAL_Z weights and NC1HWC0 images are NZ matrices of 8-column blocks:
    L1 keeps them (one contiguous run per block column, never a 32-byte copy per
    row) and `npu.load_l0{block = 8}` reads them; the numbers stay the reference's."""
    from gecomp.dialects import npu

    text = conv_module(n=1, c=64, o=48, h=6, w=7, kh=1, kw=1, pads=(0, 0, 0, 0), x_format="NC1HWC0",
                       w_format="FRACTAL_Z", y_format="NC1HWC0", bias=True, act="relu", dtype="f32")
    module = parse(text)
    pin_algorithm(_conv_ops(module)[0], algorithm)
    check_lowering(module, "ascend910", pipeline="ge-lower-to-npu{hw=ascend910}")
    loads = [op for op in module.walk() if isinstance(op, npu.LoadL0Op) and op.attr_values().layout == "nz"]
    assert any(op.attr_values().block == 8 for op in loads)
    to_l1 = [op.attr_values() for op in module.walk()
             if isinstance(op, npu.CopyOp) and op.spaces() == ("gm", "l1")]
    assert to_l1 and all(a.cols > 8 for a in to_l1), [(a.rows, a.cols) for a in to_l1]


@pytest.mark.parametrize("whole", [True, False], ids=["whole-chunk", "two-slabs"])
def test_img2col_stages_a_whole_k_chunk_of_few_pixels_at_once(whole, capsys, monkeypatch):
    """An NC1HWC0 input of few pixels fills the slabs of every channel block of a
    K chunk with one copy per input row (one UB buffer "slabs"); where they do
    not fit the UB allowed them (0 bytes here), two slabs take turns. Both
    compute as the reference."""
    from gecomp.lowering.fused_to_npu.templates import conv

    monkeypatch.setenv("GECOMP_KERNEL_CACHE", "0")
    if not whole:
        monkeypatch.setattr(conv, "WHOLE_CHUNK_UB_BYTES", 0)
    text = conv_module(n=1, c=64, o=16, h=3, w=3, kh=3, kw=3, pads=(1, 1, 1, 1), x_format="NC1HWC0",
                       w_format="FRACTAL_Z", y_format="NC1HWC0", dtype="f32")
    module = parse(text)
    pin_algorithm(_conv_ops(module)[0], "img2col")
    check_lowering(module, "tiny", pipeline="ge-lower-to-npu{hw=tiny}")
    text = str(module)
    assert ("%slabs" in text, "%slab0" in text) == (whole, not whole)


@pytest.mark.parametrize("dtype", ["f16", "f32"])
@pytest.mark.parametrize("whole", [True, False], ids=["whole-chunk", "two-slabs"])
def test_img2col_staging_order_is_estimated(dtype, whole, monkeypatch):
    """A 3x3 conv writing NC1HWC0 (the image as A, the weights as B): the scalar unit
    issues a chunk's stagings in program order. With two slabs in turn the fills
    wait for the gathers, holding MTE2, so the weight DMA is issued first (after
    them it waited for all of them: resnet18's layer4 conv 23.5k against 12.3k
    cycles); with a whole chunk's slabs the gathers do not hold MTE2, so the image
    goes first and MTE3 gathers while the weights stream. Both compute as the
    reference."""
    from gecomp.dialects import npu
    from gecomp.lowering.fused_to_npu.templates import conv

    monkeypatch.setenv("GECOMP_KERNEL_CACHE", "0")
    if not whole:
        monkeypatch.setattr(conv, "WHOLE_CHUNK_UB_BYTES", 0)
    text = conv_module(n=1, c=64, o=32, h=2, w=2, x_format="NC1HWC0", w_format="FRACTAL_Z", y_format="NC1HWC0",
                       bias=True, residual=True, act="relu", dtype=dtype)
    module = parse(text)
    pin_algorithm(_conv_ops(module)[0], "img2col")
    check_lowering(module, "tiny", pipeline="ge-lower-to-npu{hw=tiny}")
    copies = [op.spaces() for op in module.walk() if isinstance(op, npu.CopyOp)]  # the 3x3 conv's kernel first
    weights, gather = copies.index(("gm", "l1")), copies.index(("ub", "l1"))
    assert (weights < gather) == (not whole), copies


def test_staging_order_by_estimate():
    """`staging_order`: the order whose chunk lands first; the DMA first on a tie."""
    from types import SimpleNamespace

    from gecomp.lowering.fused_to_npu.templates.cube_kernel import staging_order

    image, weights = SimpleNamespace(gathers=True), SimpleNamespace(gathers=False)
    free = [((300, 900, False), "image", image), ((800, 0, False), "weights", weights)]
    assert staging_order(free) == ["image", "weights"]  # 300 + max(900, 800) < 800 + 300 + 900
    held = [((300, 900, True), "image", image), ((800, 0, False), "weights", weights)]
    assert staging_order(held) == ["weights", "image"]  # 2000 either way


def random_strided_1x1(seed: int) -> dict:
    """A 1x1 convolution of random strides > 1 (a downsample), odd sizes, groups,
    epilogue and type: NC1HWC0 in and out, FRACTAL_Z weights."""
    r = random.Random(seed)
    groups = r.choice([1, 1, 2])
    strides = r.choice([(2, 2), (2, 1), (1, 3), (3, 2)])
    return dict(
        # grouped NC1HWC0 tensors hold whole channel blocks per group (16 channels in f16)
        n=r.choice([1, 2]), c=groups * r.choice([16, 32] if groups > 1 else [8, 16, 24]),
        o=groups * r.choice([16] if groups > 1 else [8, 16, 40]), groups=groups,
        h=r.randint(1, 15), w=r.randint(1, 19), kh=1, kw=1, strides=strides, pads=(0, 0, 0, 0),
        bias=r.random() < 0.5, residual=r.random() < 0.3, act=r.choice([None, "relu"]),
        dtype=r.choice(["f16", "f32"]), x_format="NC1HWC0", w_format="FRACTAL_Z", y_format="NC1HWC0",
    )


@pytest.mark.parametrize("seed", range(8))
def test_strided_1x1_random(seed, capsys):
    """`strided-1x1` (the pixels a strided 1x1 window reads, staged GM -> L1 by
    strided copies) against the reference on random shapes; img2col on the same
    shape computes the same."""
    text = conv_module(**random_strided_1x1(seed))
    check_pinned(text, "strided-1x1", capsys)
    check_pinned(text, "img2col", capsys)


def test_strided_1x1_is_chosen_for_a_downsample_and_stages_no_slab(capsys):
    """ResNet-50's stage-4 downsample (1024 -> 2048 channels, 14x14 -> 7x7, f32): the
    chooser keeps strided-1x1 over img2col by estimate, and its kernel stages the
    image GM -> L1 straight (32-byte runs, every other pixel), never through UB."""
    from gecomp.dialects import npu

    text = conv_module(n=1, c=1024, o=2048, h=14, w=14, kh=1, kw=1, strides=(2, 2), pads=(0, 0, 0, 0),
                       x_format="NC1HWC0", w_format="FRACTAL_Z", y_format="NC1HWC0", bias=True, act="relu",
                       dtype="f32")
    module = parse(text)
    pin_form(_conv_ops(module)[0], "one kernel")  # not its split-K form (fused-split-k-conv)
    compile_module(module, "ge-lower-to-npu{hw=ascend910 debug=true}")
    notes = [line for line in capsys.readouterr().err.splitlines() if ", groups " in line and "estimated" in line]
    found, chosen = estimates(notes[0])
    assert chosen == "strided-1x1" and found["strided-1x1"] < found["img2col"], notes
    kernel = next(op for op in module.walk() if isinstance(op, npu.KernelOp) and "y" in op.sym_name.data)
    staged = [op for op in kernel.walk() if isinstance(op, npu.CopyOp) and op.spaces() == ("gm", "l1")
              and op.attr_values().cols == 8]
    assert staged and all(op.attr_values().strides[0] == 2 * 8 for op in staged)
    image = staged[0].operands[0]
    assert all(op.spaces() == ("gm", "l1") for op in kernel.walk() if isinstance(op, npu.CopyOp) and op.operands[0] is image)


def test_strided_1x1_refuses_what_it_does_not_read(capsys):
    """A padded or windowed strided conv, or a stride-1 one, is not strided-1x1's."""
    for params in (dict(kh=1, kw=1, pads=(1, 0, 0, 0)), dict(kh=3, kw=3, pads=(1, 1, 1, 1)),
                   dict(kh=1, kw=1, strides=(1, 1), pads=(0, 0, 0, 0))):
        text = conv_module(**{"c": 16, "o": 16, "h": 8, "w": 8, "strides": (2, 2), **params}, x_format="NC1HWC0",
                           w_format="FRACTAL_Z", y_format="NC1HWC0")
        module = parse(text)
        pin_algorithm(_conv_ops(module)[0], "strided-1x1")
        with pytest.raises(CompileError, match="strided-1x1"):
            compile_module(module, "ge-lower-to-npu{hw=tiny}")


def test_img2col_of_a_wide_strided_window_gathers_strided_pixels_where_deinterleaving_does_not_fit(capsys):
    """AlexNet's stem (11x11, stride 4, f32, 224 pixels wide): one output row's slab
    is 11 input rows of 224 pixels; de-interleaved it needs four copies of that in
    UB (filled and de-interleaved, double-buffered), which ascend910's 256 KiB do
    not hold, so no tiling fitted and the zoo's AlexNet was refused. Without the
    de-interleave the gathers read strided pixels, and the conv compiles and
    computes the reference's numbers."""
    params = dict(c=3, h=15, w=224, o=16, kh=11, kw=11, strides=(4, 4), pads=(0, 0, 0, 0), dtype="f32")
    check_pinned(conv_module(**params), "img2col", capsys, "ascend910")
