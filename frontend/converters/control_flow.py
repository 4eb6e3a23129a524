"""If, Scan and Loop, unrolled at import.

gecomp compiles static graphs, and with static shapes most control flow decides
nothing at run time: an If whose condition is known at import (AffineGrid's
function body asks whether `size` has 4 elements) is the branch it takes; a
Scan runs its body once per element of the scanned axis, a length the shapes
fix (LinearAttention's body is one step of the recurrence); a Loop whose trip
count and condition fold at import runs a known number of times. So each is
imported as the nodes of its graph attribute, inline, once per step
(`NodeContext.subgraph`): the result is a plain ge graph, and folding evaluates
whatever is static in it. What does need a run-time decision (a condition
computed from graph inputs, a Loop whose condition does) is an error naming
the input, as for any operand that must be known at import.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .. import ops
from ..builder import Tensor, slice_
from .context import Constant, NodeContext, Value
from .registry import converts

MAX_STEPS = 4096
"""Unrolling makes one copy of the body per step: a Loop of more steps is refused."""


@converts("If", static=(0,))
def if_(c: NodeContext):
    condition = c.constant(0, "cond")
    if condition.size != 1:
        raise c.fail(f"the condition must have one element, got shape {list(condition.shape)}")
    taken, other = ("then_branch", "else_branch") if bool(condition.reshape(())) else ("else_branch", "then_branch")
    c.graph(other)  # never imported: only the taken branch exists in a static graph
    return _outputs(c, c.subgraph(taken))


@converts("Scan")
def scan(c: NodeContext):
    count = c.int("num_scan_inputs")
    if c.opset < 9:
        return _batched_scan(c, count)
    states = [c.input(i) for i in range(c.input_count - count)]
    scanned = [c.input(i) for i in range(c.input_count - count, c.input_count)]
    outputs = len(c.node.outputs) - len(states)
    return _scan(
        c, states, scanned,
        _axes(c, "scan_input_axes", [x.rank for x in scanned]),
        c.ints("scan_input_directions", (0,) * count),
        _axes(c, "scan_output_axes", [None] * outputs),
        c.ints("scan_output_directions", (0,) * outputs),
    )


def _batched_scan(c: NodeContext, count: int):
    """Scan-8: every input has a batch axis in front and scans its axis 1; with no
    sequence_lens, that is the Scan-9 of each batch element, stacked."""
    if c.has_input(0):
        raise c.unsupported("input 'sequence_lens' is not supported (every sequence is scanned in full)")
    states = [c.input(i) for i in range(1, c.input_count - count)]
    scanned = [c.input(i) for i in range(c.input_count - count, c.input_count)]
    directions = c.ints("directions", (0,) * count)
    outputs = len(c.node.outputs) - len(states)
    batch = {x.shape[0] for x in [*states, *scanned]}
    if len(batch) != 1:
        raise c.fail(f"the inputs' batch sizes differ ({sorted(batch)})")
    per_element = []
    for b in range(batch.pop()):
        per_element.append(_scan(
            c, [_element(x, 0, b) for x in states], [_element(x, 0, b) for x in scanned],
            [0] * count, directions, [0] * outputs, [0] * outputs,
        ))
    return [_stack(c, [results[k] for results in per_element], 0) for k in range(len(c.node.outputs))]


def _scan(c: NodeContext, states: list[Value], scanned: list[Tensor], in_axes, in_directions,
          out_axes, out_directions) -> list[Value]:
    """The body run once per step along each scanned input's axis, states carried
    from step to step; the final states, then each scan output stacked."""
    lengths = {x.shape[axis] for x, axis in zip(scanned, in_axes)}
    if len(lengths) != 1:
        raise c.fail(f"the scanned inputs have different lengths ({sorted(lengths)})")
    steps = lengths.pop()
    if steps == 0:
        raise c.fail("a scan over 0 steps is not supported")
    collected: list[list[Value]] = []
    for step in range(steps):
        elements = [_element(x, axis, steps - 1 - step if reverse else step)
                    for x, axis, reverse in zip(scanned, in_axes, in_directions)]
        results = _outputs(c, c.subgraph("body", [*states, *elements]), len(states) + len(out_axes))
        states, produced = results[:len(states)], results[len(states):]
        collected.append(produced)
    stacked = []
    for k, (axis, reverse) in enumerate(zip(out_axes, out_directions)):
        per_step = [produced[k] for produced in collected]
        stacked.append(_stack(c, per_step[::-1] if reverse else per_step, axis))
    return [*states, *stacked]


@converts("Loop", static=(0, 1))
def loop(c: NodeContext):
    trips = c.constant(0, "M")
    condition = c.constant(1, "cond")
    if trips is None and condition is None:
        raise c.fail("a Loop with neither a trip count nor a condition never ends")
    if any(v is not None and v.size != 1 for v in (trips, condition)):
        raise c.fail("the trip count and the condition must have one element each")
    limit = None if trips is None else int(trips.reshape(()))
    carried: list[Value] = [c.input(i) for i in range(2, c.input_count)]
    running = True if condition is None else bool(condition.reshape(()))
    collected: list[list[Value]] = []
    step = 0
    while running and (limit is None or step < limit):
        if step == MAX_STEPS:
            raise c.unsupported(f"a Loop of more than {MAX_STEPS} steps is not unrolled")
        inputs = [Constant(np.array(step, np.int64)), Constant(np.array(running)), *carried]
        results = _outputs(c, c.subgraph("body", inputs), len(c.node.outputs) + 1)
        running = _known_condition(c, results[0])
        carried, produced = results[1:1 + len(carried)], results[1 + len(carried):]
        collected.append(produced)
        step += 1
    if not collected and len(c.node.outputs) > len(carried):
        raise c.fail("a Loop that runs no step has scan outputs of unknown shape")
    stacked = [_stack(c, [produced[k] for produced in collected], 0)
               for k in range(len(c.node.outputs) - len(carried))]
    return [*carried, *stacked]


def _known_condition(c: NodeContext, value: Value) -> bool:
    if not isinstance(value, Constant) or value.array is None or value.array.size != 1:
        raise c.fail("the body's condition must be known at import (it is computed at run time)")
    return bool(value.array.reshape(()))


def _outputs(c: NodeContext, results: list[Value], expected: int | None = None) -> list[Value]:
    expected = len(c.node.outputs) if expected is None else expected
    if len(results) != expected:
        raise c.fail(f"its graph has {len(results)} outputs, the node needs {expected}")
    return results


def _axes(c: NodeContext, name: str, ranks: Sequence[int | None]) -> list[int]:
    """Attribute `name` (default 0 for each), negative axes counted from the end
    of a rank (None: the rank of a stacked output, not known yet: kept)."""
    axes = list(c.ints(name, (0,) * len(ranks)))
    if len(axes) != len(ranks):
        raise c.fail(f"attribute '{name}' has {len(axes)} values, for {len(ranks)} tensors")
    return [a + r if a < 0 and r is not None else a for a, r in zip(axes, ranks)]


def _element(x: Tensor, axis: int, index: int) -> Tensor:
    """`x[..., index, ...]` along `axis`, that axis removed."""
    part = slice_(x, [index], [index + 1], [axis])
    return ops.reshape(part, [d for i, d in enumerate(x.shape) if i != axis])


def _stack(c: NodeContext, values: list[Value], axis: int) -> Tensor:
    """The per-step `values` stacked along a new `axis` (negative: from the end
    of the stacked rank)."""
    tensors = [v if isinstance(v, Tensor) else c.g.const(v.array) for v in values]
    rank = tensors[0].rank + 1
    axis = axis + rank if axis < 0 else axis
    if not 0 <= axis < rank:
        raise c.fail(f"output axis {axis} is out of range for rank {rank}")
    shape = list(tensors[0].shape)
    return ops.concat([ops.reshape(t, [*shape[:axis], 1, *shape[axis:]]) for t in tensors], axis)
