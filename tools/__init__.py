"""Command-line entry points (thin: argument parsing, then library calls)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from ..core.diagnostics import CompileError


def run_tool(body: Callable[[], int], default_file: str | None = None) -> int:
    """Run a tool's body the way every tool ends: a `CompileError` is one line on
    stderr and exit code 1; Ctrl-C is 130; output piped into a reader that stops
    early (`ge-opt ... | head`) ends quietly, as `cat` does, not with a
    BrokenPipeError traceback."""
    try:
        return body()
    except CompileError as e:
        print(e.format(default_file), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # Python flushes stdout again at exit: point it at /dev/null so that
        # flush cannot raise a second time.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141


def load_pattern_files(paths: list[str]) -> None:
    """`--load-patterns`: register the user's fusion patterns (imported only when
    asked for, so the tools start fast)."""
    if paths:
        from ..lowering.graph_to_fused.patterns import load_patterns

        for path in paths:
            load_patterns(path)
