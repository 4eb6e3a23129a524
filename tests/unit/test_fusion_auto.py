"""Automatic fusion's parts on small graphs: the benefit model's numbers come
from the hardware preset, the graph's cycle and peak-memory checks, the
legality rules, the traffic estimate the benchmark reports, turning op sets into
groups, and the pattern framework's own checks."""

from __future__ import annotations

import numpy as np
import pytest

from gecomp.dialects.context import make_context
from gecomp.core.parsing import parse_module
from gecomp.dialects import ge
from gecomp.dialects.fused import GroupOp
from gecomp.lowering.graph_to_fused.cost_model import CostModel
from gecomp.lowering.graph_to_fused.fusion_graph import FusionGraph, make_part
from gecomp.lowering.graph_to_fused.grouping import build_group, group_all
from gecomp.lowering.graph_to_fused.legality import Constraints, problem
from gecomp.lowering.graph_to_fused.pattern import Match, apply_match, rejection
from gecomp.lowering.graph_to_fused.traffic import estimate
from gecomp.simulator.hardware import load_preset
from gecomp.simulator.reference import run_reference
from gecomp.core.signature import main_function


def parse(body: str, args: str, results: str = ""):
    text = f"func.func @main({args}){(' -> ' + results) if results else ''} {{\n{body}\n}}"
    module = parse_module(make_context(), text, "<test>")
    return module, main_function(module).body.block


def ops(block, *names):
    found = [op for op in block.ops if op.name in names]
    return found


CHAIN = """
  %two = ge.const dense<2.0> : tensor<f16>
  %0 = ge.add %x, %b : (tensor<64x128xf16>, tensor<128xf16>) -> tensor<64x128xf16>
  %1 = ge.relu %0 : (tensor<64x128xf16>) -> tensor<64x128xf16>
  %2 = ge.mul %1, %two : (tensor<64x128xf16>, tensor<f16>) -> tensor<64x128xf16>
  func.return %2 : tensor<64x128xf16>"""
CHAIN_ARGS = "%x: tensor<64x128xf16>, %b: tensor<128xf16>"


@pytest.mark.parametrize("hw", ["ascend910", "tiny"])
def test_benefit_is_gm_cycles_plus_a_launch(hw):
    preset = load_preset(hw)
    _, block = parse(CHAIN, CHAIN_ARGS, "tensor<64x128xf16>")
    add, relu = ops(block, "ge.add", "ge.relu")
    benefit = CostModel(preset).benefit(make_part([add]), make_part([relu]), make_part([add, relu]))
    intermediate = 64 * 128 * 2
    assert benefit.gm_bytes_saved == 2 * intermediate  # written once, read once
    assert benefit.gm_cycles == pytest.approx(2 * intermediate / preset.hbm_bytes_per_cycle)
    assert benefit.launch_cycles == preset.kernel_launch_cycles == round(preset.kernel_launch_us * preset.freq_ghz * 1e3)
    assert benefit.penalty_cycles == 0
    assert benefit.total == pytest.approx(benefit.gm_cycles + benefit.launch_cycles)


def test_a_row_too_wide_for_ub_does_not_fit():
    _, block = parse(
        """
  %0 = ge.exp %x : (tensor<2x8192xf32>) -> tensor<2x8192xf32>
  %1 = ge.softmax %0 : (tensor<2x8192xf32>) -> tensor<2x8192xf32>
  func.return %1 : tensor<2x8192xf32>""",
        "%x: tensor<2x8192xf32>",
        "tensor<2x8192xf32>",
    )
    part = make_part(ops(block, "ge.exp", "ge.softmax"))
    # one row: input and output double-buffered (4 x 4 B) + the exp value (4 B)
    row = 8192 * (2 * 4 + 2 * 4 + 4)
    tiny = CostModel(load_preset("tiny")).plan(part)
    assert not tiny.fits and f"needs {row} B of UB" in tiny.reason
    assert CostModel(load_preset("ascend910")).plan(part).fits


