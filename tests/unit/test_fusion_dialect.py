"""The `fused` dialect: each named op's reference semantics against an
independent numpy formula (with and without its optional operands), the
optional-operand convention (builders, attributes, text round trip),
`fused.group` evaluation, and the fusion kinds of `ge` ops."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, ModuleOp
from xdsl.ir import Block, Region

from gecomp.dialects.context import make_context
from gecomp.core.numeric import gelu, sigmoid
from gecomp.core.parsing import parse_module, verify_module
from gecomp.dialects import ge
from gecomp.dialects.fused import (
    AddLayerNormOp,
    AddRmsNormOp,
    Conv2DBiasActOp,
    FlashAttentionOp,
    FusedBatchMatmulOp,
    FusedSoftmaxOp,
    GatedMatmulOp,
    GroupOp,
    MatmulAddLayerNormOp,
    MatmulAddRmsNormOp,
    MatmulBiasActOp,
    PatternKind,
    SwigluOp,
    YieldOp,
    pattern_kind,
)
from gecomp.dialects.fused.kinds import is_row_reduction
from gecomp.simulator.reference import run_reference

from conftest import assert_matches, tensor_type_of


def run_fused(op_cls, required, optional=None, **attrs):
    """Builds `op_cls` on block arguments shaped like the arrays, evaluates it
    directly and, after printing and re-parsing, with the reference interpreter;
    both must agree exactly. Returns the results."""
    optional = optional or {}
    arrays = [*required, *optional.values()]
    block = Block(arg_types=[tensor_type_of(a) for a in arrays])
    args = list(block.args)
    named = dict(zip(optional, args[len(required) :]))
    op = op_cls.new(*args[: len(required)], **named, **attrs)
    op.verify()
    present = tuple(n for n in op_cls.operand_names() if n in op_cls.required_operand_names() or n in named)
    assert op.attr_values().operands == present
    order = [*op_cls.required_operand_names(), *named]
    by_position = dict(zip(order, arrays))
    inputs = [by_position[n] for n in present]
    direct = op.evaluate(inputs)
    block.add_ops([op, func.ReturnOp(*op.results)])
    main = func.FuncOp("main", FunctionType.from_lists([a.type for a in args], list(op.result_types)), Region(block))
    module = parse_module(make_context(), str(ModuleOp([main])), "<fused op>")
    verify_module(module)
    again = run_reference(module, [by_position[n] for n in order])
    for a, b in zip(direct, again, strict=True):
        np.testing.assert_array_equal(a, b)
    return direct


def _f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _layer_norm(x, g, b, eps):
    mean = x.mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + eps) * g + b


def _rms_norm(x, g, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * g


ACTS = {"none": lambda x: x, "relu": lambda x: np.maximum(x, 0), "gelu": gelu, "silu": lambda x: x * sigmoid(x)}


@pytest.mark.parametrize("act", sorted(ACTS))
@pytest.mark.parametrize("parts", [(), ("bias",), ("residual",), ("bias", "residual")])
def test_matmul_bias_act(rng, act, parts):
    x, w, b, r = _f32(rng, 4, 6), _f32(rng, 6, 5), _f32(rng, 5), _f32(rng, 4, 5)
    optional = {n: v for n, v in (("bias", b), ("residual", r)) if n in parts}
    (y,) = run_fused(MatmulBiasActOp, [x, w], optional, act=act)
    expected = x @ w + (b if "bias" in parts else 0) + (r if "residual" in parts else 0)
    assert_matches(y, ACTS[act](expected))


def test_matmul_bias_of_shape_1xn_and_transposes(rng):
    x, w, b = _f32(rng, 6, 4), _f32(rng, 5, 6), _f32(rng, 1, 5)
    (y,) = run_fused(MatmulBiasActOp, [x, w], {"bias": b}, transpose_a=True, transpose_b=True)
    assert_matches(y, x.T @ w.T + b)


@pytest.mark.parametrize("bias_shape", [(3,), (3, 1, 1), (1, 3, 1, 1)])
def test_conv2d_bias_act_with_residual(rng, bias_shape):
    x, w, b, r = _f32(rng, 1, 2, 5, 5), _f32(rng, 3, 2, 3, 3), _f32(rng, *bias_shape), _f32(rng, 1, 3, 5, 5)
    (y,) = run_fused(Conv2DBiasActOp, [x, w], {"bias": b, "residual": r}, pads=(1, 1, 1, 1), act="relu")
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    conv = np.zeros((1, 3, 5, 5), np.float32)
    for i in range(5):
        for j in range(5):
            conv[0, :, i, j] = np.einsum("chw,ochw->o", padded[0, :, i : i + 3, j : j + 3], w)
    assert_matches(y, np.maximum(conv + b.reshape(-1, 1, 1) + r, 0))


def test_fused_batch_matmul_masks(rng):
    a, b = _f32(rng, 2, 3, 4), _f32(rng, 2, 4, 3)
    keep = rng.random((3, 3)) < 0.5
    (y,) = run_fused(FusedBatchMatmulOp, [a, b], {"mask": keep}, scale=0.5, mask_value=-7.0)
    assert_matches(y, np.where(keep, (a @ b) * 0.5, -7.0))
    additive = _f32(rng, 3, 3)
    (y,) = run_fused(FusedBatchMatmulOp, [a, b], {"mask": additive})
    assert_matches(y, a @ b + additive)


@pytest.mark.parametrize("act", ["silu", "gelu", "relu"])
def test_gated_matmul(rng, act):
    x, wg, wu = _f32(rng, 3, 4), _f32(rng, 4, 6), _f32(rng, 4, 6)
    (y,) = run_fused(GatedMatmulOp, [x, wg, wu], act=act)
    assert_matches(y, ACTS[act](x @ wg) * (x @ wu))


def test_matmul_add_norms_return_the_sum(rng):
    x, w, r, g, beta, b = _f32(rng, 3, 4), _f32(rng, 4, 8), _f32(rng, 3, 8), _f32(rng, 8), _f32(rng, 8), _f32(rng, 8)
    y, total = run_fused(MatmulAddLayerNormOp, [x, w, r, g, beta], {"bias": b}, epsilon=1e-5)
    assert_matches(total, x @ w + b + r)
    assert_matches(y, _layer_norm(x @ w + b + r, g, beta, 1e-5))
    y, total = run_fused(MatmulAddRmsNormOp, [x, w, r, g], epsilon=1e-6)
    assert_matches(y, _rms_norm(x @ w + r, g, 1e-6))


def test_add_norms(rng):
    x, r, g, b = _f32(rng, 2, 3, 8), _f32(rng, 2, 3, 8), _f32(rng, 3, 8), _f32(rng, 3, 8)
    y, total = run_fused(AddLayerNormOp, [x, r, g, b], axis=1, epsilon=1e-5)
    s = (x + r).reshape(2, 24)
    assert_matches(total, x + r)
    assert_matches(y, _layer_norm(s, g.reshape(24), b.reshape(24), 1e-5).reshape(2, 3, 8))
    y, _ = run_fused(AddRmsNormOp, [x[0], r[0], g[0]])
    assert_matches(y, _rms_norm(x[0] + r[0], g[0], 1e-5))


def test_softmax_scale_mask_dropout(rng):
    x, m = _f32(rng, 3, 5), _f32(rng, 5)
    (y,) = run_fused(FusedSoftmaxOp, [x], {"mask": m}, scale=2.0, dropout=0.3)
    assert_matches(y, _softmax(2.0 * x + m))
    (y,) = run_fused(FusedSoftmaxOp, [x], axis=0)
    assert_matches(y, _softmax(x, axis=0))


def test_swiglu(rng):
    g, u = _f32(rng, 4, 6), _f32(rng, 6)
    (y,) = run_fused(SwigluOp, [g, u])
    assert_matches(y, g * sigmoid(g) * u)


def _attention(q, k, v, scale, mask=None, fill=0.0):
    s = q @ np.swapaxes(k, -1, -2) * scale
    if mask is not None:
        s = np.where(mask, s, fill) if mask.dtype == np.bool_ else s + mask
    return _softmax(s) @ v


def test_flash_attention_bnsd(rng):
    q, k, v = _f32(rng, 2, 4, 8), _f32(rng, 2, 6, 8), _f32(rng, 2, 6, 3)
    keep = np.tril(np.ones((4, 6), bool))
    (y,) = run_fused(FlashAttentionOp, [q, k, v], {"mask": keep}, scale=0.3, mask_value=-1e4)
    assert_matches(y, _attention(q, k, v, 0.3, keep, -1e4))


def test_flash_attention_bsh_splits_heads(rng):
    heads, d = 3, 4
    q, k, v = _f32(rng, 2, 5, heads * d), _f32(rng, 2, 6, heads * d), _f32(rng, 2, 6, heads * 2)
    mask = _f32(rng, heads, 5, 6)
    (y,) = run_fused(FlashAttentionOp, [q, k, v], {"mask": mask}, layout="BSH", num_heads=heads)

    def split(x):
        return x.reshape(*x.shape[:-1], heads, -1).swapaxes(-3, -2)

    out = _attention(split(q), split(k), split(v), 1.0, mask)
    assert_matches(y, out.swapaxes(-3, -2).reshape(2, 5, heads * 2))


def test_f16_results_are_rounded_once(rng):
    x, w = _f32(rng, 4, 8).astype(np.float16), _f32(rng, 8, 4).astype(np.float16)
    (y,) = run_fused(MatmulBiasActOp, [x, w], act="gelu")
    assert y.dtype == np.float16
    assert_matches(y, gelu(x.astype(np.float32) @ w.astype(np.float32)))


def test_builder_keeps_declared_encodings_and_rejects_bad_arity(rng):
    block = Block(arg_types=[tensor_type_of(_f32(rng, 2, 3)), tensor_type_of(_f32(rng, 3, 4))])
    with pytest.raises(TypeError, match="takes 2 required operands"):
        MatmulBiasActOp.new(block.args[0])
    op = MatmulBiasActOp.new(*block.args, bias=None, act="relu")
    assert op.bias is None and op.residual is None and op.attr_value("act") == "relu"


def test_group_evaluates_its_body(rng):
    x, b = _f32(rng, 3, 4), _f32(rng, 4)
    body = Block(arg_types=[tensor_type_of(x), tensor_type_of(b)])
    two = ge.ConstOp.from_array(np.asarray(2.0, np.float32))
    add = ge.AddOp.new(*body.args)
    mul = ge.MulOp.new(add, two)
    body.add_ops([two, add, mul, YieldOp(add, mul)])
    outer = Block(arg_types=[tensor_type_of(x), tensor_type_of(b)])
    group = GroupOp(list(outer.args), [add.result.type, mul.result.type], Region(body))
    group.verify()
    total, doubled = group.evaluate([x, b])
    np.testing.assert_array_equal(total, x + b)
    np.testing.assert_array_equal(doubled, (x + b) * 2)


def test_pattern_kinds():
    def types(*shapes):
        return [tensor_type_of(np.zeros(s, np.float32)) for s in shapes]

    block = Block(arg_types=types((4, 8), (8,), (4, 8), (8, 4)))
    a, bias, c, w = block.args
    assert pattern_kind(ge.AddOp.new(a, c)) == PatternKind.ELEMENTWISE
    assert pattern_kind(ge.AddOp.new(a, bias)) == PatternKind.BROADCAST
    assert pattern_kind(ge.TransposeOp.new(a, perm=(1, 0))) == PatternKind.INJECTIVE
    assert pattern_kind(ge.MatmulOp.new(a, w)) == PatternKind.CUBE
    assert pattern_kind(SwigluOp.new(a, c)) == PatternKind.OPAQUE
    softmax = ge.SoftmaxOp.new(a)
    column_sum = ge.ReduceSumOp.new(a, axes=(0,))
    assert pattern_kind(softmax) == pattern_kind(column_sum) == PatternKind.REDUCE
    assert is_row_reduction(softmax) and not is_row_reduction(column_sum)
