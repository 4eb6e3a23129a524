"""Running passes: the registry of pass names, pipeline parsing, pipeline passes
that run other passes, and the instrumentation that verifies, prints, dumps and
counts after every pass.

A pipeline pass (`ge-graph-opt`, `ge-compile`) runs its stages through
`run_pass`, so `--print-ir-after-all`, `--dump-dir` and `--pass-statistics` see
every stage, not one opaque step: "dump the IR at each level" is the point of
the tool.
"""

from __future__ import annotations

import contextvars
import dataclasses
import importlib
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import parse_pipeline
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException

from .collector import cyclic_gc_paused
from .diagnostics import CompileError
from .parsing import verify_module, verify_op
from .reverify import Reverifier

# ---- the registry ----------------------------------------------------------------------

# name -> "module:Class", imported on first use so `ge-opt --help` stays fast.
_PROJECT_PASSES: dict[str, str] = {
    # Graph level (transforms/graph) and the pipelines (registered as they land).
    "ge-pattern-fuse": ".lowering.graph_to_fused.pattern_fusion:PatternFusePass",
    "ge-auto-fuse": ".lowering.graph_to_fused.auto_fusion:AutoFusePass",
    "ge-merge-matmuls": ".lowering.graph_to_fused.merge_matmuls:MergeMatmulsPass",
    "ge-group-matmuls": ".lowering.graph_to_fused.grouped_matmul:GroupMatmulsPass",
    "ge-vector-mix": ".lowering.graph_to_fused.vector_mix:VectorMixPass",
    "ge-fuse": ".lowering.graph_to_fused.pipeline:FusePipelinePass",
    "ge-simplify": ".transforms.graph.simplify:SimplifyPass",
    "ge-constant-fold": ".transforms.graph.constant_fold:ConstantFoldPass",
    "ge-fold-batchnorm": ".transforms.graph.fold_batchnorm:FoldBatchNormPass",
    "ge-single-pixel-conv": ".transforms.graph.single_pixel_conv:SinglePixelConvPass",
    "ge-layout": ".transforms.graph.layout:LayoutPass",
    "ge-precision": ".transforms.graph.precision:PrecisionPass",
    "ge-graph-opt": ".transforms.graph.pipeline:GraphOptPipeline",
    # Many devices (transforms/distributed)
    "ge-partition": ".transforms.distributed.partition:PartitionPass",
    # NPU level (transforms/npu)
    "npu-serialize": ".transforms.npu.serialize:SerializePass",
    "npu-plan-local-memory": ".transforms.npu.plan_local_memory:PlanLocalMemoryPass",
    "npu-insert-sync": ".transforms.npu.insert_sync:InsertSyncPass",
    "npu-double-buffer": ".transforms.npu.double_buffer:DoubleBufferPass",
    "npu-prefetch-constants": ".transforms.npu.prefetch_constants:PrefetchConstantsPass",
    # Between levels (lowering) and the compilation pipelines
    "ge-to-npu": ".lowering.fused_to_npu.convert:ToNpuPass",
    "fused-ungroup": ".lowering.fused_to_npu.ungroup:UngroupPass",
    "fused-split-matmul-norm": ".lowering.fused_to_npu.split_norm:SplitMatmulNormPass",
    "fused-split-k": ".lowering.fused_to_npu.split_k:SplitKPass",
    "fused-split-k-conv": ".lowering.fused_to_npu.split_k_conv:SplitKConvPass",
    "fused-stage-conv-input": ".lowering.fused_to_npu.stage_conv_input:StageConvInputPass",
    "fused-split-pool": ".lowering.fused_to_npu.split_pool:SplitPoolPass",
    "fused-depthwise-mean": ".lowering.fused_to_npu.depthwise_mean:DepthwiseMeanPass",
    "fused-depthwise-pointwise": ".lowering.fused_to_npu.fuse_separable:DepthwisePointwisePass",
    "fused-setup-groups": ".lowering.fused_to_npu.setup_groups:SetupGroupsPass",
    "fused-share-cores": ".lowering.fused_to_npu.share_cores:ShareCoresPass",
    "fused-tune-forms": ".lowering.fused_to_npu.tune_forms:TuneFormsPass",
    "fused-tune-tilings": ".lowering.fused_to_npu.tune_tilings:TuneTilingsPass",
    "ge-materialize-broadcasts": ".lowering.fused_to_npu.materialize_broadcasts:MaterializeBroadcastsPass",
    "npu-plan-gm": ".lowering.plan.memory:PlanGmPass",
    "npu-assign-streams": ".lowering.plan.streams:AssignStreamsPass",
    "npu-merge-launches": ".lowering.plan.merge_launches:MergeLaunchesPass",
    "npu-narrow-sync": ".lowering.plan.narrow_sync:NarrowSyncPass",
    "ge-lower-to-npu": ".lowering.pipelines:LowerToNpuPipeline",
    "ge-compile": ".lowering.pipelines:CompilePipeline",
}

