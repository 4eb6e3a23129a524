"""The fusion graph answers `peak_bytes((a, b))`, `schedule((a, b))` and
`consumers` from what it knows of its current nodes (computed once per state of
the graph, issue 35): the answers for a candidate merge must be those of the
graph after that merge, and a merge must leave nothing stale behind."""

from __future__ import annotations

from pathlib import Path

from gecomp.dialects.context import make_context
from gecomp.core.parsing import parse_module
from gecomp.core.signature import main_function
from gecomp.lowering.graph_to_fused.fusion_graph import FusionGraph

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "resnet_block.mlir"


def graph() -> FusionGraph:
    module = parse_module(make_context(), EXAMPLE.read_text(), str(EXAMPLE))
    return FusionGraph(main_function(module).body.block)


def order(g: FusionGraph, schedule) -> list[list[int]]:
    """A schedule by the ops' places in the block (graphs parsed apart share no op)."""
    return [sorted(g.index[op] for op in ops) for ops in schedule]


def test_a_candidate_merge_is_answered_as_the_merged_graph_answers():
    probe = graph()
    pairs = [(a, b) for a, b, _ in probe.candidates(True) if not probe.creates_cycle(a, b)]
    assert len(pairs) > 3
    for a, b in pairs:
        merged = graph()
        keep = merged.merge(a, b)
        assert keep == min((a, b), key=probe.position)
        assert probe.peak_bytes((keep, b if keep == a else a)) == merged.peak_bytes()
        assert order(probe, probe.schedule((keep, b if keep == a else a))) == order(merged, merged.schedule())


def test_merges_leave_no_stale_answer():
    """Merge along the candidates while the graph is asked between merges: every
    answer equals a fresh graph's with the same merges."""
    g, merges = graph(), []
    for _ in range(6):
        g.peak_bytes()
        {n: g.consumers(n) for n in g.nodes()}
        pair = next(((a, b) for a, b, _ in g.candidates(True) if not g.creates_cycle(a, b)), None)
        if pair is None:
            break
        g.merge(*pair)
        merges.append(pair)
        fresh = graph()
        for a, b in merges:
            fresh.merge(a, b)
        assert g.peak_bytes() == fresh.peak_bytes()
        assert order(g, g.schedule()) == order(fresh, fresh.schedule())
        assert {n: g.consumers(n) for n in g.nodes()} == {n: fresh.consumers(n) for n in fresh.nodes()}
    assert len(merges) >= 3
