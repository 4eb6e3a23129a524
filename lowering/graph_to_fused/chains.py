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
from .graph import is_transparent, other_operand, shape, sole_user, splat_constant


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
    any activation), one activation, or transparent ops."""
    e = Epilogue(start)
    while (user := sole_user(e.value)) is not None:
        if not _absorb(e, user, bias_rule, allow_act):
            break
        e.ops.append(user)
        e.value = user.results[0]
    return e


def _absorb(e: Epilogue, user: Operation, bias_rule: BiasRule, allow_act: bool) -> bool:
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
    act = activation_name(user)
    if act is not None and allow_act and e.act == "none":
        e.act = act
        return True
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
