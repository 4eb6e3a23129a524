"""Pictures of a simulation (matplotlib, the optional extra `plot`; PNG or SVG by
the file name's extension):

* `timeline`: cores x pipes over time, as the Chrome trace shows them, each
  launch shaded and labelled, the phases of merged kernels marked;
* `roofline`: a point per task (kernel, or phase of a merged kernel) at its
  lower bound (cube, vector or HBM roofline over every core) against the cycles
  it took, sized by its time; on the diagonal a task runs at its bound;
* `memory_plan`: the GM arena as the planner placed it, each buffer a rectangle
  from its first to its last launch (x) at its offset and size (y), with the
  planner's lower bound (the most bytes live at once) as a line;
* `graph_dot` (no matplotlib needed): the graph of a ge / fused module in
  Graphviz DOT, rendered to PNG / SVG when the `dot` program is installed.
"""

from __future__ import annotations

import os
import shutil
import subprocess

from xdsl.dialects.builtin import ModuleOp

from ...core.diagnostics import CompileError
from ..hardware import HardwarePreset, load_preset
from ...core.signature import main_function
from .hazards import PIPE_NAMES
from .l2 import GlobalMemory
from .plan import HostPlan, Launch
from .program import STAT_INDEX
from .report import SimulationReport, roofline_terms

PIPE_COLOURS = {"S": "#9e9e9e", "MTE1": "#4caf50", "MTE2": "#2196f3", "MTE3": "#00bcd4",
                "M": "#f44336", "V": "#ff9800", "FIX": "#9c27b0"}


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise CompileError("pictures need matplotlib: pip install 'ge-compiler[plot]'") from None
    return plt


def _save(fig, path: str) -> None:
    if os.path.splitext(path)[1].lower() not in (".png", ".svg"):
        raise CompileError(f"'{path}': pictures are written as .png or .svg")
    try:
        fig.savefig(path, dpi=120, bbox_inches="tight")
    except OSError as e:
        raise CompileError(f"cannot write '{path}': {e.strerror}") from None


def timeline(report: SimulationReport, path: str) -> None:
    """Cores x pipes over time (needs a traced simulation)."""
    if report.trace_events is None:
        raise CompileError("the timeline needs a traced simulation (simulate with trace=True)")
    plt = _pyplot()
    cores = sorted({c for k in report.kernels for c in k.cores})
    rows = {(core, p): i for i, (core, p) in enumerate((c, p) for c in cores for p in range(len(PIPE_NAMES)))}
    bars: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for core, pipe, _, start, end in report.trace_events:
        bars.setdefault((core, pipe), []).append((start, end - start))
    fig, ax = plt.subplots(figsize=(14, max(3, 0.06 * len(rows) + 1.5)))
    for (core, pipe), spans in bars.items():  # one call per row: traces hold many thousand spans
        ax.broken_barh(spans, (rows[(core, pipe)], 0.9), color=PIPE_COLOURS[PIPE_NAMES[pipe]], linewidth=0)
    for i, k in enumerate(report.kernels):
        ax.axvspan(k.start, k.end, color="#000000", alpha=0.04 if i % 2 else 0.08, linewidth=0)
        ax.text(k.start, len(rows) + 0.5, f"@{k.name}", fontsize=6, rotation=30, va="bottom")
        for phase in k.phases[1:]:
            ax.axvline(phase.start, color="#555555", linewidth=0.6, linestyle=":")
    ax.set_yticks([rows[(c, 0)] + len(PIPE_NAMES) / 2 for c in cores], [f"core {c}" for c in cores], fontsize=6)
    ax.set_ylim(0, len(rows) + 1)
    ax.set_xlabel(f"cycles ({report.hw.name}, {report.hw.freq_ghz:g} GHz)")
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in PIPE_COLOURS.values()]
    ax.legend(handles, list(PIPE_COLOURS), loc="upper right", fontsize=7, ncol=len(PIPE_COLOURS))
    ax.set_title(f"timeline: {report.total_cycles} cycles, {len(report.kernels)} launches")
    _save(fig, path)
    plt.close(fig)


def task_bounds(report: SimulationReport) -> list[tuple[str, float, int]]:
    """(name, roofline cycles, cycles) per task: a kernel, or each of its phases."""
    found = []
    for k in report.kernels:
        for part in k.phases or [k]:
            stats = part.stats
            # As the module's roofline: with an L2, only the compulsory reads must cross the HBM.
            read = stats[STAT_INDEX["hbm_compulsory" if report.hw.l2_bytes else "gm_read"]]
            gm = read + stats[STAT_INDEX["gm_written"]]
            bound = roofline_terms(report.hw, stats[STAT_INDEX["cube_min"]], stats[STAT_INDEX["vector_min"]], gm)
            found.append((part.name, float(bound["roofline_cycles"]), part.cycles))
    return found


def roofline(report: SimulationReport, path: str) -> None:
    """Achieved against bound, a point per task sized by its time."""
    plt = _pyplot()
    tasks = [t for t in task_bounds(report) if t[2] > 0]
    fig, ax = plt.subplots(figsize=(7, 6))
    total = sum(t[2] for t in tasks) or 1
    xs = [max(t[1], 1.0) for t in tasks]
    ys = [t[2] for t in tasks]
    ax.scatter(xs, ys, s=[20 + 2000 * t[2] / total for t in tasks], alpha=0.6, color="#2196f3")
    for (name, _, _), x, y in sorted(zip(tasks, xs, ys), key=lambda z: -z[2])[:8]:
        ax.annotate(name, (x, y), fontsize=6)
    low, high = min(xs + ys), max(xs + ys)
    ax.plot([low, high], [low, high], color="#555555", linewidth=0.8, label="at the bound")
    ax.plot([low, high], [2 * low, 2 * high], color="#aaaaaa", linewidth=0.6, linestyle="--", label="50% of the bound")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("roofline (cycles: max of cube, vector, HBM bound over all cores)")
    ax.set_ylabel("simulated (cycles)")
    ax.set_title(f"roofline per task ({report.hw.name}); module at "
                 f"{100 * report.roofline_cycles / max(report.total_cycles, 1):.1f}% of its bound")
    ax.legend(fontsize=7)
    _save(fig, path)
    plt.close(fig)


