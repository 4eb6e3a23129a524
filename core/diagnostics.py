"""User-facing errors.

Everything a user can get wrong (a malformed file, a failed verifier, a bad pass
option, an instruction stream that races) ends as a `CompileError`: one line,
`file:line:col: error: message` where a location is known, and exit code 1 from
the tools. Internal bugs stay Python exceptions so they are not disguised as
user errors.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn

from xdsl.dialects.builtin import FileLineColLoc, NameLoc, UnknownLoc
from xdsl.ir import Attribute, Operation


@dataclass(frozen=True)
class SourceLocation:
    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


def location_of(thing: Operation | Attribute | SourceLocation | None) -> SourceLocation | None:
    """The source location of an op (or a location attribute), if it has one."""
    if thing is None or isinstance(thing, SourceLocation):
        return thing
    loc = thing.location if isinstance(thing, Operation) else thing
    if isinstance(loc, FileLineColLoc):
        return SourceLocation(loc.filename.data, loc.line.data, loc.column.data)
    if isinstance(loc, NameLoc) and not isinstance(loc.child_loc, UnknownLoc):
        return location_of(loc.child_loc)
    if isinstance(thing, Operation) and thing.parent_op() is not None:
        # Ops created by passes carry no location: point at the closest
        # enclosing op that does, so the message still leads to the source.
        return location_of(thing.parent_op())
    return None


class CompileError(Exception):
    """An error in the user's input, reported without a traceback."""

    def __init__(
        self,
        message: str,
        where: Operation | Attribute | SourceLocation | None = None,
        severity: str = "error",
    ):
        super().__init__(message)
        self.message = message
        self.location = location_of(where)
        self.severity = severity

    def format(self, default_file: str | None = None) -> str:
        if self.location is not None:
            return f"{self.location}: {self.severity}: {self.message}"
        if default_file is not None:
            return f"{default_file}: {self.severity}: {self.message}"
        return f"{self.severity}: {self.message}"

    def __str__(self) -> str:
        return self.format()


def argument_error(tool: str) -> Callable[[str], NoReturn]:
    """A replacement for `ArgumentParser.error`: a bad flag becomes a one-line
    `CompileError` (exit code 1) instead of argparse's usage dump and exit code 2."""

    def error(message: str) -> NoReturn:
        raise CompileError(f"{message} (see {tool} --help)")

    return error


def op_error(op: Operation, message: str) -> CompileError:
    """An error about `op`, phrased as MLIR does: `'ge.matmul' op ...`."""
    return CompileError(f"'{op.name}' op {message}", op)


class NoUnitForTypeError(CompileError):
    """The target has no unit that computes an op on its element type (the NPU's
    cube multiplies f16, bf16 and f32, never f64): a deliberate refusal of the
    input, reported like any error, which conformance counts as refused ("no NPU
    kernel for dtype X") rather than as a failure of the compiler."""

    def __init__(self, op: Operation, element_type: Attribute, why: str):
        super().__init__(f"'{op.name}' op has no NPU kernel for element type {element_type}: {why}", op)
        self.element_type = element_type
