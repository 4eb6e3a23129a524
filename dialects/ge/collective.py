"""Collective communication ops: the HCCL collectives GE inserts at the cut edges
of a partitioned graph (HcomAllReduce, HcomAllGather, HcomReduceScatter,
HcomAllToAll, HcomBroadcast, HcomSend / HcomReceive).

A partitioned module holds one function per device (see `simulator/devices.py`);
each collective names the devices taking part: `devices` is the group's size and
`group` its device ids (empty: devices 0..devices-1). A device's rank in the
group is its position in the list.

The reference semantics are over a device dimension: `exchange(values, a)` takes
the operand of every rank in rank order and returns every rank's result, so the
meaning of a collective is one numpy function, checked against numpy in the
tests. A single device runs a collective only when its group is that device
alone; otherwise the multi-device interpreter gathers the group's operands and
calls `exchange`.

`ge.send` and `ge.recv` are point to point: `peer` is the other device's id and
`tag` tells apart several messages between the same two devices (a recv takes
the oldest unmatched send with its (source, tag)).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.irdl import irdl_op_definition, operand_def, result_def

from .base import EvaluationError, GEOp, Kind, attr, fail, like, normalize_axis, require_numeric, shape_of

REDUCTIONS = {"sum": np.add, "max": np.maximum}
"""The reductions of all_reduce and reduce_scatter (HCCL's sum and max)."""


class CollectiveOp(GEOp):
    """A group collective: every device of `group` runs it with its own operand."""

    input = operand_def(TensorType)
    result = result_def(TensorType)
    devices = attr(Kind.INT)
    group = attr(Kind.INTS, ())

    @classmethod
    def members(cls, a) -> tuple[int, ...]:
        """The device ids of the group in rank order."""
        return tuple(a.group) if a.group else tuple(range(a.devices))

    @classmethod
    def check_group(cls, a) -> None:
        if a.devices < 1:
            raise fail(f"devices must be 1 or more, got {a.devices}")
        if a.group and len(a.group) != a.devices:
            raise fail(f"group {list(a.group)} must list {a.devices} devices")
        if len(set(cls.members(a))) != a.devices or min(cls.members(a)) < 0:
            raise fail(f"group {list(cls.members(a))} must list distinct device ids 0 or more")

    @classmethod
    def infer(cls, types, a, declared):
        cls.check_group(a)
        (x,) = types
        require_numeric(x)
        return like(x, cls.result_shape(shape_of(x), a))

    @classmethod
    def result_shape(cls, shape: tuple[int, ...], a) -> tuple[int, ...]:
        return shape

    @classmethod
    def exchange(cls, values: Sequence[np.ndarray], a) -> list[np.ndarray]:
        """Every rank's result from every rank's operand (rank order)."""
        raise NotImplementedError

    @classmethod
    def compute(cls, inputs, a, result_types):
        if a.devices != 1:
            raise EvaluationError(
                f"{cls.name} exchanges values between {a.devices} devices: run the module "
                "on all of them (ge-sim --devices)"
            )
        return cls.exchange(inputs, a)[0]


def _reduce(values: Sequence[np.ndarray], reduction: str) -> np.ndarray:
    out = values[0]
    for v in values[1:]:
        out = REDUCTIONS[reduction](out, v)
    return out


def _divisible(shape: tuple[int, ...], axis: int, devices: int, what: str) -> int:
    axis = normalize_axis(axis, len(shape))
    if shape[axis] % devices:
        raise fail(f"{what}: dim {axis} of size {shape[axis]} does not split over {devices} devices")
    return axis


@irdl_op_definition
class AllReduceOp(CollectiveOp):
    """Every rank gets the elementwise reduction (sum or max) of all ranks' operands."""

    name = "ge.all_reduce"
    reduction = attr(Kind.STR, "sum", choices=tuple(REDUCTIONS))

    @classmethod
    def exchange(cls, values, a):
        total = _reduce(values, a.reduction)
        return [total for _ in values]


@irdl_op_definition
class AllGatherOp(CollectiveOp):
    """Every rank gets all ranks' operands concatenated along `axis` in rank order."""

    name = "ge.all_gather"
    axis = attr(Kind.INT, 0)

    @classmethod
    def result_shape(cls, shape, a):
        axis = normalize_axis(a.axis, len(shape))
        return tuple(d * a.devices if i == axis else d for i, d in enumerate(shape))

    @classmethod
    def exchange(cls, values, a):
        whole = np.concatenate(values, axis=a.axis)
        return [whole for _ in values]


@irdl_op_definition
class ReduceScatterOp(CollectiveOp):
    """The reduction of all ranks' operands, split along `axis`: rank r gets part r."""

    name = "ge.reduce_scatter"
    axis = attr(Kind.INT, 0)
    reduction = attr(Kind.STR, "sum", choices=tuple(REDUCTIONS))

    @classmethod
    def result_shape(cls, shape, a):
        axis = _divisible(shape, a.axis, a.devices, cls.name)
        return tuple(d // a.devices if i == axis else d for i, d in enumerate(shape))

    @classmethod
    def exchange(cls, values, a):
        return np.split(_reduce(values, a.reduction), len(values), axis=a.axis)


@irdl_op_definition
class AllToAllOp(CollectiveOp):
    """Rank r splits its operand along `split_axis` into one part per rank and sends
    part j to rank j; it concatenates what it receives along `concat_axis`."""

    name = "ge.all_to_all"
    split_axis = attr(Kind.INT, 0)
    concat_axis = attr(Kind.INT, 0)

    @classmethod
    def result_shape(cls, shape, a):
        split = _divisible(shape, a.split_axis, a.devices, cls.name)
        concat = normalize_axis(a.concat_axis, len(shape), "concat_axis")
        out = list(shape)
        out[split] //= a.devices
        out[concat] *= a.devices
        return tuple(out)

    @classmethod
    def exchange(cls, values, a):
        parts = [np.split(v, len(values), axis=a.split_axis) for v in values]
        return [np.concatenate([parts[src][dst] for src in range(len(values))], axis=a.concat_axis)
                for dst in range(len(values))]


@irdl_op_definition
class BroadcastOp(CollectiveOp):
    """Every rank gets the operand of rank `root` (the others' operands give the shape)."""

    name = "ge.broadcast"
    root = attr(Kind.INT, 0)

    @classmethod
    def infer(cls, types, a, declared):
        if not 0 <= a.root < max(a.devices, 1):
            raise fail(f"root {a.root} is not a rank of a group of {a.devices}")
        return super().infer(types, a, declared)

    @classmethod
    def exchange(cls, values, a):
        return [values[a.root] for _ in values]


class PointToPointOp(GEOp):
    """Half of a message between two devices: `peer` is the other device's id."""

    peer = attr(Kind.INT)
    tag = attr(Kind.INT, 0)

    @classmethod
    def check_peer(cls, a) -> None:
        if a.peer < 0:
            raise fail(f"peer must be a device id 0 or more, got {a.peer}")


@irdl_op_definition
class SendOp(PointToPointOp):
    """Sends its operand to device `peer`; it has no result and does not wait."""

    name = "ge.send"
    input = operand_def(TensorType)

    @classmethod
    def infer(cls, types, a, declared):
        cls.check_peer(a)
        require_numeric(types[0])
        return []

    @classmethod
    def compute(cls, inputs, a, result_types):
        raise EvaluationError("ge.send needs its peer: run the module on all devices (ge-sim --devices)")


@irdl_op_definition
class RecvOp(PointToPointOp):
    """Receives the tensor device `peer` sent with `tag`; its type is the declared one
    and must be the sent tensor's."""

    name = "ge.recv"
    result = result_def(TensorType)

    @classmethod
    def infer(cls, types, a, declared):
        cls.check_peer(a)
        if declared is None:
            raise fail("ge.recv needs its result type")
        return declared[0]

    @classmethod
    def compute(cls, inputs, a, result_types):
        raise EvaluationError("ge.recv needs its peer: run the module on all devices (ge-sim --devices)")


GROUP_COLLECTIVE_OPS = (AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp, BroadcastOp)
COLLECTIVE_OPS = (*GROUP_COLLECTIVE_OPS, SendOp, RecvOp)

__all__ = [op.__name__ for op in COLLECTIVE_OPS] + [
    "CollectiveOp",
    "PointToPointOp",
    "REDUCTIONS",
    "GROUP_COLLECTIVE_OPS",
    "COLLECTIVE_OPS",
]
