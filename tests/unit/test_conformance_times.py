"""`bench/onnx_conformance.py --times` (issue 35: no single ONNX node test above
5 s): every case is timed, the slowest and those above --slow-s are listed, then
the seconds per op."""

from __future__ import annotations

import importlib.util
import os

import pytest

pytest.importorskip("onnx")


def _bench():
    spec = importlib.util.spec_from_file_location(
        "conformance_bench", os.path.join(os.path.dirname(__file__), "..", "..", "bench", "onnx_conformance.py"))
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench


def test_times_lists_every_case_above_the_threshold_and_the_seconds_per_op(capsys):
    assert _bench().main(["--op", "Relu", "--op", "Softmax", "--times", "--slow-s", "0", "--slowest", "1"]) == 0
    out = capsys.readouterr().out
    table = out.split("\ncase ", 1)[1]
    rows = [line for line in table.splitlines()[1:] if line.startswith("test_")]
    assert len(rows) == 8  # every case is above 0 s: all listed, not only the slowest one
    seconds = [float(line.split()[-2]) for line in rows]
    assert seconds == sorted(seconds, reverse=True)
    assert "8 of 8 cases above 0 CPU s" in table
    assert "CPU s per op (cases, slowest case): " in table and "Softmax " in table and "(7, " in table


def test_clock_laps_are_each_cases_own_time():
    bench = _bench()
    clock = bench.CaseClock()
    clock.lap(type("R", (), {"name": "a", "op_type": "X", "status": "passed"})())
    sum(range(2_000_000))  # some CPU time for the second case only
    clock.lap(type("R", (), {"name": "b", "op_type": "X", "status": "passed"})())
    (first, _, a), (second, _, b) = clock.laps
    assert (a.name, b.name) == ("a", "b") and second > first
    assert clock.table(1e9, 1).splitlines()[1].startswith("b ")
