"""The simulator's cost model against closed forms computed from the preset's own
numbers: one instruction per kernel, so its pipe's busy cycles are its cost and
the kernel takes one issue cycle more."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from gecomp.core.diagnostics import CompileError
from gecomp.simulator.hardware import PRESET_DIR, load_preset
from gecomp.simulator.npu.costs import mmad_cycles, stream_cycles, transfer_cycles, vector_cycles
from npu_testing import busy, gm, kernel_module, local, preset_file, run

TINY = load_preset("tiny")

PATH_CASES = [
    # (path, source space, destination space, pipe)
    ("gm_to_ub", "gm", "ub", "MTE2"),
    ("gm_to_l1", "gm", "l1", "MTE2"),
    ("ub_to_gm", "ub", "gm", "MTE3"),
    ("l1_to_ub", "l1", "ub", "MTE1"),
    ("ub_to_l1", "ub", "l1", "MTE3"),
]


def one_copy(src: str, dst: str, elements: int, rows: int = 1, strides: str = "") -> str:
    def buffer(space: str, name: str) -> tuple[str, str]:
        if space == "gm":
            return f"%{name}", ""
        return f"%{name}_l", f"  %{name}_l = npu.alloc {{offset = 0}} : {local(elements * rows, space)}\n"

    s, s_alloc = buffer(src, "x")
    d, d_alloc = buffer(dst, "y")
    cols = elements
    body = s_alloc + d_alloc + f"  npu.copy {s}[%c0], {d}[%c0] {{rows = {rows}, cols = {cols}{strides}}}"
    total = 256 * rows if rows > 1 else elements  # room for strided sources
    return kernel_module(body, {"x": gm(total)}, {"y": gm(total)})


@pytest.mark.parametrize("path, src, dst, pipe", PATH_CASES)
@pytest.mark.parametrize("elements", [16, 1000, 4096])
def test_copy_takes_latency_plus_bytes_over_bandwidth(path, src, dst, pipe, elements):
    spec = TINY.paths[path]
    nbytes = elements * 2
    burst_bytes = math.ceil(nbytes / 32) * 32
    expected = spec.latency + math.ceil(burst_bytes / spec.bytes_per_cycle)
    report = run(one_copy(src, dst, elements)).report
    # A transfer holds its pipe for its data cycles; its data lands `latency` later.
    assert busy(report, pipe) == expected - spec.latency
    assert report.kernels[0].cycles == TINY.scalar_instruction_cycles + expected
    assert report.bytes_per_path()[path] == nbytes


def test_copy_size_sweep_is_exactly_linear(tmp_path):
    hw = preset_file(tmp_path, **{"paths.gm_to_ub.bytes_per_cycle": 64, "paths.gm_to_ub.latency": 150})
    cycles = [run(one_copy("gm", "ub", 1024 * k), hw=hw).report.kernels[0].cycles for k in range(1, 7)]
    steps = {b - a for a, b in zip(cycles, cycles[1:])}
    assert steps == {2048 // 64}
    assert cycles[0] == 1 + 150 + 2048 // 64


def test_strided_copy_pays_bursts_and_a_row_overhead():
    rows, cols, stride = 32, 40, 256  # rows of 80 bytes: 96 bytes in bursts
    report = run(one_copy("gm", "ub", cols, rows=rows, strides=f", strides = [{stride}, {cols}]")).report
    spec = TINY.paths["gm_to_ub"]
    expected = spec.latency + math.ceil(rows * 96 / spec.bytes_per_cycle) + (rows - 1) * TINY.row_overhead_cycles
    assert busy(report, "MTE2") + spec.latency == expected == transfer_cycles(TINY, "gm_to_ub", rows, cols * 2)
    assert report.kernels[0].cycles == TINY.scalar_instruction_cycles + expected
    assert report.gm_bytes_read == rows * cols * 2


def two_loads(between: str) -> str:
    body = f"""
  %a = npu.alloc {{offset = 0}} : {local(1024, "ub")}
  %b = npu.alloc {{offset = 2048}} : {local(1024, "ub")}
  npu.copy %x[%c0], %a[%c0] {{rows = 1, cols = 1024}}{between}
  npu.copy %x[%c0], %b[%c0] {{rows = 1, cols = 1024}}"""
    return kernel_module(body, {"x": gm(1024)}, {"y": gm(16)})


def test_gm_transfers_stream_and_a_set_flag_waits_for_their_data():
    """Back-to-back loads on MTE2 overlap the second's data with the first's
    latency. A set_flag between them fires once the first has landed, but it is a
    marker in the pipe's queue, not a stop: the second load streams right behind
    the first (hicann/pypto's A2A3 pipe model, simulator/npu/core.py), so the
    kernel takes as long as without the flag, and the waiter goes on at the
    first load's landing."""
    spec = TINY.paths["gm_to_ub"]
    data = math.ceil(2048 / spec.bytes_per_cycle)
    issue = TINY.scalar_instruction_cycles
    streamed = run(two_loads("")).report
    assert busy(streamed, "MTE2") == 2 * data
    assert streamed.kernels[0].cycles == issue + 2 * data + spec.latency
    flagged = run(two_loads("""
  npu.set_flag {src = "MTE2", dst = "V", event = 0}
  npu.wait_flag {src = "MTE2", dst = "V", event = 0}
  npu.vadds %a[%c0], %a[%c0] {scalar = 1.0, cols = 128}"""), trace=True).report
    assert flagged.kernels[0].cycles == streamed.kernels[0].cycles
    begin = flagged.kernels[0].start
    (vadds,) = [start - begin for _, _, name, start, _ in flagged.trace_events if name == "npu.vadds"]
    assert vadds == issue + data + spec.latency + TINY.flag_latency
    loads = sorted(start - begin for _, _, name, start, _ in flagged.trace_events if name == "npu.copy")
    assert loads == [issue, issue + data]


def load_l0_module(layout: str, src_stride: int) -> str:
    body = f"""
  %l1 = npu.alloc {{offset = 0}} : {local(256 * 64, "l1")}
  %a = npu.alloc {{offset = 0}} : {local(64 * 64, "l0a")}
  npu.load_l0 %l1[%c0], %a[%c0] {{rows = 64, cols = 64, layout = "{layout}", strides = [{src_stride}, 64]}}"""
    return kernel_module(body, {"x": gm(16)}, {"y": gm(16)})


def test_contiguous_nz_tiles_are_cheaper_than_short_strided_nd_rows():
    # A 64x64 tile of a 256x256 fp16 matrix: ND rows of 128 bytes, 256 elements
    # apart; NZ block columns of 64 x 16 elements, 256 x 16 apart.
    nd = busy(run(load_l0_module("nd", 256)).report, "MTE1")
    nz = busy(run(load_l0_module("nz", 256 * 16)).report, "MTE1")
    assert nd == stream_cycles(TINY, "l1_to_l0a", 64, 128)
    assert nz == stream_cycles(TINY, "l1_to_l0a", 4, 64 * 16 * 2)
    assert nz < nd
    contiguous = busy(run(load_l0_module("nz", 64 * 16)).report, "MTE1")
    assert contiguous == stream_cycles(TINY, "l1_to_l0a", 1, 64 * 64 * 2) <= nz


@pytest.mark.parametrize("m, n, k, dtype, rate", [(16, 16, 16, "f16", "fp16"), (64, 32, 48, "f16", "fp16"), (17, 33, 15, "f16", "fp16"), (32, 32, 32, "f32", "fp32")])
def test_mmad_cycles(m, n, k, dtype, rate):
    body = f"""
  %a = npu.alloc {{offset = 0}} : {local(m * k, "l0a", dtype)}
  %b = npu.alloc {{offset = 0}} : {local(k * n, "l0b", dtype)}
  %c = npu.alloc {{offset = 0}} : {local(m * n, "l0c", "f32")}
  npu.mmad %a[%c0], %b[%c0], %c[%c0] {{m = {m}, n = {n}, k = {k}}}"""
    report = run(kernel_module(body, {"x": gm(16)}, {"y": gm(16)})).report
    blocks = math.ceil(m / 16) * math.ceil(n / 16) * math.ceil(k / 16)
    expected = TINY.cube_startup + math.ceil(blocks * TINY.cube_cycles_per_block[rate])
    assert busy(report, "M") == expected == mmad_cycles(TINY, m, n, k, rate)


VECTOR_CASES = [
    # (op line template, cost class, widest element bytes)
    ("npu.vadd %u[%c0], %u[%c0], %u[%c0] {{rows = {r}, cols = {c}}}", "binary", 2),
    ("npu.vmuls %u[%c0], %u[%c0] {{rows = {r}, cols = {c}, scalar = 2.0}}", "scalar", 2),
    ("npu.vexp %u[%c0], %u[%c0] {{rows = {r}, cols = {c}}}", "transcendental", 2),
    ("npu.vdiv %u[%c0], %u[%c0], %u[%c0] {{rows = {r}, cols = {c}}}", "divide", 2),
    ("npu.vrec %u[%c0], %u[%c0] {{rows = {r}, cols = {c}}}", "divide", 2),
    ("npu.vrelu %u[%c0], %u[%c0] {{rows = {r}, cols = {c}}}", "unary", 2),
    ("npu.vreduce_sum %u[%c0], %u[%c0] {{rows = {r}, cols = {c}}}", "reduce", 2),
    ("npu.vdup %u[%c0] {{rows = {r}, cols = {c}, value = 1.0}}", "data_movement", 2),
    ("npu.vcast %u[%c0], %w[%c0] {{rows = {r}, cols = {c}}}", "unary", 4),
]


@pytest.mark.parametrize("template, cost_class, width", VECTOR_CASES)
@pytest.mark.parametrize("rows, cols", [(1, 100), (4, 128), (3, 1000)])
def test_vector_cycles(template, cost_class, width, rows, cols):
    body = f"""
  %u = npu.alloc {{offset = 0}} : {local(rows * cols, "ub")}
  %w = npu.alloc {{offset = 8192}} : {local(rows * cols, "ub", "f32")}
  {template.format(r=rows, c=cols)}"""
    report = run(kernel_module(body, {"x": gm(16)}, {"y": gm(16)})).report
    repeats = math.ceil(rows * cols * width / TINY.vector_repeat_bytes)
    cost = TINY.vector_costs[cost_class]
    assert busy(report, "V") == cost.head + math.ceil(cost.slope * repeats)
    assert busy(report, "V") == vector_cycles(TINY, cost_class, rows * cols * width)


def test_vector_repeat_sweep_is_exactly_linear():
    cycles = []
    for repeats in range(1, 6):
        body = f"""
  %u = npu.alloc {{offset = 0}} : {local(128 * repeats, "ub")}
  npu.vadd %u[%c0], %u[%c0], %u[%c0] {{cols = {128 * repeats}}}"""
        cycles.append(busy(run(kernel_module(body, {"x": gm(16)}, {"y": gm(16)})).report, "V"))
    head, slope = TINY.vector_costs["binary"].head, TINY.vector_costs["binary"].slope
    assert cycles == [head + slope * r for r in range(1, 6)]


def test_the_transfer_fields_are_validated_like_every_preset_field(tmp_path):
    text = (Path(PRESET_DIR) / "tiny.toml").read_text()
    missing = tmp_path / "missing.toml"
    missing.write_text(text.replace("burst_bytes = 32", ""))
    with pytest.raises(CompileError, match=r"field 'transfer.burst_bytes' is missing"):
        load_preset(str(missing))
    negative = tmp_path / "negative.toml"
    negative.write_text(text.replace("row_overhead_cycles = 1", "row_overhead_cycles = -1"))
    with pytest.raises(CompileError, match=r"field 'transfer.row_overhead_cycles' must be >= 0"):
        load_preset(str(negative))