def test_smaller_tiles_cost_a_penalty_on_a_small_ub():
    args = ", ".join(f"%a{i}: tensor<1024x1024xf16>" for i in range(3))
    _, block = parse(
        """
  %0 = ge.add %a0, %a1 : (tensor<1024x1024xf16>, tensor<1024x1024xf16>) -> tensor<1024x1024xf16>
  %1 = ge.add %0, %a2 : (tensor<1024x1024xf16>, tensor<1024x1024xf16>) -> tensor<1024x1024xf16>
  func.return %1 : tensor<1024x1024xf16>""",
        args,
        "tensor<1024x1024xf16>",
    )
    first, second = ops(block, "ge.add")
    parts = make_part([first]), make_part([second]), make_part([first, second])
    tiny, big = (CostModel(load_preset(hw)).benefit(*parts) for hw in ("tiny", "ascend910"))
    assert tiny.penalty_cycles > 10 * big.penalty_cycles > 0
    assert big.total > 0


def test_cycles_and_peak_memory():
    _, block = parse(
        """
  %0 = ge.relu %x : (tensor<1x4x8x8xf16>) -> tensor<1x4x8x8xf16>
  %1 = ge.max_pool2d %0 {kernel = [1, 1]} : (tensor<1x4x8x8xf16>) -> tensor<1x4x8x8xf16>
  %2 = ge.add %0, %1 : (tensor<1x4x8x8xf16>, tensor<1x4x8x8xf16>) -> tensor<1x4x8x8xf16>
  func.return %2 : tensor<1x4x8x8xf16>""",
        "%x: tensor<1x4x8x8xf16>",
        "tensor<1x4x8x8xf16>",
    )
    graph = FusionGraph(block)
    relu, pool, add = graph.nodes()
    assert graph.creates_cycle(relu, add)
    assert not graph.creates_cycle(relu, pool) and not graph.creates_cycle(pool, add)
    size = 4 * 8 * 8 * 2
    # relu: x, r (x freed) | pool: r, p | add: r, p, out
    assert graph.peak_bytes() == 3 * size
    # pool + add as one kernel: p never reaches global memory
    assert graph.peak_bytes((pool, add)) == 2 * size


def test_legality_rules():
    _, block = parse(
        """
  %0 = ge.relu %x : (tensor<8x16xf16>) -> tensor<8x16xf16>
  %1 = ge.matmul %0, %w : (tensor<8x16xf16>, tensor<16x16xf16>) -> tensor<8x16xf16>
  %2 = ge.add %1, %b : (tensor<8x16xf16>, tensor<16xf16>) -> tensor<8x16xf16>
  %3 = ge.reduce_sum %2 {axes = [0]} : (tensor<8x16xf16>) -> tensor<1x16xf16>
  %4 = ge.softmax %2 : (tensor<8x16xf16>) -> tensor<8x16xf16>
  %5 = ge.transpose %4 {perm = [1, 0]} : (tensor<8x16xf16>) -> tensor<16x8xf16>
  func.return %3, %5 : tensor<1x16xf16>, tensor<16x8xf16>""",
        "%x: tensor<8x16xf16>, %w: tensor<16x16xf16>, %b: tensor<16xf16>",
        "(tensor<1x16xf16>, tensor<16x8xf16>)",
    )
    relu, matmul, add, column_sum, softmax, transpose = [op for op in block.ops if op.name != "func.return"]
    limits = Constraints()
    assert problem(make_part([matmul, add]), limits) is None
    assert "no prologue" in problem(make_part([relu, matmul]), limits)
    assert "elementwise epilogue only" in problem(make_part([matmul, add, softmax]), limits)
    assert "non-trailing axes [0]" in problem(make_part([add, column_sum]), limits)
    assert problem(make_part([add, softmax]), limits) is None
    assert "does not keep the rows [8]" in problem(make_part([softmax, transpose]), limits)
    assert "fuse-reduce=false" in problem(make_part([add, softmax]), Constraints(fuse_reduce=False))
    assert "max-size=1" in problem(make_part([matmul, add]), Constraints(max_size=1))
    assert "max-inputs=2" in problem(make_part([matmul, add]), Constraints(max_inputs=2))
    assert "cube-epilogue=false" in problem(make_part([matmul, add]), Constraints(cube_epilogue=False))


