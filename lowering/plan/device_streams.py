"""A partitioned module's device functions lowered to streams, as GE's stream
allocator does it: HCCL gets a stream of its own.

* compute tasks: maximal runs of compute ops in program order, cut where an op
  needs a communication result the run does not already wait for (so work that
  does not depend on a collective runs while it is in flight). Each run is a
  module of its own (`segment_module`), timed by the caller's `compute_time`:
  `lowering/compute_time.py` compiles it with `ge-compile` and runs it on the
  chip simulator (`simulator/npu`), runs of identical structure once.
* communication tasks: the collectives and sends / receives, in program order;
  collectives of one kind in a row join one task up to a bucket size (GE's
  bucketing of small all-reduces: one set of link latencies for all of them).
* a concatenation of collectives' results (the chunks of `ge-partition{chunks=K}`)
  is no task: the collectives write their parts in place; nor is a contiguous
  slice (a block of rows) of a value the run does not compute itself: the run
  reads the rows at their offset.

`simulate_devices` then places the tasks in time on the preset's server
(`simulator/multi_device.py`).
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import func
from xdsl.dialects.builtin import AnyFloat, FunctionType, ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue

from ...dialects import ge
from ...simulator.devices import device_functions
from ...simulator.multi_device import MultiDeviceReport, Task, schedule_devices, value_bytes

COMMUNICATION = (ge.CollectiveOp, ge.SendOp, ge.RecvOp)
BUCKET_BYTES = 16 << 20
"""Collectives in a row join one task up to this many bytes ([EST] the order of
the gradient buckets frameworks hand HCCL; 0 turns bucketing off)."""


def device_tasks(function: func.FuncOp, device: int, bucket_bytes: int = 0) -> list[Task]:
    """The function's compute runs and communication ops, in program order, with
    the dependencies between them (on one device). A run ends where an op needs a
    communication result the run does not already wait for, so the ops before it
    run while that communication is in flight. Collectives of one kind and group
    that follow each other with no compute between join one task while their
    bytes stay within `bucket_bytes` (GE buckets small all-reduces: one set of
    link latencies for all of them)."""
    tasks: list[Task] = []
    producer: dict[SSAValue, Task] = {}
    current: Task | None = None

    def close() -> None:
        nonlocal current
        current = None

    for op in function.body.block.ops:
        if isinstance(op, (func.ReturnOp, ge.ConstOp)):
            continue
        sources = [producer[v] for v in op.operands if v in producer]
        if is_contiguous_slice(op) and (current is None or current not in sources):
            # A run reads a block of rows of a value another task wrote (or an
            # input) at its byte offset: a view, no kernel (GE gives such a slice
            # its input's address plus the offset). The run that reads it takes
            # the rows as its input (`segment_module`).
            if sources:
                producer[op.result] = sources[0]
            continue
        if _placed_by_collectives(op, sources):
            # The collectives write their parts into the concatenation in place
            # (HCCL's output address): no kernel. Its readers wait for the last part
            # (a device's communication stream runs its tasks in order).
            producer[op.result] = max(sources, key=tasks.index)
            continue
        if isinstance(op, COMMUNICATION):
            if current is not None and current in sources:
                close()
            last = tasks[-1] if tasks else None
            if last is not None and _joins_bucket(last, op, bucket_bytes):
                last.ops.append(op)
                last.needs.extend(s for s in sources if s not in last.needs)
                task = last
            else:
                task = Task(device, "comm", [op], needs=list(dict.fromkeys(sources)))
                tasks.append(task)
        else:
            new_dependency = [s for s in sources if s.kind == "comm" and s not in current.needs] if current else []
            if new_dependency:
                close()
            if current is None:
                current = Task(device, "compute", [])
                tasks.append(current)
            current.ops.append(op)
            current.needs.extend(s for s in sources if s is not current and s not in current.needs)
            task = current
        for r in op.results:
            producer[r] = task
    return tasks


def is_contiguous_slice(op: Operation) -> bool:
    """A unit-step slice whose elements are one contiguous run of its input's
    row-major bytes: only dims of size 1 before the first dim it cuts, every dim
    after it whole."""
    if not isinstance(op, ge.SliceOp):
        return False
    shape = op.input.type.get_shape()
    starts, ends, steps = op.attr_value("starts"), op.attr_value("ends"), op.attr_value("steps")
    if any(step != 1 for step in steps):
        return False
    cut = [d for d, (start, end, size) in enumerate(zip(starts, ends, shape)) if (start, end) != (0, size)]
    if not cut:
        return True
    first = cut[0]
    return all(d == first for d in cut) and all(shape[d] == 1 for d in range(first))


def _placed_by_collectives(op: Operation, sources: list[Task]) -> bool:
    """A concatenation of collectives' results along a dim with no dims before it
    but of size 1 (each part contiguous in the result)."""
    if not isinstance(op, ge.ConcatOp) or len(sources) != len(op.operands):
        return False
    axis = op.attr_value("axis") % len(op.result.type.get_shape())
    leading = op.result.type.get_shape()[:axis]
    return all(d == 1 for d in leading) and all(t.kind == "comm" for t in sources)


def _joins_bucket(task: Task, op: Operation, bucket_bytes: int) -> bool:
    first = task.ops[0]
    return (
        task.kind == "comm"
        and isinstance(op, ge.CollectiveOp)
        and isinstance(first, ge.CollectiveOp)
        and op.name == first.name
        and op.attr_values() == first.attr_values()
        and task.nbytes + value_bytes(op.operands[0]) <= bucket_bytes
    )


def segment_module(task: Task) -> ModuleOp:
    """A compute task as a module of its own: @main takes what the run reads from
    outside, returns what others read from it. Constants are copied in (non-splat
    ones as seeded random values of their type: the time does not depend on them)."""
    inside = {r for op in task.ops for r in op.results}
    inputs: list[SSAValue] = []
    for op in task.ops:
        for v in op.operands:
            if v not in inside and not isinstance(v.owner, ge.ConstOp) and v not in inputs:
                inputs.append(v)
    users_outside = [
        r for op in task.ops for r in op.results if any(u.operation not in task.ops for u in r.uses)
    ]
    block = Block(arg_types=[v.type for v in inputs])
    mapping: dict[SSAValue, SSAValue] = dict(zip(inputs, block.args))
    for op in task.ops:
        for v in op.operands:
            if v not in mapping and isinstance(v.owner, ge.ConstOp):
                constant = _timing_constant(v.owner, seed=len(block.ops))
                block.add_op(constant)
                mapping[v] = constant.result
        new = op.clone(value_mapper=mapping)
        block.add_op(new)
        mapping.update(zip(op.results, new.results))
    block.add_op(func.ReturnOp(*(mapping[v] for v in users_outside)))
    # Names do not change the time: without them, runs of the same structure (every
    # micro-batch of a stage, every tensor-parallel device) print alike and are timed once.
    for value in [*block.args, *(r for op in block.ops for r in op.results)]:
        value.name_hint = None
    main = func.FuncOp("main", FunctionType.from_lists([v.type for v in inputs], [v.type for v in users_outside]), Region(block))
    return ModuleOp([main])


def _timing_constant(const: ge.ConstOp, seed: int) -> ge.ConstOp:
    """A constant the run's time is the same with. A non-splat constant (a weight
    slice) becomes random values of its type, seeded by its position in the run:
    two weights must stay two (with one seed, CSE would merge the Q / K / V
    slices' products into one and the run would be timed with a third of its
    work), while every device's run still prints alike. A boolean or integer
    constant (a mask, indices) is kept: its values can change the kernel (a
    causal mask's blocks are skipped, `fused.flash_attention`'s causal)."""
    element = const.result.type.element_type
    if isinstance(const.value, ge.RandomAttr) or const.is_splat() or not isinstance(element, AnyFloat):
        return const.clone()
    return ge.ConstOp.from_value(ge.RandomAttr.normal(seed, 0.0, 0.02), const.result.type)


def simulate_devices(
    module: ModuleOp, compute_time: Callable[[ModuleOp], float], hw: str | None = None, algorithm: str | None = None,
    bucket_bytes: int = BUCKET_BYTES,
) -> MultiDeviceReport:
    """Simulate a partitioned module on its devices: `compute_time` gives a compute
    run's time on one chip (`lowering/compute_time.py` compiles and simulates it),
    the preset `hw`'s links the communication's."""
    per_device = [device_tasks(f, d, bucket_bytes) for d, f in enumerate(device_functions(module))]
    for tasks in per_device:
        for t in tasks:
            if t.kind == "compute":
                t.duration = compute_time(segment_module(t))
    return schedule_devices(per_device, hw, algorithm)
