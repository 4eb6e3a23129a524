"""Pictures of a simulation and of the graph: written as asked, and what they
draw is consistent with the report (every task at or above its bound, every
arena buffer inside the arena)."""

from __future__ import annotations

import os

import pytest

from gecomp.dialects.context import make_context
from gecomp.core.diagnostics import CompileError
from gecomp.core.parsing import load_module
from gecomp.core.passes import parse_pass_pipeline, run_pipeline
from gecomp.simulator.npu import plots
from gecomp.simulator.run import execute
from gecomp.core.signature import input_specs, main_function, random_inputs
from gecomp.tools import ge_opt, ge_sim

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MLP = os.path.join(ROOT, "examples", "mlp.mlir")


@pytest.fixture(scope="module")
def simulated():
    module = load_module(make_context(), MLP)
    inputs = random_inputs(input_specs(main_function(module)), 0)
    run_pipeline(parse_pass_pipeline("ge-compile{hw=tiny}"), make_context(), module)
    return module, execute(module, inputs, hw="tiny", trace=True).report


def test_every_task_takes_at_least_its_bound(simulated):
    _, report = simulated
    bounds = plots.task_bounds(report)
    assert bounds and all(cycles >= bound for _, bound, cycles in bounds)


def test_arena_buffers_lie_inside_the_arena(simulated):
    module, report = simulated
    buffers = plots.buffer_lifetimes(module, "tiny")
    assert buffers and all(0 <= offset and offset + size <= report.arena_bytes for _, offset, size, _, _ in buffers)
    assert all(first <= last for *_, first, last in buffers)


@pytest.mark.parametrize("extension", [".png", ".svg"])
def test_pictures_are_written(tmp_path, simulated, extension):
    pytest.importorskip("matplotlib")
    module, report = simulated
    paths = {name: str(tmp_path / f"{name}{extension}") for name in ("timeline", "roofline", "memory")}
    plots.timeline(report, paths["timeline"])
    plots.roofline(report, paths["roofline"])
    plots.memory_plan(module, report, paths["memory"])
    assert all(os.path.getsize(p) > 1000 for p in paths.values())


def test_a_picture_needs_a_known_extension(tmp_path, simulated):
    pytest.importorskip("matplotlib")
    _, report = simulated
    with pytest.raises(CompileError, match=r"written as .png or .svg"):
        plots.roofline(report, str(tmp_path / "r.jpg"))


def test_ge_sim_draws_and_refuses_a_graph_level_module(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    path = str(tmp_path / "t.png")
    assert ge_sim.main([MLP, "--pipeline", "ge-compile{hw=tiny}", "--hw", "tiny", "--plot", path]) == 0
    assert os.path.getsize(path) > 1000
    assert ge_sim.main([MLP, "--plot-roofline", path]) == 1
    assert "need an npu-level module" in capsys.readouterr().err


def test_the_graph_before_and_after_fusion(tmp_path):
    before, after = str(tmp_path / "before.dot"), str(tmp_path / "after.dot")
    assert ge_opt.main([MLP, "-p", "ge-graph-opt", "--graph", before, "-o", str(tmp_path / "a.mlir")]) == 0
    assert ge_opt.main([MLP, "-p", "ge-graph-opt,ge-fuse", "--graph", after, "-o", str(tmp_path / "b.mlir")]) == 0
    before_text, after_text = open(before).read(), open(after).read()
    assert before_text.startswith("digraph ge {") and "ge.matmul" in before_text
    assert "fused.matmul_bias_act" in after_text and after_text.count("[label=") < before_text.count("[label=")
