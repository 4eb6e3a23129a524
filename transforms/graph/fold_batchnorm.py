"""`ge-fold-batchnorm`: fold an inference batch_norm into the conv2d or matmul
that feeds it (GE's ConvBatchnormFusionPass).

At inference a batch_norm is a per-channel affine map,
`y = x * s + (beta - mean * s)` with `s = gamma / sqrt(var + eps)`. When it
follows a conv2d or matmul with a constant weight, scaling the weight's
output channels by `s` and adding `beta - mean * s` as a bias gives the same
result without the normalisation pass over the activation:

    batch_norm(conv2d(x, W), gamma, beta, mean, var)
      -> bias_add(conv2d(x, W * s[:, None, None, None]), beta - mean * s, axis = 1)
    batch_norm(matmul(x, W), ...) -> bias_add(matmul(x, W * s[None, :]), ..., axis = -1)

The new weight and bias are computed in float64 and rounded once to the
weight's element type, so the folded graph matches the original within the
element type's tolerance. Nothing is folded when the statistics or the weight
are not constants, when the conv2d / matmul result has other users, or when the
new weight would exceed `max-bytes` and be a new dense constant (the weight a
`#ge.random` seed or read elsewhere too; a dense weight read by this product
only is replaced by the folded one, whatever its size).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, ModuleOp, TensorType
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from ...core import dtypes
from ...core.passes import record_statistic
from ...dialects.ge import BatchNormOp, BiasAddOp, ConstOp, Conv2DOp, MatmulOp
from ...dialects.ge.canonicalization import constant_from_array, defining_op
from ...dialects.ge.formats import Format, format_of
from .constant_fold import DEFAULT_MAX_BYTES


@dataclass
class _FoldIntoProducer(RewritePattern):
    max_bytes: int
    folded: int = 0
    too_large: set[int] = field(default_factory=set)

    @op_type_rewrite_pattern
    def match_and_rewrite(self, bn: BatchNormOp, rewriter: PatternRewriter):
        producer = defining_op(bn.input, (Conv2DOp, MatmulOp))
        if producer is None or not bn.input.has_one_use():
            return
        weight = defining_op(producer.operands[1], ConstOp)
        statistics = [defining_op(v, ConstOp) for v in bn.operands[1:]]
        if weight is None or any(s is None for s in statistics):
            return
        if any(format_of(v.type) != Format.ND for v in (*producer.operands, bn.result)):
            return
        if dtypes.tensor_bytes(weight.result.type) > self.max_bytes and not _replaced(weight):
            self.too_large.add(id(bn))
            return
        gamma, beta, mean, var = (s.as_array().astype(np.float64) for s in statistics)
        scale = gamma / np.sqrt(var + bn.attr_value("epsilon"))
        channel_axis = _output_channel_axis(producer)
        shape = [1] * producer.operands[1].type.get_num_dims()
        shape[channel_axis] = -1
        new_weight = constant_from_array(
            weight.as_array().astype(np.float64) * scale.reshape(shape), weight.result.type
        )
        bias_type = TensorType(bn.result.type.element_type, [scale.size])
        bias = constant_from_array(beta - mean * scale, bias_type)
        new_producer = type(producer).new(
            producer.operands[0], new_weight.result, result_type=producer.results[0].type,
            **vars(producer.attr_values()),
        )
        axis = 1 if isinstance(producer, Conv2DOp) else -1
        bias_add = BiasAddOp.new(new_producer.results[0], bias.result, axis=axis, result_type=bn.result.type)
        for new in (new_producer, bias_add):
            new.location = bn.location
        new_weight.result.name_hint = weight.result.name_hint
        if bn.result.name_hint:
            bias.result.name_hint = f"{bn.result.name_hint}_bias"
        new_producer.results[0].name_hint = producer.results[0].name_hint
        rewriter.replace(bn, [new_weight, new_producer, bias, bias_add])
        rewriter.erase(producer)
        for const in {id(c): c for c in (weight, *statistics)}.values():
            if not const.result.uses:
                rewriter.erase(const)
        self.folded += 1


def _replaced(weight: ConstOp) -> bool:
    """The folded weight takes the place of `weight` (dense, read by this product
    only): no bytes are added, whatever its size (a torch.compile capture's or
    an unfolded export's ResNet convolutions, up to 9 MiB each)."""
    return weight.result.has_one_use() and isinstance(weight.value, DenseIntOrFPElementsAttr)


def _output_channel_axis(producer: Conv2DOp | MatmulOp) -> int:
    """The weight dim that indexes the result's channels: O of OIHW, N of (K, N)."""
    if isinstance(producer, Conv2DOp):
        return 0
    return 0 if producer.attr_value("transpose_b") else 1


@dataclass(frozen=True)
class FoldBatchNormPass(ModulePass):
    """Fold inference batch_norm into a preceding conv2d / matmul with constant weights."""

    name = "ge-fold-batchnorm"
    max_bytes: int = DEFAULT_MAX_BYTES

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        pattern = _FoldIntoProducer(self.max_bytes)
        walker = PatternRewriteWalker(GreedyRewritePatternApplier([pattern], dce_enabled=False))
        walker.rewrite_module(op)
        record_statistic(self.name, "batch norms folded", pattern.folded)
        record_statistic(self.name, "left unfolded (weight over max-bytes)", len(pattern.too_large))
