"""What a simulation reports: the text of `ge-sim --report`, the `--json`
document and the `--trace` Chrome trace (DESIGN.md §5).

Definitions:

* a pipe's busy cycles: the sum over all cores of the cycles its instructions
  occupied it (a transfer's duration includes HBM contention); its utilisation
  is busy / core-active cycles (the sum over blocks of block durations), per
  kernel like msprof's op summary ratios (aic_mte2_ratio ...);
* bytes per path: the logical bytes moved (rows x cols x element size), so the
  total equals the sum of the instructions' sizes; `hbm_bytes` counts the
  32-byte bursts actually crossing the HBM, `l2_hit_bytes` those the L2 served
  instead (presets with an L2, `l2.py`);
* roofline_cycles = max(cube MACs at the cube's peak / cores, vector repeats at
  one per cycle x slope / cores, GM bytes / HBM bytes per cycle): a lower bound
  no schedule of this module on this hardware can beat. With an L2 the GM bytes
  are the compulsory ones (bytes read from the HBM for the first time, and every
  byte written), since re-reads may hit the cache;
* a kernel's port_cycles: the largest, over its blocks, of the GM bytes one
  pipe of that core moved (MTE2 reading, MTE3 writing, FIX writing) at the
  per-core bandwidth of their paths: a bound of its own, from the core's ports
  rather than the shared HBM. Where every core must read the same operand (a
  matrix product with few rows re-reads A on every core), it lies well above
  the roofline, which counts each GM byte once.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from xdsl.dialects.builtin import IntegerAttr

from ..hardware import PATHS, HardwarePreset
from .hazards import PIPE_NAMES
from .program import STAT_INDEX

GM_PORTS = {"MTE2": ("gm_to_l1", "gm_to_ub"), "MTE3": ("ub_to_gm",), "FIX": ("l0c_to_gm",)}
"""The pipes that carry a core's GM traffic, and their paths."""


def port_cycles(hw: HardwarePreset, stats: list[float]) -> float:
    """A block's lower bound from its own GM ports (see the module docstring)."""
    return max(
        sum(stats[STAT_INDEX[path]] / hw.paths[path].bytes_per_cycle for path in paths)
        for paths in GM_PORTS.values()
    )


RATIO_NAMES = {"S": "scalar", "MTE1": "mte1", "MTE2": "mte2", "MTE3": "mte3", "M": "cube", "V": "vec", "FIX": "fix"}


def roofline_terms(hw: HardwarePreset, cube_min: float, vector_min: float, gm_bytes: float) -> dict[str, float | str]:
    """The three lower bounds (cube, vector, memory) of work needing `cube_min` /
    `vector_min` pipe cycles on one core and moving `gm_bytes` through the HBM,
    spread over every core; `roofline_cycles` is the largest, `bound` names it."""
    cores = hw.core_count
    terms = {
        "cube_cycles": cube_min / cores,
        "vector_cycles": vector_min / cores,
        "memory_cycles": gm_bytes / hw.hbm_bytes_per_cycle,
    }
    bound = max(terms, key=terms.get)
    return {**terms, "roofline_cycles": terms[bound], "bound": bound.removesuffix("_cycles")}


def pipe_ratios(busy: list[int], core_cycles: int) -> dict[str, float]:
    active = max(core_cycles, 1)
    return {RATIO_NAMES[p]: busy[i] / active for i, p in enumerate(PIPE_NAMES)}


@dataclass
class PhaseRecord:
    """One phase of a kernel split by npu.sync_all: from the barrier that starts it
    (every block together) to the one that ends it, summed over the blocks."""

    name: str
    start: int
    end: int
    busy: list[int]
    stats: list[float]
    core_cycles: int

    @property
    def cycles(self) -> int:
        return self.end - self.start

    def ratios(self) -> dict[str, float]:
        return pipe_ratios(self.busy, self.core_cycles)


