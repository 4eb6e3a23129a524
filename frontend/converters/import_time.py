"""Ops whose results are known at import: ConstantOfShape, Range, Size, EyeLike,
MelWeightMatrix.

With static shapes these have no run-time form worth one: their operands are
shapes or scalars known at import, so each becomes a constant (Shape, in
shape.py, is the fourth of the kind). ConstantOfShape is the Expand of its
one-element value, which the importer's import-time evaluation folds with
`ge.expand`'s own semantics (a result over FOLD_LIMIT_BYTES stays a run-time
broadcast); Range's inputs must be constants, and a Range over run-time values
is an error naming the input, since its length would be data-dependent.
MelWeightMatrix is a table of five scalars (sizes and frequencies), which must
be constants too; it is built by onnx's reference implementation of the op
(`onnx.reference`), the op's own semantics rather than a second copy of them.
"""

from __future__ import annotations

import math

import numpy as np

from ...core import dtypes
from .. import ops
from ..onnx_model import element_type_of_dtype, numpy_dtype_of
from ..onnx_proto import require_onnx
from .context import Constant, NodeContext, ge_element_type
from .registry import converts


@converts("ConstantOfShape", static=(0,))
def constant_of_shape(c: NodeContext):
    shape = c.ints_input(0, "input")
    if shape is None:
        raise c.fail("input #0 ('input') is required")
    if any(d < 0 for d in shape):
        raise c.fail(f"shape {list(shape)} has a negative dim")
    value = c.tensor("value", None)
    if value is None:
        fill = np.zeros((), np.float32)
    else:
        ge_element_type(value.elem_type, "attribute 'value'", c.unsupported)
        if value.array is None or value.array.size != 1:
            raise c.fail("attribute 'value' must hold exactly one element")
        fill = value.array.reshape(())
    return ops.expand(c.g.const(fill), shape)


@converts("Range", static=(0, 1, 2))
def range_(c: NodeContext):
    start, limit, delta = (c.constant(i, what) for i, what in enumerate(("start", "limit", "delta")))
    if any(v is None or v.size != 1 for v in (start, limit, delta)):
        raise c.fail("start, limit and delta must be scalars")
    if not start.dtype == limit.dtype == delta.dtype:
        raise c.fail(f"start, limit and delta differ in type ({start.dtype}, {limit.dtype}, {delta.dtype})")
    start, limit, delta = (v.reshape(()) for v in (start, limit, delta))
    if delta == 0:
        raise c.fail("delta cannot be zero")
    # ONNX: max(ceil((limit - start) / delta), 0) elements, start + i * delta
    count = max(math.ceil((float(limit) - float(start)) / float(delta)), 0)
    return Constant((start + np.arange(count, dtype=start.dtype) * delta).astype(start.dtype))


@converts("Size", reads_data=False)
def size(c: NodeContext):
    return Constant(np.array(math.prod(c.input(0, "data").shape), dtype=np.int64))


@converts("EyeLike", reads_data=False)
def eye_like(c: NodeContext):
    x = c.input(0, "input")
    if x.rank != 2:
        raise c.fail(f"input must be 2-D, got {x.type}")
    code = c.int("dtype", None)
    if code is None:
        dtype = dtypes.to_numpy_dtype(x.dtype)
    else:
        ge_element_type(code, "attribute 'dtype'", c.unsupported)
        dtype = numpy_dtype_of(code)
    rows, columns = x.shape
    return Constant(np.eye(rows, columns, k=c.int("k", 0), dtype=dtype))


_MEL_OPERANDS = ("num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz", "upper_edge_hertz")


@converts("MelWeightMatrix", static=tuple(range(len(_MEL_OPERANDS))))
def mel_weight_matrix(c: NodeContext):
    operands = [c.constant(i, what) for i, what in enumerate(_MEL_OPERANDS)]
    if any(v is None or v.size != 1 for v in operands):
        raise c.fail(f"{', '.join(_MEL_OPERANDS)} must be scalars")
    code = c.int("output_datatype", 1)
    ge_element_type(code, "attribute 'output_datatype'", c.unsupported)
    return Constant(_by_onnx_reference(c, operands, output_datatype=code))


def _by_onnx_reference(c: NodeContext, operands: list[np.ndarray], **attributes) -> np.ndarray:
    """The result of `c`'s op over constant `operands`, by onnx's reference evaluator."""
    onnx = require_onnx()
    from onnx import helper
    from onnx.reference import ReferenceEvaluator

    names = [f"x{i}" for i in range(len(operands))]
    graph = helper.make_graph(
        [helper.make_node(c.node.op_type, names, ["y"], **attributes)], "g",
        [helper.make_tensor_value_info(n, element_type_of_dtype(v.dtype), v.shape) for n, v in zip(names, operands)],
        [helper.make_tensor_value_info("y", onnx.TensorProto.UNDEFINED, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", c.opset)])
    return np.asarray(ReferenceEvaluator(model).run(None, dict(zip(names, operands)))[0])
