"""`fused.group` holding one cube op: the cube kernel with the group's ops after
the cube op as its epilogue.

Automatic fusion makes these groups (`lowering/graph_to_fused/legality.py`): a
matmul / batch_matmul reading its operands from GM and elementwise or broadcast
ops consuming its result tile by tile, format changes (`ge.transdata`) and
inference identities in between. The group template (`groups.py`) hands such
groups here. The epilogue body replays the group's ops on the output tile in UB,
each with `emit_elementwise`, in fp32 (rounded once into each result, like
the named fused ops; the op-by-op reference rounds after every op, within the
fp16 tolerance); the group's other operands are epilogue operands broadcast to
the tile, splat constants immediates.
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects.builtin import f16, f32
from xdsl.ir import Operation, SSAValue

from ....core import dtypes
from ....dialects import fused, ge
from ....dialects.fused.kinds import PatternKind, pattern_kind
from ..context import KernelContext
from ..vector_emitter import Operand, Tile, VectorUnsupported, emit_elementwise
from .cube import cube_problem, epilogue_input, output_views  # (cube.py imports this module last)
from .cube_epilogue import CubeEpilogue, EpilogueTiles
from .cube_kernel import emit_cube_kernel

_IDENTITIES = ("ge.transdata", "ge.identity", "ge.dropout")
"""Ops that leave the tile's values as they are (the format is the output's business)."""

_AFTER_ROUNDING = ("ge.relu",)
"""Unary ops that commute with rounding to a narrower float: op(round(x)) ==
round(op(x)) exactly (relu keeps the sign and zero, and a rounded value
keeps its sign). Where such an op makes a result, the epilogue rounds its
operand into the output tile and applies the op there, on half the bytes of
the fp32 temporary (an fp16 relu takes half the vector repeats of an fp32 one)."""


def lower_cube_group(op: fused.GroupOp, k: KernelContext) -> None:
    body = op.body_ops()
    cube = next(o for o in body if pattern_kind(o) == PatternKind.CUBE)
    args = list(op.block.args)
    tensors = dict(zip(args, k.inputs))
    cube_reads = [_loaded(v, args) for v in cube.operands]
    if any(v is None for v in cube_reads):
        raise k.unsupported(f"'{cube.name}' in a group must read group operands (no prologue)")
    if any(not isinstance(o, ge.ConstOp) and not _format_change_of_arg(o, args) for o in body[: body.index(cube)]):
        raise k.unsupported(f"a group computing something before its '{cube.name}'")
    epilogue_ops = body[body.index(cube) + 1 :]
    yields = list(op.block.last_op.operands)
    consts = {o.result: _splat(o) for o in body if isinstance(o, ge.ConstOp)}
    if any(value is None for value in consts.values()):
        raise k.unsupported("a constant that is not a splat in a cube epilogue")
    operand_args = _epilogue_args(epilogue_ops, args)
    out_shape = k.outputs[0].shape
    try:
        inputs = [epilogue_input(tensors[arg], out_shape) for arg in operand_args]
        outputs = output_views(k)
    except ValueError as e:  # an operand or a result no epilogue view reads
        raise k.unsupported(str(e)) from None
    index = {arg: n for n, arg in enumerate(operand_args)}

    def body_fn(t: EpilogueTiles) -> None:
        _replay(t, cube, epilogue_ops, consts, index, yields, k)

    trivial = not epilogue_ops or all(o.name in _IDENTITIES for o in epilogue_ops if not isinstance(o, ge.ConstOp))
    single = len(yields) == 1 and _source(yields[0], epilogue_ops) is cube.results[0]
    epilogue = CubeEpilogue(outputs, inputs, None if trivial and single else body_fn)
    emit_cube_kernel(k, cube_problem(k, cube, [tensors[v] for v in cube_reads], epilogue))


def _format_change_of_arg(o: Operation, args: list[SSAValue]) -> bool:
    """A `ge.transdata` of a group operand: the cube's load converts it (MTE2
    moves ND into the fractal layout as it copies), as a named fused op reads
    through the format changes in front of it."""
    return o.name == "ge.transdata" and o.operands[0] in args


def _loaded(value: SSAValue, args: list[SSAValue]) -> SSAValue | None:
    """The group operand a cube operand is loaded from (through a format change
    of it), or None if the group computes it."""
    if value in args:
        return value
    owner = value.owner
    if isinstance(owner, Operation) and _format_change_of_arg(owner, args):
        return owner.operands[0]
    return None


def _source(value: SSAValue, epilogue_ops: list[Operation]) -> SSAValue:
    """`value` looked through the identities after the cube op."""
    while isinstance(value.owner, Operation) and value.owner in epilogue_ops and value.owner.name in _IDENTITIES:
        value = value.owner.operands[0]
    return value


def _epilogue_args(ops: list[Operation], args: list[SSAValue]) -> list[SSAValue]:
    """The group operands the epilogue reads (in first-use order)."""
    used: list[SSAValue] = []
    for o in ops:
        for v in o.operands:
            if v in args and v not in used:
                used.append(v)
    return used


def _splat(const: ge.ConstOp) -> float | None:
    """The value of a constant whose elements are all equal (an immediate), or None."""
    if not const.is_splat() and math.prod(const.result.type.get_shape()) != 1:
        return None
    return float(np.asarray(const.as_array()).reshape(-1)[0])


def _replay(t: EpilogueTiles, cube: Operation, ops: list[Operation], consts, index, yields, k: KernelContext) -> None:
    """The group's ops after the cube op, on the tile (see the module docstring)."""
    v = t.v
    env: dict[SSAValue, Operand] = {cube.results[0]: t.product()}
    wide: dict[SSAValue, Operand] = {}

    def value(x: SSAValue) -> Operand:
        if x in env:
            return env[x]
        if x in index:
            return t.inputs[index[x]]
        if x in consts:
            return consts[x]
        raise k.unsupported(f"a value the cube epilogue does not have ({x})")

    def computed(x: SSAValue) -> Operand:
        """`x` as the epilogue computes with it: float tiles in fp32."""
        if x not in wide:
            operand = value(x)
            wide[x] = v.widened(operand) if isinstance(operand, Tile) and operand.element_type == f16 else operand
        return wide[x]

    late = _after_rounding(ops, yields, t.outputs)
    for o in ops:
        if isinstance(o, ge.ConstOp) or o in late:
            continue
        if o.name in _IDENTITIES:
            if _source(o.results[0], ops).owner not in late:
                env[o.results[0]] = value(o.operands[0])
            continue
        name, operands = _as_elementwise(o, k)
        result_type = o.results[0].type.element_type
        dst = v.temp(f32 if dtypes.is_float(result_type) else result_type)
        try:
            emit_elementwise(v, name, o.attr_values(), [computed(x) for x in operands], dst)
        except (VectorUnsupported, NotImplementedError) as e:
            raise k.unsupported(f"'{o.name}' in a cube epilogue: {e}") from None
        env[o.results[0]] = dst
    for out, y in zip(t.outputs, yields):
        source = _source(y, ops)
        if source.owner in late:
            v.cast(value(source.owner.operands[0]), out)
            emit_elementwise(v, source.owner.name, source.owner.attr_values(), [out], out)
            continue
        result = value(y)
        if isinstance(result, Tile):
            v.cast(result, out)
        else:
            v.fill(out, float(result))


