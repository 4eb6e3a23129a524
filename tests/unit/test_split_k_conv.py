"""Split-K 1x1 convolutions (`fused-split-k-conv`): the input channels cut into
slices, `fused.conv2d_partials` (one cube kernel, an fp32 image per slice) and
`fused.conv_partials_bias_act` (a row kernel adding the images, the bias and the
residual and applying the activation), on random shapes compiled and simulated
against the reference interpreter; the chooser's estimates and verdicts."""

from __future__ import annotations

import random
import re

import numpy as np
import pytest
from cube_lowering_testing import check_lowering, input_specs, main_function, parse, random_inputs, run_reference
from test_lower_cube_conv import conv_module

from gecomp.dialects import fused
from gecomp.dialects.context import make_context
from gecomp.lowering.fused_to_npu.split_k import pin_form
from gecomp.lowering.fused_to_npu.split_k_conv import SplitKConvPass


def random_1x1(seed: int, splits: int) -> dict:
    """An f32 1x1 convolution of one image whose channels cut into `splits` slices of
    whole 16-channel blocks, NC1HWC0 in and out, with a random epilogue (f32: the
    fp32 partials share the result's 8-channel blocks)."""
    r = random.Random(seed)
    return dict(
        n=1, c=16 * splits * r.choice([1, 2, 3]), o=r.choice([8, 16, 24, 40]), h=r.randint(1, 9), w=r.randint(1, 11),
        kh=1, kw=1, pads=(0, 0, 0, 0), x_format="NC1HWC0", w_format="FRACTAL_Z", y_format="NC1HWC0",
        bias=r.random() < 0.7, act=r.choice([None, "relu", "silu"]), dtype="f32",
    )


def _pinned(text: str, form: str):
    module = parse(text)
    conv = next(op for op in module.walk() if isinstance(op, fused.Conv2DBiasActOp) or op.name == "ge.conv2d")
    pin_form(conv, form)
    return module


def _notes(capsys) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line.startswith("[fused-split-k-conv]")]


@pytest.mark.parametrize("seed", range(8))
def test_split_k_1x1_random(seed, capsys):
    """Each split form, pinned with npu.form, computes what the convolution does."""
    splits = (2, 4, 8)[seed % 3]
    module = _pinned(conv_module(**random_1x1(seed, splits)), f"split-K {splits}")
    check_lowering(module, "tiny", pipeline="ge-lower-to-npu{hw=tiny debug=true}")
    assert any(f"split-K {splits} (npu.form)" in line for line in _notes(capsys))


def test_split_k_1x1_with_a_residual_in_the_result_layout():
    """A residual in the result's NC1HWC0 layout is added by the partials' kernel."""
    text = conv_module(n=1, c=64, o=24, h=5, w=7, kh=1, kw=1, pads=(0, 0, 0, 0), x_format="NC1HWC0",
                       w_format="FRACTAL_Z", y_format="NC1HWC0", bias=True, act="relu", dtype="f32")
    # the residual: a constant NC1HWC0 image beside the bias
    res = "%res = ge.const #ge.random<normal, seed = 7, mean = 0.0, std = 1.0> : tensor<1x24x5x7xf32, #ge.format<NC1HWC0>>"
    text = text.replace("%y = fused.conv2d_bias_act %x, %w bias %bias", res + "\n    %y = fused.conv2d_bias_act %x, %w bias %bias residual %res")
    text = re.sub(r"(\(tensor<1x64x5x7xf32, #ge.format<NC1HWC0>>, tensor<24x64x1x1xf32, #ge.format<FRACTAL_Z>>, tensor<24xf32>)\)",
                  r"\1, tensor<1x24x5x7xf32, #ge.format<NC1HWC0>>)", text)
    assert "residual %res" in text
    module = _pinned(text, "split-K 4")
    check_lowering(module, "tiny")
    assert not any(isinstance(op, fused.Conv2DBiasActOp) for op in module.walk())


def test_reference_of_the_split_ops_is_the_convolution():
    """fused.conv2d_partials + fused.conv_partials_bias_act on the reference interpreter
    equal the unsplit op (the rewrite keeps the numbers at the fused level)."""
    text = conv_module(**random_1x1(3, 4))
    whole = parse(text)
    split = _pinned(text, "split-K 4")
    SplitKConvPass(hw="tiny").apply(make_context(), split)
    assert any(isinstance(op, fused.Conv2DPartialsOp) for op in split.walk())
    inputs = random_inputs(input_specs(main_function(whole)), 0)
    want, got = run_reference(whole, inputs), run_reference(split, inputs)
    for a, b in zip(want, got, strict=True):
        np.testing.assert_allclose(np.asarray(a, np.float32), np.asarray(b, np.float32), rtol=2e-2, atol=2e-2)


def _chosen(text: str, capsys) -> tuple[dict[str, int], str]:
    module = parse(text)
    SplitKConvPass(hw="ascend910", debug=True).apply(make_context(), module)
    line = _notes(capsys)[0]
    forms = {name: int(c) for name, c in re.findall(r"(one kernel|split-K \d) ~(\d+)", line)}
    return forms, line.rsplit(": ", 1)[-1]


def test_a_deep_1x1_is_split_and_a_shallow_one_is_not(capsys):
    """ResNet-50's last-stage reduction (2048 -> 512 channels, 7x7, f32) is split by
    estimate (every core would read all 2048 channels for a few outputs), a
    64-channel one is kept whole; debug=true gives every form's estimate."""
    deep = conv_module(n=1, c=2048, o=512, h=7, w=7, kh=1, kw=1, pads=(0, 0, 0, 0), x_format="NC1HWC0",
                       w_format="FRACTAL_Z", y_format="NC1HWC0", bias=True, act="relu", dtype="f32")
    forms, verdict = _chosen(deep, capsys)
    assert verdict.startswith("split-K") and forms[verdict] < forms["one kernel"], forms
    shallow = conv_module(n=1, c=64, o=256, h=56, w=56, kh=1, kw=1, pads=(0, 0, 0, 0), x_format="NC1HWC0",
                          w_format="FRACTAL_Z", y_format="NC1HWC0", bias=True, act="relu", dtype="f32")
    forms, verdict = _chosen(shallow, capsys)
    assert verdict == "one kernel" and all(v > forms["one kernel"] for f, v in forms.items() if f != verdict), forms


def test_f16_is_kept_whole(capsys):
    """An f16 result's NC1HWC0 blocks hold 16 channels, fp32 partials' 8: the partials'
    kernel refuses it, so the chooser offers no split form."""
    text = conv_module(**{**random_1x1(1, 2), "dtype": "f16"})
    forms, verdict = _chosen(text, capsys)
    assert verdict == "one kernel" and list(forms) == ["one kernel"], forms
