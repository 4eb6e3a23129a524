"""A user fusion pattern, loaded without editing gecomp:

    ge-opt examples/patterns/quick_gelu.mlir --load-patterns examples/patterns/quick_gelu.py \
        -p 'ge-graph-opt,ge-fuse' --pass-statistics
    ge-sim examples/patterns/quick_gelu.mlir --load-patterns examples/patterns/quick_gelu.py \
        --pipeline ge-compile --check

QuickGELU, `x * sigmoid(1.702 * x)` (the activation of OpenAI's CLIP), has no
named kernel. This pattern finds it, with the matmul that produces x when there
is one, and makes it one `fused.group` kernel: the cube computes x, the vector
unit applies the activation to each tile on chip before it is written back. A
pattern only says what it matches and what to build; the framework checks the
match (no intermediate used elsewhere, no cycle) and rewrites the graph.
"""

from gecomp.dialects import ge
from gecomp.lowering.graph_to_fused.graph import both_orders, producer, sole_user, splat_constant
from gecomp.lowering.graph_to_fused.grouping import build_group
from gecomp.lowering.graph_to_fused.pattern import FusionPattern, Match

QUICK_GELU_SLOPE = 1.702


class QuickGeluPattern(FusionPattern):
    """`x * sigmoid(1.702 * x)`, with the matmul producing x -> one `fused.group`."""

    name = "quick-gelu"
    anchors = (ge.MulOp,)

    def match(self, op: ge.MulOp) -> Match | None:
        for x, gate in both_orders(op):
            sigmoid = producer(gate, ge.SigmoidOp)
            scale = producer(sigmoid.input, ge.MulOp) if sigmoid is not None else None
            if scale is None or not self._scales(scale, x):
                continue
            ops = [*self._matmul_making(x, {scale, op}), scale, sigmoid, op]
            return Match(ops, [op.result], lambda ops=ops: [build_group(ops)[0]])
        return None

    @staticmethod
    def _matmul_making(x, readers: set) -> list:
        """The matmul computing x (and the format change of its result, which the
        layout pass puts after a cube op), when x is read by the activation only:
        the activation is then that matmul's epilogue."""
        if {use.operation for use in x.uses} != readers:
            return []
        change = producer(x, ge.TransDataOp)
        source = change.input if change is not None and sole_user(change.input) is change else x
        matmul = producer(source, ge.MatmulOp)
        if matmul is None:
            return []
        return [matmul, change] if change is not None else [matmul]

    @staticmethod
    def _scales(scale: ge.MulOp, x) -> bool:
        """`scale` is `x * 1.702` (either way round), used only by the sigmoid."""
        if sole_user(scale.result) is None:
            return False
        return any(
            a is x and splat_constant(b) is not None and abs(splat_constant(b) - QUICK_GELU_SLOPE) < 1e-3
            for a, b in both_orders(scale)
        )
