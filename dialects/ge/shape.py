"""Data movement ops: transpose, reshape, expand, concat, split, slice, gather, pad.

`ge.slice` takes one (start, end, step) per dim in normalised form: for a
positive step 0 <= start <= end <= dim, for a negative one -1 <= end <= start < dim
where end = -1 means "past the first element". Frontends normalise ONNX's
clamping rules into this, so the op itself has one unambiguous meaning.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import Pure

from .canonicalization import Canonicalize
from .base import (
    EvaluationError,
    GEOp,
    Kind,
    attr,
    broadcast_shapes,
    fail,
    like,
    normalize_axis,
    num_elements,
    require_length,
    require_non_negative,
    same_element_type,
    shape_of,
)
from ...core import dtypes


@irdl_op_definition
class TransposeOp(GEOp):
    """Permutes the dims: result dim i is input dim `perm[i]`."""

    name = "ge.transpose"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    perm = attr(Kind.INTS)
    traits = traits_def(Pure(), Canonicalize())

    @classmethod
    def infer(cls, types, a, declared):
        (x,) = types
        shape = shape_of(x)
        if sorted(a.perm) != list(range(len(shape))):
            raise fail(f"perm {list(a.perm)} is not a permutation of {len(shape)} dims")
        return like(x, [shape[p] for p in a.perm])

    @classmethod
    def compute(cls, inputs, a, result_types):
        return np.transpose(inputs[0], a.perm)


@irdl_op_definition
class ReshapeOp(GEOp):
    """Same elements in row-major order, the result type's shape."""

    name = "ge.reshape"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), Canonicalize())

    @classmethod
    def infer(cls, types, a, declared):
        (x,) = types
        if declared is None:
            raise fail("ge.reshape needs its result type")
        target = shape_of(declared[0])
        if num_elements(target) != num_elements(shape_of(x)):
            raise fail(
                f"cannot reshape {dtypes.format_shape(shape_of(x))} ({num_elements(shape_of(x))} elements) "
                f"into {dtypes.format_shape(target)} ({num_elements(target)} elements)"
            )
        return like(x, target)

    @classmethod
    def compute(cls, inputs, a, result_types):
        return inputs[0].reshape(result_types[0].get_shape())


@irdl_op_definition
class ExpandOp(GEOp):
    """Broadcasts the input to the result type's shape (ONNX Expand: the result shape
    is the broadcast of both)."""

    name = "ge.expand"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), Canonicalize())

    @classmethod
    def infer(cls, types, a, declared):
        (x,) = types
        if declared is None:
            raise fail("ge.expand needs its result type")
        target = shape_of(declared[0])
        if broadcast_shapes(shape_of(x), target) != target:
            raise fail(
                f"cannot expand {dtypes.format_shape(shape_of(x))} to {dtypes.format_shape(target)}"
            )
        return like(x, target)

    @classmethod
    def compute(cls, inputs, a, result_types):
        return np.broadcast_to(inputs[0], result_types[0].get_shape())


@irdl_op_definition
class ConcatOp(GEOp):
    """Joins the inputs along `axis`; other dims must agree."""

    name = "ge.concat"
    inputs = var_operand_def(TensorType)
    result = result_def(TensorType)
    axis = attr(Kind.INT)
    traits = traits_def(Pure(), Canonicalize())

    @classmethod
    def infer(cls, types, a, declared):
        if not types:
            raise fail("needs at least one input")
        element_type = same_element_type(types, "input")
        shapes = [shape_of(t) for t in types]
        rank = len(shapes[0])
        axis = normalize_axis(a.axis, rank)
        for s in shapes[1:]:
            if len(s) != rank or any(d != e for i, (d, e) in enumerate(zip(s, shapes[0])) if i != axis):
                raise fail(
                    f"inputs differ outside axis {axis}: "
                    + " vs ".join(dtypes.format_shape(s) for s in shapes)
                )
        out = list(shapes[0])
        out[axis] = sum(s[axis] for s in shapes)
        return like(types[0], out, element_type)

    @classmethod
    def compute(cls, inputs, a, result_types):
        return np.concatenate(inputs, axis=a.axis)


@irdl_op_definition
class SplitOp(GEOp):
    """Cuts the input along `axis` into pieces of the given `sizes`."""

    name = "ge.split"
    input = operand_def(TensorType)
    outputs = var_result_def(TensorType)
    axis = attr(Kind.INT)
    sizes = attr(Kind.INTS)
    traits = traits_def(Pure(), Canonicalize())

    @classmethod
    def infer(cls, types, a, declared):
        (x,) = types
        shape = shape_of(x)
        axis = normalize_axis(a.axis, len(shape))
        require_non_negative(a.sizes, "sizes")
        if not a.sizes or sum(a.sizes) != shape[axis]:
            raise fail(f"sizes {list(a.sizes)} do not add up to dim {axis} of size {shape[axis]}")
        return [like(x, [*shape[:axis], size, *shape[axis + 1 :]]) for size in a.sizes]

    @classmethod
    def compute(cls, inputs, a, result_types):
        offsets = np.cumsum(a.sizes)[:-1]
        return np.split(inputs[0], offsets, axis=a.axis)


