"""Pipeline parallelism for `ge-partition{strategy=pp devices=N micro-batches=M}`:
the graph's ops, in order, are cut into N stages of balanced estimated time, one
per device; a value used by a later stage is sent to it (`ge.send` / `ge.recv`,
GE's HcomSend / HcomReceive at the cut edges); the last stage returns the
outputs.

Micro-batches: with M > 1 the inputs' leading dim is split into M parts (the
same layout rules as data parallelism decide whether the graph allows it) and
every stage runs its ops once per micro-batch, sending each part on as soon as
it is done, so stage s works on micro-batch i while stage s+1 works on i-1 (a
GPipe schedule; the simulator shows the overlap). The last stage concatenates
the micro-batches' outputs.

The estimated time of an op is its roofline on the preset: matrix products at
the cube's peak, everything else at the HBM bandwidth for the bytes it reads
and writes. The cut minimises the slowest stage (the linear partition problem,
solved exactly by dynamic programming over the op sequence).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects import func
from xdsl.ir import Block, Operation, SSAValue

from ...core import dtypes
from ...core.diagnostics import CompileError
from ...dialects import ge
from ...simulator.hardware import HardwarePreset, load_preset
from .sharding import REPLICATED, Plan, is_split, shard_type

# ---- the estimate and the cut ------------------------------------------------------------------


def _bytes(value: SSAValue) -> int:
    t = value.type
    return math.prod(t.get_shape()) * dtypes.to_numpy_dtype(t.element_type).itemsize


def estimated_cycles(op: Operation, hw: HardwarePreset) -> float:
    """The op's roofline: cube work at peak, or its bytes at the HBM bandwidth."""
    if isinstance(op, ge.ConstOp):
        return 0.0
    moved = sum(_bytes(v) for v in (*op.operands, *op.results))
    memory = moved / hw.hbm_bytes_per_cycle
    if isinstance(op, (ge.MatmulOp, ge.BatchMatmulOp)):
        out = op.results[0].type.get_shape()
        lhs = op.operands[0].type.get_shape()
        k = lhs[-2] if op.attr_value("transpose_a") else lhs[-1]
        flops = 2 * math.prod(out) * k
        return max(flops / hw.peak_fp16_flops_per_cycle, memory)
    return memory


def balanced_cut(costs: Sequence[float], stages: int) -> list[int]:
    """Start indices of `stages` contiguous non-empty runs of `costs` whose largest
    sum is the least possible."""
    n = len(costs)
    prefix = [0.0]
    for c in costs:
        prefix.append(prefix[-1] + c)
    inf = float("inf")
    # best[s][i]: the least max over the first i ops cut into s runs; cut[s][i] its last start.
    best = [[inf] * (n + 1) for _ in range(stages + 1)]
    cut = [[0] * (n + 1) for _ in range(stages + 1)]
    best[0][0] = 0.0
    for s in range(1, stages + 1):
        for i in range(s, n + 1):
            for j in range(s - 1, i):
                value = max(best[s - 1][j], prefix[i] - prefix[j])
                if value < best[s][i]:
                    best[s][i], cut[s][i] = value, j
    starts, i = [], n
    for s in range(stages, 0, -1):
        i = cut[s][i]
        starts.append(i)
    return starts[::-1]


# ---- building the stages ---------------------------------------------------------------------


