"""The named fusion patterns, in the order they are tried.

Order is priority: a pattern that covers more of the graph comes before one that
would take part of it (flash attention before the scaled batch_matmul, the
gated feed-forward before a matmul with a silu epilogue, matmul + add + norm
before matmul + bias). Each pattern runs over the whole graph before the next
one starts, as GE's fusion passes do.

To add a pattern: write a `FusionPattern` subclass (see `pattern.py` and the
README section "Fusion") and add it to this tuple where its priority belongs.
"""

from __future__ import annotations

from .pattern import FusionPattern
from .patterns_attention import FlashAttentionPattern
from .patterns_cube import (
    BatchMatmulScaleMaskPattern,
    Conv2DBiasActPattern,
    GatedMatmulPattern,
    MatmulAddNormPattern,
    MatmulBiasActPattern,
)
from .patterns_vector import (
    AddLayerNormPattern,
    AddRmsNormPattern,
    SigmoidGatePattern,
    SoftmaxPattern,
    SwigluPattern,
)
from .rotary import RotaryMatmulPattern
from .user_patterns import load_pattern_file, user_patterns

PATTERNS: tuple[type[FusionPattern], ...] = (
    FlashAttentionPattern,
    MatmulAddNormPattern,
    GatedMatmulPattern,
    RotaryMatmulPattern,
    MatmulBiasActPattern,
    Conv2DBiasActPattern,
    BatchMatmulScaleMaskPattern,
    AddLayerNormPattern,
    AddRmsNormPattern,
    SoftmaxPattern,
    SwigluPattern,
    SigmoidGatePattern,
)


def all_patterns() -> list[type[FusionPattern]]:
    """The user patterns (`user_patterns.py`: loaded files and the `gecomp.patterns`
    entry points) first, then the built-in ones in priority order."""
    return [*user_patterns({p.name for p in PATTERNS}), *PATTERNS]


def load_patterns(path: str) -> list[type[FusionPattern]]:
    """Registers the patterns of the user file `path` (`--load-patterns`)."""
    return load_pattern_file(path, {p.name for p in PATTERNS})


def pattern_names() -> list[str]:
    return [p.name for p in all_patterns()]
