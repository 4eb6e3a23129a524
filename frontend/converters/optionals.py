"""OptionalHasElement and OptionalGetElement over plain tensors.

gecomp has no optional values, but ONNX lets these ops take a tensor, or no
input at all: whether the element is there is then known at import (a
constant boolean), and the element of a tensor is the tensor itself. An input
of optional type is refused where the graph declares it (`_add_input`).
"""

from __future__ import annotations

import numpy as np

from .context import Constant, NodeContext
from .registry import converts


@converts("OptionalHasElement", reads_data=False)
def optional_has_element(c: NodeContext):
    if c.has_input(0):
        c.input(0, "input")  # a tensor: an element is there
        return Constant(np.array(True))
    return Constant(np.array(False))


@converts("OptionalGetElement")
def optional_get_element(c: NodeContext):
    if not c.has_input(0):
        raise c.fail("input #0 ('input') is required")
    return c.input(0, "input")
