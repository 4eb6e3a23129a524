"""Data movement ops on the NPU (transpose, reshape with formats, expand, concat,
split, slice, gather, pad): random shapes (1, odd sizes, sizes above a tile,
several cores) compiled by ge-lower-to-npu and simulated on the tiny preset (a
few on ascend910), bit-exact against the reference interpreter."""

from __future__ import annotations

import numpy as np
import pytest
from lower_movement_testing import compile_and_compare, graph, kernel_ops, transdata
from test_lower_movement_layout import apply_pieces
from xdsl.dialects.builtin import TensorType, f16

from gecomp.core.diagnostics import CompileError
from gecomp.dialects import ge
from gecomp.dialects.ge.formats import physical_shape, to_physical, with_format
from gecomp.lowering.fused_to_npu.context import GmTensor
from gecomp.lowering.fused_to_npu.templates.data_movement import reshape_map
from gecomp.lowering.fused_to_npu.templates.index_map import UnsupportedMap, box_map, padding_fills, strided_pieces


def _shape(rng, rank: int, high: int = 24) -> list[int]:
    """Random dims, often 1 or just above a power of two."""
    choices = [1, 2, 3, 5, 7, 16, 17, 33, 65]
    return [int(rng.choice(choices)) if rng.random() < 0.5 else int(rng.integers(1, high)) for _ in range(rank)]


# ---- transpose ---------------------------------------------------------------------------


@pytest.mark.parametrize("rank", [2, 3, 4])
def test_transpose_random(rng, rank):
    for _ in range(6):
        shape = _shape(rng, rank)
        perm = [int(p) for p in rng.permutation(rank)]
        compile_and_compare(graph([shape], lambda g, x: g.op(ge.TransposeOp, x, perm=perm)))


@pytest.mark.parametrize("shape,perm", [([128, 12, 64], [1, 0, 2]), ([12, 128, 64], [0, 2, 1]), ([130, 260], [1, 0])])
def test_transpose_large(shape, perm):
    """Tiles, tails and both cores on tiny; the attention head shuffles on ascend910."""
    compile_and_compare(graph([shape], lambda g, x: g.op(ge.TransposeOp, x, perm=perm)))
    compile_and_compare(graph([shape], lambda g, x: g.op(ge.TransposeOp, x, perm=perm)), hw="ascend910")


def test_transpose_of_last_two_dims_uses_vtranspose():
    module = graph([[64, 96]], lambda g, x: g.op(ge.TransposeOp, x, perm=[1, 0]))
    names = [op.name for op in kernel_ops(module, "tiny", 0)]
    assert "npu.vtranspose" in names
    assert names.count("npu.copy") <= 4  # whole blocks, not element copies


def test_formatted_inputs():
    """Ops read their operands in whatever format they are in (pieces cut at the blocks)."""
    nz = lambda g, x: transdata(g, x, "FRACTAL_NZ")  # noqa: E731
    compile_and_compare(graph([[40, 50]], lambda g, x: g.op(ge.TransposeOp, nz(g, x), perm=[1, 0])))
    compile_and_compare(graph([[40, 50]], lambda g, x: g.op(ge.SliceOp, nz(g, x), starts=[39, 0], ends=[-1, 50], steps=[-2, 3])))
    compile_and_compare(graph([[2, 20, 5, 3], [2, 3, 5, 3]], lambda g, x, y: g.op(
        ge.ConcatOp, transdata(g, x, "NC1HWC0"), transdata(g, y, "NC1HWC0"), axis=1)))


# ---- slice, concat, split, expand ----------------------------------------------------------


def _random_slice(rng, shape):
    starts, ends, steps = [], [], []
    for size in shape:
        step = int(rng.choice([1, 1, 2, 3, 5, 16, 20, -1, -2, -3]))
        if step > 0:
            start = int(rng.integers(0, size))
            end = int(rng.integers(start + 1, size + 1))
        else:
            start = int(rng.integers(0, size))
            end = int(rng.integers(-1, start))
        starts.append(start)
        ends.append(end)
        steps.append(step)
    return starts, ends, steps


@pytest.mark.parametrize("rank", [1, 2, 3])
def test_slice_random(rng, rank):
    for _ in range(8):
        shape = _shape(rng, rank)
        starts, ends, steps = _random_slice(rng, shape)
        compile_and_compare(graph([shape], lambda g, x: g.op(ge.SliceOp, x, starts=starts, ends=ends, steps=steps)))


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat_random(rng, axis):
    for _ in range(4):
        base = _shape(rng, 3)
        shapes = []
        for _ in range(int(rng.integers(1, 4))):
            s = list(base)
            s[axis] = int(rng.integers(1, 20))
            shapes.append(s)
        compile_and_compare(graph(shapes, lambda g, *xs: g.op(ge.ConcatOp, *xs, axis=axis)))


