"""Hardware presets: the NPU's numbers, read from data files.

Every hardware number the compiler or the simulator uses comes from a preset file
in `simulator/presets/` (TOML, each value commented with its source), chosen by
name (`--hw ascend910`, the default) or by path (`--hw my_npu.toml`). Nothing else
in the code base hard-codes a buffer size, a bandwidth or a cycle count.

A malformed preset is a `CompileError` naming the file and the field.
"""

from __future__ import annotations

import math
import os
import tomllib
from dataclasses import dataclass, replace
from functools import lru_cache

from ..core.diagnostics import CompileError

DEFAULT_PRESET = "ascend910"
PRESET_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "presets")

SPACES = ("gm", "l1", "l0a", "l0b", "l0c", "ub")
LOCAL_SPACES = ("l1", "l0a", "l0b", "l0c", "ub")
PATHS = (
    "gm_to_l1",
    "gm_to_ub",
    "ub_to_gm",
    "l0c_to_gm",
    "l1_to_l0a",
    "l1_to_l0b",
    "l1_to_ub",
    "ub_to_l1",
    "l0c_to_ub",
)
VECTOR_CLASSES = ("binary", "scalar", "unary", "transcendental", "divide", "reduce", "data_movement")


@dataclass(frozen=True)
class PathSpec:
    """One data path: `latency + ceil(bytes / bytes_per_cycle)` cycles per transfer."""

    bytes_per_cycle: float
    latency: int

    def cycles(self, nbytes: int) -> int:
        return self.latency + math.ceil(nbytes / self.bytes_per_cycle)


@dataclass(frozen=True)
class VectorCost:
    """One vector instruction class: `head + slope * repeats` cycles."""

    head: int
    slope: float

    def cycles(self, repeats: int) -> int:
        return self.head + math.ceil(self.slope * max(repeats, 1))


@dataclass(frozen=True)
class HardwarePreset:
    name: str
    description: str
    architecture: str
    core_count: int
    freq_ghz: float
    buffers: dict[str, int]  # local space -> bytes per core
    alignment: dict[str, int]  # space -> bytes
    cube_cycles_per_block: dict[str, float]  # "fp16" / "fp32" / "int8" -> cycles per 16x16x16
    cube_startup: int
    vector_repeat_bytes: int
    vector_costs: dict[str, VectorCost]
    paths: dict[str, PathSpec]
    hbm_bytes_per_cycle: float
    event_ids: int
    flag_latency: int
    barrier_cost: int
    scalar_instruction_cycles: int
    loop_iteration_cycles: int
    kernel_launch_us: float
    source: str  # the file it was read from
    burst_bytes: int  # a data transfer moves whole bursts of this many bytes per contiguous run
    row_overhead_cycles: int  # extra cycles per additional contiguous run of a 2-D transfer
    l2_bytes: int = 0  # the shared L2 cache in front of the HBM (0: none; simulator/npu/l2.py)
    l2_bytes_per_cycle: float = 0.0
    l2_sector_bytes: int = 32

    def capacity(self, space: str) -> int:
        return self.buffers[space]

    def cycles_to_us(self, cycles: float) -> float:
        return cycles / (self.freq_ghz * 1e3)

    @property
    def kernel_launch_cycles(self) -> int:
        return round(self.kernel_launch_us * self.freq_ghz * 1e3)

    def mmad_cycles(self, m: int, n: int, k: int, dtype: str = "fp16") -> int:
        blocks = math.ceil(m / 16) * math.ceil(n / 16) * math.ceil(k / 16)
        return math.ceil(blocks * self.cube_cycles_per_block[dtype])

    @property
    def peak_fp16_flops_per_cycle(self) -> float:
        """Whole chip: 2 flops per MAC, 4096 MACs per block."""
        return 2 * 4096 * self.core_count / self.cube_cycles_per_block["fp16"]


UNLIMITED = 1e12
"""Bytes per cycle of a path or memory made free by `idealized`."""

