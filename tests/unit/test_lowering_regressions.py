"""Graphs that fusion or layout used to turn into kernels the lowering cannot build
(issue 34): each compiles fused and eager on both presets and computes what the
reference interpreter computes, and every kernel `ge-fuse` asks for exists
(the deciding passes ask the lowering's own predicate, `kernel_exists.py`)."""

from __future__ import annotations

import pytest

from gecomp.dialects.context import make_context
from gecomp.core.passes import parse_pass_pipeline, run_pipeline
from gecomp.dialects import fused
from gecomp.lowering.fused_to_npu.kernel_exists import kernel_problem
from gecomp.simulator.compare import precision_floor, worst_mismatch
from gecomp.simulator.hardware import load_preset
from gecomp.simulator.run import execute
from gecomp.core.signature import input_specs, main_function, random_inputs
from xdsl.parser import Parser

CASES = {
    # MobileNetV2: a depthwise conv reading the NC1HWC0 result of a conv; its
    # fused conv2d_bias_act reads it as it is (the vector kernel, C0 lanes).
    "depthwise-after-conv": """
func.func @main(%x: tensor<1x3x8x8xf32>) -> tensor<1x16x8x8xf32> {
  %w0 = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.3> : tensor<16x3x3x3xf32>
  %c0 = ge.conv2d %x, %w0 {pads = [1, 1, 1, 1]} : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x8x8xf32>
  %lo = ge.const dense<0.0> : tensor<f32>
  %r0 = ge.maximum %c0, %lo : (tensor<1x16x8x8xf32>, tensor<f32>) -> tensor<1x16x8x8xf32>
  %w = ge.const #ge.random<normal, seed = 2, mean = 0.0, std = 0.3> : tensor<16x1x3x3xf32>
  %b = ge.const #ge.random<normal, seed = 3, mean = 0.0, std = 0.1> : tensor<16xf32>
  %y = ge.conv2d %r0, %w {pads = [1, 1, 1, 1], groups = 16} : (tensor<1x16x8x8xf32>, tensor<16x1x3x3xf32>) -> tensor<1x16x8x8xf32>
  %yb = ge.bias_add %y, %b {axis = 1} : (tensor<1x16x8x8xf32>, tensor<16xf32>) -> tensor<1x16x8x8xf32>
  %z = ge.maximum %yb, %lo : (tensor<1x16x8x8xf32>, tensor<f32>) -> tensor<1x16x8x8xf32>
  return %z : tensor<1x16x8x8xf32>
}""",
    # whisper / ViT: pre-norm residual LayerNorm(x + batched MatMul); add_layer_norm
    # must not read the product in FRACTAL_NZ (its row kernel broadcasts ND only).
    "layer-norm-of-residual-batched-matmul": """
func.func @main(%x: tensor<2x32x48xf16>, %a: tensor<2x32x48xf16>) -> tensor<2x32x48xf16> {
  %w = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.1> : tensor<2x48x48xf16>
  %m = ge.batch_matmul %a, %w : (tensor<2x32x48xf16>, tensor<2x48x48xf16>) -> tensor<2x32x48xf16>
  %s = ge.add %x, %m : (tensor<2x32x48xf16>, tensor<2x32x48xf16>) -> tensor<2x32x48xf16>
  %g = ge.const #ge.random<uniform, seed = 2, low = 0.9, high = 1.1> : tensor<48xf16>
  %b = ge.const #ge.random<uniform, seed = 3, low = -0.1, high = 0.1> : tensor<48xf16>
  %n = ge.layer_norm %s, %g, %b {epsilon = 1.0e-05, axis = -1} : (tensor<2x32x48xf16>, tensor<48xf16>, tensor<48xf16>) -> tensor<2x32x48xf16>
  return %n : tensor<2x32x48xf16>
}""",
    # class 3: a conv then a Mul by a constant of the conv's output shape (NC1HWC0
    # after layout): no cube group kernel takes it, so fusion does not make one.
    "conv-times-full-constant": """
func.func @main(%x: tensor<1x4x10x10xf32>) -> tensor<1x8x8x8xf32> {
  %w = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.1> : tensor<8x4x3x3xf32>
  %y = ge.conv2d %x, %w : (tensor<1x4x10x10xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x8x8xf32>
  %c = ge.const #ge.random<normal, seed = 2, mean = 0.0, std = 1.0> : tensor<1x8x8x8xf32>
  %z = ge.mul %y, %c : (tensor<1x8x8x8xf32>, tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  return %z : tensor<1x8x8x8xf32>
}""",
    # class 4: BatchNormalization after a batched MatMul: its per-channel
    # parameters run along the product's rows, which no cube epilogue reads.
    "batch-norm-after-batched-matmul": """
func.func @main(%x: tensor<1x550x1xf32>) -> tensor<1x550x26xf32> {
  %w = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.3> : tensor<1x26xf32>
  %m = ge.batch_matmul %x, %w : (tensor<1x550x1xf32>, tensor<1x26xf32>) -> tensor<1x550x26xf32>
  %sc = ge.const #ge.random<uniform, seed = 2, low = 0.5, high = 1.5> : tensor<550xf32>
  %bi = ge.const #ge.random<normal, seed = 3, mean = 0.0, std = 0.1> : tensor<550xf32>
  %mu = ge.const #ge.random<normal, seed = 4, mean = 0.0, std = 0.1> : tensor<550xf32>
  %va = ge.const #ge.random<uniform, seed = 5, low = 0.5, high = 1.5> : tensor<550xf32>
  %y = ge.batch_norm %m, %sc, %bi, %mu, %va {epsilon = 1.0e-05} : (tensor<1x550x26xf32>, tensor<550xf32>, tensor<550xf32>, tensor<550xf32>, tensor<550xf32>) -> tensor<1x550x26xf32>
  return %y : tensor<1x550x26xf32>
}""",
    # class 2: f16 Sigmoid(x[6,31,8]) then a MatMul: on tiny a tile of several
    # 31 x 8 matrices would put NZ strips 496 bytes apart in UB (unaligned).
    "sigmoid-into-nz-of-unaligned-matrices": """
func.func @main(%x: tensor<6x31x8xf16>) -> tensor<6x31x5xf16> {
  %s = ge.sigmoid %x : (tensor<6x31x8xf16>) -> tensor<6x31x8xf16>
  %w = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.3> : tensor<8x5xf16>
  %y = ge.batch_matmul %s, %w : (tensor<6x31x8xf16>, tensor<8x5xf16>) -> tensor<6x31x5xf16>
  return %y : tensor<6x31x5xf16>
}""",
    # An exact-erf GELU (as ONNX exports it) over one long row: one group, whose
    # rows are cut to fit UB as an elementwise kernel's are (it used to be grouped,
    # then split back into five kernels by fused-ungroup).
    "erf-gelu-over-a-long-row": """
func.func @main(%x: tensor<1x32768xf32>) -> tensor<1x32768xf32> {
  %s2 = ge.const dense<1.41421354> : tensor<f32>
  %one = ge.const dense<1.0> : tensor<f32>
  %half = ge.const dense<0.5> : tensor<f32>
  %d = ge.div %x, %s2 : (tensor<1x32768xf32>, tensor<f32>) -> tensor<1x32768xf32>
  %e = ge.erf %d : (tensor<1x32768xf32>) -> tensor<1x32768xf32>
  %a = ge.add %e, %one : (tensor<1x32768xf32>, tensor<f32>) -> tensor<1x32768xf32>
  %m = ge.mul %x, %a : (tensor<1x32768xf32>, tensor<1x32768xf32>) -> tensor<1x32768xf32>
  %y = ge.mul %m, %half : (tensor<1x32768xf32>, tensor<f32>) -> tensor<1x32768xf32>
  return %y : tensor<1x32768xf32>
}""",
}

