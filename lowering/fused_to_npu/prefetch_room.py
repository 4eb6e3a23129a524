"""The HBM time a kernel leaves idle for the next phase's prefetched first B
chunk (`tiling.Prefetched`), as the form choices (`split_k.FormChoicePass`) and
the lowering (`convert.py`) see it: from the tiling of the cube op before.

npu-prefetch-constants loads a later phase's first B chunk before its barrier
whatever its size; the tiling estimate takes that chunk's HBM share off only up
to the HBM time the phase before leaves idle. For a cube kernel that is its
tiling estimate against its weights' and outputs' HBM time (`tiling_room`, with
`prefetch_constants.hbm_idle`, the expression `hbm_room` uses for any other
kernel from its instructions); a form choice, deciding before any kernel is
built, estimates it for a `fused.matmul_bias_act` before it alone (another op
before leaves no room known: none credited). Measured (ascend910, one run each,
worktrees of 68ae555 and 68ae555 + this): the BERT layer 37,176 -> 36,941
(its FFN-down as split-K 4), resnet18 96,979 -> 95,051, zoo.resnet50 443,246 ->
442,990; the mlp as f32 in allow_fp32_to_fp16 20,947 unchanged (10d7c73's whole
credit: 22,227)."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.ir import Operation

from ...simulator.hardware import HardwarePreset
from ...transforms.npu.prefetch_constants import hbm_idle
from ..tiling import CubeTiling, Prefetched
from .launches import launches_kernel


def launched_before(op: Operation) -> Operation | None:
    """The last op before `op` in its block that launches a kernel."""
    block = op.parent_block()
    found = None
    for other in block.ops if block is not None else ():
        if other is op:
            return found
        if launches_kernel(other):
            found = other
    return None


def tiling_room(tiling: CubeTiling, hw: HardwarePreset) -> float:
    """The HBM time a cube kernel of this tiling leaves idle at the barrier after it
    (`prefetch_constants.hbm_idle`, the expression `hbm_room` uses): its estimate
    against its weights' and outputs' HBM time (A is the phase before's result,
    read from the L2), and the barrier's window of latencies (its last GM load's
    and the flag store's, `prefetch_constants.barrier_window`)."""
    s = tiling.shape
    hbm = s.batch * (s.weights * s.k + s.products * s.m) * s.n * s.in_bytes / hw.hbm_bytes_per_cycle
    return hbm_idle(tiling.estimate, hbm) + _window(hw)


def tiling_port_room(tiling: CubeTiling, hw: HardwarePreset) -> float:
    """The MTE2 time per core a cube kernel of this tiling leaves idle at the barrier
    after it (`tiling.Prefetched.port`): its estimate against its items' MTE2 work,
    and the barrier's window. From the tiling rather than the instructions'
    `prefetch_constants.port_room`, whose pipe totals leave out the MTE2 a cube
    kernel's last items leave idle while their products and epilogues run (the
    BERT layer's FFN-up before the FFN-down's split-K: 6,145 -> 7,522 cycles
    estimated so)."""
    mte2 = dict(tiling.terms).get("mte2", 0.0)
    return max(0.0, tiling.estimate - tiling.per_core * mte2) + _window(hw)


def _window(hw: HardwarePreset) -> int:
    """The barrier's window of latencies a cube kernel leaves (`prefetch_constants.barrier_window`):
    its last GM load's and the flag store's."""
    return max(hw.paths["gm_to_l1"].latency, hw.paths["gm_to_ub"].latency) + hw.paths["ub_to_gm"].latency


def room_before(
    op: Operation, hw: HardwarePreset, tiling_of: Callable[[Operation, HardwarePreset], CubeTiling | None]
) -> Prefetched | bool:
    """False if no kernel runs before `op` (it starts no phase after a barrier);
    else what its prefetched chunks find (`Prefetched`), the room estimated from
    the tiling of the op before (`tiling_of`: None for an op with no cube kernel)."""
    before = launched_before(op)
    if before is None:
        return False
    tiling = tiling_of(before, hw)
    return Prefetched(tiling_room(tiling, hw) if tiling is not None else 0.0)
