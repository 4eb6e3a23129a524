"""The docs cannot go stale: every shell command of README.md and docs/*.md runs,
and every figure a page marks as checked is what the tools print today.

The convention (docs/testing.md, "Docs that run"):

* A command is a line of a ```sh block whose first word is one of `TOOLS`
  (a `pip install ... &&` prefix is dropped: the package is installed; a line
  ending in `\\` continues on the next). It runs through bash (with pipefail) in
  a scratch folder where `examples/`, `tests/` and `bench/` are the repository's,
  and must exit 0 without a traceback. Lines of ```text / ``` / ```python blocks
  and lines starting with other words (`pip`, `pytest`, `lit`) are not run.
* `<!-- docs-test: slow -->` on the line before a block: its commands run only
  with GECOMP_DOCS_SLOW=1 (whole benches, tuning, model exports); CI runs the rest.
  `<!-- docs-test: skip REASON -->`: never run (a usage synopsis, an extra CI
  does not install). `<!-- docs-test: needs PROGRAM -->`: run where PROGRAM is
  on the PATH (Graphviz's `dot`). `<!-- docs-test: output -->` before a plain
  block: the block is what the preceding command prints; each of its lines
  (whitespace aside; `...` stands for lines left out) must be in the output. README.md's commands are marked in `README_MARKS` below
  until the README carries the markers itself.
* A command that names a file the reader brings (`PLACEHOLDER`: model*.mlir,
  model*.onnx, my_*.py, in.npz) is not run; any other missing file is a failure.
* A figure: `38655 <!-- figure: cycles ARGS -->` right after a number in prose
  (the comment does not render). The test runs `ge-sim ARGS --json` (once per
  distinct ARGS) and compares the number with the report's field (`FIGURES`:
  cycles = total_cycles, launches = len(kernels)).
"""

from __future__ import annotations

import dataclasses
import glob
import json
import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAGES = [os.path.join(ROOT, "README.md"), *sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))]
TOOLS = ("ge-opt", "ge-sim", "ge-translate", "ge-prof", "python bench/")
# files the reader brings: model*.mlir / .onnx / .onnxtxt, my_*.py, in.npz
PLACEHOLDER = re.compile(r"^(model[\w-]*\.(mlir|onnx|onnxtxt)|my_\w*\.py|in\.npz)$")
LINKED = ("examples", "tests", "bench")  # what commands read, linked into their scratch folder
SLOW_ENV = "GECOMP_DOCS_SLOW"
MARK = re.compile(r"<!--\s*docs-test:\s*(slow|skip|needs|output)\b\s*(.*?)\s*-->")
FIGURE = re.compile(r"(\d[\d,]*(?:\.\d+)?)\s*<!--\s*figure:\s*(\w+)\s+(.+?)\s*-->")
FIGURES = {
    "cycles": lambda report: report["total_cycles"],
    "launches": lambda report: len(report["kernels"]),
}
# README.md's commands (by how they start) that the README would mark, until it
# carries the markers itself (the lead integrates README changes):
SIGPIPE_EXIT = 141
"""A tool's exit code when the reader of its output went away (128 + SIGPIPE)."""

README_MARKS = {
    "ge-opt examples/bert_layer.mlir -p ge-compile --dump-dir": ("slow", "compiles the BERT layer as README:17 does"),
    "python bench/fuzz.py": ("slow", "100 graphs through every path"),
}


@dataclass(frozen=True)
class Command:
    page: str
    line: int
    text: str
    mark: str  # "", "slow", "skip" or "needs"
    why: str
    output: tuple[str, ...] = ()  # lines its printed output must have (an `output` block after it)

    @property
    def where(self) -> str:
        return f"{os.path.relpath(self.page, ROOT)}:{self.line}"


def _runnable(line: str) -> str | None:
    """The command of a line of a sh block, or None if the line is not one to run."""
    segments = [s.strip() for s in line.split("&&")]
    while segments and segments[0].startswith("pip install"):
        segments.pop(0)
    command = " && ".join(segments)
    return command if command.startswith(TOOLS) else None


def commands_of(page: str) -> list[Command]:
    found, lines = [], open(page, encoding="utf-8").read().splitlines()
    mark, why, in_sh, fence = "", "", False, False
    pending, sample = "", None
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if stripped.startswith("```"):
            if fence and sample is not None and found:
                found[-1] = dataclasses.replace(found[-1], output=found[-1].output + tuple(sample))
            if fence:
                fence = in_sh = False
                mark, why, sample = "", "", None
            else:
                fence, in_sh = True, stripped == "```sh"
                sample = [] if mark == "output" else None
            continue
        if not fence:
            marked = MARK.search(line)
            if marked:
                mark, why = marked.group(1), marked.group(2)
            elif stripped:
                mark, why = "", ""
            continue
        if sample is not None and stripped and stripped != "...":
            sample.append(" ".join(stripped.split()))
        if not in_sh:
            continue
        pending += line.rstrip().removesuffix("\\") + " " if line.rstrip().endswith("\\") else line
        if line.rstrip().endswith("\\"):
            continue
        command, pending = _runnable(pending.strip()), ""
        if command is None:
            continue
        if os.path.basename(page) == "README.md" and not mark:
            mark_of = next((m for start, m in README_MARKS.items() if command.startswith(start)), ("", ""))
        else:
            mark_of = (mark, why)
        found.append(Command(page, number, command, *mark_of))
    return found


def unique(commands: list[Command]) -> list[Command]:
    """Each command once (the first place it appears): pages repeat the front door's."""
    found: dict[tuple, Command] = {}
    for c in commands:
        key = tuple(shlex.split(c.text, comments=True))
        first = found.setdefault(key, c)
        if first is not c and c.output:  # a later page shows what it prints
            found[key] = dataclasses.replace(first, output=first.output + c.output)
    return list(found.values())


