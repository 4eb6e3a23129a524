"""What may become one kernel: the structural rules of automatic fusion.

A fused group must stay something one kernel can do with its tiles in on-chip
buffers, because the NPU lowering writes one kernel per group:

* a *vector* group: elementwise, broadcast, injective and reduce ops; a tile is
  a set of rows, so every reduction must reduce trailing axes (a *row*
  reduction), all reductions must share the same rows, and every value of the
  group must keep those rows as its leading dims (a transpose that moves a row
  dim away would need the whole tensor);
* a *cube* group: one cube op (matmul, batch_matmul, conv2d) and an epilogue of
  elementwise / broadcast ops that consume its result tile by tile, keeping the
  tile's shape (TVM's out-elementwise-fusable); the cube op reads its own
  operands from global memory (no prologue), possibly through a format change
  its load performs (`load_conversions`: MTE2 moves ND into the fractal layout
  as it copies; `ge-group-read-through` and the cube-group template);
* never an opaque op (pooling windows, named fused ops).

Each rule that can be switched off is a pass option (`Constraints`); the
structural ones cannot, since breaking them would make a group no kernel can
run. Size, input-count and buffer limits live here too; acyclicity and peak
memory are properties of the whole graph (`fusion_graph.py`).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import Operation

from ...dialects import ge
from ...dialects.fused.kinds import PatternKind, is_row_reduction, reduced_axes_of
from .fusion_graph import Part
from .graph import is_format_change, is_transparent, shape

_EPILOGUE_KINDS = (PatternKind.ELEMENTWISE, PatternKind.BROADCAST)
_VECTOR_KINDS = (PatternKind.ELEMENTWISE, PatternKind.BROADCAST, PatternKind.INJECTIVE, PatternKind.REDUCE)


@dataclass(frozen=True)
class Constraints:
    max_size: int = 64  # ops per group
    max_inputs: int = 8  # values a group reads from global memory
    fuse_reduce: bool = True  # reductions may join groups (where legal)
    cube_epilogue: bool = True  # cube ops may take an elementwise epilogue


def problem(part: Part, limits: Constraints) -> str | None:
    """Why `part` cannot be one kernel (buffers aside), or None."""
    for op, kind in zip(part.ops, part.kinds):
        if kind == PatternKind.OPAQUE:
            return f"'{op.name}' is opaque to fusion"
    structure = _cube_problem(part, limits) if part.cube is not None else _vector_problem(part, limits)
    if structure is not None:
        return structure
    if len(part.ops) > limits.max_size:
        return f"{len(part.ops)} ops exceed max-size={limits.max_size}"
    if len(part.inputs) > limits.max_inputs:
        return f"{len(part.inputs)} inputs exceed max-inputs={limits.max_inputs}"
    return None


def _cube_problem(part: Part, limits: Constraints) -> str | None:
    cube = part.cube
    if not limits.cube_epilogue:
        return "cube epilogue fusion is off (cube-epilogue=false)"
    if sum(k == PatternKind.CUBE for k in part.kinds) > 1:
        return "a kernel holds one cube op"
    members = set(part.ops)
    on_load = load_conversions(cube, members)
    if any(v.owner in members and v.owner not in on_load for v in cube.operands):
        return f"'{cube.name}' reads its operands from global memory (no prologue)"
    tile = shape(cube.results[0])
    reached = _downstream(cube, members)
    for op, kind in zip(part.ops, part.kinds):
        if op is cube or op in on_load:
            continue
        if kind not in _EPILOGUE_KINDS and not is_transparent(op):
            return f"'{op.name}' is not elementwise: a cube op takes an elementwise epilogue only"
        if any(shape(r) != tile for r in op.results):
            return f"'{op.name}' changes the shape of the output tile"
        if op not in reached:
            return f"'{op.name}' does not consume the result of '{cube.name}'"
    return None


def load_conversions(cube: Operation, members: set[Operation]) -> set[Operation]:
    """The format changes of `members` that the cube op's loads perform: each
    converts a value read from global memory and feeds the cube op alone."""
    found = set()
    for v in cube.operands:
        change = v.owner
        if (
            change in members
            and is_format_change(change)
            and change.operands[0].owner not in members
            and {u.operation for u in change.results[0].uses} == {cube}
        ):
            found.add(change)
    return found


def _downstream(start: Operation, members: set[Operation]) -> set[Operation]:
    """Ops of `members` that (transitively) use `start`'s results."""
    found: set[Operation] = set()
    stack = [start]
    while stack:
        op = stack.pop()
        for r in op.results:
            for use in r.uses:
                user = use.operation
                if user in members and user not in found:
                    found.add(user)
                    stack.append(user)
    return found


def _vector_problem(part: Part, limits: Constraints) -> str | None:
    reduces = [op for op, k in zip(part.ops, part.kinds) if k == PatternKind.REDUCE]
    if not reduces or len(part.ops) == 1:
        return None
    if not limits.fuse_reduce:
        return "reduce fusion is off (fuse-reduce=false)"
    rows = None
    for op in reduces:
        if not is_row_reduction(op):
            return f"'{op.name}' reduces non-trailing axes {list(reduced_axes_of(op))}"
        operand_shape = shape(op.operands[0])
        lead = operand_shape[: len(operand_shape) - len(reduced_axes_of(op))]
        if rows is not None and lead != rows:
            return f"reductions over different rows: {list(rows)} vs {list(lead)}"
        rows = lead
    for op in part.ops:
        moves_rows = isinstance(op, ge.TransposeOp) and op.attr_value("perm")[: len(rows)] != tuple(range(len(rows)))
        if moves_rows or any(shape(r)[: len(rows)] != rows for r in op.results):
            return f"'{op.name}' does not keep the rows {list(rows)} a reduction needs whole"
    return None
