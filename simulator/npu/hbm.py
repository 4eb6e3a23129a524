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
* the window serves whoever books first, so the order of booking is the
  arbitration: the blocks of a launch are simulated side by side, handing over
  at GM transfers so that bookings arrive in (nearly) cycle order
  (`lockstep.py`). Cores streaming at once then share the HBM fairly and a core
  alone gets all it can take (the 16M-element add at 96% of its bandwidth
  bound; simulated one block after another it was 77%, the last cores starving
  until the first had finished).
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
