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
* cores are simulated one after another, so earlier-simulated cores would book
  first and the last ones starve, then run alone with the HBM half idle; so in
  any window a core takes no more than an equal share (capacity / the launch's
  concurrent blocks): streaming cores finish together, at bytes / bandwidth.
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
        self.sharers = 1
        self.core = 0
        self.core_booked: dict[tuple[int, int], float] = {}

    def share_among(self, cores: int) -> None:
        """The next launch runs on `cores` cores at once: in any window a core may take
        no more than an equal share of its capacity."""
        self.sharers = max(cores, 1)

    def transfer(self, start: int, cycles: int, nbytes: int) -> int:
        """Book `nbytes` moved over `cycles` from `start` when unloaded by the current
        core; returns when the data phase ends (>= start + cycles)."""
        end = start + cycles
        if nbytes <= 0 or cycles <= 0:
            return end
        w = self.window
        rate = nbytes / cycles
        booked, core_booked, core = self.booked, self.core_booked, self.core
        share = self.capacity / self.sharers
        share_rate = self.bytes_per_cycle / self.sharers
        t = float(start)
        remaining = float(nbytes)
        while True:
            index = int(t // w)
            window_end = (index + 1) * w
            used = booked.get(index, 0.0)
            mine = core_booked.get((core, index), 0.0)
            portion = min(remaining, rate * (window_end - t), self.capacity - used, share - mine)
            if portion > 0:
                used += portion
                mine += portion
                booked[index] = used
                core_booked[(core, index)] = mine
                remaining -= portion
            if remaining <= 1e-9:
                done = max(t + portion / rate, index * w + used / self.bytes_per_cycle, index * w + mine / share_rate)
                return max(end, math.ceil(done - 1e-9))
            t = float(window_end)
