"""The benefit model of automatic fusion, in cycles of the target named by `hw`.

    benefit(a + b) = GM bytes saved / HBM bytes per cycle     (intermediates no longer
                                                                written and read back,
                                                                shared inputs read once)
                   + one kernel launch                        (launch.kernel_launch_us)
                   - tiling penalty                            (extra per-tile costs when
                                                                the fused working set
                                                                forces smaller tiles)

Every number comes from the hardware preset (`simulator/hardware.py`): UB, L1 and
L0C sizes, the HBM bandwidth, the launch time, per-path latencies and the vector
instructions' fixed costs.

**Tiles.** A kernel splits its work into tiles processed one after the other on
each core (cores take tiles in waves). For a vector kernel a value of the group
is either *partitioned* (each tile holds 1/T of it: the group's results and
intermediates, and inputs that vary along the rows) or *resident* (loaded whole
into every tile: inputs broadcast along the rows, such as a bias or a norm's
gamma). External inputs and outputs are double-buffered; intermediates are held
once, in the compute dtype. A group fits when its smallest legal tile (one row
of a row reduction, one vector repeat otherwise) fits UB. A cube kernel tiles
its (M, N) output; the tile is bounded by L0C (double-buffered fp32
accumulators) and by the epilogue's values in UB, and at least one 16x16
fractal must fit, with its 16x16 input fractals in L1.

**Tiling cost.** Each tile pays fixed costs: the latency of every transfer it
issues and the head of every vector instruction. `tiling cost = waves x per-tile
cost`; the penalty of a merge is how much the fused kernel's tiling cost exceeds
the two kernels' together, when it does.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from xdsl.ir import Operation, SSAValue

from ...core import dtypes
from ...dialects import ge
from ...dialects.fused.kinds import REDUCE_OPS, PatternKind, reduced_axes_of
from ...simulator.hardware import HardwarePreset
from .fusion_graph import Part

_MIN_FRACTAL = 16 * 16
_ACCUMULATOR_BYTES = 4  # fp32 in L0C


@dataclass(frozen=True)
class TilePlan:
    fits: bool
    tiles: int = 0
    cost_cycles: float = 0.0  # waves x per-tile fixed costs
    reason: str = ""  # why it does not fit


@dataclass(frozen=True)
class Benefit:
    gm_bytes_saved: int
    gm_cycles: float
    launch_cycles: float
    penalty_cycles: float

    @property
    def total(self) -> float:
        return self.gm_cycles + self.launch_cycles - self.penalty_cycles

    def __str__(self) -> str:
        return (
            f"{self.total:.0f} cycles = gm {self.gm_cycles:.0f} ({self.gm_bytes_saved} B) "
            f"+ launch {self.launch_cycles:.0f} - tiling {self.penalty_cycles:.0f}"
        )


def _numel(v: SSAValue) -> int:
    return math.prod(v.type.get_shape())


def _compute_bytes(v: SSAValue) -> int:
    """Bytes per element while computed on (fp16 is computed in fp32)."""
    return _compute_width(v.type.element_type)


@functools.lru_cache(maxsize=64)
def _compute_width(element_type) -> int:
    return dtypes.compute_dtype(dtypes.to_numpy_dtype(element_type)).itemsize


def _storage_bytes(v: SSAValue) -> int:
    return dtypes.byte_width(v.type.element_type)


_VECTOR_CLASS: dict[type[Operation], str] = {
    **{op: "binary" for op in (ge.AddOp, ge.SubOp, ge.MulOp, ge.MaximumOp, ge.MinimumOp, ge.BiasAddOp, ge.BatchNormOp)},
    **{op: "divide" for op in (ge.DivOp, ge.ReciprocalOp, ge.PowOp)},
    **{
        op: "transcendental"
        for op in (ge.ExpOp, ge.LogOp, ge.SqrtOp, ge.RsqrtOp, ge.TanhOp, ge.SigmoidOp, ge.ErfOp, ge.GeluOp, ge.SiluOp)
    },
    **{op: "reduce" for op in REDUCE_OPS},
}


def vector_class(op: Operation) -> str:
    """The preset's vector instruction class an op's main instruction belongs to."""
    name = _VECTOR_CLASS.get(type(op))
    if name is not None:
        return name
    return "unary" if op.results and len(op.operands) == 1 else "data_movement"


class CostModel:
    def __init__(self, hw: HardwarePreset):
        self.hw = hw
        self._plans: dict[tuple[Operation, ...], TilePlan] = {}

    # ---- the benefit of one merge -------------------------------------------------------

    def benefit(self, a: Part, b: Part, merged: Part) -> Benefit:
        saved = a.traffic_bytes + b.traffic_bytes - merged.traffic_bytes
        cost_a, cost_b, cost_ab = (self.plan(p).cost_cycles for p in (a, b, merged))
        return Benefit(
            gm_bytes_saved=saved,
            gm_cycles=saved / self.hw.hbm_bytes_per_cycle,
            launch_cycles=float(self.hw.kernel_launch_cycles),
            penalty_cycles=max(0.0, cost_ab - cost_a - cost_b),
        )

    # ---- tiles ------------------------------------------------------------------------------

    def plan(self, part: Part) -> TilePlan:
        """How `part` tiles (cached: a part's plan depends on its ops only)."""
        plan = self._plans.get(part.ops)
        if plan is None:
            plan = self._plans[part.ops] = self._make_plan(part)
        return plan

    def _make_plan(self, part: Part) -> TilePlan:
        if part.cube is not None:
            return self._cube_plan(part)
        if any(k == PatternKind.OPAQUE for k in part.kinds):
            return TilePlan(True, 1, 0.0)
        return self._vector_plan(part)

    def _waves(self, tiles: int) -> int:
        return math.ceil(tiles / self.hw.core_count)

    def _vector_heads(self, ops) -> float:
        return sum(self.hw.vector_costs[vector_class(op)].head for op in ops if not isinstance(op, ge.ConstOp))

    def _vector_plan(self, part: Part) -> TilePlan:
        values = [*part.inputs, *part.outputs, *part.internal]
        if not values:
            return TilePlan(True, 1, 0.0)
        anchor = max(values, key=_numel)
        rows = _row_dims(part, anchor)
        partitioned, resident = 0, 0
        for v, buffers, width in self._buffered(part):
            if v in part.inputs and _broadcast_along_rows(v, anchor, len(rows)):
                resident += _numel(v) * width * buffers
            else:
                partitioned += _numel(v) * width * buffers
        ub = self.hw.capacity("ub")
        most_tiles = math.prod(rows) if _has_reduce(part) else max(
            1, _numel(anchor) * _storage_bytes(anchor) // self.hw.vector_repeat_bytes
        )
        smallest_tile = resident + math.ceil(partitioned / most_tiles)
        if smallest_tile > ub:
            what = "one row" if _has_reduce(part) else "one vector repeat"
            return TilePlan(False, reason=f"a tile of {what} needs {smallest_tile} B of UB, which has {ub} B")
        tiles = max(1, math.ceil(partitioned / (ub - resident)))
        per_tile = (
            sum(self.hw.paths["gm_to_ub"].latency for v in part.inputs)
            + len(part.outputs) * self.hw.paths["ub_to_gm"].latency
            + self._vector_heads(part.ops)
        )
        return TilePlan(True, tiles, self._waves(tiles) * per_tile)

    def _buffered(self, part: Part):
        """(value, buffers, bytes per element) for every value a tile holds at
        once: the inputs and outputs (double-buffered), and the intermediates
        live at the busiest point of the kernel (each once, in the compute
        dtype; a dead intermediate's buffer is reused)."""
        for v in part.inputs:
            yield v, 2, _storage_bytes(v)
        for v in part.outputs:
            yield v, 2, _storage_bytes(v)
        for v in _busiest_intermediates(part):
            yield v, 1, _compute_bytes(v)

    def _cube_plan(self, part: Part) -> TilePlan:
        cube = part.cube
        out = cube.results[0]
        epilogue = [op for op in part.ops if op is not cube]
        per_element, resident = 0, 0
        for v, buffers, width in self._buffered(part):
            if v is out or v in cube.operands:
                continue  # the accumulator (L0C) and the cube's own inputs (L1)
            if v in part.inputs and _broadcast_along_rows(v, out, len(out.type.get_shape()) - 1):
                resident += _numel(v) * width * buffers
            else:
                per_element += width * buffers
        ub = self.hw.capacity("ub")
        by_l0c = self.hw.capacity("l0c") // (2 * _ACCUMULATOR_BYTES)
        by_ub = (ub - resident) // per_element if per_element else by_l0c
        tile = min(by_l0c, by_ub, _numel(out))
        if tile < min(_MIN_FRACTAL, _numel(out)):
            return TilePlan(False, reason=f"the epilogue of a 16x16 output tile needs more than the {ub} B of UB")
        l1_needed = 2 * 2 * _MIN_FRACTAL * _storage_bytes(cube.operands[0])
        if l1_needed > self.hw.capacity("l1"):
            return TilePlan(False, reason=f"16x16 input fractals need {l1_needed} B of L1")
        tiles = math.ceil(_numel(out) / tile)
        per_tile = (
            self.hw.paths["l0c_to_ub" if epilogue else "l0c_to_gm"].latency
            + sum(self.hw.paths["gm_to_ub"].latency for v in part.inputs if v not in cube.operands)
            + (len(part.outputs) * self.hw.paths["ub_to_gm"].latency if epilogue else 0)
            + self._vector_heads(epilogue)
            + self.hw.cube_startup
        )
        return TilePlan(True, tiles, self._waves(tiles) * per_tile)


def _busiest_intermediates(part: Part) -> list[SSAValue]:
    """The intermediates alive together when the most bytes per element are."""
    internal = set(part.internal)
    last_use = {}
    for i, op in enumerate(part.ops):
        for v in op.operands:
            if v in internal:
                last_use[v] = i
    live: list[SSAValue] = []
    busiest: list[SSAValue] = []
    live_bytes = busiest_bytes = 0  # per element, summed as the lists change
    for i, op in enumerate(part.ops):
        born = [r for r in op.results if r in internal]
        live += born
        live_bytes += sum(map(_compute_bytes, born))
        if live_bytes > busiest_bytes:
            busiest, busiest_bytes = list(live), live_bytes
        dead = [v for v in live if last_use.get(v, i) <= i]
        if dead:
            live = [v for v in live if last_use.get(v, i) > i]
            live_bytes -= sum(map(_compute_bytes, dead))
    return busiest


def _has_reduce(part: Part) -> bool:
    return any(k == PatternKind.REDUCE for k in part.kinds)


def _row_dims(part: Part, anchor: SSAValue) -> tuple[int, ...]:
    """The dims tiles split: the leading (kept) dims of the group's reductions, or
    all but the last dim of the largest value."""
    for op, kind in zip(part.ops, part.kinds):
        if kind == PatternKind.REDUCE:
            shape = tuple(op.operands[0].type.get_shape())
            return shape[: len(shape) - len(reduced_axes_of(op))]
    return tuple(anchor.type.get_shape())[:-1]


def _broadcast_along_rows(v: SSAValue, anchor: SSAValue, row_rank: int) -> bool:
    """`v`, aligned to the right of `anchor`, is 1 in every row dim where the
    anchor has more than one row: each tile needs all of it. (With one row, such as
    a (1, N) value, nothing is broadcast: the value is split like the anchor.)"""
    shape = tuple(v.type.get_shape())
    rows = tuple(anchor.type.get_shape())[:row_rank]
    aligned = (1,) * (len(anchor.type.get_shape()) - len(shape)) + shape
    return any(r > 1 for r in rows) and all(d == 1 for d, r in zip(aligned, rows) if r > 1)

