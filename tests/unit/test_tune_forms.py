"""`npu.form` (an op's form pinned whatever the estimates say) and `fused-tune-forms`
(the forms chosen by simulating them)."""

from __future__ import annotations

import re

import pytest
from cube_lowering_testing import check_lowering, compile_module, parse, simulated_cycles

from gecomp.core.diagnostics import CompileError
from gecomp.core.passes import Instrumentation, instrumented
from gecomp.dialects import fused
from gecomp.lowering.fused_to_npu.split_k import pin_form
from gecomp.core.signature import main_function

# Estimated fastest in 8 K slices, simulated faster in 4 (tests/lit/fused/tune-forms.mlir).
MATMUL_GELU = """func.func @main(%a: tensor<32x1024xf16> {ge.name = "a"}) -> (tensor<32x256xf16> {ge.name = "out"}) {
  %w = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.02> : tensor<1024x256xf16>
  %c = ge.const #ge.random<normal, seed = 3, mean = 0.0, std = 0.02> : tensor<256xf16>
  %y = fused.matmul_bias_act %a, %w bias %c {act = "gelu"} : (tensor<32x1024xf16>, tensor<1024x256xf16>, tensor<256xf16>) -> tensor<32x256xf16>
  func.return %y : tensor<32x256xf16>
}"""

MATMUL_NORM = """func.func @main(%a: tensor<64x512xf16> {ge.name = "a"}, %r: tensor<64x256xf16> {ge.name = "r"}) -> (tensor<64x256xf16> {ge.name = "out"}) {
  %w = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.02> : tensor<512x256xf16>
  %g = ge.const #ge.random<uniform, seed = 2, low = 0.9, high = 1.1> : tensor<256xf16>
  %b = ge.const #ge.random<normal, seed = 3, mean = 0.0, std = 0.02> : tensor<256xf16>
  %y, %s = fused.matmul_add_layer_norm %a, %w, %r, %g, %b : (tensor<64x512xf16>, tensor<512x256xf16>, tensor<64x256xf16>, tensor<256xf16>, tensor<256xf16>) -> (tensor<64x256xf16>, tensor<64x256xf16>)
  func.return %y : tensor<64x256xf16>
}"""


def pinned(text: str, form: str):
    module = parse(text)
    op = next(op for op in main_function(module).body.block.ops if op.name.startswith("fused.matmul"))
    pin_form(op, form)
    return module


def op_names(module) -> list[str]:
    return [op.name for op in main_function(module).body.block.ops]


@pytest.mark.parametrize(
    "text, form, ops",
    [
        (MATMUL_GELU, "one kernel", ["fused.matmul_bias_act"]),
        (MATMUL_GELU, "split-K 2", ["fused.matmul_partials", "fused.partials_bias_act"]),
        (MATMUL_NORM, "fused", ["fused.matmul_add_layer_norm"]),
        (MATMUL_NORM, "split", ["fused.matmul_bias_act", "ge.layer_norm"]),
        (MATMUL_NORM, "split-K 4", ["fused.matmul_partials", "fused.partials_add_layer_norm"]),
    ],
)
def test_a_pinned_form_is_taken_and_computes_the_same_numbers(text, form, ops):
    module = pinned(text, form)
    compile_module(module, "fused-split-k" if text is MATMUL_GELU else "fused-split-matmul-norm")
    assert [name for name in op_names(module) if name.startswith(("fused.", "ge.layer_norm"))] == ops
    if form.startswith("split-K"):
        partials = next(op for op in module.walk() if isinstance(op, fused.MatmulPartialsOp))
        assert partials.attr_values().splits == int(form.split()[1])
    check_lowering(pinned(text, form), "ascend910", pipeline="ge-lower-to-npu")


def test_a_form_the_op_does_not_have_is_a_located_error():
    expected = r"'npu.form' must be one of 'one kernel', 'split-K 2', .*; got \"split\""
    with pytest.raises(CompileError, match=expected) as error:
        compile_module(pinned(MATMUL_GELU, "split"), "ge-lower-to-npu")
    assert error.value.location is not None


SOFTMAX = """func.func @main(%x: tensor<16x32xf16> {ge.name = "x"}) -> (tensor<16x32xf16> {ge.name = "out"}) {
  %y = fused.softmax %x {axis = -1 : i64, npu.form = "split-K 2"} : (tensor<16x32xf16>) -> tensor<16x32xf16>
  func.return %y : tensor<16x32xf16>
}"""


def test_a_form_pinned_on_an_op_no_pass_splits_is_a_located_error():
    expected = r"'fused.softmax' op 'npu.form' = \"split-K 2\" pins a form, but no pass chooses the form of 'fused.softmax' \(fused-split-matmul-norm: fused.matmul_add_layer_norm, fused.matmul_add_rms_norm; fused-split-k: fused.matmul_bias_act; fused-split-k-conv: ge.conv2d, fused.conv2d_bias_act; fused-depthwise-mean: ge.global_avg_pool, ge.reduce_mean\)"
    with pytest.raises(CompileError, match=expected) as error:
        compile_module(parse(SOFTMAX), "ge-lower-to-npu")
    assert error.value.location is not None


