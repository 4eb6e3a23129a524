"""Parsing and verifying modules with source locations.

xDSL's parser does not attach a location to the operations it reads, so every
diagnostic would be location-less. `LocatedParser` records `file:line:col` of
each operation as a `FileLineColLoc` (MLIR's convention: the first token of the
operation), which the verifier, passes and the simulator then use in their
messages.
"""

from __future__ import annotations

import bisect
import re

from xdsl.context import Context
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr, UnknownLoc
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.utils.mlir_lexer import MLIRTokenKind
from xdsl.utils.exceptions import DiagnosticException, ParseError

from .diagnostics import CompileError, SourceLocation, location_of
from .reverify import Reverifier


class _LineIndex:
    """Offset -> (line, column) in O(log n), where xDSL's Span counts lines from 0."""

    def __init__(self, text: str, line_offset: int):
        self.starts = [0]
        pos = text.find("\n")
        while pos != -1:
            self.starts.append(pos + 1)
            pos = text.find("\n", pos + 1)
        self.line_offset = line_offset

    def line_col(self, offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(self.starts, offset) - 1
        return line + 1 + self.line_offset, offset - self.starts[line] + 1


class LocatedParser(Parser):
    def __init__(self, ctx: Context, text: str, name: str, line_offset: int = 0):
        super().__init__(ctx, text, name)
        self._lines = _LineIndex(text, line_offset)
        self._file = StringAttr(name)
        self._text = text
        self.first_forward_use: dict[str, int] = {}

    def resolve_operand(self, operand, type):
        """Remembers where a value is first used before its definition, so that a
        value never defined is reported at that use (xDSL reports it at the end
        of the file)."""
        name = operand.operand_name
        if name not in self.ssa_values and name not in self.first_forward_use:
            self.first_forward_use[name] = operand.span.start
        return super().resolve_operand(operand, type)

    def undefined_value_error(self) -> CompileError | None:
        """The error for the first value used but never defined, at its use."""
        undefined = [n for n in self.forward_ssa_references if n in self.first_forward_use]
        if not undefined:
            return None
        name = min(undefined, key=self.first_forward_use.__getitem__)
        return CompileError(f"use of undefined value '%{name}'", self.source_location(self.first_forward_use[name]))

    def parse_operation(self) -> Operation:
        start = self._current_token.span.start
        op = super().parse_operation()
        if isinstance(op.location, UnknownLoc):
            line, col = self._lines.line_col(start)
            op.location = FileLineColLoc(self._file, IntAttr(line), IntAttr(col))
        return op

    def _get_op_by_name(self, name: str) -> type[Operation]:
        try:
            return super()._get_op_by_name(name)
        except ParseError as e:
            # Point at the op name, as mlir-opt does, not at the token after it.
            at = self._text.rfind(name, 0, self.pos)
            if at < 0:
                raise
            self.raise_error(e.msg, at, at + len(name))

    def source_location(self, offset: int) -> SourceLocation:
        line, col = self._lines.line_col(offset)
        return SourceLocation(self._file.data, line, col)


def parse_module(ctx: Context, text: str, filename: str = "<stdin>", line_offset: int = 0) -> ModuleOp:
    """Parse MLIR text into a module, raising `CompileError` with a location on failure."""
    try:
        parser = LocatedParser(ctx, text, filename, line_offset)
    except ParseError as e:  # the first token does not lex
        line, col = _LineIndex(text, line_offset).line_col(e.span.start)
        raise CompileError(e.msg, SourceLocation(filename, line, col)) from None
    if parser._current_token.kind == MLIRTokenKind.EOF:
        # Only comments (a split chunk holding notes): an empty module, as mlir-opt.
        return ModuleOp([])
    try:
        return parser.parse_module()
    except ParseError as e:
        undefined = parser.undefined_value_error() if "used but not defined" in e.msg else None
        if undefined is not None:
            raise undefined from None
        raise CompileError(_parse_error_message(e, text), parser.source_location(_error_offset(e, text))) from None
    except RecursionError:
        raise _too_deep(text, filename, line_offset) from None
    except DiagnosticException as e:
        # Attribute verifiers run while parsing (e.g. a malformed tensor type).
        raise CompileError(_first_line(e), parser.source_location(parser.pos)) from None


MAX_NESTING = 256
"""Bracket depth beyond which text is refused: a tensor has far fewer dims, and
xDSL's recursive-descent parser would exhaust Python's stack."""


def _too_deep(text: str, filename: str, line_offset: int) -> CompileError:
    """A located error for text nested deeper than the parser can follow."""
    depth = 0
    for offset, ch in enumerate(text):
        depth += {"[": 1, "(": 1, "{": 1, "<": 1, "]": -1, ")": -1, "}": -1, ">": -1}.get(ch, 0)
        if depth > MAX_NESTING:
            line, col = _LineIndex(text, line_offset).line_col(offset)
            return CompileError(f"nested more than {MAX_NESTING} levels deep", SourceLocation(filename, line, col))
    return CompileError("nested too deeply to parse", SourceLocation(filename, 1 + line_offset, 1))


def _error_offset(e: ParseError, text: str) -> int:
    """Where to point for `e`: a dense literal whose element count does not match
    its type is reported by xDSL after the type; point at the literal itself."""
    if e.msg.startswith("Shape mismatch in dense literal"):
        at = text.rfind("dense<", 0, e.span.start)
        if at >= 0:
            return at
    return e.span.start


def verify_module(module: Operation, reverifier: Reverifier | None = None) -> None:
    """Verify every operation, reporting the first failure at that op's location.
    With a `reverifier` (core/reverify.py), the operations unchanged since it last
    verified this module are skipped."""
    if reverifier is not None:
        reverifier.verify(module)
        return
    for op in module.walk():
        verify_op(op)


def verify_op(op: Operation) -> None:
    """Verify one operation (not its nested ones), as a located CompileError."""
    try:
        op.verify(verify_nested_ops=False)
    except DiagnosticException as e:
        raise CompileError(_verifier_message(op, e), location_of(_culprit(op, e))) from None


_REDEFINED = re.compile(r'Redefinition of symbol "([^"]+)"')


def _culprit(op: Operation, e: Exception) -> Operation:
    """The op to point at for `op`'s verifier error: a symbol table names the
    redefined symbol, and its second definition is where the mistake is."""
    redefined = _REDEFINED.search(str(e))
    if redefined is not None:
        defining = [o for o in op.walk() if getattr(o, "sym_name", None) == StringAttr(redefined.group(1))]
        if len(defining) > 1:
            return defining[1]
    return op


def _parse_error_message(e: ParseError, text: str) -> str:
    """xDSL's message, saying so when the text stopped early (its own message for a
    block cut short is an empty subject: " in block definition")."""
    message = e.msg.strip()
    if e.span.start < len(text.rstrip()):
        return message or "syntax error"
    if not message:
        return "unexpected end of file"
    return f"unexpected end of file {message}" if message.startswith("in ") else f"unexpected end of file: {message}"


def _first_line(e: Exception) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def _verifier_message(op: Operation, e: Exception) -> str:
    message = _first_line(e)
    lines = str(e).strip().splitlines()
    if message.endswith(":") and len(lines) > 1:
        # IRDL puts the reason on the next line: "operand 'x' ... does not verify:\n<why>".
        message = f"{message} {lines[1].strip()}"
    message = message.removeprefix("Operation does not verify: ")
    prefix = f"'{op.name}' op "
    return message if message.startswith(prefix) else prefix + message


def read_source(path: str) -> str:
    """The text of `path` (`-` is standard input), as a located error if unreadable."""
    if path == "-":
        import sys

        return sys.stdin.read()
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        raise CompileError(f"cannot open '{path}': {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise CompileError(f"'{path}' is not UTF-8 text: {e.reason}") from None


def load_module(ctx: Context, path: str) -> ModuleOp:
    """Read, parse and verify a module file."""
    module = parse_module(ctx, read_source(path), "<stdin>" if path == "-" else path)
    verify_module(module)
    return module
