"""bench/time_to_result.py: a row of one small model of the set, measured in child
processes as the bench measures every model, has sane figures; a child that runs
out of time says so; the table prints."""

import importlib
import os

import pytest

pytest.importorskip("onnxruntime")

SMALL = "bert.torchscript"  # compiles and simulates in seconds (test_model_set.COMPILED)


def _bench():
    return importlib.import_module("gecomp.bench.time_to_result")


def test_row_of_a_small_model_has_sane_figures(tmp_path):
    bench = _bench()
    row = bench.measure_row(SMALL, str(tmp_path), str(tmp_path / "cache"), None, timeout=240)
    cells = row.cells()
    assert cells["note"] == "", cells["note"]
    for key in ("t_import", "t_compile", "t_simulate", "rss", "full_simulate", "full_rss"):
        assert cells[key] is not None and cells[key] >= 0, key
    assert cells["instructions"] > 0 and cells["cycles"] > 0 and cells["ips"] > 0
    assert 30 < cells["rss"] < 4096  # MiB: a Python process with numpy, not a parent's inherited peak
    # outputs checked against onnxruntime, and the full simulation agrees exactly
    assert row.fast.get("outputs") == 1 and 0 <= cells["check"] <= 1
    assert row.full.get("cycles") == row.fast.get("cycles")
    assert row.full.get("digest") == row.fast.get("digest")
    assert not os.path.exists(tmp_path / f"{SMALL}.onnx")  # the prepared files are removed
    table = bench.format_table([row], markdown=True)
    assert table.splitlines()[2].startswith(f"| {SMALL} |")


def test_a_child_out_of_time_names_its_step(tmp_path):
    bench = _bench()
    model, data = bench.prepare(SMALL, str(tmp_path), str(tmp_path / "cache"))
    child = bench.run_child(model, data, None, False, timeout=0.5)  # one CPU second: not even the import
    assert child.note.endswith(("did not finish in 0.5 CPU s", "did not finish in 5 s (wall)")), child.note
    assert child.get("cycles") is None


def test_no_full_skips_the_second_run(tmp_path):
    bench = _bench()
    row = bench.Row("m", bench.Child({"t_import": 1.0}), bench.Child(note="not run (--no-full)"))
    assert row.cells()["full_simulate"] is None and row.cells()["note"] == "full: not run (--no-full)"


def test_unknown_model_is_a_one_line_error(capsys):
    assert _bench().main(["--models", "no_such_model"]) == 1
    assert "unknown model(s) no_such_model" in capsys.readouterr().err


def test_a_finished_row_is_printed_with_its_figures():
    """Each row's figures are printed as it finishes (a run stopped early keeps them)."""
    bench = _bench()
    fast = bench.Child({"cpu_compile": 12.34, "cpu_simulate": 2.0, "instructions": 4000, "cycles": 9000,
                        "rss_mib": 100.0, "digest": "d"})
    base = bench.Child({"cpu_compile": 24.68, "cpu_simulate": 2.0, "rss_mib": 100.0, "cycles": 9100})
    line = bench.progress_line(bench.Row("m", fast, bench.Child(note="not run (--no-full)"), base), "abc")
    assert "compile cpu s 12.3" in line and "instr/cpu s 2,000" in line and "cycles 9,000" in line
    assert "compile x vs" not in line and "compile x 2.00" in line
    assert "baseline 9100 cycles" in line and "full: not run (--no-full)" in line
