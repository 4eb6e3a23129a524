"""MatMul, Gemm and Conv: the ops the Cube unit runs.

* MatMul follows numpy: 1-D operands are reshaped to a row (lhs) or a column
  (rhs) and the added dim dropped again; two matrices are a `ge.matmul`, anything
  of higher rank a `ge.batch_matmul` (batch dims broadcast).
* Gemm is `alpha * A' x B' + beta * C`: a transposing `ge.matmul`, a scaling
  `ge.mul` where alpha or beta is not 1, and `ge.bias_add` when C is a vector of
  N (the form fusion patterns look for), a broadcasting `ge.add` otherwise.
* Conv is `ge.conv2d` (1-D convolutions as 2-D over a unit height; 3-D ones as
  ConvTranspose's are, below, with strides) followed by `ge.bias_add` on axis 1
  when there is a bias.
* ConvTranspose is the convolution whose gradient it is: the input with s - 1
  zeros inserted between elements (a reshape, a `ge.pad` of a unit dim, a
  reshape), padded by (k - 1) * d minus the pads (output_padding and output_shape
  at the end; negative amounts crop), convolved with stride 1, the same dilations
  and groups, and the kernel flipped in space with its channel dims swapped per
  group. 1-D goes through 2-D; 3-D is a sum over the kernel's depth of 2-D
  convolutions of depth slices (output depths batched).
"""

from __future__ import annotations

from ...dialects.ge import BiasAddOp, Conv2DOp, MatmulOp, PadOp, TransposeOp
from .. import builder, ops
from ..builder import Tensor, slice_
from .context import NodeContext
from .registry import converts
from .windows import read_window


@converts("MatMul")
def matmul(c: NodeContext):
    return numpy_matmul(c, c.input(0, "A"), c.input(1, "B"))


def numpy_matmul(c: NodeContext, a: Tensor, b: Tensor) -> Tensor:
    """`a @ b` as numpy has it (1-D operands, broadcast batch dims)."""
    if a.rank == 0 or b.rank == 0:
        raise c.fail(f"operands must have rank >= 1, got {a.type} and {b.type}")
    a2 = ops.reshape(a, [1, a.shape[0]]) if a.rank == 1 else a
    b2 = ops.reshape(b, [b.shape[0], 1]) if b.rank == 1 else b
    y = builder.matmul(a2, b2)
    shape = list(y.shape)
    if b.rank == 1:
        shape.pop(-1)
    if a.rank == 1:
        shape.pop(-1 if b.rank == 1 else -2)
    return y if tuple(shape) == y.shape else ops.reshape(y, shape)


@converts("Gemm")
def gemm(c: NodeContext):
    a, b = c.input(0, "A"), c.input(1, "B")
    alpha, beta = c.float("alpha", 1.0), c.float("beta", 1.0)
    c.ignore("broadcast")  # Gemm-6's flag: C always broadcasts since opset 7
    y = c.g.op(MatmulOp, a, b, transpose_a=bool(c.int("transA", 0)), transpose_b=bool(c.int("transB", 0)))
    if alpha != 1.0:
        y = y * alpha
    bias = c.optional_input(2)
    if bias is None or beta == 0.0:
        return y
    if beta != 1.0:
        bias = bias * beta
    if bias.shape == (y.shape[1],):
        return c.g.op(BiasAddOp, y, bias, axis=-1)
    return y + bias


@converts("Conv")
def conv(c: NodeContext):
    x, w = c.input(0, "X"), c.input(1, "W")
    if x.rank not in (3, 4, 5) or w.rank != x.rank:
        raise c.unsupported(
            f"only 1-D, 2-D and 3-D convolutions are supported (input and weight of rank 3, 4 or 5), "
            f"got {x.type} and {w.type}"
        )
    window = read_window(c, x.shape[2:], w.shape[2:])
    groups = c.int("group", 1)
    if x.rank == 5:
        pads = [0, 0, *window.pads[:3], 0, 0, *window.pads[3:]]
        padded = c.g.op(PadOp, x, pads=pads) if any(pads) else x
        y = _conv3d_by_depth(c, padded, w, window.dilations, groups, window.strides)
    else:
        y = _conv2d(c, x, w, window, groups)
    bias = c.optional_input(2)
    return y if bias is None else c.g.op(BiasAddOp, y, bias, axis=1)


