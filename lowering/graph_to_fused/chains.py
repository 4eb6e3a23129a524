"""Recognisers for the small chains the named patterns are made of: a cube op's
epilogue (bias, residual, activation), a scale by a constant, an attention mask.

Each step looks at the op using a value and either absorbs it (returning what it
learnt) or declines; walking stops at the first value with more than one user,
so a value needed outside a fusion ends the chain instead of being lost.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from xdsl.ir import Operation, SSAValue

from ...dialects import ge
from ...dialects.fused.base import ACTIVATIONS, INPUT, ActivationStep
from .graph import is_transparent, other_operand, shape, sole_user, splat_constant, users


def broadcasts_to(value: SSAValue, target: tuple[int, ...]) -> bool:
    """`value` broadcasts to `target` without growing it."""
    try:
        return tuple(np.broadcast_shapes(shape(value), target)) == target
    except ValueError:
        return False


def same_element_type(a: SSAValue, b: SSAValue) -> bool:
    return a.type.element_type == b.type.element_type


# ---- activations -------------------------------------------------------------------------


def activation_name(op: Operation | None) -> str | None:
    """The fused ops' name for an activation op (`relu`, `gelu`, `gelu_tanh`,
    `silu`), or None."""
    match op:
        case ge.ReluOp():
            return "relu"
        case ge.SiluOp():
            return "silu"
        case ge.GeluOp():
            return "gelu" if op.attr_value("approximate") == "none" else "gelu_tanh"
    return None


ACTIVATION_FORMS: dict[str, tuple[tuple[ActivationStep, ...], ...]] = {
    name: (steps,) for name, steps in ACTIVATIONS.items() if steps
}
"""Every way a fused activation is written in a graph: its definition
(`ACTIVATIONS`), and the equivalent forms exporters and the importer write."""
ACTIVATION_FORMS["silu"] += (((ge.SigmoidOp, {}, None), (ge.MulOp, {}, INPUT)),)  # x * sigmoid(x)
ACTIVATION_FORMS["relu6"] += (
    ((ge.MinimumOp, {}, 6.0), (ge.MaximumOp, {}, 0.0)),  # Clip with lo <= hi: the order does not matter
    ((ge.ReluOp, {}, None), (ge.MinimumOp, {}, 6.0)),
)
ACTIVATION_FORMS["hard_swish"] += tuple(
    ((scale, {}, c), (ge.AddOp, {}, 0.5), *clamp, (ge.MulOp, {}, INPUT))
    for scale, c in ((ge.MulOp, 1.0 / 6.0), (ge.DivOp, 6.0))
    for clamp in (((ge.MinimumOp, {}, 1.0), (ge.MaximumOp, {}, 0.0)), ((ge.MaximumOp, {}, 0.0), (ge.MinimumOp, {}, 1.0)))
    if (scale, c) != (ge.MulOp, 1.0 / 6.0) or clamp[0][0] is not ge.MinimumOp
)


@dataclass
class ActivationMatch:
    name: str
    ops: list[Operation]
    value: SSAValue  # the activation's result


def match_activation(v: SSAValue) -> ActivationMatch | None:
    """The fused activation computed on `v` by the ops using it, in any of its
    `ACTIVATION_FORMS`, if those ops are all of `v`'s users and each intermediate
    value has no other user (a value needed elsewhere ends the chain). The
    longest match wins: `min(relu(x), 6)` is ReLU6, not a ReLU."""
    found = None
    for name, forms in ACTIVATION_FORMS.items():
        for steps in forms:
            ops = _match_steps(v, steps)
            if ops is not None and (found is None or len(ops) > len(found.ops)):
                found = ActivationMatch(name, ops, ops[-1].results[0])
    return found


def _match_steps(v: SSAValue, steps: tuple[ActivationStep, ...]) -> list[Operation] | None:
    ops: list[Operation] = []
    current = v
    for cls, attrs, second in steps:
        candidates = users(v) if current is v else [sole_user(current)]
        step = next((op for op in candidates if _is_step(op, current, v, cls, attrs, second)), None)
        if step is None:
            return None
        ops.append(step)
        current = step.results[0]
    return ops if set(users(v)) <= set(ops) else None


def _is_step(op: Operation | None, current: SSAValue, v: SSAValue, cls, attrs: dict, second) -> bool:
    if not isinstance(op, cls) or len(op.results) != 1 or shape(op.results[0]) != shape(v):
        return False
    if any(op.attr_value(k) != want for k, want in attrs.items()):
        return False
    if second is None:
        return len(op.operands) == 1 and op.operands[0] is current
    if isinstance(op, ge.DivOp) and op.operands[0] is not current:
        return False
    other = other_operand(op, current)
    if other is None:
        return False
    if second == INPUT:
        return other is v
    c = splat_constant(other)
    return c is not None and bool(np.isclose(c, second, rtol=1e-6, atol=0.0))


# ---- cube epilogues --------------------------------------------------------------------------

BiasRule = Callable[[Operation, SSAValue], SSAValue | None]
"""Given an add-like op using the cube result `v`, the bias it adds, or None."""


def matmul_bias(op: Operation, v: SSAValue) -> SSAValue | None:
    """A per-column bias of an (M, N) product: `ge.add` of shape (N) or (1, N), or
    `ge.bias_add` on the last axis."""
    n = shape(v)[-1]
    if isinstance(op, ge.BiasAddOp):
        rank = len(shape(v))
        return op.bias if op.input is v and op.attr_value("axis") % rank == rank - 1 else None
    if isinstance(op, ge.AddOp):
        other = other_operand(op, v)
        if other is not None and shape(other) in ((n,), (1, n)):
            return other
    return None


def conv_bias(op: Operation, v: SSAValue) -> SSAValue | None:
    """A per-channel bias of an NCHW convolution: `ge.bias_add` on axis 1, or
    `ge.add` of shape (O, 1, 1) or (1, O, 1, 1) (as BN folding leaves it)."""
    channels = shape(v)[1]
    if isinstance(op, ge.BiasAddOp):
        return op.bias if op.input is v and op.attr_value("axis") % 4 == 1 else None
    if isinstance(op, ge.AddOp):
        other = other_operand(op, v)
        if other is not None and shape(other) in ((channels, 1, 1), (1, channels, 1, 1)):
            return other
    return None


@dataclass
class Epilogue:
    """What follows a cube op: `act(result + bias + residual)`."""

    value: SSAValue
    ops: list[Operation] = field(default_factory=list)
    bias: SSAValue | None = None
    residual: SSAValue | None = None
    act: str = "none"

    @property
    def fuses_something(self) -> bool:
        """Anything absorbed: an add, the activation, or a transparent op (a
        dropout, or the format change back to ND the cube writes directly)."""
        return bool(self.ops)


def walk_epilogue(start: SSAValue, bias_rule: BiasRule, allow_act: bool = True) -> Epilogue:
    """Follows single users of `start` while they are bias / residual adds (before
    any activation), one activation (`match_activation`: possibly several ops, as
    SiLU written `x * sigmoid(x)` reads its input twice), or transparent ops."""
    e = Epilogue(start)
    while True:
        act = match_activation(e.value) if allow_act and e.act == "none" else None
        if act is not None:
            e.act = act.name
            e.ops += act.ops
            e.value = act.value
            continue
        user = sole_user(e.value)
        if user is None or not _absorb(e, user, bias_rule):
            return e
        e.ops.append(user)
        e.value = user.results[0]


def _absorb(e: Epilogue, user: Operation, bias_rule: BiasRule) -> bool:
    v = e.value
    if is_transparent(user):
        return True
    if isinstance(user, ge.AddOp | ge.BiasAddOp) and e.act == "none":
        bias = bias_rule(user, v)
        if bias is not None and e.bias is None and same_element_type(bias, v):
            e.bias = bias
            return True
        other = other_operand(user, v) if isinstance(user, ge.AddOp) else None
        if other is not None and e.residual is None and broadcasts_to(other, shape(v)):
            e.residual = other
            return True
        return False
    return False


# ---- attention pieces -------------------------------------------------------------------------


@dataclass
class ScaleStep:
    op: Operation
    scale: float


def scale_step(user: Operation | None, v: SSAValue) -> ScaleStep | None:
    """`v * c` or `v / c` with a splat constant `c` that keeps `v`'s shape."""
    if not isinstance(user, ge.MulOp | ge.DivOp) or shape(user.results[0]) != shape(v):
        return None
    other = other_operand(user, v)
    c = None if other is None else splat_constant(other)
    if c is None:
        return None
    if isinstance(user, ge.MulOp):
        return ScaleStep(user, c)
    if user.lhs is v and c != 0.0:
        return ScaleStep(user, 1.0 / c)
    return None


@dataclass
class MaskStep:
    op: Operation
    mask: SSAValue
    mask_value: float


def mask_step(user: Operation | None, v: SSAValue) -> MaskStep | None:
    """`where(mask, v, fill)` with a splat `fill` (i1 mask), or `v + mask` (float
    mask), keeping `v`'s shape."""
    if user is None or not user.results or shape(user.results[0]) != shape(v):
        return None
    if isinstance(user, ge.WhereOp) and user.x is v and user.condition is not v:
        fill = splat_constant(user.y)
        if fill is not None:
            return MaskStep(user, user.condition, fill)
    if isinstance(user, ge.AddOp):
        other = other_operand(user, v)
        if other is not None and same_element_type(other, v) and broadcasts_to(other, shape(v)):
            return MaskStep(user, other, 0.0)
    return None


def transparent_tail(v: SSAValue) -> tuple[SSAValue, list[Operation], float]:
    """Follows single-use transparent ops after `v`: (last value, ops, dropout ratio)."""
    ops, ratio = [], 0.0
    while is_transparent(user := sole_user(v)):
        if isinstance(user, ge.DropoutOp):
            ratio = user.attr_value("ratio")
        ops.append(user)
        v = user.results[0]
    return v, ops, ratio
