"""late_waits: after npu-prefetch-constants, a phase's first flag wait goes down
past the instructions of its pipe that read only what came before the barrier
(the prefetched constants), and stops at the first that reads what the phase
loads: the numbers stay the same, the race checker passes, and moving it one
instruction too far is a race it reports (mutation)."""

from __future__ import annotations

import numpy as np
import pytest

from gecomp.core.diagnostics import CompileError
from gecomp.core.parsing import parse_module
from gecomp.dialects import npu
from gecomp.dialects.context import make_context
from gecomp.simulator.npu import simulate
from gecomp.transforms.npu import late_waits
from gecomp.transforms.npu.prefetch_constants import PrefetchConstantsPass, phases
from test_prefetch_constants import FLAG, LOAD_T, LOAD_W, module

SCALE_W = "    npu.vmuls %w_ub[%c1], %w2[%c1] {cols = 256, scalar = 2.0}"
"""Reads the prefetched constant only."""
ADD_T = "    npu.vadd %v[%c1], %w2[%c1], %v[%c1] {cols = 256}"
"""Reads what the phase loads after the barrier."""
W2 = "    %w2 = npu.alloc {offset = 1536} : memref<256xf16, #npu.space<ub>>"


def compiled(second_phase: str):
    m = parse_module(make_context(), module(second_phase), "t.mlir")
    PrefetchConstantsPass(hw="tiny").apply(make_context(), m)
    return m


def phase_names(m) -> list[str]:
    kernel = next(op for op in m.walk() if isinstance(op, npu.KernelOp))
    return [op.name for op in phases(kernel)[1] if isinstance(op, npu.InstructionOp)]


def run(m) -> np.ndarray:
    x = np.random.default_rng(0).standard_normal(512).astype(np.float16)
    y = simulate(m, [x], hw="tiny").outputs[0]
    np.testing.assert_allclose(y.astype(np.float32), 2 * x.astype(np.float32) + 1.5 + 3.0, rtol=2e-3, atol=2e-3)
    return y


def test_wait_goes_past_what_reads_the_prefetched_constant_only():
    m = compiled("\n".join([W2, LOAD_T, LOAD_W, FLAG, SCALE_W, ADD_T]))
    names = phase_names(m)
    # The load of %w moved above the barrier; the wait now follows the vmuls, before the vadd.
    assert names[:4] == ["npu.copy", "npu.set_flag", "npu.vmuls", "npu.wait_flag"], names
    assert names[4] == "npu.vadd"
    run(m)  # the race checker included


def test_wait_goes_past_other_pipes_ops():
    """An instruction of another pipe (here a sync op of MTE3) between the wait and
    the vmuls does not stop it: the wait holds only its own pipe's queue."""
    other = '    npu.pipe_barrier {pipe = "MTE3"}'
    m = compiled("\n".join([W2, LOAD_T, LOAD_W, FLAG, other, SCALE_W, ADD_T]))
    names = phase_names(m)
    assert names[:5] == ["npu.copy", "npu.set_flag", "npu.pipe_barrier", "npu.vmuls", "npu.wait_flag"], names
    run(m)


def test_wait_stays_before_what_reads_the_phase_loads():
    m = compiled("\n".join([W2, LOAD_T, LOAD_W, FLAG, ADD_T.replace("%w2", "%w_ub"), SCALE_W]))
    names = phase_names(m)
    assert names[:3] == ["npu.copy", "npu.set_flag", "npu.wait_flag"], names


def test_race_checker_catches_a_wait_moved_too_far(monkeypatch):
    """Mutation: every instruction counted as free, the wait also goes past the
    vadd that reads %t before it has landed: the simulator reports a race."""
    monkeypatch.setattr(late_waits, "_free", lambda op, pipe, before: isinstance(op, (npu.VMulsOp, npu.VAddOp)))
    m = compiled("\n".join([W2, LOAD_T, LOAD_W, FLAG, SCALE_W, ADD_T]))
    assert phase_names(m)[:5] == ["npu.copy", "npu.set_flag", "npu.vmuls", "npu.vadd", "npu.wait_flag"]
    with pytest.raises(CompileError, match="race"):
        run(m)
