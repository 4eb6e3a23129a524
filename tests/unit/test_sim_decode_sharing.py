"""What decoding a large merged kernel shares, and the plan's checks made
proportional: the same checks and the same numbers, less work.

* `program.InstructionDecoder.fixed`: instructions with the same class,
  attributes and operand types share their decoded attributes, accesses, view
  makers, cost and numerics;
* `plan._overlapping_pairs`: the arena buffers that overlap, found by a sweep
  over addresses, are the pairs a walk over every pair finds, in its order;
* `plan.Launch.modes` / `phases`: gathered once per launch, the same as asking
  every argument slot."""

from __future__ import annotations

import random
from types import SimpleNamespace

import numpy as np

from gecomp.dialects.context import make_context
from gecomp.core.parsing import parse_module
from gecomp.core.signature import main_function
from gecomp.dialects import npu
from gecomp.simulator.hardware import load_preset
from gecomp.simulator.npu import simulate
from gecomp.simulator.npu.l2 import GlobalMemory
from gecomp.simulator.npu.plan import HostPlan, _overlapping_pairs
from gecomp.simulator.npu.program import KernelDecoder
from npu_testing import gm, kernel_module, local

TILE = 256
COPY_TWICE = "\n".join(
    [
        f"  %u = npu.alloc {{offset = 0}} : {local(TILE, 'ub')}",
        f"  %c{TILE} = arith.constant {TILE} : index",
        f"  npu.copy %x[%c0], %u[%c0] {{cols = {TILE}}}",
        '  npu.set_flag {src = "MTE2", dst = "V", event = 0}',
        '  npu.wait_flag {src = "MTE2", dst = "V", event = 0}',
        f"  npu.vmuls %u[%c0], %u[%c0] {{cols = {TILE}, scalar = 2.0}}",
        '  npu.set_flag {src = "V", dst = "MTE3", event = 0}',
        '  npu.wait_flag {src = "V", dst = "MTE3", event = 0}',
        f"  npu.copy %u[%c0], %y[%c0] {{cols = {TILE}}}",
        '  npu.set_flag {src = "MTE3", dst = "MTE2", event = 0}',
        '  npu.wait_flag {src = "MTE3", dst = "MTE2", event = 0}',
        f"  npu.copy %x[%c{TILE}], %u[%c0] {{cols = {TILE}}}",
        '  npu.set_flag {src = "MTE2", dst = "V", event = 0}',
        '  npu.wait_flag {src = "MTE2", dst = "V", event = 0}',
        f"  npu.vmuls %u[%c0], %u[%c0] {{cols = {TILE}, scalar = 2.0}}",
        '  npu.set_flag {src = "V", dst = "MTE3", event = 0}',
        '  npu.wait_flag {src = "V", dst = "MTE3", event = 0}',
        f"  npu.copy %u[%c0], %y[%c{TILE}] {{cols = {TILE}}}",
    ]
)


def _module():
    text = kernel_module(COPY_TWICE, {"x": gm(2 * TILE)}, {"y": gm(2 * TILE)})
    return parse_module(make_context(), text)


def test_identical_instructions_share_their_decoding_and_compute_the_same():
    module = _module()
    kernel = next(op for op in module.walk() if isinstance(op, npu.KernelOp))
    hw = load_preset("tiny")
    decoder = KernelDecoder(hw, GlobalMemory(hw))
    decoder.decode(kernel)
    instructions = [op for op in kernel.walk() if isinstance(op, npu.InstructionOp)]
    distinct = decoder.__dict__["_fixed"]
    # the two vmuls share one entry, the flags one per (src, dst); the copies differ in operand types
    assert len(distinct) < len(instructions)
    vmuls = [op for op in instructions if op.name == "npu.vmuls"]
    assert decoder.fixed(vmuls[0]) is decoder.fixed(vmuls[1])
    x = np.arange(2 * TILE, dtype=np.float16)
    result = simulate(module, [x], hw="tiny")
    np.testing.assert_array_equal(result.outputs[0].reshape(-1), x * 2)


def test_overlapping_pairs_are_those_of_every_pair_in_walk_order():
    rng = random.Random(0)
    for _ in range(200):
        buffers = [
            SimpleNamespace(address=rng.randrange(0, 64), nbytes=rng.choice([0, 1, 4, 16, 32]))
            for _ in range(rng.randrange(1, 12))
        ]
        for b in buffers:
            b.overlaps = (lambda b: lambda o: b.address < o.address + o.nbytes and o.address < b.address + b.nbytes)(b)
        walk = [(i, j) for i in range(len(buffers)) for j in range(i + 1, len(buffers)) if buffers[i].overlaps(buffers[j])]
        assert _overlapping_pairs(buffers) == walk


def test_launch_modes_and_phases_are_those_of_its_argument_slots():
    module = _module()
    hw = load_preset("tiny")
    plan = HostPlan(module, main_function(module), hw, GlobalMemory(hw))
    for launch in plan.launches:
        for buffer in launch.args:
            slots = [s for s, a in zip(launch.program.arguments, launch.args) if a is buffer]
            assert launch.modes(buffer) == (any(s.reads for s in slots), any(s.writes for s in slots))
            touched = [(s.first_phase, s.last_phase) for s in slots if s.first_phase is not None]
            expected = (min(f for f, _ in touched), max(l for _, l in touched)) if touched else (0, launch.program.phases - 1)
            assert launch.phases(buffer) == expected
