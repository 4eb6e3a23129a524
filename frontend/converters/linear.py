"""MatMul, Gemm and Conv: the ops the Cube unit runs.

* MatMul follows numpy: 1-D operands are reshaped to a row (lhs) or a column
  (rhs) and the added dim dropped again; two matrices are a `ge.matmul`, anything
  of higher rank a `ge.batch_matmul` (batch dims broadcast).
* Gemm is `alpha * A' x B' + beta * C`: a transposing `ge.matmul`, a scaling
  `ge.mul` where alpha or beta is not 1, and `ge.bias_add` when C is a vector of
  N (the form fusion patterns look for), a broadcasting `ge.add` otherwise.
* Conv is `ge.conv2d` (1-D convolutions as 2-D over a unit height) followed by
  `ge.bias_add` on axis 1 when there is a bias.
"""

from __future__ import annotations

from ...dialects.ge import BiasAddOp, Conv2DOp, MatmulOp
from .. import builder, ops
from .context import NodeContext
from .registry import converts
from .windows import read_window


@converts("MatMul")
def matmul(c: NodeContext):
    a, b = c.input(0, "A"), c.input(1, "B")
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
    if x.rank not in (3, 4) or w.rank != x.rank:
        raise c.unsupported(
            f"only 1-D and 2-D convolutions are supported (input and weight of rank 3 or 4), "
            f"got {x.type} and {w.type}"
        )
    window = read_window(c, x.shape[2:], w.shape[2:])
    groups = c.int("group", 1)
    one_d = x.rank == 3
    if one_d:
        x = ops.reshape(x, [x.shape[0], x.shape[1], 1, x.shape[2]])
        w = ops.reshape(w, [w.shape[0], w.shape[1], 1, w.shape[2]])
        window = window.with_leading(1)
    y = c.g.op(Conv2DOp, x, w, strides=window.strides, pads=window.pads, dilations=window.dilations,
               groups=groups)
    bias = c.optional_input(2)
    if bias is not None:
        y = c.g.op(BiasAddOp, y, bias, axis=1)
    if one_d:
        y = ops.reshape(y, [y.shape[0], y.shape[1], y.shape[3]])
    return y

