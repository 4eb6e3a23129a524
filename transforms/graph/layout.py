"""`ge-layout`: give the cube the physical formats it computes in, and convert
data between formats as rarely as possible (GE's TransData insertion and
elimination).

1. Insertion. Every float conv2d reads its input in NC1HWC0 and its weight in
   FRACTAL_Z and writes NC1HWC0; every matmul / batch_matmul reads and writes
   FRACTAL_NZ (see `dialects/ge/formats.py`). A `ge.transdata` goes in front of
   each operand and behind each result, so the rest of the graph still sees ND.
2. Elimination, to a fixpoint:
   * a format-agnostic op (elementwise, bias_add, pooling...; see
     `format_rules.py`) whose operand arrives through a conversion back to ND
     runs in the physical format instead, when that does not add conversion
     traffic (counted in bytes; ties move the conversion later, towards the
     graph's outputs). matmul -> bias -> gelu -> matmul thus stays in
     FRACTAL_NZ, with no transdata between the two matmuls;
   * inverse pairs cancel, identical conversions of one value merge, and a
     conversion of a constant re-types the constant (no data is materialised);
     these are `ge.transdata`'s canonicalization patterns.

What remains are conversions at the graph's inputs and outputs and in front of
format-sensitive ops (reshape, transpose, softmax, layer_norm, reductions).
`propagate=false` skips moving ops into formats (for comparison).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern
from xdsl.rewriter import Rewriter

from ...core import dtypes
from ...core.passes import record_statistic
from ...dialects.ge import ConstOp, GEOp, TransDataOp
from ...dialects.ge.canonicalization import defining_op, registered_patterns
from ...dialects.ge.formats import Format, format_of, with_format
from .format_rules import Role, cube_formats, operand_roles
from .simplify import apply_counted, record_counts

_HINT_SUFFIX = {Format.FRACTAL_NZ: "nz", Format.NC1HWC0: "5hd", Format.FRACTAL_Z: "fz"}


def converted(value: SSAValue, fmt: Format) -> TransDataOp:
    """A new `ge.transdata` of ND `value` into `fmt` (or of `value` in `fmt` back to
    ND when `fmt` is ND), named after the value."""
    src = format_of(value.type)
    op = TransDataOp.new(value, src_format=str(src), dst_format=str(fmt))
    hint = value.name_hint
    if hint and fmt != Format.ND:
        op.result.name_hint = f"{hint}_{_HINT_SUFFIX[fmt]}"
    return op


def is_conversion(op: Operation, src: Format, dst: Format) -> bool:
    return (
        isinstance(op, TransDataOp)
        and op.attr_value("src_format") == src
        and op.attr_value("dst_format") == dst
    )


def count_transdata(module: ModuleOp) -> int:
    return sum(isinstance(op, TransDataOp) for op in module.walk())


def _rebuilt(op: Operation, operands: list[SSAValue], fmt: Format) -> Operation:
    """`op` on new operands with its single result in `fmt`."""
    result = op.results[0]
    new = type(op).create(
        operands=operands,
        result_types=[with_format(result.type, fmt)],
        properties=dict(op.properties),
        attributes=dict(op.attributes),
    )
    new.location = op.location
    if result.name_hint:
        new.results[0].name_hint = f"{result.name_hint}_{_HINT_SUFFIX[fmt]}"
    return new


# ---- 1. insertion -----------------------------------------------------------------------


def insert_cube_conversions(module: ModuleOp) -> int:
    """Put every cube op into its formats; return the number of transdata inserted."""
    inserted = 0
    for op in list(module.walk()):
        wanted = cube_formats(op)
        if wanted is None:
            continue
        operand_formats, result_format = wanted
        current = [format_of(v.type) for v in op.operands]
        if format_of(op.results[0].type) != Format.ND or any(
            f not in (Format.ND, want) for f, want in zip(current, operand_formats)
        ):
            continue  # already laid out (or by someone else): leave it
        conversions = [converted(v, want) for v, f, want in zip(op.operands, current, operand_formats) if f != want]
        operands = iter(c.result for c in conversions)
        new_operands = [v if f == want else next(operands) for v, f, want in zip(op.operands, current, operand_formats)]
        new = _rebuilt(op, new_operands, result_format)
        back = converted(new.results[0], Format.ND)
        back.result.name_hint = op.results[0].name_hint
        Rewriter.replace_op(op, [*conversions, new, back])
        inserted += len(conversions) + 1
    return inserted


# ---- 2. running agnostic ops in the physical format ---------------------------------------


class RunInFormat(RewritePattern):
    """op(transdata(x, F -> ND), ...) -> transdata(op_F(x, ...), F -> ND) for a
    format-agnostic op, when the conversions it needs cost no more bytes than the
    ones it saves."""

    COUNTER = "ops moved into a physical format"

    def __init__(self):
        self.inserted = 0

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not isinstance(op, GEOp) or isinstance(op, TransDataOp | ConstOp):
            return
        if len(op.results) != 1 or format_of(op.results[0].type) != Format.ND:
            return
        for fmt in _arriving_formats(op):
            roles = operand_roles(op, fmt)
            if roles is None or any(
                r == Role.NEUTRAL and format_of(v.type) != Format.ND for v, r in zip(op.operands, roles)
            ):
                continue
            if extra_conversion_bytes(op, roles, fmt) <= 0:
                self._move(op, roles, fmt, rewriter)
                return

    def _move(self, op: Operation, roles: list[Role], fmt: Format, rewriter: PatternRewriter) -> None:
        conversions, operands = [], []
        for v, role in zip(op.operands, roles):
            source = _arriving_from(v, fmt)
            if role == Role.NEUTRAL or format_of(v.type) == fmt:
                operands.append(v)
            elif source is not None:
                operands.append(source.input)
            else:
                conversions.append(converted(v, fmt))
                operands.append(conversions[-1].result)
        moved = _rebuilt(op, operands, fmt)
        back = converted(moved.results[0], Format.ND)
        back.result.name_hint = op.results[0].name_hint
        rewriter.replace(op, [*conversions, moved, back], [back.result])
        self.inserted += len(conversions) + 1


def _arriving_from(value: SSAValue, fmt: Format) -> TransDataOp | None:
    """The conversion from `fmt` to ND that produced `value`, if any."""
    op = defining_op(value, TransDataOp)
    return op if op is not None and is_conversion(op, fmt, Format.ND) else None


def _arriving_formats(op: Operation) -> list[Format]:
    """The physical formats op's operands were converted from, in operand order."""
    formats = []
    for v in op.operands:
        source = defining_op(v, TransDataOp)
        if source is not None and source.attr_value("dst_format") == Format.ND:
            fmt = Format(source.attr_value("src_format"))
            if fmt != Format.ND and fmt not in formats:
                formats.append(fmt)
    return formats


