"""FusionGraph remembers, per value, whether it is a splat constant (`make_part`
leaves those out of a part's inputs): every part it makes must equal the part
`make_part` makes without the memo, whichever parts were asked before, and two
graphs (two blocks, or the same block after its constants changed) never share
the memo."""

from __future__ import annotations

import itertools

from gecomp.core.parsing import parse_module
from gecomp.core.signature import main_function
from gecomp.dialects.context import make_context
from gecomp.lowering.graph_to_fused.fusion_graph import FusionGraph, make_part

BODY = """
  %two = ge.const dense<2.0> : tensor<f16>
  %row = ge.const dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf16>
  %same = ge.const dense<0.5> : tensor<4xf16>
  %0 = ge.mul %x, %two : (tensor<8x4xf16>, tensor<f16>) -> tensor<8x4xf16>
  %1 = ge.add %0, %row : (tensor<8x4xf16>, tensor<4xf16>) -> tensor<8x4xf16>
  %2 = ge.mul %1, %same : (tensor<8x4xf16>, tensor<4xf16>) -> tensor<8x4xf16>
  %3 = ge.relu %2 : (tensor<8x4xf16>) -> tensor<8x4xf16>
  %4 = ge.add %3, %two : (tensor<8x4xf16>, tensor<f16>) -> tensor<8x4xf16>
  func.return %4 : tensor<8x4xf16>"""


def _block():
    text = f"func.func @main(%x: tensor<8x4xf16>) -> tensor<8x4xf16> {{\n{BODY}\n}}"
    return main_function(parse_module(make_context(), text, "<test>")).body.block


def test_parts_equal_those_made_without_the_memo():
    block = _block()
    compute = [op for op in block.ops if op.name not in ("ge.const", "func.return")]
    subsets = [list(c) for n in range(1, len(compute) + 1) for c in itertools.combinations(compute, n)]
    for order in (subsets, list(reversed(subsets))):  # whatever was asked first
        graph = FusionGraph(block)
        for ops in order:
            assert graph.part_of(ops) == make_part(ops), [op.name for op in ops]
    # the splat constants are no input, the non-splat row is
    whole = FusionGraph(block).part_of(compute)
    assert [v.name_hint for v in whole.inputs] == ["x", "row"]


def test_a_new_graph_sees_changed_constants():
    block = _block()
    add = next(op for op in block.ops if op.name == "ge.add")
    before = FusionGraph(block).part_of([add])
    assert len(before.inputs) == 2  # the sum and the row
    # make the row a splat: a graph built after the change must not remember the old answer
    row = next(op for op in block.ops if op.name == "ge.const" and op.results[0].name_hint == "row")
    same = next(op for op in block.ops if op.name == "ge.const" and op.results[0].name_hint == "same")
    row.properties["value"] = same.properties["value"]
    after = FusionGraph(block).part_of([add])
    assert len(after.inputs) == 1 and after == make_part([add])
