"""Multi-device modules and their reference interpreter.

A module partitioned for N devices (by `ge-partition`, or written by hand) is
`builtin.module attributes {ge.devices = N}` holding one `func.func @device<k>`
per device, marked `ge.device = k`. Every device function takes the inputs of
the single-device `@main` (the host hands each device the whole inputs; a device
slices the part it needs) and returns the outputs it holds: all of them under
data and tensor parallelism, only on the last stage under pipeline parallelism.

`run_devices` runs the N functions as N coroutines, one per device, each walking
its ops in order with the ops' own reference semantics. A collective suspends its
device until every member of its group has reached a collective; the group's
operands then go through the op's `exchange` (one numpy function over the device
dimension) and each member resumes with its own result. `ge.send` posts its
value and continues; `ge.recv` waits for the matching post. When every device is
waiting and none can continue, that is a deadlock, reported with each device's
waiting op rather than a hang.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Generator, Sequence

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.ir import Operation
from xdsl.traits import IsTerminator

from ..core import dtypes
from ..core.diagnostics import CompileError, location_of, op_error
from ..dialects.ge import CollectiveOp, RecvOp, SendOp

DEVICES_ATTR = "ge.devices"
DEVICE_ATTR = "ge.device"


def device_count(module: ModuleOp) -> int | None:
    """N for a module partitioned for N devices, None for a single-device module."""
    value = module.attributes.get(DEVICES_ATTR)
    return value.value.data if isinstance(value, IntegerAttr) else None


def device_functions(module: ModuleOp) -> list[func.FuncOp]:
    """The device functions in device order, checked: one per device 0..N-1."""
    count = device_count(module)
    if count is None:
        raise CompileError("the module is not partitioned: it has no 'ge.devices' attribute", module)
    found: dict[int, func.FuncOp] = {}
    for op in module.ops:
        if isinstance(op, func.FuncOp):
            mark = op.attributes.get(DEVICE_ATTR)
            if not isinstance(mark, IntegerAttr):
                raise CompileError(f"@{op.sym_name.data} has no 'ge.device' attribute", op)
            device = mark.value.data
            if not 0 <= device < count or device in found:
                raise CompileError(f"@{op.sym_name.data}: ge.device = {device} is out of range or repeated", op)
            found[device] = op
    missing = [d for d in range(count) if d not in found]
    if missing:
        raise CompileError(f"the module is partitioned for {count} devices but has no function for device {missing[0]}", module)
    return [found[d] for d in range(count)]


Program = Generator[tuple[Operation, list[np.ndarray]], list[np.ndarray], list[np.ndarray]]


def _program(function: func.FuncOp, args: Sequence[np.ndarray]) -> Program:
    """One device's walk over its ops; yields at every communication op."""
    block = function.body.block
    env = dict(zip(block.args, args, strict=True))
    for op in block.ops:
        inputs = [env[v] for v in op.operands]
        if op.has_trait(IsTerminator):
            return inputs
        if isinstance(op, (CollectiveOp, SendOp, RecvOp)):
            outputs = yield op, inputs
        else:
            evaluate = getattr(op, "evaluate", None)
            if evaluate is None:
                raise op_error(op, "cannot be run by the reference interpreter")
            outputs = evaluate(inputs)
        env.update(zip(op.results, outputs, strict=True))
    raise CompileError("device function has no terminator", function)


class _Run:
    """The scheduler: advances devices until each waits or finishes, then matches
    the waiting ones."""

    def __init__(self, functions: Sequence[func.FuncOp], inputs: Sequence[np.ndarray]):
        self.functions = functions
        self.programs = [_program(f, list(inputs)) for f in functions]
        self.waiting: dict[int, tuple[Operation, list[np.ndarray]]] = {}
        self.results: dict[int, list[np.ndarray]] = {}
        self.mailbox: dict[tuple[int, int, int], deque[np.ndarray]] = defaultdict(deque)

    def run(self) -> list[list[np.ndarray]]:
        for device in range(len(self.programs)):
            self._advance(device, None)
        while self.waiting:
            if not (self._deliver_messages() or self._complete_collective()):
                raise CompileError("the devices deadlock: " + "; ".join(
                    f"device {d} waits in {op.name} at {_where(op)}" for d, (op, _) in sorted(self.waiting.items())
                ))
        return [self.results[d] for d in range(len(self.programs))]

    def _advance(self, device: int, value: list[np.ndarray] | None) -> None:
        """Resume `device` with `value` until it waits on a peer or returns."""
        program = self.programs[device]
        try:
            while True:
                op, inputs = program.send(value) if value is not None else next(program)
                if isinstance(op, SendOp):
                    self.mailbox[(device, op.attr_value("peer"), op.attr_value("tag"))].append(inputs[0])
                    value = []
                    continue
                self.waiting[device] = (op, inputs)
                return
        except StopIteration as done:
            self.results[device] = done.value

    def _deliver_messages(self) -> bool:
        for device, (op, _) in list(self.waiting.items()):
            if not isinstance(op, RecvOp):
                continue
            queue = self.mailbox[(op.attr_value("peer"), device, op.attr_value("tag"))]
            if queue:
                value = queue.popleft()
                declared = op.result_types[0]
                if value.shape != tuple(declared.get_shape()):
                    raise op_error(op, f"received a tensor of shape {value.shape}, declared {declared}")
                del self.waiting[device]
                self._advance(device, [value])
                return True
        return False

    def _complete_collective(self) -> bool:
        for device, (op, _) in sorted(self.waiting.items()):
            if not isinstance(op, CollectiveOp):
                continue
            members = op.members(op.attr_values())
            if device not in members:
                raise op_error(op, f"device {device} runs a collective of group {list(members)} it is not in")
            if not all(m in self.waiting for m in members):
                continue
            ops = [self.waiting[m][0] for m in members]
            self._check_same(ops, members)
            values = [self.waiting[m][1][0] for m in members]
            outputs = _exchange(op, values)
            for member, output in zip(members, outputs):
                del self.waiting[member]
            for member, output in zip(members, outputs):
                self._advance(member, [output])
            return True
        return False

    @staticmethod
    def _check_same(ops: list[Operation], members: Sequence[int]) -> None:
        first = ops[0]
        for member, other in zip(members, ops):
            if other.name != first.name or other.attr_values() != first.attr_values() or other.operand_types != first.operand_types:
                raise op_error(
                    other,
                    f"device {member} runs {other.name} while device {members[0]} runs {first.name} "
                    f"at {_where(first)} (collectives of a group must match)",
                )


def _exchange(op: CollectiveOp, values: list[np.ndarray]) -> list[np.ndarray]:
    """The op's exchange on widened operands, rounded back to its result type as
    the single-device `evaluate` does."""
    storage = values[0].dtype
    widened = [v.astype(dtypes.compute_dtype(storage), copy=False) for v in values]
    with np.errstate(over="ignore", invalid="ignore"):
        outputs = type(op).exchange(widened, op.attr_values())
    return [np.asarray(o).astype(storage) for o in outputs]


def _where(op: Operation) -> str:
    location = location_of(op)
    return str(location) if location is not None else "an unknown location"


def run_devices(module: ModuleOp, inputs: Sequence[np.ndarray]) -> list[list[np.ndarray]]:
    """Each device's outputs for the positional inputs of the original @main."""
    functions = device_functions(module)
    for f in functions:
        expected = len(f.function_type.inputs.data)
        if expected != len(inputs):
            raise CompileError(f"@{f.sym_name.data} takes {expected} inputs, got {len(inputs)}", f)
    return _Run(functions, inputs).run()
