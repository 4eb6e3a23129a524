"""Reference semantics of the data-movement `ge` ops (transpose, reshape, expand,
concat, split, slice, gather, pad) against explicit index loops: every output
element is fetched from the input position the op's definition names, so the
reference shares no code path with numpy's transpose/take/pad/slicing.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from xdsl.dialects.builtin import TensorType, f16, f32, i1, i32, i64
from xdsl.ir import Block
from xdsl.utils.exceptions import VerifyException

from gecomp.dialects.context import make_context
from gecomp.core.diagnostics import CompileError
from gecomp.core.parsing import parse_module, verify_module
from gecomp.dialects.ge import (
    ConcatOp,
    ExpandOp,
    GatherOp,
    PadOp,
    ReshapeOp,
    SliceOp,
    SplitOp,
    TransDataOp,
    TransposeOp,
)
from gecomp.simulator.reference import run_reference

DTYPES = (np.float32, np.float16, np.int32, np.bool_)
ELEMENT_TYPES = {np.float32: f32, np.float16: f16, np.int32: i32, np.int64: i64, np.bool_: i1}


def tensor(shape, element_type=f32):
    return TensorType(element_type, list(shape))


def sample(rng, shape, dtype):
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-50, 50, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def build(shape, element_at, dtype) -> np.ndarray:
    """An array of `shape` whose element at each index is `element_at(index)`."""
    out = np.empty(shape, dtype=dtype)
    for index in np.ndindex(*shape):
        out[index] = element_at(index)
    return out


def assert_same(actual: np.ndarray, expected: np.ndarray) -> None:
    """Data movement is exact: same dtype, shape and bits."""
    np.testing.assert_array_equal(actual, expected, strict=True)


# ---- transpose, reshape, expand ---------------------------------------------------------------

PERMS = [*itertools.permutations(range(3)), (0,), (3, 1, 0, 2)]
PERM_SHAPES = {1: (5,), 3: (2, 3, 4), 4: (2, 3, 4, 1)}


@pytest.mark.parametrize("perm", PERMS, ids=str)
@pytest.mark.parametrize("dtype", DTYPES)
def test_transpose(dtype, perm, rng, run_op):
    x = sample(rng, PERM_SHAPES[len(perm)], dtype)
    shape = tuple(x.shape[p] for p in perm)

    def source(out_index):
        index = [0] * x.ndim
        for k, p in enumerate(perm):  # result dim k is input dim perm[k]
            index[p] = out_index[k]
        return x[tuple(index)]

    assert_same(run_op(TransposeOp, x, perm=perm), build(shape, source, x.dtype))


def row_major(x: np.ndarray) -> list:
    return [x[index] for index in np.ndindex(*x.shape)]


@pytest.mark.parametrize("shapes", [((2, 3, 4), (4, 6)), ((6,), (1, 6, 1)), ((1,), ()), ((2, 3), (3, 2)), ((1, 5), (5,))], ids=str)
@pytest.mark.parametrize("dtype", DTYPES)
def test_reshape_keeps_row_major_order(dtype, shapes, rng, run_op):
    source, target = shapes
    x = sample(rng, source, dtype)
    elements = iter(row_major(x))
    expected = build(target, lambda index: next(elements), x.dtype)
    assert_same(run_op(ReshapeOp, x, result_type=tensor(target, ELEMENT_TYPES[dtype])), expected)


@pytest.mark.parametrize(
    "shapes", [((3, 1), (2, 3, 4)), ((1,), (5,)), ((4,), (2, 4)), ((), (2, 2)), ((2, 1, 3), (2, 4, 3)), ((2, 3), (2, 3))], ids=str
)
@pytest.mark.parametrize("dtype", DTYPES)
def test_expand_broadcasts(dtype, shapes, rng, run_op):
    source, target = shapes
    x = sample(rng, source, dtype)
    offset = len(target) - len(source)

    def element(index):
        return x[tuple(0 if x.shape[k] == 1 else index[offset + k] for k in range(x.ndim))]

    assert_same(run_op(ExpandOp, x, result_type=tensor(target, ELEMENT_TYPES[dtype])), build(target, element, x.dtype))


# ---- concat and split ---------------------------------------------------------------------------

CONCAT_CASES = [
    ([(2, 3), (4, 3), (1, 3)], 0),
    ([(2, 3), (2, 1), (2, 5)], 1),
    ([(2, 3, 2), (2, 3, 1)], -1),
    ([(3, 4)], 1),
    ([(2, 0), (2, 3)], 1),
]


@pytest.mark.parametrize("shapes, axis", CONCAT_CASES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES)
def test_concat(dtype, shapes, axis, rng, run_op):
    inputs = [sample(rng, s, dtype) for s in shapes]
    rank = len(shapes[0])
    ax = axis % rank
    out_shape = list(shapes[0])
    out_shape[ax] = sum(s[ax] for s in shapes)

    def element(index):
        position = index[ax]
        for x in inputs:  # find the input holding this position along the axis
            if position < x.shape[ax]:
                return x[(*index[:ax], position, *index[ax + 1 :])]
            position -= x.shape[ax]
        raise AssertionError("position past the end")

    assert_same(run_op(ConcatOp, *inputs, axis=axis), build(tuple(out_shape), element, inputs[0].dtype))


SPLIT_CASES = [((4, 7), 1, (2, 0, 5)), ((6, 2), 0, (1, 1, 4)), ((2, 3, 5), -1, (5,)), ((1, 4), -2, (1,)), ((3, 4), 1, (1, 1, 1, 1))]


@pytest.mark.parametrize("shape, axis, sizes", SPLIT_CASES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES)
def test_split(dtype, shape, axis, sizes, rng, run_op):
    x = sample(rng, shape, dtype)
    ax = axis % len(shape)
    pieces = run_op(SplitOp, x, axis=axis, sizes=sizes)
    pieces = pieces if isinstance(pieces, list) else [pieces]
    assert len(pieces) == len(sizes)
    offset = 0
    for piece, size in zip(pieces, sizes):
        piece_shape = (*shape[:ax], size, *shape[ax + 1 :])
        start = offset
        expected = build(piece_shape, lambda index: x[(*index[:ax], start + index[ax], *index[ax + 1 :])], x.dtype)
        assert_same(piece, expected)
        offset += size


def test_split_then_concat_and_concat_then_split_are_identities(rng):
    text = """
