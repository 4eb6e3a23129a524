"""Progress bars appear on a terminal only, after DELAY_S seconds of work."""

from __future__ import annotations

import io

import pytest

from gecomp.core import progress as progress_module
from gecomp.core.progress import progress

pytest.importorskip("tqdm")


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_not_a_terminal_means_no_bar(monkeypatch):
    stream = io.StringIO()
    monkeypatch.setattr("sys.stderr", stream)
    items = [1, 2, 3]
    assert progress(items, "work") is items
    assert stream.getvalue() == ""


def test_a_terminal_gets_a_bar_once_the_delay_has_passed(monkeypatch):
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    monkeypatch.setattr(progress_module, "DELAY_S", 0.0)
    assert list(progress(range(5), "simulating", unit="launch")) == list(range(5))
    assert "simulating" in terminal.getvalue() and "launch" in terminal.getvalue()


def test_a_short_loop_on_a_terminal_stays_silent(monkeypatch):
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    assert list(progress(range(5), "work")) == list(range(5))
    assert terminal.getvalue().strip() == ""