def _after_rounding(ops: list[Operation], yields: list[SSAValue], outputs: list[Tile]) -> set[Operation]:
    """The `_AFTER_ROUNDING` ops the epilogue applies on the rounded output tile:
    each computed from a value of the epilogue (not an operand or a constant),
    its result only yielded (through identities), into float outputs narrower
    than fp32."""
    sources: dict[SSAValue, list[Tile]] = {}
    for y, out in zip(yields, outputs):
        sources.setdefault(_source(y, ops), []).append(out)
    late = set()
    for o in ops:
        if o.name not in _AFTER_ROUNDING or o.results[0] not in sources:
            continue
        x = _source(o.operands[0], ops)
        computed = isinstance(x.owner, Operation) and not isinstance(x.owner, ge.ConstOp)
        narrow = all(dtypes.is_narrow_float(out.element_type) for out in sources[o.results[0]])
        if computed and narrow and _only_yielded(o.results[0]):
            late.add(o)
    return late


def _only_yielded(value: SSAValue) -> bool:
    """Every use of `value` is a yield, or an identity whose uses are."""
    return all(
        use.operation.name == "fused.yield"
        or use.operation.name in _IDENTITIES and _only_yielded(use.operation.results[0])
        for use in value.uses
    )


def _as_elementwise(o: Operation, k: KernelContext) -> tuple[str, list[SSAValue]]:
    """The elementwise op an epilogue op computes, and its operands."""
    if isinstance(o, ge.BiasAddOp):
        rank = len(o.results[0].type.get_shape())
        if o.attr_value("axis") % rank != rank - 1:
            raise k.unsupported("a bias_add along another axis than the last in a cube epilogue")
        return "ge.add", list(o.operands)
    if isinstance(o, ge.ExpandOp):
        return "ge.identity", list(o.operands)
    if pattern_kind(o) not in (PatternKind.ELEMENTWISE, PatternKind.BROADCAST):
        raise k.unsupported(f"'{o.name}' in a cube epilogue")
    return o.name, list(o.operands)

