"""Max and average pooling on the NPU, NCHW and NC1HWC0: strides, pads, ceil
mode, count_include_pad, images wider than UB holds (column tiles), several
cores; compiled by ge-lower-to-npu and simulated. Max pooling is exact; the
average is summed in fp32 and rounded once (fp16 tolerance)."""

from __future__ import annotations

import numpy as np
import pytest
from lower_movement_testing import compile_and_compare, compiled, gm_images, graph, kernel_ops, transdata
from conftest import assert_matches
from xdsl.dialects.builtin import TensorType, f16

from gecomp.dialects import ge
from gecomp.dialects.ge.formats import to_physical, with_format
from gecomp.dialects.ge.nn import _window_out
from gecomp.simulator.reference import run_reference

CASES = [
    # shape, kernel, strides, pads, ceil_mode, count_include_pad
    ([1, 16, 8, 8], [2, 2], [2, 2], [0, 0, 0, 0], False, False),
    ([2, 3, 9, 11], [3, 3], [2, 2], [1, 1, 1, 1], True, False),
    ([1, 20, 7, 6], [3, 2], [1, 2], [1, 0, 2, 1], False, True),
    ([1, 1, 1, 1], [1, 1], [1, 1], [0, 0, 0, 0], False, False),
    ([2, 17, 13, 5], [2, 3], [3, 1], [1, 2, 0, 1], True, True),
    ([1, 33, 16, 16], [3, 3], [1, 1], [1, 1, 1, 1], False, False),
]


def _pool(op, fmt, kernel, strides, pads, ceil, include_pad):
    """x -> (transdata to fmt) -> pool with its result in fmt too (as the layout
    pass types it), returned (in ND: copy_to_output converts)."""
    extra = {} if op is ge.MaxPool2DOp else {"count_include_pad": include_pad}

    def body(g, x):
        n, c, h, w = x.shape
        out = [n, c] + [
            _window_out(size, k, s, p0, p1, 1, ceil)
            for size, k, s, p0, p1 in zip((h, w), kernel, strides, pads[:2], pads[2:])
        ]
        if fmt != "ND":
            x = transdata(g, x, fmt)
        result_type = with_format(TensorType(x.type.element_type, out), fmt)
        return g.op(op, x, kernel=kernel, strides=strides, pads=pads, ceil_mode=ceil, result_type=result_type, **extra)

    return body


@pytest.mark.parametrize("fmt", ["ND", "NC1HWC0"])
@pytest.mark.parametrize("op", [ge.MaxPool2DOp, ge.AvgPool2DOp])
@pytest.mark.parametrize("case", CASES, ids=lambda c: "x".join(map(str, c[0])) + f"-k{c[1][0]}{c[1][1]}-s{c[2][0]}{c[2][1]}")
def test_pool(op, fmt, case):
    shape, *attrs = case
    compile_and_compare(graph([shape], _pool(op, fmt, *attrs)), exact=op is ge.MaxPool2DOp)


@pytest.mark.parametrize("op", [ge.MaxPool2DOp, ge.AvgPool2DOp])
@pytest.mark.parametrize("fmt", ["ND", "NC1HWC0"])
def test_pool_wider_than_ub_uses_column_tiles(op, fmt):
    """The buffers of a 300-pixel row of 16 lanes do not fit the tiny preset's UB:
    the output columns are tiled, edge tiles being static cases."""
    module = graph([[1, 18, 6, 300]], _pool(op, fmt, [3, 3], [2, 2], [1, 1, 1, 1], True, False))
    compile_and_compare(module, exact=op is ge.MaxPool2DOp)


def test_pool_fp32():
    module = graph([[1, 9, 10, 12]], _pool(ge.AvgPool2DOp, "NC1HWC0", [3, 3], [2, 2], [1, 1, 1, 1], False, True), dtype="f32")
    compile_and_compare(module, exact=False)


@pytest.mark.parametrize("op", [ge.MaxPool2DOp, ge.AvgPool2DOp])
def test_resnet_stem_pool_on_ascend910(op):
    module = graph([[1, 64, 56, 56]], _pool(op, "NC1HWC0", [3, 3], [2, 2], [1, 1, 1, 1], False, False))
    compile_and_compare(module, hw="ascend910", exact=op is ge.MaxPool2DOp)


def test_each_window_offset_is_one_vector_instruction():
    """3x3 max pool: nine vector instructions per tile body (a vcopy and eight vmax)."""
    module = graph([[1, 16, 12, 12]], _pool(ge.MaxPool2DOp, "NC1HWC0", [3, 3], [1, 1], [0, 0, 0, 0], False, False))
    names = [op.name for op in kernel_ops(module, "ascend910", 1)]
    assert names.count("npu.vcopy") == 1 and names.count("npu.vmax") == 8, names


@pytest.mark.parametrize("source", ["ND", "NC1HWC0"])
@pytest.mark.parametrize("op", [ge.MaxPool2DOp, ge.AvgPool2DOp])
def test_pool_result_image(rng, op, source):
    """The NC1HWC0 result of 20 channels: the pooled values where the format puts
    them, and zeros in the second block's lanes 4..15 (its padding)."""
    x = rng.standard_normal([1, 20, 7, 9]).astype(np.float16)

    def body(g, x):
        if source != "ND":
            x = transdata(g, x, source)
        result_type = with_format(TensorType(x.type.element_type, [1, 20, 4, 5]), "NC1HWC0")
        return transdata(g, g.op(op, x, kernel=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], result_type=result_type), "ND")

    module = graph([[1, 20, 7, 9]], body)
    (expected,) = run_reference(module.clone(), [x])
    compiled(module, "tiny", "ge-lower-to-npu{hw=tiny reuse=false}")
    image = [a for a in gm_images(module, [x]).values() if a.ndim == 5][-1]  # the pool's result
    assert_matches(image, to_physical(expected, "NC1HWC0", f16))