_UPSTREAM_PASSES = ("canonicalize", "cse", "dce")


def register_pass(name: str, target: str) -> None:
    """Register `package.module:ClassName` under `name` (used by plugins and tests)."""
    _PROJECT_PASSES[name] = target


def _load(target: str) -> type[ModulePass]:
    module_name, class_name = target.split(":")
    module = importlib.import_module(module_name, package=__package__.rsplit(".", 1)[0])
    return getattr(module, class_name)


def available_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    from xdsl.transforms import get_all_passes

    upstream = get_all_passes()
    passes: dict[str, Callable[[], type[ModulePass]]] = {
        name: upstream[name] for name in _UPSTREAM_PASSES
    }
    for name, target in _PROJECT_PASSES.items():
        passes[name] = lambda target=target: _load(target)
    return passes


def pass_summary(factory: Callable[[], type[ModulePass]]) -> tuple[str, list[str]]:
    """First docstring line and `name=default` options, for `--list-passes`."""
    cls = factory()
    doc = (cls.__doc__ or "").strip().splitlines()
    options = [
        f"{f.name.replace('_', '-')}={_format_default(f)}" for f in dataclasses.fields(cls)
    ]
    return (doc[0] if doc else ""), options


def _format_default(f: dataclasses.Field) -> str:
    if f.default is dataclasses.MISSING:
        return "<required>"
    value = f.default
    return str(value).lower() if isinstance(value, bool) else str(value)


# ---- pipelines ----------------------------------------------------------------------------

_MODULE_WRAPPER = re.compile(r"^\s*builtin\.module\s*\((.*)\)\s*$", re.S)


def parse_pass_pipeline(text: str, defaults: dict[str, object] | None = None) -> list[ModulePass]:
    """`a,b{opt=1}` or MLIR's `builtin.module(a,b{opt=1})` into pass instances.
    `defaults` gives options to every pass that has them and was not given them
    in `text` (`ge-sim --hw tiny` compiles `ge-compile` for tiny)."""
    match = _MODULE_WRAPPER.match(text)
    if match:
        text = match.group(1)
    text = _without_separator_spaces(text)
    if not text:
        return []
    try:
        specs = list(parse_pipeline(text))
    except ArgSpecParseError as e:
        raise CompileError(f"invalid pass pipeline '{text}': {_first_line(e)}") from None
    passes = available_passes()
    result = []
    for spec in specs:
        if spec.name not in passes:
            raise CompileError(f"unknown pass '{spec.name}' (see --list-passes)")
        pass_class = passes[spec.name]()
        known = {f.name.replace("_", "-") for f in dataclasses.fields(pass_class)}
        for option, value in (defaults or {}).items():
            if option in known and option not in spec.parameters and option.replace("-", "_") not in spec.parameters:
                spec.parameters[option] = [value]
        for option in spec.parameters:
            if option.replace("_", "-") not in known:
                listed = ", ".join(sorted(known)) or "none"
                raise CompileError(
                    f"pass '{spec.name}' has no option '{option}' (options: {listed})"
                )
        try:
            instance = pass_class.from_pass_spec(spec)
        except (ValueError, TypeError, ArgSpecParseError) as e:
            reason = _mistyped_option(pass_class, spec) or _first_line(e)
            raise CompileError(f"bad options for pass '{spec.name}': {reason}") from None
        negative = _negative_option(instance)
        if negative is not None:
            raise CompileError(f"bad options for pass '{spec.name}': {negative}")
        result.append(instance)
    return result


def _negative_option(instance: ModulePass) -> str | None:
    """Integer pass options are counts and sizes (tune=N, max-size, max-bytes,
    streams...): a negative one is a mistake, reported, not silently clamped."""
    for f in dataclasses.fields(instance):
        value = getattr(instance, f.name)
        if isinstance(value, int) and not isinstance(value, bool) and value < 0:
            return f"option '{f.name.replace('_', '-')}' must be 0 or more, got {value}"
    return None