func.func @main(%x: tensor<4x7xf32>, %a: tensor<4x2xf32>, %b: tensor<4x5xf32>) -> (tensor<4x7xf32>, tensor<4x2xf32>, tensor<4x5xf32>) {
  %p:3 = ge.split %x {axis = 1, sizes = [2, 0, 5]} : (tensor<4x7xf32>) -> (tensor<4x2xf32>, tensor<4x0xf32>, tensor<4x5xf32>)
  %y = ge.concat %p#0, %p#1, %p#2 {axis = -1} : (tensor<4x2xf32>, tensor<4x0xf32>, tensor<4x5xf32>) -> tensor<4x7xf32>
  %c = ge.concat %a, %b {axis = 1} : (tensor<4x2xf32>, tensor<4x5xf32>) -> tensor<4x7xf32>
  %q:2 = ge.split %c {axis = 1, sizes = [2, 5]} : (tensor<4x7xf32>) -> (tensor<4x2xf32>, tensor<4x5xf32>)
  func.return %y, %q#0, %q#1 : tensor<4x7xf32>, tensor<4x2xf32>, tensor<4x5xf32>
}
"""
    module = parse_module(make_context(), text, "split_concat.mlir")
    verify_module(module)
    inputs = [sample(rng, s, np.float32) for s in ((4, 7), (4, 2), (4, 5))]
    for out, original in zip(run_reference(module, inputs), inputs, strict=True):
        assert_same(out, original)


# ---- slice --------------------------------------------------------------------------------------


def slice_indices(start: int, end: int, step: int) -> list[int]:
    """start, start + step, ... strictly before `end` (normalised form: end = -1 with a
    negative step means "through index 0")."""
    indices, i = [], start
    while (i < end) if step > 0 else (i > end):
        indices.append(i)
        i += step
    return indices


SLICE_CASES = [
    ((5, 6, 4), (0, 1, 3), (5, 6, -1), (1, 2, -1)),
    ((5, 6, 4), (4, 5, 0), (-1, -1, 4), (-2, -3, 2)),
    ((5, 6, 4), (2, 0, 0), (2, 6, 4), (1, 1, 1)),  # empty in dim 0
    ((5, 6, 4), (4, 5, 3), (3, 4, 2), (-1, -1, -1)),  # one element per dim, backwards
    ((1, 3), (0, 2), (1, -1), (1, -2)),
    ((7,), (6,), (-1,), (-3,)),
    ((7,), (1,), (7,), (4,)),
]


@pytest.mark.parametrize("shape, starts, ends, steps", SLICE_CASES, ids=str)
@pytest.mark.parametrize("dtype", (np.float32, np.int32, np.bool_))
def test_slice(dtype, shape, starts, ends, steps, rng, run_op):
    x = sample(rng, shape, dtype)
    per_dim = [slice_indices(*args) for args in zip(starts, ends, steps)]
    out_shape = tuple(len(ix) for ix in per_dim)
    expected = build(out_shape, lambda index: x[tuple(ix[i] for ix, i in zip(per_dim, index))], x.dtype)
    assert_same(run_op(SliceOp, x, starts=starts, ends=ends, steps=steps), expected)


# ---- gather -------------------------------------------------------------------------------------

GATHER_CASES = [
    ((5, 4), [[0, -1, 2], [-5, 4, 1]], "int32", 0),
    ((5, 4), [3, -4, 0, 0], "int64", 1),
    ((2, 3, 4), [[-1], [2]], "int32", -1),
    ((2, 3, 4), 1, "int64", 1),  # a scalar index removes the dim
    ((3,), [-3, -2, -1, 0, 1, 2], "int32", 0),
]


@pytest.mark.parametrize("shape, indices, index_dtype, axis", GATHER_CASES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES)
def test_gather_with_negative_indices(dtype, shape, indices, index_dtype, axis, rng, run_op):
    data = sample(rng, shape, dtype)
    indices = np.array(indices, dtype=index_dtype)
    ax = axis % len(shape)
    out_shape = (*shape[:ax], *indices.shape, *shape[ax + 1 :])

    def element(index):
        chosen = int(indices[index[ax : ax + indices.ndim]])
        if chosen < 0:
            chosen += shape[ax]
        return data[(*index[:ax], chosen, *index[ax + indices.ndim :])]

    assert_same(run_op(GatherOp, data, indices, axis=axis), build(out_shape, element, data.dtype))


@pytest.mark.parametrize("bad", (5, -6))
def test_gather_out_of_range_is_an_error(bad, run_op):
    with pytest.raises(CompileError, match=f"'ge.gather' op index {bad} is out of range for axis 0 of size 5"):
        run_op(GatherOp, np.zeros((5, 2), np.float32), np.array([0, bad], np.int32))


# ---- pad ----------------------------------------------------------------------------------------


def pad_source(i: int, size: int, mode: str) -> int | None:
    """The input index an output position `i` (already shifted by the begin pad) reads,
    or None for the constant."""
    if 0 <= i < size:
        return i
    if mode == "constant":
        return None
    if mode == "edge":
        return min(max(i, 0), size - 1)
    while not 0 <= i < size:  # reflect about the edge elements, which are not repeated
        i = -i if i < 0 else 2 * (size - 1) - i
    return i


PAD_CASES = [
    ((3, 4), (1, 2, 0, 3), "constant", 0.0),
    ((3, 4), (0, 1, 2, 0), "constant", 1.5),
    ((3, 5), (2, 1, 2, 3), "reflect", 0.0),
    ((4,), (3, 2), "reflect", 0.0),
    ((2, 3), (3, 0, 0, 4), "edge", 0.0),
    ((1, 3), (2, 1, 1, 0), "edge", 0.0),
    ((2, 1, 3), (0, 0, 1, 1, 0, 2), "reflect", 0.0),
    ((2, 1, 3), (1, 2, 0, 0, 3, 1), "constant", -2.0),
]


@pytest.mark.parametrize("shape, pads, mode, value", PAD_CASES, ids=str)
@pytest.mark.parametrize("dtype", (np.float32, np.float16, np.int32))
def test_pad(dtype, shape, pads, mode, value, rng, run_op):
    x = sample(rng, shape, dtype)
    rank = len(shape)
    begins, ends = pads[:rank], pads[rank:]
    out_shape = tuple(d + b + e for d, b, e in zip(shape, begins, ends))
    fill = np.array(value).astype(dtype)

    def element(index):
        source = [pad_source(i - b, d, mode) for i, b, d in zip(index, begins, shape)]
        return fill if None in source else x[tuple(source)]

    assert_same(run_op(PadOp, x, pads=pads, mode=mode, value=value), build(out_shape, element, x.dtype))


# ---- transdata ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "shape, fmt", [((5, 17), "FRACTAL_NZ"), ((2, 3, 33, 1), "FRACTAL_NZ"), ((1, 3, 2, 5), "NC1HWC0"), ((17, 3, 3, 1), "FRACTAL_Z")], ids=str
)
@pytest.mark.parametrize("dtype", (np.float16, np.float32, np.bool_))
def test_transdata_keeps_the_logical_value(dtype, shape, fmt, rng, run_op):
    """A format change moves bytes, never values: the logical tensor is unchanged
    (odd sizes exercise the zero padding of the physical layout)."""
    x = sample(rng, shape, dtype)
    assert_same(run_op(TransDataOp, x, src_format="ND", dst_format=fmt), x)


# ---- verifiers ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "op, types, result, attrs, message",
    [
        (TransposeOp, [tensor((2, 3, 4))], None, {"perm": (0, 0, 1)}, "perm [0, 0, 1] is not a permutation of 3 dims"),
        (TransposeOp, [tensor((2, 3, 4))], None, {"perm": (1, 0)}, "perm [1, 0] is not a permutation of 3 dims"),
        (TransposeOp, [tensor((2, 3))], [tensor((2, 3))], {"perm": (1, 0)}, "does not match the inferred type tensor<3x2xf32>"),
        (ReshapeOp, [tensor((2, 3))], [tensor((4, 2))], {}, "cannot reshape 2x3 (6 elements) into 4x2 (8 elements)"),
        (ReshapeOp, [tensor((2, 3))], [tensor((3, 2), i32)], {}, "does not match the inferred type tensor<3x2xf32>"),
        (ExpandOp, [tensor((3, 4))], [tensor((2, 4))], {}, "not broadcast-compatible: 3x4 vs 2x4"),
        (ExpandOp, [tensor((3, 1))], [tensor((3,))], {}, "cannot expand 3x1 to 3"),
        (ConcatOp, [tensor((2, 3)), tensor((3, 3))], [tensor((5, 3))], {"axis": 1}, "inputs differ outside axis 1: 2x3 vs 3x3"),
        (ConcatOp, [tensor((2, 3)), tensor((2, 3, 1))], [tensor((4, 3))], {"axis": 0}, "inputs differ outside axis 0"),
        (ConcatOp, [tensor((2, 3)), tensor((2, 3), f16)], [tensor((4, 3))], {"axis": 0}, "input element types differ: f32 vs f16"),
        (ConcatOp, [tensor((2, 3))], None, {"axis": 2}, "axis 2 is out of range for rank 2"),
        (ConcatOp, [tensor(()), tensor(())], None, {"axis": 0}, "axis 0 is out of range for rank 0"),
        (SplitOp, [tensor((3, 4))], [tensor((3, 1)), tensor((3, 2))], {"axis": 1, "sizes": (1, 2)}, "sizes [1, 2] do not add up to dim 1 of size 4"),
        (SplitOp, [tensor((3, 4))], [tensor((3, 5)), tensor((3, 1))], {"axis": 1, "sizes": (5, -1)}, "attribute 'sizes' must be non-negative"),
        (SplitOp, [tensor((3, 4))], [tensor((3, 4))], {"axis": 1, "sizes": (1, 3)}, "expected 2 results, got 1"),
        (SplitOp, [tensor(())], [tensor(())], {"axis": 0, "sizes": (1,)}, "axis 0 is out of range for rank 0"),
        (SliceOp, [tensor((5,))], None, {"starts": (0,), "ends": (5,), "steps": (0,)}, "step of dim 0 is zero"),
        (SliceOp, [tensor((5,))], None, {"starts": (0,), "ends": (6,), "steps": (1,)}, "slice [0:6:1] of dim 0 (size 5) is not normalized"),
        (SliceOp, [tensor((5,))], None, {"starts": (3,), "ends": (1,), "steps": (1,)}, "slice [3:1:1] of dim 0 (size 5) is not normalized"),
        (SliceOp, [tensor((5,))], None, {"starts": (5,), "ends": (0,), "steps": (-1,)}, "slice [5:0:-1] of dim 0 (size 5) is not normalized"),
        (SliceOp, [tensor((5,))], None, {"starts": (2,), "ends": (-2,), "steps": (-1,)}, "is not normalized"),
        (SliceOp, [tensor((5, 2))], None, {"starts": (0,), "ends": (5, 2), "steps": (1, 1)}, "attribute 'starts' must have 2 values, got 1"),
        (GatherOp, [tensor((5, 2)), tensor((3,), f32)], None, {}, "indices must be integers, got f32"),
        (GatherOp, [tensor((5, 2)), tensor((3,), i1)], None, {}, "indices must be integers, got i1"),
        (GatherOp, [tensor(()), tensor((3,), i32)], None, {}, "data must have rank >= 1"),
        (GatherOp, [tensor((5, 2)), tensor((3,), i32)], None, {"axis": 2}, "axis 2 is out of range for rank 2"),
        (TransDataOp, [tensor((3, 4))], None, {"src_format": "NC1HWC0", "dst_format": "ND"}, "input format ND does not match src_format NC1HWC0"),
        (TransDataOp, [tensor((3, 4))], None, {"src_format": "ND", "dst_format": "NC1HWC0"}, "format NC1HWC0 needs a rank-4 tensor, got rank 2"),
        (PadOp, [tensor((3, 4))], None, {"pads": (1, 1)}, "attribute 'pads' must have 4 values, got 2"),
        (PadOp, [tensor((3, 4))], None, {"pads": (1, -1, 0, 0)}, "attribute 'pads' must be non-negative"),
        (PadOp, [tensor((3, 4))], None, {"pads": (3, 0, 0, 0), "mode": "reflect"}, "reflect padding must be smaller than the padded dim"),
        (PadOp, [tensor((3, 4))], None, {"pads": (0, 0, 0, 0), "mode": "wrap"}, "attribute 'mode' must be one of constant, reflect, edge"),
    ],
)
def test_shape_verifier_messages(op, types, result, attrs, message, verify_message):
    assert message in verify_message(op, types, result, **attrs)


@pytest.mark.parametrize("op", (ReshapeOp, ExpandOp))
def test_ops_defined_by_their_result_type_need_it(op):
    block = Block(arg_types=[tensor((2, 3))])
    with pytest.raises(VerifyException, match=f"{op.name} needs its result type"):
        op.new(block.args[0])
