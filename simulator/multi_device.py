"""The multi-device simulator: N devices, each the NPU chip model, joined by the
preset's links (`collectives.py`).

Each device runs two streams, as GE's stream allocator gives HCCL its own
stream: compute tasks and communication tasks (`lowering/plan/device_streams.py`
lowers a partitioned module's device functions to them and times each compute
task on one chip). Here they are placed in time:

* a compute task starts when its device's compute stream is free and the
  collectives it reads have ended, and lasts the time it was given;
* a collective starts when every member of its group has its operand ready and
  its communication stream free, and lasts what the link model says; a receive
  ends when the matching send has arrived.

The report gives, per device, its time, its compute time, its communication
time, and the exposed communication: the time its communication stream is busy
while its compute stream is idle (communication nothing hid). The Chrome trace
has one process per device, a thread per stream.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from xdsl.ir import Operation, SSAValue

from ..core import dtypes
from ..core.diagnostics import CompileError
from ..dialects import ge
from .collectives import Cost, Interconnect, collective_cost, load_interconnect, transfer_cost
from .hardware import load_preset


@dataclass(eq=False)
class Task:
    device: int
    kind: str  # "compute" | "comm"
    ops: list[Operation]
    needs: list[Task] = field(default_factory=list)
    start: float | None = None
    end: float | None = None
    duration: float = 0.0
    cost: Cost | None = None

    @property
    def nbytes(self) -> int:
        """The bytes a communication task moves per device (its operands', or what a receive gets)."""
        return sum(value_bytes(op.operands[0] if op.operands else op.results[0]) for op in self.ops)

    @property
    def name(self) -> str:
        if self.kind == "comm":
            name = self.ops[0].name.removeprefix("ge.")
            return name if len(self.ops) == 1 else f"{name} x{len(self.ops)}"
        return "+".join(dict.fromkeys(op.name.removeprefix("ge.") for op in self.ops[:3])) + ("..." if len(self.ops) > 3 else "")


def value_bytes(value: SSAValue) -> int:
    """The bytes of a tensor value."""
    t = value.type
    count = 1
    for d in t.get_shape():
        count *= d
    return count * dtypes.to_numpy_dtype(t.element_type).itemsize


# ---- scheduling ------------------------------------------------------------------------------


@dataclass
class DeviceSummary:
    device: int
    time_us: float
    compute_us: float
    comm_us: float
    exposed_comm_us: float


@dataclass
class MultiDeviceReport:
    hw: str
    devices: int
    tasks: list[Task]
    summaries: list[DeviceSummary]
    link_bytes: dict[tuple[int, int], float]

    @property
    def time_us(self) -> float:
        return max(s.time_us for s in self.summaries)

    def __str__(self) -> str:
        lines = [
            f"multi-device simulation on {self.hw}: {self.devices} devices, {self.time_us:.3f} us",
            f"{'device':>6}{'time_us':>12}{'compute_us':>12}{'comm_us':>12}{'exposed_us':>12}",
        ]
        for s in self.summaries:
            lines.append(f"{s.device:>6}{s.time_us:>12.3f}{s.compute_us:>12.3f}{s.comm_us:>12.3f}{s.exposed_comm_us:>12.3f}")
        comms = [t for t in self.tasks if t.kind == "comm" and t.cost is not None]
        if comms:
            lines += ["", f"{'collective':<16}{'device':>7}{'bytes':>12}{'algorithm':>18}{'steps':>7}{'start_us':>11}{'time_us':>10}"]
            for t in comms:
                lines.append(
                    f"{t.name:<16}{t.device:>7}{t.nbytes:>12}"
                    f"{t.cost.algorithm:>18}{t.cost.steps:>7}{t.start:>11.3f}{t.duration:>10.3f}"
                )
        runs = [t for t in self.tasks if t.kind == "compute" and t.start is not None]
        if runs:
            # Where each device's compute goes: every run pays a launch of its own
            # (`ge-sim` of one run gives its kernels: `segment_module`).
            lines += ["", f"{'compute run':<28}{'device':>7}{'ops':>5}{'start_us':>11}{'time_us':>10}"]
            for t in runs:
                lines.append(f"{t.name:<28}{t.device:>7}{len(t.ops):>5}{t.start:>11.3f}{t.duration:>10.3f}")
        if self.link_bytes:
            lines += ["", "link bytes: " + ", ".join(f"{a}->{b} {int(n)}" for (a, b), n in sorted(self.link_bytes.items()))]
        return "\n".join(lines)

    def as_dict(self) -> dict:
        return {
            "hw": self.hw,
            "devices": self.devices,
            "time_us": self.time_us,
            "per_device": [s.__dict__ for s in self.summaries],
            "comm_us": max(s.comm_us for s in self.summaries),
            "exposed_comm_us": max(s.exposed_comm_us for s in self.summaries),
            "links": {f"{a}->{b}": n for (a, b), n in sorted(self.link_bytes.items())},
        }

    def json_text(self) -> str:
        return json.dumps(self.as_dict(), indent=2)

    def trace_text(self) -> str:
        events = []
        for d in range(self.devices):
            events.append({"ph": "M", "name": "process_name", "pid": d, "args": {"name": f"device {d}"}})
            for tid, stream in ((0, "compute stream"), (1, "communication stream")):
                events.append({"ph": "M", "name": "thread_name", "pid": d, "tid": tid, "args": {"name": stream}})
        for t in self.tasks:
            events.append({
                "ph": "X", "name": t.name, "pid": t.device, "tid": 0 if t.kind == "compute" else 1,
                "ts": t.start, "dur": t.duration,
                "args": {"algorithm": t.cost.algorithm, "steps": t.cost.steps} if t.cost else {},
            })
        return json.dumps({"traceEvents": events, "displayTimeUnit": "ns"})


class Scheduler:
    """Places every task in time: streams in order, dependencies, group collectives
    starting together, receives after their sends."""

    def __init__(self, per_device: list[list[Task]], link: Interconnect):
        self.per_device = per_device
        self.link = link
        self.link_bytes: dict[tuple[int, int], float] = {}
        self.previous: dict[int, Task] = {}
        for tasks in per_device:
            comms = [t for t in tasks if t.kind == "comm"]
            self.previous.update((id(b), a) for a, b in zip(comms, comms[1:]))
        self._match()

    def _match(self) -> None:
        """Pair each collective with its group peers (by order within the group)
        and each receive with its send (by source, tag and order)."""
        self.partners: dict[int, list[Task]] = {}
        self.sends: dict[int, Task] = {}
        groups: dict[tuple[int, ...], list[list[Task]]] = {}
        posted: dict[tuple[int, int, int], list[Task]] = {}
        for tasks in self.per_device:
            for t in tasks:
                op = t.ops[0]
                if t.kind != "comm":
                    continue
                if isinstance(op, ge.CollectiveOp):
                    members = op.members(op.attr_values())
                    groups.setdefault(members, [[] for _ in members])[members.index(t.device)].append(t)
                elif isinstance(op, ge.SendOp):
                    posted.setdefault((t.device, op.attr_value("peer"), op.attr_value("tag")), []).append(t)
        for members, lists in groups.items():
            for occurrence in zip(*lists):
                for t in occurrence:
                    self.partners[id(t)] = list(occurrence)
        for tasks in self.per_device:
            for t in tasks:
                op = t.ops[0]
                if t.kind == "comm" and isinstance(op, ge.RecvOp):
                    queue = posted.get((op.attr_value("peer"), t.device, op.attr_value("tag")), [])
                    if not queue:
                        raise CompileError(f"device {t.device}: a ge.recv from device {op.attr_value('peer')} has no matching send")
                    self.sends[id(t)] = queue.pop(0)

    def run(self) -> None:
        stream_free = {(d, k): 0.0 for d in range(len(self.per_device)) for k in ("compute", "comm")}
        position = {(d, k): 0 for d in range(len(self.per_device)) for k in ("compute", "comm")}
        queues = {(d, k): [t for t in tasks if t.kind == k] for d, tasks in enumerate(self.per_device) for k in ("compute", "comm")}
        remaining = sum(len(q) for q in queues.values())
        while remaining:
            progressed = False
            for key, queue in queues.items():
                while position[key] < len(queue):
                    task = queue[position[key]]
                    placed = self._place(task, stream_free)
                    if not placed:
                        break
                    for t in placed:
                        k = (t.device, t.kind)
                        stream_free[k] = t.end
                        position[k] += 1
                        remaining -= 1
                    progressed = True
            if not progressed:
                waiting = [q[position[k]].name + f" on device {k[0]}" for k, q in queues.items() if position[k] < len(q)]
                raise CompileError("the devices' schedules deadlock: " + ", ".join(waiting))

    def _ready(self, task: Task, stream_free) -> float | None:
        if any(n.end is None for n in task.needs):
            return None
        return max([stream_free[(task.device, task.kind)], *(n.end for n in task.needs)])

    def _place(self, task: Task, stream_free) -> list[Task] | None:
        op = task.ops[0]
        if task.kind == "compute":
            start = self._ready(task, stream_free)
            if start is None:
                return None
            return [self._set(task, start, task.duration)]
        if isinstance(op, ge.CollectiveOp):
            group = self.partners[id(task)]
            starts = []
            for member in group:
                queue_head = member.end is None and self._is_head(member, stream_free)
                ready = self._ready(member, stream_free) if queue_head else None
                if ready is None:
                    return None
                starts.append(ready)
            a = op.attr_values()
            if any(len(m.ops) != len(task.ops) for m in group):
                raise CompileError(f"device {task.device}: {op.name} is bucketed differently on the members of its group")
            cost = collective_cost(op.name.removeprefix("ge."), op.members(a), task.nbytes, self.link)
            self._count(cost)
            start = max(starts)
            return [self._set(m, start, cost.time_us, cost) for m in group]
        if isinstance(op, ge.SendOp):
            start = self._ready(task, stream_free)
            if start is None:
                return None
            cost = transfer_cost(task.device, op.attr_value("peer"), value_bytes(op.operands[0]), self.link)
            self._count(cost)
            return [self._set(task, start, cost.time_us, cost)]
        send = self.sends[id(task)]
        start = self._ready(task, stream_free)
        if start is None or send.end is None:
            return None
        start = max(start, send.start)
        return [self._set(task, start, max(send.end - start, 0.0))]

    def _is_head(self, task: Task, stream_free) -> bool:
        """Whether every earlier task of `task`'s stream has been placed."""
        previous = self.previous.get(id(task))
        return previous is None or previous.end is not None

    def _count(self, cost: Cost) -> None:
        for k, v in cost.link_bytes.items():
            self.link_bytes[k] = self.link_bytes.get(k, 0.0) + v

    @staticmethod
    def _set(task: Task, start: float, duration: float, cost: Cost | None = None) -> Task:
        task.start, task.duration, task.end, task.cost = start, duration, start + duration, cost
        return task


def _busy(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    merged: list[tuple[float, float]] = []
    for s, e in sorted(intervals):
        if merged and s <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], e))
        elif e > s:
            merged.append((s, e))
    return merged


