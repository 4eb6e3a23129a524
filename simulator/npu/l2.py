"""Global memory as the cores see it: the HBM, and the L2 cache in front of it.

Chips of the Ascend 910 class put a large on-chip L2 (tens of MB) between the
cores and the HBM, shared by all cores. A matmul's panels are read by many
cores; without the L2 every read would cross the HBM. With it, a read of bytes
that are still in the L2 is served at the L2's bandwidth and costs the HBM
nothing. The model (enabled by a preset's `[l2]` table; without one every GM
transfer goes to the HBM, as before):

* the L2 holds 32-byte *sectors* (`l2.sector_bytes`, the MTE burst) of GM;
* a read transfer is split into the sectors it touches: those present are
  hits, booked on the L2's bandwidth (`l2.bytes_per_cycle`, shared by all cores
  like the HBM's, `hbm.py`); the misses are booked on the HBM and then present;
* a write goes to the HBM (write-through: writes are never cheaper than
  without the cache) and leaves its sectors present (write-allocate), so a
  kernel reading what the previous one wrote may hit;
* capacity (`l2.capacity_bytes`): a sector is evicted once that many bytes have
  been brought into the L2 since its last use (LRU measured in bytes filled;
  within a transfer, sectors are used in address order).

Caveat, by construction of the simulator: cores are simulated one after
another, so "since its last use" and "present" follow the order in which
transfers are simulated, not time. The first core simulated pays a shared
panel's misses and the others hit it, as the HBM's own booking gives earlier
cores priority; the number of bytes crossing the HBM is right when the data
fits the L2, and pessimistic (more misses) when it does not.

The split of a transfer (fraction of its bytes that hit) scales its booking
on each side: a transfer moving B bytes in c cycles with a fraction h of hits
books h*B on the L2 and (1-h)*B on the HBM over the same c cycles, and ends when
both are done. Compulsory misses (sectors read from the HBM for the first time
and never written before) are counted: they bound the HBM traffic of any
schedule from below, which is what the report's roofline uses.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..hardware import HardwarePreset
from .hbm import SharedHbm

_ABSENT = -(1 << 62)


class L2Cache:
    def __init__(self, capacity_bytes: int, bytes_per_cycle: float, sector_bytes: int):
        self.capacity = capacity_bytes
        self.sector = sector_bytes
        self.bandwidth = SharedHbm(bytes_per_cycle)
        self.filled = 0  # bytes brought into the L2 so far (the LRU clock)
        self.last_use = np.full(1 << 16, _ABSENT, dtype=np.int64)  # per sector: `filled` at its last use
        self.seen = np.zeros(1 << 16, dtype=bool)  # per sector: ever in the L2

    def _grow(self, top: int) -> None:
        size = len(self.last_use)
        if top < size:
            return
        while size <= top:
            size *= 2
        self.last_use = np.concatenate([self.last_use, np.full(size - len(self.last_use), _ABSENT, dtype=np.int64)])
        self.seen = np.concatenate([self.seen, np.zeros(size - len(self.seen), dtype=bool)])

    def sectors(self, starts: np.ndarray, run_bytes: int) -> np.ndarray:
        """The distinct sectors of runs of `run_bytes` bytes at byte addresses `starts`."""
        first = starts // self.sector
        counts = (starts + run_bytes - 1) // self.sector - first + 1
        if len(first) == 1:
            found = np.arange(first[0], first[0] + counts[0], dtype=np.int64)
        else:
            offsets = np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
            found = np.repeat(first, counts) + offsets
            if len(found) > 1 and np.any(found[1:] <= found[:-1]):
                found = np.unique(found)
        self._grow(int(found[-1]) if len(found) else 0)
        return found

    def read_range(self, first: int, end: int) -> tuple[int, int]:
        """`read` of the sectors [first, end) (one contiguous run), on slices of the
        tables instead of gathered copies: the same arithmetic, element for element.
        A run whose sectors all miss, or all hit, skips the per-sector running sum."""
        self._grow(end - 1)
        last_use, seen = self.last_use[first:end], self.seen[first:end]
        count = end - first
        if self.filled - int(last_use.max()) >= self.capacity:  # every sector misses
            compulsory = count - int(np.count_nonzero(seen))
            last_use[:] = self.filled + np.arange(1, count + 1, dtype=np.int64) * self.sector
            self.filled += count * self.sector
            seen[:] = True
            return 0, compulsory
        if self.filled - int(last_use.min()) < self.capacity:  # every sector hits
            last_use[:] = self.filled
            return count, 0
        missed = self.filled - last_use >= self.capacity
        compulsory = int(np.count_nonzero(missed & ~seen))
        clock = self.filled + np.cumsum(missed, dtype=np.int64) * self.sector
        last_use[:] = clock
        self.filled = int(clock[-1])
        seen |= missed
        return count - int(np.count_nonzero(missed)), compulsory

    def write_range(self, first: int, end: int) -> None:
        """`write` of the sectors [first, end)."""
        self._grow(end - 1)
        self.last_use[first:end] = self.filled + np.arange(1, end - first + 1, dtype=np.int64) * self.sector
        self.filled += (end - first) * self.sector
        self.seen[first:end] = True

    def read(self, sectors: np.ndarray) -> tuple[int, int]:
        """Look the sectors up (in address order) and update the cache; returns
        (hits, compulsory misses)."""
        hit = self.filled - self.last_use[sectors] < self.capacity
        missed = sectors[~hit]
        compulsory = int(np.count_nonzero(~self.seen[missed]))
        self._use(sectors, ~hit)
        self.seen[missed] = True
        return int(np.count_nonzero(hit)), compulsory

    def write(self, sectors: np.ndarray) -> None:
        self._use(sectors, np.ones(len(sectors), dtype=bool))
        self.seen[sectors] = True

    def _use(self, sectors: np.ndarray, filled: np.ndarray) -> None:
        """Each sector's last use is the fill clock when the transfer reaches it: a
        transfer larger than the L2 keeps only its last `capacity` bytes."""
        clock = self.filled + np.cumsum(filled, dtype=np.int64) * self.sector
        self.last_use[sectors] = clock
        self.filled = int(clock[-1]) if len(clock) else self.filled


class GlobalMemory:
    """The HBM every core shares, with the L2 in front of it when the preset has one."""

    def __init__(self, hw: HardwarePreset):
        self.hbm = SharedHbm(hw.hbm_bytes_per_cycle)
        self.l2 = L2Cache(hw.l2_bytes, hw.l2_bytes_per_cycle, hw.l2_sector_bytes) if hw.l2_bytes else None
        self.pace: Callable[[int, int, int], None] = lambda start, moved, cycles: None
        """Called with (start cycle, bytes, unloaded cycles) of a transfer before it
        books memory: where `lockstep.py` makes the cores take turns."""

    def bandwidth_timeline(self) -> list[tuple[int, int, float, float]]:
        """(first cycle, cycles, HBM bytes, L2 bytes) of every booking window from the first
        one used to the last: how busy the shared memory was when, which `--trace`
        draws as counters (a phase whose HBM idles while its cores wait on other
        pipes is where loads of later phases could go)."""
        hbm = self.hbm.booked
        l2 = self.l2.bandwidth.booked if self.l2 is not None else {}
        used = [*hbm, *l2]
        if not used:
            return []
        window = self.hbm.window
        return [(w * window, window, hbm.get(w, 0.0), l2.get(w, 0.0)) for w in range(min(used), max(used) + 1)]

    def transfer(
        self, start: int, cycles: int, moved: int, starts: np.ndarray | None, run_bytes: int, writes: bool
    ) -> tuple[int, int, int, int]:
        """A GM transfer of `moved` bytes over `cycles` cycles from `start` (unloaded);
        `starts` are the byte addresses of its runs of `run_bytes` on the GM side.
        Returns (when its data phase ends, HBM bytes, L2 hit bytes, compulsory bytes)."""
        self.pace(start, moved, cycles)
        if self.l2 is None or starts is None:
            return self.hbm.transfer(start, cycles, moved), moved, 0, moved if not writes else 0
        return self._book_sectors(start, cycles, moved, self.l2.sectors(starts, run_bytes), writes)

    def transfer_sectors(self, start: int, cycles: int, moved: int, sectors: np.ndarray, writes: bool):
        """`transfer` of a transfer whose L2 sectors the caller knows (ascending,
        distinct; the L2 exists)."""
        self.pace(start, moved, cycles)
        self.l2._grow(int(sectors[-1]))
        return self._book_sectors(start, cycles, moved, sectors, writes)

    def _book_sectors(self, start: int, cycles: int, moved: int, sectors: np.ndarray, writes: bool):
        if writes:
            self.l2.write(sectors)
            return self.hbm.transfer(start, cycles, moved), moved, 0, 0
        hits, compulsory = self.l2.read(sectors)
        return self._split(start, cycles, moved, hits, compulsory, max(len(sectors), 1))

    def transfer_run(self, start: int, cycles: int, moved: int, first_byte: int, run_bytes: int, writes: bool):
        """`transfer` of a single contiguous run of `run_bytes` at byte `first_byte`
        (the common case), without building arrays of run starts and sectors."""
        l2 = self.l2
        if l2 is None:
            return self.transfer(start, cycles, moved, None, run_bytes, writes)
        self.pace(start, moved, cycles)
        first = first_byte // l2.sector
        end = (first_byte + run_bytes - 1) // l2.sector + 1
        if writes:
            l2.write_range(first, end)
            return self.hbm.transfer(start, cycles, moved), moved, 0, 0
        hits, compulsory = l2.read_range(first, end)
        return self._split(start, cycles, moved, hits, compulsory, max(end - first, 1))

    def _split(self, start: int, cycles: int, moved: int, hits: int, compulsory: int, count: int):
        """A read's booking: its hit fraction on the L2's bandwidth, the rest on the HBM."""
        hit_bytes = round(moved * hits / count)
        miss_bytes = moved - hit_bytes
        end = start + cycles
        if miss_bytes:
            end = max(end, self.hbm.transfer(start, cycles, miss_bytes))
        if hit_bytes:
            end = max(end, self.l2.bandwidth.transfer(start, cycles, hit_bytes))
        return end, miss_bytes, hit_bytes, round(moved * compulsory / count)

