"""The graph passes on the shipped examples and on the cases their docstrings
promise: what is folded and what is not (max-bytes, `#ge.random` weights),
batch_norm folding numbers, where layout leaves its transdata, the pipeline's
options and statistics, and `ge-sim --pipeline ge-graph-opt --check`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gecomp.dialects.context import make_context
from gecomp.core.parsing import load_module, parse_module, verify_module
from gecomp.core.passes import Instrumentation, instrumented, parse_pass_pipeline, run_pipeline
from gecomp.dialects.ge import ConstOp, RandomAttr, TransDataOp
from gecomp.dialects.ge.formats import Format, format_of
from gecomp.simulator.compare import precision_floor, worst_mismatch
from gecomp.simulator.reference import run_reference
from gecomp.core.signature import input_specs, main_function, random_inputs
from gecomp.tools import ge_opt, ge_sim

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.mlir"))
CUBE_OPS = ("ge.matmul", "ge.batch_matmul", "ge.conv2d")


def run(module, pipeline: str) -> dict[str, dict[str, int]]:
    """Apply `pipeline`, verifying after each pass; return the pass statistics."""
    instrumentation = Instrumentation()
    with instrumented(instrumentation):
        run_pipeline(parse_pass_pipeline(pipeline), make_context(), module)
    return instrumentation.statistics


def parse(text: str):
    module = parse_module(make_context(), text, "test.mlir")
    verify_module(module)
    return module


def op_names(module) -> list[str]:
    return [op.name for op in module.walk() if op.name.startswith("ge.")]


def assert_same_numbers(before, after, seed: int = 0):
    inputs = random_inputs(input_specs(main_function(before)), seed)
    floor = precision_floor(before)
    for i, (e, a) in enumerate(zip(run_reference(before, inputs), run_reference(after, inputs), strict=True)):
        mismatch = worst_mismatch(f"result{i}", e, a, floor)
        assert mismatch is None or mismatch.ratio <= 1.0, str(mismatch)


# ---- constant folding ------------------------------------------------------------------------

FOLDABLE = """
func.func @main(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<512x1024xf32>, tensor<8x4xf32>) {
  %a = ge.const dense<[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]]> : tensor<1x8xf32>
  %e = ge.exp %a : (tensor<1x8xf32>) -> tensor<1x8xf32>
  %s = ge.const dense<2.0> : tensor<f32>
  %big = ge.expand %s : (tensor<f32>) -> tensor<512x1024xf32>
  %w = ge.const #ge.random<normal, seed = 3, mean = 0.0, std = 1.0> : tensor<4x8xf32>
  %wt = ge.transpose %w {perm = [1, 0]} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %y = ge.mul %x, %e : (tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
  func.return %y, %big, %wt : tensor<4x8xf32>, tensor<512x1024xf32>, tensor<8x4xf32>
}
"""


def test_constant_fold_evaluates_constant_ops_and_keeps_splats_as_splats():
    module = parse(FOLDABLE)
    stats = run(module, "ge-constant-fold")
    assert stats["ge-constant-fold"]["ops folded"] == 3
    assert op_names(module).count("ge.const") == 3 and "ge.mul" in op_names(module)
    text = str(module)
    assert "dense<2.000000e+00> : tensor<512x1024xf32>" in text, "a 2 MiB broadcast stays one element"
    assert_same_numbers(parse(FOLDABLE), module)


def test_constant_fold_respects_max_bytes_for_random_weights():
    text = """
    func.func @main() -> tensor<1024x512xf32> {
      %w = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 1.0> : tensor<512x1024xf32>
      %t = ge.transpose %w {perm = [1, 0]} : (tensor<512x1024xf32>) -> tensor<1024x512xf32>
      func.return %t : tensor<1024x512xf32>
    }"""
    module = parse(text)
    stats = run(module, "ge-constant-fold")
    assert stats["ge-constant-fold"] == {"ops folded": 0, "ops over max-bytes left unfolded": 1}
    assert "ge.transpose" in op_names(module)
    small = parse(text.replace("512x1024", "8x16").replace("1024x512", "16x8"))
    run(small, "ge-constant-fold{max-bytes=512}")
    assert op_names(small) == ["ge.const"] and 'dense<"0x' in str(small)


def test_reshape_and_transdata_of_random_constants_only_retype_them():
    module = parse("""
    func.func @main(%x: tensor<64x32xf16>) -> tensor<64x64xf16> {
      %w = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 1.0> : tensor<2048xf16>
      %r = ge.reshape %w : (tensor<2048xf16>) -> tensor<32x64xf16>
      %n = ge.transdata %r {src_format = "ND", dst_format = "FRACTAL_NZ"} : (tensor<32x64xf16>) -> tensor<32x64xf16, #ge.format<FRACTAL_NZ>>
      %d = ge.transdata %n {src_format = "FRACTAL_NZ", dst_format = "ND"} : (tensor<32x64xf16, #ge.format<FRACTAL_NZ>>) -> tensor<32x64xf16>
      %y = ge.matmul %x, %d : (tensor<64x32xf16>, tensor<32x64xf16>) -> tensor<64x64xf16>
      func.return %y : tensor<64x64xf16>
    }""")
    reference = module.clone()
    run(module, "ge-constant-fold")
    consts = [op for op in module.walk() if isinstance(op, ConstOp)]
    assert len(consts) == 1 and isinstance(consts[0].value, RandomAttr)
    assert consts[0].result.type.get_shape() == (32, 64)
    assert_same_numbers(reference, module)


def test_undefined_evaluation_is_left_for_run_time():
    module = parse("""
    func.func @main() -> tensor<2xi32> {
      %a = ge.const dense<[4, 5]> : tensor<2xi32>
      %z = ge.const dense<[1, 0]> : tensor<2xi32>
      %q = ge.div %a, %z : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
      func.return %q : tensor<2xi32>
    }""")
    run(module, "ge-constant-fold")
    assert "ge.div" in op_names(module)


# ---- batch_norm folding ---------------------------------------------------------------------


def test_fold_batchnorm_on_the_resnet_block():
    before = load_module(make_context(), str(ROOT / "examples" / "resnet_block.mlir"))
    after = before.clone()
    stats = run(after, "ge-fold-batchnorm")
    assert stats["ge-fold-batchnorm"]["batch norms folded"] == 2
    names = op_names(after)
    assert "ge.batch_norm" not in names and names.count("ge.bias_add") == 2
    assert_same_numbers(before, after)


@pytest.mark.parametrize("transpose_b", [False, True])
def test_fold_batchnorm_after_matmul(transpose_b):
    w_shape = "24x16" if transpose_b else "16x24"
    module = parse(f"""
    func.func @main(%x: tensor<5x16xf32>) -> tensor<5x24xf32> {{
      %w = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.3> : tensor<{w_shape}xf32>
      %m = ge.matmul %x, %w {{transpose_b = {str(transpose_b).lower()}}} : (tensor<5x16xf32>, tensor<{w_shape}xf32>) -> tensor<5x24xf32>
      %g = ge.const #ge.random<uniform, seed = 2, low = 0.5, high = 1.5> : tensor<24xf32>
      %b = ge.const #ge.random<normal, seed = 3, mean = 0.0, std = 1.0> : tensor<24xf32>
      %mu = ge.const #ge.random<normal, seed = 4, mean = 0.0, std = 1.0> : tensor<24xf32>
      %v = ge.const #ge.random<uniform, seed = 5, low = 0.5, high = 2.0> : tensor<24xf32>
      %y = ge.batch_norm %m, %g, %b, %mu, %v {{epsilon = 0.001}} : (tensor<5x24xf32>, tensor<24xf32>, tensor<24xf32>, tensor<24xf32>, tensor<24xf32>) -> tensor<5x24xf32>
      func.return %y : tensor<5x24xf32>
    }}""")
    reference = module.clone()
    run(module, "ge-fold-batchnorm")
    assert op_names(module) == ["ge.const", "ge.matmul", "ge.const", "ge.bias_add"]
    assert_same_numbers(reference, module)


# ---- layout -----------------------------------------------------------------------------------


def transdata_per_cube_op(module) -> float:
    names = op_names(module)
    return names.count("ge.transdata") / sum(names.count(c) for c in CUBE_OPS)


@pytest.mark.parametrize("example", ["mlp", "resnet_block"])
def test_layout_leaves_transdata_only_at_the_graph_boundary(example):
    module = load_module(make_context(), str(ROOT / "examples" / f"{example}.mlir"))
    run(module, "ge-graph-opt")
    block = main_function(module).body.block
    transdata = [op for op in block.ops if isinstance(op, TransDataOp)]
    assert len(transdata) == 2
    assert transdata[0].operands[0] is block.args[0], "the input is converted once"
    assert block.last_op.operands[0].owner is transdata[1], "the output is converted back once"


def test_layout_keeps_random_weights_random_and_stops_at_format_sensitive_ops():
    module = load_module(make_context(), str(ROOT / "examples" / "bert_layer.mlir"))
    randoms_before = str(module).count("#ge.random")
    run(module, "ge-graph-opt")
    assert str(module).count("#ge.random") == randoms_before
    assert 'dense<"0x' not in str(module)
    for op in module.walk():
        if op.name in ("ge.reshape", "ge.softmax", "ge.layer_norm", "ge.transpose"):
            assert all(format_of(v.type) == Format.ND for v in (*op.operands, *op.results)), op.name
    assert transdata_per_cube_op(module) <= 1.75


def test_layout_without_propagation_converts_around_every_cube_op():
    module = load_module(make_context(), str(ROOT / "examples" / "mlp.mlir"))
    run(module, "ge-layout{propagate=false}")
    assert op_names(module).count("ge.transdata") == 4  # in and out of both matmuls
    moved = load_module(make_context(), str(ROOT / "examples" / "mlp.mlir"))
    stats = run(moved, "ge-layout")
    assert op_names(moved).count("ge.transdata") == 2
    assert stats["ge-layout"]["ops moved into a physical format"] == 4


# ---- the pipeline ------------------------------------------------------------------------------


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_ge_sim_check_passes_after_graph_opt(example, capsys):
    assert ge_sim.main([str(example), "--pipeline", "ge-graph-opt", "--check"]) == 0
    assert "check: ok" in capsys.readouterr().out


def test_cleanup_repeats_until_nothing_changes():
    """x * 0 -> 0 (simplify) makes abs foldable, the folded abs makes the next
    abs(abs) a pattern...: one ge-graph-opt reaches the fixpoint."""
    module = parse("""
    func.func @main(%x: tensor<3xi32>) -> tensor<3xi32> {
      %z = ge.const dense<0> : tensor<i32>
      %m = ge.mul %x, %z : (tensor<3xi32>, tensor<i32>) -> tensor<3xi32>
      %a = ge.abs %m : (tensor<3xi32>) -> tensor<3xi32>
      %b = ge.neg %a : (tensor<3xi32>) -> tensor<3xi32>
      %c = ge.add %x, %b : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
      func.return %c : tensor<3xi32>
    }""")
    reference = module.clone()
    run(module, "ge-graph-opt{layout=false}")
    assert op_names(module) == [], str(module)
    assert_same_numbers(reference, module)


def test_pass_statistics_report_every_stage(tmp_path, capsys):
    out = tmp_path / "out.mlir"
    assert ge_opt.main([str(ROOT / "examples" / "resnet_block.mlir"), "-p", "ge-graph-opt",
                        "--pass-statistics", "-o", str(out)]) == 0
    report = capsys.readouterr().err
    for line in ("ge-simplify: ", "ge-constant-fold: 0 ops folded", "ge-fold-batchnorm: 2 batch norms folded",
                 "cse: 0 ops erased", "dce: 0 ops erased"):
        assert line in report
    assert re.search(r"ge-layout: \d+ transdata inserted, .*\d+ transdata eliminated", report)


def test_pipeline_options_switch_stages_off():
    module = load_module(make_context(), str(ROOT / "examples" / "resnet_block.mlir"))
    stats = run(module, "ge-graph-opt{layout=false fold-bn=false}")
    assert "ge-layout" not in stats and "ge-fold-batchnorm" not in stats
    assert "ge.batch_norm" in op_names(module) and "ge.transdata" not in op_names(module)
    (pipeline,) = parse_pass_pipeline("ge-graph-opt{simplify=false cse=false dce=false fold=false}")
    assert [p.name for p in pipeline.stages()] == ["ge-fold-batchnorm", "ge-layout"]
    assert pipeline.cleanup_stages() == []


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_graph_opt_is_idempotent_on_the_examples(example):
    module = load_module(make_context(), str(example))
    run(module, "ge-graph-opt")
    once = str(module)
    stats = run(module, "ge-graph-opt")
    assert str(module) == once
    assert stats["ge-layout"]["transdata inserted"] == 0


def test_cse_merges_identical_ge_ops_only():
    module = parse("""
    func.func @main(%x: tensor<4x8xf16>) -> (tensor<4x8xf16>, tensor<4x8xf16>, tensor<4x8xf16>) {
      %a = ge.leaky_relu %x {alpha = 0.2} : (tensor<4x8xf16>) -> tensor<4x8xf16>
      %b = ge.leaky_relu %x {alpha = 0.2} : (tensor<4x8xf16>) -> tensor<4x8xf16>
      %c = ge.leaky_relu %x {alpha = 0.3} : (tensor<4x8xf16>) -> tensor<4x8xf16>
      func.return %a, %b, %c : tensor<4x8xf16>, tensor<4x8xf16>, tensor<4x8xf16>
    }""")
    reference = module.clone()
    run(module, "cse")
    assert op_names(module).count("ge.leaky_relu") == 2
    assert_same_numbers(reference, module)
