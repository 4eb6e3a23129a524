"""`npu-assign-streams{streams=N}`: run independent launches on different streams,
ordered by events only where they depend on each other.

Multi-stream execution (GE, seed 000/003: tasks on streams with events) lets
kernels of independent branches run while others hold only part of the cores,
and hides the launch overhead of one stream behind the work of another. The
plan, as GE builds it:

1. dependencies between launches from the buffers they touch
   (`HostPlanModel.dependencies`: read after write, write after read or write);
2. streams: a minimum path cover of that DAG (a maximum matching of each
   launch to one successor, Kuhn's algorithm in host order), so that each path
   runs on a stream of its own with no event between its launches; then paths
   are merged, two at a time, while there are more than `streams` (or, with
   `streams=0`, while two of them never run at the same depth of the DAG, so
   merging costs no concurrency, and down to `MAX_AUTO_STREAMS`): the pair
   sharing the fewest depths, then the most dependencies (events saved);
3. host order: with one stream the original order; with several, launches by
   depth (so the host issues, and the simulator hands cores to, what can run
   first), ties in the original order;
4. events: an event on every dependency between launches of different streams
   (`npu.record_event` right after the earlier launch, `npu.wait_event` right
   before the later), except those implied by the others: a stream's vector
   clock (stream order plus the events it already waited for) says which
   launches it knows are done, a dependency already known needs nothing, and
   of the unknown ones a launch waits only for those not implied by another it
   waits for. One record serves every wait on it;
5. event ids are reused: an id is busy from its record to its last wait (in
   host order), then free again (interval colouring, lowest free id first).

With `streams=0` the pass then weighs that plan against fewer streams: the
groups of step 2 are merged on, a pair at a time by the same rule, down to one
stream, and the plan (streams, host order, events, and the launches
`npu-merge-launches` will join) with the fewest estimated cycles is kept, the
fewest streams on a tie (`timing.py`: concurrency is worth only what it saves
over the dispatches that merging would have saved). Streams therefore never
cost time by the estimate: one stream is always a candidate.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from ...core.diagnostics import CompileError
from ...core.passes import record_statistic
from ...dialects import npu
from ...dialects.ge.base import Kind, to_attribute
from ...simulator.hardware import load_preset
from .launches import EVENTS, HostPlanModel, hoist_definitions
from .timing import PlanTimer

MAX_AUTO_STREAMS = 16
"""The most streams `streams=0` uses: a cap on the hardware queues one plan may take."""


@dataclass(frozen=True)
class AssignStreamsPass(ModulePass):
    """Assign launches to streams (0: automatic, the estimated fastest on `hw`, counting
    the launches that `merge` joins; `debug` prints the estimates) and insert the events they need."""

    name = "npu-assign-streams"

    streams: int = 0
    hw: str = "ascend910"
    merge: bool = True
    debug: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.streams < 0:
            raise CompileError(f"npu-assign-streams: streams must be >= 0 (0: automatic), got {self.streams}")
        timer = PlanTimer(load_preset(self.hw), self.merge) if self.streams == 0 else None
        schedule = assign_streams(op, self.streams, timer)
        if schedule.estimates:
            record_statistic(self.name, "stream counts weighed", len(schedule.estimates))
            if self.debug:
                listed = ", ".join(f"{count}: {cycles:.0f}" for count, cycles in schedule.estimates.items())
                print(f"[{self.name}] estimated cycles by stream count: {listed} -> {schedule.stream_count}", file=sys.stderr)
        record_statistic(self.name, "streams", schedule.stream_count)
        record_statistic(self.name, "cross-stream dependencies", schedule.cross_dependencies)
        record_statistic(self.name, "events", schedule.records)
        record_statistic(self.name, "waits", schedule.waits)
        record_statistic(self.name, "event ids", schedule.event_ids)


@dataclass(frozen=True)
class Schedule:
    stream_count: int
    cross_dependencies: int
    records: int
    waits: int
    event_ids: int
    estimates: dict[int, float] = field(default_factory=dict)  # stream count -> estimated cycles, where weighed


def assign_streams(module: ModuleOp, streams: int, timer: PlanTimer | None = None) -> Schedule:
    """Streams, host order and events of `module`'s host plan (rewritten in place).
    With `streams=0` and a `timer`, the estimated fastest of the automatic plan and
    the plans of fewer streams its groups merge into (see the module docstring);
    without a timer, the automatic plan itself."""
    plan = HostPlanModel(module)
    preds = plan.dependencies()
    depth = _depths(preds)
    groups = _merge(path_cover(len(plan.launches), preds), preds, depth, streams)
    if streams or timer is None:
        return _apply_groups(plan, groups, depth)
    estimates: dict[int, float] = {}
    candidates = [groups]
    while len(candidates[-1]) > 1:
        candidates.append(_merge_pair(candidates[-1], preds, depth))
    for candidate in candidates:
        _apply_groups(plan, candidate, depth)
        estimates[len(candidate)] = timer.estimated_cycles(plan)
    best = min(candidates, key=lambda c: (estimates[len(c)], len(c)))
    schedule = _apply_groups(plan, best, depth)
    return replace(schedule, estimates=estimates)


def _apply_groups(plan: HostPlanModel, groups: list[list[int]], depth: list[int]) -> Schedule:
    """A stream per group (numbered by first launch); the host order of step 3."""
    n = len(plan.launches)
    stream_of = [0] * n
    for stream, group in enumerate(sorted(groups, key=min)):
        for i in group:
            stream_of[i] = stream
    order = list(range(n)) if len(groups) <= 1 else sorted(range(n), key=lambda i: (depth[i], i))
    return apply_schedule(plan, order, stream_of)


def synchronize(module: ModuleOp) -> Schedule:
    """Keep the launches' streams and host order, and (re)insert the events they need."""
    plan = HostPlanModel(module)
    n = len(plan.launches)
    return apply_schedule(plan, list(range(n)), [launch.stream for launch in plan.launches])


