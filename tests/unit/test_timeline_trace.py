"""The timeline picture draws what the Perfetto trace records: `ge-sim --trace
t.json --plot t.svg` on a small eager module, the bars of the figure (read back
from matplotlib's artists: a rectangle per pipe busy span, a row per core x
pipe, a shaded span and a label per launch) against the trace's events of the
same run."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from gecomp.simulator.hardware import load_preset  # noqa: E402
from gecomp.simulator.npu import plots  # noqa: E402
from gecomp.simulator.npu.hazards import PIPE_NAMES  # noqa: E402
from gecomp.tools import ge_sim  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MLP = os.path.join(ROOT, "examples", "mlp.mlir")
EAGER = "ge-compile{fuse=false reuse=false streams=1}"  # several launches of a few kernels each


@pytest.fixture(scope="module")
def drawn(tmp_path_factory, request):
    """(the figure's axes, the trace JSON) of one run of ge-sim."""
    folder = tmp_path_factory.mktemp("timeline")
    figures = []
    save = plots._save
    patch = pytest.MonkeyPatch()
    patch.setattr(plots, "_save", lambda fig, path: (figures.append(fig), save(fig, path)))
    try:
        trace_file, picture = str(folder / "t.json"), str(folder / "t.svg")
        assert ge_sim.main([MLP, "--pipeline", EAGER, "--hw", "tiny", "--trace", trace_file, "--plot", picture]) == 0
    finally:
        patch.undo()
    assert os.path.getsize(picture) > 1000
    (figure,) = figures
    with open(trace_file) as f:
        return figure.axes[0], json.load(f)


def _cycles(trace: dict) -> float:
    """Cycles per trace microsecond (the trace is in microseconds of the preset's clock)."""
    return load_preset(trace["otherData"]["hw"]).freq_ghz * 1000


def _core_rows(ax) -> dict[int, int]:
    """First row of each core, from the y tick labels `core c` (centred on its pipes)."""
    rows = {}
    for position, label in zip(ax.get_yticks(), ax.get_yticklabels()):
        rows[round(position - len(PIPE_NAMES) / 2)] = int(label.get_text().removeprefix("core "))
    return rows


def _bars(ax) -> list[tuple[int, int, float, float]]:
    """(core, pipe, start, end) of every bar the figure draws."""
    starts = _core_rows(ax)
    found = []
    for collection in ax.collections:
        for path in collection.get_paths():
            xs, ys = path.vertices[:, 0], path.vertices[:, 1]
            row = round(float(ys.min()))
            base = max(b for b in starts if b <= row)
            found.append((starts[base], row - base, float(xs.min()), float(xs.max())))
    return sorted(found)


def _trace_spans(trace: dict) -> list[tuple[int, int, float, float]]:
    per_us = _cycles(trace)
    streams = next(e["pid"] for e in trace["traceEvents"] if e["ph"] == "M" and e["args"].get("name") == "streams")
    return sorted(
        (e["pid"], e["tid"], e["ts"] * per_us, (e["ts"] + e["dur"]) * per_us)
        for e in trace["traceEvents"] if e["ph"] == "X" and e["pid"] != streams
    )


def _close(a: list[tuple], b: list[tuple]) -> bool:
    return len(a) == len(b) and all(
        x[:2] == y[:2] and np.allclose(x[2:], y[2:], rtol=1e-9, atol=1e-6) for x, y in zip(a, b)
    )


def test_every_bar_is_a_trace_event_of_its_core_and_pipe(drawn):
    ax, trace = drawn
    bars, spans = _bars(ax), _trace_spans(trace)
    assert len(spans) > 20 and len({(c, p) for c, p, _, _ in spans}) > 3
    assert _close(bars, spans)


def test_the_rows_are_the_trace_threads(drawn):
    ax, trace = drawn
    named = {(e["pid"], e["tid"]): e["args"]["name"] for e in trace["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name" and "stream" not in e["args"]["name"]}
    assert {(c, p) for c, p, _, _ in _bars(ax)} <= set(named)
    assert all(named[(c, p)] == PIPE_NAMES[p] for c, p, _, _ in _bars(ax))
    assert sorted(_core_rows(ax).values()) == sorted({c for c, _ in named})


def test_launches_are_the_trace_stream_events(drawn):
    ax, trace = drawn
    per_us = _cycles(trace)
    streams = next(e["pid"] for e in trace["traceEvents"] if e["ph"] == "M" and e["args"].get("name") == "streams")
    launches = [(e["name"], e["ts"] * per_us, (e["ts"] + e["dur"]) * per_us)
                for e in trace["traceEvents"] if e["ph"] == "X" and e["pid"] == streams]
    assert len(launches) > 2
    shaded = [(p.get_x(), p.get_x() + p.get_width()) for p in ax.patches]
    labels = [(t.get_text(), t.get_position()[0]) for t in ax.texts]
    assert np.allclose(sorted(shaded), sorted((s, e) for _, s, e in launches))
    assert [name for name, _ in labels] == [name for name, _, _ in launches]
    assert np.allclose([x for _, x in labels], [s for _, s, _ in launches])
    # every bar lies inside a launch
    assert all(any(s - 1e-6 <= start and end <= e + 1e-6 for s, e in shaded) for _, _, start, end in _bars(ax))