@pytest.mark.parametrize("text, form, chooser", [(MATMUL_GELU, "split-K 2", "fused-split-k"), (MATMUL_NORM, "split", "fused-split-matmul-norm")])
def test_a_pinned_form_the_pipeline_never_applies_is_a_located_error(text, form, chooser):
    """ge-to-npu alone lowers the op as it stands: a pin to another form would be
    silently dropped."""
    with pytest.raises(CompileError, match=f"'npu.form' = \"{form}\" was not applied: run {chooser} before ge-to-npu") as error:
        compile_module(pinned(text, form), "ge-to-npu")
    assert error.value.location is not None


def test_the_whole_form_pinned_lowers_without_the_form_passes():
    check_lowering(pinned(MATMUL_GELU, "one kernel"), "ascend910", pipeline="ge-to-npu,npu-insert-sync,npu-plan-local-memory")


def tuned(module, pipeline: str, capsys):
    """Compile with the tuner's debug notes; (statistics, the module's time as
    given, every trial's (form, time))."""
    with instrumented(Instrumentation()) as run:
        compile_module(module, pipeline)
    notes = [line for line in capsys.readouterr().err.splitlines() if line.startswith("[fused-tune-forms]")]
    given = [int(m.group(1)) for line in notes if (m := re.search(r"as given: (\d+) cycles", line))]
    trials = [
        (m.group(1), int(m.group(2))) for line in notes if (m := re.search(r"npu.form = '(.+)': (\d+) cycles", line))
    ]
    return run.statistics.get("fused-tune-forms", {}), given, trials


@pytest.mark.parametrize("text", [MATMUL_GELU, MATMUL_NORM])
def test_the_tuned_module_takes_the_fastest_time_simulated(capsys, text):
    """The op's `top` best estimated forms are simulated; the module compiled after
    the tuner is the fastest of them, and computes the reference's numbers."""
    module = parse(text)
    stats, given, trials = tuned(module, "fused-tune-forms{top=3 debug=true}", capsys)
    assert stats["ops tuned"] == 1 and len(given) == 1 and len(trials) == 2
    assert stats["simulations"] == 3
    assert stats["forms changed"] == (min(t for _, t in trials) < given[0])
    check_lowering(module, "ascend910", pipeline="ge-lower-to-npu")
    assert simulated_cycles(module, text) == min([*given, *(cycles for _, cycles in trials)])


def test_tuning_finds_a_faster_form_than_the_estimate():
    untuned = parse(MATMUL_GELU)
    compile_module(untuned, "ge-lower-to-npu")
    module = parse(MATMUL_GELU)
    compile_module(module, "fused-tune-forms{top=2},ge-lower-to-npu")
    assert simulated_cycles(module, MATMUL_GELU) < simulated_cycles(untuned, MATMUL_GELU)


def test_the_tuner_starts_from_a_pinned_form(capsys):
    """A form pinned by hand is the tuner's starting point: the as-given time is
    that form's, and the tuner tries the estimate's best ones instead."""
    module = pinned(MATMUL_GELU, "split-K 2")
    _, given, trials = tuned(module, "fused-tune-forms{top=2 debug=true}", capsys)
    assert [form for form, _ in trials] == ["split-K 8", "split-K 4"]
    by_hand = pinned(MATMUL_GELU, "split-K 2")
    compile_module(by_hand, "ge-lower-to-npu")
    assert given == [simulated_cycles(by_hand, MATMUL_GELU)]


def test_nothing_to_tune_simulates_nothing(capsys):
    text = """func.func @main(%x: tensor<64x64xf16> {ge.name = "x"}) -> (tensor<64x64xf16> {ge.name = "out"}) {
  %y = ge.relu %x : (tensor<64x64xf16>) -> tensor<64x64xf16>
  func.return %y : tensor<64x64xf16>
}"""
    stats, given, trials = tuned(parse(text), "ge-graph-opt,ge-fuse,fused-tune-forms{debug=true}", capsys)
    assert stats == {"ops tuned": 0} and not given and not trials


def test_top_must_be_positive():
    with pytest.raises(CompileError, match="top must be at least 1"):
        compile_module(parse(MATMUL_GELU), "fused-tune-forms{top=0}")


@pytest.mark.parametrize("tuner", ["fused-tune-forms", "fused-tune-tilings"])
def test_tuning_a_module_already_lowered_is_an_error(tuner):
    module = parse(MATMUL_GELU)
    compile_module(module, "ge-lower-to-npu")
    expected = f"{tuner}: the module is already lowered to npu kernels; tune it before ge-to-npu"
    with pytest.raises(CompileError, match=expected):
        compile_module(module, tuner)
