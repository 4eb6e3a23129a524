"""The squeeze-and-excitation pieces of MobileNet / EfficientNet blocks on the NPU:
the per-channel scale `x * s` of an NCHW tensor by an (N, C, 1, 1) gate,
compiled with `ge-compile` and simulated, against the reference interpreter on
random shapes, and fast (a tile holds many channels, not one channel's rows)."""

from __future__ import annotations

import numpy as np
import pytest

from vector_testing import assert_matches, one_op, tensor

RNG = np.random.default_rng(29)
SCALE_SHAPES = [
    (int(n), int(c), int(h), int(w))
    for n, c, h, w in zip(RNG.integers(1, 3, 4), RNG.integers(480, 1200, 4), RNG.integers(1, 8, 4), RNG.integers(2, 8, 4))
]


@pytest.mark.parametrize("shape", SCALE_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_channel_scale(shape, dtype):
    """(N, C, 1, 1) * (N, C, H, W): the trailing H x W are one run per channel, so
    the gate is one value per row of a plain view and a tile takes many channels.
    Seen as (N*C*H) rows of W with the gate repeated H times, a tile was capped at
    H rows (one channel): C/32 tiles per core, each paying a GM round trip."""
    n, c, h, w = shape
    x, s = tensor(shape, dtype), tensor([n, c, 1, 1], dtype)
    text = one_op("ge.mul", [s, x], x)
    assert_matches(text, pipeline="ge-compile{hw=tiny}", hw="tiny")
    report = assert_matches(text, pipeline="ge-compile", hw="ascend910")
    (kernel,) = report.kernels
    assert kernel.cycles < 1500, f"{shape} {dtype}: {kernel.cycles} cycles"
