"""`ge-prof` and the op-type profile: every task has the op type its kernel was
lowered from, the table adds up to the tasks, the CSV has a row per task."""

from __future__ import annotations

import csv
import os

import pytest

from gecomp.dialects.context import make_context
from gecomp.core.parsing import load_module
from gecomp.core.passes import parse_pass_pipeline, run_pipeline
from gecomp.simulator.npu.profile import OP_SUMMARY_COLUMNS, by_op_type, core_type, tasks, write_op_summary
from gecomp.simulator.run import execute
from gecomp.core.signature import input_specs, main_function, random_inputs
from gecomp.tools import ge_prof

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MLP = os.path.join(ROOT, "examples", "mlp.mlir")


def _simulated(pipeline: str):
    module = load_module(make_context(), MLP)
    inputs = random_inputs(input_specs(main_function(module)), 0)
    run_pipeline(parse_pass_pipeline(pipeline), make_context(), module)
    return module, execute(module, inputs, hw="tiny").report


@pytest.fixture(scope="module")
def eager():
    return _simulated("ge-compile{fuse=false reuse=false streams=1 hw=tiny}")


@pytest.fixture(scope="module")
def graph():
    return _simulated("ge-compile{hw=tiny}")


def test_eager_tasks_name_the_ge_op_of_each_kernel(eager):
    module, report = eager
    found = tasks(report)
    assert len(found) == len(report.kernels)
    kinds = {t.op_type for t in found}
    assert "ge.matmul" in kinds and all(k.startswith(("ge.", "copy")) for k in kinds)
    matmuls = [t for t in found if t.op_type == "ge.matmul"]
    assert all(t.core_type in ("AI_CORE", "MIX_AIC", "MIX_AIV") and t.cube_busy > 0 for t in matmuls)
    assert all(t.cube_busy == 0 and t.core_type == "AI_VECTOR_CORE" for t in found if t.op_type == "ge.relu")


def test_merged_kernels_give_a_task_per_phase(graph):
    module, report = graph
    found = tasks(report)
    phases = sum(len(k.phases) or 1 for k in report.kernels)
    assert len(found) == phases and "unknown" not in {t.op_type for t in found}
    assert any(t.op_type.startswith("fused.") for t in found)


def test_the_op_type_table_adds_up(eager):
    _, report = eager
    rows = by_op_type(tasks(report))
    assert sum(r.count for r in rows) == len(report.kernels)
    assert sum(r.cycles for r in rows) == sum(k.cycles for k in report.kernels)
    assert [r.cycles for r in rows] == sorted((r.cycles for r in rows), reverse=True)


def test_core_types_follow_the_busy_pipes():
    assert core_type(10, 0) == "AI_CORE"
    assert core_type(0, 10) == core_type(0, 0) == "AI_VECTOR_CORE"
    assert core_type(10, 5) == "MIX_AIC" and core_type(5, 10) == "MIX_AIV"


def test_op_summary_has_a_row_per_task(tmp_path, graph):
    _, report = graph
    path = tmp_path / "op_summary.csv"
    write_op_summary(str(path), report)
    rows = list(csv.reader(open(path)))
    assert tuple(rows[0]) == OP_SUMMARY_COLUMNS and len(rows) - 1 == len(tasks(report))


def test_ge_prof_prints_both_modes_and_writes_csv(tmp_path, capsys):
    assert ge_prof.main([MLP, "--hw", "tiny", "--csv", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "eager count" in out and "graph count" in out and "graph vs eager:" in out
    assert sorted(os.listdir(tmp_path)) == ["op_summary_eager.csv", "op_summary_graph.csv"]


def test_ge_prof_refuses_a_pipeline_that_does_not_reach_the_npu(capsys):
    assert ge_prof.main([MLP, "--hw", "tiny", "--graph", "ge-graph-opt"]) == 1
    assert "does not reach the npu level" in capsys.readouterr().err
