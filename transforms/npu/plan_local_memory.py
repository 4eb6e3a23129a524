"""`npu-plan-local-memory`: a byte offset for every `npu.alloc` of a kernel.

Local buffers (L1, L0A, L0B, L0C, UB) are generated without offsets; the
simulator, like the hardware, needs them. Two buffers may share bytes when they
are never live at the same time (`buffers.Liveness`: from first to last use,
a use inside a loop keeping the buffer live for the whole loop unless every
iteration overwrites it before reading it). Per space, buffers are placed
largest first, each at the lowest offset aligned to the preset's alignment that
overlaps no placed buffer it conflicts with; an alloc that already has an
offset keeps it and is placed first.

Sharing bytes is not free: the first writer of the later buffer must wait until
the last reader of the earlier one is done, and when those are different pipes
that is a set_flag / wait_flag pair serialising them (K staged into the L1 bytes
Q was just loaded from waits for MTE1, where with bytes of its own MTE2 would
have streamed it meanwhile). So a space is first placed sharing bytes only
between buffers that one pipe alone uses (its instructions run in order
anyway); only if that does not fit are buffers live at different times shared
whatever their pipes.

A tiling that still does not fit is a compile error naming the kernel, the
space, the peak of bytes live at once (what any placement needs at least), what
this placement needs, the buffers live at the peak and the preset's capacity.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from ...core.diagnostics import CompileError
from ...core.passes import record_statistic
from ...dialects import npu
from ...dialects.ge.base import Kind, to_attribute
from ...simulator.hardware import HardwarePreset, load_preset
from .buffers import Liveness
from .distinct_kernels import module_kernels


@dataclass
class Buffer:
    alloc: npu.AllocOp
    size: int
    live: tuple[int, int] | None
    offset: int | None
    pipes: frozenset[str] = frozenset()

    @property
    def name(self) -> str:
        hint = self.alloc.result.name_hint
        return f"%{hint}" if hint else f"a {self.size}-byte buffer"

    def overlaps_in_time(self, other: Buffer) -> bool:
        if self.live is None or other.live is None:
            return False
        return self.live[0] <= other.live[1] and other.live[0] <= self.live[1]

    def shares_with_a_wait(self, other: Buffer) -> bool:
        """Whether sharing bytes with `other` would serialise two pipes (or is
        impossible: both live at once)."""
        return self.overlaps_in_time(other) or len(self.pipes | other.pipes) > 1


def _align(value: int, alignment: int) -> int:
    return -(-value // alignment) * alignment


def lowest_free_offset(size: int, taken: list[tuple[int, int]], alignment: int) -> int:
    """The lowest offset, a multiple of `alignment`, where `size` bytes overlap none
    of the `taken` [start, end) byte ranges."""
    offset = 0
    for start, end in sorted(taken):
        if offset + size <= start:
            break
        offset = max(offset, _align(end, alignment))
    return offset


def place(buffers: list[Buffer], alignment: int, conflict=Buffer.overlaps_in_time) -> int:
    """Give every buffer without an offset the lowest aligned offset that overlaps no
    placed buffer it is in `conflict` with (largest buffers first); returns the end
    of the highest buffer."""
    placed = [b for b in buffers if b.offset is not None]
    for buffer in sorted((b for b in buffers if b.offset is None), key=lambda b: (-b.size, b.live or (0, 0))):
        taken = [(other.offset, other.offset + other.size) for other in placed if conflict(buffer, other)]
        buffer.offset = lowest_free_offset(buffer.size, taken, alignment)
        placed.append(buffer)
    return max((b.offset + b.size for b in buffers), default=0)


def peak_live(buffers: list[Buffer], alignment: int) -> tuple[int, list[Buffer]]:
    """The most bytes (each buffer rounded up to the alignment) live at one
    position, and the buffers live there."""
    best, best_set = 0, []
    for buffer in buffers:
        if buffer.live is None:
            continue
        at = buffer.live[0]
        live = [b for b in buffers if b.live is not None and b.live[0] <= at <= b.live[1]]
        total = sum(_align(b.size, alignment) for b in live)
        if total > best:
            best, best_set = total, live
    return best, best_set


def plan_kernel(kernel: npu.KernelOp, preset: HardwarePreset) -> dict[str, int]:
    """Place the kernel's allocs; returns the bytes used per space."""
    liveness = Liveness(kernel)
    by_space: dict[str, list[Buffer]] = {}
    for alloc, live in liveness.intervals.items():
        space = str(npu.space_of(alloc.result.type))
        size = npu.buffer_bytes(alloc.result.type)
        pipes = frozenset(user.pipe_name() for user in liveness.uses[alloc])
        by_space.setdefault(space, []).append(Buffer(alloc, size, live, alloc.attr_values().offset, pipes))
    used = {}
    for space, buffers in by_space.items():
        end = _place_space(buffers, preset.alignment[space], preset.capacity(space))
        if end > preset.capacity(space):
            _does_not_fit(kernel, space, buffers, end, preset)
        for b in buffers:
            b.alloc.properties["offset"] = to_attribute(Kind.INT, b.offset)
        used[space] = end
    return used


def _place_space(buffers: list[Buffer], alignment: int, capacity: int) -> int:
    """Share bytes between pipes only if the space is too small otherwise."""
    unplaced = [b for b in buffers if b.offset is None]
    end = place(buffers, alignment, Buffer.shares_with_a_wait)
    if end <= capacity:
        return end
    for b in unplaced:
        b.offset = None
    return place(buffers, alignment)


def _does_not_fit(kernel: npu.KernelOp, space: str, buffers: list[Buffer], end: int, preset: HardwarePreset):
    peak, live = peak_live(buffers, preset.alignment[space])
    names = ", ".join(f"{b.name} ({b.size} B)" for b in sorted(live, key=lambda b: -b.size))
    raise CompileError(
        f"kernel @{kernel.sym_name.data} does not fit in {space.upper()}: its buffers need {peak} bytes at their "
        f"peak ({names}), {end} as placed, and preset '{preset.name}' has {preset.capacity(space)}",
        kernel,
    )


@dataclass(frozen=True)
class PlanLocalMemoryPass(ModulePass):
    """Place every npu.alloc at an aligned byte offset of its space, reusing the bytes of buffers that are no longer live; a tiling that does not fit is an error."""

    name = "npu-plan-local-memory"

    hw: str = "ascend910"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        preset = load_preset(self.hw)

        def plan(kernel: npu.KernelOp) -> tuple[int, int, int]:
            allocs = [a for a in kernel.walk() if isinstance(a, npu.AllocOp)]
            unplaced = sum(1 for a in allocs if a.attr_values().offset is None)
            used = plan_kernel(kernel, preset)
            return unplaced, sum(npu.buffer_bytes(a.result.type) for a in allocs), sum(used.values())

        for unplaced, unreused, placed in [plan(kernel) for kernel in module_kernels(op)]:  # cheaper than keying a copy
            record_statistic(self.name, "buffers placed", unplaced)
            record_statistic(self.name, "bytes without reuse", unreused)
            record_statistic(self.name, "bytes as placed", placed)
