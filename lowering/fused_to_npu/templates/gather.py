"""`ge.gather`: rows of `data` picked by indices read from GM at run time.

With P = the dims before `axis`, K = the gathered dim, Q = the dims after it and
I = the number of indices, the output is (P, I, Q): output row (p, i) is data
row (p, indices[i]). The scalar unit reads each index (`npu.read_scalar`, a
negative index counts from the end: (index + K) mod K) and the row is copied
into a UB tile of TI rows, stored with one copy. Two ways to fetch a row:

* from GM, one copy per index (a 200-cycle latency each);
* from a copy of the whole slab data[p] in UB (loaded once per tile), with one
  `vcopy` per index: far cheaper per row when the slab fits UB, at the price of
  every core reading the slab.

The cheaper by the simulator's cost formulas is taken; rows are padded to a
32-byte pitch in UB so every row starts aligned.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ....dialects import ge, npu
from ....simulator.npu.costs import stream_cycles, transfer_cycles, vector_cycles
from ..context import KernelContext
from .registry import kernel_for
from ..kernel_builder import Index
from .copy_kernel import copy_strides, grid_coordinates, tile_numbers


@dataclass(frozen=True)
class _GatherTiling:
    rows: int  # indices per tile (TI)
    cols: int  # elements of a row per tile (a chunk of Q when Q is huge)
    pitch: int  # UB row pitch, aligned
    from_slab: bool
    estimate: float


@kernel_for(ge.GatherOp)
def lower_gather(op: ge.GatherOp, k: KernelContext) -> None:
    data, indices = k.inputs
    out = k.outputs[0]
    for t in (data, indices, out):
        if t.format.value != "ND":
            raise k.unsupported(f"gather with a {t.format.value} operand ({t.type})")
    axis = op.attr_values().axis % len(data.shape)
    p = math.prod(data.shape[:axis])
    rows = data.shape[axis]
    q = math.prod(data.shape[axis + 1 :])
    n = indices.numel
    if out.numel == 0:
        return
    tiling = _choose(k, p, rows, q, n)
    k.explain(
        f"gather {n} of {rows} rows x {q} ({p} slab(s)): tiles of {tiling.rows} rows x {tiling.cols}, "
        f"rows fetched {'from the slab in UB by vcopy' if tiling.from_slab else 'from GM, one copy each'}; "
        f"~{int(tiling.estimate)} cycles"
    )
    _GatherWriter(k, p, rows, q, n, tiling).emit()


def _choose(k: KernelContext, p: int, rows: int, q: int, n: int) -> _GatherTiling:
    hw, itemsize = k.hw, k.outputs[0].itemsize
    align = hw.alignment["ub"] // itemsize
    budget = (hw.capacity("ub") - 4 * hw.alignment["ub"]) // itemsize
    cols = min(q, budget // 4)
    pitch = -(-cols // align) * align
    options = []
    slab = rows * -(-q // align) * align
    for from_slab in (False, True):
        if from_slab and (cols < q or slab >= budget // 2):
            continue
        room = (budget - (slab if from_slab else 0)) // 2 // pitch  # double-buffered tiles
        for ti in {room, -(-n // hw.core_count), -(-n // (2 * hw.core_count))}:
            ti = max(1, min(n, room, ti))
            ti = -(-n // -(-n // ti))  # balanced
            options.append(_GatherTiling(ti, cols, pitch, from_slab, _estimate(k, p, rows, q, n, ti, cols, from_slab)))
    # At a tie (the HBM bound) smaller tiles: the cores' loads and stores interleave
    # more finely under the shared bandwidth.
    return min(options, key=lambda o: (o.estimate, o.rows))


def _estimate(k: KernelContext, p: int, rows: int, q: int, n: int, ti: int, cols: int, from_slab: bool) -> float:
    hw, itemsize = k.hw, k.outputs[0].itemsize
    tiles = p * -(-n // ti) * -(-q // cols)
    per_core = -(-tiles // min(tiles, hw.core_count))
    store = transfer_cycles(hw, "ub_to_gm", ti, cols * itemsize)
    if from_slab:
        load = transfer_cycles(hw, "gm_to_ub", 1, rows * q * itemsize)
        fetch, landing = ti * vector_cycles(hw, "data_movement", cols * itemsize), 0  # vcopies from the slab
        hbm = min(tiles, hw.core_count) * rows * q * itemsize * p
    else:
        load = 0
        # The row copies stream on MTE2: each holds it for its data, the latency
        # of one overlaps the next, so only the last one's landing is waited for.
        row = cols * itemsize
        fetch = ti * stream_cycles(hw, "gm_to_ub", 1, row)
        landing = transfer_cycles(hw, "gm_to_ub", 1, row) - stream_cycles(hw, "gm_to_ub", 1, row)
        hbm = p * n * q * itemsize
    scalar = ti * 6 * hw.scalar_instruction_cycles
    once = load if p == 1 else 0  # one slab: loaded once per core, before the tiles
    # The tiles are double-buffered, and the flag handing a tile's rows to MTE3 does
    # not hold MTE2 (simulator/npu/core.py): the next tile's rows are fetched while
    # this one's land and are stored. A tile's fetch (with its slab, several slabs)
    # issues in `issue`; every tile after the second reuses the buffer of the one
    # two before, once that one is stored.
    issue = max(fetch, scalar) + (load - once)
    period = issue if per_core <= 2 else max(issue, (issue + landing + store) / 2)
    hbm += p * n * q * itemsize
    return max(once + issue + landing + store + (per_core - 1) * period, hbm / hw.hbm_bytes_per_cycle)


class _GatherWriter:
    def __init__(self, k: KernelContext, p: int, rows: int, q: int, n: int, tiling: _GatherTiling):
        self.k, self.b = k, k.b
        self.p, self.rows, self.q, self.n, self.t = p, rows, q, n, tiling
        element_type = k.outputs[0].element_type
        self.tile = self.b.alloc([tiling.rows * tiling.pitch], element_type, "ub", "rows")
        self.slab = self.b.alloc([rows * tiling.pitch], element_type, "ub", "slab") if tiling.from_slab else None

    def emit(self) -> None:
        b, t = self.b, self.t
        counts = [self.p, -(-self.n // t.rows), -(-self.q // t.cols)]
        total = math.prod(counts)
        self.k.block_dim = min(total, self.k.hw.core_count)
        if self.slab is not None and self.p == 1:
            self._load_slab(0)
        with tile_numbers(b, total, self.k.block_dim) as number:
            p, chunk, part = grid_coordinates(b, number, counts)
            self._tile_cases(p, chunk, part, counts)

    def _load_slab(self, p: Index) -> None:
        data = self.k.inputs[0]
        self.b.emit(npu.CopyOp, data.value, self.b.mul(p, self.rows * self.q), self.slab, 0, rows=self.rows,
                    cols=self.q, **copy_strides(self.rows, self.q, self.q, self.t.pitch))

    def _tile_cases(self, p: Index, chunk: Index, part: Index, counts: list[int]) -> None:
        """The last chunk of indices and the last part of a row may be shorter."""
        b, t = self.b, self.t
        row_tail, col_tail = self.n % t.rows, self.q % t.cols
        for rows, row_cond in self._cases(chunk, counts[1], t.rows, row_tail):
            for cols, col_cond in self._cases(part, counts[2], t.cols, col_tail):
                with b.when(row_cond), b.when(col_cond):
                    self._tile(p, chunk, part, rows, cols)

    def _cases(self, coord: Index, count: int, size: int, tail: int):
        if not tail:
            return [(size, True)]
        return [(size, self.b.less_than(coord, count - 1)), (tail, self.b.equals(coord, count - 1))]

    def _tile(self, p: Index, chunk: Index, part: Index, rows: int, cols: int) -> None:
        b, t, k = self.b, self.t, self.k
        data, indices = k.inputs
        out = k.outputs[0]
        first = b.mul(chunk, t.rows)
        col0 = b.mul(part, t.cols)
        slab_base = b.mul(p, self.rows * self.q)
        if self.slab is not None and self.p > 1:
            self._load_slab(p)
        with b.loop(0, rows, name="r") as r:
            index = b.emit(npu.ReadScalarOp, indices.value, b.add(first, r)).result
            row = b.rem(b.add(index, self.rows), self.rows)
            dst = b.mul(r, t.pitch)
            if self.slab is not None:
                b.emit(npu.VCopyOp, self.slab, b.mul(row, t.pitch), self.tile, dst, cols=cols)
            else:
                src = b.add(b.add(slab_base, b.mul(row, self.q)), col0)
                b.emit(npu.CopyOp, data.value, src, self.tile, dst, cols=cols)
        out_off = b.add(b.mul(b.add(b.mul(p, self.n), first), self.q), col0)
        b.emit(npu.CopyOp, self.tile, 0, out.value, out_off, rows=rows, cols=cols, **copy_strides(rows, cols, t.pitch, self.q))

