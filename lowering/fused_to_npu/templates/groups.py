"""`fused.group` without a cube op: ONE row-tile kernel for the whole body.

Automatic fusion (`lowering/graph_to_fused/auto_fusion.py`) makes groups of
elementwise, broadcast, injective and reduce ops; when a group reduces, every
reduction reduces the trailing axes of the same rows, and every value keeps
those rows as its leading dims (`legality.py`). So a group is a set of *rows*
(the leading dims all its values share) and each body value is, per row:

* full:   `width` elements of the row (a width of 1 is one value per row: a
          reduction's result, used as a per-row scalar by wider ops);
* row:    one vector used by every row (a bias; no leading dims);
* scalar: one value (a splat constant inside the group is an immediate).

The kernel loads each input tile once, evaluates the body op by op on UB tiles
(`emit_elementwise` for elementwise ops, the row bodies of the reduction and
normalisation templates for the others), and stores the group's results once.
Intermediates live in UB temporaries, reused as soon as a value is dead.
Reshapes that keep the rows are free (the tile is the same data), a concat
along the first dim inside the row writes each input into its column range.
A *plane* of a group input (`ge.slice` of one index along its leading axes,
every later axis whole: a contiguous block of the ND tensor, one expert's
output of an `[E, B, N]` stack) is free too: the kernel reads that block as an
input of its own, from its offset (as the split-K partials' planes are read),
so a weighted sum over a stack's planes is one kernel. A *column* of a value
(`ge.slice` of one index along its last axis, every other axis whole) is one
value per row: the value's tile is transposed once per tile (`vtranspose`, its
rows starting 32-byte aligned as vector operands must) and the column is a row
of that.

A group may compute a value once per core before its rows, its *setup*:
the group's first `setup` body ops (the group attribute `setup = N`, set by
`fused_to_npu/setup_groups.py`) form a group of their own, with rows of their
own, over inputs the rows do not read. Each core loads those inputs whole
(`Role.WHOLE`), runs the setup in the row kernel's prologue, and the rows read
its one value as one vector for every row (or a scalar): a squeeze-and-
excitation block's squeeze product, which every channel of the excitation
reads whole, is computed in the excitation's kernel instead of a kernel (and a
phase) of its own. The reference semantics are the body's, in order.

Groups with a cube op belong to the cube kernels: this template hands them to
`templates/cube.py:lower_cube_group` when that exists. Anything else this
kernel cannot do raises `unsupported`; `fused-ungroup` (run before `ge-to-npu`)
then puts the group's ops back into the graph, where each gets its own kernel.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from xdsl.ir import Block, Operation, SSAValue

from ....core import dtypes
from ....dialects import fused, ge, npu
from ....dialects.fused.kinds import PatternKind, pattern_kind, reduced_axes_of
from ....dialects.ge.formats import Format, format_of
from ..context import GmTensor, KernelContext
from .registry import kernel_for
from ..channel_rows import ChannelRows
from ..nz_rows import NzRows
from ..kernel_builder import KernelBuilder
from ..row_kernel import Role, RowOperand, RowView, emit_row_kernel
from ..row_view import wide_row_pieces
from ..vector_emitter import UB_ALIGN_BYTES, Operand, Tile, VectorEmitter, VectorUnsupported, emit_elementwise
from .normalization import layer_norm_rows, softmax_rows
from .reduction import reduce_into

_ALIASES = (ge.ReshapeOp, ge.IdentityOp, ge.DropoutOp, ge.TransDataOp)
"""Ops that leave a row tile as it is: the group computes on logical values, and
formats only matter where its inputs and results meet GM."""
_ELEMENTWISE_NAMES = {op.name for op in ge.ELEMENTWISE_OPS} - {a.name for a in _ALIASES}
_REDUCE_KINDS = {"ge.reduce_sum": "sum", "ge.reduce_mean": "mean", "ge.reduce_max": "max"}
SETUP = "setup"
"""The group attribute counting its setup ops (module docstring)."""


def setup_ops(group: fused.GroupOp) -> list[Operation]:
    """The group's setup: its first `setup` body ops (none without the attribute)."""
    attr = group.attributes.get(SETUP)
    return group.body_ops()[: attr.value.data] if attr is not None else []


@dataclass(frozen=True)
class Part:
    """What a plan covers: ops of a group, the group inputs they read, the values
    they give (the rows: the body without its setup; a setup: its ops)."""

    ops: tuple[Operation, ...]
    args: tuple[SSAValue, ...]
    results: tuple[SSAValue, ...]


