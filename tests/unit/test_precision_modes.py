"""Precision modes (`ge-compile{precision=...}`, ATC's --precision_mode) on f32
exports of the examples: every mode's numbers against the f32 reference at the
tolerance of the precision compiled, fewer cycles for cube-heavy models in f16,
the mixed-precision deny list kept in f32, what the module records, and how
`ge-sim --check` / `--report` use it."""

from __future__ import annotations

import functools
import json
import os
import re

import numpy as np
import pytest

from gecomp.core import precision
from gecomp.dialects.context import make_context
from gecomp.core.diagnostics import CompileError
from gecomp.core.parsing import parse_module
from gecomp.core.passes import parse_pass_pipeline, run_pipeline
from gecomp.simulator.compare import compiled_floor, precision_floor, worst_mismatch
from gecomp.simulator.run import execute
from gecomp.core.signature import input_specs, main_function, random_inputs
from gecomp.tools import ge_sim
from gecomp.transforms.graph.precision import CUBE_OPS, DENY_LIST, MOVEMENT_OPS

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "examples")
LOWERING_MODES = (precision.FORCE_FP16, precision.ALLOW_FP32_TO_FP16, precision.ALLOW_MIX_PRECISION)


def f32_example(name: str) -> str:
    """examples/NAME.mlir as an f32 export: every f16 element type f32."""
    with open(os.path.join(EXAMPLES, f"{name}.mlir"), encoding="utf-8") as f:
        return re.sub(r"(?<=[<x])f16>", "f32>", f.read())


@functools.cache
def source(name: str):
    return parse_module(make_context(), f32_example(name), name)


@functools.cache
def reference(name: str) -> tuple:
    module = source(name)
    inputs = random_inputs(input_specs(main_function(module)), 0)
    return inputs, execute(module.clone(), inputs).results


@functools.cache
def compiled(name: str, mode: str, graph_only: bool = False):
    """ge-compile in `mode`, or (graph_only) the graph optimisations then the pass alone."""
    module = source(name).clone()
    pipeline = (
        f"ge-graph-opt{{layout=false}},ge-precision{{mode={mode}}}" if graph_only else f"ge-compile{{precision={mode}}}"
    )
    run_pipeline(parse_pass_pipeline(pipeline), make_context(), module)
    return module


@functools.cache
def simulated(name: str, mode: str):
    module = compiled(name, mode)
    inputs, _ = reference(name)
    return execute(module, inputs)


def worst_ratio(name: str, actual, floor) -> float:
    _, expected = reference(name)
    worst = [worst_mismatch("out", np.asarray(e), np.asarray(a), floor) for e, a in zip(expected, actual)]
    return max((w.ratio for w in worst if w is not None), default=0.0)


@pytest.mark.parametrize("mode", LOWERING_MODES)
@pytest.mark.parametrize("name", ["bert_layer", "resnet_block"])
def test_each_mode_matches_the_f32_reference_at_fp16_tolerance(name, mode):
    module = compiled(name, mode)
    floor = compiled_floor(source(name), module)
    assert floor == np.dtype(np.float16)
    assert worst_ratio(name, simulated(name, mode).results, floor) <= 1.0


@pytest.mark.parametrize("mode", LOWERING_MODES)
@pytest.mark.parametrize("name", ["bert_layer", "resnet_block"])
def test_the_lowered_graph_keeps_the_numbers(name, mode):
    """The pass alone (ge level, reference interpreter) stays within fp16 tolerance."""
    module = compiled(name, mode, graph_only=True)
    inputs, _ = reference(name)
    assert worst_ratio(name, execute(module.clone(), inputs).results, np.dtype(np.float16)) <= 1.0


def test_fp16_results_are_judged_at_fp16_not_f32_tolerance():
    """The floor matters: the same results fail at f32 tolerance (so the check can fail)."""
    results = simulated("resnet_block", precision.FORCE_FP16).results
    assert worst_ratio("resnet_block", results, precision_floor(source("resnet_block"))) > 1.0


# allow_fp32_to_fp16 is not faster on resnet_block: its f16 convs sit between f32
# vector ops, and each cast between them is a kernel of its own (26,000 cycles in f32,
# 29,536 in that mode, since the f32 img2col gathers whole runs); on the mlp the
# products dominate and the mode pays.
@pytest.mark.parametrize("name, modes", [
    ("resnet_block", (precision.FORCE_FP16, precision.ALLOW_MIX_PRECISION)),
    ("mlp", (precision.FORCE_FP16, precision.ALLOW_MIX_PRECISION, precision.ALLOW_FP32_TO_FP16)),
])
def test_cube_heavy_examples_take_fewer_cycles_in_fp16(name, modes):
    kept = simulated(name, precision.MUST_KEEP_ORIGIN_DTYPE).report.total_cycles
    for mode in modes:
        assert simulated(name, mode).report.total_cycles < kept, mode


def test_must_keep_origin_dtype_changes_nothing():
    module = compiled("mlp", precision.MUST_KEEP_ORIGIN_DTYPE)
    assert precision.recorded_mode(module) is None
    assert compiled_floor(source("mlp"), module) == precision_floor(source("mlp"))
    default = source("mlp").clone()
    run_pipeline(parse_pass_pipeline("ge-compile"), make_context(), default)
    assert str(default) == str(module)


def test_what_each_mode_lowers_on_the_bert_layer():
    lowered = {mode: precision.recorded_lowered(compiled("bert_layer", mode, graph_only=True)) for mode in LOWERING_MODES}
    assert set(lowered[precision.ALLOW_FP32_TO_FP16]) <= CUBE_OPS | MOVEMENT_OPS
    assert lowered[precision.ALLOW_FP32_TO_FP16]["ge.matmul"] == 6
    assert lowered[precision.ALLOW_FP32_TO_FP16]["ge.batch_matmul"] == 2
    mix = lowered[precision.ALLOW_MIX_PRECISION]
    assert not set(mix) & DENY_LIST and "ge.add" in mix
    assert {"ge.softmax", "ge.layer_norm"} <= set(lowered[precision.FORCE_FP16])


