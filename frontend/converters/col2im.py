"""Col2Im: sliding blocks (columns, as Im2Col makes them) summed back into an
image. For each position of the block, the column rows of that position form
an image of the block positions (N, C, L1, ...); spread by the strides (zeros
inserted, as ConvTranspose's input) and padded so that it starts at the
position's dilated offset, it adds into the padded image; the pads are cut at
the end. prod(block) adds of the size of the image, no data-dependent indexing.
"""

from __future__ import annotations

import itertools
import math

from ...dialects.ge import PadOp
from .. import ops
from ..builder import slice_
from .context import NodeContext
from .linear import zero_inserted
from .registry import converts


@converts("Col2Im", static=(1, 2))
def col2im(c: NodeContext):
    x = c.input(0, "input")
    image, block = c.ints_input(1, "image_shape"), c.ints_input(2, "block_shape")
    n = len(image or ())
    if x.rank != 3 or not n or len(block) != n:
        raise c.fail(f"expected input (N, C * prod(block), L) and image_shape / block_shape of one length, "
                     f"got {x.type}, {list(image or ())}, {list(block or ())}")
    strides = tuple(c.ints("strides", None) or (1,) * n)
    dilations = tuple(c.ints("dilations", None) or (1,) * n)
    pads = tuple(c.ints("pads", None) or (0,) * (2 * n))
    if len(strides) != n or len(dilations) != n or len(pads) != 2 * n:
        raise c.fail(f"strides and dilations must have {n} values and pads {2 * n}")
    padded = [image[i] + pads[i] + pads[i + n] for i in range(n)]
    counts = [(p - (k - 1) * d - 1) // s + 1 for p, k, d, s in zip(padded, block, dilations, strides)]
    size = math.prod(block)
    batch, rows, length = x.shape
    if rows % size or length != math.prod(counts) or min(counts) <= 0:
        raise c.fail(f"input {x.type} does not hold blocks {list(block)} of image {list(image)} "
                     f"({math.prod(counts)} block positions)")
    channels = rows // size
    columns = ops.reshape(x, [batch, channels, size, *counts])
    total = None
    for k, offset in enumerate(itertools.product(*(range(b) for b in block))):
        y = ops.reshape(slice_(columns, [k], [k + 1], [2]), [batch, channels, *counts])
        for axis, s in enumerate(strides):
            y = zero_inserted(c, y, 2 + axis, s)
        begins = [o * d for o, d in zip(offset, dilations)]
        ends = [p - b - e for p, b, e in zip(padded, begins, y.shape[2:])]
        y = c.g.op(PadOp, y, pads=[0, 0, *begins, 0, 0, *ends])
        total = y if total is None else total + y
    if any(pads):
        total = slice_(total, list(pads[:n]), [p - e for p, e in zip(padded, pads[n:])], list(range(2, 2 + n)))
    return total
