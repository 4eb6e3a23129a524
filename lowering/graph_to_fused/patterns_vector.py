"""Named fusions of vector ops: residual add + normalisation, softmax with its
scale / mask / dropout, and the SwiGLU gate."""

from __future__ import annotations

from xdsl.ir import Operation, SSAValue

from ...dialects import ge
from ...dialects.fused import AddLayerNormOp, AddRmsNormOp, FusedSoftmaxOp, SwigluOp
from .chains import MaskStep, ScaleStep, mask_step, scale_step, transparent_tail
from .graph import both_orders, producer, shape, splat_constant
from .pattern import FusionPattern, Match


class _AddNormPattern(FusionPattern):
    """Shared: `norm(x + residual)`; the sum stays available as the second result."""

    FUSED: type[Operation]

    def match(self, op: Operation) -> Match | None:
        add = producer(op.operands[0], ge.AddOp)
        if add is None or shape(add.result) != shape(op.operands[0]):
            return None
        total = add.result
        parameters = list(op.operands[1:])
        attrs = {"axis": op.attr_value("axis"), "epsilon": op.attr_value("epsilon")}

        def build():
            return [
                self.FUSED.new(
                    add.lhs, add.rhs, *parameters, result_type=[op.results[0].type, total.type], **attrs
                )
            ]

        return Match([add, op], [op.results[0], total], build)


class AddLayerNormPattern(_AddNormPattern):
    """`layer_norm(x + residual)` -> `fused.add_layer_norm` (results: the norm and
    the sum)."""

    name = "add-layer-norm"
    anchors = (ge.LayerNormOp,)
    FUSED = AddLayerNormOp


class AddRmsNormPattern(_AddNormPattern):
    """`rms_norm(x + residual)` -> `fused.add_rms_norm` (results: the norm and the
    sum)."""

    name = "add-rms-norm"
    anchors = (ge.RMSNormOp,)
    FUSED = AddRmsNormOp


class SoftmaxPattern(FusionPattern):
    """[`x * c`] -> [mask] -> `ge.softmax` -> [dropout] with at least one of the
    three -> `fused.softmax`."""

    name = "softmax"
    anchors = (ge.SoftmaxOp,)

    def match(self, op: ge.SoftmaxOp) -> Match | None:
        ops: list[Operation] = [op]
        scores, scale = op.input, 1.0
        mask = _mask_before(scores)
        if mask is not None:
            ops.insert(0, mask[0].op)
            scores = mask[1]
        scaled = _scale_before(scores)
        if scaled is not None:
            ops.insert(0, scaled[0].op)
            scale, scores = scaled[0].scale, scaled[1]
        final, tail, ratio = transparent_tail(op.result)
        ops += tail
        if len(ops) == 1:
            return None
        step = mask[0] if mask else None
        attrs = {
            "axis": op.attr_value("axis"),
            "scale": scale,
            "mask_value": step.mask_value if step else 0.0,
            "dropout": ratio,
        }

        def build():
            return [FusedSoftmaxOp.new(scores, mask=step.mask if step else None, result_type=final.type, **attrs)]

        return Match(ops, [final], build)


def _single_use_producer(value: SSAValue) -> Operation | None:
    return producer(value) if value.has_one_use() else None


def _mask_before(value: SSAValue) -> tuple[MaskStep, SSAValue] | None:
    """The mask step producing `value`, and the scores it masks. For an add, the
    scores are the operand a scale step produced, if one did."""
    op = _single_use_producer(value)
    if op is None:
        return None
    candidates = list(op.operands[1:2] if isinstance(op, ge.WhereOp) else op.operands)
    candidates.sort(key=lambda v: _scale_before(v) is None)
    for scores in candidates:
        step = mask_step(op, scores)
        if step is not None:
            return step, scores
    return None


def _scale_before(value: SSAValue) -> tuple[ScaleStep, SSAValue] | None:
    """The scale step producing `value`, and the value it scales."""
    op = _single_use_producer(value)
    if op is None:
        return None
    for x in op.operands:
        if splat_constant(x) is None and (step := scale_step(op, x)) is not None:
            return step, x
    return None


class SwigluPattern(FusionPattern):
    """`silu(gate) * up` -> `fused.swiglu`."""

    name = "swiglu"
    anchors = (ge.MulOp,)

    def match(self, op: ge.MulOp) -> Match | None:
        for gate_side, up in both_orders(op):
            silu = producer(gate_side, ge.SiluOp)
            if silu is not None and up is not gate_side:
                return Match(
                    [silu, op],
                    [op.result],
                    lambda silu=silu, up=up: [SwigluOp.new(silu.input, up, result_type=op.result.type)],
                )
        return None


class SigmoidGatePattern(FusionPattern):
    """`(x * sigmoid(x)) * up` (SiLU as exporters often spell it) -> `fused.swiglu`."""

    name = "sigmoid-gate"
    anchors = (ge.MulOp,)

    def match(self, op: ge.MulOp) -> Match | None:
        for gate_side, up in both_orders(op):
            silu = producer(gate_side, ge.MulOp)
            if silu is None or up is gate_side:
                continue
            for x, s in both_orders(silu):
                sigmoid = producer(s, ge.SigmoidOp)
                if sigmoid is not None and sigmoid.input is x:
                    return Match(
                        [sigmoid, silu, op],
                        [op.result],
                        lambda x=x, up=up: [SwigluOp.new(x, up, result_type=op.result.type)],
                    )
        return None