def buffer_lifetimes(module: ModuleOp, hw: HardwarePreset | str | None = None) -> list[tuple[str, int, int, int, int]]:
    """(name, offset, bytes, first task, last task) of every arena buffer of an npu
    module's plan; tasks are the launches in host order, a merged kernel's phases
    each (the phases that touch a buffer bound its lifetime there)."""
    preset = hw if isinstance(hw, HardwarePreset) else load_preset(hw)
    plan = HostPlan(module, main_function(module), preset, GlobalMemory(preset))
    launches = [s for s in plan.steps if isinstance(s, Launch)]
    first_task, count = {}, 0
    for launch in launches:
        first_task[launch.index] = count
        count += launch.program.phases
    found = []
    for buffer in plan.buffers:
        spans = [
            (first_task[launch.index] + launch.phases(buffer)[0], first_task[launch.index] + launch.phases(buffer)[1])
            for launch in launches if any(a is buffer for a in launch.args)
        ]
        if buffer.in_arena and spans:
            found.append((buffer.label, buffer.address, buffer.nbytes, min(a for a, _ in spans), max(b for _, b in spans)))
    return found


def memory_plan(module: ModuleOp, report: SimulationReport, path: str) -> None:
    """The GM arena: offset x lifetime rectangles and the lower bound."""
    plt = _pyplot()
    buffers = buffer_lifetimes(module, report.hw)
    if not buffers:
        raise CompileError("the module's plan has no arena buffers to draw")
    fig, ax = plt.subplots(figsize=(10, 6))
    colours = plt.get_cmap("tab20")
    for i, (name, offset, size, first, last) in enumerate(buffers):
        ax.add_patch(plt.Rectangle((first - 0.45, offset), last - first + 0.9, size, alpha=0.7,
                                   facecolor=colours(i % 20), linewidth=0.5, edgecolor="black"))
        if size > 0.03 * report.arena_bytes:
            ax.text(first - 0.4, offset + size / 2, name, fontsize=6, va="center")
    ax.set_xlim(-1, max(b[4] for b in buffers) + 1)
    ax.set_ylim(0, max(report.arena_bytes, 1) * 1.05)
    if report.arena_lower_bound_bytes:
        ax.axhline(report.arena_lower_bound_bytes, color="#f44336", linewidth=1,
                   label=f"lower bound {report.arena_lower_bound_bytes} B")
    ax.axhline(report.arena_bytes, color="#333333", linewidth=0.8, linestyle="--", label=f"arena {report.arena_bytes} B")
    ax.set_xlabel("task (launches in host order; a merged kernel's phases each)")
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_ylabel("GM arena offset (bytes)")
    ax.set_title("GM memory plan")
    ax.legend(fontsize=7, loc="upper right")
    _save(fig, path)
    plt.close(fig)


def graph_dot(module: ModuleOp) -> str:
    """The ops of @main as a Graphviz digraph: a node per op (fused ops and groups
    filled), an edge per value used, inputs and outputs as ellipses."""
    main = main_function(module)
    lines = ["digraph ge {", "  rankdir=TB;", '  node [shape=box, fontsize=10, fontname="Helvetica"];']
    ids, edges = {}, set()
    for i, arg in enumerate(main.body.block.args):
        ids[arg] = f"in{i}"
        lines.append(f'  in{i} [shape=ellipse, label="{arg.name_hint or f"arg{i}"}"];')
    for n, op in enumerate(main.body.block.ops):
        if op.name in ("ge.const",):
            continue
        node = f"op{n}"
        for r in op.results:
            ids[r] = node
        label = op.name if op.name != "fused.group" else "fused.group\\n" + "\\n".join(
            o.name for o in op.regions[0].block.ops if o.name not in ("fused.yield", "ge.const"))
        if op.name == "func.return":
            lines.append(f'  {node} [shape=ellipse, label="outputs"];')
        else:
            style = ', style=filled, fillcolor="#ffe0b2"' if op.name.startswith("fused.") else ""
            lines.append(f'  {node} [label="{label}"{style}];')
        for operand in op.operands:
            if operand in ids and (ids[operand], node) not in edges:
                edges.add((ids[operand], node))
                lines.append(f"  {ids[operand]} -> {node};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def write_graph(module: ModuleOp, path: str) -> None:
    """`path`.dot as text; .png / .svg through Graphviz's `dot` if installed."""
    text = graph_dot(module)
    extension = os.path.splitext(path)[1].lower()
    try:
        if extension == ".dot":
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            return
        if extension not in (".png", ".svg"):
            raise CompileError(f"'{path}': graphs are written as .dot, .png or .svg")
        dot = shutil.which("dot")
        if dot is None:
            raise CompileError(f"'{path}': rendering needs Graphviz's dot program; write a .dot file instead")
        subprocess.run([dot, f"-T{extension[1:]}", "-o", path], input=text.encode(), check=True)
    except OSError as e:
        raise CompileError(f"cannot write '{path}': {e.strerror}") from None
