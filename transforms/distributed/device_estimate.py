"""The estimated time of one device function, for `ge-partition`'s choices
between plans (`partition.py`: whether to split the tokens after a row-parallel
product rather than all-reduce it).

Nothing is assumed to overlap (an unchunked tensor-parallel layer reads every
collective with its very next op): the time is the sum of

* each compute op's roofline on its own part (`pipeline.estimated_cycles`: the
  device function's types are already its parts);
* a kernel launch per compute run (`launch.kernel_launch_us`): a run starts at
  the first compute op and again at every op that reads a collective's result,
  as `lowering/plan/device_streams.py` cuts runs;
* each collective's cost on the preset's links (`simulator/collectives.py`, the
  closed forms the multi-device simulator uses).

It ranks plans of one graph; it is not the simulated time (the roofline does
not see a small product bound by each core's GM port, for one).
"""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.ir import SSAValue

from ...dialects import ge
from ...simulator.collectives import Interconnect, collective_cost
from ...simulator.hardware import HardwarePreset
from ...simulator.multi_device import value_bytes
from .pipeline import estimated_cycles

COMMUNICATION = (ge.CollectiveOp, ge.SendOp, ge.RecvOp)


def estimated_us(function: func.FuncOp, hw: HardwarePreset, link: Interconnect) -> float:
    """Microseconds of `function` on one device of `hw`'s server, nothing overlapped."""
    cycles = 0.0
    comm_us = 0.0
    runs = 0
    communicated: set[SSAValue] = set()
    in_run = False
    for op in function.body.block.ops:
        if isinstance(op, (ge.ConstOp, func.ReturnOp)):
            continue
        if isinstance(op, ge.CollectiveOp):
            kind = op.name.removeprefix("ge.")
            comm_us += collective_cost(kind, op.members(op.attr_values()), value_bytes(op.operands[0]), link).time_us
            communicated.update(op.results)
            continue
        if isinstance(op, COMMUNICATION):
            communicated.update(op.results)
            continue
        if not in_run or any(v in communicated for v in op.operands):
            runs += 1
            in_run = True
            communicated.difference_update(op.operands)
        cycles += estimated_cycles(op, hw)
    return hw.cycles_to_us(cycles) + runs * hw.kernel_launch_us + comm_us
