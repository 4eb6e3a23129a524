"""Format conversions on the NPU: `formats.dim_layouts` (the strided form of the
layouts), the strided pieces of index maps, and `ge.transdata` / a formatted
result leaving @main compiled by ge-lower-to-npu and simulated, bit-exact."""

from __future__ import annotations

import numpy as np
import pytest
from lower_movement_testing import compile_and_compare, compiled, gm_images, graph, kernel_ops, transdata
from xdsl.dialects.builtin import TensorType, f16, f32, i8

from gecomp.dialects.ge.formats import dim_layouts, physical_shape, to_physical, with_format
from gecomp.lowering.fused_to_npu.context import GmTensor
from gecomp.lowering.fused_to_npu.templates.index_map import box_map, padding_fills, strided_pieces

FORMATS = [("FRACTAL_NZ", 2), ("FRACTAL_NZ", 3), ("NC1HWC0", 4), ("FRACTAL_Z", 4)]
TYPES = [(f16, np.float16), (f32, np.float32), (i8, np.int8)]


def _tensor(shape, fmt, element_type=f16) -> GmTensor:
    return GmTensor(None, with_format(TensorType(element_type, list(shape)), fmt), None)


def apply_pieces(pieces, src: np.ndarray | None, dst: np.ndarray) -> None:
    """What the kernel of `pieces` does, in numpy on flat GM images."""
    for piece in pieces:
        p = piece.normalized()
        index = np.indices([a.extent for a in p.axes]).reshape(len(p.axes), -1) if p.axes else np.zeros((0, 1), int)
        dst_offsets = p.dst_base + sum((i * a.dst for i, a in zip(index, p.axes)), np.zeros(index.shape[1], int))
        assert len(np.unique(dst_offsets)) == dst_offsets.size, "a piece writes an element twice"
        if p.src is None:
            dst[dst_offsets] = p.value
        else:
            src_offsets = p.src_base + sum((i * a.src for i, a in zip(index, p.axes)), np.zeros(index.shape[1], int))
            dst[dst_offsets] = src[src_offsets]


# ---- the strided layouts -------------------------------------------------------------


@pytest.mark.parametrize("fmt,rank", [("ND", 3), *FORMATS])
@pytest.mark.parametrize("element_type,dtype", TYPES)
def test_dim_layouts_address_to_physical(rng, fmt, rank, element_type, dtype):
    for _ in range(4):
        shape = tuple(int(v) for v in rng.integers(1, 40 if rank < 4 else 20, rank))
        x = np.arange(1, np.prod(shape) + 1, dtype=np.int64).reshape(shape)
        image = to_physical(x, fmt, element_type).reshape(-1)
        layouts = dim_layouts(shape, fmt, element_type)
        index = np.indices(shape).reshape(rank, -1)
        offsets = sum(lay.offset(i) for lay, i in zip(layouts, index))
        np.testing.assert_array_equal(image[offsets], x.reshape(-1))
        # The padded index space covers the image exactly once.
        padded = np.indices([lay.padded for lay in layouts]).reshape(rank, -1)
        all_offsets = np.sort(sum(lay.offset(i) for lay, i in zip(layouts, padded)))
        np.testing.assert_array_equal(all_offsets, np.arange(image.size))


# ---- pieces of conversions -------------------------------------------------------------


@pytest.mark.parametrize("src_fmt,dst_fmt,rank", [
    ("ND", "FRACTAL_NZ", 2), ("FRACTAL_NZ", "ND", 3), ("ND", "NC1HWC0", 4), ("NC1HWC0", "ND", 4),
    ("ND", "FRACTAL_Z", 4), ("FRACTAL_Z", "NC1HWC0", 4), ("FRACTAL_NZ", "FRACTAL_NZ", 2),
])
def test_conversion_pieces_write_the_destination_image(rng, src_fmt, dst_fmt, rank):
    for _ in range(10):
        shape = tuple(int(v) for v in rng.integers(1, 40 if rank < 4 else 16, rank))
        x = rng.standard_normal(shape).astype(np.float16)
        src, dst = _tensor(shape, src_fmt), _tensor(shape, dst_fmt)
        pieces = strided_pieces(box_map(shape, [0] * rank, [0] * rank), src, dst)
        for fill in padding_fills(dst):
            pieces += strided_pieces(fill, None, dst)
        image = np.full(int(np.prod(physical_shape(shape, dst_fmt, f16))), np.nan, np.float16)
        apply_pieces(pieces, to_physical(x, src_fmt, f16).reshape(-1), image)
        np.testing.assert_array_equal(image, to_physical(x, dst_fmt, f16).reshape(-1))


