"""Accuracy localisation: every kernel output is compared with the reference value
of the same tensor, and a kernel computing wrong numbers is the first reported."""

from __future__ import annotations

import os

import numpy as np
import pytest

from gecomp.dialects.context import make_context
from gecomp.core.parsing import load_module
from gecomp.core.passes import Instrumentation, instrumented, parse_pass_pipeline, run_pipeline
from gecomp.dialects import npu
from gecomp.dialects.ge.const import RandomAttr
from gecomp.simulator.npu.localize import (
    MISMATCH,
    NO_REFERENCE,
    OK,
    compare_each,
    first_mismatch,
    named_types,
    reference_by_name,
    summary,
)
from gecomp.simulator.run import module_level
from gecomp.core.signature import input_specs, main_function, random_inputs
from gecomp.tools import ge_sim

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MLP = os.path.join(ROOT, "examples", "mlp.mlir")
EAGER_TINY = "ge-compile{fuse=false hw=tiny}"


def _localised(pipeline: str, sabotage=None, path: str = MLP, floor=None):
    source = load_module(make_context(), path)
    compiled = source.clone()
    types: dict = {}
    instrumentation = Instrumentation()
    instrumentation.after_pass.append(lambda p, m: module_level(m) != "npu" and types.update(named_types(m)))
    with instrumented(instrumentation):
        run_pipeline(parse_pass_pipeline(pipeline), make_context(), compiled)
    if sabotage is not None:
        sabotage(compiled)
    inputs = random_inputs(input_specs(main_function(source)), 0)
    if floor is not None:
        floor = floor(source, compiled)
    return compare_each(compiled, types, reference_by_name(source, inputs), inputs, hw="tiny", floor=floor)


def test_a_precision_mode_is_compared_at_the_precision_it_compiled(tmp_path):
    """An f32 MLP compiled with force_fp16 keeps f32 buffers computed in f16: at
    their own f32 tolerance they differ, at the compiled precision (the floor
    ge-sim --compare-each passes) they are within it."""
    from gecomp.simulator.compare import compiled_floor

    f32_mlp = tmp_path / "mlp32.mlir"
    with open(MLP) as f:
        f32_mlp.write_text(f.read().replace("f16", "f32"))
    pipeline = "ge-compile{hw=tiny reuse=false precision=force_fp16}"
    at_f32 = _localised(pipeline, path=str(f32_mlp))
    assert first_mismatch(at_f32) is not None
    at_compiled = _localised(pipeline, path=str(f32_mlp), floor=compiled_floor)
    assert first_mismatch(at_compiled) is None
    assert any(o.status == OK for o in at_compiled)


def test_a_correct_compile_is_within_tolerance_everywhere():
    outputs = _localised(EAGER_TINY)
    assert first_mismatch(outputs) is None
    compared = [o for o in outputs if o.status == OK]
    assert {o.compared_with for o in compared} >= {"h", "h_bias", "h_act", "y_bias", "y_act"}
    assert "all within tolerance" in summary(outputs)


def _wrong_first_bias(module):
    """A miscompile: the first bias constant replaced by other numbers."""
    constants = [op for op in module.walk() if isinstance(op, npu.GmConstantOp)]
    bias = next(op for op in constants if op.logical.get_shape() == (2048,))
    bias.properties["value"] = RandomAttr.normal(99, 0.0, 0.5)


def test_the_first_wrong_kernel_is_named_with_its_op():
    outputs = _localised(EAGER_TINY, _wrong_first_bias)
    first = first_mismatch(outputs)
    assert first is not None and first.compared_with == "h_bias" and first.sources == ["ge.bias_add"]
    assert first.location is not None and first.location.line == 8
    before = outputs[: outputs.index(first)]
    assert before and all(o.status in (OK, NO_REFERENCE) for o in before)
    assert any(o.status == OK and o.compared_with == "h" for o in before)


def test_reused_buffers_are_compared_by_the_value_they_hold():
    """With GM reuse an in-place kernel writes into another value's buffer: the
    launch records which value it wrote (npu.writes), so nothing is misattributed."""
    outputs = _localised("ge-compile{fuse=false reuse=true hw=tiny}")
    assert first_mismatch(outputs) is None
    assert sum(o.status == OK for o in outputs) >= 6


def test_ge_sim_compare_each_exit_codes(tmp_path, capsys):
    assert ge_sim.main([MLP, "--pipeline", EAGER_TINY, "--hw", "tiny", "--compare-each", "--dump", str(tmp_path)]) == 0
    assert "all within tolerance" in capsys.readouterr().out
    dumped = sorted(os.listdir(tmp_path))
    assert dumped and set(np.load(tmp_path / dumped[0]).files) == {"actual", "expected"}
    assert ge_sim.main([MLP, "--pipeline", "ge-graph-opt", "--compare-each"]) == 1
    assert "needs a pipeline that reaches the npu level" in capsys.readouterr().err


@pytest.mark.parametrize("status", [MISMATCH])
def test_summary_names_the_first_mismatch(status):
    outputs = _localised(EAGER_TINY, _wrong_first_bias)
    text = summary(outputs)
    assert "first beyond tolerance: launch #" in text and "'h_bias" in text and status.upper() in text
