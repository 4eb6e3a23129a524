"""MaxUnpool: MaxPool's values put back where its Indices say, zeros elsewhere.

As onnx's reference defines it: the output has the shape the pooling inverts,
(in - 1) * stride - pads + kernel per spatial axis; element u of X goes to flat
position I[u] of it (a later element winning a position named twice); with an
`output_shape` input that shape is zero-padded at the end of each axis to it.
The indices are import-time constants (a graph input is bound, as a node test's
is), so where each value goes is known here: one `ge.gather` of X's elements in
output order and a `ge.where` over the constant mask of written positions.
"""

from __future__ import annotations

import math

import numpy as np

from ...dialects.ge import GatherOp, PadOp, WhereOp
from .. import ops
from .context import NodeContext
from .registry import converts


@converts("MaxUnpool", static=(1, 2))
def max_unpool(c: NodeContext):
    x = c.input(0, "X")
    indices = c.constant(1, "I")
    if x.rank < 3:
        raise c.fail(f"input must have rank >= 3 (N, C, spatial...), got {x.type}")
    if indices.shape != tuple(x.shape):
        raise c.fail(f"indices of shape {list(indices.shape)} must have the shape of X {list(x.shape)}")
    n = x.rank - 2
    kernel = c.ints("kernel_shape")
    strides = c.ints("strides", (1,) * n)
    pads = c.ints("pads", (0,) * (2 * n))
    if len(kernel) != n or len(strides) != n or len(pads) != 2 * n:
        raise c.fail(f"kernel_shape, strides and pads must describe {n} spatial axes")
    shape = [*x.shape[:2], *((x.shape[2 + d] - 1) * strides[d] - pads[d] - pads[n + d] + kernel[d] for d in range(n))]
    if min(shape) <= 0:
        raise c.fail(f"the unpooled shape {shape} is empty")
    size = math.prod(shape)
    targets = indices.astype(np.int64).reshape(-1)
    bad = (targets < 0) | (targets >= size)
    if np.any(bad):
        raise c.fail(f"index {int(targets[bad][0])} is outside the unpooled tensor of {size} elements")
    source = np.zeros(size, dtype=np.int64)
    written = np.zeros(size, dtype=np.bool_)
    for u, target in enumerate(targets):  # in order: a later element wins
        source[target] = u
        written[target] = True
    values = c.g.op(GatherOp, ops.reshape(x, [math.prod(x.shape)]), c.g.const(source), axis=0)
    y = ops.reshape(c.g.op(WhereOp, c.g.const(written), values, c.g.const(np.zeros((), np.float64), dtype=x.dtype)),
                    shape)
    wanted = c.ints_input(2, "output_shape")
    if wanted is None or list(wanted) == shape:
        return y
    if len(wanted) != len(shape) or any(w < s for w, s in zip(wanted, shape)):
        raise c.fail(f"output_shape {list(wanted)} is smaller than the unpooled shape {shape}")
    return c.g.op(PadOp, y, pads=[0] * len(shape) + [w - s for w, s in zip(wanted, shape)], value=0.0)
