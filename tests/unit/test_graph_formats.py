"""The physical formats of `dialects/ge/formats.py`: exact layouts on small known
cases (which memory element holds which logical element), zero padding, shapes
per element type, and round trips on random shapes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import TensorType, f16, f32, i8

from gecomp.dialects.ge.formats import (
    Format,
    block_shape,
    c0,
    format_error,
    format_of,
    fractal_shape,
    from_physical,
    physical_bytes,
    physical_shape,
    to_physical,
    with_format,
)


def numbered(shape, dtype=np.float16) -> np.ndarray:
    """1, 2, 3, ... so every element is distinguishable from padding (0)."""
    return (np.arange(np.prod(shape)) + 1).reshape(shape).astype(dtype)


def test_c0_is_32_bytes_of_elements():
    assert (c0(f16), c0(f32), c0(i8)) == (16, 8, 32)
    assert c0(np.dtype(np.float16)) == 16
    assert fractal_shape(f16) == fractal_shape(f32) == (16, 16)
    assert fractal_shape(i8) == (16, 32)


def test_nc1hwc0_layout_of_a_small_tensor():
    x = numbered((2, 3, 2, 2))
    p = to_physical(x, Format.NC1HWC0)
    assert p.shape == (2, 1, 2, 2, 16)
    for n, c, h, w in np.ndindex(x.shape):
        assert p[n, 0, h, w, c] == x[n, c, h, w]
    assert not p[..., 3:].any(), "channels 3..15 are zero padding"


def test_nc1hwc0_splits_channels_into_blocks_of_c0():
    x = numbered((1, 20, 1, 1), np.float32)  # fp32: C0 = 8, C1 = 3
    p = to_physical(x, "NC1HWC0")
    assert p.shape == (1, 3, 1, 1, 8)
    assert p[0, 2, 0, 0, 3] == x[0, 19, 0, 0]
    assert p[0, 1, 0, 0, 0] == x[0, 8, 0, 0]
    assert not p[0, 2, 0, 0, 4:].any()


def test_fractal_nz_layout_of_a_small_matrix():
    x = numbered((17, 33))
    p = to_physical(x, Format.FRACTAL_NZ)
    assert p.shape == (3, 2, 16, 16)  # (N1, M1, M0, N0)
    for m, n in [(0, 0), (16, 32), (5, 17), (15, 15), (16, 0)]:
        assert p[n // 16, m // 16, m % 16, n % 16] == x[m, n]
    assert p.sum(dtype=np.float64) == x.sum(dtype=np.float64)
    assert np.count_nonzero(p) == x.size


def test_fractal_nz_keeps_batch_dims_and_uses_32_columns_for_one_byte_types():
    x = numbered((2, 3, 4, 5))
    assert to_physical(x, "FRACTAL_NZ").shape == (2, 3, 1, 1, 16, 16)
    assert to_physical(x, "FRACTAL_NZ")[1, 2, 0, 0, 3, 4] == x[1, 2, 3, 4]
    b = np.ones((3, 40), dtype=np.int8)
    assert to_physical(b, "FRACTAL_NZ").shape == (2, 1, 16, 32)


def test_fractal_z_layout_of_conv_weights():
    w = numbered((17, 20, 2, 3))  # (O, C, KH, KW); fp16: C1 = 2, N1 = 2
    p = to_physical(w, Format.FRACTAL_Z)
    assert p.shape == (2 * 2 * 3, 2, 16, 16)  # (C1*KH*KW, N1, N0, C0)
    for o, c, h, k in [(16, 17, 1, 2), (0, 0, 0, 0), (3, 15, 1, 0)]:
        c1, c0_ = divmod(c, 16)
        assert p[(c1 * 2 + h) * 3 + k, o // 16, o % 16, c0_] == w[o, c, h, k]
    assert np.count_nonzero(p) == w.size


def test_physical_shape_matches_the_data_and_counts_padding():
    t = TensorType(f16, [1, 64, 56, 56])
    assert physical_shape(t.get_shape(), Format.NC1HWC0, f16) == (1, 4, 56, 56, 16)
    assert physical_shape((128, 768), "FRACTAL_NZ", f16) == (48, 8, 16, 16)
    assert physical_shape((64, 64, 3, 3), "FRACTAL_Z", f32) == (72, 4, 16, 8)
    assert physical_shape((5, 7), "ND", f16) == (5, 7)
    assert physical_bytes(with_format(TensorType(f16, [1, 3, 2, 2]), "NC1HWC0")) == 16 * 4 * 2
    assert physical_bytes(TensorType(f16, [1, 3, 2, 2])) == 12 * 2


def test_format_errors_and_encodings():
    assert format_error("NC1HWC0", (2, 3)) == "format NC1HWC0 needs a rank-4 tensor, got rank 2"
    assert format_error("FRACTAL_NZ", (7,)) == "format FRACTAL_NZ needs rank >= 2, got rank 1"
    assert format_error("FRACTAL_Z", (1, 2, 3, 4)) is None
    with pytest.raises(ValueError):
        physical_shape((3,), "FRACTAL_NZ", f16)
    t = with_format(TensorType(f16, [4, 4]), "FRACTAL_NZ")
    assert format_of(t) == Format.FRACTAL_NZ and str(t) == "tensor<4x4xf16, #ge.format<FRACTAL_NZ>>"
    assert format_of(with_format(t, "ND")) == Format.ND
    assert block_shape("NC1HWC0", f16) != block_shape("NC1HWC0", f32)
    assert block_shape("FRACTAL_NZ", f16) == block_shape("FRACTAL_NZ", f32)


def test_conversions_follow_the_declared_element_type():
    """An fp16 tensor computed in fp32 is laid out as fp16 (C0 = 16, not 8)."""
    x = numbered((1, 9, 1, 1), np.float32)
    assert to_physical(x, "NC1HWC0", f16).shape == (1, 1, 1, 1, 16)
    assert to_physical(x, "NC1HWC0").shape == (1, 2, 1, 1, 8)


shapes_2d_plus = st.lists(st.integers(1, 40), min_size=2, max_size=4).map(tuple)
shapes_4d = st.lists(st.integers(1, 20), min_size=4, max_size=4).map(tuple)
dtypes_ = st.sampled_from([np.float16, np.float32, np.int8, np.int32, np.bool_])


@settings(max_examples=60, deadline=None)
@given(data=st.data(), dtype=dtypes_)
def test_round_trips_and_zero_padding(data, dtype):
    fmt = data.draw(st.sampled_from(list(Format)))
    shape = data.draw(shapes_4d if fmt in (Format.NC1HWC0, Format.FRACTAL_Z) else shapes_2d_plus)
    x = np.random.default_rng(0).integers(1, 100, size=shape).astype(dtype)
    p = to_physical(x, fmt)
    assert p.shape == physical_shape(shape, fmt, p.dtype)
    assert p.dtype == x.dtype
    assert np.count_nonzero(p) == np.count_nonzero(x), "padding is zero, data is all there"
    back = from_physical(p, fmt, shape)
    np.testing.assert_array_equal(back, x, strict=True)
