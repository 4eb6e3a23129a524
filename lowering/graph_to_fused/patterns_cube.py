"""Named fusions anchored on a cube op: its epilogue (bias, residual, activation,
or the normalisation after a residual add), the gated feed-forward, and scaled /
masked batched products."""

from __future__ import annotations

import math

from xdsl.dialects.builtin import TensorType
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
from ...dialects.fused.base import GATED_ACTIVATION_NAMES
from .chains import (
    conv_bias,
    mask_step,
    match_activation,
    matmul_bias,
    scale_step,
    walk_epilogue,
)
from .graph import both_orders, is_format_change, producer, shape, sole_user, through_format_changes, users
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


def _viewed_product(value) -> tuple[list[Operation], ge.MatmulOp] | None:
    """(ops, matmul) if `value` is a 2-D `ge.matmul`'s result through format changes
    and an ND reshape adding leading unit dims (the exporter's (1, M, N) view of
    the GEMM); ops from the matmul on (whether their values are used elsewhere,
    the fusion framework checks)."""
    ops: list[Operation] = []
    while (op := producer(value)) is not None and not isinstance(op, ge.MatmulOp):
        if not (isinstance(op, ge.ReshapeOp) and _leading_units(op) or is_format_change(op)):
            return None
        ops.append(op)
        value = op.operands[0]
    return ([op, *reversed(ops)], op) if op is not None else None


def _leading_units(view: ge.ReshapeOp) -> bool:
    before, after = shape(view.input), shape(view.result)
    extra = len(after) - len(before)
    return extra >= 0 and after[extra:] == before and set(after[:extra]) <= {1}


class GatedMatmulPattern(FusionPattern):
    """`act(x @ w_gate) * (x @ w_up)` with both products on the same `x`
    -> `fused.gated_matmul` (LLaMA's SwiGLU feed-forward). The activation may be
    written out (SiLU as `g * sigmoid(g)`, `match_activation`), and both
    products seen through the exporter's (1, M, N) view: the fused op computes
    the (M, N) GEMM and the view follows it."""

    name = "gated-matmul"
    anchors = (ge.MulOp,)

    def match(self, op: ge.MulOp) -> Match | None:
        for gate_side, up_side in both_orders(op):
            act, g = self._activation(gate_side)
            gate = _viewed_product(g) if act is not None else None
            up = _viewed_product(up_side)
            if gate is None or up is None:
                continue
            (gate_ops, gate_mm), (up_ops, up_mm) = gate, up
            if gate_mm is up_mm or through_format_changes(gate_mm.lhs) is not through_format_changes(up_mm.lhs):
                continue
            if _flags(gate_mm) != _flags(up_mm) or not shape(gate_mm.result) == shape(up_mm.result):
                continue
            if shape(op.result)[-2:] != shape(gate_mm.result) or math.prod(shape(op.result)) != math.prod(shape(gate_mm.result)):
                continue
            return self._match(op, act, gate_ops, up_ops, gate_mm, up_mm)
        return None

    @staticmethod
    def _activation(value):
        """(the activation, in any of its forms (`match_activation`), whose result
        is `value`, and its input), or (None, None)."""
        op = producer(value)
        for candidate in op.operands if op is not None else ():
            found = match_activation(candidate)
            if found is not None and found.value is value and found.name in GATED_ACTIVATION_NAMES:
                return found, candidate
        return None, None

    @staticmethod
    def _match(op, act, gate_ops, up_ops, gate_mm, up_mm) -> Match:
        """The match, the view back to `op`'s shape after the fused op; or, when
        `op`'s one user is the view back to the GEMM's shape (the next GEMM's
        lhs), that view replaced by the fused op itself."""
        plain = TensorType(op.result.type.element_type, shape(gate_mm.result))
        ops, value = [*gate_ops, *act.ops, *up_ops, op], op.result
        back = sole_user(value)
        if isinstance(back, ge.ReshapeOp) and shape(back.result) == shape(gate_mm.result):
            ops, value = [*ops, back], back.result

        direct = shape(value) == shape(gate_mm.result)

        def build():
            result_type = value.type if direct else plain
            gated = GatedMatmulOp.new(gate_mm.lhs, gate_mm.rhs, up_mm.rhs, act=act.name, result_type=result_type, **_flags(gate_mm))
            return [gated] if direct else [gated, ge.ReshapeOp.new(gated.result, result_type=value.type)]

        return Match(ops, [value], build, fused_at=0)


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
    -> `fused.conv2d_bias_act` (Conv + BiasAdd + ReLU / ReLU6 / SiLU / HardSwish /
    sigmoid, ResNet's shortcut add)."""

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