IDEAL_RESOURCES = {
    "hbm": "the shared HBM and L2 (each core's GM ports still limit it)",
    "gm": "every GM transfer: the HBM, the L2, and each core's GM paths with their latency",
    "mte1": "the local copies: L1 -> L0A / L0B / UB and UB -> L1, with their latency",
    "cube": "the cube's mmads",
    "vector": "the vector instructions and the L0C -> UB drain (fixpipe on the V pipe)",
    "latency": "the landing latency of every transfer and the set_flag -> wait_flag latency",
    "launch": "the kernel launch overhead",
}
"""What `idealized` can make free, and what that covers."""

_LOCAL_PATHS = ("l1_to_l0a", "l1_to_l0b", "l1_to_ub", "ub_to_l1")
_GM_PATHS = ("gm_to_l1", "gm_to_ub", "ub_to_gm", "l0c_to_gm")


def idealized(preset: HardwarePreset, resource: str) -> HardwarePreset:
    """`preset` with one resource made free (IDEAL_RESOURCES): a what-if for
    sensitivity studies (bench/what_if.py). Simulating the same compiled module on
    it shows what that resource costs the module; a transfer keeps its per-row
    descriptor cycle (`transfer.row_overhead_cycles`). ValueError names the known
    resources for an unknown one."""
    if resource not in IDEAL_RESOURCES:
        raise ValueError(f"unknown resource '{resource}' (known: {', '.join(IDEAL_RESOURCES)})")
    free = PathSpec(UNLIMITED, 0)
    paths = dict(preset.paths)
    changes: dict = {}
    if resource in ("hbm", "gm"):
        changes.update(hbm_bytes_per_cycle=UNLIMITED, l2_bytes_per_cycle=UNLIMITED)
    if resource == "gm":
        paths.update((p, free) for p in _GM_PATHS)
    if resource == "mte1":
        paths.update((p, free) for p in _LOCAL_PATHS)
    if resource == "cube":
        changes.update(cube_cycles_per_block={t: 0.0 for t in preset.cube_cycles_per_block}, cube_startup=0)
    if resource == "vector":
        changes.update(vector_costs={c: VectorCost(0, 0.0) for c in preset.vector_costs})
        paths["l0c_to_ub"] = free
    if resource == "latency":
        paths = {p: PathSpec(spec.bytes_per_cycle, 0) for p, spec in paths.items()}
        changes.update(flag_latency=0)
    if resource == "launch":
        changes.update(kernel_launch_us=0.0)
    return replace(preset, name=f"{preset.name} ({resource} free)", paths=paths, **changes)


def available_presets() -> list[str]:
    return sorted(f[:-5] for f in os.listdir(PRESET_DIR) if f.endswith(".toml"))


def load_preset(name_or_path: str | None = None) -> HardwarePreset:
    """A preset by name (a file in simulator/presets) or by path to a TOML file."""
    return _load_cached(name_or_path or DEFAULT_PRESET)


