"""Link costs of the collectives against their closed forms (simulator/collectives.py)."""

from __future__ import annotations

import math

import pytest

from gecomp.core.diagnostics import CompileError
from gecomp.simulator.collectives import Interconnect, collective_cost, load_interconnect, transfer_cost
from gecomp.simulator.hardware import load_preset

LINK = Interconnect(mesh_size=4, link_gb_s=30.0, link_latency_us=2.0, bridge_gb_s=32.0, bridge_latency_us=5.0)
B = 30.0e3  # bytes per us
A = 2.0
S = 8 * 2**20


def with_algorithm(name):
    return Interconnect(**{**LINK.__dict__, "algorithm": name})


@pytest.mark.parametrize("n", [2, 4])
def test_ring_all_reduce(n):
    cost = collective_cost("all_reduce", tuple(range(n)), S, with_algorithm("ring"))
    assert cost.time_us == pytest.approx(2 * (n - 1) * (A + S / (n * B)))
    assert cost.steps == 2 * (n - 1)
    # Every ring link carried 2 (N-1)/N S bytes.
    assert cost.link_bytes[(0, 1)] == pytest.approx(2 * (n - 1) / n * S)
    assert len(cost.link_bytes) == n


@pytest.mark.parametrize("n", [2, 4])
def test_halving_doubling_all_reduce(n):
    cost = collective_cost("all_reduce", tuple(range(n)), S, with_algorithm("halving_doubling"))
    assert cost.time_us == pytest.approx(2 * math.log2(n) * A + 2 * (n - 1) / n * S / B)
    assert cost.steps == 2 * int(math.log2(n))


def test_mesh_all_reduce_uses_every_link_at_once():
    cost = collective_cost("all_reduce", (0, 1, 2, 3), S, LINK)
    assert cost.algorithm == "mesh"
    assert cost.time_us == pytest.approx(2 * (A + S / (4 * B)))
    assert len(cost.link_bytes) == 12


def test_all_gather_and_reduce_scatter_are_halves_of_all_reduce():
    ring = with_algorithm("ring")
    gather = collective_cost("all_gather", (0, 1, 2, 3), S / 4, ring)
    scatter = collective_cost("reduce_scatter", (0, 1, 2, 3), S, ring)
    whole = collective_cost("all_reduce", (0, 1, 2, 3), S, ring)
    assert gather.time_us == pytest.approx(3 * (A + S / (4 * B)))
    assert gather.time_us + scatter.time_us == pytest.approx(whole.time_us)


def test_eight_devices_ring_crosses_the_bridge_on_every_step():
    cost = collective_cost("all_reduce", tuple(range(8)), S, with_algorithm("ring"))
    assert cost.algorithm == "ring"
    # The ring crosses the bridge twice (3->4 and 7->0): each step waits for it.
    bridge = 32.0e3
    assert cost.time_us == pytest.approx(2 * 7 * (5.0 + S / (8 * bridge)))


def test_eight_devices_all_reduce_is_hierarchical():
    """Two meshes of 4: reduce-scatter in each mesh, one exchange of each quarter
    with the other mesh's counterpart (4 transfers share the bridge each way),
    all-gather in each mesh."""
    cost = collective_cost("all_reduce", tuple(range(8)), S, LINK)
    assert cost.algorithm == "hierarchical"
    bridge = 32.0e3
    assert cost.time_us == pytest.approx(2 * (A + S / (4 * B)) + 5.0 + S / bridge)
    assert cost.steps == 3
    assert cost.link_bytes[(0, 4)] == pytest.approx(S / 4) and cost.link_bytes[(4, 0)] == pytest.approx(S / 4)
    assert cost.link_bytes[(0, 1)] == pytest.approx(2 * S / 4)
    ring = collective_cost("all_reduce", tuple(range(8)), S, with_algorithm("ring"))
    assert cost.time_us < ring.time_us
    # Uneven groups are refused.
    with pytest.raises(CompileError, match="equal parts of full meshes"):
        collective_cost("all_reduce", (0, 1, 2, 4), S, with_algorithm("hierarchical"))


def test_eight_devices_reduce_scatter_and_all_gather_are_hierarchical():
    """Reduce-scatter: in each mesh (a quarter to each peer), then each device sends
    its counterpart the half of its quarter the counterpart keeps (4 pairs share the
    bridge each way). All-gather: the same backwards. Together they cost what the
    hierarchical all_reduce costs but for the bridge step, done in two halves (one
    more bridge latency)."""
    bridge = 32.0e3
    scatter = collective_cost("reduce_scatter", tuple(range(8)), S, LINK)
    assert scatter.algorithm == "hierarchical" and scatter.steps == 2
    assert scatter.time_us == pytest.approx(A + S / (4 * B) + 5.0 + S / (2 * bridge))
    assert scatter.link_bytes[(0, 4)] == pytest.approx(S / 8) and scatter.link_bytes[(0, 1)] == pytest.approx(S / 4)
    gather = collective_cost("all_gather", tuple(range(8)), S / 8, LINK)
    assert gather.algorithm == "hierarchical"
    assert gather.time_us == pytest.approx(scatter.time_us)
    assert gather.link_bytes[(0, 4)] == pytest.approx(S / 8) and gather.link_bytes[(0, 1)] == pytest.approx(S / 4)
    reduce = collective_cost("all_reduce", tuple(range(8)), S, LINK)
    assert scatter.time_us + gather.time_us == pytest.approx(reduce.time_us + 5.0)
    for kind, nbytes in (("reduce_scatter", S), ("all_gather", S / 8)):
        assert scatter.time_us < collective_cost(kind, tuple(range(8)), nbytes, with_algorithm("ring")).time_us


def test_send_is_latency_plus_bytes_over_bandwidth():
    assert transfer_cost(0, 1, S, LINK).time_us == pytest.approx(A + S / B)


def test_preset_has_the_interconnect():
    link = load_interconnect(load_preset("ascend910"))
    assert link.mesh_size == 4 and link.link_gb_s == 30.0
