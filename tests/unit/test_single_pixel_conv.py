"""ge-single-pixel-conv (transforms/graph/single_pixel_conv.py): 1x1 convolutions
of one pixel (a squeeze-and-excitation block's two FCs) become a product and a
row reduction that compute what the convolutions did (reference interpreter
before and after, random shapes), compile through ge-compile to vector groups
that match the reference on the simulator, and make the excitation faster than
the cube's convolutions; other convolutions are left alone."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from gecomp.core.parsing import verify_module
from gecomp.core.passes import run_pipeline
from gecomp.core.signature import input_specs, main_function, random_inputs
from gecomp.dialects import ge, npu
from gecomp.dialects.context import make_context
from gecomp.lowering.pipelines import CompilePipeline
from gecomp.simulator.npu import simulate
from gecomp.simulator.reference import run_reference
from gecomp.transforms.graph.pipeline import GraphOptPipeline
from gecomp.transforms.graph.single_pixel_conv import SinglePixelConvPass

from graph_testing import assert_close, ops_of, parse


def t(shape, dtype: str) -> str:
    return f"tensor<{'x'.join(map(str, shape))}x{dtype}>"


def excitation(c: int, s: int, hw: int, dtype: str = "f32", seed: int = 1) -> str:
    """x * sigmoid(fc2(silu(fc1(mean(x)) + b1))): torchvision's SqueezeExcitation, as
    the ONNX importer writes it (conv2d, bias_add on axis 1)."""
    x, p, h, e = t([1, c, hw, hw], dtype), t([1, c, 1, 1], dtype), t([1, s, 1, 1], dtype), t([1, c, 1, 1], dtype)
    return f"""builtin.module {{
  func.func @main(%x: {x} {{ge.name = "x"}}) -> ({x} {{ge.name = "y"}}) {{
    %w1 = ge.const #ge.random<normal, seed = {seed}, mean = 0.0, std = 0.2> : {t([s, c, 1, 1], dtype)}
    %b1 = ge.const #ge.random<normal, seed = {seed + 1}, mean = 0.0, std = 0.1> : {t([s], dtype)}
    %w2 = ge.const #ge.random<normal, seed = {seed + 2}, mean = 0.0, std = 0.2> : {t([c, s, 1, 1], dtype)}
    %p = ge.global_avg_pool %x : ({x}) -> {p}
    %f1 = ge.conv2d %p, %w1 : ({p}, {t([s, c, 1, 1], dtype)}) -> {h}
    %a1 = ge.bias_add %f1, %b1 {{axis = 1}} : ({h}, {t([s], dtype)}) -> {h}
    %g1 = ge.sigmoid %a1 : ({h}) -> {h}
    %s1 = ge.mul %a1, %g1 : ({h}, {h}) -> {h}
    %f2 = ge.conv2d %s1, %w2 : ({h}, {t([c, s, 1, 1], dtype)}) -> {e}
    %g2 = ge.sigmoid %f2 : ({e}) -> {e}
    %y = ge.mul %g2, %x : ({e}, {x}) -> {x}
    func.return %y : {x}
  }}
}}"""


def rewritten(text: str):
    module = parse(text)
    SinglePixelConvPass().apply(make_context(), module)
    verify_module(module)
    return module


@pytest.mark.parametrize("seed", range(4))
def test_rewrite_computes_what_the_convolutions_did(seed):
    rng = np.random.default_rng(seed)
    c, s, hw = int(rng.integers(2, 200)), int(rng.integers(1, 40)), int(rng.integers(1, 9))
    dtype = ["f32", "f16"][seed % 2]
    text = excitation(c, s, hw, dtype, seed)
    module = rewritten(text)
    assert not ops_of(module, ge.Conv2DOp) and not ops_of(module, ge.BiasAddOp)
    assert len(ops_of(module, ge.ReduceSumOp)) == 2
    inputs = random_inputs(input_specs(main_function(module)), seed)
    assert_close(run_reference(parse(text), inputs), run_reference(module, inputs))


@pytest.mark.parametrize("c,s,hw,dtype", [(40, 10, 3, "f32"), (24, 6, 2, "f16")])
def test_excitation_on_the_simulator(c, s, hw, dtype):
    """Compiled (tiny preset), no kernel runs a convolution, and the outputs match
    the reference interpreter's."""
    text = excitation(c, s, hw, dtype)
    module = parse(text)
    run_pipeline(CompilePipeline(hw="tiny").stages(), make_context(), module)
    sources = [s.data for k in module.walk() if isinstance(k, npu.KernelOp) for s in k.attributes[npu.SOURCES_ATTR].data]
    assert not any("conv" in s for s in sources), sources
    inputs = random_inputs(input_specs(main_function(module)), 0)
    assert_close(run_reference(parse(text), inputs), simulate(module, inputs, "tiny").outputs)


def test_excitation_beats_the_cube_convolutions():
    """EfficientNet-B0's stage-5 excitation (480 channels squeezed to 20, 4x4
    pixels), ascend910: fewer simulated cycles than with the convolutions on the
    cube, the same outputs within f32 tolerance."""
    text = excitation(480, 20, 4)
    inputs = random_inputs(input_specs(main_function(parse(text))), 2)
    runs = {}
    for vector in (True, False):
        module = parse(text)
        stages = [
            dataclasses.replace(s, single_pixel_conv=vector) if isinstance(s, GraphOptPipeline) else s
            for s in CompilePipeline(hw="ascend910").stages()
        ]
        run_pipeline(stages, make_context(), module)
        runs[vector] = simulate(module, inputs, "ascend910")
    assert_close(run_reference(parse(text), inputs), runs[True].outputs)
    assert runs[True].report.total_cycles < runs[False].report.total_cycles


LEFT_ALONE = {
    "two-images": ("1x8x1x1", "2x8x1x1", "4x8x1x1", "2x4x1x1", ""),
    "two-pixels": ("1x8x1x2", "1x8x1x2", "4x8x1x1", "1x4x1x2", ""),
    "padded": ("1x8x1x1", "1x8x1x1", "4x8x1x1", "1x4x3x3", "{pads = [1, 1, 1, 1]}"),
    "grouped": ("1x8x1x1", "1x8x1x1", "8x1x1x1", "1x8x1x1", "{groups = 8}"),
    "3x3-window": ("1x8x3x3", "1x8x3x3", "4x8x3x3", "1x4x1x1", ""),
}


@pytest.mark.parametrize("name", LEFT_ALONE)
def test_other_convolutions_are_left_alone(name):
    _, x, w, y, attrs = LEFT_ALONE[name]
    text = f"""builtin.module {{
  func.func @main(%x: tensor<{x}xf32> {{ge.name = "x"}}, %w: tensor<{w}xf32> {{ge.name = "w"}}) -> (tensor<{y}xf32> {{ge.name = "y"}}) {{
    %y = ge.conv2d %x, %w {attrs} : (tensor<{x}xf32>, tensor<{w}xf32>) -> tensor<{y}xf32>
    func.return %y : tensor<{y}xf32>
  }}
}}"""
    assert len(ops_of(rewritten(text), ge.Conv2DOp)) == 1
