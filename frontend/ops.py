"""The ge ops as Python functions over builder Tensors: `ops.relu(x)`,
`ops.softmax(x, axis=-1)`, `ops.conv2d(x, w, strides=[2, 2])`...

One function per op of the ge dialect, named after it (`ge.layer_norm` ->
`layer_norm`), taking the operands positionally and the attributes by keyword,
with the op's own docstring. They are generated from the dialect, so a new op is
a new function with no code here. The ops whose result the operands do not
determine take it explicitly: `reshape(x, shape)`, `expand(x, shape)`,
`cast(x, dtype)`; `concat` takes a list; `slice` has numpy's semantics
(`slice(x, starts, ends, axes, steps)`), and `matmul` picks `batch_matmul` for
ranks above 2.

    from gecomp.frontend import ops
    y = ops.gelu(ops.layer_norm(x, scale, bias, axis=-1), approximate="tanh")
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import TensorType

from ..dialects.ge import GE_OPS, CastOp, ConcatOp, ConstOp, ExpandOp
from .builder import BuildError, Tensor, element_type, graph_of, matmul, reshape, slice_

__all__ = ["matmul", "reshape", "expand", "cast", "concat", "slice"]


def expand(x: Tensor, shape: Sequence[int]) -> Tensor:
    """Broadcasts `x` to `shape` (ONNX Expand: the result is the broadcast of both)."""
    import numpy as np

    try:
        target = np.broadcast_shapes(x.shape, tuple(int(d) for d in shape))
    except ValueError:
        raise BuildError(f"cannot expand {x.type} to {list(shape)}", x.graph.current_location()) from None
    return x.graph.op(ExpandOp, x, result_type=TensorType(x.dtype, list(target)))


def cast(x: Tensor, dtype, **attributes) -> Tensor:
    """`x` converted to element type `dtype` (`"f16"`, `"i32"`, numpy dtypes...);
    `saturate` and `round_mode` as `ge.cast` takes them."""
    try:
        target = element_type(dtype)
    except ValueError as e:
        raise BuildError(str(e), x.graph.current_location()) from None
    return x.graph.op(CastOp, x, result_type=TensorType(target, list(x.shape)), **attributes)


def concat(tensors: Sequence[Tensor], axis: int) -> Tensor:
    """Joins `tensors` along `axis`."""
    return graph_of(*tensors).op(ConcatOp, *tensors, axis=axis)


slice = slice_  # noqa: A001 - the op's name

_EXPLICIT = {"matmul", "reshape", "expand", "cast", "concat", "slice"}


def _op_function(op_class):
    def function(*operands, **attributes):
        return graph_of(*operands).op(op_class, *operands, **attributes)

    function.__name__ = function.__qualname__ = op_class.name.removeprefix("ge.")
    function.__doc__ = op_class.__doc__
    return function


for _op_class in GE_OPS:
    _name = _op_class.name.removeprefix("ge.")
    if _op_class is ConstOp or _name in _EXPLICIT:
        continue
    globals()[_name] = _op_function(_op_class)
    __all__.append(_name)
