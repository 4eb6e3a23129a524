"""`ge-partition{devices=N strategy=dp|tp|pp}`: cut a single-device graph into N
device programs with collectives at the cut edges (GE's distributed partitioning,
seed 003 §6: HcomAllReduce, HcomAllGather, HcomSend / HcomReceive inserted where
the strategy cuts).

* `dp` (data parallel): every input's leading dim is the batch; each device takes
  its part of it, the whole graph runs on every device on its part, and the
  outputs are gathered. It applies when no op mixes values along the batch
  (`sharding.py`'s rules say which do); the first op that does is the error.
* `tp` (tensor parallel, Megatron style): matmuls whose weight is a constant
  split it by columns when that split flows, through ops that keep it (bias,
  activation, the head reshape and transposes of attention, per-head softmax
  and batched products), into a matmul that contracts it: that one splits its
  weight by rows and leaves partial sums, reduced by one all_reduce. The pairs
  are found by trying each candidate's column split and keeping it only if no
  value has to be gathered whole: the graph's structure decides, never names.
* `pp` (pipeline parallel): see `pipeline.py`.

The result is a multi-device module (`simulator/devices.py` describes it): one
`func.func @device<k>` per device, each taking @main's inputs and returning its
outputs. A strategy that does not apply is a one-line error naming the op and
the reason.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from ...core.diagnostics import CompileError, op_error
from ...core.passes import record_statistic
from ...dialects import ge
from ...simulator.devices import DEVICE_ATTR, DEVICES_ATTR
from ...core.signature import main_function
from ...simulator.collectives import load_interconnect
from ...simulator.hardware import load_preset
from .device_estimate import estimated_us
from .sharding import PARTIAL, REPLICATED, Layout, Plan, is_split, propagate, shard_type, split, splittable

STRATEGIES = ("dp", "tp", "pp")
TOKEN_SPLIT = ("auto", "always", "never")
TIE = 0.005
"""Token split by estimate: plans within this fraction of each other tie, and a tie
keeps the all_reduce (the estimate is a roofline; no need to hold weights whole)."""


@dataclass(frozen=True)
class PartitionPass(ModulePass):
    """Partition @main over `devices` devices with strategy dp, tp or pp (one function per device);
    `chunks` > 1 runs each device's row-independent tail in that many chunks of rows (`chunking.py`)."""

    name = "ge-partition"

    devices: int = 2
    strategy: str = "tp"
    micro_batches: int = 1
    chunks: int = 1
    hw: str = "ascend910"
    token_split: str = "auto"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.devices < 2:
            raise CompileError(f"ge-partition: devices must be 2 or more, got {self.devices}")
        if self.strategy not in STRATEGIES:
            raise CompileError(f"ge-partition: strategy must be one of {', '.join(STRATEGIES)}, got '{self.strategy}'")
        if DEVICES_ATTR in op.attributes:
            raise CompileError("ge-partition: the module is already partitioned", op)
        main = main_function(op)
        if self.strategy == "pp":
            from .pipeline import pipeline_functions

            functions = pipeline_functions(main, self.devices, self.micro_batches, self.hw)
        else:
            if self.micro_batches != 1:
                raise CompileError("ge-partition: micro-batches apply to strategy pp only")
            token_split = self._token_split()
            if self.strategy == "dp":
                plan = data_parallel_plan(main, self.devices)
            else:
                plan = tensor_parallel_plan(main, self.devices)
                if token_split != "never":
                    plan = split_tokens(main, plan, token_split, self.hw)
                    record_statistic(self.name, "token-split-ops", len(plan.tokens))
            functions = [build_device_function(main, plan, d) for d in range(self.devices)]
            record_statistic(self.name, "column-parallel-matmuls", len(plan.columns))
            record_statistic(self.name, "all-reduces", plan.reductions)
            record_statistic(self.name, "all-gathers", len(plan.gathers))
        if self.chunks < 1:
            raise CompileError(f"ge-partition: chunks must be 1 or more, got {self.chunks}")
        if self.chunks > 1:
            from .chunking import chunk_function

            for f in functions:
                chunk_function(f, self.chunks)
        replace_main(op, main, functions, self.devices)


    def _token_split(self) -> str:
        if self.token_split not in TOKEN_SPLIT:
            raise CompileError(f"ge-partition: token-split must be one of {', '.join(TOKEN_SPLIT)}, got '{self.token_split}'")
        if self.token_split == "never" or (self.strategy != "tp" and self.token_split == "auto"):
            return "never"
        if self.strategy != "tp":
            raise CompileError("ge-partition: token-split=always applies to strategy tp only")
        if self.chunks > 1:
            if self.token_split == "always":
                raise CompileError("ge-partition: token-split=always and chunks > 1 do not combine (chunks run all_reduce tails)")
            return "never"
        return self.token_split


