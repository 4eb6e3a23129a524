"""Multi-stream scheduling (lowering/plan/streams.py): streams from a minimum path
cover, events sufficient (the simulator's checks pass) and none redundant
(removing any one makes the simulator report a race or a wrong order), event ids
reused; hand-checked small graphs pin the exact events."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from plan_testing import SyntheticLaunch, SyntheticPlan, parse, run_simulation, synthetic_plans

from gecomp.core.diagnostics import CompileError
from gecomp.dialects import npu
from gecomp.lowering.plan.launches import HostPlanModel
from gecomp.lowering.plan.memory import plan_gm
from gecomp.lowering.plan.streams import assign_streams, path_cover, synchronize


def host_steps(module) -> list[str]:
    """@main's launches and events, shortly: 't3@1' (kernel t3 on stream 1), 'r0@1'
    (stream 1 records event 0), 'w0@0' (stream 0 waits for event 0)."""
    steps = []
    for op in HostPlanModel(module).block.ops:
        if isinstance(op, npu.LaunchOp):
            steps.append(f"{op.callee.root_reference.data}@{op.attr_values().stream}")
        elif isinstance(op, (npu.RecordEventOp, npu.WaitEventOp)):
            a = op.attr_values()
            steps.append(f"{'r' if isinstance(op, npu.RecordEventOp) else 'w'}{a.event}@{a.stream}")
    return steps


def plan(sizes_count: int, outputs: set[int], *launches: tuple[tuple[int, ...], int, int]) -> str:
    """A synthetic plan with one input (value 0) and 256-element buffers."""
    return SyntheticPlan(
        1, (256,) * sizes_count, frozenset(outputs), tuple(SyntheticLaunch(r, w, s) for r, w, s in launches)
    ).text()


def waits_removed_one_at_a_time(module_text: str):
    """Each variant of the planned module with one npu.wait_event removed."""
    count = sum(1 for step in host_steps(parse(module_text)) if step.startswith("w"))
    for k in range(count):
        module = parse(module_text)
        waits = [op for op in HostPlanModel(module).block.ops if isinstance(op, npu.WaitEventOp)]
        waits[k].detach()
        waits[k].erase()
        yield module


def assert_every_event_needed(module) -> None:
    plan_gm(module, "tiny", reuse=True)
    text = str(module)
    run_simulation(parse(text))  # sufficient: the plan checks pass
    for variant in waits_removed_one_at_a_time(text):
        with pytest.raises(CompileError, match="race between streams|not ordered after|deadlock"):
            run_simulation(variant)


# ---- hand-checked graphs ----------------------------------------------------------------


def test_diamond_gets_two_streams_and_one_event():
    # a = f(x); b = g(x); c = h(a, b)
    module = parse(plan(4, {3}, ((0,), 1, 0), ((0,), 2, 0), ((1, 2), 3, 0)))
    schedule = assign_streams(module, 0)
    assert host_steps(module) == ["t0@0", "t1@1", "r0@1", "w0@0", "t2@0"]
    assert (schedule.stream_count, schedule.records, schedule.waits) == (2, 1, 1)
    assert_every_event_needed(module)


def test_three_branches_join_with_two_waits():
    # three chains x -> a_i -> b_i, joined by one launch
    launches = []
    for branch in range(3):
        a, b = 1 + 2 * branch, 2 + 2 * branch
        launches += [((0,), a, 0), ((a,), b, 0)]
    launches.append(((2, 4, 6), 7, 0))
    module = parse(plan(8, {7}, *launches))
    schedule = assign_streams(module, 0)
    assert (schedule.stream_count, schedule.records, schedule.waits) == (3, 2, 2)
    assert host_steps(module) == [
        *("t0@0", "t2@1", "t4@2"),  # by depth: the branches' first launches first
        *("t1@0", "t3@1", "r0@1", "t5@2", "r1@2"),
        *("w0@0", "w1@0", "t6@0"),  # the join waits for the two other streams
    ]
    assert_every_event_needed(module)


def test_events_implied_by_stream_order_and_by_other_events_are_left_out():
    # t0 (s0) -> t1 (s1) and t2 (s1) both read a; t3 (s0) reads b and c.
    # t2's need of t0 is implied by t1's wait; t3's need of t1 by its wait on t2.
    module = parse(plan(5, {4}, ((0,), 1, 0), ((1,), 2, 1), ((1,), 3, 1), ((2, 3), 4, 0)))
    schedule = synchronize(module)
    assert host_steps(module) == ["t0@0", "r0@0", "w0@1", "t1@1", "t2@1", "r0@1", "w0@0", "t3@0"]
    assert (schedule.cross_dependencies, schedule.records, schedule.waits, schedule.event_ids) == (4, 2, 2, 1)
    assert_every_event_needed(module)


def test_transitive_event_across_three_streams():
    # t0 (s0) -> t1 (s1) -> t2 (s2), and t2 also reads t0's output: one wait each.
    module = parse(plan(4, {3}, ((0,), 1, 0), ((1,), 2, 1), ((1, 2), 3, 2)))
    schedule = synchronize(module)
    assert host_steps(module) == ["t0@0", "r0@0", "w0@1", "t1@1", "r0@1", "w0@2", "t2@2"]
    assert schedule.waits == 2
    assert_every_event_needed(module)


def test_write_after_read_is_ordered_across_streams():
    # t1 (s1) reads a, t2 (s0) overwrites a: t2 must wait for t1.
    module = parse(plan(4, {2, 3}, ((0,), 1, 0), ((1,), 2, 1), ((0,), 1, 0), ((1,), 3, 0)))
    synchronize(module)
    assert "w0@0" in host_steps(module)
    assert_every_event_needed(module)


def test_event_ids_are_reused():
    # a ping-pong chain between two streams: every event is waited for before the next record
    launches = [((i,), i + 1, i % 2) for i in range(6)]
    module = parse(plan(7, {6}, *launches))
    schedule = synchronize(module)
    assert (schedule.records, schedule.event_ids) == (5, 1)
    assert_every_event_needed(module)


def test_one_stream_keeps_the_order_and_needs_no_event():
    module = parse(plan(4, {3}, ((0,), 1, 0), ((0,), 2, 0), ((1, 2), 3, 0)))
    schedule = assign_streams(module, 1)
    assert host_steps(module) == ["t0@0", "t1@0", "t2@0"]
    assert (schedule.stream_count, schedule.records) == (1, 0)


@pytest.mark.parametrize("streams", [1, 2, 3])
def test_streams_option_caps_the_stream_count(streams):
    launches = [((0,), 1 + b, 0) for b in range(5)] + [((1, 2, 3, 4, 5), 6, 0)]
    module = parse(plan(7, {6}, *launches))
    schedule = assign_streams(module, streams)
    assert schedule.stream_count == streams
    assert_every_event_needed(module)


def test_path_cover_is_minimum():
    # two chains 0 -> 1 -> 2 and 3 -> 4, plus a cross edge 0 -> 4
    assert sorted(map(tuple, path_cover(5, [[], [0], [1], [], [0, 3]]))) == [(0, 1, 2), (3, 4)]
    # 0 first takes 2, then gives it up to 1 (augmenting path) and takes 3
    assert sorted(map(tuple, path_cover(4, [[], [], [0, 1], [0]]))) == [(0, 3), (1, 2)]


# ---- random plans -------------------------------------------------------------------------


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(synthetic_plans(max_launches=8, max_streams=3))
def test_events_are_sufficient_and_none_redundant(synthetic):
    """Random DAGs on random streams: the plan passes the simulator's checks, and
    without any one of its waits it does not."""
    module = parse(synthetic.text())
    synchronize(module)
    assert_every_event_needed(module)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(synthetic_plans(max_launches=10, max_streams=1))
def test_automatic_streams_are_sufficient_and_none_redundant(synthetic):
    module = parse(synthetic.text())
    assign_streams(module, 0)
    assert_every_event_needed(module)
