"""A conversion between two formats that lay a tensor out alike moves nothing:
`same_image` says when (checked against the memory images themselves), and the
NPU lowering makes such a `ge.transdata` a view of its input's buffer instead of
a copy kernel (a pooled NC1HWC0 feature map read in ND by its classifier)."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import f16, f32

from gecomp.dialects.ge.formats import Format, same_image, to_physical
from vector_testing import compile_and_compare

RNG = np.random.default_rng(7)
NCHW = [(int(n), int(c), int(h), int(w)) for n, c, h, w in RNG.integers(1, 4, (12, 4)) * [1, 16, 1, 1]]
NCHW += [(1, 1280, 1, 1), (2, 24, 1, 1), (1, 20, 1, 1), (1, 16, 2, 1), (3, 8, 1, 1)]
MATRICES = [(int(m), int(n)) for m, n in RNG.integers(1, 64, (12, 2))] + [(32, 16), (48, 16), (16, 32), (8, 16)]


def _images_agree(shape, fmt, element_type, dtype) -> bool:
    logical = np.arange(1, np.prod(shape) + 1, dtype=dtype).reshape(shape)
    a, b = to_physical(logical, fmt, element_type).ravel(), logical.ravel()
    return a.shape == b.shape and np.array_equal(a, b)


@pytest.mark.parametrize("element_type,dtype", [(f32, np.float32), (f16, np.float16)], ids=["f32", "f16"])
def test_same_image_is_the_memory_image(element_type, dtype):
    for shape in NCHW:
        assert same_image(shape, Format.NC1HWC0, Format.ND, element_type) == _images_agree(
            shape, Format.NC1HWC0, element_type, dtype
        ), shape
    for shape in MATRICES:
        assert same_image(shape, Format.FRACTAL_NZ, Format.ND, element_type) == _images_agree(
            shape, Format.FRACTAL_NZ, element_type, dtype
        ), shape


def _classifier_head(c: int) -> str:
    """conv (NC1HWC0) -> global average pool -> flatten -> matmul: the pooled map
    leaves NC1HWC0 for the classifier's ND input."""
    return f"""func.func @main(%x: tensor<1x8x5x5xf32>, %w: tensor<{c}x8x3x3xf32>, %fc: tensor<{c}x10xf32>) -> tensor<1x10xf32> {{
  %y = ge.conv2d %x, %w {{pads = [1, 1, 1, 1]}} : (tensor<1x8x5x5xf32>, tensor<{c}x8x3x3xf32>) -> tensor<1x{c}x5x5xf32>
  %r = ge.relu %y : (tensor<1x{c}x5x5xf32>) -> tensor<1x{c}x5x5xf32>
  %p = ge.global_avg_pool %r : (tensor<1x{c}x5x5xf32>) -> tensor<1x{c}x1x1xf32>
  %f = ge.reshape %p : (tensor<1x{c}x1x1xf32>) -> tensor<1x{c}xf32>
  %o = ge.matmul %f, %fc : (tensor<1x{c}xf32>, tensor<{c}x10xf32>) -> tensor<1x10xf32>
  func.return %o : tensor<1x10xf32>
}}"""


@pytest.mark.parametrize("c,copied", [(64, False), (200, False), (100, True)])
def test_pooled_map_reaches_the_classifier_without_a_copy(c, copied):
    """Whole channel blocks: the pool's NC1HWC0 result is the ND one, no kernel
    converts it; 100 channels end in a partial block (padding): the copy stays."""
    mismatch, report, _ = compile_and_compare(_classifier_head(c), pipeline="ge-compile", hw="ascend910")
    assert mismatch is None, mismatch
    phases = [p.name for k in report.kernels for p in (k.phases or [k])]
    conversions = [name for name in phases if name.split("_", 1)[1] == "p"]  # the kernel writing %p in ND
    assert bool(conversions) == copied, phases