def test_concat_of_wide_and_deep_features():
    compile_and_compare(graph([[256, 256], [256, 16]], lambda g, x, y: g.op(ge.ConcatOp, x, y, axis=1)), hw="ascend910")


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_split_random(rng, axis):
    for _ in range(4):
        shape = _shape(rng, 3)
        shape[axis] = max(shape[axis], 3)
        cuts = sorted(int(c) for c in rng.choice(np.arange(1, shape[axis]), size=2, replace=False))
        sizes = [cuts[0], cuts[1] - cuts[0], shape[axis] - cuts[1]]
        compile_and_compare(graph([shape], lambda g, x: g.op(ge.SplitOp, x, axis=axis, sizes=sizes)))


@pytest.mark.parametrize("source,target", [
    ([3, 1], [2, 3, 40]), ([1, 40], [30, 40]), ([5, 1, 3], [5, 4, 3]),
    ([1], [7, 9]), ([1, 1], [33, 65]), ([4, 1, 1], [4, 17, 33]),
])
def test_expand(source, target):
    compile_and_compare(graph([source], lambda g, x: g.op(ge.ExpandOp, x, result_type=TensorType(f16, target))))


# ---- pad ------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge"])
def test_pad_random(rng, mode):
    for _ in range(4):
        shape = [max(3, d) for d in _shape(rng, 3, high=12)]
        pads = [int(p) for p in rng.integers(0, 3, 6)]
        compile_and_compare(graph([shape], lambda g, x: g.op(ge.PadOp, x, pads=pads, mode=mode, value=1.5)))


# ---- reshape with formats ----------------------------------------------------------------


@pytest.mark.parametrize("src_shape,dst_shape,src_fmt,dst_fmt", [
    ([128, 768], [128, 12, 64], "FRACTAL_NZ", "ND"),
    ([128, 768], [128, 12, 64], "FRACTAL_NZ", "FRACTAL_NZ"),
    ([256, 8], [256, 1, 8], "FRACTAL_NZ", "FRACTAL_NZ"),
    ([6, 40], [240], "FRACTAL_NZ", "ND"),
    ([2, 3, 20], [6, 20], "ND", "FRACTAL_NZ"),
])
def test_reshape_with_formats(src_shape, dst_shape, src_fmt, dst_fmt):
    def body(g, x):
        if src_fmt != "ND":
            x = transdata(g, x, src_fmt)
        return g.op(ge.ReshapeOp, x, result_type=with_format(TensorType(f16, dst_shape), dst_fmt))

    compile_and_compare(graph([src_shape], body))


def test_reshape_without_common_refinement_is_a_located_error():
    module = graph([[4, 6]], lambda g, x: g.op(
        ge.ReshapeOp, transdata(g, x, "FRACTAL_NZ"), result_type=with_format(TensorType(f16, [6, 4]), "FRACTAL_NZ")))
    with pytest.raises(CompileError, match="has no NPU kernel for this case: .*(refinement|blocks)"):
        compile_and_compare(module)


@pytest.mark.parametrize("src,dst", [([6, 20], [2, 3, 20]), ([128, 768], [128, 12, 64]), ([1, 5, 1], [5]), ([4, 6], [24])])
def test_reshape_map_moves_the_flat_order(src, dst):
    for fmt_src, fmt_dst in [("ND", "ND"), ("FRACTAL_NZ", "ND"), ("ND", "FRACTAL_NZ")]:
        if (fmt_src != "ND" and len(src) < 2) or (fmt_dst != "ND" and len(dst) < 2):
            continue
        x = (np.arange(np.prod(src)) % 2039).reshape(src).astype(np.float16)
        s = GmTensor(None, with_format(TensorType(f16, src), fmt_src), None)
        d = GmTensor(None, with_format(TensorType(f16, dst), fmt_dst), None)
        pieces = strided_pieces(reshape_map(src, dst), s, d)
        for fill in padding_fills(d):
            pieces += strided_pieces(fill, None, d)
        image = np.full(int(np.prod(physical_shape(dst, fmt_dst, f16))), np.nan, np.float16)
        apply_pieces(pieces, to_physical(x, fmt_src, f16).reshape(-1), image)
        np.testing.assert_array_equal(image, to_physical(x.reshape(dst), fmt_dst, f16).reshape(-1))


