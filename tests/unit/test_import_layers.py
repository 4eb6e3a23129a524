"""Imports run downward: tools -> lowering / frontend -> transforms -> simulator ->
dialects -> core (the developers' guide). A module may import from its own layer or
any layer below, never above, lazily or not: an upward import is a circle waiting
to happen, and it hides what a layer really depends on."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parents[2]

LAYER_RANK = {
    "core": 0,
    "dialects": 1,
    "simulator": 2,
    "transforms": 3,
    "lowering": 4,
    "frontend": 4,
    "tools": 5,
}


def _imported_packages(root: Path, path: Path) -> list[tuple[int, list[str]]]:
    """(line, path inside the package) of every gecomp import in one file."""
    package = list(path.relative_to(root).parts[:-1])
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                found.append((node.lineno, base + (node.module.split(".") if node.module else [])))
            elif node.module and node.module.startswith("gecomp."):
                found.append((node.lineno, node.module.split(".")[1:]))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name.split(".")[1:]) for a in node.names if a.name.startswith("gecomp.")]
    return found


def upward_imports(root: Path = PACKAGE_ROOT) -> list[str]:
    violations = []
    for layer, rank in LAYER_RANK.items():
        for path in sorted((root / layer).rglob("*.py")):
            for line, target in _imported_packages(root, path):
                if target and LAYER_RANK.get(target[0], -1) > rank:
                    violations.append(f"{path.relative_to(root)}:{line} imports {'.'.join(target)}")
    return violations


def test_no_layer_imports_from_above():
    assert upward_imports() == []


def test_an_upward_import_is_found(tmp_path):
    """The checker itself: a dialect importing the simulator is reported."""
    for layer in LAYER_RANK:
        (tmp_path / layer).mkdir()
    (tmp_path / "dialects" / "bad.py").write_text("def f():\n    from ..simulator.reference import run_reference\n")
    (tmp_path / "tools" / "fine.py").write_text("from ..core.diagnostics import CompileError\n")
    assert upward_imports(tmp_path) == ["dialects/bad.py:2 imports simulator.reference"]
