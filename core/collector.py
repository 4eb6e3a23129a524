"""Python's cycle collector paused around long work on a large IR: the pass
driver's pipelines (core/passes.py) and the simulator's runs (simulator/npu).

A compile or a simulation allocates objects by the million while a module of
hundreds of thousands of xDSL objects is alive, and the collector's passes walk
them again and again. Measured on zoo.resnet50 (ascend910, CPU s of the compile,
same machine load): 18.9 with the collector on, of which 3.2 inside its passes;
14.4 paused. DenseNet-121: 68.7 -> 59.0 with the symbol lookup of core/symbols.py.
The simulation: 15.2 -> 10.4 (a third of it). What the paused work frees it frees
by reference counting but for xDSL's parent links (an erased op and its block
point at each other), which wait for the first collection after the pause: the
compile's peak resident memory rose 299 -> 415 MiB (ResNet-50), 607 -> 734 MiB
(DenseNet-121), well inside the few GiB a whole model may take.

`gc.freeze()` (the live objects moved out of the collector's view) was measured
too: it saves less (ResNet-50 17.1 CPU s) and keeps alive to the end the input
graph the compile replaces (391 MiB).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """The cycle collector off for the block (and on again after it if it was on
    before: pauses nest)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