PRESETS = ("ascend910", "tiny")
MODES = {"fused": "", "eager": "fuse=false reuse=false streams=1 "}


def _parse(text: str):
    ctx = make_context()
    return ctx, Parser(ctx, text, "case.mlir").parse_module()


def _compiled(text: str, pipeline: str):
    ctx, module = _parse(text)
    run_pipeline(parse_pass_pipeline(pipeline), ctx, module)
    return module


@pytest.mark.parametrize("hw", PRESETS)
@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("case", sorted(CASES))
def test_compiles_and_matches_the_reference(case: str, mode: str, hw: str):
    _, reference = _parse(CASES[case])
    inputs = random_inputs(input_specs(main_function(reference)), 0)
    expected = execute(reference, inputs).results
    compiled = _compiled(CASES[case], f"ge-compile{{{MODES[mode]}hw={hw}}}")
    actual = execute(compiled, inputs, hw=hw).results
    floor = precision_floor(reference)
    for i, (e, a) in enumerate(zip(expected, actual)):
        mismatch = worst_mismatch(f"result{i}", e, a, floor)
        assert mismatch is None or mismatch.ratio <= 1.0, str(mismatch)


@pytest.mark.parametrize("hw", PRESETS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_fusion_only_makes_kernels_that_exist(case: str, hw: str):
    """Every fused op and group `ge-fuse` makes builds on `hw` (nothing is left for
    fused-ungroup to split)."""
    module = _compiled(CASES[case], f"ge-graph-opt,ge-fuse{{hw={hw}}}")
    made = [op for op in module.walk() if op.dialect_name() == "fused" and not isinstance(op, fused.YieldOp)]
    for op in made:
        assert kernel_problem(op, load_preset(hw)) is None, op.name


@pytest.mark.parametrize("hw", PRESETS)
def test_a_long_elementwise_row_is_one_kernel(hw: str):
    """The exact-erf GELU written out over a row longer than UB holds is one kernel
    (ge-simplify makes it one ge.gelu; before that it was one fused group), not
    split into several by fused-ungroup."""
    module = _compiled(CASES["erf-gelu-over-a-long-row"], f"ge-compile{{hw={hw}}}")
    assert sum(1 for op in module.walk() if op.name == "npu.kernel") == 1
