"""What the simulator reports: `--report` text, `--json`, `--trace`, through ge-sim."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from gecomp.simulator.hardware import load_preset
from gecomp.tools.ge_sim import main as ge_sim
from npu_testing import run

LIT = Path(__file__).resolve().parents[1] / "lit" / "npu"
STREAMS = LIT / "streams.mlir"


def test_json_has_the_contract_keys_and_consistent_numbers():
    report = run(STREAMS.read_text(), hw="tiny").report
    doc = report.as_json()
    for key in ("total_cycles", "time_us", "freq_ghz", "hw", "pipes", "gm_bytes_read", "gm_bytes_written",
                "peak_gm_bytes", "kernels", "roofline_cycles"):
        assert key in doc, key
    assert doc["hw"] == "tiny" and doc["freq_ghz"] == 1.0
    assert doc["time_us"] == doc["total_cycles"] / 1000
    assert set(doc["pipes"]) == {"S", "MTE1", "MTE2", "MTE3", "M", "V", "FIX"}
    assert doc["pipes"] == {p: sum(k["pipes"][p] for k in doc["kernels"]) for p in doc["pipes"]}
    assert [k["name"] for k in doc["kernels"]] == ["scale", "shift", "add"]
    assert doc["gm_bytes_read"] == sum(k["gm_bytes_read"] for k in doc["kernels"]) == 4 * 2048
    assert doc["peak_gm_bytes"] == 4096 + 2 * 2048 and doc["arena_bytes"] == 4096
    assert doc["roofline_cycles"] == max(
        doc["roofline"]["cube_cycles"], doc["roofline"]["vector_cycles"], doc["roofline"]["memory_cycles"]
    )
    json.dumps(doc)


def test_text_report_sections():
    text = str(run(STREAMS.read_text(), hw="tiny").report)
    lines = text.splitlines()
    assert lines[0] == "npu simulation on tiny: coupled, 2 cores at 1 GHz"
    assert lines[1].startswith("total: ") and lines[2].startswith("roofline: ")
    assert any(line.split()[:1] == ["MTE2"] for line in lines)
    assert any(line.startswith("gm_to_ub") for line in lines)
    header = next(line for line in lines if line.startswith("kernel"))
    assert header.split() == ["kernel", "stream", "blocks", "start", "cycles", "time_us", "cube", "vec", "mte1",
                              "mte2", "mte3", "fix", "scalar", "gm_read", "gm_written"]


def test_chrome_trace_has_a_track_per_core_and_pipe_and_per_stream():
    report = run(STREAMS.read_text(), hw="tiny", trace=True).report
    trace = report.chrome_trace()
    names = {(e["pid"], e.get("tid")): e["args"]["name"] for e in trace["traceEvents"] if e["ph"] == "M"}
    assert names[(0, None)] == "core 0" and names[(0, 2)] == "MTE2" and names[(1, 5)] == "V"
    assert names[(2, None)] == "streams" and names[(2, 1)] == "stream 1"
    slices = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert {e["name"] for e in slices if e["pid"] == 2} == {"@scale", "@shift", "@add"}
    assert {"npu.copy", "npu.vadd"} <= {e["name"] for e in slices}
    assert all(e["dur"] >= 0 and e["ts"] >= 0 for e in slices)
    assert max(e["ts"] + e["dur"] for e in slices) <= report.time_us + 1e-9


def _counters(report) -> dict[str, list[dict]]:
    by_name: dict[str, list[dict]] = {}
    for e in report.chrome_trace()["traceEvents"]:
        if e["ph"] == "C":
            by_name.setdefault(e["name"], []).append(e)
    return by_name


def test_trace_draws_the_hbm_bandwidth_in_use_per_window():
    report = run(STREAMS.read_text(), hw="tiny", trace=True).report
    timeline = report.memory_timeline
    assert sum(hbm for _, _, hbm, _ in timeline) == report.stat("hbm_bytes") == 4 * 2048 + 3 * 2048
    counters = _counters(report)
    assert set(counters) == {"HBM bandwidth"}  # tiny has no L2
    hbm = counters["HBM bandwidth"]
    assert len(hbm) == len(timeline) and hbm[0]["pid"] == hbm[-1]["pid"] == 3  # after the cores and the streams
    rate = load_preset("tiny").hbm_bytes_per_cycle
    for event, (start, cycles, moved, _) in zip(hbm, timeline):
        assert event["ts"] == report.hw.cycles_to_us(start)
        assert event["args"]["% in use"] == round(100 * moved / (cycles * rate), 1) <= 100
    assert any(e["args"]["% in use"] > 0 for e in hbm) and any(e["args"]["% in use"] == 0 for e in hbm)
    assert [e["ts"] for e in hbm] == sorted(e["ts"] for e in hbm)


def test_trace_draws_the_l2_bandwidth_of_a_preset_with_one():
    report = run((LIT / "matmul_256.mlir").read_text(), hw="ascend910", trace=True).report
    counters = _counters(report)
    assert set(counters) == {"HBM bandwidth", "L2 bandwidth"}
    assert sum(l2 for *_, l2 in report.memory_timeline) == report.stat("l2_hit_bytes") > 0


def test_no_memory_counters_without_trace():
    report = run(STREAMS.read_text(), hw="tiny").report
    assert report.memory_timeline is None and not _counters(report)


def test_ge_sim_writes_outputs_json_and_trace(tmp_path, capsys):
    out, doc, trace = tmp_path / "out.npz", tmp_path / "r.json", tmp_path / "t.json"
    code = ge_sim([str(STREAMS), "--hw", "tiny", "--seed", "2", "--report", "--outputs", str(out),
                   "--json", str(doc), "--trace", str(trace)])
    assert code == 0
    printed = capsys.readouterr().out
    assert printed.startswith("z: tensor<1024xf16> min=") and "npu simulation on tiny" in printed
    assert json.loads(doc.read_text())["hw"] == "tiny"
    assert json.loads(trace.read_text())["traceEvents"]
    x = np.load(out)["z"]
    inputs = tmp_path / "in.npz"
    np.savez(inputs, x=np.ones(1024, dtype=np.float16))
    assert ge_sim([str(STREAMS), "--hw", "tiny", "--inputs", str(inputs), "--outputs", str(out)]) == 0
    np.testing.assert_array_equal(np.load(out)["z"], np.full(1024, 4.0, dtype=np.float16))
    assert x.shape == (1024,)


def test_ge_sim_errors_are_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.mlir"
    bad.write_text(STREAMS.read_text().replace("{offset = 2048}", "{offset = 2047}"))
    assert ge_sim([str(bad), "--hw", "tiny"]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "misaligned: offset 2047 is not a multiple of the 32-byte GM alignment" in err
    assert ge_sim([str(STREAMS), "--hw", "no-such-preset"]) == 1
    assert "unknown hardware preset 'no-such-preset'" in capsys.readouterr().err


def test_launch_overhead_comes_from_the_preset():
    report = run(STREAMS.read_text(), hw="ascend910").report
    assert report.kernels[0].start == load_preset("ascend910").kernel_launch_cycles
