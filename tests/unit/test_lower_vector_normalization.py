"""Vector kernels of the row normalisations and per-channel ops: softmax and
log_softmax over any axis, layer_norm / rms_norm over trailing dims from any
axis, batch_norm (NCHW, NC, NC1HWC0), bias_add along any axis, and the fused
ops fused.softmax (scale, boolean / additive masks, dropout), add_layer_norm and
add_rms_norm (two results). Tiny preset, against the reference interpreter;
probabilities are compared with a tight absolute tolerance."""

from __future__ import annotations

import numpy as np
import pytest

from gecomp.core.signature import input_specs, main_function, random_inputs
from gecomp.dialects import npu
from vector_testing import assert_matches, compile_and_compare, one_op, tensor

AXES = [([37, 300], -1), ([1, 1], -1), ([4, 1030], -1), ([3, 5, 7], 1), ([6, 130, 9], 1), ([5, 3], 0), ([2, 3, 4, 5], 1)]


@pytest.mark.parametrize("shape,axis", AXES, ids=str)
@pytest.mark.parametrize("op", ["ge.softmax", "ge.log_softmax"])
def test_softmax(op, shape, axis):
    t = tensor(shape)
    assert_matches(one_op(op, [t], t, f"axis = {axis}"), atol=1e-3)


def test_softmax_fp32():
    t = tensor([33, 200], "f32")
    assert_matches(one_op("ge.softmax", [t], t), atol=1e-5)


NORMS = [([37, 300], -1), ([1, 1], -1), ([4, 1030], -1), ([3, 5, 7], 1), ([6, 33, 9], 1), ([2, 3, 4], 0)]


@pytest.mark.parametrize("shape,axis", NORMS, ids=str)
def test_layer_norm(shape, axis):
    t, p = tensor(shape), tensor(shape[axis % len(shape):])
    assert_matches(one_op("ge.layer_norm", [t, p, p], t, f"axis = {axis}, epsilon = 1.0e-05"))


@pytest.mark.parametrize("shape,axis", NORMS, ids=str)
def test_rms_norm(shape, axis):
    t, p = tensor(shape), tensor(shape[axis % len(shape):])
    assert_matches(one_op("ge.rms_norm", [t, p], t, f"axis = {axis}, epsilon = 1.0e-06"))


def test_layer_norm_large_values_do_not_overflow():
    """Sums of squares of fp16 values of a few hundred overflow fp16: fp32 statistics."""
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((16, 1024)) * 300).astype(np.float16)
    g = np.ones(1024, np.float16)
    t, p = tensor([16, 1024]), tensor([1024])
    assert_matches(one_op("ge.layer_norm", [t, p, p], t), inputs=[x, g, g])
    assert_matches(one_op("ge.rms_norm", [t, p], t), inputs=[x, g])


def _positive_variance(text: str, seed: int = 0):
    inputs = random_inputs(input_specs(main_function(_parse(text))), seed)
    inputs[-1] = np.abs(inputs[-1]) + np.asarray(0.5, inputs[-1].dtype)
    return inputs


def _parse(text: str):
    from gecomp.dialects.context import make_context
    from gecomp.core.parsing import parse_module

    return parse_module(make_context(), text, "test.mlir")


@pytest.mark.parametrize("shape,fmt", [([2, 3, 4, 5], None), ([1, 64, 7, 7], None), ([5, 6], None),
                                       ([3, 40, 1, 1], None), ([2, 40, 7, 7], "NC1HWC0")], ids=str)
def test_batch_norm(shape, fmt):
    t, c = tensor(shape, fmt=fmt), tensor(shape[1:2])
    text = one_op("ge.batch_norm", [t, c, c, c, c], t, "epsilon = 0.001")
    assert_matches(text, inputs=_positive_variance(text))


@pytest.mark.parametrize("shape,axis", [([37, 300], 0), ([37, 300], 1), ([2, 64, 7, 7], 1), ([4, 1, 3], 1)], ids=str)
def test_bias_add(shape, axis):
    assert_matches(one_op("ge.bias_add", [tensor(shape), tensor([shape[axis]])], tensor(shape), f"axis = {axis}"))


def test_bias_add_nc1hwc0():
    t = tensor([2, 40, 7, 7], fmt="NC1HWC0")
    assert_matches(one_op("ge.bias_add", [t, tensor([40])], t, "axis = 1"))


def _fused_softmax(shape, mask=None, mask_type="f16", scale=0.125):
    x = tensor(shape)
    if mask is None:
        return one_op("fused.softmax", [x], x, f"scale = {scale}")
    m = tensor(mask, mask_type)
    return f"""func.func @main(%x: {x}, %m: {m}) -> ({x}) {{
  %r = fused.softmax %x mask %m {{scale = {scale}, mask_value = -10000.0, dropout = 0.1}} : ({x}, {m}) -> {x}
  func.return %r : {x}
}}"""


@pytest.mark.parametrize(
    "shape,mask,mask_type",
    [([37, 300], None, None), ([4, 6, 40], [6, 40], "i1"), ([4, 6, 40], [4, 6, 40], "f16"), ([8, 33], [33], "i1"),
     ([8, 33], [8, 1], "f16")],
    ids=str,
)
def test_fused_softmax(shape, mask, mask_type):
    assert_matches(_fused_softmax(shape, mask, mask_type), atol=1e-3)


def _add_norm(op, shape, residual, params, sum_returned: bool = True):
    x, r, p = tensor(shape), tensor(residual), tensor(shape[-1:])
    names = ", ".join(f"%p{i}" for i in range(params))
    args = ", ".join(f"%p{i}: {p}" for i in range(params))
    types = ", ".join([str(x), str(r)] + [p] * params)
    returned, returned_types = ("%y, %s", f"{x}, {x}") if sum_returned else ("%y", x)
    return f"""func.func @main(%x: {x}, %r: {r}, {args}) -> ({returned_types}) {{
  %y, %s = {op} %x, %r, {names} {{epsilon = 1.0e-05}} : ({types}) -> ({x}, {x})
  func.return {returned} : {returned_types}
}}"""


@pytest.mark.parametrize("shape,residual", [([37, 300], [37, 300]), ([1, 8], [1, 8]), ([5, 64], [64])], ids=str)
@pytest.mark.parametrize("op,params", [("fused.add_layer_norm", 2), ("fused.add_rms_norm", 1)])
def test_add_norm(op, params, shape, residual):
    assert_matches(_add_norm(op, shape, residual, params))


@pytest.mark.parametrize("op,params", [("fused.add_layer_norm", 2), ("fused.add_rms_norm", 1)])
def test_add_norm_without_its_sum(op, params):
    """Nothing reads the sum (a post-norm model): the kernel writes y alone, into
    the output, so the plan allocates no GM buffer and stores a tile once."""
    mismatch, report, module = compile_and_compare(_add_norm(op, [37, 300], [37, 300], params, sum_returned=False))
    assert mismatch is None
    assert not any(isinstance(o, npu.GmBufferOp) for o in module.walk())
    kernel = next(o for o in module.walk() if isinstance(o, npu.KernelOp))
    assert len(kernel.body.block.args) == 2 + params + 1