@lru_cache(maxsize=16)
def _load_cached(name_or_path: str) -> HardwarePreset:
    path = _resolve(name_or_path)
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as e:
        raise CompileError(f"cannot read hardware preset '{path}': {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise CompileError(f"hardware preset '{path}': {e}") from None
    return _PresetReader(path, data).read()


def _resolve(name_or_path: str) -> str:
    if os.sep in name_or_path or name_or_path.endswith(".toml"):
        return name_or_path
    path = os.path.join(PRESET_DIR, f"{name_or_path}.toml")
    if not os.path.exists(path):
        raise CompileError(
            f"unknown hardware preset '{name_or_path}' (available: {', '.join(available_presets())}; "
            "or give a path to a .toml file)"
        )
    return path


class _PresetReader:
    """Reads and validates the TOML tables; every error names `file: field`."""

    def __init__(self, path: str, data: dict):
        self.path = path
        self.data = data

    def error(self, field: str, message: str) -> CompileError:
        return CompileError(f"hardware preset '{self.path}': field '{field}' {message}")

    def get(self, field: str):
        node = self.data
        for part in field.split("."):
            if not isinstance(node, dict) or part not in node:
                raise self.error(field, "is missing")
            node = node[part]
        return node

    def number(self, field: str, integer: bool = False, minimum: float = 0.0, strict: bool = True) -> float:
        value = self.get(field)
        if isinstance(value, bool) or not isinstance(value, int | float) or (integer and not isinstance(value, int)):
            raise self.error(field, f"must be {'an integer' if integer else 'a number'}, got {value!r}")
        if value < minimum or (strict and value == minimum):
            raise self.error(field, f"must be {'>' if strict else '>='} {minimum}, got {value!r}")
        return value

    def string(self, field: str) -> str:
        value = self.get(field)
        if not isinstance(value, str):
            raise self.error(field, f"must be a string, got {value!r}")
        return value

    def pair(self, field: str) -> VectorCost:
        value = self.get(field)
        if (
            not isinstance(value, list)
            or len(value) != 2
            or not all(isinstance(v, int | float) and not isinstance(v, bool) and v >= 0 for v in value)
        ):
            raise self.error(field, f"must be [head, slope] with two non-negative numbers, got {value!r}")
        return VectorCost(int(value[0]), float(value[1]))

    def read(self) -> HardwarePreset:
        architecture = self.string("architecture")
        if architecture not in ("coupled", "separated"):
            raise self.error("architecture", f"must be 'coupled' or 'separated', got {architecture!r}")
        return HardwarePreset(
            name=self.string("name"),
            description=self.string("description"),
            architecture=architecture,
            core_count=int(self.number("core.count", integer=True)),
            freq_ghz=float(self.number("core.freq_ghz")),
            buffers={s: int(self.number(f"buffers.{s}", integer=True)) for s in LOCAL_SPACES},
            alignment={s: int(self.number(f"alignment.{s}", integer=True)) for s in SPACES},
            cube_cycles_per_block={
                t: float(self.number(f"cube.{t}_cycles_per_block")) for t in ("fp16", "fp32", "int8")
            },
            cube_startup=int(self.number("cube.startup", integer=True, strict=False)),
            vector_repeat_bytes=int(self.number("vector.repeat_bytes", integer=True)),
            vector_costs={c: self.pair(f"vector.{c}") for c in VECTOR_CLASSES},
            paths={
                p: PathSpec(
                    float(self.number(f"paths.{p}.bytes_per_cycle")),
                    int(self.number(f"paths.{p}.latency", integer=True, strict=False)),
                )
                for p in PATHS
            },
            hbm_bytes_per_cycle=float(self.number("hbm.bytes_per_cycle")),
            event_ids=int(self.number("sync.event_ids", integer=True)),
            flag_latency=int(self.number("sync.flag_latency", integer=True, strict=False)),
            barrier_cost=int(self.number("sync.barrier_cost", integer=True, strict=False)),
            scalar_instruction_cycles=int(self.number("scalar.instruction_cycles", integer=True, strict=False)),
            loop_iteration_cycles=int(self.number("scalar.loop_iteration_cycles", integer=True, strict=False)),
            kernel_launch_us=float(self.number("launch.kernel_launch_us", strict=False)),
            source=self.path,
            burst_bytes=int(self.number("transfer.burst_bytes", integer=True)),
            row_overhead_cycles=int(self.number("transfer.row_overhead_cycles", integer=True, strict=False)),
            **self.l2(),
        )

    def l2(self) -> dict:
        """The optional `[l2]` table (no L2 cache without it)."""
        if "l2" not in self.data:
            return {}
        return {
            "l2_bytes": int(self.number("l2.capacity_bytes", integer=True)),
            "l2_bytes_per_cycle": float(self.number("l2.bytes_per_cycle")),
            "l2_sector_bytes": int(self.number("l2.sector_bytes", integer=True)),
        }
