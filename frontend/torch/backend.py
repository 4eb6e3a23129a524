"""The `torch.compile` backend: dynamo's graph -> ATen -> ge -> the NPU simulator.

    model = torch.compile(model, backend=gecomp.torch.backend(hw="ascend910"))
    y = model(x)                       # real tensors, computed by the simulator
    gecomp.torch.last_report()         # cycles, time_us, kernels of that call

Dynamo hands the backend one FX graph per captured region (graph breaks make
several; the Python between them runs as usual). Each graph is compiled per
input shape: static shapes, as GE compiles once per gear. A call with a shape
not seen yet retraces the graph at that shape (capture.py), splits off what ge
cannot run (partition.py), converts each part (convert.py), compiles it with the
pipeline through the pass driver `ge-opt` uses, and keeps the result; `gears`
compiles a list of shapes up front. Parameters and buffers are baked into the
ge module as constants: the backend is for inference, and a model whose weights
change must be compiled again (`torch._dynamo.reset()`).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
from torch.fx import GraphModule
from xdsl.dialects.builtin import ModuleOp

from ...dialects.context import make_context
from ...core.passes import parse_pass_pipeline, run_pipeline
from ...simulator.run import execute
from .capture import apply_dynamo_settings, fold_constants, scalar_positions, scalar_reads, static_inputs, trace_aten
from .convert import convert_graph, element_type_name, to_numpy
from .partition import mark_constant_inputs, split


@dataclass
class Report:
    """The simulated NPU time of one call of a compiled graph (all its parts)."""

    cycles: int = 0
    time_us: float = 0.0
    kernels: int = 0  # each phase of a merged launch counted (as bench/models.py counts)
    parts: int = 0  # ge modules run (more than one where ops fell back in between)
    fallbacks: list[str] = field(default_factory=list)  # ops that ran in eager PyTorch

    def __str__(self) -> str:
        text = f"{self.cycles} cycles, {self.time_us:.2f} us on the NPU, {self.kernels} kernels"
        if self.fallbacks:
            text += f"; in eager PyTorch: {', '.join(self.fallbacks)}"
        return text


_LAST: list[Report | None] = [None]


def last_report() -> Report | None:
    """The report of the most recent call of a graph compiled by this backend."""
    return _LAST[0]


@dataclass
class Timings:
    """Where compile time went for one shape (wall seconds; `*_cpu`: this process's
    CPU seconds, the figure to read on a loaded machine)."""

    capture: float = 0.0  # retrace to ATen, fold constants, split
    conversion: float = 0.0  # ATen -> ge
    compile: float = 0.0  # the pipeline
    capture_cpu: float = 0.0
    conversion_cpu: float = 0.0


@dataclass
class Compiled:
    """One graph at one shape: the outer module to call and what it holds."""

    module: GraphModule
    parts: list[SimulatedPart]
    fallbacks: list[str]
    aten_ops: int
    timings: Timings
    input_shapes: list[tuple[int, ...]] = field(default_factory=list)  # of the user inputs


class SimulatedPart(torch.nn.Module):
    """One converted partition: runs its compiled module on the simulator."""

    def __init__(self, ge_module: ModuleOp, compiled: ModuleOp, constant_inputs: list[bool],
                 result_dtypes: list[torch.dtype], options: Options, report: Report):
        super().__init__()
        self.ge_module = ge_module
        self.compiled = compiled
        self.constant_inputs = constant_inputs
        self.result_dtypes = result_dtypes
        self.options = options
        self.report = report

    def forward(self, *args):
        inputs = [to_numpy(a, self.options.precision) for a, constant in zip(args, self.constant_inputs)
                  if not constant]
        execution = execute(self.compiled, inputs, hw=self.options.hw)
        sim = execution.report
        if sim is not None:
            self.report.cycles += sim.total_cycles
            self.report.time_us += sim.time_us
            self.report.kernels += sum(len(k.phases) or 1 for k in sim.kernels)  # a merged launch's phases each
        self.report.parts += 1
        return tuple(torch.from_numpy(r.copy()).to(dtype) for r, dtype in zip(execution.results, self.result_dtypes))


@dataclass(frozen=True)
class Options:
    hw: str | None
    pipeline: str
    precision: str | None
    strict: bool


def compile_module(module: ModuleOp, pipeline: str, hw: str | None = None) -> ModuleOp:
    """`module` through `pipeline` with the pass driver `ge-opt` uses; passes that
    take a hardware preset (`ge-compile{hw=...}`) compile for `hw`."""
    compiled = module.clone()
    passes = parse_pass_pipeline(pipeline)
    if hw is not None:
        passes = [dataclasses.replace(p, hw=hw) if "hw" in {f.name for f in dataclasses.fields(p)} else p
                  for p in passes]
    run_pipeline(passes, make_context(), compiled)
    return compiled


def compile_graph(gm: torch.nn.Module, args: Sequence, static: set[int], options: Options,
                  report: Report) -> Compiled:
    """`gm` at the shapes of `args`: captured, split, converted and compiled."""
    timings = Timings()
    start, start_cpu = time.perf_counter(), time.process_time()
    traced = trace_aten(gm, args)
    fold_constants(traced, args, static)
    aten_ops = sum(1 for n in traced.graph.nodes if n.op == "call_function")
    parts = split(traced, strict=options.strict)
    timings.capture, timings.capture_cpu = time.perf_counter() - start, time.process_time() - start_cpu
    simulated = []
    for name in parts.partitions:
        mark_constant_inputs(parts.module, name)
        sub = getattr(parts.module, name)
        start, start_cpu = time.perf_counter(), time.process_time()
        ge_module = convert_graph(sub.graph, name=name, precision=options.precision)
        timings.conversion += time.perf_counter() - start
        timings.conversion_cpu += time.process_time() - start_cpu
        start = time.perf_counter()
        compiled = compile_module(ge_module, options.pipeline, options.hw)
        timings.compile += time.perf_counter() - start
        placeholders = [n for n in sub.graph.nodes if n.op == "placeholder"]
        outputs = next(n for n in sub.graph.nodes if n.op == "output").args[0]
        part = SimulatedPart(ge_module, compiled, ["constant" in p.meta for p in placeholders],
                             [o.meta["val"].dtype for o in outputs], options, report)
        setattr(parts.module, name, part)
        simulated.append(part)
    parts.module.recompile()
    return Compiled(parts.module, simulated, list(parts.fallbacks), aten_ops, timings)


class CompiledGraph:
    """What the backend returns for one dynamo graph: a compiled module per shape."""

    def __init__(self, gm: GraphModule, example_inputs: Sequence, options: Options, owner: Backend):
        self.gm = gm
        self.options = options
        self.owner = owner
        self.static = static_inputs(gm, example_inputs)
        self.scalar_positions = scalar_positions(gm)  # read at every call (key)
        self.by_shape: dict[tuple, Compiled] = {}
        self.report = Report()
        self.gears = list(owner.gears)  # compiled at the first call, outside dynamo's capture

    def key(self, args: Sequence) -> tuple:
        shapes = tuple((tuple(a.shape), a.dtype) if isinstance(a, torch.Tensor) else a for a in args)
        return shapes, tuple(sorted(scalar_reads(self.gm, args, self.scalar_positions).items()))

    def compiled_for(self, args: Sequence) -> Compiled:
        key = self.key(args)
        if key not in self.by_shape:
            self.by_shape[key] = compile_graph(self.gm, args, self.static, self.options, self.report)
            self.by_shape[key].input_shapes = [tuple(a.shape) for i, a in enumerate(args)
                                               if isinstance(a, torch.Tensor) and i not in self.static]
            self.owner.compilations.append(self.by_shape[key])
        return self.by_shape[key]

    def precompile(self, example_inputs: Sequence, gears: Sequence) -> None:
        """Compiles every gear: the user inputs of `example_inputs` (a call's
        arguments) replaced by zeros of the gear's shapes."""
        users = [i for i, a in enumerate(example_inputs) if isinstance(a, torch.Tensor) and i not in self.static]
        for gear in gears:
            shapes = [gear] if gear and isinstance(gear[0], int) else list(gear)
            if len(shapes) != len(users):
                raise ValueError(f"gear {gear!r} gives {len(shapes)} shapes; the graph has {len(users)} inputs")
            args = list(example_inputs)
            for i, shape in zip(users, shapes):
                args[i] = torch.zeros(tuple(shape), dtype=example_inputs[i].dtype)
            if self._specialised_to_other_shapes(args):
                continue
            self.compiled_for(self._sizes_of(args))

    def _sizes_of(self, args: list) -> list:
        """`args` with the size arguments of a dynamic graph (SymInts at capture)
        set to the values they take at the shapes of `args`' tensors."""
        sizes = {}
        placeholders = [n for n in self.gm.graph.nodes if n.op == "placeholder"]
        for node, arg in zip(placeholders, args):
            val = node.meta.get("example_value")
            if isinstance(val, torch.Tensor) and isinstance(arg, torch.Tensor):
                sizes.update({str(d): int(v) for d, v in zip(val.shape, arg.shape) if isinstance(d, torch.SymInt)})
        resolved = list(args)
        for i, node in enumerate(placeholders[:len(args)]):
            val = node.meta.get("example_value")
            if isinstance(val, torch.SymInt):
                if str(val) not in sizes:
                    raise ValueError(f"gears cannot set the size {val} (it is no input's dimension)")
                resolved[i] = sizes[str(val)]
        return resolved

    def _specialised_to_other_shapes(self, args) -> bool:
        """A graph dynamo traced with static shapes only runs at those shapes."""
        placeholders = [n for n in self.gm.graph.nodes if n.op == "placeholder"]
        for node, arg in zip(placeholders, args):
            val = node.meta.get("example_value")
            if isinstance(val, torch.Tensor) and isinstance(arg, torch.Tensor):
                if all(isinstance(d, int) for d in val.shape) and tuple(val.shape) != tuple(arg.shape):
                    return True
        return False

    def __call__(self, *args):
        if self.gears:
            gears, self.gears = self.gears, []
            self.precompile(args, gears)
        compiled = self.compiled_for(args)
        self.report = Report(fallbacks=compiled.fallbacks)
        for part in compiled.parts:
            part.report = self.report
        outputs = compiled.module(*args)
        _LAST[0] = self.report
        if self.owner.callback is not None:
            self.owner.callback(self.report)
        return outputs


