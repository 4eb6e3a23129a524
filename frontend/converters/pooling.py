"""MaxPool, AveragePool, LpPool and GlobalAveragePool.

2-D pooling without dilation is `ge.max_pool2d` / `ge.avg_pool2d`, 1-D pooling the
same over a unit height. Other windows (3-D, or dilated) have no ge twin and are
decomposed: pad the input (with the lowest value for max), then, one spatial axis at a
time (max and sum are separable), take one strided `ge.slice` per kernel offset along
that axis, so slice k holds element k of every window, and combine them with
`ge.maximum` or add them; a mean divides the sum by the number of counted elements per
window (a constant computed here, as ONNX counts padding). A 5x5x5 window is 15
slices, not 125.

A dilated max pool over the two last axes costs one `ge.max_pool2d` whatever its
window instead: with dilation d, window element t of output i reads x[i*s + t*d];
split each axis into d phases (position q*d + r -> phase r, row q), and the
stride-1 result at q*d + r is a plain k-wide max pool of phase r at q. So the
input is padded to whole phases, the phases moved into the channels (a reshape
and a transpose), pooled natively with stride 1, moved back, and the strided
outputs sliced out. Leading spatial axes of a 3-D window are reduced by slices
first.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ...core import dtypes
from ...dialects.ge import (
    AbsOp,
    AvgPool2DOp,
    GlobalAvgPoolOp,
    MaximumOp,
    MaxPool2DOp,
    PadOp,
    PowOp,
    SliceOp,
    SqrtOp,
    TransposeOp,
)
from .. import ops
from ..builder import Tensor, slice_
from .context import NodeContext
from .registry import converts
from .windows import Window, read_window


@converts("MaxPool", "AveragePool")
def pool(c: NodeContext):
    x = c.input(0, "X")
    if x.rank < 3:
        raise c.fail(f"input must have rank >= 3 (N, C, spatial...), got {x.type}")
    if c.output_used(1):
        raise c.unsupported("the Indices output is not supported")
    c.ignore("storage_order")  # only affects Indices
    window = read_window(c, x.shape[2:])
    is_max = c.node.op_type == "MaxPool"
    count_include_pad = False if is_max else bool(c.int("count_include_pad", 0))
    if window.rank <= 2 and set(window.dilations) == {1}:
        return _native_pool(c, x, window, is_max, count_include_pad)
    if is_max and set(window.dilations[-2:]) != {1}:
        if window.rank == 1:  # as 2-D over a unit height
            y = _dilated_max_pool(c, ops.reshape(x, [*x.shape[:2], 1, x.shape[2]]), window.with_leading(1))
            return ops.reshape(y, [*y.shape[:2], y.shape[3]])
        return _dilated_max_pool(c, x, window)
    return _pool_by_slices(c, x, window, is_max, count_include_pad)


def _native_pool(c: NodeContext, x: Tensor, window: Window, is_max: bool, count_include_pad: bool):
    one_d = window.rank == 1
    if one_d:
        x = ops.reshape(x, [*x.shape[:2], 1, x.shape[2]])
        window = window.with_leading(1)
    attrs = dict(kernel=window.kernel, strides=window.strides, pads=window.pads, ceil_mode=window.ceil_mode)
    if is_max:
        y = c.g.op(MaxPool2DOp, x, **attrs)
    else:
        y = c.g.op(AvgPool2DOp, x, count_include_pad=count_include_pad, **attrs)
    return ops.reshape(y, [*y.shape[:2], y.shape[3]]) if one_d else y


@converts("LpPool")
def lp_pool(c: NodeContext):
    """(sum over the window of |x|^p)^(1/p), padding counted as zeros: a sum pool
    by slices (the average pool's without the division) between the powers."""
    x = c.input(0, "X")
    if x.rank < 3:
        raise c.fail(f"input must have rank >= 3 (N, C, spatial...), got {x.type}")
    if not dtypes.is_float(x.dtype):
        raise c.fail(f"input must be a float tensor, got {x.type}")
    p = c.int("p", 2)
    if p <= 0:
        raise c.fail(f"p must be positive, got {p}")
    window = read_window(c, x.shape[2:])
    magnitude = c.g.op(AbsOp, x)
    powered = magnitude if p == 1 else magnitude * magnitude if p == 2 else c.g.op(PowOp, magnitude, float(p))
    summed = _pool_by_slices(c, powered, window, is_max=False, count_include_pad=True, mean=False)
    if p == 1:
        return summed
    return c.g.op(SqrtOp, summed) if p == 2 else c.g.op(PowOp, summed, 1.0 / p)


def _pool_by_slices(c: NodeContext, x: Tensor, window: Window, is_max: bool, count_include_pad: bool,
                    mean: bool = True):
    spatial = x.shape[2:]
    n = window.rank
    out = [window.output_size(i, size) for i, size in enumerate(spatial)]
    if any(o <= 0 for o in out):
        raise c.fail(f"the window does not fit the input {x.type}")
    # End padding so the last window (ceil mode) reads inside the padded input.
    extra = [
        max(0, (o - 1) * s + window.span(i) - (size + window.pads[i] + window.pads[i + n]))
        for i, (o, s, size) in enumerate(zip(out, window.strides, spatial))
    ]
    begins = list(window.pads[:n])
    ends = [e + x_ for e, x_ in zip(window.pads[n:], extra)]
    fill = _lowest(x) if is_max else 0.0
    padded = x
    if any(begins) or any(ends):
        padded = c.g.op(PadOp, x, pads=[0, 0, *begins, 0, 0, *ends], value=fill)
    pooled = padded
    for axis in range(n):  # max and sum are separable: one spatial axis at a time
        terms = [_axis_element(c, pooled, 2 + axis, k * window.dilations[axis], out[axis], window.strides[axis])
                 for k in range(window.kernel[axis])]
        pooled = terms[0]
        for t in terms[1:]:
            pooled = c.g.op(MaximumOp, pooled, t) if is_max else pooled + t
    if is_max or not mean:
        return pooled
    counts = _counts(spatial, window, out, extra, count_include_pad)
    return pooled / c.g.const(counts.reshape(1, 1, *out), dtype=x.dtype)


def _dilated_max_pool(c: NodeContext, x: Tensor, window: Window) -> Tensor:
    """Max over a window dilated in its last two axes: leading axes by slices,
    the last two by phases and one native stride-1 pool (see the module doc)."""
    spatial = x.shape[2:]
    n = window.rank
    out = [window.output_size(i, size) for i, size in enumerate(spatial)]
    if any(o <= 0 for o in out):
        raise c.fail(f"the window does not fit the input {x.type}")
    lowest = _lowest(x)
    # Lengths read along each axis: whole phases on the last two, the last
    # window's reach on the others.
    rows = [-(-((o - 1) * s + 1) // d) + k - 1 for o, s, d, k in zip(out, window.strides, window.dilations, window.kernel)]
    lengths = [rows[i] * window.dilations[i] if i >= n - 2 else (out[i] - 1) * window.strides[i] + window.span(i)
               for i in range(n)]
    ends = [length - size - window.pads[i] for i, (length, size) in enumerate(zip(lengths, spatial))]
    padded = x
    cut = [min(0, e) for e in ends]
    if any(cut):
        padded = slice_(padded, [0] * n, [size + e for size, e in zip(spatial, cut)], list(range(2, 2 + n)))
    pads = [0, 0, *window.pads[:n], 0, 0, *(max(0, e) for e in ends)]
    if any(pads):
        padded = c.g.op(PadOp, padded, pads=pads, value=lowest)
    pooled = padded
    for axis in range(n - 2):
        terms = [_axis_element(c, pooled, 2 + axis, k * window.dilations[axis], out[axis], window.strides[axis])
                 for k in range(window.kernel[axis])]
        pooled = terms[0]
        for t in terms[1:]:
            pooled = c.g.op(MaximumOp, pooled, t)
    lead = list(pooled.shape[:-2])
    (qh, qw), (dh, dw) = rows[-2:], window.dilations[-2:]
    phases = ops.reshape(pooled, [*lead, qh, dh, qw, dw])
    r = len(lead)
    phases = c.g.op(TransposeOp, phases, perm=[*range(r), r + 1, r + 3, r, r + 2])
    planes = ops.reshape(phases, [lead[0], math.prod(lead[1:]) * dh * dw, qh, qw])
    kh, kw = window.kernel[-2:]
    y = c.g.op(MaxPool2DOp, planes, kernel=(kh, kw), strides=(1, 1), pads=(0, 0, 0, 0))
    oh, ow = qh - kh + 1, qw - kw + 1
    y = c.g.op(TransposeOp, ops.reshape(y, [*lead, dh, dw, oh, ow]), perm=[*range(r), r + 2, r, r + 3, r + 1])
    y = ops.reshape(y, [*lead, oh * dh, ow * dw])
    (sh, sw), (out_h, out_w) = window.strides[-2:], out[-2:]
    return slice_(y, [0, 0], [(out_h - 1) * sh + 1, (out_w - 1) * sw + 1], [r, r + 1], [sh, sw])


def _offsets(window: Window):
    return itertools.product(*(range(k) for k in window.kernel))


def _axis_element(c: NodeContext, t: Tensor, axis: int, start: int, count: int, stride: int) -> Tensor:
    """Element `start` of every window along `axis`: a strided slice of that axis."""
    starts, ends, steps = [0] * t.rank, list(t.shape), [1] * t.rank
    starts[axis], ends[axis], steps[axis] = start, start + (count - 1) * stride + 1, stride
    return c.g.op(SliceOp, t, starts=starts, ends=ends, steps=steps)


def _counts(spatial, window: Window, out, extra, count_include_pad: bool) -> np.ndarray:
    """How many elements of each window count towards its mean: those of the input,
    plus the explicit padding when `count_include_pad` (never ceil mode's overhang)."""
    n = window.rank
    shape = [size + window.pads[i] + window.pads[i + n] + extra[i] for i, size in enumerate(spatial)]
    counted = np.zeros(shape, dtype=np.float64)
    if count_include_pad:
        region = tuple(slice(0, size + window.pads[i] + window.pads[i + n]) for i, size in enumerate(spatial))
    else:
        region = tuple(slice(window.pads[i], window.pads[i] + size) for i, size in enumerate(spatial))
    counted[region] = 1.0
    counts = np.zeros(out, dtype=np.float64)
    for offset in _offsets(window):
        index = tuple(
            slice(o * d, o * d + (count - 1) * s + 1, s)
            for o, d, count, s in zip(offset, window.dilations, out, window.strides)
        )
        counts += counted[index]
    return counts


def _lowest(x: Tensor) -> float:
    """The padding of a max pool: the lowest finite value (an attribute holding -inf
    would not print as MLIR text)."""
    dtype = dtypes.to_numpy_dtype(x.dtype)
    return float(np.iinfo(dtype).min if np.issubdtype(dtype, np.integer) else np.finfo(dtype).min)


@converts("GlobalAveragePool")
def global_average_pool(c: NodeContext):
    return c.g.op(GlobalAvgPoolOp, c.input(0, "X"))
