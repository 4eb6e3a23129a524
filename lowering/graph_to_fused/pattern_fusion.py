"""`ge-pattern-fuse`: replace known subgraphs by the named `fused` ops.

Each named pattern (`patterns.py`) is a subgraph a dedicated kernel exists for:
matmul + bias + activation, conv + bias + activation (+ residual), attention,
residual add + norm, ... Fusing them first, before automatic fusion, gives the
hand-tuned kernels the subgraphs they were written for; automatic fusion then
groups what is left.

A match is fused only if the NPU lowering builds the fused op on `hw` (see
`pattern.py`). Options: `only=a,b` runs just those patterns, `disable=a,b` all
but those; `hw` names the preset; `debug=true` prints each fusion and each rejected match (with its reason) to
stderr. `--pass-statistics` counts fusions per pattern.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass

from ...core.diagnostics import CompileError, location_of
from ...core.passes import record_statistic
from ...simulator.hardware import DEFAULT_PRESET, load_preset
from .pattern import FusionPattern, apply_match, build_checked, rejection
from .patterns import all_patterns, pattern_names


@dataclass(frozen=True)
class PatternFusePass(ModulePass):
    """Fuse named patterns (matmul+bias+act, conv+bias+act, attention, add+norm, ...) into fused ops."""

    name = "ge-pattern-fuse"

    only: tuple[str, ...] = ()
    disable: tuple[str, ...] = ()
    hw: str = DEFAULT_PRESET
    debug: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        patterns = [p() for p in self.selected()]
        hw = load_preset(self.hw)
        for function in op.walk():
            if isinstance(function, func.FuncOp) and function.body.blocks:
                for pattern in patterns:
                    self._run(pattern, function.body.block, hw)

    def selected(self) -> list[type[FusionPattern]]:
        known = set(pattern_names())
        for name in (*self.only, *self.disable):
            if name not in known:
                raise CompileError(
                    f"pass '{self.name}': unknown pattern '{name}' (patterns: {', '.join(pattern_names())})"
                )
        return [p for p in all_patterns() if (not self.only or p.name in self.only) and p.name not in self.disable]

    def _run(self, pattern: FusionPattern, block: Block, hw) -> None:
        for anchor in list(block.ops):
            if anchor.parent is not block or not isinstance(anchor, pattern.anchors):
                continue  # erased by an earlier fusion, or not this pattern's anchor
            m = pattern.match(anchor)
            if m is None:
                continue
            problem = rejection(m, block)
            if problem is None:
                new_ops, problem = build_checked(m, hw)
            if problem is not None:
                record_statistic(self.name, f"{pattern.name} rejected")
                self._say(f"{pattern.name}: not fused at {_where(anchor)}: {problem}")
                continue
            names = ", ".join(o.name for o in m.ops)
            fused = apply_match(m, block, new_ops)
            record_statistic(self.name, f"{pattern.name} fused")
            record_statistic(self.name, "ops replaced", len(m.ops))
            self._say(f"{pattern.name}: {names} -> {fused.name}")

    def _say(self, message: str) -> None:
        if self.debug:
            print(f"[{self.name}] {message}", file=sys.stderr)


def _where(op: Operation) -> str:
    location = location_of(op)
    return str(location) if location is not None else f"'{op.name}'"
