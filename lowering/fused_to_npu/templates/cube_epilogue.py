"""What a cube kernel does with an output tile between L0C and GM.

An epilogue reads the kernel's products (fp32, moved from L0C into UB by the
fixpipe) and extra GM operands broadcast to the output (a bias, a residual, a
mask, norm parameters), computes on the vector unit, and writes one or more
outputs. Without a body it is the plain cast: the fixpipe converts the product
to the output's type on its way to UB.

The body is a Python function of an `EpilogueTiles`: the emitter (`v`, over
the chunk's rows x the block's columns, with full and per-row temporaries), the
product tiles, the operands (UB tiles, or floats for splat constants) and the
output tiles. It computes with `vector_emitter.emit_elementwise` (the one
definition of each ge op on the vector unit) and the vector templates' row
bodies (`normalization.layer_norm_rows`, ...).

Operands play the row kernel's roles (`row_view.Role`): FULL (a tile per row
chunk), ROW (one row per item: a bias), COL (one value per row), SCALAR (one
value).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from xdsl.dialects.builtin import f32
from xdsl.ir import Attribute

from ....core import dtypes
from ....dialects import npu
from ...tiling import FRACTAL, EpilogueCost
from ..kernel_builder import KernelBuilder
from ..row_view import Role
from ..vector_emitter import Operand, Tile, VectorEmitter, VectorUnsupported
from .cube_operands import NZ, MatrixView


STREAM_COPIES = 2
"""Copies of the streamed UB buffers of a vector epilogue (products, FULL / COL
operands, outputs), used in turn by the row chunks."""

PLAIN_COPIES = 4
"""Copies of the output tile of a plain cast epilogue: small enough to give each
row chunk of an item its own, so L0C drains at the fixpipe's pace."""


@dataclass(frozen=True)
class EpilogueInput:
    view: MatrixView | None
    immediate: float | None = None  # a splat constant: no buffer at all

    @property
    def role(self) -> Role:
        if self.immediate is not None or self.view.rows == 1 and self.view.cols == 1:
            return Role.SCALAR
        if self.view.rows == 1:
            return Role.ROW
        if self.view.cols == 1:
            return Role.COL
        return Role.FULL

    @property
    def element_type(self) -> Attribute:
        return self.view.tensor.element_type


@dataclass
class EpilogueTiles:
    """What a body computes with (see the module docstring)."""

    v: VectorEmitter
    products: list[Tile]
    inputs: list[Operand]
    outputs: list[Tile]

    def product(self, index: int = 0) -> Tile:
        return self.products[index]


Body = Callable[[EpilogueTiles], None]


