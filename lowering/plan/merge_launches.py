"""`npu-merge-launches`: consecutive launches of a stream become one kernel whose
phases meet at `npu.sync_all`.

Every launch pays the task dispatch (`launch.kernel_launch_us`) before its first
block starts, and in a fused transformer layer the dispatches take as long as the
kernels' own rooflines. Kernels that follow one another on a stream can instead run
as the phases of one kernel, the cores meeting at a cross-core barrier between
them: Ascend C's `SyncAll`, which the 910 implements in software (each core stores
a flag to a GM workspace and reads every core's flag back, a few hundred cycles;
see the simulator's `npu.sync_all`). Whatever a phase wrote to GM is visible to
every block of the next, as it would be to the next launch.

A run of launches is merged when they stand next to each other in host order (no
event, nor any other stream's launch, between them), all on one stream, each on
at most the preset's core count of blocks (a barrier needs every block resident).
The merged kernel runs on the largest block_dim of the run; a phase written for
fewer blocks runs under `scf.if block_idx < its block_dim`, with its
`npu.block_dim` replaced by its own count. Two launches of a run that touch no
common GM bytes and fit the cores together share a phase, side by side on
disjoint blocks (`side_by_side.py`; `side-by-side=false` keeps a phase each): the
second runs under `first <= block_idx < first + its count`, seeing
`block_idx - first`. Phases keep their planned local
buffers and their flags: the barrier drains every pipe, so one phase's local
bytes are free for the next.

Run it last, after `npu-insert-sync` (which refuses merged kernels) and after
`npu-plan-gm`: the GM plan keeps the lifetimes of the separate launches, which the
simulator checks phase by phase.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import ArrayAttr, IndexType, IntegerAttr, ModuleOp, StringAttr
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from ...core.passes import record_statistic
from ...dialects import npu
from ...simulator.hardware import load_preset
from ...transforms.npu.access_conflicts import launches_by_kernel
from ...core.signature import is_npu_host, main_function
from .launches import DEFINITIONS, hoist_definitions
from .side_by_side import Footprints, pair_phases


def mergeable_runs(main_block: Block, core_count: int) -> list[list[npu.LaunchOp]]:
    """Runs of two or more launches to merge (see the module docstring)."""
    runs: list[list[npu.LaunchOp]] = [[]]
    for op in main_block.ops:
        if isinstance(op, DEFINITIONS):
            continue
        current = runs[-1]
        if isinstance(op, npu.LaunchOp) and launch_block_dim(op) <= core_count:
            if current and current[-1].attr_values().stream != op.attr_values().stream:
                runs.append(current := [])
            current.append(op)
        elif current:
            runs.append([])
    return [run for run in runs if len(run) > 1]


def launch_block_dim(launch: npu.LaunchOp) -> int:
    given = launch.attr_values().block_dim
    return given if given is not None else launch.kernel_op().attr_values().block_dim


def merge_run(run: list[npu.LaunchOp], core_count: int | None = None, sole: frozenset[str] = frozenset()) -> npu.KernelOp:
    """One kernel for the launches of `run`, launched in their place; with
    `core_count`, independent launches that fit the cores together share a phase
    (`side_by_side.py`). The bodies of the kernels named in `sole` (launched once
    in the module: by this run, and dropped after it) are moved into the merged
    kernel instead of copied."""
    args = list(dict.fromkeys(value for launch in run for value in launch.args))
    phases = [[launch] for launch in run] if core_count is None else pair_phases(run, launch_block_dim, core_count, Footprints())
    block_dim = max(sum(launch_block_dim(launch) for launch in phase) for phase in phases)
    names = ["+".join(launch.kernel_op().sym_name.data for launch in phase) for phase in phases]
    ends = [phases[0][0], phases[-1][-1]]
    merged = npu.KernelOp.empty("_to_".join(l.kernel_op().sym_name.data for l in ends), [a.type for a in args], block_dim)
    merged.attributes[npu.PHASES_ATTR] = ArrayAttr([StringAttr(name) for name in names])
    sources = ["+".join(s for launch in phase for s in launch.kernel_op().sources()) for phase in phases]
    if all(len(launch.kernel_op().sources()) == 1 for launch in run):
        merged.attributes[npu.SOURCES_ATTR] = ArrayAttr([StringAttr(source) for source in sources])
    body = merged.entry
    for param, value in zip(body.args, args):
        param.name_hint = value.name_hint
    end = body.last_op
    for i, phase in enumerate(phases):
        if i:
            body.insert_op_before(npu.SyncAllOp.new(), end)
        first = 0
        for launch in phase:
            params = {param: body.args[args.index(value)] for param, value in zip(launch.kernel_op().entry.args, launch.args)}
            kernel = launch.kernel_op()
            _add_phase(body, end, kernel, params, launch_block_dim(launch), block_dim, first, kernel.sym_name.data in sole)
            first += launch_block_dim(launch)
    first_kernel = run[0].kernel_op()
    first_kernel.parent_block().insert_op_before(merged, first_kernel)
    stream = run[0].attr_values().stream
    launch = npu.LaunchOp.calling(merged.sym_name.data, args, block_dim=block_dim, stream=stream)
    launch.record_writes({
        args.index(part.args[i]): name for part in run for i, name in part.written_values().items()
    })
    Rewriter.replace_op(run[0], launch)
    for launch in run[1:]:
        launch.detach()
        launch.erase()
    return merged


def _add_phase(
    body: Block, end: Operation, kernel: npu.KernelOp, params: dict[SSAValue, SSAValue], own: int, block_dim: int,
    first: int = 0, move: bool = False,
) -> None:
    """Clone `kernel`'s body before `end`, its parameters mapped by `params` (or, with
    `move`, move it there: a kernel launched once, dropped after the merge; the same
    ops, without copying a model's worth of them); a kernel
    written for `own` < `block_dim` blocks runs on blocks [first, first + own) only,
    seeing them as its blocks 0 .. own - 1."""
    ops = [op for op in kernel.entry.ops if not isinstance(op, npu.ReturnOp)]
    if own < block_dim:
        count = _constant(body, end, first + own)
        index = npu.BlockIdxOp.new()
        body.insert_op_before(index, end)
        below = arith.CmpiOp(index.result, count, "ult")
        body.insert_op_before(below, end)
        inside = below.result
        if first:
            at_least = arith.CmpiOp(index.result, _constant(body, end, first), "uge")
            body.insert_op_before(at_least, end)
            both = arith.AndIOp(at_least.result, inside)
            body.insert_op_before(both, end)
            inside = both.result
        guarded = Block()
        guard = scf.IfOp(inside, [], Region(guarded))
        body.insert_op_before(guard, end)
        guarded.add_op(scf.YieldOp())
        body, end = guarded, guarded.last_op
    if move:
        for op in ops:
            op.detach()
            body.insert_op_before(op, end)
        for param, value in params.items():
            param.replace_all_uses_with(value)
    else:
        mapping = dict(params)
        for op in ops:
            body.insert_op_before(op.clone(mapping), end)
    if own < block_dim:
        for op in list(body.walk()):
            if isinstance(op, npu.BlockDimOp):
                Rewriter.replace_op(op, arith.ConstantOp(IntegerAttr(own, IndexType())))
            elif first and isinstance(op, npu.BlockIdxOp):
                shift = arith.ConstantOp(IntegerAttr(first, IndexType()))
                index = npu.BlockIdxOp.new()
                local = arith.SubiOp(index.result, shift.result)
                Rewriter.replace_op(op, [shift, index, local], [local.result])


def _constant(body: Block, end: Operation, value: int) -> SSAValue:
    c = arith.ConstantOp(IntegerAttr(value, IndexType()))
    body.insert_op_before(c, end)
    return c.result


def drop_unlaunched_kernels(module: ModuleOp) -> int:
    launched = {op.callee.string_value() for op in module.walk() if isinstance(op, npu.LaunchOp)}
    dropped = [op for op in module.body.block.ops if isinstance(op, npu.KernelOp) and op.sym_name.data not in launched]
    for kernel in dropped:
        kernel.detach()
        kernel.erase()
    return len(dropped)


@dataclass(frozen=True)
class MergeLaunchesPass(ModulePass):
    """Merge consecutive launches of a stream into one kernel whose phases meet at npu.sync_all (one task dispatch instead of several)."""

    name = "npu-merge-launches"

    hw: str = "ascend910"
    side_by_side: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        main = main_function(op)
        if not is_npu_host(main):
            return
        core_count = load_preset(self.hw).core_count
        runs = mergeable_runs(main.body.block, core_count)
        hoist_definitions(main.body.block)  # a later launch's arguments may be defined after the first
        sole = frozenset(name for name, launches in launches_by_kernel(op).items() if len(launches) == 1)
        kernels = [merge_run(run, core_count if self.side_by_side else None, sole) for run in runs]
        record_statistic(self.name, "launches merged", sum(len(run) for run in runs))
        record_statistic(self.name, "kernels made", len(runs))
        shared = sum(name.count("+") for kernel in kernels for name in kernel.phase_names())
        record_statistic(self.name, "launches sharing a phase", 2 * shared)
        drop_unlaunched_kernels(op)
