"""The framework of named pattern fusion: what a pattern is, and the checks and
rewrite every pattern gets for free.

A pattern is a small class (see `patterns_*.py`): `match(op)` looks at the graph
around its anchor op and returns a `Match`, which says which `ge` ops the fused
op replaces, which of their values it stands for, and how to build it. It does
not touch the IR. `apply_match` then does the part that is the same for every
fusion, so no pattern can get it wrong:

* intermediate values must stay internal: a result of a matched op used outside
  the match (and not one of the values the fused op replaces) rejects the match,
  so nothing is computed twice and no user loses its value;
* no cycle: no operand of the fused op may depend on a matched op (it would have
  to be computed before and after the fused op);
* the fused op takes the replaced values' types, encodings included, is placed
  where the last matched op was, the matched ops and the constants only they
  used are erased, and the block order is repaired if a user of an exposed
  value (such as `add_layer_norm`'s sum) sat before the fused op;
* the fused op reads its operands through `ge.transdata` format changes (its
  kernel converts on load, as the MTE does ND -> NZ) wherever its kernel reads
  that format, and format changes that no one reads any more are erased;
* the fused op must have a kernel: the NPU lowering is asked, with the
  predicate it uses itself (`fused_to_npu/kernel_exists.py`), whether it builds
  the op (first reading every operand through its format changes, then, if
  that has no kernel, operand by operand); a match whose op has no kernel
  either way is rejected and the ops stay as they are.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from xdsl.ir import Block, Operation, SSAValue

from ...dialects.fused import GroupOp
from ...simulator.hardware import DEFAULT_PRESET, HardwarePreset, load_preset
from ..fused_to_npu.kernel_exists import kernel_problem
from .graph import (
    depends_on,
    erase_dead_providers,
    external_operands,
    positions,
    restore_topological_order,
    through_format_changes,
)


@dataclass
class Match:
    """What a pattern found: the `ge` ops to replace and how to replace them.

    `replaces[i]` is the value result i of the last built op stands for (None
    when the result replaces nothing). `build` returns the new ops, the fused op
    at `fused_at` (last by default; a pattern may need a small helper op before
    it, such as a transpose, or a view of its result after it, such as a
    reshape to the shape the replaced value had); it is only called once the
    checks passed."""

    ops: list[Operation]
    replaces: list[SSAValue | None]
    build: Callable[[], list[Operation]]
    fused_at: int = -1


class FusionPattern:
    """Base class of a named fusion. Subclasses set `name` (kebab-case, used by
    the pass options), `anchors` (the op types `match` is tried on) and
    implement `match`. The docstring's first line is the pattern's summary."""

    name: ClassVar[str] = ""
    anchors: ClassVar[tuple[type[Operation], ...]] = ()

    def match(self, op: Operation) -> Match | None:
        raise NotImplementedError

    @classmethod
    def summary(cls) -> str:
        return (cls.__doc__ or "").strip().splitlines()[0]


def rejection(m: Match, block: Block) -> str | None:
    """Why `m` cannot be applied, or None if it can."""
    matched = set(m.ops)
    exposed = {v for v in m.replaces if v is not None}
    for op in m.ops:
        for result in op.results:
            if result in exposed:
                continue
            outside = [use.operation for use in result.uses if use.operation not in matched]
            if outside:
                return f"the intermediate value of '{op.name}' has another user ('{outside[0].name}')"
    order = positions(block)
    culprit = depends_on(external_operands(m.ops), m.ops, order)
    if culprit is not None:
        return f"an operand depends on the matched '{culprit.name}': fusing would form a cycle"
    return None


def build_checked(m: Match, hw: HardwarePreset) -> tuple[list[Operation], str | None]:
    """The ops `m` builds, the fused op (last) reading through the format changes
    its kernel reads (module docstring); or no ops and why the fused op has no
    kernel on `hw`. The IR is not modified."""
    new_ops = m.build()
    problem = read_through_format_changes(new_ops[m.fused_at], hw)
    if problem is not None:
        for op in reversed(new_ops):
            op.erase()
        return [], problem
    return new_ops, None


def apply_match(m: Match, block: Block, new_ops: list[Operation] | None = None) -> Operation:
    """Replaces the matched ops by the built ones (`build_checked`'s, built for the
    default preset if not given; the checks must have passed)."""
    if new_ops is None:
        new_ops, problem = build_checked(m, load_preset(DEFAULT_PRESET))
        if problem is not None:
            raise AssertionError(f"the fused op of the match has no kernel: {problem}")
    order = positions(block)
    root = max(m.ops, key=order.__getitem__)
    dropped_operands = external_operands(m.ops)
    for new_op in new_ops:
        # Diagnostics at later levels point at the source line of the fused chain.
        new_op.location = root.location
    block.insert_ops_before(new_ops, root)
    fused = new_ops[m.fused_at]
    for old, new in zip(m.replaces, new_ops[-1].results):
        if old is not None:
            old.replace_all_uses_with(new)
    for op in sorted(m.ops, key=order.__getitem__, reverse=True):
        if any(r.uses for r in op.results):
            raise AssertionError(f"{op.name} still has users after fusion")
        op.detach()
        op.erase()
    erase_dead_providers(dropped_operands)
    restore_topological_order(block)
    return fused


def read_through_format_changes(op: Operation, hw: HardwarePreset) -> str | None:
    """Makes `op` read the sources of the format changes feeding it where its
    kernel reads them; returns why `op` has no kernel at all (None if it has). A
    `fused.group` (a user pattern may build one) keeps its operands: its body's
    arguments are typed as they are, and its ops convert nothing on load."""
    if isinstance(op, GroupOp):
        return kernel_problem(op, hw)
    given = list(op.operands)
    sources = [through_format_changes(v) for v in given]
    if sources == given:
        return kernel_problem(op, hw)
    op.operands = sources
    if kernel_problem(op, hw) is None:
        return None
    op.operands = given
    for i, (v, source) in enumerate(zip(given, sources)):
        if source is not v:
            op.operands[i] = source
            if kernel_problem(op, hw) is not None:
                op.operands[i] = v
    return kernel_problem(op, hw)
