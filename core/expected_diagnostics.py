"""`--verify-diagnostics` with mlir-opt's meaning.

A test file states the diagnostics it expects next to the line they are about::

    // expected-error @+1 {{contraction dims differ}}
    %0 = ge.matmul %a, %b : ...

`@+N` / `@-N` are relative lines, `@above` / `@below` the neighbouring ones, no
`@` the same line. Every expectation must be produced (its text a substring of
the message, on that line) and every produced diagnostic must be expected.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .diagnostics import CompileError

_EXPECTATION = re.compile(
    r"expected-(?P<severity>error|warning|note|remark)\s*"
    r"(?:@(?P<where>[+-]\d+|above|below))?\s*\{\{(?P<text>.*?)\}\}"
)


@dataclass
class Expectation:
    severity: str
    line: int
    text: str
    matched: bool = False


def collect_expectations(text: str, line_offset: int = 0) -> list[Expectation]:
    expectations = []
    for index, line in enumerate(text.splitlines()):
        for match in _EXPECTATION.finditer(line):
            here = index + 1 + line_offset
            where = match.group("where")
            if where is None:
                target = here
            elif where == "above":
                target = here - 1
            elif where == "below":
                target = here + 1
            else:
                target = here + int(where)
            expectations.append(Expectation(match.group("severity"), target, match.group("text")))
    return expectations


def check_diagnostics(
    expectations: list[Expectation], produced: list[CompileError], filename: str
) -> list[str]:
    """The failures, as located one-line messages (empty when everything matched)."""
    failures = []
    for diagnostic in produced:
        line = diagnostic.location.line if diagnostic.location else None
        for e in expectations:
            if (
                not e.matched
                and e.severity == diagnostic.severity
                and e.line == line
                and e.text in diagnostic.message
            ):
                e.matched = True
                break
        else:
            failures.append(
                diagnostic.format(filename).replace(
                    f": {diagnostic.severity}: ", f": error: unexpected {diagnostic.severity}: ", 1
                )
            )
    for e in expectations:
        if not e.matched:
            failures.append(
                f'{filename}:{e.line}: error: expected {e.severity} "{e.text}" was not produced'
            )
    return failures