def apply_schedule(plan: HostPlanModel, order: list[int], stream_of: list[int]) -> Schedule:
    """Put launch `i` of `plan` on stream `stream_of[i]`, issue the launches in `order`
    (a topological order of their dependencies) and insert the events needed."""
    preds = plan.dependencies()
    waits = _waits(order, preds, stream_of)
    _rewrite(plan, order, stream_of, waits)
    n = len(order)
    cross = sum(1 for j in range(n) for i in preds[j] if stream_of[i] != stream_of[j])
    records = {i for wanted in waits.values() for i in wanted}
    ids = max((op.attr_values().event + 1 for op in plan.block.ops if isinstance(op, npu.RecordEventOp)), default=0)
    return Schedule(len(set(stream_of)), cross, len(records), sum(len(w) for w in waits.values()), ids)


# ---- streams ---------------------------------------------------------------------------


def path_cover(n: int, preds: list[list[int]]) -> list[list[int]]:
    """A minimum set of vertex-disjoint paths covering the DAG (n - maximum matching
    of launches to a successor each), as lists of launches in order."""
    succs: list[list[int]] = [[] for _ in range(n)]
    for j, before in enumerate(preds):
        for i in before:
            succs[i].append(j)
    next_of: list[int | None] = [None] * n
    prev_of: list[int | None] = [None] * n
    for root in range(n):
        _augment(root, succs, next_of, prev_of)
    chains = []
    for i in range(n):
        if prev_of[i] is None:
            chain = [i]
            while next_of[chain[-1]] is not None:
                chain.append(next_of[chain[-1]])
            chains.append(chain)
    return chains


def _augment(root: int, succs: list[list[int]], next_of: list, prev_of: list) -> bool:
    """Kuhn's augmenting path from `root` (an iterative depth-first search): match
    it to a free successor, or to one whose launch can move to another successor."""
    seen: set[int] = set()
    frames = [(root, iter(succs[root]))]
    path: list[tuple[int, int]] = []  # the edges into frames[1:]
    while frames:
        i, candidates = frames[-1]
        j = next((j for j in candidates if j not in seen), None)
        if j is None:
            frames.pop()
            if path:
                path.pop()
            continue
        seen.add(j)
        path.append((i, j))
        if prev_of[j] is None:
            for a, b in path:
                next_of[a], prev_of[b] = b, a
            return True
        frames.append((prev_of[j], iter(succs[prev_of[j]])))
    return False


def _depths(preds: list[list[int]]) -> list[int]:
    """The longest chain of dependencies ending at each launch (0 for sources)."""
    depth = [0] * len(preds)
    for j, before in enumerate(preds):
        depth[j] = max((depth[i] + 1 for i in before), default=0)
    return depth


def _merge(chains: list[list[int]], preds: list[list[int]], depth: list[int], streams: int) -> list[list[int]]:
    """Merge paths into streams (see the module docstring, step 2)."""
    groups = [sorted(c) for c in chains]
    edges = _edges(preds)
    limit = streams if streams > 0 else MAX_AUTO_STREAMS
    while len(groups) > 1:
        (a, b), shared = _best_pair(groups, edges, depth)
        if len(groups) <= limit and (streams > 0 or shared > 0):
            break
        groups = _joined(groups, a, b)
    return groups


