"""The subsampled form of a strided 1x1 convolution (`subsample_conv.py`, a form of
`fused-split-k-conv`): `ge.slice` of every stride-th pixel, then the stride-1
1x1 convolution; on random shapes compiled and simulated against the reference
interpreter, at the fused level equal to the convolution, and chosen by
estimate."""

from __future__ import annotations


import numpy as np
import pytest
from cube_lowering_testing import (
    check_lowering, compile_module, input_specs, main_function, parse, random_inputs, run_reference,
)
from test_conv_algorithms import random_strided_1x1
from test_lower_cube_conv import conv_module

from gecomp.core.diagnostics import CompileError
from gecomp.dialects import fused, ge
from gecomp.dialects.context import make_context
from gecomp.lowering.fused_to_npu.split_k import pin_form
from gecomp.lowering.fused_to_npu.split_k_conv import SplitKConvPass


def _conv(module):
    return next(op for op in module.walk() if isinstance(op, fused.Conv2DBiasActOp | ge.Conv2DOp))


def _pinned(text: str, form: str):
    module = parse(text)
    pin_form(_conv(module), form)
    return module


def _verdicts(capsys) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line.startswith("[fused-split-k-conv]")]


@pytest.mark.parametrize("seed", range(8))
def test_subsample_random(seed, capsys):
    """Pinned, the subsampled form computes what the convolution does (random strides,
    sizes, groups, bias / residual / activation, f16 and f32); the convolution left
    has stride 1 and reads the slice."""
    module = _pinned(conv_module(**random_strided_1x1(seed)), "subsample")
    SplitKConvPass(hw="tiny", debug=True).apply(make_context(), module.clone())
    assert any("subsample (npu.form)" in line for line in _verdicts(capsys))
    check_lowering(module, "tiny", pipeline="ge-lower-to-npu{hw=tiny}")


def test_subsample_nchw_input(capsys):
    """An NCHW input (a slice of its planes) with FRACTAL_Z weights."""
    text = conv_module(n=2, c=32, o=24, h=9, w=7, kh=1, kw=1, strides=(2, 3), pads=(0, 0, 0, 0),
                       w_format="FRACTAL_Z", bias=True, act="relu", dtype="f32")
    check_lowering(_pinned(text, "subsample"), "tiny", pipeline="ge-lower-to-npu{hw=tiny}")


def test_the_rewrite_is_a_slice_and_a_stride_1_convolution():
    """At the fused level the rewritten module computes the same numbers, and its
    convolution is a stride-1 1x1 of the slice (every stride-th pixel, the input's format)."""
    text = conv_module(**{**random_strided_1x1(3), "residual": True, "bias": True})
    whole, split = parse(text), _pinned(text, "subsample")
    SplitKConvPass(hw="tiny").apply(make_context(), split)
    conv = _conv(split)
    pick = conv.input.owner
    assert isinstance(pick, ge.SliceOp) and pick.input.type == _conv(whole).input.type
    a = conv.attr_values()
    assert tuple(a.strides) == (1, 1) and list(pick.attr_values().steps[2:]) == list(_conv(whole).attr_values().strides)
    assert pick.result.type.encoding == _conv(whole).input.type.encoding
    inputs = random_inputs(input_specs(main_function(whole)), 0)
    for want, got in zip(run_reference(whole, inputs), run_reference(split, inputs), strict=True):
        np.testing.assert_array_equal(np.asarray(want), np.asarray(got))


def _estimates(line: str) -> dict[str, int]:
    listed = line.split("): ", 1)[1].rsplit(" cycles: ", 1)[0]
    return {form: int(cycles) for form, cycles in (part.rsplit(" ~", 1) for part in listed.split(", "))}


@pytest.mark.parametrize(
    ("c", "h", "o", "chosen"),
    [(1024, 14, 2048, "subsample"), (256, 56, 512, "one kernel")],
    ids=["few-pixels-many-channels", "many-pixels"],
)
def test_the_form_is_chosen_by_estimate(c, h, o, chosen, capsys):
    """ResNet-50's downsamples (f32, NC1HWC0, ascend910): at 14x14 -> 7x7 with 1024 ->
    2048 channels every core's item needs every pixel, and subsampling first is
    estimated faster (simulated 16,990 -> 12,048 cycles); at 56x56 -> 28x28 the
    slice moves 3.2 MB for a product that reads few pixels per core, and the
    convolution stays one kernel. Either way the verdict is the least estimate."""
    text = conv_module(n=1, c=c, o=o, h=h, w=h, kh=1, kw=1, strides=(2, 2), pads=(0, 0, 0, 0),
                       x_format="NC1HWC0", w_format="FRACTAL_Z", y_format="NC1HWC0", bias=True, act="relu",
                       dtype="f32")
    module = parse(text)
    SplitKConvPass(hw="ascend910", debug=True).apply(make_context(), module)
    line = next(x for x in _verdicts(capsys) if "strides" not in x)
    found = _estimates(line)
    assert "subsample" in found and line.endswith(f": {chosen}"), line
    assert found[chosen] == min(found.values()), line
    assert any(isinstance(op, ge.SliceOp) for op in module.walk()) == (chosen == "subsample")


@pytest.mark.parametrize(
    "params",
    [dict(kh=1, kw=1, pads=(1, 0, 0, 0)), dict(kh=3, kw=3, pads=(1, 1, 1, 1)),
     dict(kh=1, kw=1, strides=(1, 1), pads=(0, 0, 0, 0))],
    ids=["padded", "3x3", "stride-1"],
)
def test_subsample_is_no_form_of_what_it_does_not_read(params):
    """A padded or windowed strided conv, or a stride-1 one, has no subsampled form:
    pinning it is a located error naming the forms it has."""
    text = conv_module(**{"c": 16, "o": 16, "h": 8, "w": 8, "strides": (2, 2), **params}, x_format="NC1HWC0",
                       w_format="FRACTAL_Z", y_format="NC1HWC0")
    with pytest.raises(CompileError, match=r"'npu.form' must be one of 'one kernel'"):
        compile_module(_pinned(text, "subsample"), "ge-lower-to-npu{hw=tiny}")