def split_phases(names: list[str], blocks) -> list[PhaseRecord]:
    """The phases of a launch's blocks ((core id, start, end, Core) each) from the
    marks each Core left at its sync_all; none for a kernel without one."""
    count = len(blocks[0][3].phase_marks) + 1 if blocks else 1
    if count == 1:
        return []
    phases = []
    for p in range(count):
        busy = [0] * len(PIPE_NAMES)
        stats = [0.0] * len(STAT_INDEX)
        spans = []
        for _, begin, end, core in blocks:
            marks = core.phase_marks
            before = marks[p - 1] if p else (begin, [0] * len(busy), [0.0] * len(stats))
            after = marks[p] if p < count - 1 else (end, core.busy, core.stats)
            busy = [t + a - b for t, a, b in zip(busy, after[1], before[1])]
            stats = [t + a - b for t, a, b in zip(stats, after[2], before[2])]
            spans.append((before[0], after[0]))
        name = names[p] if len(names) == count else f"phase {p}"
        phases.append(
            PhaseRecord(name, min(b for b, _ in spans), max(e for _, e in spans), busy, stats, sum(e - b for b, e in spans))
        )
    return phases


@dataclass
class KernelRecord:
    """One launch: timing, pipe busy cycles and traffic summed over its blocks."""

    name: str
    stream: int
    block_dim: int
    start: int
    end: int
    busy: list[int]
    stats: list[float]
    instructions: int
    core_cycles: int  # sum of block durations
    cores: list[int]
    block_spans: list[tuple[int, int, int]]  # (start, core id, end) per block, in block order
    port_cycles: float  # the busiest block's GM port bound (module docstring)
    phases: list[PhaseRecord] = field(default_factory=list)  # of a kernel split by npu.sync_all
    sources: list[str] = field(default_factory=list)  # the op type of each phase (npu.sources), if recorded

    @classmethod
    def of(
        cls, hw: HardwarePreset, name: str, stream: int, block_dim: int, start: int, blocks, phase_names=(),
        sources=(),
    ) -> "KernelRecord":
        """Sum the blocks of a launch: (core id, block start, block end, Core) each.
        `phase_names` name the phases of a kernel split by npu.sync_all."""
        busy = [0] * len(PIPE_NAMES)
        stats = [0.0] * len(STAT_INDEX)
        for _, _, _, core in blocks:
            busy = [b + c for b, c in zip(busy, core.busy)]
            stats = [s + c for s, c in zip(stats, core.stats)]
        return cls(
            name,
            stream,
            block_dim,
            start,
            max((end for _, _, end, _ in blocks), default=start),
            busy,
            stats,
            sum(core.count for *_, core in blocks),
            sum(end - begin for _, begin, end, _ in blocks),
            [core_id for core_id, *_ in blocks],
            [(begin, core_id, end) for core_id, begin, end, _ in blocks],
            max((port_cycles(hw, core.stats) for *_, core in blocks), default=0.0),
            split_phases(list(phase_names), blocks),
            list(sources),
        )

    @property
    def cycles(self) -> int:
        return self.end - self.start

    def ratios(self) -> dict[str, float]:
        return pipe_ratios(self.busy, self.core_cycles)


