"""Which launches of a merged run can share a phase, side by side on disjoint blocks.

`npu-merge-launches` makes each launch of a run one phase, the cores meeting at a
barrier between phases. A launch written for few blocks (a product with few
output tiles: MMoE's two task towers end in 256x1 products on 16 of the 32
cores) leaves the other cores idle for its whole phase, and pays the barrier,
the phase's fill and its tail latency alone. Two such launches that do not
touch each other's GM bytes need no barrier between them: they can run in one
phase, the first on blocks [0, n1), the second on [n1, n1 + n2), as CANN runs
independent tasks on the cores its streams leave free (issue 29 item 5:
merging works across streams where cores allow).

Independence is decided on GM bytes: every argument is resolved to its
allocation (the arena and its planned offset, or the @main argument / constant
itself; a view counts as its whole source) and two launches are independent
when no byte one writes is read or written by the other. A launch may move
within its run to stand next to its partner when it is independent of every
launch it moves past too: the GM plan was made for the host order, and bytes
it lets two buffers share are then never used by both around the move.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import SSAValue

from ...dialects import npu
from ...dialects.npu.base import element_bytes
from .launches import kernel_argument_modes


@dataclass(frozen=True)
class _Span:
    key: object
    start: int
    end: int

    def overlaps(self, other: "_Span") -> bool:
        return self.key is other.key and self.start < other.end and other.start < self.end


def _span(value: SSAValue) -> _Span:
    while isinstance(value.owner, npu.GmViewOp):
        value = value.owner.source
    shape = value.type.get_shape()
    nbytes = element_bytes(value.type)
    for d in shape:
        nbytes *= d
    owner = value.owner
    if isinstance(owner, npu.GmBufferOp) and owner.attr_values().offset is not None:
        start = owner.attr_values().offset
        return _Span("arena", start, start + nbytes)
    return _Span(value, 0, nbytes)


def _accesses(launch: npu.LaunchOp) -> list[tuple[_Span, bool]]:
    """Each argument's bytes and whether the kernel writes them (from its instructions)."""
    modes = kernel_argument_modes(launch.kernel_op())
    return [(_span(v), writes) for v, (_, writes) in zip(launch.args, modes)]


class Footprints:
    """Launches' GM accesses, found once each (a run asks about every pair)."""

    def __init__(self):
        self._known: dict[int, tuple[npu.LaunchOp, list]] = {}

    def of(self, launch: npu.LaunchOp) -> list[tuple[_Span, bool]]:
        known = self._known.get(id(launch))
        if known is None or known[0] is not launch:
            known = self._known[id(launch)] = (launch, _accesses(launch))
        return known[1]

    def independent(self, a: npu.LaunchOp, b: npu.LaunchOp) -> bool:
        """No GM byte one of them writes is read or written by the other."""
        return not any((wa or wb) and sa.overlaps(sb) for sa, wa in self.of(a) for sb, wb in self.of(b))


def pair_phases(run: list[npu.LaunchOp], block_dim_of, core_count: int, footprints: Footprints) -> list[list[npu.LaunchOp]]:
    """The phases of `run`, in order: single launches, and pairs of independent
    launches whose blocks fit the cores together (each pair's later launch moved
    up to its partner, or the earlier moved down, past launches independent of
    it). Each launch pairs at most once, with the nearest partner that fits."""
    order: list = list(run)  # launches, and pairs already made (tuples)
    phases: list[list[npu.LaunchOp]] = []
    while order:
        x = order.pop(0)
        if isinstance(x, tuple):
            phases.append(list(x))
            continue
        partner = _partner(x, order, block_dim_of, core_count, footprints.independent)
        if partner is None:
            phases.append([x])
            continue
        j, moved_down = partner
        y = order.pop(j)
        if moved_down:
            order.insert(j, (x, y))  # after the launches x moved past
        else:
            phases.append([x, y])
    return phases


def _launches(items) -> list[npu.LaunchOp]:
    return [launch for item in items for launch in (item if isinstance(item, tuple) else (item,))]


def _partner(x, rest, block_dim_of, core_count, independent) -> tuple[int, bool] | None:
    room = core_count - block_dim_of(x)
    if room < 1:  # no launch fits beside x (every launch has a block)
        return None
    for j, y in enumerate(rest):
        if isinstance(y, tuple) or block_dim_of(y) > room or not independent(x, y):
            continue
        between = _launches(rest[:j])
        if all(independent(o, y) for o in between):
            return j, False
        if all(independent(o, x) for o in between):
            return j, True
    return None
