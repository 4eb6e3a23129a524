"""`ge-auto-fuse`: group the remaining `ge` ops into `fused.group` kernels, best
merge first, by a benefit model of the target hardware.

In the spirit of GE AutoFuse, TVM's FuseOps and XLA's priority fusion:

1. Every compute op starts as its own node; ops are classified by pattern kind
   (elementwise, broadcast, injective, reduce, cube, opaque: `kinds.py`).
2. Candidates are producer -> consumer pairs (vertical) and siblings reading the
   same value (horizontal, `horizontal=false` to skip them).
3. Each candidate that may legally be one kernel (`legality.py`) and whose
   tiles fit the buffers of `hw` gets a benefit (`cost_model.py`): global-memory
   cycles saved + one launch saved - tiling penalty.
4. The best candidate is merged if it closes no cycle, does not raise the
   peak memory of the activations (`keep-peak-memory=false` to allow) and the
   NPU lowering builds its group's kernel on `hw` (the predicate the lowering
   itself uses, `fused_to_npu/kernel_exists.py`: fusion never makes a group
   that `fused-ungroup` would have to split again); else the next best is
   tried. Only candidates involving the merged node are
   re-evaluated (the others' benefit depends on their own ops only): the
   candidate pairs are kept up to date across merges (`candidate_pairs.py`),
   ranked in a sorted list, and the peak-memory question is answered from the
   current schedule's profile (`peak_memory.py`), so a step costs what the
   merge changed, not the whole graph. Fusion stops when no candidate has a
   positive benefit.
5. Each node of two ops or more becomes a `fused.group`.

`debug=true` prints every decision with its benefit (or the reason it was
rejected) to stderr; `--pass-statistics` counts merges, groups and rejections.
"""

from __future__ import annotations

import bisect
import sys
from collections.abc import Iterator
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block
from xdsl.passes import ModulePass

from ...core.passes import record_statistic
from ...simulator.hardware import DEFAULT_PRESET, load_preset
from ..fused_to_npu.kernel_exists import kernel_problem
from .candidate_pairs import CandidatePairs
from .cost_model import Benefit, CostModel
from .fusion_graph import FusionGraph, Part
from .grouping import build_group, group_all
from .legality import Constraints, problem


@dataclass(frozen=True)
class Candidate:
    a: int
    b: int
    how: str  # "vertical" or "horizontal"
    benefit: Benefit | None  # None when illegal
    reason: str = ""


@dataclass(frozen=True)
class AutoFusePass(ModulePass):
    """Group the remaining ge ops into fused.group kernels by a benefit model (best merge first)."""

    name = "ge-auto-fuse"

    hw: str = DEFAULT_PRESET
    max_size: int = 64
    max_inputs: int = 8
    fit_buffers: bool = True
    fuse_reduce: bool = True
    cube_epilogue: bool = True
    horizontal: bool = True
    keep_peak_memory: bool = True
    debug: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fusion = _Fusion(self, CostModel(load_preset(self.hw)))
        for function in op.walk():
            if isinstance(function, func.FuncOp) and function.body.blocks:
                fusion.run(function.body.block)


class _Ranked:
    """The candidates worth merging (legal, positive benefit), best first: by
    benefit, then by their nodes' places (unique keys, so the order is the one a
    sort of every candidate at every step gave). Kept sorted across merges."""

    def __init__(self):
        self.keys: list[tuple[float, int, int]] = []
        self.by_key: dict[tuple[float, int, int], Candidate] = {}
        self.key_of: dict[tuple[int, int], tuple[float, int, int]] = {}

    def add(self, graph: FusionGraph, c: Candidate) -> None:
        if c.benefit is None or c.benefit.total <= 0:
            return
        key = (-c.benefit.total, graph.position(c.a), graph.position(c.b))
        self.key_of[(c.a, c.b)] = key
        self.by_key[key] = c
        bisect.insort(self.keys, key)

    def discard(self, pair: tuple[int, int]) -> None:
        key = self.key_of.pop(pair, None)
        if key is not None:
            del self.by_key[key]
            del self.keys[bisect.bisect_left(self.keys, key)]

    def in_order(self) -> Iterator[Candidate]:
        """The candidates best first; the one just yielded may be discarded meanwhile."""
        i = 0
        while i < len(self.keys):
            key = self.keys[i]
            yield self.by_key[key]
            if i < len(self.keys) and self.keys[i] == key:
                i += 1


