"""The L2 cache in front of the HBM (simulator/npu/l2.py): re-reads hit and cost
the HBM nothing, capacity evicts the least recently used bytes, writes go
through and leave their bytes cached, and the roofline's memory term counts the
compulsory bytes only. Presets without an `[l2]` table have no cache."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from gecomp.simulator.hardware import PRESET_DIR, load_preset
from gecomp.simulator.npu.l2 import L2Cache
from npu_testing import gm, kernel_module, local, run

N = 4096  # fp16 elements: 8 KB


def l2_preset(tmp_path: Path, capacity: int, l2_rate: float = 4096, hbm_rate: int = 16) -> str:
    """tiny with a slow HBM and an L2 of `capacity` bytes."""
    text = (Path(PRESET_DIR) / "tiny.toml").read_text()
    text = text.replace("bytes_per_cycle = 128      # [EST] test preset", f"bytes_per_cycle = {hbm_rate}  # test")
    text += f"\n[l2]\ncapacity_bytes = {capacity}\nbytes_per_cycle = {l2_rate}\nsector_bytes = 32\n"
    path = tmp_path / f"l2-{capacity}.toml"
    path.write_text(text)
    return str(path)


def read_twice(elements: int = N) -> str:
    """Copy x into UB twice (one tile of `elements`), store it once."""
    body = f"""
  %t = npu.alloc {{offset = 0}} : {local(elements, "ub")}
  npu.copy %x[%c0], %t[%c0] {{cols = {elements}}}
  npu.pipe_barrier {{pipe = "ALL"}}
  npu.copy %x[%c0], %t[%c0] {{cols = {elements}}}
  npu.pipe_barrier {{pipe = "ALL"}}
  npu.copy %t[%c0], %z[%c0] {{cols = {elements}}}"""
    return kernel_module(body, {"x": gm(elements)}, {"z": gm(elements)})


def test_no_l2_table_no_cache():
    assert load_preset("tiny").l2_bytes == 0
    report = run(read_twice(), hw="tiny").report
    assert report.stat("l2_hit_bytes") == 0
    assert report.stat("hbm_bytes") == 3 * N * 2


def test_a_reread_hits_and_is_faster(tmp_path):
    cached = run(read_twice(), hw=l2_preset(tmp_path, 1 << 20)).report
    uncached = run(read_twice(), hw="tiny").report
    assert cached.stat("l2_hit_bytes") == N * 2
    assert cached.stat("hbm_bytes") == 2 * N * 2  # the first read and the write
    slow_hbm = run(read_twice(), hw=l2_preset(tmp_path, 1 << 20, hbm_rate=16)).report
    no_l2 = run(read_twice(), hw=l2_preset(tmp_path, 64, hbm_rate=16)).report
    assert no_l2.stat("l2_hit_bytes") == 64  # a 64-byte L2 keeps the last 64 bytes read
    assert slow_hbm.total_cycles < no_l2.total_cycles
    assert np.array_equal(run(read_twice(), hw=l2_preset(tmp_path, 1 << 20)).outputs[0], run(read_twice(), hw="tiny").outputs[0])
    assert uncached.stat("l2_hit_bytes") == 0


def test_roofline_counts_compulsory_bytes(tmp_path):
    preset = l2_preset(tmp_path, 1 << 20)
    report = run(read_twice(), hw=preset).report
    hw = load_preset(preset)
    assert report.stat("hbm_compulsory") == N * 2
    assert report.roofline()["memory_cycles"] == (N * 2 + N * 2) / hw.hbm_bytes_per_cycle


def test_lru_capacity():
    cache = L2Cache(capacity_bytes=4 * 32, bytes_per_cycle=64, sector_bytes=32)
    first = cache.sectors(np.array([0]), 4 * 32)
    assert cache.read(first) == (0, 4)  # four compulsory misses
    assert cache.read(first) == (4, 0)  # all present
    cache.read(cache.sectors(np.array([1024]), 2 * 32))  # 64 new bytes: the first ones stay
    assert cache.read(first) == (4, 0)
    cache.read(cache.sectors(np.array([2048]), 4 * 32))  # a capacity's worth since their last use
    assert cache.read(first) == (0, 0)  # evicted (misses, not compulsory ones)


def test_writes_allocate():
    cache = L2Cache(capacity_bytes=1 << 16, bytes_per_cycle=64, sector_bytes=32)
    written = cache.sectors(np.array([64, 4096]), 40)  # two runs, each over two sectors
    assert list(written) == [2, 3, 128, 129]
    cache.write(written)
    assert cache.read(written) == (4, 0)