def exposed(comm: list[tuple[float, float]], compute: list[tuple[float, float]]) -> float:
    """The length of the communication intervals not covered by compute intervals."""
    total = 0.0
    covered = _busy(compute)
    for s, e in _busy(comm):
        length = e - s
        for cs, ce in covered:
            length -= max(0.0, min(e, ce) - max(s, cs))
        total += length
    return total


def is_collective(task: Task) -> bool:
    """A group collective (not a send or receive)."""
    return task.kind == "comm" and isinstance(task.ops[0], ge.CollectiveOp)


def unhideable_collectives(tasks: list[Task]) -> list[Task]:
    """One device's collectives that no schedule can overlap with compute. The
    communication stream runs in program order, so while collective j is in
    flight, no compute run can be one that feeds collective j or an earlier one
    (those have started), nor one that reads collective j or a later one (those
    have not ended). When that rules out every compute run, j is exposed in
    every schedule."""
    ancestors: dict[int, set[int]] = {}
    for t in tasks:  # program order: a task's needs come before it
        ancestors[id(t)] = set().union(*({id(n)} | ancestors[id(n)] for n in t.needs)) if t.needs else set()
    compute = [t for t in tasks if t.kind == "compute"]
    comms = [t for t in tasks if t.kind == "comm"]
    exposed = []
    for j, c in enumerate(comms):
        feeds = set().union(*(ancestors[id(e)] for e in comms[: j + 1]))
        later = {id(e) for e in comms[j:]}
        blocked = [t for t in compute if id(t) in feeds or ancestors[id(t)] & later]
        if is_collective(c) and len(blocked) == len(compute):
            exposed.append(c)
    return exposed


def schedule_devices(per_device: list[list[Task]], hw: str | None = None, algorithm: str | None = None) -> MultiDeviceReport:
    """Place each device's tasks (their compute durations set) in time on the preset
    `hw`'s server: its links give the communication's durations."""
    preset = load_preset(hw)
    link = load_interconnect(preset, algorithm)
    scheduler = Scheduler(per_device, link)
    scheduler.run()
    summaries = []
    for d, tasks in enumerate(per_device):
        compute = [(t.start, t.end) for t in tasks if t.kind == "compute"]
        comm = [(t.start, t.end) for t in tasks if t.kind == "comm"]
        summaries.append(DeviceSummary(
            device=d,
            time_us=max((t.end for t in tasks), default=0.0),
            compute_us=sum(e - s for s, e in compute),
            comm_us=sum(e - s for s, e in _busy(comm)),
            exposed_comm_us=exposed(comm, compute),
        ))
    return MultiDeviceReport(preset.name, len(per_device), [t for ts in per_device for t in ts], summaries, scheduler.link_bytes)
