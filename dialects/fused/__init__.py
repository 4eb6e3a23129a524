"""The `fused` dialect: named fused ops that have a dedicated kernel, and
`fused.group`, a region of `ge` ops that runs as one kernel (what automatic
fusion makes).

Named fused ops follow the `ge` op contract (`dialects/ge/base.py`): one textual
form, typed attributes, an `infer` shape rule that is also the verifier, and
`compute` reference semantics composed from the `ge` ops they replace. Optional
operands are written `keyword %value` after the required ones (see `base.py`).
"""

from xdsl.ir import Dialect

from .attention import ATTENTION_OPS, FlashAttentionOp
from .base import ACTIVATION_NAMES, FusedOp
from .cube import (
    CUBE_OPS,
    Conv2DBiasActMeanOp,
    Conv2DBiasActOp,
    Conv2DPartialsOp,
    FusedBatchMatmulOp,
    GatedMatmulOp,
    MatmulAddLayerNormOp,
    MatmulAddRmsNormOp,
    MatmulBiasActOp,
    MatmulPartialsOp,
    MultiMatmulBiasActOp,
)
from .group import GROUP_OPS, GroupOp, YieldOp
from .kinds import PatternKind, pattern_kind
from .rotary import ROTARY_OPS, RotaryMatmulOp
from .separable import SEPARABLE_OPS, DepthwisePointwiseOp, ExpandDepthwiseProjectOp, PointwiseDepthwiseOp
from .norm import (
    NORM_OPS,
    AddLayerNormOp,
    AddRmsNormOp,
    ConvPartialsBiasActOp,
    FusedSoftmaxOp,
    PartialsAddLayerNormOp,
    PartialsAddRmsNormOp,
    PartialsBiasActOp,
    SwigluOp,
)

NAMED_OPS = (*CUBE_OPS, *SEPARABLE_OPS, *ROTARY_OPS, *NORM_OPS, *ATTENTION_OPS)
"""The named fused ops, each with a dedicated kernel."""

FUSED = Dialect("fused", [*NAMED_OPS, *GROUP_OPS], [])

__all__ = [
    "FUSED",
    "NAMED_OPS",
    "ACTIVATION_NAMES",
    "FusedOp",
    "PatternKind",
    "pattern_kind",
    "GroupOp",
    "YieldOp",
    "MatmulBiasActOp",
    "MultiMatmulBiasActOp",
    "Conv2DBiasActOp",
    "Conv2DBiasActMeanOp",
    "DepthwisePointwiseOp",
    "PointwiseDepthwiseOp",
    "ExpandDepthwiseProjectOp",
    "Conv2DPartialsOp",
    "ConvPartialsBiasActOp",
    "FusedBatchMatmulOp",
    "GatedMatmulOp",
    "RotaryMatmulOp",
    "MatmulAddLayerNormOp",
    "MatmulAddRmsNormOp",
    "MatmulPartialsOp",
    "PartialsAddLayerNormOp",
    "PartialsAddRmsNormOp",
    "PartialsBiasActOp",
    "AddLayerNormOp",
    "AddRmsNormOp",
    "FusedSoftmaxOp",
    "SwigluOp",
    "FlashAttentionOp",
]
