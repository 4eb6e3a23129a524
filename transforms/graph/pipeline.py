"""`ge-graph-opt`: the graph-level optimisation pipeline.

Stages, in order (each one a pass of its own, so `--dump-dir`,
`--print-ir-after-all` and `--pass-statistics` show every one):

    ge-simplify         algebraic simplification (exported models' no-ops first,
                        so folding and fusion see the real graph)
    ge-constant-fold    evaluate what only depends on constants
    ge-fold-batchnorm   fold inference batch_norm into conv2d / matmul weights
    cse, dce            upstream xDSL: merge identical ops, drop unused ones
    ge-single-pixel-conv  (off unless `single-pixel-conv=true`, as ge-compile
                        sets it when it fuses) 1x1 convolutions of one pixel as
                        vector matrix-vector products
    ge-layout           physical formats for the cube and the fewest transdata
    ge-simplify,        clean up, repeated until a round changes nothing: a
    ge-constant-fold,   rewrite can make an op foldable (x * 0 -> 0 feeding an
    cse                 abs), a fold can make a pattern apply, both can create
                        identical constants. Stopping only at that fixpoint is
                        what makes the pipeline idempotent: a second run finds
                        nothing to do.

Options switch stages off: `ge-graph-opt{layout=false fold-bn=false}`;
`max-bytes` bounds the constants folding may create (default 1 MiB).
Upstream cse and dce do not count what they do, so the pipeline records how many
ops each removed (`cse: 3 ops erased`).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination
from xdsl.transforms.dead_code_elimination import DeadCodeElimination

from ...core.passes import PipelinePass, record_statistic, run_pass
from .constant_fold import DEFAULT_MAX_BYTES, ConstantFoldPass
from .fold_batchnorm import FoldBatchNormPass
from .layout import LayoutPass
from .single_pixel_conv import SinglePixelConvPass
from .simplify import SimplifyPass

_UNCOUNTED = (CommonSubexpressionElimination, DeadCodeElimination)


@dataclass(frozen=True)
class GraphOptPipeline(PipelinePass):
    """Graph optimisation: simplify, fold, BN folding, CSE, DCE, layout, simplify."""

    name = "ge-graph-opt"
    simplify: bool = True
    fold: bool = True
    fold_bn: bool = True
    cse: bool = True
    dce: bool = True
    layout: bool = True
    single_pixel_conv: bool = False
    max_bytes: int = DEFAULT_MAX_BYTES

    def stages(self) -> list[ModulePass]:
        """The stages up to layout; `cleanup_stages` follow, repeated."""
        chosen = [
            (self.simplify, SimplifyPass()),
            (self.fold, ConstantFoldPass(max_bytes=self.max_bytes)),
            (self.fold_bn, FoldBatchNormPass(max_bytes=self.max_bytes)),
            (self.cse, CommonSubexpressionElimination()),
            (self.dce, DeadCodeElimination()),
            (self.single_pixel_conv, SinglePixelConvPass()),
            (self.layout, LayoutPass()),
        ]
        return [stage for enabled, stage in chosen if enabled]

    def cleanup_stages(self) -> list[ModulePass]:
        chosen = [
            (self.simplify, SimplifyPass()),
            (self.fold, ConstantFoldPass(max_bytes=self.max_bytes)),
            (self.cse, CommonSubexpressionElimination()),
        ]
        return [stage for enabled, stage in chosen if enabled]

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for stage in self.stages():
            _run_counted(stage, ctx, op)
        cleanup = self.cleanup_stages()
        for _ in range(MAX_CLEANUP_ROUNDS if cleanup else 0):
            before = op.clone()
            for stage in cleanup:
                _run_counted(stage, ctx, op)
            if op.is_structurally_equivalent(before):
                break


MAX_CLEANUP_ROUNDS = 8
"""Rounds of cleanup before giving up on a fixpoint (one or two in practice)."""


def _run_counted(stage: ModulePass, ctx: Context, op: ModuleOp) -> None:
    before = _op_count(op)
    run_pass(stage, ctx, op)
    if isinstance(stage, _UNCOUNTED):
        record_statistic(stage.name, "ops erased", before - _op_count(op))


def _op_count(module: ModuleOp) -> int:
    return sum(1 for _ in module.walk())