@pytest.mark.parametrize("mode, stored", [
    (precision.FORCE_FP16, "f16"), (precision.ALLOW_FP32_TO_FP16, "f16"), (precision.MUST_KEEP_ORIGIN_DTYPE, "f32"),
])
def test_cube_weights_are_stored_in_the_precision_compiled(mode, stored):
    """A weight of an op lowered to f16 is rounded at compile time (as ATC converts
    weights offline): the compiled module holds it as an f16 `npu.gm_constant`, so
    no kernel reads f32 weights through a core's 73 B/cycle GM port to cast them
    on chip (and the module's roofline, computed as compiled, counts f16 bytes).
    The BERT layer's six projection weights (768 x 768 and 768 x 3072 elements)."""
    from gecomp.dialects import npu

    weights = [
        op for op in compiled("bert_layer", mode).walk()
        if isinstance(op, npu.GmConstantOp) and int(np.prod(op.result.type.get_shape())) >= 768 * 768
    ]
    assert len(weights) == 6
    assert {str(op.result.type.element_type) for op in weights} == {stored}


def test_deny_list_ops_keep_f32_in_the_compiled_graph():
    module = compiled("bert_layer", precision.ALLOW_MIX_PRECISION, graph_only=True)
    denied = [op for op in module.walk() if op.name in DENY_LIST]
    assert {op.name for op in denied} == {"ge.softmax", "ge.layer_norm"}
    assert all(str(r.type.element_type) == "f32" for op in denied for r in op.results)


def test_keep_fp32_overrides_every_mode():
    module = source("resnet_block").clone()
    pipeline = "ge-graph-opt{layout=false},ge-precision{mode=force_fp16 keep-fp32=conv2d}"
    run_pipeline(parse_pass_pipeline(pipeline), make_context(), module)
    convs = [op for op in module.walk() if op.name == "ge.conv2d"]
    assert convs and all(str(op.results[0].type.element_type) == "f32" for op in convs)
    assert "ge.conv2d" not in precision.recorded_lowered(module)


def test_formats_that_depend_on_the_element_type_come_after_the_pass():
    module = source("resnet_block").clone()
    with pytest.raises(CompileError, match="run ge-precision before ge-layout"):
        run_pipeline(parse_pass_pipeline("ge-graph-opt,ge-precision{mode=force_fp16}"), make_context(), module)


def test_ge_sim_check_and_report_name_the_precision(tmp_path, capsys):
    path = tmp_path / "mlp_f32.mlir"
    path.write_text(f32_example("mlp"))
    assert ge_sim.main([str(path), "--pipeline", "ge-compile{precision=allow_mix_precision}", "--check", "--report"]) == 0
    out = capsys.readouterr().out
    assert "precision: allow_mix_precision; computed in f16: bias_add x2, gelu x2, matmul x2" in out
    assert "check: ok" in out
    report = tmp_path / "report.json"
    assert ge_sim.main([str(path), "--pipeline", "ge-compile{precision=allow_fp32_to_fp16}", "--json", str(report)]) == 0
    recorded = json.loads(report.read_text())["precision"]
    assert recorded == {"mode": "allow_fp32_to_fp16", "lowered": {"ge.matmul": 2}}


def test_softmax_on_the_allow_list_gives_the_flash_attention_back():
    """Mixed precision keeps softmax in f32, which splits the attention; moving it
    to the allow list fuses it into one fused.flash_attention again."""

    def fused(options: str) -> list[str]:
        module = source("bert_layer").clone()
        pipeline = f"ge-graph-opt{{layout=false}},ge-precision{{mode=allow_mix_precision{options}}},ge-graph-opt,ge-fuse"
        run_pipeline(parse_pass_pipeline(pipeline), make_context(), module)
        return [op.name for op in module.walk()]

    assert "fused.flash_attention" not in fused("")
    assert "fused.flash_attention" in fused(" allow-fp16=softmax")


def test_force_fp16_overflow_is_caught_by_the_check(tmp_path, capsys):
    """Values computed beyond fp16's range (65504) overflow in force_fp16, as on
    the NPU, and --check says so instead of passing; a constant beyond it keeps
    its op in f32 (the compiler never rounds a weight to inf)."""
    path = tmp_path / "big.mlir"
    path.write_text("""func.func @main(%x: tensor<4x64xf32>) -> (tensor<4x64xf32>, tensor<4x64xf32>) {
  %c = ge.const dense<3.000000e+02> : tensor<f32>
  %y = ge.mul %x, %c : (tensor<4x64xf32>, tensor<f32>) -> tensor<4x64xf32>
  %z = ge.mul %y, %y : (tensor<4x64xf32>, tensor<4x64xf32>) -> tensor<4x64xf32>
  %big = ge.const dense<7.000000e+04> : tensor<f32>
  %w = ge.mul %x, %big : (tensor<4x64xf32>, tensor<f32>) -> tensor<4x64xf32>
  func.return %z, %w : tensor<4x64xf32>, tensor<4x64xf32>
}""")
    assert ge_sim.main([str(path), "--pipeline", "ge-compile{precision=force_fp16}", "--check", "--report"]) == 1
    captured = capsys.readouterr()
    assert "check: FAILED result0" in captured.err and "got inf" in captured.err
    assert "check: FAILED result1" not in captured.err
    assert "computed in f16: mul x2" in captured.out
