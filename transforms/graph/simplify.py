"""`ge-simplify`: algebraic simplification of the graph.

Applies the canonicalization patterns the `ge` ops carry (x + 0, x * 1, no-op
reshapes and casts, dropout at inference, transposes folded into matmul flags,
inverse transdata pairs, ...; see `dialects/ge/canonicalize_*.py`) and the
exporters' idioms of `exported_idioms.py` (GELU written out as its formula, a
batched product with an unbatched weight) greedily until none applies, and
erases the ops left dead. Upstream `canonicalize` runs
the same patterns; this pass differs in running only the `ge` patterns and in
counting each rewrite by name for `--pass-statistics`, so one can see what an
exported model actually contained.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)

from ...core.passes import record_statistic
from ...dialects.ge.canonicalization import Canonicalize, GEPattern
from .exported_idioms import idiom_patterns


PatternSource = Callable[[Operation], Iterable[RewritePattern]]


def canonicalization_patterns(op: Operation) -> tuple[RewritePattern, ...]:
    """The patterns the op's `Canonicalize` trait registers (none for other ops)."""
    trait = op.get_trait(Canonicalize)
    return trait.get_patterns(type(op)) if trait is not None else ()


def simplify_patterns(op: Operation) -> tuple[RewritePattern, ...]:
    """What `ge-simplify` tries on `op`: its canonicalization patterns, then the
    exporters' idioms anchored on it."""
    return (*canonicalization_patterns(op), *idiom_patterns(op))


class CountingPatterns(RewritePattern):
    """Applies the patterns `source` gives for each op (first match wins) and counts,
    per pattern counter name, how often one rewrote the IR."""

    def __init__(self, counts: Counter, source: PatternSource = canonicalization_patterns):
        self.counts = counts
        self.source = source

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        for pattern in self.source(op):
            pattern.match_and_rewrite(op, rewriter)
            if rewriter.has_done_action:
                self.counts[getattr(pattern, "COUNTER", GEPattern.COUNTER)] += 1
                return


def apply_counted(module: ModuleOp, source: PatternSource = canonicalization_patterns) -> Counter:
    """Apply `source`'s patterns (default: the ge canonicalization patterns) to a
    fixpoint with dead-code elimination; return how often each counter fired."""
    counts: Counter = Counter()
    applier = GreedyRewritePatternApplier([CountingPatterns(counts, source)], dce_enabled=True)
    PatternRewriteWalker(applier).rewrite_module(module)
    return counts


def record_counts(pass_name: str, counts: Counter) -> None:
    for counter, n in sorted(counts.items()):
        record_statistic(pass_name, counter, n)


@dataclass(frozen=True)
class SimplifyPass(ModulePass):
    """Algebraic simplification with the ge ops' canonicalization patterns."""

    name = "ge-simplify"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        counts = apply_counted(op, simplify_patterns)
        record_statistic(self.name, "rewrites", sum(counts.values()))
        record_counts(self.name, counts)
