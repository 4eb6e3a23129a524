"""The cost model: cycles of one instruction, in closed form from the preset.

* Data transfer along a path (`paths.<src>_to_<dst>`) of a pattern with `runs`
  contiguous runs of `run_bytes` each::

      moved  = runs * roundup(run_bytes, transfer.burst_bytes)
      cycles = latency + ceil(moved / bytes_per_cycle) + (runs - 1) * transfer.row_overhead_cycles

  A contiguous tile (or a FRACTAL_NZ block column) is one run; a 2-D copy of
  short strided rows pays a burst round-up and a per-row overhead for each row,
  so contiguous tiles are cheaper than short strided ND rows of the same bytes.
  Runs are counted where the layout is visible: for `npu.copy` on the side with
  more runs, for `npu.load_l0` on the L1 side, for `npu.fixpipe` on the
  destination (L0 buffers hold the cube's internal format).
  Transfers touching GM also share the HBM with every other core (`hbm.py`).
  Every transfer streams: it holds its pipe for its data cycles only, its
  latency passing while the next one moves (`stream_cycles`; see core.py).
* mmad: `cube.startup + ceil(m/16) * ceil(n/16) * ceil(k/16) * cycles_per_block`
  at the input type's rate (fp16, fp32, int8).
* vector: `head + ceil(slope * repeats)` of the op's instruction class, with
  `repeats = ceil(rows * cols * widest element bytes / vector.repeat_bytes)`.
* scalar: every issued op costs `scalar.instruction_cycles` of the scalar unit,
  every `scf.for` iteration `scalar.loop_iteration_cycles`.
* `npu.sync_all` (soft SyncAll) beyond the drain of every pipe: a block's 32-byte
  flag stored to GM, then every core's flag read back (`sync_all_transfers`); the
  store at `npu.sync_all_arrive` and the read at `npu.sync_all_wait` when split.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..hardware import HardwarePreset


@dataclass(frozen=True)
class TransferCost:
    cycles: int  # unloaded duration, latency included
    latency: int
    moved_bytes: int  # bytes on the wire (bursts rounded up)
    bytes_per_cycle: float

    @property
    def data_cycles(self) -> int:
        return self.cycles - self.latency


def transfer_cost(hw: HardwarePreset, path: str, runs: int, run_bytes: int) -> TransferCost:
    spec = hw.paths[path]
    burst = hw.burst_bytes
    moved = runs * (-(-run_bytes // burst) * burst)
    cycles = spec.latency + math.ceil(moved / spec.bytes_per_cycle) + (runs - 1) * hw.row_overhead_cycles
    return TransferCost(cycles, spec.latency, moved, spec.bytes_per_cycle)


def transfer_cycles(hw: HardwarePreset, path: str, runs: int, run_bytes: int) -> int:
    return transfer_cost(hw, path, runs, run_bytes).cycles


def stream_cycles(hw: HardwarePreset, path: str, runs: int, run_bytes: int) -> int:
    """The cycles a transfer holds its pipe: its data cycles (its latency overlaps
    the next transfer)."""
    return transfer_cost(hw, path, runs, run_bytes).data_cycles


def vector_repeats(hw: HardwarePreset, nbytes: int) -> int:
    return -(-nbytes // hw.vector_repeat_bytes)


def vector_cycles(hw: HardwarePreset, cost_class: str, nbytes: int) -> int:
    return hw.vector_costs[cost_class].cycles(vector_repeats(hw, nbytes))


def vector_min_cycles(hw: HardwarePreset, cost_class: str, nbytes: int) -> float:
    """The throughput part alone (slope x repeats): a lower bound for the roofline."""
    return hw.vector_costs[cost_class].slope * vector_repeats(hw, nbytes)


def mmad_cycles(hw: HardwarePreset, m: int, n: int, k: int, rate: str = "fp16") -> int:
    return hw.cube_startup + hw.mmad_cycles(m, n, k, rate)


def mmad_min_cycles(hw: HardwarePreset, m: int, n: int, k: int, rate: str = "fp16") -> float:
    """The multiply-accumulates at the cube's peak rate (4096 MACs per block, no
    padding, no startup): the compute term of the roofline."""
    return m * n * k / 4096 * hw.cube_cycles_per_block[rate]


SYNC_FLAG_BYTES = 32
"""One block's flag in the SyncAll workspace: Ascend C asks for 32 bytes per core."""


def sync_all_transfers(hw: HardwarePreset) -> tuple[TransferCost, TransferCost]:
    """The flag store (UB -> GM) and the read of every core's flag (GM -> UB) of one
    `npu.sync_all`."""
    store = transfer_cost(hw, "ub_to_gm", 1, SYNC_FLAG_BYTES)
    poll = transfer_cost(hw, "gm_to_ub", 1, SYNC_FLAG_BYTES * hw.core_count)
    return store, poll


def next_kernel_cycles(hw: HardwarePreset, merged: bool) -> int:
    """What running one more kernel after another on the stream costs besides its
    own work: its launch, or the barrier where npu-merge-launches joins them."""
    if not merged:
        return hw.kernel_launch_cycles
    store, poll = sync_all_transfers(hw)
    return store.cycles + poll.cycles