def _merge_pair(groups: list[list[int]], preds: list[list[int]], depth: list[int]) -> list[list[int]]:
    """`groups` with their best pair (`_best_pair`) on one stream."""
    (a, b), _ = _best_pair(groups, _edges(preds), depth)
    return _joined(groups, a, b)


def _edges(preds: list[list[int]]) -> set[tuple[int, int]]:
    return {(i, j) for j, before in enumerate(preds) for i in before}


def _joined(groups: list[list[int]], a: int, b: int) -> list[list[int]]:
    joined = [list(g) for g in groups]
    joined[a] = sorted(joined[a] + joined[b])
    del joined[b]
    return joined


def _best_pair(groups: list[list[int]], edges: set[tuple[int, int]], depth: list[int]):
    """The two groups sharing the fewest depths, then with the most dependencies
    between them, then the smallest together; and how many depths they share."""
    group_of = {i: g for g, members in enumerate(groups) for i in members}
    links: dict[tuple[int, int], int] = {}
    for i, j in edges:
        a, b = sorted((group_of[i], group_of[j]))
        if a != b:
            links[a, b] = links.get((a, b), 0) + 1
    depths = [{depth[i] for i in g} for g in groups]
    keys = {
        (a, b): (len(depths[a] & depths[b]), -links.get((a, b), 0), len(groups[a]) + len(groups[b]))
        for a in range(len(groups))
        for b in range(a + 1, len(groups))
    }
    best = min(keys, key=keys.get)
    return best, keys[best][0]


# ---- events ----------------------------------------------------------------------------


def _waits(order: list[int], preds: list[list[int]], stream_of: list[int]) -> dict[int, list[int]]:
    """For each launch, the launches of other streams it must wait for (step 4)."""
    known: dict[int, dict[int, int]] = {}  # stream -> stream -> launches of it known done
    position: dict[int, int] = {}  # launch -> its count on its stream
    after: dict[int, dict[int, int]] = {}  # launch -> its stream's clock right after it
    waits: dict[int, list[int]] = {}
    for j in order:
        s = stream_of[j]
        clock = known.setdefault(s, {})
        unknown = [i for i in preds[j] if stream_of[i] != s and clock.get(stream_of[i], 0) < position[i]]
        needed = [
            i for i in unknown if not any(k != i and after[k].get(stream_of[i], 0) >= position[i] for k in unknown)
        ]
        for i in needed:
            for stream, count in after[i].items():
                clock[stream] = max(clock.get(stream, 0), count)
        if needed:
            waits[j] = sorted(needed, key=order.index)
        clock[s] = clock.get(s, 0) + 1
        position[j] = clock[s]
        after[j] = dict(clock)
    return waits


def _rewrite(plan: HostPlanModel, order: list[int], stream_of: list[int], waits: dict[int, list[int]]) -> None:
    """Host block: definitions, then launches in `order` with their streams and events."""
    block = plan.block
    for op in [op for op in block.ops if isinstance(op, EVENTS)]:
        op.detach()
        op.erase()
    hoist_definitions(block)
    launches = [plan.launches[i].op for i in range(len(plan.launches))]
    for op in launches:
        op.detach()
    terminator = block.last_op
    recorded = {i for wanted in waits.values() for i in wanted}
    steps: list[tuple[str, int]] = []  # ("wait", (i, j)) / ("launch", j) / ("record", j)
    for j in order:
        steps += [("wait", (i, j)) for i in waits.get(j, [])]
        steps.append(("launch", j))
        if j in recorded:
            steps.append(("record", j))
    event_of = _event_ids(steps)
    for kind, what in steps:
        if kind == "launch":
            op: Operation = launches[what]
            op.properties["stream"] = to_attribute(Kind.INT, stream_of[what])
        elif kind == "record":
            op = npu.RecordEventOp.new(stream=stream_of[what], event=event_of[what])
        else:
            i, j = what
            op = npu.WaitEventOp.new(stream=stream_of[j], event=event_of[i])
        block.insert_op_before(op, terminator)


def _event_ids(steps: list[tuple[str, object]]) -> dict[int, int]:
    """An event id per recorded launch, reused once its last wait has passed."""
    last_wait: dict[int, int] = {}
    for at, (kind, what) in enumerate(steps):
        if kind == "wait":
            last_wait[what[0]] = at
    free: list[int] = []
    busy: list[tuple[int, int]] = []  # (last wait step, id)
    next_id = 0
    ids: dict[int, int] = {}
    for at, (kind, what) in enumerate(steps):
        for done in [b for b in busy if b[0] < at]:
            busy.remove(done)
            free.append(done[1])
        if kind != "record":
            continue
        free.sort()
        if free:
            ids[what] = free.pop(0)
        else:
            ids[what], next_id = next_id, next_id + 1
        busy.append((last_wait[what], ids[what]))
    return ids
