"""What-if presets (`simulator.hardware.idealized`, bench/what_if.py): one resource
made free, the compiled instructions unchanged. The numbers a module computes do
not depend on timing; its cycles only lose what the freed resource cost."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from gecomp.simulator.hardware import IDEAL_RESOURCES, idealized, load_preset
from gecomp.simulator.npu import simulate
from npu_testing import MATMUL_THEN_NORM, compiled_graph

HW = load_preset("ascend910")


@pytest.fixture(scope="module")
def compiled():
    module, inputs = compiled_graph(MATMUL_THEN_NORM)
    return module, inputs, simulate(module, inputs, hw=HW)


@pytest.mark.parametrize("resource", list(IDEAL_RESOURCES))
def test_a_free_resource_changes_the_time_not_the_numbers(compiled, resource):
    module, inputs, base = compiled
    what_if = simulate(module, inputs, hw=idealized(HW, resource))
    for got, expected in zip(what_if.outputs, base.outputs):
        np.testing.assert_array_equal(got, expected)
    assert what_if.report.bytes_per_path() == base.report.bytes_per_path()  # the same traffic
    assert what_if.report.total_cycles < base.report.total_cycles


def test_launch_free_starts_the_kernel_at_once(compiled):
    module, inputs, base = compiled
    what_if = simulate(module, inputs, hw=idealized(HW, "launch"))
    assert [k.start for k in base.report.kernels] == [HW.kernel_launch_cycles]
    assert [k.start for k in what_if.report.kernels] == [0]
    # The HBM books its bandwidth in windows of absolute time: the kernel itself
    # may take a few cycles more or less once it starts elsewhere in a window.
    assert abs(what_if.report.total_cycles - (base.report.total_cycles - HW.kernel_launch_cycles)) < 64


def test_only_the_named_resource_changes():
    fields = {f.name for f in dataclasses.fields(HW)} - {"name"}
    changed = {
        resource: {f for f in fields if getattr(idealized(HW, resource), f) != getattr(HW, f)}
        for resource in IDEAL_RESOURCES
    }
    assert changed == {
        "hbm": {"hbm_bytes_per_cycle", "l2_bytes_per_cycle"},
        "gm": {"hbm_bytes_per_cycle", "l2_bytes_per_cycle", "paths"},
        "mte1": {"paths"},
        "cube": {"cube_cycles_per_block", "cube_startup"},
        "vector": {"vector_costs", "paths"},
        "latency": {"paths", "flag_latency"},
        "launch": {"kernel_launch_us"},
    }
    # Buffers and alignment stay: code compiled for the preset runs on every what-if.
    gm_paths = idealized(HW, "gm").paths
    assert {p for p in HW.paths if gm_paths[p] != HW.paths[p]} == {"gm_to_l1", "gm_to_ub", "ub_to_gm", "l0c_to_gm"}
    assert all(spec.latency == 0 for spec in idealized(HW, "latency").paths.values())


def test_unknown_resource_names_the_known_ones():
    with pytest.raises(ValueError, match="unknown resource 'dma'.*hbm, gm, mte1"):
        idealized(HW, "dma")
