"""Progress bars for long work (a whole network's compile or simulation): shown
on a terminal only, and only once the work has taken more than a couple of
seconds, so short runs, pipes, tests and CI logs stay exactly as they were.

tqdm is optional (`pip install 'ge-compiler[progress]'`); without it, or when
stderr is not a terminal, `progress` is the iterable itself.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")

DELAY_S = 2.0
"""Seconds of work before a bar appears."""


def progress(items: Iterable[T], description: str, unit: str = "op", total: int | None = None) -> Iterator[T] | Iterable[T]:
    """`items`, with a progress bar on stderr when it is a terminal and the loop
    lasts more than DELAY_S seconds."""
    if not sys.stderr.isatty():
        return items
    try:
        from tqdm import tqdm
    except ImportError:
        return items
    return tqdm(items, desc=description, total=total, delay=DELAY_S, leave=False, file=sys.stderr, unit=unit)
