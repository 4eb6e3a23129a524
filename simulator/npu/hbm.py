"""The HBM that every core's GM traffic shares.

Each core's GM paths have their own bandwidth, but together they cannot move
more than `hbm.bytes_per_cycle`. Time is cut into windows of `WINDOW` cycles,
each with a capacity of WINDOW x bytes_per_cycle; a transfer spreads its bytes
at its own rate from its start, taking what each window still has. A window
serves bytes in the order they were booked, so a transfer that takes the last
bytes of a window ends no earlier than the point where the window, filled at the
HBM rate, holds them. Consequences:

* an unloaded transfer takes exactly its closed-form time (`costs.py`);
* the bytes booked in any window never exceed its capacity, so any stretch of
  GM traffic takes at least bytes / HBM bandwidth (the roofline's memory term);
* cores are simulated one after another, so earlier-simulated cores book first:
  a priority, not a fair share. When the cores of a launch together want more
  than the HBM gives for the whole launch (a streaming kernel on every core),
  the last-simulated ones starve until the first finish, then run with the HBM
  partly idle: the 16M-element add reaches 77% of its bandwidth bound where a
  fair arbiter would give ~87%. Capping every core at an equal share per window
  fixes that but is not work-conserving: a matmul's first-simulated core pays
  the L2 misses of panels the others then hit (`l2.py`), and held to 1/32 of the
  HBM it becomes the critical path (2048^3 at 54% of the cube peak instead of
  81%). A work-conserving fair share needs the cores simulated in lockstep.
"""

from __future__ import annotations

import math

WINDOW = 128
"""Cycles per booking window."""


class SharedHbm:
    def __init__(self, bytes_per_cycle: float, window: int = WINDOW):
        self.bytes_per_cycle = bytes_per_cycle
        self.window = window
        self.capacity = bytes_per_cycle * window
        self.booked: dict[int, float] = {}

    def transfer(self, start: int, cycles: int, nbytes: int) -> int:
        """Book `nbytes` moved over `cycles` from `start` when unloaded; returns when
        the data phase ends (>= start + cycles)."""
        end = start + cycles
        if nbytes <= 0 or cycles <= 0:
            return end
        w = self.window
        rate = nbytes / cycles
        booked = self.booked
        t = float(start)
        remaining = float(nbytes)
        while True:
            index = int(t // w)
            window_end = (index + 1) * w
            used = booked.get(index, 0.0)
            portion = min(remaining, rate * (window_end - t), self.capacity - used)
            if portion > 0:
                used += portion
                booked[index] = used
                remaining -= portion
            if remaining <= 1e-9:
                done = max(t + portion / rate, index * w + used / self.bytes_per_cycle)
                return max(end, math.ceil(done - 1e-9))
            t = float(window_end)
