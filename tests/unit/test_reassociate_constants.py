"""ge-simplify's ReassociateConstants: (x + c1) + c2 -> x + (c1 + c2) (and *), which
ge-constant-fold then makes one op, as BERT's embeddings need (word + token type
+ position rows)."""

from __future__ import annotations

from gecomp.dialects.context import make_context
from gecomp.core.parsing import parse_module, verify_module
from gecomp.core.passes import parse_pass_pipeline, run_pipeline
from gecomp.core.signature import input_specs, main_function, random_inputs
from gecomp.simulator.compare import precision_floor, worst_mismatch
from gecomp.simulator.reference import run_reference

CHAIN = """
func.func @main(%x: tensor<4x8xf32>, %y: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %c1 = ge.const #ge.random<normal, seed = 3, mean = 0.0, std = 1.0> : tensor<4x8xf32>
  %c2 = ge.const dense<[0.25, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]> : tensor<8xf32>
  %c3 = ge.const dense<1.5> : tensor<1x8xf32>
  %a = ge.add %c1, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %b = ge.add %c2, %a : (tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %m = ge.mul %x, %c3 : (tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
  %n = ge.mul %m, %c2 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %s = ge.add %y, %c2 : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %t = ge.add %s, %c1 : (tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %u = ge.add %s, %t : (tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %b, %n, %u : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
"""


def compiled(pipeline: str):
    module = parse_module(make_context(), CHAIN, "chain.mlir")
    run_pipeline(parse_pass_pipeline(pipeline), make_context(), module)
    verify_module(module)
    return module


def ops(module, name: str) -> int:
    return sum(1 for op in module.walk() if op.name == name)


def test_constant_chains_become_one_op_and_keep_the_numbers():
    before, after = compiled("cse"), compiled("ge-graph-opt")
    # (c1 + x) + c2 and (x * c3) * c2 are one op each; s + c1 is not re-associated
    # (s has another use: the chain would not get shorter).
    assert ops(before, "ge.add") == 5 and ops(before, "ge.mul") == 2
    assert ops(after, "ge.add") == 4 and ops(after, "ge.mul") == 1
    inputs = random_inputs(input_specs(main_function(before)), 0)
    floor = precision_floor(before)
    for i, (e, a) in enumerate(zip(run_reference(before, inputs), run_reference(after, inputs), strict=True)):
        mismatch = worst_mismatch(f"result{i}", e, a, floor)
        assert mismatch is None or mismatch.ratio <= 1.0, str(mismatch)