def slice_length(start: int, end: int, step: int) -> int:
    return max(0, -(-(end - start) // step)) if step > 0 else max(0, -(-(start - end) // -step))


@irdl_op_definition
class SliceOp(GEOp):
    """Strided slice: elements start, start + step, ... before end, in every dim."""

    name = "ge.slice"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    starts = attr(Kind.INTS)
    ends = attr(Kind.INTS)
    steps = attr(Kind.INTS)
    traits = traits_def(Pure(), Canonicalize())

    @classmethod
    def infer(cls, types, a, declared):
        (x,) = types
        shape = shape_of(x)
        for name in ("starts", "ends", "steps"):
            require_length(getattr(a, name), len(shape), name)
        out = []
        for dim, (size, start, end, step) in enumerate(zip(shape, a.starts, a.ends, a.steps)):
            if step == 0:
                raise fail(f"step of dim {dim} is zero")
            ok = 0 <= start <= end <= size if step > 0 else -1 <= end <= start < size
            if not ok:
                raise fail(
                    f"slice [{start}:{end}:{step}] of dim {dim} (size {size}) is not normalized"
                )
            out.append(slice_length(start, end, step))
        return like(x, out)

    @classmethod
    def compute(cls, inputs, a, result_types):
        index = tuple(
            slice(start, None if end < 0 else end, step)
            for start, end, step in zip(a.starts, a.ends, a.steps)
        )
        return inputs[0][index]


@irdl_op_definition
class GatherOp(GEOp):
    """Picks slices of `data` along `axis` at `indices` (ONNX Gather: the result is
    data.shape[:axis] + indices.shape + data.shape[axis+1:]; negative indices count
    from the end)."""

    name = "ge.gather"
    data = operand_def(TensorType)
    indices = operand_def(TensorType)
    result = result_def(TensorType)
    axis = attr(Kind.INT, 0)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, types, a, declared):
        data, indices = types
        if not dtypes.is_integer(indices.element_type):
            raise fail(f"indices must be integers, got {indices.element_type}")
        shape = shape_of(data)
        if not shape:
            raise fail("data must have rank >= 1")
        axis = normalize_axis(a.axis, len(shape))
        return like(data, [*shape[:axis], *shape_of(indices), *shape[axis + 1 :]])

    @classmethod
    def compute(cls, inputs, a, result_types):
        data, indices = inputs
        size = data.shape[a.axis]
        bad = (indices < -size) | (indices >= size)
        if np.any(bad):
            raise EvaluationError(
                f"index {int(indices[bad].flat[0])} is out of range for axis {a.axis % data.ndim} of size {size}"
            )
        return np.take(data, np.where(indices < 0, indices + size, indices), axis=a.axis)


@irdl_op_definition
class PadOp(GEOp):
    """Pads with `pads` = [begin_0, ..., begin_n, end_0, ..., end_n] (ONNX order);
    mode constant (with `value`), reflect or edge."""

    name = "ge.pad"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    pads = attr(Kind.INTS)
    mode = attr(Kind.STR, "constant", choices=("constant", "reflect", "edge"))
    value = attr(Kind.FLOAT, 0.0)
    traits = traits_def(Pure(), Canonicalize())

    @classmethod
    def infer(cls, types, a, declared):
        (x,) = types
        shape = shape_of(x)
        rank = len(shape)
        require_length(a.pads, 2 * rank, "pads")
        require_non_negative(a.pads, "pads")
        if a.mode == "reflect" and any(
            max(a.pads[i], a.pads[i + rank]) >= size for i, size in enumerate(shape) if a.pads[i] or a.pads[i + rank]
        ):
            raise fail("reflect padding must be smaller than the padded dim")
        if a.mode == "edge" and any(size == 0 for size in shape):
            raise fail("edge padding of an empty dim")
        return like(x, [d + a.pads[i] + a.pads[i + rank] for i, d in enumerate(shape)])

    @classmethod
    def compute(cls, inputs, a, result_types):
        x = inputs[0]
        rank = x.ndim
        widths = [(a.pads[i], a.pads[i + rank]) for i in range(rank)]
        if a.mode == "constant":
            return np.pad(x, widths, mode="constant", constant_values=a.value)
        return np.pad(x, widths, mode=a.mode)


SHAPE_OPS = (TransposeOp, ReshapeOp, ExpandOp, ConcatOp, SplitOp, SliceOp, GatherOp, PadOp)
