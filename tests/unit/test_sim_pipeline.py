"""Whole-kernel timing properties: double buffering, bounds, bytes, determinism,
monotonicity, the shared HBM, streams."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gecomp.simulator.hardware import load_preset
from gecomp.simulator.npu.hazards import PIPE_NAMES
from gecomp.simulator.npu.program import STATS
from npu_testing import busy, gm, kernel_module, local, preset_file, run

LIT = Path(__file__).resolve().parents[1] / "lit" / "npu"
TILE = 4096  # fp16 elements: 8 KB per tile


def three_stage_preset(tmp_path) -> str:
    """Copy in, one vector op and copy out each take t = 512 cycles per 8 KB tile."""
    return preset_file(
        tmp_path,
        **{
            "paths.gm_to_ub.bytes_per_cycle": 16,
            "paths.gm_to_ub.latency": 0,
            "paths.ub_to_gm.bytes_per_cycle": 16,
            "paths.ub_to_gm.latency": 0,
            "vector.scalar": [0, 16],
            "hbm.bytes_per_cycle": 1024,
        },
    )


def single_buffered(tiles: int) -> str:
    body = f"""
  %c1 = arith.constant 1 : index
  %n = arith.constant {tiles} : index
  %tile = arith.constant {TILE} : index
  %x0 = npu.alloc {{offset = 0}} : {local(TILE, "ub")}
  %z0 = npu.alloc {{offset = {2 * TILE}}} : {local(TILE, "ub")}
  npu.set_flag {{src = "MTE3", dst = "MTE2", event = 0}}
  scf.for %i = %c0 to %n step %c1 {{
    %o = arith.muli %i, %tile : index
    npu.wait_flag {{src = "MTE3", dst = "MTE2", event = 0}}
    npu.copy %x[%o], %x0[%c0] {{cols = {TILE}}}
    npu.set_flag {{src = "MTE2", dst = "V", event = 0}}
    npu.wait_flag {{src = "MTE2", dst = "V", event = 0}}
    npu.vmuls %x0[%c0], %z0[%c0] {{cols = {TILE}, scalar = 2.0}}
    npu.set_flag {{src = "V", dst = "MTE3", event = 0}}
    npu.wait_flag {{src = "V", dst = "MTE3", event = 0}}
    npu.copy %z0[%c0], %z[%o] {{cols = {TILE}}}
    npu.set_flag {{src = "MTE3", dst = "MTE2", event = 0}}
  }}
  npu.wait_flag {{src = "MTE3", dst = "MTE2", event = 0}}"""
    return kernel_module(body, {"x": gm(TILE * tiles)}, {"z": gm(TILE * tiles)})


def double_buffered(tiles: int) -> str:
    def stage(p: int, offset: str) -> str:
        return f"""
    npu.wait_flag {{src = "V", dst = "MTE2", event = {p}}}
    npu.copy %x[{offset}], %x{p}[%c0] {{cols = {TILE}}}
    npu.set_flag {{src = "MTE2", dst = "V", event = {p}}}
    npu.wait_flag {{src = "MTE2", dst = "V", event = {p}}}
    npu.wait_flag {{src = "MTE3", dst = "V", event = {p}}}
    npu.vmuls %x{p}[%c0], %z{p}[%c0] {{cols = {TILE}, scalar = 2.0}}
    npu.set_flag {{src = "V", dst = "MTE2", event = {p}}}
    npu.set_flag {{src = "V", dst = "MTE3", event = {p}}}
    npu.wait_flag {{src = "V", dst = "MTE3", event = {p}}}
    npu.copy %z{p}[%c0], %z[{offset}] {{cols = {TILE}}}
    npu.set_flag {{src = "MTE3", dst = "V", event = {p}}}"""

    credits = "".join(
        f'\n  npu.set_flag {{src = "{s}", dst = "{d}", event = {p}}}' for s, d in (("V", "MTE2"), ("MTE3", "V")) for p in (0, 1)
    )
    body = f"""
  %c1 = arith.constant 1 : index
  %pairs = arith.constant {tiles // 2} : index
  %tile = arith.constant {TILE} : index
  %pair = arith.constant {2 * TILE} : index
  %x0 = npu.alloc {{offset = 0}} : {local(TILE, "ub")}
  %x1 = npu.alloc {{offset = {2 * TILE}}} : {local(TILE, "ub")}
  %z0 = npu.alloc {{offset = {4 * TILE}}} : {local(TILE, "ub")}
  %z1 = npu.alloc {{offset = {6 * TILE}}} : {local(TILE, "ub")}{credits}
  scf.for %i = %c0 to %pairs step %c1 {{
    %o0 = arith.muli %i, %pair : index
    %o1 = arith.addi %o0, %tile : index{stage(0, "%o0")}{stage(1, "%o1")}
  }}{credits.replace("set_flag", "wait_flag")}"""
    return kernel_module(body, {"x": gm(TILE * tiles)}, {"z": gm(TILE * tiles)})


@pytest.mark.parametrize("tiles", [4, 8])
def test_double_buffering_takes_n_plus_2_stages_instead_of_3n(tmp_path, tiles):
    hw = three_stage_preset(tmp_path)
    t = 512
    inputs = [np.arange(TILE * tiles, dtype=np.float16) % 7]
    single = run(single_buffered(tiles), inputs, hw=hw)
    double = run(double_buffered(tiles), inputs, hw=hw)
    for result in (single, double):
        np.testing.assert_array_equal(result.outputs[0], inputs[0] * 2)
    assert single.report.kernels[0].cycles == pytest.approx(3 * tiles * t, rel=0.05)
    assert double.report.kernels[0].cycles == pytest.approx((tiles + 2) * t, rel=0.05)


KERNELS = ["vadd_double_buffer.mlir", "matmul_256.mlir", "softmax_rows.mlir", "streams.mlir"]


@pytest.fixture(
    scope="module",
    # The matmul's 64 KB accumulator does not fit the tiny preset's L0C.
    params=[(k, hw) for k in KERNELS for hw in ("tiny", "ascend910") if (k, hw) != ("matmul_256.mlir", "tiny")],
    ids=str,
)
def simulated(request):
    name, hw = request.param
    text = (LIT / name).read_text()
    first = run(text, hw=hw, seed=1)
    return text, hw, first


def test_total_is_between_the_roofline_and_the_sum_of_busy_time(simulated):
    text, hw_name, result = simulated
    report, hw = result.report, load_preset(hw_name)
    assert report.total_cycles >= report.roofline_cycles > 0
    # Every cycle of a block is busy on some pipe (the scalar unit's issue included),
    # a flag becoming visible or a transfer's data landing; launches add their
    # overhead.
    landing = max(spec.latency for spec in hw.paths.values())

    def waited(stats) -> float:
        return stats[STATS.index("flag_waits")] * hw.flag_latency + stats[STATS.index("transfers")] * landing

    sync = len(report.kernels) * hw.kernel_launch_cycles + sum(waited(k.stats) for k in report.kernels)
    assert report.total_cycles <= sum(report.busy) + sync
    for kernel in report.kernels:
        assert kernel.cycles <= sum(kernel.busy) + waited(kernel.stats)
    for kernel in report.kernels:
        assert all(b <= kernel.core_cycles for b in kernel.busy)
        if kernel.block_dim == 1:
            assert all(b <= kernel.cycles for b in kernel.busy)
    assert report.total_cycles >= max(k.end for k in report.kernels)


def test_same_input_same_cycles(simulated):
    text, hw, first = simulated
    again = run(text, hw=hw, seed=1)
    other_data = run(text, hw=hw, seed=7)
    assert again.report.as_json() == first.report.as_json()
    assert other_data.report.total_cycles == first.report.total_cycles
    for a, b in zip(first.outputs, again.outputs):
        np.testing.assert_array_equal(a, b)


def test_bytes_moved_are_the_sum_of_instruction_sizes():
    report = run((LIT / "vadd_double_buffer.mlir").read_text(), hw="tiny").report
    tensor = 131072 * 2
    assert report.bytes_per_path() == {**dict.fromkeys(report.bytes_per_path(), 0), "gm_to_ub": 2 * tensor, "ub_to_gm": tensor}
    assert (report.gm_bytes_read, report.gm_bytes_written) == (2 * tensor, tensor)
    matmul = run((LIT / "matmul_256.mlir").read_text(), hw="ascend910").report
    panels = 4 * 4 * (128 * 64 + 64 * 128) * 2  # 4 blocks x 4 k-steps x (A + B tiles)
    paths = matmul.bytes_per_path()
    assert paths["gm_to_l1"] == panels
    assert paths["l1_to_l0a"] + paths["l1_to_l0b"] == panels
    assert paths["l0c_to_gm"] == 256 * 256 * 2


def test_more_work_never_takes_fewer_cycles(tmp_path):
    hw = three_stage_preset(tmp_path)
    for make in (single_buffered, double_buffered):
        cycles = [run(make(n), hw=hw).report.total_cycles for n in (2, 4, 6, 8)]
        assert cycles == sorted(cycles) and len(set(cycles)) == len(cycles)


def test_higher_bandwidth_never_takes_more_cycles(tmp_path):
    text = double_buffered(4)
    cycles = []
    for bandwidth in (8, 16, 54.5, 128, 512):
        hw = preset_file(tmp_path, **{"paths.gm_to_ub.bytes_per_cycle": bandwidth, "paths.ub_to_gm.bytes_per_cycle": bandwidth})
        cycles.append(run(text, hw=hw).report.total_cycles)
    assert cycles == sorted(cycles, reverse=True)
    hbm_cycles = []
    streaming = (LIT / "vadd_double_buffer.mlir").read_text()
    for hbm in (32, 64, 128, 1024):
        hw = preset_file(tmp_path, **{"hbm.bytes_per_cycle": hbm})
        hbm_cycles.append(run(streaming, hw=hw).report.total_cycles)
    assert hbm_cycles == sorted(hbm_cycles, reverse=True) and hbm_cycles[0] > hbm_cycles[-1]


def streaming_copy(blocks: int, per_block: int) -> str:
    n = blocks * per_block
    body = f"""
  %b = npu.block_idx : index
  %per = arith.constant {per_block} : index
  %o = arith.muli %b, %per : index
  %u = npu.alloc {{offset = 0}} : {local(per_block, "ub")}
  npu.copy %x[%o], %u[%c0] {{cols = {per_block}}}
  npu.set_flag {{src = "MTE2", dst = "MTE3", event = 0}}
  npu.wait_flag {{src = "MTE2", dst = "MTE3", event = 0}}
  npu.copy %u[%c0], %y[%o] {{cols = {per_block}}}"""
    return kernel_module(body, {"x": gm(n)}, {"y": gm(n)}, block_dim=blocks)


def test_cores_share_the_hbm(tmp_path):
    # 8 cores each stream 64 KB in and out; alone a core moves 54.5 B/cycle in,
    # together they would exceed an HBM of 100 B/cycle.
    text = streaming_copy(8, 32768)
    free = run(text, hw=preset_file(tmp_path, **{"core.count": 8, "buffers.ub": 131072, "hbm.bytes_per_cycle": 100000})).report
    shared = run(text, hw=preset_file(tmp_path, **{"core.count": 8, "buffers.ub": 131072, "hbm.bytes_per_cycle": 100})).report
    gm_bytes = free.gm_bytes_read + free.gm_bytes_written
    assert shared.total_cycles - 3000 >= gm_bytes / 100
    assert shared.total_cycles > free.total_cycles
    assert shared.roofline()["bound"] == "memory"
    # Every core starts at the same time and is alone on its pipes: uncontended,
    # the kernel takes one core's time.
    one = run(streaming_copy(1, 32768), hw=preset_file(tmp_path, **{"hbm.bytes_per_cycle": 100000, "buffers.ub": 131072})).report
    assert free.kernels[0].cycles == one.kernels[0].cycles


def test_blocks_beyond_the_core_count_run_in_waves():
    one_wave = run(streaming_copy(2, 1024), hw="tiny").report
    two_waves = run(streaming_copy(4, 1024), hw="tiny").report
    assert two_waves.kernels[0].cycles == pytest.approx(2 * one_wave.kernels[0].cycles, rel=0.02)
    assert sorted(two_waves.kernels[0].cores) == [0, 0, 1, 1]


def test_streams_overlap_and_events_order_them():
    report = run((LIT / "streams.mlir").read_text(), hw="tiny").report
    scale, shift, add = report.kernels
    assert scale.start == shift.start == load_preset("tiny").kernel_launch_cycles
    assert add.start >= max(scale.end, shift.end) + load_preset("tiny").kernel_launch_cycles
    assert report.total_cycles == add.end
    # Without the event the third kernel still follows its own stream only.
    text = (LIT / "streams.mlir").read_text().replace("npu.wait_event {stream = 0, event = 0}", "")
    text = text.replace("npu.launch @add(%t1, %t2, %z) {stream = 0}", "npu.launch @add(%t1, %t1, %z) {stream = 0}")
    unordered = run(text, hw="tiny").report
    assert unordered.kernels[2].start == unordered.kernels[0].end + load_preset("tiny").kernel_launch_cycles


def test_per_pipe_busy_and_report_agree_with_the_trace():
    result = run((LIT / "vadd_double_buffer.mlir").read_text(), hw="tiny", trace=True)
    events = [e for e in result.report.chrome_trace()["traceEvents"] if e["ph"] == "X" and e["pid"] < 2]
    us_per_cycle = 1 / 1000
    for pipe in ("MTE2", "V", "MTE3"):
        traced = sum(e["dur"] for e in events if e["tid"] == PIPE_NAMES.index(pipe) and e["name"] != "npu.wait_flag")
        assert traced == pytest.approx(busy(result.report, pipe) * us_per_cycle)
