"""Which graph ops the NPU lowering (`convert.py`) runs as kernels of their own,
and which it turns into views of another op's buffer: the one predicate the
lowering follows and the form choices ask (`split_k.FormChoicePass`: whether a
kernel will start after a barrier of its merged kernel)."""

from __future__ import annotations

from xdsl.ir import Operation

from ...dialects import ge
from ...dialects.ge.formats import Format, format_of, same_image

ALIASING_OPS = (ge.IdentityOp, ge.DropoutOp)
"""Ops whose result is their input's buffer."""


def moves_nothing(op) -> bool:
    """A `ge.transdata` between two formats that lay its tensor out alike
    (`same_image`: a pooled NC1HWC0 feature map into ND before its classifier):
    its result is a view of its input's buffer, not a kernel's copy."""
    if not isinstance(op, ge.TransDataOp):
        return False
    t = op.input.type
    return same_image(t.get_shape(), format_of(t), format_of(op.result.type), t.element_type)


def is_view(op: Operation) -> bool:
    """An ND reshape or a conversion that moves nothing: a GM view, no kernel."""
    nd = isinstance(op, ge.ReshapeOp) and all(format_of(v.type) == Format.ND for v in (op.input, op.result))
    return nd or moves_nothing(op)


def launches_kernel(op: Operation) -> bool:
    """Whether the lowering runs `op` as a kernel (constants, aliases and views it
    does not; `func.return` is the function's end)."""
    return not (isinstance(op, (ge.ConstOp, *ALIASING_OPS)) or op.name == "func.return" or is_view(op))


def kernel_before(op: Operation) -> bool:
    """Whether some op before `op` in its block launches a kernel: in a merged
    kernel (npu-merge-launches), `op`'s kernel then starts after a barrier."""
    block = op.parent_block()
    if block is None:
        return False
    for other in block.ops:
        if other is op:
            return False
        if launches_kernel(other):
            return True
    return False
