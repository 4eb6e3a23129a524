"""Helpers for tests of graph rewrites written as `.mlir` text: parse and verify a
module, list the ops of a kind in its main function, and compare results at the
tolerance of their type (`simulator.compare.worst_mismatch`)."""

from __future__ import annotations

import numpy as np

from gecomp.core.parsing import parse_module, verify_module
from gecomp.core.signature import main_function
from gecomp.dialects.context import make_context
from gecomp.simulator.compare import worst_mismatch


def parse(text: str, name: str = "test.mlir"):
    module = parse_module(make_context(), text, name)
    verify_module(module)
    return module


def ops_of(module, kind) -> list:
    return [op for op in main_function(module).walk() if isinstance(op, kind)]


def assert_close(expected, got) -> None:
    for e, g in zip(expected, got):
        worst = worst_mismatch("y", np.asarray(e), np.asarray(g))
        assert worst is None or worst.ratio <= 1, str(worst)