def replace_main(module: ModuleOp, main: func.FuncOp, functions: list[func.FuncOp], devices: int) -> None:
    for d, f in enumerate(functions):
        f.attributes[DEVICE_ATTR] = IntegerAttr(d, i64)
    module.body.block.insert_ops_after(functions, main)
    module.body.block.erase_op(main)
    module.attributes[DEVICES_ATTR] = IntegerAttr(devices, i64)


# ---- strategies ------------------------------------------------------------------------------


def data_parallel_plan(main: func.FuncOp, devices: int, strategy: str = "dp") -> Plan:
    """Inputs split on their leading dim where it divides; an op that then needs a
    split value whole means the graph mixes the batch: dp does not apply."""
    args = main.body.block.args
    layouts = [split(0) if splittable(a, 0, devices) else REPLICATED for a in args]
    if not any(is_split(layout) for layout in layouts):
        raise CompileError(f"ge-partition: strategy {strategy} does not apply: no input has a leading (batch) dim divisible by {devices}", main)
    plan = propagate(main, devices, layouts)
    inside = [c for c in plan.gathers if not isinstance(c.op, func.ReturnOp)]
    if inside:
        c = inside[0]
        raise op_error(
            c.op,
            f"ge-partition: strategy {strategy} does not apply: operand #{c.operand} carries the inputs' "
            f"leading dim ({c.source}) and {c.why}, so the graph mixes values across it",
        )
    return plan


def is_weight(value: SSAValue) -> bool:
    """A value computed from constants alone (a weight, maybe transposed or cast)."""
    owner = value.owner
    if isinstance(owner, ge.ConstOp):
        return True
    return isinstance(owner, Operation) and bool(owner.operands) and all(is_weight(v) for v in owner.operands)


def tensor_parallel_plan(main: func.FuncOp, devices: int) -> Plan:
    """Megatron pairs by trial: a candidate (a matmul with a weight operand) keeps
    its column split if the plan then gathers no more values than before."""
    args = main.body.block.args
    replicated = [REPLICATED] * len(args)
    candidates = [
        op for op in main.body.block.ops if isinstance(op, (ge.MatmulOp, ge.BatchMatmulOp)) and is_weight(op.rhs)
    ]
    columns: set[Operation] = set()
    plan = propagate(main, devices, replicated)
    for candidate in candidates:
        if plan.layouts[candidate.lhs] != REPLICATED:
            continue
        trial = propagate(main, devices, replicated, columns | {candidate})
        if len(trial.gathers) <= len(plan.gathers) and trial.layouts[candidate.result] != REPLICATED:
            columns.add(candidate)
            plan = trial
    plan.columns = frozenset(columns)
    if not columns:
        reason = "no matmul has a constant weight" if not candidates else (
            f"no column split of a weight reaches a matmul contracting it over {devices} devices "
            "without gathering a value whole"
        )
        raise CompileError(f"ge-partition: strategy tp does not apply: {reason}", main)
    return plan