def _conv2d(c: NodeContext, x: Tensor, w: Tensor, window, groups: int) -> Tensor:
    """`ge.conv2d`, a 1-D convolution as a 2-D one over a unit height."""
    one_d = x.rank == 3
    if one_d:
        x = ops.reshape(x, [x.shape[0], x.shape[1], 1, x.shape[2]])
        w = ops.reshape(w, [w.shape[0], w.shape[1], 1, w.shape[2]])
        window = window.with_leading(1)
    y = c.g.op(Conv2DOp, x, w, strides=window.strides, pads=window.pads, dilations=window.dilations,
               groups=groups)
    return ops.reshape(y, [y.shape[0], y.shape[1], y.shape[3]]) if one_d else y


# ---- ConvTranspose ---------------------------------------------------------------------------


@converts("ConvTranspose")
def conv_transpose(c: NodeContext):
    x, w = c.input(0, "X"), c.input(1, "W")
    if x.rank not in (3, 4, 5) or w.rank != x.rank:
        raise c.unsupported(
            f"only 1-D, 2-D and 3-D transposed convolutions are supported, got {x.type} and {w.type}"
        )
    groups = c.int("group", 1)
    n = x.rank - 2
    if x.shape[1] != w.shape[0] or x.shape[1] % groups:
        raise c.fail(f"input channels ({x.shape[1]}) must match the weight's dim 0 ({w.shape[0]}), "
                     f"a multiple of group ({groups})")
    kernel = w.shape[2:]
    declared = c.ints("kernel_shape", None)
    if declared is not None and tuple(declared) != tuple(kernel):
        raise c.fail(f"kernel_shape {list(declared)} does not match the weight's spatial dims {list(kernel)}")
    strides = _per_dim(c, "strides", n, 1)
    dilations = _per_dim(c, "dilations", n, 1)
    begins, ends = _transposed_pads(c, x.shape[2:], kernel, strides, dilations)
    # The equivalent convolution's input: zeros inserted, then padded (or cropped).
    y = x
    for axis, s in enumerate(strides):
        y = zero_inserted(c, y, 2 + axis, s)
    crops = [max(0, -p) for p in (*begins, *ends)]
    if any(crops):
        y = slice_(y, crops[:n], [d - e for d, e in zip(y.shape[2:], crops[n:])], list(range(2, 2 + n)))
    pads = [0, 0, *(max(0, p) for p in begins), 0, 0, *(max(0, p) for p in ends)]
    if any(pads):
        y = c.g.op(PadOp, y, pads=pads)
    kernel_ = _flipped_kernel(c, w, groups)
    if n == 3:
        y = _conv3d_by_depth(c, y, kernel_, dilations, groups)
    else:
        if n == 1:
            y = ops.reshape(y, [y.shape[0], y.shape[1], 1, y.shape[2]])
            kernel_ = ops.reshape(kernel_, [*kernel_.shape[:2], 1, kernel_.shape[2]])
        y = c.g.op(Conv2DOp, y, kernel_, dilations=(1, *dilations) if n == 1 else dilations, groups=groups)
        if n == 1:
            y = ops.reshape(y, [y.shape[0], y.shape[1], y.shape[3]])
    bias = c.optional_input(2)
    return y if bias is None else c.g.op(BiasAddOp, y, bias, axis=1)


def _per_dim(c: NodeContext, name: str, n: int, default: int) -> tuple[int, ...]:
    values = c.ints(name, None) or (default,) * n
    if len(values) != n or any(v <= 0 for v in values):
        raise c.fail(f"attribute '{name}' must have {n} positive values, got {list(values)}")
    return tuple(values)


