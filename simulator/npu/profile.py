"""Profiles by op type, as msprof gives them on the device (seed 000's table):
one task per kernel (or per phase of a merged kernel), grouped by the op it was
lowered from, with the core type it ran on, and the eager and graph modes of the
same model side by side.

A task's op type is what `npu.sources` recorded when the kernel was built
(`fused.matmul_bias_act`, `ge.relu`, `fused.group<mul,sigmoid,mul>`, `copy`);
its core type follows from the pipes it kept busy, in CANN's terms: AI_CORE
(cube only), AI_VECTOR_CORE (no cube), MIX_AIC / MIX_AIV (both; named after the
busier of the two).
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass

from .hazards import PIPE_INDEX
from .program import STAT_INDEX
from .report import SimulationReport


@dataclass(frozen=True)
class Task:
    """One kernel, or one phase of a merged kernel, as a profiler lists it."""

    name: str
    op_type: str
    core_type: str
    start_cycle: int
    cycles: int
    block_dim: int
    cube_busy: int
    vector_busy: int
    gm_read: int
    gm_written: int


def core_type(cube_busy: int, vector_busy: int) -> str:
    if cube_busy and vector_busy:
        return "MIX_AIC" if cube_busy >= vector_busy else "MIX_AIV"
    return "AI_CORE" if cube_busy else "AI_VECTOR_CORE"


def tasks(report: SimulationReport) -> list[Task]:
    """The tasks of a simulation in launch order: a merged kernel's phases each."""
    found = []
    for kernel in report.kernels:
        parts = kernel.phases or [kernel]
        sources = kernel.sources if len(kernel.sources) == len(parts) else ["unknown"] * len(parts)
        for part, source in zip(parts, sources):
            cube, vector = part.busy[PIPE_INDEX["M"]], part.busy[PIPE_INDEX["V"]]
            found.append(
                Task(
                    part.name, source, core_type(cube, vector), part.start, part.cycles, kernel.block_dim,
                    cube, vector, int(part.stats[STAT_INDEX["gm_read"]]), int(part.stats[STAT_INDEX["gm_written"]]),
                )
            )
    return found


@dataclass
class OpTypeRow:
    op_type: str
    core_type: str
    count: int
    cycles: int


def by_op_type(found: Sequence[Task]) -> list[OpTypeRow]:
    """Tasks summed per (op type, core type), the most time first."""
    rows: dict[tuple[str, str], OpTypeRow] = {}
    for task in found:
        row = rows.setdefault((task.op_type, task.core_type), OpTypeRow(task.op_type, task.core_type, 0, 0))
        row.count += 1
        row.cycles += task.cycles
    return sorted(rows.values(), key=lambda r: (-r.cycles, r.op_type))


def comparison_table(modes: dict[str, SimulationReport], markdown: bool = False) -> str:
    """Seed 000's table: a row per op type and core type, count / time (us) / share
    for each mode, sorted by the time in the first mode; then the totals (the
    device time, launch overheads and gaps included) and the change."""
    names = list(modes)
    hw = next(iter(modes.values())).hw
    tables = {name: {(r.op_type, r.core_type): r for r in by_op_type(tasks(report))} for name, report in modes.items()}
    task_total = {name: sum(r.cycles for r in t.values()) or 1 for name, t in tables.items()}
    keys = list(dict.fromkeys(k for name in names for k in tables[name]))
    keys.sort(key=lambda k: tuple(-(tables[n][k].cycles if k in tables[n] else 0) for n in names))
    header = ["op type", "core type"] + [f"{n} {c}" for n in names for c in ("count", "time us", "share")]
    rows = []
    for key in keys:
        cells = list(key)
        for name in names:
            row = tables[name].get(key)
            cells += (
                ["-", "-", "-"] if row is None else
                [str(row.count), f"{hw.cycles_to_us(row.cycles):.3f}", f"{100 * row.cycles / task_total[name]:.1f}%"]
            )
        rows.append(cells)
    totals = ["total (device)", ""]
    for name in names:
        report = modes[name]
        totals += [str(sum(r.count for r in tables[name].values())), f"{report.time_us:.3f}", ""]
    rows.append(totals)
    text = _format(header, rows, markdown)
    if len(names) == 2:
        a, b = (modes[n].time_us for n in names)
        text += f"\n{names[1]} vs {names[0]}: {b:.3f} us vs {a:.3f} us ({a / b if b else float('inf'):.2f}x)"
    return text


def _format(header: list[str], rows: list[list[str]], markdown: bool) -> str:
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])
    widths = [max(len(c) for c in column) for column in zip(header, *rows)]
    line = lambda cells: "  ".join(  # noqa: E731 - a one-line formatter
        c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))
    )
    return "\n".join([line(header)] + [line(r) for r in rows])


OP_SUMMARY_COLUMNS = (
    "Op Name", "OP Type", "Task Type", "Task Start Time(us)", "Task Duration(us)", "Block Dim",
    "aic_cube_busy(cycles)", "aiv_vec_busy(cycles)", "GM Read(B)", "GM Written(B)",
)


def write_op_summary(path: str, report: SimulationReport) -> None:
    """An msprof-like op_summary.csv: a row per task."""
    hw = report.hw
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(OP_SUMMARY_COLUMNS)
        for t in tasks(report):
            writer.writerow([
                t.name, t.op_type, t.core_type, f"{hw.cycles_to_us(t.start_cycle):.3f}",
                f"{hw.cycles_to_us(t.cycles):.3f}", t.block_dim, t.cube_busy, t.vector_busy, t.gm_read, t.gm_written,
            ])
