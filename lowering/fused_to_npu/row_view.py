"""The 2-D view of a row-tile kernel: which rows and columns, and the role each
operand plays in them (`row_kernel.py` tiles and emits the kernel).

The output is seen as a 2-D array of R rows by C columns. Each operand plays a
role in that view:

* FULL:   an R x C tensor like the output (`width` when narrower: a group's
          values differ in width around a concat);
* ROW:    one row of C values used by every row (a bias over the last dim; a
          norm's residual broadcast within its rows, expanded as it is loaded: `Spread`);
* COL:    one value per row (a per-row scalar, or the result of a row reduction);
* SCALAR: one value for everything (an immediate if it is a constant);
* WHOLE:  a tensor of any shape loaded whole, once per core, for the kernel's
          prologue to compute from (a group's setup: `templates/groups.py`).

A FULL or COL operand may repeat: view row r reads its row (r // repeat) %
period (a (S, S) mask of (B, H, S, S) scores repeats with period S; a
(4, 1, 8) operand of a (4, 5, 8) result repeats each row 5 times; a per-channel
value of NCHW seen as N*C rows of H*W has period C).

Three layouts of a tile, chosen by the view:

* plain: a tile of t rows is t*C consecutive elements in GM and in UB. When
  every operand is FULL (same shape and format) or a SCALAR, the physical
  buffers are processed flat, whatever their format, in rows of W elements.
  Operands held in FRACTAL_NZ are converted on the way (`nz_rows.py`), and so
  are NC1HWC0 results whose rows are their channels (`channel_rows.py`).
* transposed (`inner` I > 1): the reduced axis is not the last one. A view row
  is a (C x I) slab, C the reduced axis (softmax over axis 1 of (N, C, H*W)).
  The slabs are loaded as they lie and transposed in UB (`vtranspose`), so the
  body sees I*t rows of C, one per (inner index, slab), and reduces along rows
  like any other; results are transposed back before the store. Slabs too big
  for UB are cut into chunks of I (`inner_chunk`), one per tile.
* blocked (`blocked`): a FRACTAL_NZ or NC1HWC0 tensor with a bias over its
  blocked dim (N of NZ, C of 5HD), physically (B, J, P, c0): a view row is one
  of the B*P rows of all J blocks (a logical row of the matrix); a tile of t
  rows holds (J, t, c0) and the bias is expanded once into that shape.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from ...dialects.ge.formats import Format, fractal_shape
from .context import GmTensor, KernelContext
from .channel_rows import ChannelRows
from .nz_rows import NzRows


class Role(Enum):
    FULL = "full"
    ROW = "row"
    COL = "col"
    SCALAR = "scalar"
    WHOLE = "whole"


@dataclass(frozen=True)
class RowOperand:
    tensor: GmTensor
    role: Role
    immediate: float | None = None  # a SCALAR known at compile time
    period: int | None = None  # a COL whose row r uses element r % period
    width: int | None = None  # a FULL operand narrower than the view's rows (plain layout)
    repeat: int | None = None  # view row r uses row (r // repeat) % period of the operand
    base: int = 0  # plain layout: element offset of row 0 in the tensor (one plane of a stack)
    spread: Spread | None = None  # a ROW operand broadcast within the row: how it is expanded as it is loaded

    def columns(self, view_cols: int) -> int:
        """Elements of this operand in one row of the view."""
        if self.role == Role.FULL:
            return self.width or view_cols
        return 1 if self.role in (Role.COL, Role.SCALAR) else view_cols


@dataclass(frozen=True)
class Spread:
    """The GM-to-UB copies that expand a ROW operand broadcast within the row (a
    (10, 9) residual of a norm over (3, 6, 10, 9): its 90 values 18 times) into one
    dense row of the view: `rows` x `cols` (source row stride `src_stride`, 0
    where the row repeats, destination `dst_stride`), once per index of the outer
    `loops` ((extent, source step, destination step), outermost first; every
    destination step 32-byte aligned, as a copy's UB start must be)."""

    rows: int
    cols: int
    src_stride: int
    dst_stride: int
    loops: tuple[tuple[int, int, int], ...] = ()


_FLAT_WIDTH = 256


@dataclass(frozen=True)
class Blocked:
    """A FRACTAL_NZ / NC1HWC0 tensor as (batch, blocks, rows, c0) (module docstring)."""

    batch: int
    blocks: int
    rows: int
    c0: int


# ---- the 2-D view ---------------------------------------------------------------------


@dataclass(frozen=True)
class RowView:
    rows: int
    cols: int
    inputs: list[RowOperand]
    outputs: list[RowOperand]
    flat: bool
    inner: int = 1  # transposed layout: each row is a (cols x inner) slab
    inner_chunk: int | None = None  # columns of a slab per tile (divides inner)
    blocked: Blocked | None = None
    setup_bytes: int = 0  # UB the prologue allocates for itself (its temporaries), once per core

    @property
    def chunk(self) -> int:
        return self.inner_chunk or self.inner

    @property
    def tile_rows_of_view(self) -> int:
        """View rows, counting each chunk of a slab as one."""
        return self.rows * (self.inner // self.chunk)


def row_view(k: KernelContext, output_roles: Sequence[Role] | None = None) -> RowView:
    """The view of the op's tensors, or a located error if an operand fits no role."""
    out = k.outputs[0]
    if output_roles is None and all(_same_layout(t, out) or t.numel == 1 for t in k.inputs) and all(
        _same_layout(t, out) for t in k.outputs
    ):
        physical = out.physical_numel
        width = max(w for w in range(1, min(_FLAT_WIDTH, physical) + 1) if physical % w == 0)
        inputs = [_scalar(t) if t.numel == 1 and not _same_layout(t, out) else RowOperand(t, Role.FULL) for t in k.inputs]
        return RowView(physical // width, width, inputs, [RowOperand(t, Role.FULL) for t in k.outputs], flat=True)
    if out.format != Format.ND and output_roles is None:
        return blocked_view(k)
    for t in [*k.inputs, *k.outputs]:
        if t.format != Format.ND and t.numel != 1:
            raise k.unsupported(f"broadcasting with a {t.format.value} operand ({t.type})")
    shape = out.shape
    # Trailing dims every operand has whole or broadcasts whole are one run per row:
    # merged, the rows are fewer and longer, and a per-channel operand of NCHW is a
    # plain COL (not one repeated over the rows of H, which would cap a tile at W).
    merged = _trailing_dims(shape, [t.shape for t in k.inputs]) if output_roles is None else 1
    inputs = [_role(t, shape, k, merged) for t in k.inputs]
    cols = math.prod(shape[-merged:]) if shape else 1
    rows = math.prod(shape[:-merged]) if shape else 1
    split = wide_row_pieces(cols, k.hw) if output_roles is None else 1
    if split > 1:  # rows too wide for UB: each cut into `split` rows (ROW operands repeat with that period)
        inputs = [_role(t, shape, k, merged, split) for t in k.inputs]
        rows, cols = rows * split, cols // split
    roles = output_roles or [Role.FULL] * len(k.outputs)
    return RowView(rows, cols, inputs, [RowOperand(t, r) for t, r in zip(k.outputs, roles)], flat=False)


def blocked_view(k: KernelContext, vectors: bool = False) -> RowView:
    """A FRACTAL_NZ or NC1HWC0 output with FULL operands in its layout, scalars, and
    biases over its blocked dim (N of an (..., M, N) NZ matrix, C of NCHW 5HD):
    operands broadcasting along it, or with `vectors` any 1-D operand of its size
    (bias_add's bias)."""
    out = k.outputs[0]
    shape, fmt = out.shape, out.format
    if fmt == Format.FRACTAL_NZ:
        m0, n0 = fractal_shape(out.element_type)
        *batch, m, n = shape
        blocked = Blocked(math.prod(batch), -(-n // n0), -(-m // m0) * m0, n0)
        is_bias = lambda s: s[-1:] == (n,) and all(d == 1 for d in s[:-1])  # noqa: E731
        blocked_size = n
    elif fmt == Format.NC1HWC0:
        n, c, h, w = shape
        physical = out.physical_shape
        blocked = Blocked(n, physical[1], h * w, physical[-1])
        is_bias = lambda s: s[1:2] == (c,) and all(d == 1 for i, d in enumerate(s) if i != 1)  # noqa: E731
        blocked_size = c
    else:
        raise k.unsupported(f"broadcasting into a {fmt.value} result")
    inputs = []
    for t in k.inputs:
        padded = (1,) * (len(shape) - len(t.shape)) + t.shape
        if t.numel == 1:
            inputs.append(_scalar(t))
        elif _same_layout(t, out):
            inputs.append(RowOperand(t, Role.FULL))
        elif t.format == Format.ND and (is_bias(padded) or (vectors and t.shape == (blocked_size,))):
            inputs.append(RowOperand(t, Role.ROW))
        else:
            raise k.unsupported(f"operand {t.type} broadcasts to the {fmt.value} result {out.type} in no supported way")
    outputs = [RowOperand(t, Role.FULL) for t in k.outputs]
    if not all(_same_layout(t, out) for t in k.outputs):
        raise k.unsupported("results in different layouts")
    rows = blocked.batch * blocked.rows
    return RowView(rows, blocked.blocks * blocked.c0, inputs, outputs, flat=False, blocked=blocked)


def _row_pattern(padded: tuple[int, ...], shape: tuple[int, ...]) -> tuple[int, int] | None:
    """(q, p) such that view row r of the output reads row (r // q) % p of the
    operand, when the operand's row dims that are not broadcast form one run:
    q is the product of the output row dims after the run, p that of the run.
    None for any other broadcast (two separate runs)."""
    present = [d for d in range(len(shape) - 1) if shape[d] > 1 and padded[d] == shape[d]]
    broadcast = [d for d in range(len(shape) - 1) if shape[d] > 1 and padded[d] == 1]
    if not present:
        return None
    first, last = present[0], present[-1]
    if any(first < d < last for d in broadcast):
        return None
    return math.prod(shape[last + 1 : -1]), math.prod(shape[first : last + 1])


def nz_rows(view: RowView, op: RowOperand) -> NzRows | ChannelRows | None:
    """The conversion of an operand of a plain view held in a blocked format: the NZ
    conversion of a FRACTAL_NZ operand, or the channel rows of an NC1HWC0 result
    whose view rows are its (image, channel) pairs (`channel_rows.py`)."""
    if view.flat or view.blocked is not None or view.inner > 1:
        return None
    if op.role not in (Role.FULL, Role.COL) or op.period is not None:
        return None
    if op.tensor.format == Format.NC1HWC0 and op.role == Role.FULL and any(op is o for o in view.outputs):
        width = op.columns(view.cols)
        return ChannelRows(op.tensor, width) if ChannelRows.fits(op.tensor, view.rows, width) else None
    if op.tensor.format != Format.FRACTAL_NZ:
        return None
    return NzRows(op.tensor, op.columns(view.cols))


def _same_layout(t: GmTensor, out: GmTensor) -> bool:
    return t.shape == out.shape and t.format == out.format and t.physical_shape == out.physical_shape


def _scalar(t: GmTensor) -> RowOperand:
    return RowOperand(t, Role.SCALAR, t.splat())


def operand_role(k: KernelContext, t: GmTensor, shape: Sequence[int], columns: int = 1) -> RowOperand:
    """The role of an ND operand broadcasting to the ND `shape` seen as rows of its
    last `columns` dims (a norm's normalised dims), or a located error if it fits
    none. An operand that broadcasts within those columns is read as a ROW
    expanded as it is loaded (`Spread`) when it is the same for every row; one
    that also varies along the rows fits no role."""
    if t.format != Format.ND and t.numel != 1:
        raise k.unsupported(f"broadcasting with a {t.format.value} operand ({t.type})")
    shape = tuple(shape)
    rank = len(shape)
    padded = (1,) * (rank - len(t.shape)) + t.shape
    states = {_state(padded, shape, d) for d in range(rank - columns, rank)} - {None}
    if len(states) < 2 or t.numel == 1:  # the columns are all the operand's or all broadcast
        return _role(t, shape, k, columns)
    if any(d != 1 for d in padded[: rank - columns]):
        raise k.unsupported(f"operand of shape {list(t.shape)} broadcasts both along the rows and within the "
                            f"rows of {list(shape[rank - columns:])} of {list(shape)}")
    return RowOperand(t, Role.ROW, spread=_spread(k, padded[rank - columns :], shape[rank - columns :], t.itemsize))


def _spread(k: KernelContext, operand: tuple[int, ...], row: tuple[int, ...], itemsize: int) -> Spread:
    """The copies expanding `operand` (dims of 1 where it broadcasts) to a dense `row`:
    the innermost run of the operand's own dims as each copy's columns, the next
    dim as its rows, the outer dims as loops (their UB steps aligned)."""
    axes: list[tuple[int, int, int]] = []  # (extent, operand stride, row stride), inner first, merged
    src = dst = 1
    for size, extent in zip(reversed(operand), reversed(row)):
        if extent > 1:
            step = src if size == extent else 0
            if axes and axes[-1][1] * axes[-1][0] == step and axes[-1][2] * axes[-1][0] == dst:
                e, s, d = axes[-1]
                axes[-1] = (e * extent, s, d)
            else:
                axes.append((extent, step, dst))
        src, dst = src * size, dst * extent
    if axes[0][1] != 1:
        raise k.unsupported(f"an operand of shape {list(operand)} repeats each element within a row of {list(row)}")
    cols = axes[0][0]
    rows, src_stride, dst_stride = axes[1] if len(axes) > 1 else (1, cols, cols)
    loops = tuple(reversed(axes[2:]))
    align = max(1, k.hw.alignment["ub"] // itemsize)
    if any(d % align for _, _, d in loops):
        raise k.unsupported(f"an operand of shape {list(operand)} expands into a row of {list(row)} only by copies "
                            "at unaligned UB offsets")
    return Spread(rows, cols, src_stride, dst_stride, loops)


_WIDEST_ROW_FRACTION = 64
"""An elementwise row wider than UB / this many elements is cut (its buffers,
double-buffered, and the temporaries of a gelu would not leave room for rows)."""


def wide_row_pieces(cols: int, hw) -> int:
    """Into how many rows an elementwise row of `cols` elements is cut on `hw` (1: it fits)."""
    return _split(cols, hw.capacity("ub") // _WIDEST_ROW_FRACTION)


def _split(cols: int, widest: int) -> int:
    """The fewest pieces of equal width at most `widest` that `cols` cuts into (1:
    it fits, or only into pieces too narrow to be worth a tile row)."""
    if cols <= widest:
        return 1
    n = next((n for n in range(2, cols + 1) if cols % n == 0 and cols // n <= widest), 1)
    return n if cols // n >= widest // 8 else 1


def _trailing_dims(shape: tuple[int, ...], operands: list[tuple[int, ...]]) -> int:
    """How many trailing dims of the output make the columns: as many as every
    operand either has all of or broadcasts all of (so each row is one run)."""
    merged = 1
    states = [_state(o, shape, len(shape) - 1) for o in operands]
    while merged < len(shape) - 1:
        d = len(shape) - 1 - merged
        if shape[d] > 1 and any(_state(o, shape, d) not in (s, None) for o, s in zip(operands, states)):
            break
        merged += 1
    return merged


def _state(operand: tuple[int, ...], shape: tuple[int, ...], d: int) -> str | None:
    """Whether `operand` has dim d of `shape` ("full") or broadcasts it ("1");
    None when that dim is 1 in the output (either)."""
    if shape[d] == 1:
        return None
    padded_at = d - (len(shape) - len(operand))
    return "full" if padded_at >= 0 and operand[padded_at] == shape[d] else "1"


def _role(t: GmTensor, shape: tuple[int, ...], k: KernelContext, merged: int = 1, split: int = 1) -> RowOperand:
    """The role of operand `t` against the output `shape` whose last `merged` dims
    are the columns, those cut into `split` rows each (a row too wide for UB)."""
    rank = len(shape)
    padded = (1,) * (rank - len(t.shape)) + t.shape
    if merged > 1:
        padded = (*padded[:-merged], math.prod(padded[-merged:]))
        shape = (*shape[:-merged], math.prod(shape[-merged:]))
    if split > 1:
        padded = (*padded[:-1], split, padded[-1] // split) if padded[-1] > 1 else (*padded[:-1], 1, 1)
        shape = (*shape[:-1], split, shape[-1] // split)
    if t.numel == 1:
        return _scalar(t)
    if padded == shape:
        return RowOperand(t, Role.FULL)
    if padded[-1] == shape[-1] and all(d == 1 for d in padded[:-1]):
        return RowOperand(t, Role.ROW)
    if padded[-1] == 1 and padded[:-1] == shape[:-1]:
        return RowOperand(t, Role.COL)
    pattern = _row_pattern(padded, shape) if padded[-1] in (1, shape[-1]) else None
    if pattern is not None:
        repeat, period = pattern
        role = Role.FULL if padded[-1] == shape[-1] else Role.COL
        rows = math.prod(shape[:-1])
        return RowOperand(t, role, period=period if repeat * period < rows else None, repeat=repeat if repeat > 1 else None)
    raise k.unsupported(f"operand of shape {list(t.shape)} broadcasts to {list(shape)} in no supported way")