class GroupUnsupported(Exception):
    """A group this kernel cannot run (the message says why)."""


@dataclass
class Value:
    """A body value as the tiles see it."""

    kind: str  # "full", "row" or "scalar"
    width: int
    element_type: object
    immediate: float | None = None
    tile: Operand | None = None  # during emission


@dataclass
class GroupPlan:
    """The rows of a group and the role of each of its values (module docstring)."""

    group: fused.GroupOp
    part: Part | None = None  # None: the group's rows (its body but its setup)
    lead: tuple[int, ...] = ()
    values: dict[SSAValue, Value] = field(default_factory=dict)
    setup: "GroupPlan | None" = None  # the setup's own plan
    setup_value: SSAValue | None = None  # what the rows read of the setup

    @property
    def rows(self) -> int:
        return math.prod(self.lead)

    def __post_init__(self) -> None:
        if self.part is None:
            setup = setup_ops(self.group)
            main = self.group.body_ops()[len(setup) :]
            yields = tuple(self.group.block.last_op.operands)
            if setup:
                self.setup, self.setup_value = self._setup_plan(setup, main, yields)
            skipped = set(self.setup.part.args) if self.setup else set()
            self.part = Part(tuple(main), tuple(a for a in self.group.block.args if a not in skipped), yields)
        for op in self.part.ops:
            self._check_op(op)
        self.lead = _lead_dims(self.part.ops)
        for arg in self.part.args:
            if not is_plane_source(arg):
                self.values[arg] = self._classify(arg)
        if self.setup_value is not None:
            self.values[self.setup_value] = self._setup_role(self.setup_value)
        for op in self.part.ops:
            for r in op.results:
                self.values[r] = self._classify(r)
        self.width = max([v.width for v in self.values.values() if v.kind == "full"], default=1)

    def _setup_plan(self, setup: list[Operation], main: list[Operation], yields) -> tuple["GroupPlan", SSAValue]:
        """The setup's own plan and the one value the rows read of it."""
        inside = {r for op in setup for r in op.results}
        args: list[SSAValue] = []
        for op in setup:
            for v in op.operands:
                if v not in inside and v not in args:
                    args.append(v)
        read = {v for op in main for v in op.operands} | set(yields)
        crossing = [r for op in setup for r in op.results if r in read]
        if len(crossing) != 1 or crossing[0] in yields:
            raise GroupUnsupported(f"a setup giving the rows {len(crossing)} values (one, not a result, is read)")
        if any(a in read or is_plane_source(a) for a in args):
            raise GroupUnsupported("a group input read by both its setup and its rows, or through planes")
        value = root = crossing[0]
        aliases = []  # the setup value's tile is its root's, in the setup's own rows
        while root.owner in setup and isinstance(root.owner, _ALIASES):
            aliases.append(root.owner)
            root = root.owner.operands[0]
        ops = tuple(op for op in setup if op not in aliases)
        if any(use.operation in ops for alias in aliases for use in alias.results[0].uses):
            raise GroupUnsupported("a setup reading the alias of its value the rows read")
        plan = GroupPlan(self.group, Part(ops, tuple(args), (root,)))
        result = plan.values.get(root)
        one = result is not None and result.kind == "scalar" and plan.rows <= 1  # a single value
        if not one and (result is None or result.kind != "full" or result.width not in (1, plan.width)):
            raise GroupUnsupported("a setup value that is not computed per row of the setup")
        return plan, value

    def _setup_role(self, value: SSAValue) -> Value:
        """The setup value as the rows read it: one vector for every row, or a scalar."""
        shape = tuple(value.type.get_shape())
        if math.prod(shape) == 1:
            return Value("scalar", 1, value.type.element_type)
        if self._broadcast_use(value) is None:
            raise GroupUnsupported("a setup value that no elementwise op of the rows reads")
        role = self._broadcast_operand(value, shape)
        if role.kind != "row":
            raise GroupUnsupported("a setup value that is not one vector for every row")
        return role

    def _classify(self, value: SSAValue) -> Value:
        t = value.type
        shape = tuple(t.get_shape())
        owner = value.owner
        if format_of(t) not in (Format.ND, Format.FRACTAL_NZ) and not is_result_conversion(value):
            raise GroupUnsupported(f"a {format_of(t).value} value inside the group ({t})")
        if isinstance(owner, ge.ConstOp):
            if not (owner.is_splat() or math.prod(shape) == 1):
                raise GroupUnsupported("a non-splat constant inside the group")
            return Value("scalar", 1, t.element_type, float(owner.as_array().reshape(-1)[0]))
        if math.prod(shape) == 1:
            return Value("scalar", 1, t.element_type)
        if plane_offset(owner) is not None:
            return self._plane(owner, t)
        if isinstance(owner, Operation) or not self._broadcast_use(value):
            if shape[: len(self.lead)] != self.lead:
                raise GroupUnsupported(f"value of shape {list(shape)} does not keep the rows {list(self.lead)}")
            return Value("full", math.prod(shape) // max(1, self.rows), t.element_type)
        return self._broadcast_operand(value, shape)

    def _plane(self, op: ge.SliceOp, t) -> Value:
        """A plane as the rows see it: its block (the sliced unit axes dropped)
        must keep the rows, as the whole row or one value per row."""
        block = tuple(t.get_shape())[_plane_axes(op) :]
        if block[: len(self.lead)] != self.lead:
            raise GroupUnsupported(f"a plane of shape {list(block)} does not keep the rows {list(self.lead)}")
        return Value("full", math.prod(block) // max(1, self.rows), t.element_type)

    def _broadcast_use(self, arg: SSAValue) -> Operation | None:
        """An op broadcasting this group input against its result (numpy style)."""
        for use in arg.uses:
            op = use.operation
            if op.name in _ELEMENTWISE_NAMES or isinstance(op, (ge.BiasAddOp, ge.LayerNormOp, ge.RMSNormOp)):
                if use.index > 0 or op.name in _ELEMENTWISE_NAMES:
                    return op
        return None

    def _broadcast_operand(self, arg: SSAValue, shape: tuple[int, ...]) -> Value:
        """A group input as a broadcast operand of its user: the whole row (full),
        one value per row (full, width 1), or one vector for every row (row)."""
        user = self._broadcast_use(arg)
        result = tuple(user.results[0].type.get_shape())
        lead = len(self.lead)
        if result[:lead] != self.lead or len(shape) > len(result):
            raise GroupUnsupported(f"input of shape {list(shape)} against {list(result)}")
        padded = (1,) * (len(result) - len(shape)) + shape
        element_type = arg.type.element_type
        if padded == result:
            return Value("full", math.prod(shape) // max(1, self.rows), element_type)
        if all(d == 1 for d in padded[:lead]) and padded[lead:] == result[lead:]:
            return Value("row", math.prod(shape), element_type)
        if padded[:lead] == result[:lead] and all(d == 1 for d in padded[lead:]):
            return Value("full", 1, element_type)
        raise GroupUnsupported(f"input of shape {list(shape)} broadcasts to {list(result)} inside the rows")

    def _check_op(self, op: Operation) -> None:
        if pattern_kind(op) == PatternKind.CUBE:
            raise GroupUnsupported("a cube op")
        supported = (
            op.name in _ELEMENTWISE_NAMES
            or isinstance(op, (*_ALIASES, ge.ConstOp, ge.BiasAddOp, ge.ConcatOp))
            or op.name in _REDUCE_KINDS
            or isinstance(op, (ge.SoftmaxOp, ge.LogSoftmaxOp, ge.LayerNormOp, ge.RMSNormOp))
            or plane_offset(op) is not None
            or column_index(op) is not None
        )
        if not supported:
            raise GroupUnsupported(f"'{op.name}' inside the group")


def is_result_conversion(value: SSAValue) -> bool:
    """A conversion of a group result to NC1HWC0 (`ge.transdata` yielded and used
    nowhere else): the kernel writes that result's image itself, its rows being
    the channels (`channel_rows.py`; `fused_to_npu/group_formats.py` moves such a
    conversion into the group)."""
    op = value.owner
    if not isinstance(op, ge.TransDataOp) or format_of(value.type) != Format.NC1HWC0:
        return False
    return all(isinstance(use.operation, fused.YieldOp) for use in value.uses)


def _plane_axes(op: Operation | None) -> int | None:
    """For a plane of a group input (module docstring): how many leading axes the
    slice takes one index of; None for any other op."""
    if not isinstance(op, ge.SliceOp) or not isinstance(op.input.owner, Block):
        return None
    a = op.attr_values()
    shape = tuple(op.input.type.get_shape())
    cut = [i for i, (start, end, size) in enumerate(zip(a.starts, a.ends, shape)) if (start, end) != (0, size)]
    if not cut or any(step != 1 for step in a.steps) or any(a.ends[i] - a.starts[i] != 1 for i in range(cut[-1] + 1)):
        return None
    return cut[-1] + 1


def column_index(op: Operation | None) -> int | None:
    """For a column (module docstring): the index it takes along the last axis;
    None for any other op."""
    if not isinstance(op, ge.SliceOp):
        return None
    a = op.attr_values()
    shape = tuple(op.input.type.get_shape())
    if len(shape) < 2 or any(step != 1 for step in a.steps) or a.ends[-1] - a.starts[-1] != 1:
        return None
    if any((start, end) != (0, size) for start, end, size in zip(a.starts[:-1], a.ends[:-1], shape[:-1])):
        return None
    return a.starts[-1]


def plane_offset(op: Operation | None) -> int | None:
    """The element offset of a plane's block in its input (row-major), or None
    when `op` is not a plane."""
    axes = _plane_axes(op)
    if axes is None:
        return None
    shape = tuple(op.input.type.get_shape())
    return sum(start * math.prod(shape[i + 1 :]) for i, start in enumerate(op.attr_values().starts[:axes]))


def is_plane_source(arg: SSAValue) -> bool:
    """A group input read only through its planes (never loaded whole)."""
    return bool(arg.uses) and all(plane_offset(use.operation) is not None for use in arg.uses)


def _lead_dims(body: tuple[Operation, ...]) -> tuple[int, ...]:
    """The rows: the leading dims the reductions keep, else the longest leading dims
    every computed value shares (all but the last dim at most)."""
    ops = [op for op in body if not isinstance(op, ge.ConstOp) and plane_offset(op) is None]
    for op in ops:
        if pattern_kind(op) == PatternKind.REDUCE:
            shape = tuple(op.operands[0].type.get_shape())
            return shape[: len(shape) - len(reduced_axes_of(op))]
    shapes = [tuple(r.type.get_shape()) for op in ops for r in op.results if math.prod(r.type.get_shape()) > 1]
    if not shapes:
        return ()
    lead: list[int] = []
    for d in range(min(len(s) for s in shapes) - 1):
        if len({s[d] for s in shapes}) > 1:
            break
        lead.append(shapes[0][d])
    return tuple(lead)


# ---- the template ----------------------------------------------------------------------------


@kernel_for(fused.GroupOp)
def lower_group(op: fused.GroupOp, k: KernelContext) -> None:
    if any(pattern_kind(o) == PatternKind.CUBE for o in op.body_ops()):
        delegate = _cube_group_template()
        if delegate is None:
            raise k.unsupported("a group with a cube op (the cube kernels take those)")
        delegate(op, k)
        return
    try:
        plan = GroupPlan(op)
        _GroupKernel(op, k, plan).emit()
    except (GroupUnsupported, VectorUnsupported) as e:
        raise k.unsupported(str(e)) from None


def _cube_group_template():
    from . import cube

    return getattr(cube, "lower_cube_group", None)


class _GroupKernel:
    def __init__(self, op: fused.GroupOp, k: KernelContext, plan: GroupPlan):
        self.op, self.k, self.plan = op, k, plan
        self.ops = list(plan.part.ops)
        self.args = list(plan.part.args)
        self.yields = list(plan.part.results)
        self.tensors = dict(zip(op.block.args, k.inputs))

    def emit(self) -> None:
        plan, k = self.plan, self.k
        pieces = self._pieces()
        if pieces > 1:  # rows too wide for UB: each cut into `pieces` rows
            for value in plan.values.values():
                if value.kind == "full":
                    value.width //= pieces
            plan.width //= pieces
        inputs = [self._operand(t, plan.values[v], base) for t, v, base in self._read()]
        prologue, setup_bytes = None, 0
        if plan.setup is not None:
            inputs += [self._whole(self.tensors[a]) for a in plan.setup.part.args]
            prologue, setup_bytes = self._prologue, self._setup_bytes()
        outputs = [self._output(t, plan.values[y]) for t, y in zip(k.outputs, self.yields)]
        view = RowView(max(1, plan.rows) * pieces, plan.width, inputs, outputs, flat=False, setup_bytes=setup_bytes)
        k.explain(
            f"group of {len(self.ops)} ops on rows {list(plan.lead)}"
            + (f", each cut into {pieces}" if pieces > 1 else "")
            + f", widest value {plan.width}"
            + (f"; a setup of {len(plan.setup.part.ops)} ops on rows {list(plan.setup.lead)} per core" if plan.setup else "")
        )
        emit_row_kernel(k, view, self._body, prologue)

    # ---- the setup ---------------------------------------------------------------------

    def _whole(self, t: GmTensor) -> RowOperand:
        if t.format != Format.ND:
            raise GroupUnsupported(f"a {t.format.value} input of the group's setup ({t.type})")
        return RowOperand(t, Role.WHOLE)

    def _prologue(self, v: VectorEmitter, ins: list[Operand]) -> list[Operand]:
        """The setup, once per core, from its inputs loaded whole (after the rows'
        inputs in `ins`); its value is appended as one vector (or a scalar)."""
        wholes = ins[len(self._read()) :]
        out = self._run_setup(v.b, wholes, lambda shape, t: v.b.alloc(shape, t, "ub"))
        scalar = self.plan.values[self.plan.setup_value].kind == "scalar"
        return [*ins, Tile(out.buffer, 0, 0, col_stride=0 if scalar else 1)]

    def _run_setup(self, b, wholes: list[Tile], alloc) -> Tile:
        """Emits the setup's body over its own rows; the tile of its value."""
        sub = self.plan.setup
        rows, cols = max(1, sub.rows), sub.width

        def make(kind: str, element_type) -> Tile:
            if kind == "col":
                return Tile(alloc([rows], element_type), 0, 1, col_stride=0)
            return Tile(alloc([rows * cols], element_type), 0, cols)

        emitter = VectorEmitter(b, rows, cols, lambda t: make("full", t), lambda t: make("col", t))
        root = sub.part.results[0]
        out = make("col" if sub.values[root].width == 1 else "full", root.type.element_type)
        ins = [_setup_input(w, sub.values[a]) for w, a in zip(wholes, sub.part.args)]
        _GroupKernel(self.op, self.k, sub)._body(emitter, ins, [out])
        return out

    def _setup_bytes(self) -> int:
        """UB the setup's temporaries and value take (a dry run on a scratch kernel)."""
        scratch = KernelBuilder("scratch", [])
        sizes: list[int] = []

        def alloc(shape, element_type):
            sizes.append(-(-math.prod(shape) * dtypes.byte_width(element_type) // UB_ALIGN_BYTES) * UB_ALIGN_BYTES)
            return scratch.alloc(shape, element_type, "ub")

        wholes = [Tile(scratch.alloc([self.tensors[a].numel], a.type.element_type, "ub"), 0, 0) for a in self.plan.setup.part.args]
        self._run_setup(scratch, wholes, alloc)
        return sum(sizes)

    def _pieces(self) -> int:
        """Into how many rows each row is cut when it is too wide for UB (as the
        elementwise kernels cut theirs, `row_view.wide_row_pieces`): only when every
        op is elementwise, every value is a whole row or a scalar, and every GM
        tensor is ND, so a piece of a row is computed like a row."""
        plan, k = self.plan, self.k
        if self.plan.setup is not None or any(
            not (o.name in _ELEMENTWISE_NAMES or isinstance(o, (*_ALIASES, ge.ConstOp))) for o in self.ops
        ):
            return 1
        if any(v.kind == "row" or (v.kind == "full" and v.width != plan.width) for v in plan.values.values()):
            return 1
        if any(t.format != Format.ND and t.numel > 1 for t in [*k.inputs, *k.outputs]):
            return 1
        return wide_row_pieces(plan.width, k.hw)

    def _read(self) -> list[tuple[GmTensor, SSAValue, int | None]]:
        """What the kernel reads, in the order of the body's inputs: each group input
        (GM tensor, block argument, no offset), or each plane of one read only
        through its planes (GM tensor, the plane's value, its block's offset)."""
        read = []
        for arg in self.args:
            t = self.tensors[arg]
            if not is_plane_source(arg):
                read.append((t, arg, None))
                continue
            for op in self.ops:  # in body order: the same order every time
                if op.operands and op.operands[0] is arg and plane_offset(op) is not None:
                    read.append((t, op.results[0], plane_offset(op)))
        return read

    def _operand(self, t: GmTensor, value: Value, base: int | None = None) -> RowOperand:
        self._check_format(t, value)
        if base is not None:  # a plane: a FULL or COL operand from its block's offset
            if t.format != Format.ND or value.kind != "full":
                raise GroupUnsupported(f"a plane of a {t.format.value} group input ({t.type})")
            return RowOperand(t, Role.COL, base=base) if value.width == 1 else RowOperand(t, Role.FULL, width=value.width, base=base)
        if value.kind == "scalar":
            return RowOperand(t, Role.SCALAR, t.splat())
        if value.kind == "row":
            return RowOperand(t, Role.ROW)
        if value.width == 1:
            return RowOperand(t, Role.COL)
        return RowOperand(t, Role.FULL, width=value.width)

    def _output(self, t: GmTensor, value: Value) -> RowOperand:
        if t.format == Format.NC1HWC0 and t.numel > 1:
            if value.kind != "full" or not ChannelRows.fits(t, self.plan.rows, value.width):
                raise GroupUnsupported(f"an NC1HWC0 result ({t.type}) whose channels are not the rows {list(self.plan.lead)}")
            return RowOperand(t, Role.FULL, width=value.width)
        self._check_format(t, value)
        if value.kind != "full":
            raise GroupUnsupported("a group result that is not computed per row")
        return RowOperand(t, Role.COL) if value.width == 1 else RowOperand(t, Role.FULL, width=value.width)

    def _check_format(self, t: GmTensor, value: Value) -> None:
        """GM tensors in FRACTAL_NZ are converted on the way in and out, by rows of
        whole matrices or of matrix rows."""
        if t.format == Format.ND or t.numel == 1:
            return
        if t.format != Format.FRACTAL_NZ or value.kind != "full" or not NzRows.fits(t, value.width):
            raise GroupUnsupported(f"a {t.format.value} group operand ({t.type}) with rows {list(self.plan.lead)}")

    # ---- the body ------------------------------------------------------------------------

    def _body(self, v: VectorEmitter, ins: list[Operand], outs: list[Tile]) -> None:
        values = self.plan.values
        tiles: dict[SSAValue, Operand] = {}
        self._transposed: dict[SSAValue, Tile] = {}  # `_column`'s, per tile
        read = self._read()
        for (_, value, _), tile in zip(read, ins):
            tiles[value] = tile
        if self.plan.setup_value is not None:  # the prologue's, after the setup's inputs
            tiles[self.plan.setup_value] = ins[len(read) + len(self.plan.setup.part.args)]
        roots = _alias_roots(self.ops)
        destinations = {}  # values computed straight into an output tile
        for y, out in zip(self.yields, outs):
            root = roots.get(y, y)
            if root not in destinations and isinstance(root.owner, Operation) and root.owner.parent is y.owner.parent:
                destinations[root] = out
        kept = {roots.get(y, y) for y in self.yields}
        madds = _multiply_adds(self.ops, roots, kept)
        last_use = _last_uses(self.ops, roots, madds)
        temps: list[Tile] = []
        for index, op in enumerate(self.ops):
            if isinstance(op, ge.ConstOp):
                tiles[op.results[0]] = values[op.results[0]].immediate
                continue
            result = op.results[0]
            if plane_offset(op) is not None:
                continue  # an input of its own (`_read`)
            if isinstance(op, _ALIASES):
                tiles[result] = tiles[op.operands[0]]
                continue
            if op in madds.values():
                continue  # computed by its addition's vmla
            inherited = None
            if self._column_view(v, op, tiles):  # no instruction; its source may die here
                pass
            elif op in madds and self._multiply_add(v, madds[op], tiles, temps):
                acc = next(o for o in op.operands if o is not madds[op].results[0])
                inherited = roots.get(acc, acc)
                tiles[result] = tiles[acc]
            else:
                if op in madds:  # the accumulator is not a temporary: the product first
                    product = madds[op].results[0]
                    tiles[product] = self._temp(v, values[product])
                    temps.append(tiles[product])
                    self._evaluate(v, madds[op], [tiles[o] for o in madds[op].operands], tiles[product])
                dst = destinations.get(result)
                if dst is None:
                    dst = self._temp(v, values[result])
                    temps.append(dst)
                self._evaluate(v, op, [tiles[o] for o in op.operands], dst)
                tiles[result] = dst
            used = [*op.operands, *(madds[op].operands if op in madds else ())]
            for root in {roots.get(o, o) for o in used} - {inherited}:
                if last_use.get(root) == index and root not in kept and any(tiles.get(root) is t for t in temps):
                    v.release(tiles[root])
        for y, out in zip(self.yields, outs):
            if tiles[y] is not out:
                self._emitter(v, values[y]).cast(_as_tile(tiles[y]), out)

    def _column_view(self, v: VectorEmitter, op: Operation, tiles: dict) -> bool:
        """A column of a tile in its own type is the row of the tile's transpose
        (`_column`), read in place as a per-row operand: no copy. (A column that
        changes type is cast out of that row by `_evaluate`.)"""
        values = self.plan.values
        if column_index(op) is None or values[op.results[0]].width != 1:
            return False
        source = tiles.get(op.operands[0])
        if not isinstance(source, Tile) or source.element_type != op.results[0].type.element_type:
            return False
        tiles[op.results[0]] = self._column(v, op, source, values[op.operands[0]].width)
        return True

    def _multiply_add(self, v: VectorEmitter, mul: Operation, tiles: dict, temps: list[Tile]) -> bool:
        """`acc + x * y` as one vmla into the accumulator's temporary (its last use:
        `_multiply_adds`), when the accumulator is a temporary and the factors tiles."""
        add = next(iter(mul.results[0].uses)).operation
        acc = tiles[next(o for o in add.operands if o is not mul.results[0])]
        factors = [tiles[o] for o in mul.operands]
        if not any(acc is t for t in temps) or not all(isinstance(f, Tile) for f in factors):
            return False
        self._emitter(v, self.plan.values[add.results[0]]).instr(npu.VMlaOp, *factors, acc)
        return True

    def _temp(self, v: VectorEmitter, value: Value) -> Tile:
        if value.kind == "row":
            raise GroupUnsupported("a per-row-independent value computed inside the group")
        if value.width == 1:
            return v.col_temp(value.element_type)
        full = v.temp(value.element_type)
        return Tile(full.buffer, full.offset, value.width)

    def _emitter(self, v: VectorEmitter, value: Value) -> VectorEmitter:
        """Instructions over the rows of a value's width (per-row values: one row of them)."""
        return v.per_row() if value.width == 1 else v.with_cols(value.width)

    def _evaluate(self, v: VectorEmitter, op: Operation, operands: list[Operand], dst: Tile) -> None:
        values = self.plan.values
        result = values[op.results[0]]
        e = self._emitter(v, result)
        if op.name in _ELEMENTWISE_NAMES or isinstance(op, ge.BiasAddOp):
            self._check_broadcasts(op, result)
            name = "ge.add" if isinstance(op, ge.BiasAddOp) else op.name
            emit_elementwise(e, name, op.attr_values(), operands, dst)
            return
        source = values[op.operands[0]]
        operands = [_as_tile(operands[0], "a constant row operand"), *operands[1:]]
        rows = v.with_cols(source.width)
        if op.name in _REDUCE_KINDS:
            _require_whole_row(self.plan, op)
            reduce_into(rows, _REDUCE_KINDS[op.name], source.width, operands[0], dst)
        elif isinstance(op, (ge.SoftmaxOp, ge.LogSoftmaxOp)):
            _require_whole_row(self.plan, op)
            softmax_rows(rows, operands[0], dst, isinstance(op, ge.LogSoftmaxOp))
        elif isinstance(op, (ge.LayerNormOp, ge.RMSNormOp)):
            _require_whole_row(self.plan, op)
            rms = isinstance(op, ge.RMSNormOp)
            gamma, beta = operands[1], None if rms else operands[2]
            layer_norm_rows(rows, operands[0], dst, gamma, beta, op.attr_value("epsilon"), rms)
        elif isinstance(op, ge.ConcatOp):
            self._concat(v, op, operands, dst)
        elif column_index(op) is not None and result.width == 1:
            v.per_row().cast(self._column(v, op, operands[0], source.width), dst)
        else:
            raise GroupUnsupported(f"'{op.name}' inside the group")

    def _column(self, v: VectorEmitter, op: ge.SliceOp, source: Tile, width: int) -> Tile:
        """Column `column_index(op)` of `source` (rows of `width`) as one value per
        row: the source transposed once per tile into rows of 32-byte aligned
        starts (a vector operand's alignment), then that row."""
        element = source.element_type
        stride = -(-v.rows * dtypes.byte_width(element) // UB_ALIGN_BYTES) * UB_ALIGN_BYTES // dtypes.byte_width(element)
        transposed = self._transposed.get(op.input)
        if transposed is None:
            if width * stride > v.rows * self.plan.width:
                raise GroupUnsupported(f"columns of rows of {width}: their transpose outgrows a temporary")
            transposed = v.temp(element)
            v.b.emit(npu.VTransposeOp, source.buffer, source.offset, transposed.buffer, transposed.offset,
                     rows=v.rows, cols=width, strides=[source.row_stride, stride])
            self._transposed[op.input] = transposed
        return Tile(transposed.buffer, v.b.add(transposed.offset, column_index(op) * stride), 1, col_stride=0)

    def _check_broadcasts(self, op: Operation, result: Value) -> None:
        if isinstance(op, ge.BiasAddOp) and op.attr_value("axis") % len(op.operands[0].type.get_shape()) != len(
            op.operands[0].type.get_shape()
        ) - 1:
            raise GroupUnsupported("bias_add along an axis other than the last inside a group")
        for operand in op.operands:
            value = self.plan.values[operand]
            if value.kind == "full" and value.width not in (1, result.width):
                raise GroupUnsupported(f"'{op.name}' broadcasts inside a row ({value.width} to {result.width})")
            if value.kind == "row" and value.width not in (1, result.width):
                raise GroupUnsupported(f"'{op.name}' broadcasts a vector of {value.width} to rows of {result.width}")

    def _concat(self, v: VectorEmitter, op: ge.ConcatOp, operands: list[Operand], dst: Tile) -> None:
        rank = len(op.results[0].type.get_shape())
        if op.attr_value("axis") % rank != len(self.plan.lead):
            raise GroupUnsupported("a concat inside the rows of a group, not along their first dim")
        offset = 0
        for value, tile in zip(op.operands, operands):
            width = self.plan.values[value].width
            if (offset * dtypes.byte_width(dst.element_type)) % UB_ALIGN_BYTES:
                raise GroupUnsupported("a concat piece at an unaligned offset of the row")
            piece = Tile(dst.buffer, v.b.add(dst.offset, offset), dst.row_stride)
            v.with_cols(width).cast(_as_tile(tile), piece)
            offset += width


def _setup_input(whole: Tile, value: Value) -> Operand:
    """A setup input loaded whole, as the setup's rows read it."""
    if value.kind == "scalar":
        return Tile(whole.buffer, 0, 0, col_stride=0)
    if value.kind == "row":
        return Tile(whole.buffer, 0, 0)
    if value.width == 1:
        return Tile(whole.buffer, 0, 1, col_stride=0)
    return Tile(whole.buffer, 0, value.width)


def _as_tile(operand: Operand, what: str = "a constant group result") -> Tile:
    if not isinstance(operand, Tile):
        raise GroupUnsupported(what)
    return operand


def _require_whole_row(plan: GroupPlan, op: Operation) -> None:
    shape = tuple(op.operands[0].type.get_shape())
    if tuple(reduced_axes_of(op)) != tuple(range(len(plan.lead), len(shape))):
        raise GroupUnsupported(f"'{op.name}' reduces part of a row")


def _alias_roots(ops: list[Operation]) -> dict[SSAValue, SSAValue]:
    """Each alias (a reshape's result...) -> the value whose tile it shares."""
    roots: dict[SSAValue, SSAValue] = {}
    for op in ops:
        if isinstance(op, _ALIASES):
            source = op.operands[0]
            roots[op.results[0]] = roots.get(source, source)
    return roots


def _last_uses(ops: list[Operation], roots: dict[SSAValue, SSAValue], madds: dict | None = None) -> dict[SSAValue, int]:
    """The index of the last op reading each value (through its aliases); a
    product computed by its addition's vmla (`madds`) reads its factors there."""
    last: dict[SSAValue, int] = {}
    madds = madds or {}
    deferred = {mul: add for add, mul in madds.items()}
    index_of = {op: i for i, op in enumerate(ops)}
    for index, op in enumerate(ops):
        at = index_of[deferred[op]] if op in deferred else index
        for operand in op.operands:
            root = roots.get(operand, operand)
            last[root] = max(last.get(root, at), at)
    return last


def _multiply_adds(body: list[Operation], roots: dict[SSAValue, SSAValue], kept: set[SSAValue]) -> dict[Operation, Operation]:
    """Additions `acc + x * y` computed as one vmla (dst = x * y + dst: the same
    roundings) into acc's temporary: addition -> product, where the product (of
    the addition's shape and type) is read by that addition alone and acc, computed
    in the group, not a result of it, is last read there."""
    ops = list(body)
    last = _last_uses(ops, roots)
    found: dict[Operation, Operation] = {}
    for index, add in enumerate(ops):
        if not isinstance(add, ge.AddOp) or not dtypes.is_float(add.results[0].type.element_type):
            continue
        acc, product = add.operands if isinstance(add.operands[1].owner, ge.MulOp) else reversed(add.operands)
        mul = product.owner
        if not isinstance(mul, ge.MulOp) or mul.parent is not add.parent or len(list(product.uses)) != 1 or acc is product:
            continue
        root = roots.get(acc, acc)
        if not isinstance(root.owner, Operation) or isinstance(root.owner, ge.ConstOp) or root in kept or last.get(root) != index:
            continue
        if any(v.type != add.results[0].type for v in (acc, product)):
            continue
        found[add] = mul
    return found