class Backend:
    """A `torch.compile` backend compiling for the NPU simulator (see `backend`)."""

    def __init__(self, hw: str | None, pipeline: str, precision: str | None, strict: bool,
                 gears: Sequence | None, callback: Callable[[Report], None] | None):
        if precision is not None:
            element_type_name(precision)
        parse_pass_pipeline(pipeline)  # a bad pipeline is an error here, not at the first call
        if hw is not None:
            from ...simulator.hardware import load_preset

            load_preset(hw)
        self.options = Options(hw, pipeline, precision, strict)
        self.gears = list(gears or [])
        self.callback = callback
        self.compilations: list[Compiled] = []
        apply_dynamo_settings()  # so dynamo captures recurrent modules (capture.DYNAMO_SETTINGS)

    def __call__(self, gm: GraphModule, example_inputs: Sequence) -> CompiledGraph:
        return CompiledGraph(gm, example_inputs, self.options, self)


def backend(hw: str | None = "ascend910", pipeline: str = "ge-compile", precision: str | None = None,
            strict: bool = False, gears: Sequence | None = None,
            callback: Callable[[Report], None] | None = None) -> Backend:
    """A backend for `torch.compile(model, backend=...)` running on the NPU simulator.

    hw: the hardware preset; pipeline: the ge-opt pipeline that compiles each graph
    (`ge-compile{fuse=false reuse=false streams=1}` is eager mode); precision: the
    float type computed in (`"f16"`; None: the model's); strict: an op ge cannot
    run is an error instead of running in eager PyTorch; gears: input shapes to
    compile up front (one shape per graph input, or a shape for a single input);
    callback: called with the `Report` of every call."""
    return Backend(hw, pipeline, precision, strict, gears, callback)