# ---- compiled and simulated ------------------------------------------------------------


CONVERSION_SHAPES = {
    2: [[1, 1], [17, 33], [40, 50], [3, 1], [129, 65]],
    3: [[12, 37, 11], [32, 27, 1], [256, 1, 8]],
    4: [[1, 1, 1, 1], [2, 21, 9, 11], [1, 64, 5, 7], [3, 5, 2, 33]],
}


@pytest.mark.parametrize("fmt,rank", FORMATS)
def test_transdata_round_trip(fmt, rank):
    for shape in CONVERSION_SHAPES[rank]:
        module = graph([shape], lambda g, x: transdata(g, transdata(g, x, fmt), "ND"))
        compile_and_compare(module)


@pytest.mark.parametrize("fmt,shape", [
    ("FRACTAL_NZ", [2, 17, 33]), ("NC1HWC0", [2, 21, 3, 5]), ("FRACTAL_Z", [17, 21, 2, 3]),
])
def test_formatted_intermediate_is_the_exact_image(rng, fmt, shape):
    """The kernel writes the whole physical image: data where to_physical puts it,
    zeros in the padding (a cube kernel relies on them)."""
    x = rng.standard_normal(shape).astype(np.float16)
    module = graph([shape], lambda g, x: transdata(g, transdata(g, x, fmt), "ND"))
    compiled(module, "tiny", "ge-lower-to-npu{hw=tiny reuse=false}")
    (image,) = gm_images(module, [x]).values()
    np.testing.assert_array_equal(image, to_physical(x, fmt, f16))


@pytest.mark.parametrize("element_type", ["f32", "i8"])
@pytest.mark.parametrize("fmt,rank", FORMATS)
def test_transdata_other_types(element_type, fmt, rank):
    shape = CONVERSION_SHAPES[rank][2]
    module = graph([shape], lambda g, x: transdata(g, transdata(g, x, fmt), "ND"), dtype=element_type)
    compile_and_compare(module)


@pytest.mark.parametrize("fmt,shape", [("FRACTAL_NZ", [33, 70]), ("NC1HWC0", [2, 20, 6, 5]), ("FRACTAL_Z", [20, 17, 3, 2])])
def test_formatted_result_leaves_in_nd(fmt, shape):
    """copy_to_output converts a result in a physical format back to ND."""
    module = graph([shape], lambda g, x: transdata(g, x, fmt))
    compile_and_compare(module)


def test_between_physical_formats():
    shape = [20, 35, 3, 2]
    module = graph([shape], lambda g, x: transdata(g, transdata(g, transdata(g, x, "NC1HWC0"), "FRACTAL_Z"), "ND"))
    compile_and_compare(module)


@pytest.mark.parametrize("shape", [[128, 768], [12, 128, 64], [1, 64, 56, 56]])
def test_transdata_on_ascend910(shape):
    fmt = "NC1HWC0" if len(shape) == 4 else "FRACTAL_NZ"
    module = graph([shape], lambda g, x: transdata(g, transdata(g, x, fmt), "ND"))
    compile_and_compare(module, hw="ascend910")


def test_nd_to_nz_moves_long_runs_and_relayouts_in_ub():
    """The efficient shape of ND -> FRACTAL_NZ: copies of several blocks' worth of
    contiguous elements on both GM sides, the 16-column blocks separated by vcopy
    in UB (not one 32-byte run per block row)."""
    module = graph([[128, 768]], lambda g, x: transdata(g, x, "FRACTAL_NZ"))
    ops = kernel_ops(module, "tiny", 0)
    copies = [op.attr_values() for op in ops if op.name == "npu.copy"]
    assert len(copies) == 2
    assert all(c.cols >= 64 for c in copies), copies
    assert any(op.name == "npu.vcopy" for op in ops)