def _transposed_pads(c: NodeContext, spatial, kernel, strides, dilations) -> tuple[list[int], list[int]]:
    """Padding of the zero-inserted input on each side: (k - 1) * d less the
    node's pads, the end one plus output_padding (or whatever output_shape asks)."""
    n = len(spatial)
    output_padding = c.ints("output_padding", None) or (0,) * n
    output_shape = c.ints("output_shape", None)
    auto_pad = c.string("auto_pad", "NOTSET")
    if len(output_padding) != n or (output_shape is not None and len(output_shape) != n):
        raise c.fail(f"output_padding and output_shape must have {n} values")
    full = [s * (size - 1) + op + (k - 1) * d + 1
            for size, k, s, d, op in zip(spatial, kernel, strides, dilations, output_padding)]
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        # As ONNX's reference: the output is output_shape, or input * stride.
        target = output_shape or [size * s for size, s in zip(spatial, strides)]
        total = [f - t for f, t in zip(full, target)]
        small = [t // 2 for t in total]
        if auto_pad == "SAME_UPPER":
            pads = [*small, *(t - s for t, s in zip(total, small))]
        else:
            pads = [*(t - s for t, s in zip(total, small)), *small]
    elif auto_pad in ("NOTSET", "VALID"):
        pads = list(c.ints("pads", None) or (0,) * (2 * n)) if auto_pad == "NOTSET" else [0] * (2 * n)
        if len(pads) != 2 * n:
            raise c.fail(f"attribute 'pads' has {len(pads)} values, expected {2 * n}")
        if output_shape is not None:  # the difference is taken at the end
            natural = [f - pads[i] - pads[i + n] for i, f in enumerate(full)]
            pads = [*pads[:n], *(pads[i + n] + natural[i] - output_shape[i] for i in range(n))]
    else:
        raise c.fail(f"auto_pad '{auto_pad}' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID")
    span = [(k - 1) * d for k, d in zip(kernel, dilations)]
    begins = [sp - pads[i] for i, sp in enumerate(span)]
    ends = [sp - pads[i + n] + output_padding[i] for i, sp in enumerate(span)]
    if any(f - pads[i] - pads[i + n] <= 0 for i, f in enumerate(full)):
        raise c.fail(f"pads {pads} leave no output")
    return begins, ends


def zero_inserted(c: NodeContext, x: Tensor, axis: int, stride: int) -> Tensor:
    """`stride - 1` zeros between neighbours along `axis`: (.., n, ..) ->
    (.., n, 1, ..) padded to (.., n, stride, ..), merged, the trailing zeros cut."""
    if stride == 1 or x.shape[axis] <= 1:
        return x
    size = x.shape[axis]
    split = ops.reshape(x, [*x.shape[: axis + 1], 1, *x.shape[axis + 1 :]])
    pads = [0] * (2 * split.rank)
    pads[split.rank + axis + 1] = stride - 1
    spread = ops.reshape(c.g.op(PadOp, split, pads=pads), [*x.shape[:axis], size * stride, *x.shape[axis + 1 :]])
    return slice_(spread, [0], [(size - 1) * stride + 1], [axis])


def _flipped_kernel(c: NodeContext, w: Tensor, groups: int) -> Tensor:
    """(C, M/g, k...) -> (M, C/g, k...) with every spatial dim reversed."""
    ch, per_group = w.shape[:2]
    spatial = list(w.shape[2:])
    grouped = ops.reshape(w, [groups, ch // groups, per_group, *spatial])
    perm = [0, 2, 1, *range(3, 3 + len(spatial))]
    swapped = ops.reshape(c.g.op(TransposeOp, grouped, perm=perm), [groups * per_group, ch // groups, *spatial])
    axes = list(range(2, 2 + len(spatial)))
    return slice_(swapped, [-1] * len(axes), [-(d + 1) for d in spatial], axes, [-1] * len(axes))


def _conv3d_by_depth(c: NodeContext, x: Tensor, w: Tensor, dilations, groups: int, strides=(1, 1, 1)) -> Tensor:
    """A 3-D convolution of an already padded input: for each kernel depth kd, a
    2-D convolution of the input depths od * sd + kd * dd (every output depth od
    as one batch), summed over kd."""
    n, ch, depth = x.shape[:3]
    kd = w.shape[2]
    out_depth = (depth - (kd - 1) * dilations[0] - 1) // strides[0] + 1
    if out_depth <= 0:
        raise c.fail(f"the kernel's depth span is larger than the input's padded depth {depth}")
    total = None
    for k in range(kd):
        start = k * dilations[0]
        planes = slice_(x, [start], [start + (out_depth - 1) * strides[0] + 1], [2], [strides[0]])
        batched = ops.reshape(c.g.op(TransposeOp, planes, perm=(0, 2, 1, 3, 4)), [n * out_depth, ch, *x.shape[3:]])
        w_k = ops.reshape(slice_(w, [k], [k + 1], [2]), [w.shape[0], w.shape[1], *w.shape[3:]])
        term = c.g.op(Conv2DOp, batched, w_k, strides=strides[1:], dilations=dilations[1:], groups=groups)
        total = term if total is None else total + term
    out = ops.reshape(total, [n, out_depth, *total.shape[1:]])
    return c.g.op(TransposeOp, out, perm=(0, 2, 1, 3, 4))