def split_tokens(main: func.FuncOp, plan: Plan, mode: str, hw_name: str) -> Plan:
    """Where an op reads the partial sums of a row-parallel product, reduce-scatter
    them by rows (tokens) instead of all-reducing them, when that is cheaper
    (`mode` auto: by `device_estimate.estimated_us` on preset `hw_name`) or always.
    From that op on, every device runs its N-th of the tokens with the weights
    whole (a Megatron pair after it no longer splits its weights: its product has
    its rows split instead), until a value is needed whole: at the outputs, an
    all_gather. A reduce_scatter and an all_gather move what one all_reduce moves;
    the pair after it then needs no collective of its own, at the price of reading
    its weights whole on every device. An op whose token split would gather a value
    whole before the outputs (attention of a later layer mixing the tokens) keeps
    the all_reduce."""
    replicated = [REPLICATED] * len(main.body.block.args)
    estimate = _plan_estimate(main, hw_name) if mode == "auto" else None
    if mode == "auto" and estimate is None:
        return plan  # no links to weigh the collectives on: keep the all_reduces
    best = estimate(plan) if estimate else 0.0
    for op in main.body.block.ops:
        if isinstance(op, func.ReturnOp) or PARTIAL not in [plan.layouts.get(v) for v in op.operands]:
            continue
        trial = propagate(main, plan.devices, replicated, plan.columns, plan.tokens | {op})
        scattered = any(c.op is op and c.source == PARTIAL and is_split(c.target) for c in trial.conversions)
        if not scattered or any(not isinstance(c.op, func.ReturnOp) for c in trial.gathers):
            continue
        trial.columns = frozenset(m for m in plan.columns if trial.layouts[m.operands[0]] == REPLICATED)
        if estimate is not None:
            cost = estimate(trial)
            if cost >= best * (1 - TIE):
                continue
            best = cost
        plan = trial
    return plan


def _plan_estimate(main: func.FuncOp, hw_name: str) -> Callable[[Plan], float] | None:
    """A plan's estimated time: device 0's function (it also adds the residuals
    folded into its summands) by `device_estimate.estimated_us`; None when the
    preset has no links."""
    hw = load_preset(hw_name)
    try:
        link = load_interconnect(hw)
    except CompileError:
        return None
    return lambda plan: estimated_us(build_device_function(main, plan, 0), hw, link)


# ---- building the device functions -----------------------------------------------------------


