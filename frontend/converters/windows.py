"""The sliding-window attributes Conv, MaxPool and AveragePool share: kernel,
strides, dilations, and explicit pads or `auto_pad` (SAME_UPPER, SAME_LOWER,
VALID), resolved to explicit pads in ONNX order [begin..., end...]."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from .context import NodeContext


@dataclass(frozen=True)
class Window:
    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    pads: tuple[int, ...]  # begins then ends, one per spatial dim each
    ceil_mode: bool = False

    @property
    def rank(self) -> int:
        return len(self.kernel)

    def span(self, i: int) -> int:
        return (self.kernel[i] - 1) * self.dilations[i] + 1

    def output_size(self, i: int, size: int) -> int:
        """Windows along spatial dim `i` (ONNX: in ceil mode a window may not start
        in the end padding)."""
        padded = size + self.pads[i] + self.pads[i + self.rank]
        steps = (padded - self.span(i)) / self.strides[i]
        out = (math.ceil(steps) if self.ceil_mode else math.floor(steps)) + 1
        if self.ceil_mode and (out - 1) * self.strides[i] >= size + self.pads[i]:
            out -= 1
        return out

    def with_leading(self, count: int) -> Window:
        """The same window over `count` more (unit) leading dims: 1-D as 2-D."""
        ones, zeros = (1,) * count, (0,) * count
        n = self.rank
        return Window(ones + self.kernel, ones + self.strides, ones + self.dilations,
                      zeros + self.pads[:n] + zeros + self.pads[n:], self.ceil_mode)


def read_window(c: NodeContext, spatial: Sequence[int], kernel: Sequence[int] | None = None) -> Window:
    """The window of node `c` over an input with spatial dims `spatial`; `kernel`
    comes from the weight for Conv, from `kernel_shape` for pooling."""
    n = len(spatial)
    declared = c.ints("kernel_shape", None)
    if kernel is None:
        if declared is None:
            raise c.fail("attribute 'kernel_shape' is required")
        kernel = declared
    elif declared is not None and tuple(declared) != tuple(kernel):
        raise c.fail(f"kernel_shape {list(declared)} does not match the weight's spatial dims {list(kernel)}")
    kernel = tuple(kernel)
    strides = c.ints("strides", None) or (1,) * n
    dilations = c.ints("dilations", None) or (1,) * n
    ceil_mode = bool(c.int("ceil_mode", 0)) if c.node.op_type != "Conv" else False
    for name, values in (("kernel_shape", kernel), ("strides", strides), ("dilations", dilations)):
        if len(values) != n:
            raise c.fail(f"attribute '{name}' has {len(values)} values, the input has {n} spatial dims")
        if any(v <= 0 for v in values):
            raise c.fail(f"attribute '{name}' must be positive, got {list(values)}")
    pads = _pads(c, spatial, kernel, tuple(strides), tuple(dilations))
    return Window(kernel, tuple(strides), tuple(dilations), pads, ceil_mode)


def _pads(c: NodeContext, spatial, kernel, strides, dilations) -> tuple[int, ...]:
    n = len(spatial)
    auto_pad = c.string("auto_pad", "NOTSET")
    pads = c.ints("pads", None)
    if auto_pad == "NOTSET":
        pads = pads or (0,) * (2 * n)
        if len(pads) != 2 * n:
            raise c.fail(f"attribute 'pads' has {len(pads)} values, expected {2 * n}")
        if any(p < 0 for p in pads):
            raise c.fail(f"attribute 'pads' must be non-negative, got {list(pads)}")
        return tuple(pads)
    if auto_pad == "VALID":
        return (0,) * (2 * n)
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        raise c.fail(f"auto_pad '{auto_pad}' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID")
    begins, ends = [], []
    for size, k, s, d in zip(spatial, kernel, strides, dilations):
        out = -(-size // s)
        total = max(0, (out - 1) * s + (k - 1) * d + 1 - size)
        small, large = total // 2, total - total // 2
        begin = small if auto_pad == "SAME_UPPER" else large
        begins.append(begin)
        ends.append(total - begin)
    return tuple(begins + ends)