def test_slice_pieces_over_blocked_dims(rng):
    """Slices with steps of formatted tensors: the pieces cut at block boundaries
    match numpy; only a reversed axis over blocked dims on both sides is refused."""
    for _ in range(60):
        shape = [int(rng.integers(1, 50)), int(rng.integers(1, 50))]
        starts, ends, steps = _random_slice(rng, shape)
        x = rng.standard_normal(shape).astype(np.float16)
        expected = x[tuple(slice(a, None if b < 0 else b, c) for a, b, c in zip(starts, ends, steps))]
        for fs, fd in [("FRACTAL_NZ", "ND"), ("ND", "FRACTAL_NZ"), ("FRACTAL_NZ", "FRACTAL_NZ")]:
            src = GmTensor(None, with_format(TensorType(f16, shape), fs), None)
            dst = GmTensor(None, with_format(TensorType(f16, list(expected.shape)), fd), None)
            imap = box_map(expected.shape, [0, 0], starts, [((d, steps[d]),) for d in range(2)])
            try:
                pieces = strided_pieces(imap, src, dst)
            except UnsupportedMap:
                assert fs == fd == "FRACTAL_NZ" and steps[1] < 0
                continue
            for fill in padding_fills(dst):
                pieces += strided_pieces(fill, None, dst)
            image = np.full(int(np.prod(physical_shape(expected.shape, fd, f16))), np.nan, np.float16)
            apply_pieces(pieces, to_physical(x, fs, f16).reshape(-1), image)
            np.testing.assert_array_equal(image, to_physical(expected, fd, f16).reshape(-1))


# ---- gather ------------------------------------------------------------------------------


@pytest.mark.parametrize("data_shape,index_shape,axis,hw", [
    ([10, 7], [5], 0, "tiny"),
    ([4, 10, 3], [2, 3], 1, "tiny"),
    ([7, 6, 5], [4], 2, "tiny"),
    ([5, 9000], [3], 0, "tiny"),
    ([1000, 32], [256, 8], 0, "ascend910"),
    ([1, 1], [1], 0, "tiny"),
])
def test_gather(rng, data_shape, index_shape, axis, hw):
    data = rng.standard_normal(data_shape).astype(np.float16)
    size = data_shape[axis]
    indices = rng.integers(-size, size, index_shape).astype(np.int32)
    module = graph([data_shape, index_shape], lambda g, x, i: g.op(ge.GatherOp, x, i, axis=axis), input_dtypes=[None, "i32"])
    compile_and_compare(module, hw=hw, inputs=[data, indices])


# ---- element types and corner cases --------------------------------------------------------


@pytest.mark.parametrize("dtype", ["i1", "i8", "i32", "i64", "f32"])
def test_element_types(dtype):
    """Alignment (32 bytes = 32, 8 or 4 elements) and the fill constants follow the type."""
    compile_and_compare(graph([[17, 33]], lambda g, x: g.op(ge.TransposeOp, x, perm=[1, 0]), dtype=dtype))
    reverse = {"starts": [19, 1], "ends": [-1, 9], "steps": [-2, 3]}
    compile_and_compare(graph([[20, 9]], lambda g, x: g.op(ge.SliceOp, x, **reverse), dtype=dtype))
    compile_and_compare(graph([[20, 40]], lambda g, x: transdata(g, transdata(g, x, "FRACTAL_NZ"), "ND"), dtype=dtype))
    compile_and_compare(graph([[6, 5]], lambda g, x: g.op(ge.PadOp, x, pads=[1, 2, 2, 1], mode="reflect"), dtype=dtype))


@pytest.mark.parametrize("shapes,body", [
    ([[]], lambda g, x: g.op(ge.ExpandOp, x, result_type=TensorType(f16, [3, 4]))),
    ([[]], lambda g, x: x),
    ([[5]], lambda g, x: [g.op(ge.TransposeOp, x, perm=[0])] * 2),
    ([[1, 70000]], lambda g, x: g.op(ge.SliceOp, x, starts=[0, 1], ends=[1, 70000], steps=[1, 1])),
    ([[3, 7000]], lambda g, x: g.op(ge.TransposeOp, x, perm=[1, 0])),
    ([[2, 3]], lambda g, x: g.op(ge.PadOp, x, pads=[0, 0, 100, 9000], mode="constant", value=3.0)),
], ids=["expand-scalar", "scalar-result", "returned-twice", "row-above-ub", "long-transpose", "large-fill"])
def test_corner_cases(shapes, body):
    compile_and_compare(graph(shapes, body))