class _Fusion:
    """One run of the greedy algorithm over a block."""

    def __init__(self, options: AutoFusePass, model: CostModel):
        self.options = options
        self.model = model
        self.limits = Constraints(options.max_size, options.max_inputs, options.fuse_reduce, options.cube_epilogue)
        self.evaluated: dict[tuple[frozenset, frozenset], Candidate] = {}
        self.reported: set[tuple[frozenset, frozenset, str]] = set()
        self.kernels: dict[frozenset, str | None] = {}

    def run(self, block: Block) -> None:
        graph = FusionGraph(block)
        pairs = CandidatePairs(graph, self.options.horizontal)
        ranked = _Ranked()
        for a, b, how in pairs.initial():
            ranked.add(graph, self._evaluate(graph, a, b, how))
        while (chosen := self._best(graph, ranked)) is not None:
            self._say(
                f"fuse {chosen.how} {graph.part(chosen.a).describe()} + {graph.part(chosen.b).describe()}: "
                f"benefit {chosen.benefit}"
            )
            _, changed, appeared = pairs.merge(chosen.a, chosen.b)
            record_statistic(self.options.name, f"{chosen.how} merges")
            for pair in changed:
                ranked.discard(pair)
            for a, b, how in appeared:
                ranked.add(graph, self._evaluate(graph, a, b, how))
        groups = [graph.members[n] for n in graph.nodes() if len(graph.members[n]) > 1]
        for n, ops in enumerate(groups):
            self._say(f"group {n}: {len(ops)} ops: {', '.join(o.name for o in ops)}")
        made = group_all(groups, block)
        record_statistic(self.options.name, "groups formed", len(made))
        record_statistic(self.options.name, "ops grouped", sum(len(g) for g in groups))

    def _best(self, graph: FusionGraph, ranked: _Ranked) -> Candidate | None:
        """The best candidate that passes every check, best benefit first. A
        candidate rejected for a cycle or for having no kernel leaves `ranked` for
        good (a merge elsewhere only adds paths between other nodes, and a kernel
        depends on the ops only); one rejected for peak memory is asked again
        after the next merge."""
        peak = None
        for c in ranked.in_order():
            if graph.creates_cycle(c.a, c.b):
                self._reject(graph, c, "it would form a cycle", "cycle")
                ranked.discard((c.a, c.b))
                continue
            # A group already known to have no kernel is rejected before the
            # peak-memory check (the order of the checks decides no merge, only
            # the reason given).
            if (problem := self._known_kernel_problem(graph.merged_part(c.a, c.b))) is not None:
                self._reject(graph, c, f"no kernel for the group: {problem}", "no kernel")
                ranked.discard((c.a, c.b))
                continue
            if self.options.keep_peak_memory:
                peak = graph.peak_bytes() if peak is None else peak
                # the exact size is only said in debug lines
                if (after := graph.peak_bytes((c.a, c.b), None if self.options.debug else peak)) > peak:
                    self._reject(graph, c, f"peak memory would rise from {peak} to {after} B", "peak memory")
                    continue
            if (problem := self._kernel_problem(graph.merged_part(c.a, c.b))) is not None:
                self._reject(graph, c, f"no kernel for the group: {problem}", "no kernel")
                ranked.discard((c.a, c.b))
                continue
            return c
        return None

    def _evaluate(self, graph: FusionGraph, a: int, b: int, how: str) -> Candidate:
        key = (frozenset(graph.members[a]), frozenset(graph.members[b]))
        cached = self.evaluated.get(key)
        if cached is not None:
            return Candidate(a, b, how, cached.benefit, cached.reason)
        pa, pb, merged = graph.part(a), graph.part(b), graph.merged_part(a, b)
        reason = self._illegal(merged)
        benefit = None if reason else self.model.benefit(pa, pb, merged)
        if reason:
            record_statistic(self.options.name, "candidates rejected")
            self._say(f"reject {how} {pa.describe()} + {pb.describe()}: {reason}")
        elif benefit.total <= 0:
            self._say(f"skip {how} {pa.describe()} + {pb.describe()}: benefit {benefit}")
        candidate = Candidate(a, b, how, benefit, reason)
        self.evaluated[key] = candidate
        return candidate

    def _illegal(self, merged: Part) -> str:
        reason = problem(merged, self.limits)
        if reason is None and self.options.fit_buffers:
            plan = self.model.plan(merged)
            if not plan.fits:
                reason = plan.reason
        return reason or ""

    def _kernel_problem(self, part: Part) -> str | None:
        """Why the lowering builds no kernel for `part` as one group (None if it does)."""
        key = frozenset(part.ops)
        if key not in self.kernels:
            group, _ = build_group(part.ops)
            self.kernels[key] = kernel_problem(group, self.model.hw)
            group.erase()
        return self.kernels[key]

    def _known_kernel_problem(self, part: Part) -> str | None:
        """`_kernel_problem` if it was already asked for `part`, else None."""
        return self.kernels.get(frozenset(part.ops))

    def _reject(self, graph: FusionGraph, c: Candidate, reason: str, counter: str) -> None:
        key = (frozenset(graph.members[c.a]), frozenset(graph.members[c.b]), counter)
        if key in self.reported:
            return
        self.reported.add(key)
        record_statistic(self.options.name, f"rejected: {counter}")
        self._say(f"reject {c.how} {graph.part(c.a).describe()} + {graph.part(c.b).describe()}: {reason}")

    def _say(self, message: str) -> None:
        if self.options.debug:
            print(f"[{self.options.name}] {message}", file=sys.stderr)
