"""Fusion patterns from outside the package (seed 000 §5.4: users add their own
optimisations without rebuilding the compiler).

Two ways in, both ending in `register_pattern`:

* a Python file given to the tools: `ge-opt --load-patterns my_patterns.py` (and
  `ge-sim --load-patterns`). Every `FusionPattern` subclass the file defines is
  registered, or just those of its `PATTERNS` list if it has one;
* an installed package declaring entry points in the group `gecomp.patterns`,
  each naming a `FusionPattern` subclass or a list of them; they are loaded the
  first time the pattern list is asked for.

User patterns run before the built-in ones, in the order they were registered:
a user writes a pattern for a subgraph the built-ins do not cover as they want.
They go through the same framework (`pattern.py`): the same checks, and the op
they build must be one lowering can compile (a named fused op or a
`fused.group`), so `ge-sim --check` verifies them like any other.
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import sys
from importlib.metadata import entry_points

from ...core.diagnostics import CompileError, SourceLocation
from .pattern import FusionPattern

ENTRY_POINT_GROUP = "gecomp.patterns"

_registered: list[type[FusionPattern]] = []
_entry_points_loaded = False


def register_pattern(pattern: type[FusionPattern], origin: str, taken: set[str]) -> None:
    """Adds `pattern` (a `FusionPattern` subclass) to the user patterns; `taken` are
    the names already in use (built-in ones included)."""
    if not (inspect.isclass(pattern) and issubclass(pattern, FusionPattern)):
        raise CompileError(f"{origin}: {pattern!r} is not a FusionPattern subclass")
    if not pattern.name or not pattern.anchors:
        raise CompileError(f"{origin}: pattern {pattern.__name__} needs a `name` and `anchors`")
    if pattern in _registered:
        return
    if pattern.name in taken:
        raise CompileError(f"{origin}: a pattern named '{pattern.name}' already exists")
    _registered.append(pattern)


def forget_user_patterns() -> None:
    """Unregisters every user pattern (the registry is per process: tests that
    load patterns clean up with this)."""
    global _entry_points_loaded
    _registered.clear()
    _entry_points_loaded = False


def user_patterns(taken: set[str]) -> list[type[FusionPattern]]:
    """The registered user patterns (entry points loaded on first use)."""
    global _entry_points_loaded
    if not _entry_points_loaded:
        _entry_points_loaded = True
        for entry in entry_points(group=ENTRY_POINT_GROUP):
            try:
                loaded = entry.load()
            except Exception as e:  # noqa: BLE001 - a broken plugin is the user's error, one line
                raise CompileError(f"entry point '{entry.name}' ({ENTRY_POINT_GROUP}): {type(e).__name__}: {e}") from None
            for pattern in loaded if isinstance(loaded, list | tuple) else [loaded]:
                register_pattern(pattern, f"entry point '{entry.name}'", taken | {p.name for p in _registered})
    return list(_registered)


def load_pattern_file(path: str, taken: set[str]) -> list[type[FusionPattern]]:
    """Imports the Python file `path` and registers the patterns it defines."""
    if not os.path.isfile(path):
        raise CompileError(f"--load-patterns '{path}': No such file")
    module_name = f"gecomp_user_patterns_{len(sys.modules)}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise CompileError(f"--load-patterns '{path}': not a Python file")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except SyntaxError as e:
        raise CompileError(f"invalid Python: {e.msg}", _location(path, e.lineno, e.offset)) from None
    except Exception as e:  # noqa: BLE001 - the user's file failed to import: say why, one line
        raise CompileError(f"--load-patterns '{path}': {type(e).__name__}: {e}") from None
    patterns = getattr(module, "PATTERNS", None)
    if patterns is None:
        patterns = [
            value for value in vars(module).values()
            if inspect.isclass(value) and issubclass(value, FusionPattern)
            and value is not FusionPattern and value.__module__ == module_name
        ]
    if not patterns:
        raise CompileError(f"--load-patterns '{path}': defines no FusionPattern subclass")
    for pattern in patterns:
        register_pattern(pattern, f"--load-patterns '{path}'", taken | {p.name for p in _registered})
    return list(patterns)


def _location(path: str, line: int | None, col: int | None) -> SourceLocation:
    return SourceLocation(path, line or 1, col or 1)