def extra_conversion_bytes(op: Operation, roles: list[Role], fmt: Format) -> int:
    """Bytes of conversion added (positive) or saved (negative) by running `op` in `fmt`."""
    change = 0
    seen: set[SSAValue] = set()
    for v, role in zip(op.operands, roles):
        if role != Role.FORMATTED or v in seen or format_of(v.type) == fmt:
            continue
        seen.add(v)
        if _arriving_from(v, fmt) is not None:
            if all(use.operation is op for use in v.uses):
                change -= dtypes.tensor_bytes(v.type)  # its conversion back to ND goes
        elif defining_op(v, ConstOp) is None and not any(
            is_conversion(use.operation, Format.ND, fmt) for use in v.uses
        ):
            change += dtypes.tensor_bytes(v.type)  # a new conversion into fmt
    result = op.results[0]
    users = [use.operation for use in result.uses]
    into_fmt = {id(u) for u in users if is_conversion(u, Format.ND, fmt)}
    change -= dtypes.tensor_bytes(result.type) * len(into_fmt)
    if len(into_fmt) < len(users):
        change += dtypes.tensor_bytes(result.type)  # ND users need a conversion back
    return change


# ---- the pass ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class LayoutPass(ModulePass):
    """Physical formats for the cube, transdata at format boundaries, redundant ones removed."""

    name = "ge-layout"
    propagate: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        before = count_transdata(op)
        inserted = insert_cube_conversions(op)
        run_in_format = RunInFormat()
        transdata_patterns = registered_patterns(TransDataOp)

        def patterns(candidate: Operation):
            if isinstance(candidate, TransDataOp):
                return transdata_patterns
            return (run_in_format,) if self.propagate else ()

        record_statistic(self.name, "transdata inserted", inserted)
        record_counts(self.name, apply_counted(op, patterns))
        inserted += run_in_format.inserted
        record_statistic(self.name, "transdata inserted", run_in_format.inserted)
        record_statistic(self.name, "transdata eliminated", before + inserted - count_transdata(op))