ALL = unique([c for page in PAGES for c in commands_of(page)])


def _needs_placeholder(command: Command) -> bool:
    words = shlex.split(command.text, comments=True)
    return any(PLACEHOLDER.match(os.path.basename(w)) for w in words)


def _scratch(tmp_path) -> str:
    for name in LINKED:
        os.symlink(os.path.join(ROOT, name), tmp_path / name)
    return str(tmp_path)


@pytest.mark.parametrize("command", ALL, ids=[c.where for c in ALL])
def test_documented_command_runs(command, tmp_path):
    if command.mark == "skip":
        pytest.skip(f"marked skip: {command.why}")
    if command.mark == "slow" and not os.environ.get(SLOW_ENV):
        pytest.skip(f"marked slow ({command.why}); {SLOW_ENV}=1 runs it")
    if command.mark == "needs" and shutil.which(command.why) is None:
        pytest.skip(f"needs {command.why}, not installed")
    if _needs_placeholder(command):
        pytest.skip("names a file the reader brings")
    done = subprocess.run(["bash", "-o", "pipefail", "-c", command.text], cwd=_scratch(tmp_path),
                          capture_output=True, text=True, timeout=900)
    # `tool | head -6`: head may close the pipe before the tool is done, which then
    # exits 141 (SIGPIPE, quietly), as any Unix tool does; pipefail reports that.
    cut_short = done.returncode == SIGPIPE_EXIT and re.search(r"\|\s*head\b", command.text)
    assert done.returncode == 0 or cut_short, f"{command.where}: `{command.text}` exited {done.returncode}:\n{done.stderr[-2000:]}"
    assert "Traceback" not in done.stderr, f"{command.where}: `{command.text}`:\n{done.stderr[-2000:]}"
    printed = {" ".join(line.split()) for line in done.stdout.splitlines()}
    missing = [line for line in command.output if line not in printed]
    assert not missing, f"{command.where}: `{command.text}` no longer prints the page's lines {missing}"


@dataclass(frozen=True)
class Figure:
    page: str
    line: int
    value: str
    kind: str
    args: str

    @property
    def where(self) -> str:
        return f"{os.path.relpath(self.page, ROOT)}:{self.line}"


def figures_of(page: str) -> list[Figure]:
    found = []
    for number, line in enumerate(open(page, encoding="utf-8").read().splitlines(), 1):
        found += [Figure(page, number, *m.groups()) for m in FIGURE.finditer(line)]
    return found


FIGURES_MARKED = [f for page in PAGES for f in figures_of(page)]
# one ge-sim run per distinct command line, however many figures it backs
RUNS = sorted({tuple(shlex.split(f.args)) for f in FIGURES_MARKED})


@pytest.mark.parametrize("args", RUNS, ids=[" ".join(a) for a in RUNS])
def test_marked_figures_are_what_the_tool_prints(args, tmp_path):
    stated = [f for f in FIGURES_MARKED if tuple(shlex.split(f.args)) == args]
    unknown = [f"{f.where}: '{f.kind}'" for f in stated if f.kind not in FIGURES]
    assert not unknown, f"unknown figure kinds {unknown} (known: {', '.join(FIGURES)})"
    out = tmp_path / "report.json"
    command = ["ge-sim", *args, "--json", str(out)]
    done = subprocess.run(command, cwd=_scratch(tmp_path), capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{stated[0].where}: {' '.join(command)}:\n{done.stderr[-2000:]}"
    report = json.loads(out.read_text())
    wrong = [f"{f.where}: the page says {f.value} ({f.kind}), the tool gives {FIGURES[f.kind](report)}"
             for f in stated if float(f.value.replace(",", "")) != FIGURES[f.kind](report)]
    assert not wrong, f"{' '.join(command)}:\n" + "\n".join(wrong)


def test_the_convention_finds_commands_and_marks(tmp_path):
    """The extraction itself: pip prefixes dropped, continuation lines joined,
    markers read, other blocks left alone."""
    page = str(tmp_path / "probe.md")
    with open(page, "w", encoding="utf-8") as f:
        f.write("\n".join([
            "```sh", "pip install -e . && ge-sim a.mlir --check", "pytest -q", "ge-opt a.mlir \\", "  -p cse", "```",
            "<!-- docs-test: slow whole bench -->", "```sh", "python bench/x.py   # comment", "```",
            "```", "ge-sim not_run.mlir", "```",
            "<!-- docs-test: output -->", "```", "total   9   43.462", "...", "```",
            "Cycles: 1,234 <!-- figure: cycles a.mlir --pipeline 'ge-compile{fuse=false}' -->.",
        ]))
    found = commands_of(page)
    assert [(c.line, shlex.split(c.text, comments=True), c.mark) for c in found] == [
        (2, ["ge-sim", "a.mlir", "--check"], ""), (5, ["ge-opt", "a.mlir", "-p", "cse"], ""),
        (9, ["python", "bench/x.py"], "slow"),
    ]
    assert found[2].why == "whole bench"
    assert found[2].output == ("total 9 43.462",) and found[1].output == ()
    (figure,) = figures_of(page)
    assert (figure.value, figure.kind, shlex.split(figure.args)) == (
        "1,234", "cycles", ["a.mlir", "--pipeline", "ge-compile{fuse=false}"])


def test_every_page_has_its_commands_found():
    """A page whose sh blocks yield nothing has lost its commands to a convention change."""
    assert len(ALL) > 20
    assert {os.path.basename(c.page) for c in ALL} >= {"README.md", "tools.md", "compiling.md", "fusion.md"}