class StageBuilder:
    """One stage's function: its ops once per micro-batch, receiving the values of
    earlier stages and sending its own to the later stages that use them."""

    def __init__(self, main: func.FuncOp, stage: int, stage_of: dict[Operation, int], plan: Plan, tags: dict[SSAValue, int]):
        self.stage = stage
        self.stage_of = stage_of
        self.plan = plan
        self.parts = plan.devices
        self.tags = tags
        self.block = Block(arg_types=main.function_type.inputs.data)
        self.args = dict(zip(main.body.block.args, self.block.args))
        for old, new in self.args.items():
            new.name_hint = old.name_hint
        self.values: dict[tuple[SSAValue, int], SSAValue] = {}
        self.constants: dict[SSAValue, SSAValue] = {}

    def add(self, op: Operation) -> Operation:
        self.block.add_op(op)
        return op

    def _producer_stage(self, value: SSAValue) -> int | None:
        owner = value.owner
        return self.stage_of.get(owner) if isinstance(owner, Operation) else None

    def value(self, value: SSAValue, part: int) -> SSAValue:
        """`value`'s micro-batch `part` in this stage."""
        key = (value, part)
        if key in self.values:
            return self.values[key]
        layout = self.plan.layouts[value]
        if value in self.args:
            new = self.args[value]
            if is_split(layout):
                new = self._slice(new, layout.axis, part)
        elif isinstance(value.owner, ge.ConstOp):
            if value not in self.constants:
                self.constants[value] = self.add(value.owner.clone()).result
            new = self.constants[value]
        else:
            source = self._producer_stage(value)
            assert source is not None and source < self.stage, "values are defined before use"
            t = shard_type(value.type, layout, self.parts)
            new = self.add(ge.RecvOp.new(result_type=t, peer=source, tag=self.tags[value] * self.parts + part)).result
        new.name_hint = value.name_hint
        self.values[key] = new
        return new

    def _slice(self, whole: SSAValue, axis: int, part: int) -> SSAValue:
        dims = list(whole.type.get_shape())
        size = dims[axis] // self.parts
        starts, ends = [0] * len(dims), list(dims)
        starts[axis], ends[axis] = part * size, (part + 1) * size
        return self.add(ge.SliceOp.new(whole, starts=starts, ends=ends, steps=[1] * len(dims))).result

    def run(self, op: Operation, part: int, consumers: dict[SSAValue, list[int]]) -> None:
        operands = [self.value(v, part) for v in op.operands]
        types = [shard_type(r.type, self.plan.layouts[r], self.parts) for r in op.results]
        new = self.add(type(op).new(*operands, result_type=types, attributes=dict(op.attributes), **vars(op.attr_values())))
        for old, result in zip(op.results, new.results):
            result.name_hint = old.name_hint
            self.values[(old, part)] = result
            for target in consumers.get(old, []):
                self.add(ge.SendOp.new(result, peer=target, tag=self.tags[old] * self.parts + part))

    def finish(self, outputs: Sequence[SSAValue]) -> None:
        """The last stage returns the outputs, micro-batches concatenated."""
        results = []
        for output in outputs:
            layout = self.plan.layouts[output]
            parts = [self.value(output, p) for p in range(self.parts if is_split(layout) else 1)]
            if len(parts) > 1:
                parts = [self.add(ge.ConcatOp.new(*parts, axis=layout.axis)).result]
            results.append(parts[0])
        self.add(func.ReturnOp(*results))


def pipeline_functions(main: func.FuncOp, devices: int, micro_batches: int, hw_name: str) -> list[func.FuncOp]:
    from .partition import data_parallel_plan, device_function

    if micro_batches < 1:
        raise CompileError(f"ge-partition: micro-batches must be 1 or more, got {micro_batches}")
    hw = load_preset(hw_name)
    ops = [op for op in main.body.block.ops if not isinstance(op, (ge.ConstOp, func.ReturnOp))]
    for op in ops:
        if not isinstance(op, ge.GEOp):
            raise CompileError(f"ge-partition: strategy pp handles ge ops only, got {op.name}", op)
    if len(ops) < devices:
        raise CompileError(
            f"ge-partition: strategy pp does not apply: the graph has {len(ops)} ops, fewer than {devices} stages", main
        )
    if micro_batches > 1:
        plan = data_parallel_plan(main, micro_batches, f"pp with {micro_batches} micro-batches")
    else:
        plan = Plan(1, {v: REPLICATED for v in _all_values(main)})
    starts = balanced_cut([estimated_cycles(op, hw) for op in ops], devices)
    stage_of = {op: sum(i >= s for s in starts[1:]) for i, op in enumerate(ops)}
    consumers: dict[SSAValue, list[int]] = {}
    outputs = list(main.body.block.last_op.operands)
    for op in main.body.block.ops:
        for v in op.operands:
            source = stage_of.get(v.owner) if isinstance(v.owner, Operation) else None
            user = stage_of.get(op, devices - 1)
            if source is not None and source != user and user not in consumers.setdefault(v, []):
                consumers[v].append(user)
    tags = {v: i for i, v in enumerate(consumers)}
    builders = [StageBuilder(main, s, stage_of, plan, tags) for s in range(devices)]
    for s, builder in enumerate(builders):
        mine = [op for op in ops if stage_of[op] == s]
        for part in range(plan.devices):
            for op in mine:
                builder.run(op, part, consumers)
        if s == devices - 1:
            builder.finish(outputs)
        else:
            builder.add(func.ReturnOp())
    return [device_function(main, b.block, s) for s, b in enumerate(builders)]


def _all_values(main: func.FuncOp) -> list[SSAValue]:
    values = list(main.body.block.args)
    for op in main.body.block.ops:
        values.extend(op.results)
    return values
