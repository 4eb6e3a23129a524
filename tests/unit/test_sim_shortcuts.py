"""The simulator's shortcuts change nothing but its speed: the default simulation
and the full one (`simulate(..., shortcuts=False)`, `ge-sim --exact`) give the
same cycles, the same report (every kernel's busy cycles, bytes, HBM / L2 split,
phases) and bitwise the same outputs, and a racy kernel the same error.

Checked on random kernels (every pipe, loops, ifs, GM runs contiguous and
strided, with and without the L2 of `ascend910`), on the examples that compile in
seconds, and with GECOMP_SIM_SLOW=1 on every example and a slice of the model
set (`python bench/sim_speed.py --models` runs the whole set)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from gecomp.dialects.context import make_context
from gecomp.core.diagnostics import CompileError
from gecomp.core.parsing import load_module
from gecomp.core.passes import parse_pass_pipeline, run_pipeline
from gecomp.simulator.npu import simulate
from gecomp.core.signature import input_specs, main_function, random_inputs
from npu_pass_testing import compiled, inputs_for
from npu_random_kernels import random_kernel

EXAMPLES = sorted(Path(__file__).resolve().parents[2].joinpath("examples").glob("*.mlir"))
FAST_EXAMPLES = {"mlp.mlir", "resnet_block.mlir", "wide_deep.mlir"}  # compile in seconds
MODELS = ["bert.torchscript", "distilbert.dynamo"]
SLOW = bool(os.environ.get("GECOMP_SIM_SLOW"))


def both_ways(module, inputs, hw: str):
    """(default, full) simulations of `module`."""
    return simulate(module, inputs, hw=hw), simulate(module, inputs, hw=hw, shortcuts=False)


def assert_identical(fast, full) -> None:
    assert fast.report.total_cycles == full.report.total_cycles
    assert fast.report.json_text() == full.report.json_text()
    assert len(fast.outputs) == len(full.outputs)
    for a, b in zip(fast.outputs, full.outputs):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert a.tobytes() == b.tobytes()


@pytest.mark.parametrize("hw", ["tiny", "ascend910"])
@pytest.mark.parametrize("seed", range(8))
def test_random_kernels_same_cycles_report_and_outputs(seed, hw):
    module = compiled(random_kernel(seed, False), f"npu-insert-sync{{hw={hw}}},npu-plan-local-memory{{hw={hw}}}")
    assert_identical(*both_ways(module, inputs_for(module), hw))


@pytest.mark.parametrize("seed", range(6))
def test_racy_kernels_fail_with_the_same_error(seed):
    """Without npu-insert-sync the random kernels race: the same race is reported
    (the earliest made of the accesses the racing one meets), or none in both."""
    module = compiled(random_kernel(seed, False), "npu-plan-local-memory{hw=tiny}")
    inputs = inputs_for(module)
    messages = []
    for shortcuts in (True, False):
        try:
            simulate(module, inputs, hw="tiny", shortcuts=shortcuts)
            messages.append(None)
        except CompileError as e:
            messages.append(str(e))
    assert messages[0] == messages[1]


def test_some_random_kernel_races_without_sync():
    """The race test above is not vacuous: unsynchronised kernels do race."""
    failures = 0
    for seed in range(6):
        module = compiled(random_kernel(seed, False), "npu-plan-local-memory{hw=tiny}")
        try:
            simulate(module, inputs_for(module), hw="tiny")
        except CompileError as e:
            failures += "race" in str(e)
    assert failures > 0


def _compiled_example(path: Path):
    module = load_module(make_context(), str(path))
    run_pipeline(parse_pass_pipeline("ge-compile{hw=ascend910}"), make_context(), module)
    return module


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_examples_same_cycles_and_outputs(path):
    if path.name not in FAST_EXAMPLES and not SLOW:
        pytest.skip("compiles for minutes on a busy machine: GECOMP_SIM_SLOW=1 runs it")
    module = _compiled_example(path)
    inputs = random_inputs(input_specs(main_function(module)), 0)
    assert_identical(*both_ways(module, inputs, "ascend910"))


@pytest.mark.parametrize("name", MODELS)
def test_model_slice_same_cycles_and_outputs(name):
    if not SLOW:
        pytest.skip("GECOMP_SIM_SLOW=1 runs the model slice")
    pytest.importorskip("onnx")
    from gecomp.bench import models
    from gecomp.bench.models import run

    module = run.import_proto(models.load(name))
    run.compile_module(module)
    inputs = [np.asarray(x) for x in models.inputs(name)]
    assert_identical(*both_ways(module, inputs, "ascend910"))


@pytest.mark.parametrize("seed", range(4))
def test_skipping_the_race_check_keeps_cycles_and_outputs_and_says_so(seed):
    """`ge-sim --no-race-check` (check_races=False) is not a shortcut with the same
    guarantees: it is an explicit option, the report records that no race was
    checked, and everything else is what the checked run gives."""
    module = compiled(random_kernel(seed, False), "npu-insert-sync{hw=tiny},npu-plan-local-memory{hw=tiny}")
    inputs = inputs_for(module)
    checked = simulate(module, inputs, hw="tiny")
    unchecked = simulate(module, inputs, hw="tiny", check_races=False)
    assert checked.report.races_checked and not unchecked.report.races_checked
    unchecked.report.races_checked = True
    assert_identical(unchecked, checked)