_TYPE_NAMES = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}


def _mistyped_option(pass_class, spec) -> str | None:
    """'option streams expects an integer, got x' for the first option whose value
    is not of its field's type (judged by the field's default), if any."""
    defaults = {f.name.replace("_", "-"): f.default for f in dataclasses.fields(pass_class)}
    for option, values in spec.parameters.items():
        expected = type(defaults.get(option.replace("_", "-"), None))
        if expected not in _TYPE_NAMES:
            continue
        for value in values:
            ok = isinstance(value, expected) and not (expected is int and isinstance(value, bool))
            if not ok and not (expected is float and isinstance(value, int) and not isinstance(value, bool)):
                shown = str(value).lower() if isinstance(value, bool) else value
                return f"option '{option}' expects {_TYPE_NAMES[expected]}, got '{shown}'"
    return None


def _without_separator_spaces(text: str) -> str:
    """Drops the spaces MLIR allows between passes (`cse, dce`); inside `{...}` they
    separate options and stay."""
    kept, depth = [], 0
    for ch in text:
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if depth > 0 or not ch.isspace():
            kept.append(ch)
    return "".join(kept)


def _first_line(e: BaseException) -> str:
    lines = [line for line in str(e).splitlines() if line.strip()]
    return lines[-1].strip() if lines else type(e).__name__


class PipelinePass(ModulePass):
    """A pass made of other passes; `stages` builds them from this pass's options."""

    def stages(self) -> list[ModulePass]:
        raise NotImplementedError

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        with cyclic_gc_paused():  # a pipeline run by a driver other than run_pipeline (core/collector.py)
            for stage in self.stages():
                run_pass(stage, ctx, op)


# ---- instrumentation --------------------------------------------------------------------


@dataclass
class Instrumentation:
    """What happens around each leaf pass; the tools configure one per run."""

    verify_each: bool = True
    reverifier: Reverifier = field(default_factory=lambda: Reverifier(verify_op))
    after_pass: list[Callable[[ModulePass, ModuleOp], None]] = field(default_factory=list)
    statistics: dict[str, dict[str, int]] = field(default_factory=dict)
    timings: list[tuple[str, float]] = field(default_factory=list)

    def record(self, pass_name: str, counter: str, amount: int = 1) -> None:
        counters = self.statistics.setdefault(pass_name, {})
        counters[counter] = counters.get(counter, 0) + amount

    def statistics_report(self) -> str:
        lines = []
        for pass_name, counters in self.statistics.items():
            shown = ", ".join(f"{value} {name}" for name, value in counters.items())
            lines.append(f"{pass_name}: {shown}")
        return "\n".join(lines)


_CURRENT: contextvars.ContextVar[Instrumentation | None] = contextvars.ContextVar(
    "gecomp_instrumentation", default=None
)


@contextmanager
def instrumented(instrumentation: Instrumentation) -> Iterator[Instrumentation]:
    token = _CURRENT.set(instrumentation)
    try:
        yield instrumentation
    finally:
        _CURRENT.reset(token)


def record_statistic(pass_name: str, counter: str, amount: int = 1) -> None:
    """Count something a pass did (`--pass-statistics`); a no-op outside a tool run.
    Zero counts are kept, as MLIR shows them: "0 ops folded" says the pass ran."""
    current = _CURRENT.get()
    if current is not None:
        current.record(pass_name, counter, amount)


def run_pass(p: ModulePass, ctx: Context, module: ModuleOp) -> None:
    """Apply one pass with the current instrumentation around it."""
    current = _CURRENT.get()
    if isinstance(p, PipelinePass):
        p.apply(ctx, module)
        return
    start = time.perf_counter()
    try:
        p.apply(ctx, module)
    except DiagnosticException as e:
        raise CompileError(f"pass '{p.name}' failed: {_first_line(e)}") from None
    if current is None:
        return
    current.timings.append((p.name, time.perf_counter() - start))
    if current.verify_each:
        try:
            verify_module(module, current.reverifier)
        except CompileError as e:
            raise CompileError(f"{e.message} (after pass '{p.name}')", e.location) from None
    for hook in current.after_pass:
        hook(p, module)


def run_pipeline(passes: list[ModulePass], ctx: Context, module: ModuleOp) -> None:
    """Run the passes in order, the cycle collector paused (core/collector.py)."""
    with cyclic_gc_paused():
        for p in passes:
            run_pass(p, ctx, module)
