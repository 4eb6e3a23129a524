"""The blocks of a launch are simulated side by side (simulator/npu/lockstep.py): the
HBM is shared fairly, errors in any block surface once, runs are deterministic;
and the per-block bound the report derives from the cores' GM ports."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from gecomp.dialects.context import make_context
from gecomp.core.diagnostics import CompileError
from gecomp.core.parsing import parse_module
from gecomp.core.passes import parse_pass_pipeline, run_pipeline
from gecomp.simulator.hardware import load_preset
from gecomp.simulator.npu import simulate
from gecomp.core.signature import input_specs, main_function, random_inputs
from npu_testing import gm, kernel_module, local, run


def compiled_add(n: int):
    t = f"tensor<{n}xf16>"
    text = f"""func.func @main(%x: {t} {{ge.name = "x"}}, %y: {t} {{ge.name = "y"}}) -> ({t} {{ge.name = "z"}}) {{
  %z = ge.add %x, %y : ({t}, {t}) -> {t}
  func.return %z : {t}
}}"""
    ctx = make_context()
    module = parse_module(ctx, text, "add.mlir")
    run_pipeline(parse_pass_pipeline("ge-compile"), ctx, module)
    return module


def test_streaming_cores_share_the_hbm_and_finish_together():
    # 2M fp16 elements: 12 MiB through an HBM of 1200 B/cycle, on 32 cores that
    # together could move more: the HBM is the bottleneck of every core at once.
    n = 1 << 21
    module = compiled_add(n)
    x, y = random_inputs(input_specs(main_function(module)), 0)
    result = simulate(module, [x, y], hw="ascend910", check_races=False)
    np.testing.assert_array_equal(result.outputs[0], (x.astype(np.float32) + y).astype(np.float16))
    (kernel,) = result.report.kernels
    bound = 3 * n * 2 / load_preset("ascend910").hbm_bytes_per_cycle
    assert kernel.block_dim == 32
    assert kernel.cycles <= 1.10 * bound  # simulated one after another: 1.36x
    ends = [end for _, _, end in kernel.block_spans]
    # No core starved behind the others. (Cores that stream without a gap keep the
    # first-come windows in the order they started, hence a spread of ~17%.)
    assert max(ends) - min(ends) <= 0.20 * kernel.cycles


def test_the_same_simulation_twice_gives_the_same_cycles():
    module = compiled_add(1 << 18)
    inputs = random_inputs(input_specs(main_function(module)), 1)
    first = simulate(module, inputs, hw="ascend910", check_races=False).report
    second = simulate(module, inputs, hw="ascend910", check_races=False).report
    assert first.kernels[0].block_spans == second.kernels[0].block_spans


COPY_PER_BLOCK = (
    "  %b = npu.block_idx : index",
    "  %c256 = arith.constant 256 : index",
    "  %o = arith.muli %b, %c256 : index",
    "  %u = npu.alloc {offset = 0} : " + local(256, "ub"),
    "  npu.copy %x[%o], %u[%c0] {cols = 256}",
    "  npu.set_flag {src = \"MTE2\", dst = \"MTE3\", event = 0}",
    "  npu.wait_flag {src = \"MTE2\", dst = \"MTE3\", event = 0}",
    "  npu.copy %u[%c0], %y[%o] {cols = 256}",
)


def copy_module(elements: int, block_dim: int) -> str:
    return kernel_module("\n".join(COPY_PER_BLOCK), {"x": gm(elements)}, {"y": gm(elements)}, block_dim=block_dim)


def test_more_blocks_than_cores_queue_on_the_cores_that_free_first():
    # tiny has 2 cores: 5 blocks run as 2 + 2 + 1, each on a core its predecessor freed
    x = np.arange(1280, dtype=np.float16)
    result = run(copy_module(1280, 5), inputs=[x], hw="tiny")
    np.testing.assert_array_equal(result.outputs[0], x)
    (kernel,) = result.report.kernels
    spans = sorted(kernel.block_spans)
    starts = sorted(start for start, _, _ in spans)
    assert starts[0] == starts[1] < starts[2]
    assert len({core for _, core, _ in spans}) == 2


def test_an_error_in_one_block_is_raised_once_and_the_next_simulation_runs():
    # 8 blocks of 256 elements over a 1792-element buffer: block 7 reads past its end
    # while the others are parked mid-kernel in their own threads.
    threads = threading.active_count()
    with pytest.raises(CompileError, match=r"out of bounds: reads elements \[1792, 2048\)"):
        run(copy_module(1792, 8), hw="ascend910")
    assert threading.active_count() == threads
    x = np.arange(2048, dtype=np.float16)
    np.testing.assert_array_equal(run(copy_module(2048, 8), inputs=[x], hw="ascend910").outputs[0], x)
    assert threading.active_count() == threads


def test_port_cycles_is_the_busiest_pipes_gm_bytes_at_its_per_core_bandwidth():
    # each block reads 512 B (MTE2, gm_to_ub) and writes 512 B (MTE3, ub_to_gm)
    hw = load_preset("ascend910")
    (kernel,) = run(copy_module(2048, 8), hw="ascend910").report.kernels
    read = 512 / hw.paths["gm_to_ub"].bytes_per_cycle
    write = 512 / hw.paths["ub_to_gm"].bytes_per_cycle
    assert kernel.port_cycles == pytest.approx(max(read, write)) and read > write
    assert kernel.cycles > kernel.port_cycles  # a bound: latencies come on top


def test_blocks_compute_under_the_callers_numpy_errstate():
    """Each block runs in a greenlet of its own (a context of its own): it gets the
    simulator's errstate (overflow to inf is the hardware's answer, not a warning)."""
    import warnings

    module = compiled_add(1 << 14)
    x = np.full(1 << 14, 60000, dtype=np.float16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = simulate(module, [x, x], hw="ascend910", check_races=False)
    assert result.report.kernels[0].block_dim > 1
    assert np.isinf(result.outputs[0]).all()