class ScratchTiles:
    """UB temporaries of a body that runs once per chunk: allocated on first use and
    reused by every chunk (bodies ask for them in the same order each time; `reset`
    starts a chunk). Full tiles are `rows x row_stride`, per-row ones `rows`."""

    def __init__(self, b: KernelBuilder, rows: int, row_stride: int, name: str = "tmp"):
        self.b, self.rows, self.row_stride, self.name = b, rows, row_stride, name
        self.pools: tuple[list[Tile], list[Tile]] = ([], [])
        self.cursor = [0, 0]

    def reset(self) -> None:
        self.cursor = [0, 0]

    def temp(self, element_type: Attribute) -> Tile:
        return self._take(0, element_type, self.rows * self.row_stride, self.row_stride, 1)

    def column(self, element_type: Attribute) -> Tile:
        return self._take(1, element_type, -(-self.rows // 8) * 8, 1, 0)

    def emitter(self, rows: int, cols: int) -> VectorEmitter:
        return VectorEmitter(self.b, rows, cols, self.temp, self.column)

    def _take(self, which: int, element_type: Attribute, size: int, row_stride: int, col_stride: int) -> Tile:
        pool, index = self.pools[which], self.cursor[which]
        self.cursor[which] += 1
        if index == len(pool):
            buffer = self.b.alloc([size], element_type, "ub", f"{self.name}{which}_{index}")
            pool.append(Tile(buffer, 0, row_stride, col_stride))
        tile = pool[index]
        if tile.element_type != element_type:
            raise VectorUnsupported("a body asking for temporaries in a varying order")
        return tile


@dataclass(frozen=True)
class CubeEpilogue:
    outputs: list[MatrixView]
    inputs: list[EpilogueInput] = field(default_factory=list)
    body: Body | None = None  # None: outputs[0] = products[0] cast by the fixpipe

    @property
    def form(self) -> tuple:
        """What its buffers depend on: epilogues of one form may take turns in them."""
        inputs = tuple((i.immediate is not None, i.view.form if i.view is not None else None) for i in self.inputs)
        return (tuple(o.form for o in self.outputs), inputs, self.body is None)

    @property
    def ub_block(self) -> int:
        """Columns per block of its UB tiles when they may be laid out as its NZ outputs
        store them, block by block (`[column block][row][column]`), 0 for row-major
        tiles only (the tiling's estimate chooses the form: `CubeTiling.ub_block`). A row-major tile of an NZ output moves a short run per row and block
        between GM and UB (32 bytes: 8 fp32 channels of an NC1HWC0 pixel): a
        blocked one moves a run per block. Taken when every output and every input
        with a tile per row chunk is an NZ view in blocks of one width that divides
        a fractal (the tiles' columns are whole fractals), and there is a body: the
        fixpipe moves whole fractals of L0C, so a plain cast's tile is row-major."""
        if self.body is None:
            return 0
        views = [*self.outputs, *(i.view for i in self.inputs if i.view is not None and i.role == Role.FULL)]
        blocks = {v.block for v in views}
        if any(v.layout != NZ or v.transposed for v in views) or len(blocks) != 1:
            return 0
        block = blocks.pop()
        return block if FRACTAL % block == 0 else 0

    @property
    def output_types(self) -> list[Attribute]:
        return [o.tensor.element_type for o in self.outputs]

    def cost(self, products: int) -> EpilogueCost:
        """UB footprint and vector work, from a dry run of the body."""
        out_bytes = sum(dtypes.byte_width(t) for t in self.output_types)
        if self.body is None:
            fixpipe = dtypes.byte_width(self.output_types[0])
            copies = PLAIN_COPIES
            transposed = fixpipe if self.outputs[0].transposed else 0
            return EpilogueCost(
                copies * fixpipe + transposed, ub_fixed_bytes=32 * copies, out_bytes=out_bytes, fixpipe_bytes=fixpipe, copies=copies
            )
        run = dry_run(self, products)
        streams = products * 4 + out_bytes
        full = per_row = per_col = 0
        for i in self.inputs:
            if i.immediate is not None:
                continue
            size = dtypes.byte_width(i.element_type)
            if i.role == Role.FULL:
                full += size
            elif i.role == Role.COL:
                per_row += size
            elif i.role == Role.ROW:
                per_col += size
        transposes = sum(dtypes.byte_width(o.tensor.element_type) for o in self.outputs if o.transposed) + sum(
            dtypes.byte_width(i.element_type) for i in self.inputs if i.role == Role.FULL and i.view.transposed
        )
        buffers = STREAM_COPIES * (products + len(self.outputs) + len(self.inputs)) + run.temp_count + run.column_count
        return EpilogueCost(
            ub_bytes_per_element=STREAM_COPIES * (streams + full) + run.temp_bytes + transposes,
            ub_bytes_per_row=STREAM_COPIES * per_row + run.column_bytes,
            ub_bytes_per_col=per_col,
            ub_fixed_bytes=32 * (buffers + len(self.inputs)),
            vector_instructions=run.instructions,
            vector_repeats_per_element=run.repeats_per_element,
            out_bytes=out_bytes,
            fixpipe_bytes=4,
            copies=STREAM_COPIES,
            block=self.ub_block,
            in_bytes=full,
        )


@dataclass
class DryRun:
    temp_count: int = 0
    temp_bytes: int = 0  # per element, over all temporaries
    column_count: int = 0
    column_bytes: int = 0  # per row
    instructions: int = 0
    repeats_per_element: float = 0.0


_DRY_COLS = 256


def dry_run(epilogue: CubeEpilogue, products: int) -> DryRun:
    """Run the body on a scratch builder over one row of 256 columns: how many
    temporaries it takes and how much vector work it emits."""
    result = DryRun()
    scratch = KernelBuilder("scratch", [])

    def tile(element_type: Attribute, role: Role = Role.FULL) -> Tile:
        buffer = scratch.alloc([_DRY_COLS], element_type, "ub")
        if role == Role.COL:
            return Tile(buffer, 0, 1, col_stride=0)
        if role in (Role.ROW, Role.SCALAR):
            return Tile(buffer, 0, 0, col_stride=0 if role == Role.SCALAR else 1)
        return Tile(buffer, 0, _DRY_COLS)

    def temp(element_type: Attribute) -> Tile:
        result.temp_count += 1
        result.temp_bytes += dtypes.byte_width(element_type)
        return tile(element_type)

    def column(element_type: Attribute) -> Tile:
        result.column_count += 1
        result.column_bytes += dtypes.byte_width(element_type)
        return tile(element_type, Role.COL)

    inputs: list[Operand] = [
        i.immediate if i.immediate is not None else tile(i.element_type, i.role) for i in epilogue.inputs
    ]
    outputs = [tile(t) for t in epilogue.output_types]
    prods = [tile(f32) for _ in range(products)]
    v = VectorEmitter(scratch, 1, _DRY_COLS, temp, column)
    epilogue.body(EpilogueTiles(v, prods, inputs, outputs))
    for op in scratch.kernel.walk():
        if isinstance(op, npu.VectorOp):
            result.instructions += 1
            result.repeats_per_element += op.vector_bytes(op.attr_values()) / 256 / _DRY_COLS
    return result
