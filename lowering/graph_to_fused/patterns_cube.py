"""Named fusions anchored on a cube op: its epilogue (bias, residual, activation,
or the normalisation after a residual add), the gated feed-forward, and scaled /
masked batched products."""

from __future__ import annotations

from xdsl.ir import Operation

from ...dialects import ge
from ...dialects.fused import (
    Conv2DBiasActOp,
    FusedBatchMatmulOp,
    GatedMatmulOp,
    MatmulAddLayerNormOp,
    MatmulAddRmsNormOp,
    MatmulBiasActOp,
)
from .chains import activation_name, conv_bias, mask_step, matmul_bias, scale_step, walk_epilogue
from .graph import both_orders, producer, shape, sole_user, users
from .pattern import FusionPattern, Match


def _flags(op: Operation) -> dict[str, bool]:
    return {"transpose_a": op.attr_value("transpose_a"), "transpose_b": op.attr_value("transpose_b")}


class MatmulAddNormPattern(FusionPattern):
    """`ge.matmul` [+ bias] + residual -> layer_norm / rms_norm over the last axis
    -> `fused.matmul_add_layer_norm` / `fused.matmul_add_rms_norm` (results: the
    norm and the sum, which stays available to later residuals)."""

    name = "matmul-add-norm"
    anchors = (ge.MatmulOp,)

    def match(self, op: ge.MatmulOp) -> Match | None:
        e = walk_epilogue(op.result, matmul_bias, allow_act=False)
        if e.residual is None:
            return None
        norm = next((u for u in users(e.value) if _is_last_axis_norm(u, e.value)), None)
        if norm is None:
            return None
        parameters = list(norm.operands[1:])
        fused_cls = MatmulAddLayerNormOp if isinstance(norm, ge.LayerNormOp) else MatmulAddRmsNormOp

        def build():
            return [
                fused_cls.new(
                    op.lhs,
                    op.rhs,
                    e.residual,
                    *parameters,
                    bias=e.bias,
                    epsilon=norm.attr_value("epsilon"),
                    result_type=[norm.results[0].type, e.value.type],
                    **_flags(op),
                )
            ]

        return Match([op, *e.ops, norm], [norm.results[0], e.value], build)


def _is_last_axis_norm(op: Operation, value) -> bool:
    if not isinstance(op, ge.LayerNormOp | ge.RMSNormOp) or op.input is not value:
        return False
    rank = len(shape(value))
    return op.attr_value("axis") % rank == rank - 1


class GatedMatmulPattern(FusionPattern):
    """`act(x @ w_gate) * (x @ w_up)` with both products on the same `x`
    -> `fused.gated_matmul` (LLaMA's SwiGLU feed-forward)."""

    name = "gated-matmul"
    anchors = (ge.MulOp,)

    def match(self, op: ge.MulOp) -> Match | None:
        for gate_side, up_side in both_orders(op):
            act_op = producer(gate_side)
            act = activation_name(act_op)
            gate = producer(act_op.operands[0], ge.MatmulOp) if act else None
            up = producer(up_side, ge.MatmulOp)
            if gate is None or up is None or gate is up or gate.lhs is not up.lhs:
                continue
            if _flags(gate) != _flags(up) or not shape(gate.result) == shape(up.result) == shape(op.result):
                continue
            return Match(
                [gate, act_op, up, op],
                [op.result],
                lambda gate=gate, up=up, act=act: [
                    GatedMatmulOp.new(gate.lhs, gate.rhs, up.rhs, act=act, result_type=op.result.type, **_flags(gate))
                ],
            )
        return None


class MatmulBiasActPattern(FusionPattern):
    """`ge.matmul` + bias (N) + residual + activation (relu / gelu / silu), any
    subset -> `fused.matmul_bias_act`."""

    name = "matmul-bias-act"
    anchors = (ge.MatmulOp,)

    def match(self, op: ge.MatmulOp) -> Match | None:
        e = walk_epilogue(op.result, matmul_bias)
        if not e.fuses_something:
            return None

        def build():
            return [
                MatmulBiasActOp.new(
                    op.lhs, op.rhs, bias=e.bias, residual=e.residual, act=e.act, result_type=e.value.type, **_flags(op)
                )
            ]

        return Match([op, *e.ops], [e.value], build)


class Conv2DBiasActPattern(FusionPattern):
    """`ge.conv2d` + per-channel bias + residual + activation, any subset
    -> `fused.conv2d_bias_act` (Conv + BiasAdd + ReLU, ResNet's shortcut add)."""

    name = "conv2d-bias-act"
    anchors = (ge.Conv2DOp,)

    def match(self, op: ge.Conv2DOp) -> Match | None:
        e = walk_epilogue(op.result, conv_bias)
        if not e.fuses_something:
            return None
        window = {n: op.attr_value(n) for n in ("strides", "pads", "dilations", "groups")}

        def build():
            return [
                Conv2DBiasActOp.new(
                    op.input, op.weight, bias=e.bias, residual=e.residual, act=e.act, result_type=e.value.type, **window
                )
            ]

        return Match([op, *e.ops], [e.value], build)


class BatchMatmulScaleMaskPattern(FusionPattern):
    """`ge.batch_matmul` * constant [-> mask], or with a mask only
    -> `fused.batch_matmul` (attention scores that are not followed by a
    softmax-and-product the flash-attention pattern takes)."""

    name = "batch-matmul"
    anchors = (ge.BatchMatmulOp,)

    def match(self, op: ge.BatchMatmulOp) -> Match | None:
        ops, v, scale = [op], op.result, 1.0
        if (s := scale_step(sole_user(v), v)) is not None:
            ops.append(s.op)
            v, scale = s.op.results[0], s.scale
        mask = mask_step(sole_user(v), v)
        if mask is not None:
            ops.append(mask.op)
            v = mask.op.results[0]
        if len(ops) == 1:
            return None

        def build():
            return [
                FusedBatchMatmulOp.new(
                    op.lhs,
                    op.rhs,
                    mask=mask.mask if mask else None,
                    scale=scale,
                    mask_value=mask.mask_value if mask else 0.0,
                    result_type=v.type,
                    **_flags(op),
                )
            ]

        return Match(ops, [v], build)

