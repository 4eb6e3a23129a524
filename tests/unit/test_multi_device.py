"""The multi-device simulator: communication hidden by independent compute is not
exposed, communication the next compute waits for is, a pipeline's stages
overlap across micro-batches, and the trace has a process per device."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gecomp.dialects.context import make_context
from gecomp.core.parsing import parse_module
from gecomp.core.passes import parse_pass_pipeline, run_pipeline
from gecomp.lowering.compute_time import ComputeTimer
from gecomp.simulator.collectives import collective_cost, load_interconnect
from gecomp.simulator.hardware import load_preset
from gecomp.lowering.plan.device_streams import device_tasks, segment_module, simulate_devices
from gecomp.simulator.multi_device import exposed

T = "tensor<128x128xf16>"


def two_devices(body: str) -> str:
    functions = []
    for d in range(2):
        functions.append(f"""  func.func @device{d}(%x: {T}, %w: {T}) -> {T} attributes {{ge.device = {d} : i64}} {{
{body}
  }}""")
    return "builtin.module attributes {ge.devices = 2 : i64} {\n" + "\n".join(functions) + "\n}"


HIDDEN = f"""    %r = ge.all_reduce %x {{devices = 2}} : ({T}) -> {T}
    %a = ge.matmul %w, %w : ({T}, {T}) -> {T}
    %b = ge.matmul %a, %w : ({T}, {T}) -> {T}
    %c = ge.matmul %b, %w : ({T}, {T}) -> {T}
    %s = ge.add %c, %r : ({T}, {T}) -> {T}
    func.return %s : {T}"""

EXPOSED = f"""    %a = ge.matmul %w, %w : ({T}, {T}) -> {T}
    %r = ge.all_reduce %a {{devices = 2}} : ({T}) -> {T}
    %s = ge.add %r, %x : ({T}, {T}) -> {T}
    func.return %s : {T}"""


TIMER = ComputeTimer(load_preset("tiny"))


def simulate(text: str):
    return simulate_devices(parse_module(make_context(), text, "<test>"), TIMER, hw="tiny")


def test_a_collective_overlapped_by_independent_compute_is_not_exposed():
    report = simulate(two_devices(HIDDEN))
    link = load_interconnect(load_preset("tiny"))
    expected = collective_cost("all_reduce", (0, 1), 128 * 128 * 2, link).time_us
    for s in report.summaries:
        assert s.comm_us == pytest.approx(expected)
        assert s.exposed_comm_us == 0.0
        assert s.time_us == pytest.approx(s.compute_us)


def test_a_collective_the_next_compute_waits_for_is_exposed():
    report = simulate(two_devices(EXPOSED))
    for s in report.summaries:
        assert s.exposed_comm_us == pytest.approx(s.comm_us)
        assert s.time_us == pytest.approx(s.compute_us + s.comm_us)


def test_runs_are_cut_where_a_collective_result_is_needed():
    module = parse_module(make_context(), two_devices(HIDDEN), "<test>")
    tasks = device_tasks(next(iter(module.ops)), 0)
    assert [(t.kind, [op.name for op in t.ops]) for t in tasks] == [
        ("comm", ["ge.all_reduce"]),
        ("compute", ["ge.matmul", "ge.matmul", "ge.matmul"]),
        ("compute", ["ge.add"]),
    ]


def test_exposed_is_communication_minus_compute():
    assert exposed([(0, 10)], [(2, 5), (4, 8)]) == pytest.approx(4)
    assert exposed([(0, 4), (6, 9)], []) == pytest.approx(7)


MLP = f"""func.func @main(%x: tensor<64x128xf16>) -> tensor<64x128xf16> {{
  %w1 = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.05> : {T}
  %h = ge.matmul %x, %w1 : (tensor<64x128xf16>, {T}) -> tensor<64x128xf16>
  %a = ge.gelu %h : (tensor<64x128xf16>) -> tensor<64x128xf16>
  %w2 = ge.const #ge.random<normal, seed = 2, mean = 0.0, std = 0.05> : {T}
  %y = ge.matmul %a, %w2 : (tensor<64x128xf16>, {T}) -> tensor<64x128xf16>
  %z = ge.gelu %y : (tensor<64x128xf16>) -> tensor<64x128xf16>
  func.return %z : tensor<64x128xf16>
}}"""


def test_pipeline_stages_overlap_across_micro_batches(tmp_path: Path):
    module = parse_module(make_context(), MLP, "<test>")
    run_pipeline(parse_pass_pipeline("ge-partition{devices=2 strategy=pp micro-batches=4 hw=tiny}"), make_context(), module)
    report = simulate_devices(module, TIMER, hw="tiny")
    stage0, stage1 = report.summaries
    # Stage 1 starts on micro-batch 0 before stage 0 has finished micro-batch 3.
    first_of_stage1 = min(t.start for t in report.tasks if t.device == 1 and t.kind == "compute")
    assert first_of_stage1 < stage0.time_us
    assert report.time_us < stage0.compute_us + stage1.compute_us
    trace = json.loads(report.trace_text())
    processes = {e["args"]["name"] for e in trace["traceEvents"] if e.get("name") == "process_name"}
    assert processes == {"device 0", "device 1"}
    assert json.loads(report.json_text())["devices"] == 2


BUCKETED = f"""    %a = ge.matmul %w, %w : ({T}, {T}) -> {T}
    %r1 = ge.all_reduce %a {{devices = 2}} : ({T}) -> {T}
    %r2 = ge.all_reduce %x {{devices = 2}} : ({T}) -> {T}
    %s = ge.add %r1, %r2 : ({T}, {T}) -> {T}
    func.return %s : {T}"""


def test_collectives_in_a_row_are_bucketed_into_one_task():
    link = load_interconnect(load_preset("tiny"))
    one = collective_cost("all_reduce", (0, 1), 128 * 128 * 2, link).time_us
    both = collective_cost("all_reduce", (0, 1), 2 * 128 * 128 * 2, link).time_us
    module = parse_module(make_context(), two_devices(BUCKETED), "<test>")
    report = simulate_devices(module, TIMER, hw="tiny")
    comms = [t for t in report.tasks if t.device == 0 and t.kind == "comm"]
    assert [t.name for t in comms] == ["all_reduce x2"]
    assert report.summaries[0].comm_us == pytest.approx(both)
    assert both < 2 * one  # one set of latencies
    unbucketed = simulate_devices(parse_module(make_context(), two_devices(BUCKETED), "<test>"), TIMER, hw="tiny", bucket_bytes=0)
    assert unbucketed.summaries[0].comm_us == pytest.approx(2 * one)


def dense(shape: tuple[int, int], offset: float) -> str:
    values = ", ".join(f"[{', '.join(f'{offset + 0.01 * (i + j):.2f}' for j in range(shape[1]))}]" for i in range(shape[0]))
    return f"dense<[{values}]>"


SLICED_WEIGHTS = """    %wq = ge.const {q} : tensor<32x32xf16>
    %wk = ge.const {k} : tensor<32x32xf16>
    %q = ge.matmul %x, %wq : (tensor<32x32xf16>, tensor<32x32xf16>) -> tensor<32x32xf16>
    %k = ge.matmul %x, %wk : (tensor<32x32xf16>, tensor<32x32xf16>) -> tensor<32x32xf16>
    %s = ge.add %q, %k : (tensor<32x32xf16>, tensor<32x32xf16>) -> tensor<32x32xf16>"""


def test_a_run_is_timed_with_as_many_weights_as_it_has():
    """Weight slices (dense constants) are timed as random weights: two of one type
    stay two, so the run keeps both products (one seed for all let CSE merge them)."""
    body = SLICED_WEIGHTS.format(q=dense((32, 32), 0.1), k=dense((32, 32), -0.2))
    module = parse_module(make_context(), f"""builtin.module attributes {{ge.devices = 2 : i64}} {{
  func.func @device0(%x: tensor<32x32xf16>) -> tensor<32x32xf16> attributes {{ge.device = 0 : i64}} {{
{body}
    %r = ge.all_reduce %s {{devices = 2}} : (tensor<32x32xf16>) -> tensor<32x32xf16>
    func.return %r : tensor<32x32xf16>
  }}
}}""", "<test>")
    (run, _) = device_tasks(next(iter(module.ops)), 0)
    segment = segment_module(run)
    run_pipeline(parse_pass_pipeline("ge-graph-opt"), make_context(), segment)
    products = [op for op in segment.walk() if op.name in ("ge.matmul", "fused.multi_matmul_bias_act")]
    constants = {str(op.value) for op in segment.walk() if op.name == "ge.const"}
    assert len(products) == 2 and len(constants) == 2


ROWS = """    %a = ge.matmul %x, %w : (tensor<128x128xf16>, tensor<128x128xf16>) -> tensor<128x128xf16>
    %r = ge.all_reduce %a {devices = 2} : (tensor<128x128xf16>) -> tensor<128x128xf16>
    %top = ge.slice %r {starts = [0, 0], ends = [64, 128], steps = [1, 1]} : (tensor<128x128xf16>) -> tensor<64x128xf16>
    %x_top = ge.slice %x {starts = [0, 0], ends = [64, 128], steps = [1, 1]} : (tensor<128x128xf16>) -> tensor<64x128xf16>
    %cols = ge.slice %r {starts = [0, 0], ends = [128, 64], steps = [1, 1]} : (tensor<128x128xf16>) -> tensor<128x64xf16>
    %s = ge.add %top, %x_top : (tensor<64x128xf16>, tensor<64x128xf16>) -> tensor<64x128xf16>
    %c = ge.matmul %cols, %s : (tensor<128x64xf16>, tensor<64x128xf16>) -> tensor<128x128xf16>
    func.return %c : tensor<128x128xf16>"""


def test_a_block_of_rows_another_task_wrote_is_a_view():
    """Rows of a collective's result or of an input are read in place (no kernel);
    a column slice is not contiguous and stays an op of the run."""
    module = parse_module(make_context(), two_devices(ROWS), "<test>")
    tasks = device_tasks(next(iter(module.ops)), 0)
    assert [(t.kind, [op.name for op in t.ops]) for t in tasks] == [
        ("compute", ["ge.matmul"]),
        ("comm", ["ge.all_reduce"]),
        ("compute", ["ge.slice", "ge.add", "ge.matmul"]),
    ]
    segment = segment_module(tasks[2])
    main = next(iter(segment.ops))
    assert [str(t) for t in main.function_type.inputs] == ["tensor<128x128xf16>", "tensor<64x128xf16>", "tensor<64x128xf16>"]
    assert tasks[2].needs == [tasks[1]]