def test_traffic_estimate_counts_kernels_inputs_and_used_outputs():
    module, block = parse(CHAIN, CHAIN_ARGS, "tensor<64x128xf16>")
    act, bias, scalar = 64 * 128 * 2, 128 * 2, 2
    before = estimate(module)
    assert before.kernels == 3
    assert before.read_bytes == (act + bias) + act + (act + scalar)
    assert before.written_bytes == 3 * act
    assert before.weight_bytes == scalar
    group_all([ops(block, "ge.add", "ge.relu", "ge.mul")], block)
    after = estimate(module)
    assert (after.kernels, after.read_bytes, after.written_bytes, after.weight_bytes) == (1, act + bias, act, 0)


def test_build_group_reads_once_and_copies_splat_constants(rng):
    module, block = parse(CHAIN, CHAIN_ARGS, "tensor<64x128xf16>")
    inputs = [rng.standard_normal((64, 128)).astype(np.float16), rng.standard_normal(128).astype(np.float16)]
    expected = run_reference(module, inputs)
    members = ops(block, "ge.add", "ge.relu", "ge.mul")
    group, replaced = build_group(members)
    assert list(group.inputs) == list(block.args) and replaced == [members[-1].results[0]]
    assert [op.name for op in group.block.ops] == ["ge.const", "ge.add", "ge.relu", "ge.mul", "fused.yield"]
    group_all([members], block)
    assert [op.name for op in block.ops] == ["fused.group", "func.return"]
    assert isinstance(block.first_op, GroupOp)
    np.testing.assert_array_equal(run_reference(module, inputs)[0], expected[0])


def test_pattern_framework_rejects_shared_intermediates_and_repairs_order():
    module, block = parse(
        """
  %s = ge.add %x, %r : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %t = ge.relu %s : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = ge.rms_norm %s, %g : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.return %y, %t : tensor<4x8xf32>, tensor<4x8xf32>""",
        "%x: tensor<4x8xf32>, %r: tensor<4x8xf32>, %g: tensor<8xf32>",
        "(tensor<4x8xf32>, tensor<4x8xf32>)",
    )
    from gecomp.dialects.fused import AddRmsNormOp

    add, relu, norm = ops(block, "ge.add", "ge.relu", "ge.rms_norm")

    def build():
        return [AddRmsNormOp.new(add.lhs, add.rhs, norm.operands[1], result_type=[norm.result.type, add.result.type])]

    hidden_sum = Match([add, norm], [norm.result], build)
    assert "has another user ('ge.relu')" in rejection(hidden_sum, block)
    exposed_sum = Match([add, norm], [norm.result, add.result], build)
    assert rejection(exposed_sum, block) is None
    inputs = [np.full((4, 8), v, np.float32) for v in (1.0, 2.0)] + [np.ones(8, np.float32)]
    expected = run_reference(module, inputs)
    fused = apply_match(exposed_sum, block)
    # the relu used the sum before the fused op existed: it moved after it
    assert [op.name for op in block.ops] == ["fused.add_rms_norm", "ge.relu", "func.return"]
    assert relu.operands[0] is fused.results[1]
    for e, a in zip(expected, run_reference(module, inputs)):
        np.testing.assert_allclose(a, e, rtol=1e-6)


def test_constants_only_used_by_a_fused_op_are_erased():
    module, block = parse(
        """
  %half = ge.const dense<0.5> : tensor<f32>
  %0 = ge.mul %x, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %1 = ge.softmax %0 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %1 : tensor<4x8xf32>""",
        "%x: tensor<4x8xf32>",
        "tensor<4x8xf32>",
    )
    from gecomp.lowering.graph_to_fused.patterns_vector import SoftmaxPattern

    softmax = ops(block, "ge.softmax")[0]
    apply_match(SoftmaxPattern().match(softmax), block)
    assert [op.name for op in block.ops] == ["fused.softmax", "func.return"]
    assert not any(isinstance(op, ge.ConstOp) for op in block.ops)
