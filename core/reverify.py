"""Verifying a module again after a pass: only the operations the pass changed.

`ge-opt` (as `mlir-opt`) verifies the whole module after every pass, and so do
the ONNX node tests. A pass touches a few kernels of a module of thousands of
instructions, yet verifying everything again took almost half of a small
model's compile (the GridSample bicubic node test: 3.2 of 7.1 CPU seconds).

What an operation's verifier can read, `_state` records:
- its operands (which values) and their types, its result types, its own
  properties and attributes;
- whether it ends its block (xDSL checks that the last op of a block is a
  terminator);
- its ancestors and their properties (an instruction must be inside an
  `npu.kernel`; a sync op reads its kernel's block_dim). Not their discardable
  attributes: a verifier reads an op's values through its properties
  (`attr_values`), and the planners annotate the module and kernels with
  attributes (arena sizes, phase names) after every op in them verified.
An operation whose state equals the one it had when it last verified passes
again, so it is not re-verified. Verifiers may read more than that in a few
places, so these are always verified: operations with regions (their blocks and
terminators), terminators (they check their parent), operations with successors,
and operations naming a symbol (the symbol's definition may change elsewhere).
The contract for a new verifier: read the op, its operands' types and its
ancestors' properties; an op class whose verifier reads other ops (its
neighbours, an operand's definition) says so with `VERIFIER_READS_OTHER_OPS =
True` and is always verified (the npu kernel barriers check their pairing).

The states are compared, not hashed: attribute tuples compare by identity first
(attributes are immutable and mostly interned), so a state check costs a few
microseconds where verifying an instruction costs tens.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects.builtin import SymbolRefAttr
from xdsl.ir import Block, Operation
from xdsl.traits import IsTerminator


class Reverifier:
    """Verifies a module, then the same module after each pass, skipping what did not
    change since the last verification. `verify_op` raises on an invalid op.

    Two walks: the first computes every op's state and which ops changed (an op
    with regions changed if it or any op inside it did: its verifier may walk its
    body, as IsolatedFromAbove does); the second verifies those in the order a
    full verification would, so the first error reported is the same."""

    def __init__(self, verify_op: Callable[[Operation], None]) -> None:
        self.verify_op = verify_op
        self._states: dict[Operation, tuple] = {}
        self.verified = 0
        self.skipped = 0

    def verify(self, module: Operation) -> None:
        fresh: dict[Operation, tuple] = {}
        pending: list[Operation | None] = []
        self._scan(module, (), fresh, pending)
        ordered = [op for op in pending if op is not None]
        self.skipped += len(pending) - len(ordered)
        for done, op in enumerate(ordered):
            try:
                self.verify_op(op)
            except Exception:
                for unverified in ordered[done:]:  # checked again next time
                    fresh.pop(unverified, None)
                self._states = fresh
                raise
            self.verified += 1
        self._states = fresh

    def _scan(self, op: Operation, context: tuple, fresh: dict, pending: list) -> bool:
        """Record `op`'s state in `fresh` and queue it in `pending` if it needs
        verifying; whether it (or anything inside it) changed."""
        state = _state(op, context)
        changed = self._states.get(op) != state
        at = len(pending)
        pending.append(op)
        for region in op.regions:
            for block in region.blocks:
                inner = _context(context, op, block)
                for child in block.ops:
                    changed = self._scan(child, inner, fresh, pending) or changed
        if not changed and not _always_verified(op):
            pending[at] = None
        fresh[op] = state
        return changed


_TERMINATES: dict[type, bool] = {}


def _always_verified(op: Operation) -> bool:
    kind = type(op)
    terminates = _TERMINATES.get(kind)
    if terminates is None:
        terminates = _TERMINATES[kind] = op.has_trait(IsTerminator)
    return terminates or bool(op.successors) or _names_symbol(op) or getattr(kind, "VERIFIER_READS_OTHER_OPS", False)


def _names_symbol(op: Operation) -> bool:
    return any(isinstance(a, SymbolRefAttr) for a in op.properties.values()) or any(
        isinstance(a, SymbolRefAttr) for a in op.attributes.values()
    )


def _context(outer: tuple, op: Operation, block: Block) -> tuple:
    """Where an op of `block` stands: the chain of its ancestors with their properties
    and result types (a terminator checks what its parent returns)."""
    return (outer, op, block, tuple(op.properties.items()), tuple(r.type for r in op.results))


def _state(op: Operation, context: tuple) -> tuple:
    operands = tuple(op.operands)
    state = (
        context,
        op.next_op is None,
        operands,
        tuple(v.type for v in operands),
        tuple(r.type for r in op.results),
        tuple(op.properties.items()),
        tuple(op.attributes.items()),
    )
    if not op.regions:
        return state
    blocks = tuple(
        (block, tuple(a.type for a in block.args), tuple(block.ops)) for region in op.regions for block in region.blocks
    )
    return (state, len(op.regions), blocks)
