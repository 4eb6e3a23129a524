"""A sweep of 24 points on a local Dask cluster: every point a row, the failing
ones with their error, the sweep not stopped by them."""

from __future__ import annotations

import csv

import pytest

pytest.importorskip("dask.distributed")

from gecomp.tools.sweep import Point, grid, run_point, run_sweep, write_csv  # noqa: E402

MODEL = """func.func @main(%x: tensor<32x64xf16>) -> tensor<32x64xf16> {
  %w1 = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.05> : tensor<64x128xf16>
  %h = ge.matmul %x, %w1 : (tensor<32x64xf16>, tensor<64x128xf16>) -> tensor<32x128xf16>
  %a = ge.gelu %h : (tensor<32x128xf16>) -> tensor<32x128xf16>
  %w2 = ge.const #ge.random<normal, seed = 2, mean = 0.0, std = 0.05> : tensor<128x64xf16>
  %y = ge.matmul %a, %w2 : (tensor<32x128xf16>, tensor<128x64xf16>) -> tensor<32x64xf16>
  %p = ge.softmax %y {axis = AXIS} : (tensor<32x64xf16>) -> tensor<32x64xf16>
  func.return %p : tensor<32x64xf16>
}
"""


def test_a_point_runs_and_a_failing_point_is_a_row(tmp_path):
    path = tmp_path / "m.mlir"
    path.write_text(MODEL.replace("AXIS", "0"))
    ok = run_point(Point(str(path), "tiny", "", "tp", 2))
    assert ok.error == "" and ok.time_us > 0 and ok.comm_us > 0
    failed = run_point(Point(str(path), "tiny", "", "dp", 2))
    assert "strategy dp does not apply" in failed.error and failed.time_us is None


def test_sweep_of_24_points_on_a_local_cluster(tmp_path):
    models = []
    for axis in (0, 1):
        path = tmp_path / f"softmax_axis{axis}.mlir"
        path.write_text(MODEL.replace("AXIS", str(axis)))
        models.append(str(path))
    points = grid(models, ["tiny"], ["", "fuse=false", "merge=false", "reuse=false"], ["tp", "dp"], [1, 2])
    assert len(points) == 24
    results, wall = run_sweep(points, workers=2)
    assert [(r.model, r.options, r.strategy, r.devices) for r in results] == [
        (p.model, p.options, p.strategy, p.devices) for p in points
    ]
    failed = [r for r in results if r.error]
    # dp does not apply where the softmax normalises over the batch (axis 0): 4 option sets.
    assert len(failed) == 4 and all("axis0" in r.model and r.strategy == "dp" for r in failed)
    assert all(r.time_us > 0 for r in results if not r.error)
    out = tmp_path / "sweep.csv"
    write_csv(str(out), results)
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 24 and rows[0]["model"] == models[0]
