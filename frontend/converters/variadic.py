"""Sum and Mean: elementwise over one or more inputs, with numpy (multidirectional)
broadcasting, folded pairwise into `ge.add`; Mean divides the sum once by the
number of inputs, as ONNX's reference does."""

from __future__ import annotations

from ...dialects.ge import AddOp, IdentityOp
from .context import NodeContext
from .registry import converts


@converts("Sum", "Mean")
def sum_or_mean(c: NodeContext):
    tensors = c.inputs()
    if not tensors:
        raise c.fail("needs at least one input")
    if len(tensors) == 1:
        return c.g.op(IdentityOp, tensors[0])
    total = tensors[0]
    for t in tensors[1:]:
        total = c.g.op(AddOp, total, t)
    return total if c.node.op_type == "Sum" else total / float(len(tensors))