class DeviceBuilder:
    """Writes device `device`'s function from the plan: each op on its operands in
    the required layouts, conversions made once per value and layout."""

    def __init__(self, main: func.FuncOp, plan: Plan, device: int):
        self.plan = plan
        self.device = device
        self.devices = plan.devices
        types = main.function_type
        self.block = Block(arg_types=types.inputs.data)
        self.values: dict[tuple[SSAValue, Layout], SSAValue] = {}
        for old, new in zip(main.body.block.args, self.block.args):
            # Every device receives the whole inputs and slices its part.
            new.name_hint = old.name_hint
            self.values[(old, REPLICATED)] = new
            layout = plan.layouts[old]
            if is_split(layout):
                self.values[(old, layout)] = self._slice(old, new, layout.axis)
                self.values[(old, layout)].name_hint = old.name_hint

    def add(self, op: Operation) -> Operation:
        self.block.add_op(op)
        return op

    def convert(self, value: SSAValue, target: Layout) -> SSAValue:
        """`value` in layout `target`: all_reduce a partial, all_gather a split,
        slice a whole value into this device's part (a constant is sliced now)."""
        key = (value, target)
        if key in self.values:
            return self.values[key]
        source = self.plan.layouts[value]
        if isinstance(value.owner, ge.ConstOp) and is_split(target):
            current = self._slice(value, None, target.axis)
            current.name_hint = value.name_hint
            self.values[key] = current
            return current
        if (value, source) not in self.values:
            # A constant is written where it is first used whole.
            self.values[(value, source)] = self.add(value.owner.clone()).result
        current = self.values[(value, source)]
        if source == PARTIAL and is_split(target):
            # The sums of this device's part only: a reduce_scatter, half an all_reduce.
            current = self.add(ge.ReduceScatterOp.new(current, devices=self.devices, axis=target.axis)).result
            current.name_hint = value.name_hint
            self.values[key] = current
            return current
        if source == PARTIAL:
            current = self.add(ge.AllReduceOp.new(current, devices=self.devices)).result
        elif is_split(source):
            current = self.add(ge.AllGatherOp.new(current, devices=self.devices, axis=source.axis)).result
        self.values[(value, REPLICATED)] = current
        if is_split(target):
            current = self._slice(value, current, target.axis)
        current.name_hint = value.name_hint
        self.values[key] = current
        return current

    def _slice(self, value: SSAValue, whole: SSAValue | None, axis: int) -> SSAValue:
        dims = list(value.type.get_shape())
        part = dims[axis] // self.devices
        starts = [0] * len(dims)
        ends = list(dims)
        starts[axis], ends[axis] = self.device * part, (self.device + 1) * part
        if isinstance(value.owner, ge.ConstOp):
            array = value.owner.as_array()[tuple(slice(s, e) for s, e in zip(starts, ends))]
            return self.add(ge.ConstOp.from_array(np.ascontiguousarray(array), shard_type(value.type, split(axis), self.devices))).result
        return self.add(ge.SliceOp.new(whole, starts=starts, ends=ends, steps=[1] * len(dims))).result

    def fold_into_reduction(self, op: Operation) -> bool:
        """`x + p` with `p` partial sums and `x` whole (a residual): device 0 adds
        `x` to its summand before the all_reduce (in its product's epilogue), the
        others reduce theirs, and the reduction's result is the sum. No device adds
        `x` after the collective: where the sum is an output nothing is left to
        compute after the last collective (a kernel there would pay a launch once
        the link is done), and where a norm reads it (a pre-norm transformer's
        residual stream) every device runs the norm alone instead of the add and
        the norm it would repeat."""
        if not isinstance(op, ge.AddOp):
            return False
        layout = self.plan.layouts[op.result]
        if self.plan.requires[op] != [layout, layout] or layout not in (REPLICATED, split(0)):
            return False
        sources = [self.plan.layouts[v] for v in op.operands]
        if sorted(s.kind for s in sources) != ["partial", "replicated"]:
            return False
        partial, whole = op.operands if sources[0] == PARTIAL else reversed(op.operands)
        if partial.type != op.result.type or whole.type != op.result.type or len(list(partial.uses)) != 1:
            return False
        summand = self.values[(partial, PARTIAL)]
        if self.device == 0:
            summand = self.add(ge.AddOp.new(summand, self.convert(whole, REPLICATED))).result
        if layout == REPLICATED:
            reduced = self.add(ge.AllReduceOp.new(summand, devices=self.devices)).result
        else:
            # Token split (`TensorParallelPlanner`): each device keeps the sums of its rows.
            reduced = self.add(ge.ReduceScatterOp.new(summand, devices=self.devices, axis=0)).result
        reduced.name_hint = op.result.name_hint
        self.values[(op.result, layout)] = reduced
        return True

    def copy(self, op: Operation) -> None:
        if self.fold_into_reduction(op):
            return
        requires = self.plan.requires[op]
        operands = [self.convert(v, layout) for v, layout in zip(op.operands, requires)]
        if isinstance(op, func.ReturnOp):
            self.add(func.ReturnOp(*operands))
            return
        if isinstance(op, ge.ConstOp):
            return
        if isinstance(op, ge.GEOp):
            types = [shard_type(r.type, self.plan.layouts[r], self.devices) for r in op.results]
            new = self.add(type(op).new(*operands, result_type=types, attributes=dict(op.attributes), **vars(op.attr_values())))
        else:
            raise op_error(op, "ge-partition handles ge ops only")
        for old, result in zip(op.results, new.results):
            result.name_hint = old.name_hint
            self.values[(old, self.plan.layouts[old])] = result


def build_device_function(main: func.FuncOp, plan: Plan, device: int) -> func.FuncOp:
    builder = DeviceBuilder(main, plan, device)
    for op in main.body.block.ops:
        builder.copy(op)
    return device_function(main, builder.block, device)


def device_function(main: func.FuncOp, block: Block, device: int) -> func.FuncOp:
    """A function named @device<k> with @main's argument and result attributes."""
    outputs = [v.type for v in block.last_op.operands]
    return func.FuncOp(
        f"device{device}",
        (main.function_type.inputs.data, outputs),
        Region(block),
        arg_attrs=main.arg_attrs,
        res_attrs=main.res_attrs if outputs else None,
    )