@dataclass
class SimulationReport:
    """Everything `ge-sim` reports about one run. The GM plan's lower bound and
    no-reuse size come from the module (`planned_arena`) when npu-plan-gm made it."""

    hw: HardwarePreset
    total_cycles: int
    kernels: list[KernelRecord]
    peak_gm_bytes: int
    arena_bytes: int
    trace_events: list | None = field(default=None)
    memory_timeline: list | None = field(default=None)  # GlobalMemory.bandwidth_timeline(), when traced
    arena_lower_bound_bytes: int | None = None  # recorded by npu-plan-gm, if it ran
    arena_no_reuse_bytes: int | None = None
    races_checked: bool = True  # False: `ge-sim --no-race-check`, the race checker did not run
    approximate: object = None  # `ge-sim --approx`: what was timed (`approx.Tally`); None: simulated

    # ---- totals -----------------------------------------------------------------------

    def _sum(self, attribute: str, size: int) -> list:
        totals = [0] * size
        for k in self.kernels:
            for i, v in enumerate(getattr(k, attribute)):
                totals[i] += v
        return totals

    @property
    def busy(self) -> list[int]:
        return self._sum("busy", len(PIPE_NAMES))

    @property
    def stats(self) -> list[float]:
        return self._sum("stats", len(STAT_INDEX))

    def stat(self, name: str) -> float:
        return self.stats[STAT_INDEX[name]]

    @property
    def core_cycles(self) -> int:
        return sum(k.core_cycles for k in self.kernels)

    @property
    def instructions(self) -> int:
        return sum(k.instructions for k in self.kernels)

    @property
    def time_us(self) -> float:
        return self.hw.cycles_to_us(self.total_cycles)

    @property
    def gm_bytes_read(self) -> int:
        return int(self.stat("gm_read"))

    @property
    def gm_bytes_written(self) -> int:
        return int(self.stat("gm_written"))

    def _with_fixed(self, arena: int | None) -> int | None:
        """An arena size plus the GM outside the arena (inputs, outputs, constants)."""
        return None if arena is None else arena + self.peak_gm_bytes - self.arena_bytes

    @property
    def gm_lower_bound_bytes(self) -> int | None:
        """The most GM bytes live at any one time (arena lower bound + the rest)."""
        return self._with_fixed(self.arena_lower_bound_bytes)

    @property
    def gm_no_reuse_bytes(self) -> int | None:
        return self._with_fixed(self.arena_no_reuse_bytes)

    @property
    def _read_bound_bytes(self) -> float:
        """GM bytes any schedule must read from the HBM: all of them without an L2,
        the compulsory misses with one."""
        return self.stat("hbm_compulsory") if self.hw.l2_bytes else self.gm_bytes_read

    def bytes_per_path(self) -> dict[str, int]:
        stats = self.stats
        return {p: int(stats[STAT_INDEX[p]]) for p in PATHS}

    def utilisation(self) -> dict[str, float]:
        active = max(self.core_cycles, 1)
        return {p: b / active for p, b in zip(PIPE_NAMES, self.busy)}

    def roofline(self) -> dict[str, float | str]:
        return roofline_terms(
            self.hw, self.stat("cube_min"), self.stat("vector_min"), self._read_bound_bytes + self.gm_bytes_written
        )

    @property
    def roofline_cycles(self) -> float:
        return float(self.roofline()["roofline_cycles"])

    # ---- text -------------------------------------------------------------------------

    def __str__(self) -> str:
        return self.text()

    def text(self) -> str:
        hw = self.hw
        roof = self.roofline()
        achieved = roof["roofline_cycles"] / self.total_cycles if self.total_cycles else 0.0
        lines = [
            f"npu simulation on {hw.name}: {hw.architecture}, {hw.core_count} cores at {hw.freq_ghz:g} GHz",
            f"total: {self.total_cycles} cycles = {self.time_us:.3f} us",
            f"roofline: {roof['roofline_cycles']:.0f} cycles ({roof['bound']} bound), "
            f"{100 * achieved:.1f}% of it achieved",
            f"gm: read {self.gm_bytes_read} B, written {self.gm_bytes_written} B, "
            f"peak {self.peak_gm_bytes} B (arena {self.arena_bytes} B)",
            *self._gm_plan_line(),
            f"instructions: {self.instructions} in {len(self.kernels)} launches, "
            f"{sum(len(k.cores) for k in self.kernels)} blocks",
            *self._race_check_line(),
            "",
            f"{'pipe':<6}{'busy cycles':>14}{'utilisation':>13}",
        ]
        for pipe, busy in zip(PIPE_NAMES, self.busy):
            lines.append(f"{pipe:<6}{busy:>14}{100 * busy / max(self.core_cycles, 1):>12.1f}%")
        lines += ["", f"{'path':<11}{'bytes':>14}"]
        for path, nbytes in self.bytes_per_path().items():
            if nbytes:
                lines.append(f"{path:<11}{nbytes:>14}")
        lines += ["", self._kernel_table()]
        return "\n".join(lines)

    def _race_check_line(self) -> list[str]:
        lines = []
        tally = self.approximate
        if tally is not None:
            lines.append(
                f"approximate (--approx): cycles not simulated for every block: {tally.timed} of the {tally.blocks} "
                f"blocks of {tally.launches} launch(es) timed, each other block given the timing of one that ran "
                f"its phase's instructions ({tally.full_launches} launch(es) fully simulated); outputs and "
                f"instruction count exact ({tally.batched} of {tally.batched + tally.by_block} block instructions "
                f"computed in batches of blocks, at most {tally.batches} batch(es) per phase)"
            )
        if not self.races_checked:
            return lines + ["race check: skipped (--no-race-check): no access was checked for a missing sync"]
        if tally is not None and tally.timed < tally.blocks:
            lines.append(f"race check: the {tally.timed} timed blocks only (of {tally.blocks} approximated), "
                         "each in the phases it is timed in")
        return lines

    def _gm_plan_line(self) -> list[str]:
        if self.arena_lower_bound_bytes is None or self.arena_no_reuse_bytes is None:
            return []
        return [
            f"gm plan: peak {self.peak_gm_bytes} B, lower bound {self.gm_lower_bound_bytes} B, "
            f"no reuse {self.gm_no_reuse_bytes} B (arena {self.arena_bytes} B, lower bound "
            f"{self.arena_lower_bound_bytes} B, no reuse {self.arena_no_reuse_bytes} B)"
        ]

    def _kernel_table(self) -> str:
        """One row per launch; a kernel split by npu.sync_all gets a row per phase
        under it (stream and blocks left blank: the kernel's)."""
        ratio_columns = ("cube", "vec", "mte1", "mte2", "mte3", "fix", "scalar")
        names = [f"@{k.name}" for k in self.kernels] + [f"  {p.name}" for k in self.kernels for p in k.phases]
        width = max(22, *(len(n) + 2 for n in names))
        header = (
            f"{'kernel':<{width}}{'stream':>7}{'blocks':>7}{'start':>10}{'cycles':>10}{'time_us':>10}"
            + "".join(f"{c:>8}" for c in ratio_columns)
            + f"{'gm_read':>11}{'gm_written':>11}"
        )

        def row(name: str, stream: str, blocks: str, part) -> str:
            ratios = part.ratios()
            return (
                f"{name:<{width}}{stream:>7}{blocks:>7}{part.start:>10}{part.cycles:>10}"
                f"{self.hw.cycles_to_us(part.cycles):>10.3f}"
                + "".join(f"{100 * ratios[c]:>7.1f}%" for c in ratio_columns)
                + f"{int(part.stats[STAT_INDEX['gm_read']]):>11}{int(part.stats[STAT_INDEX['gm_written']]):>11}"
            )

        rows = [header]
        for k in self.kernels:
            rows.append(row(f"@{k.name}", str(k.stream), str(k.block_dim), k))
            rows += [row(f"  {p.name}", "", "", p) for p in k.phases]
        return "\n".join(rows)

    # ---- json -------------------------------------------------------------------------

    def as_json(self) -> dict:
        roof = self.roofline()
        return {
            "total_cycles": self.total_cycles,
            "races_checked": self.races_checked,
            **({"approximate": self.approximate.as_json()} if self.approximate is not None else {}),
            "time_us": self.time_us,
            "freq_ghz": self.hw.freq_ghz,
            "hw": self.hw.name,
            "cores": self.hw.core_count,
            "pipes": dict(zip(PIPE_NAMES, self.busy)),
            "utilisation": self.utilisation(),
            "gm_bytes_read": self.gm_bytes_read,
            "gm_bytes_written": self.gm_bytes_written,
            "hbm_bytes": int(self.stat("hbm_bytes")),
            "l2_hit_bytes": int(self.stat("l2_hit_bytes")),
            "peak_gm_bytes": self.peak_gm_bytes,
            "gm_lower_bound_bytes": self.gm_lower_bound_bytes,
            "gm_no_reuse_bytes": self.gm_no_reuse_bytes,
            "arena_bytes": self.arena_bytes,
            "arena_lower_bound_bytes": self.arena_lower_bound_bytes,
            "arena_no_reuse_bytes": self.arena_no_reuse_bytes,
            "bytes_per_path": self.bytes_per_path(),
            "instructions": self.instructions,
            "roofline_cycles": roof["roofline_cycles"],
            "roofline": roof,
            "kernels": [self._kernel_json(k) for k in self.kernels],
        }

    def _kernel_json(self, k: KernelRecord) -> dict:
        return {
            "name": k.name,
            "stream": k.stream,
            "block_dim": k.block_dim,
            "start_cycle": k.start,
            "cycles": k.cycles,
            "time_us": self.hw.cycles_to_us(k.cycles),
            "pipes": dict(zip(PIPE_NAMES, k.busy)),
            "ratios": k.ratios(),
            "gm_bytes_read": int(k.stats[STAT_INDEX["gm_read"]]),
            "gm_bytes_written": int(k.stats[STAT_INDEX["gm_written"]]),
            "instructions": k.instructions,
            "cores": k.cores,
            "port_cycles": k.port_cycles,
            "sources": k.sources,
            "phases": [
                {
                    "name": p.name,
                    "start_cycle": p.start,
                    "cycles": p.cycles,
                    "pipes": dict(zip(PIPE_NAMES, p.busy)),
                    "ratios": p.ratios(),
                    "gm_bytes_read": int(p.stats[STAT_INDEX["gm_read"]]),
                    "gm_bytes_written": int(p.stats[STAT_INDEX["gm_written"]]),
                }
                for p in k.phases
            ],
        }

    def json_text(self) -> str:
        return json.dumps(self.as_json(), indent=2)

    # ---- Chrome trace ----------------------------------------------------------------------

    def chrome_trace(self) -> dict:
        """Chrome trace-event JSON (opens in Perfetto / chrome://tracing): one process per
        core with a thread per pipe, and one process for the streams."""
        us = self.hw.cycles_to_us
        events = []
        streams_pid = self.hw.core_count
        used_cores = sorted({c for k in self.kernels for c in k.cores})
        for core in used_cores:
            events.append({"ph": "M", "name": "process_name", "pid": core, "args": {"name": f"core {core}"}})
            for tid, pipe in enumerate(PIPE_NAMES):
                events.append({"ph": "M", "name": "thread_name", "pid": core, "tid": tid, "args": {"name": pipe}})
        events.append({"ph": "M", "name": "process_name", "pid": streams_pid, "args": {"name": "streams"}})
        for stream in sorted({k.stream for k in self.kernels}):
            events.append(
                {"ph": "M", "name": "thread_name", "pid": streams_pid, "tid": stream, "args": {"name": f"stream {stream}"}}
            )
        for k in self.kernels:
            events.append(
                {
                    "ph": "X",
                    "name": f"@{k.name}",
                    "pid": streams_pid,
                    "tid": k.stream,
                    "ts": us(k.start),
                    "dur": us(k.cycles),
                    "args": {"block_dim": k.block_dim, "cycles": k.cycles},
                }
            )
        for core, pipe, name, start, end in self.trace_events or ():
            events.append({"ph": "X", "name": name, "pid": core, "tid": pipe, "ts": us(start), "dur": us(end - start)})
        events += self._memory_counters(streams_pid + 1)
        return {"traceEvents": events, "displayTimeUnit": "ns", "otherData": {"hw": self.hw.name}}

    def _memory_counters(self, pid: int) -> list[dict]:
        """The HBM's and the L2's bandwidth in use, in percent of the preset's, per
        booking window: a process of counter tracks under the cores."""
        if not self.memory_timeline:
            return []
        us, hw = self.hw.cycles_to_us, self.hw
        events = [{"ph": "M", "name": "process_name", "pid": pid, "args": {"name": "memory"}}]
        for start, window, hbm, l2 in self.memory_timeline:
            for name, moved, rate in (("HBM", hbm, hw.hbm_bytes_per_cycle), ("L2", l2, hw.l2_bytes_per_cycle)):
                if rate:
                    percent = round(100 * moved / (window * rate), 1)
                    args = {"% in use": percent}
                    events.append({"ph": "C", "name": f"{name} bandwidth", "pid": pid, "ts": us(start), "args": args})
        return events

    def trace_text(self) -> str:
        return json.dumps(self.chrome_trace())


def planned_arena(module) -> dict[str, int]:
    """The arena statistics npu-plan-gm recorded on `module`, as SimulationReport fields."""
    from ...dialects.npu.host import ARENA_LOWER_BOUND_ATTR, ARENA_NO_REUSE_ATTR

    fields = {ARENA_LOWER_BOUND_ATTR: "arena_lower_bound_bytes", ARENA_NO_REUSE_ATTR: "arena_no_reuse_bytes"}
    found = {}
    for attr, name in fields.items():
        value = module.attributes.get(attr)
        if isinstance(value, IntegerAttr):
            found[name] = value.value.data
    return found
