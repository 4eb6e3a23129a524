"""User fusion patterns: loaded from a file or an entry point, run first, checked
numerically; every mistake in a pattern file is a one-line error."""

from __future__ import annotations

import os
from types import SimpleNamespace

import numpy as np
import pytest

from gecomp.dialects.context import make_context
from gecomp.core.diagnostics import CompileError
from gecomp.core.parsing import parse_module
from gecomp.core.passes import parse_pass_pipeline, run_pipeline
from gecomp.lowering.graph_to_fused import user_patterns
from gecomp.lowering.graph_to_fused.patterns import PATTERNS, all_patterns, load_patterns, pattern_names
from gecomp.simulator.run import execute

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
QUICK_GELU = os.path.join(ROOT, "examples", "patterns", "quick_gelu.py")
QUICK_GELU_MLIR = os.path.join(ROOT, "examples", "patterns", "quick_gelu.mlir")


@pytest.fixture(autouse=True)
def no_user_patterns():
    user_patterns.forget_user_patterns()
    yield
    user_patterns.forget_user_patterns()


def _write(tmp_path, text: str) -> str:
    path = tmp_path / "patterns.py"
    path.write_text(text)
    return str(path)


def _compiled(pipeline: str):
    module = parse_module(make_context(), open(QUICK_GELU_MLIR).read(), QUICK_GELU_MLIR)
    reference = execute(module.clone(), [np.random.default_rng(0).standard_normal((128, 256)).astype(np.float16)])
    run_pipeline(parse_pass_pipeline(pipeline), make_context(), module)
    return module, reference


def test_a_loaded_pattern_runs_first_and_keeps_the_numbers():
    (loaded,) = load_patterns(QUICK_GELU)
    assert all_patterns()[0] is loaded and pattern_names()[0] == "quick-gelu"
    module, reference = _compiled("ge-graph-opt,ge-fuse")
    groups = [op for op in module.walk() if op.name == "fused.group"]
    assert len(groups) == 1 and "ge.matmul" in {op.name for op in groups[0].body_ops()}
    x = np.random.default_rng(0).standard_normal((128, 256)).astype(np.float16)
    np.testing.assert_allclose(execute(module, [x]).results[0].astype(np.float32),
                               reference.results[0].astype(np.float32), rtol=1e-2, atol=1e-2)


def test_without_loading_the_pattern_is_not_there():
    assert pattern_names() == [p.name for p in PATTERNS]


def test_a_pattern_name_taken_twice_is_an_error():
    load_patterns(QUICK_GELU)
    with pytest.raises(CompileError, match="a pattern named 'quick-gelu' already exists"):
        load_patterns(QUICK_GELU)  # a second import of the file is a new class of the same name


@pytest.mark.parametrize(
    "text, message",
    [
        ("def broken(:\n", r"invalid Python: "),
        ("raise RuntimeError('no')\n", r"RuntimeError: no"),
        ("x = 1\n", r"defines no FusionPattern subclass"),
        (
            "from gecomp.lowering.graph_to_fused.pattern import FusionPattern\n"
            "from gecomp.dialects import ge\n"
            "class Mine(FusionPattern):\n    name = 'softmax'\n    anchors = (ge.MulOp,)\n",
            r"a pattern named 'softmax' already exists",
        ),
        (
            "from gecomp.lowering.graph_to_fused.pattern import FusionPattern\n"
            "class Mine(FusionPattern):\n    pass\n",
            r"pattern Mine needs a `name` and `anchors`",
        ),
        ("PATTERNS = [42]\n", r"42 is not a FusionPattern subclass"),
    ],
)
def test_a_bad_pattern_file_is_a_one_line_error(tmp_path, text, message):
    with pytest.raises(CompileError, match=message) as error:
        load_patterns(_write(tmp_path, text))
    assert "\n" not in error.value.format()


def test_a_syntax_error_points_at_its_line(tmp_path):
    path = _write(tmp_path, "x = 1\ndef broken(:\n")
    with pytest.raises(CompileError) as error:
        load_patterns(path)
    assert error.value.location is not None and error.value.location.line == 2


def test_entry_point_group(monkeypatch):
    loaded = load_patterns(QUICK_GELU)
    user_patterns.forget_user_patterns()
    entry = SimpleNamespace(name="mine", load=lambda: loaded)
    monkeypatch.setattr(user_patterns, "entry_points", lambda group: [entry] if group == "gecomp.patterns" else [])
    assert pattern_names()[0] == "quick-gelu"


def test_a_broken_entry_point_is_a_one_line_error(monkeypatch):
    def fail():
        raise ImportError("no module named mine")

    entry = SimpleNamespace(name="mine", load=fail)
    monkeypatch.setattr(user_patterns, "entry_points", lambda group: [entry])
    with pytest.raises(CompileError, match=r"entry point 'mine' \(gecomp.patterns\): ImportError: no module named mine"):
        pattern_names()
