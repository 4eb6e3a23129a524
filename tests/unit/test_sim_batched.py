"""The approximate simulation's numerics batched across blocks (`batched.py`,
`batch_kernels.py`, `batch_scalar.py`): outputs bitwise and instruction counts
equal to the simulation's on kernels whose blocks read overlapping and shared GM,
write GM at offsets not affine in the block, diverge (`scf.if` on the block, loops
of different trip counts), read in a later phase what another block wrote, and
use every kernel with a batched form; the batched path is taken (not block by
block), and a batched form that is wrong is caught."""

from __future__ import annotations

import numpy as np
import pytest

from gecomp.bench.sim_speed import matmul_module
from gecomp.core.parsing import parse_module, verify_module
from gecomp.core.signature import input_specs, main_function, random_inputs
from gecomp.dialects.context import make_context
from gecomp.dialects.npu import memory as npu_memory
from gecomp.simulator.npu import batch_kernels, batch_scalar, simulate
from test_sim_approx import assert_exact_outputs

GM = "#npu.space<gm>"
UB = "#npu.space<ub>"
BLOCKS = 8


def parsed(text: str):
    module = parse_module(make_context(), text, "<test>")
    verify_module(module)
    return module


def run_both(text: str, seed: int = 0):
    module = parsed(text)
    inputs = random_inputs(input_specs(main_function(module)), seed)
    return simulate(module, inputs, hw="ascend910"), simulate(module, inputs, hw="ascend910", approx=True)


def assert_same(full, approx) -> None:
    assert_exact_outputs(full, approx)


def vector_kernel(divergent: bool = True) -> str:
    """Phase 1: each block reads 64 elements of x at 16 * block (windows overlapping
    their neighbours'), w (the same 64 for every block), multiplies, reduces rows of
    16 and writes 64 + 4 results at a permutation of the blocks (5 * block mod 8:
    not affine in the block). Phase 2: each block reads what block + 1 wrote,
    and (if `divergent`) blocks below 3 scale it, blocks in a grid-stride loop over
    5 tiles make 1 or 0 trips."""
    f32 = "f32"
    x, w, y, z = (f"memref<{n}x{f32}, {GM}>" for n in (16 * BLOCKS + 48, 64, 68 * BLOCKS, 64 * BLOCKS))
    ub64, ub4 = f"memref<64x{f32}, {UB}>", f"memref<4x{f32}, {UB}>"
    branch = """
    %small = arith.cmpi slt, %b, %c3 : index
    scf.if %small {
      npu.vmuls %a[%c0], %a[%c0] {cols = 64, scalar = 2.0}
    }
    scf.for %t = %b to %c5 step %c8 {
      npu.vexp %a[%c0], %a[%c0] {cols = 64}
    }""" if divergent else ""
    return f"""
npu.kernel @k(%x: {x}, %w: {w}, %y: {y}, %z: {z}) attributes {{block_dim = {BLOCKS}}} {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c5 = arith.constant 5 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %c64 = arith.constant 64 : index
    %c68 = arith.constant 68 : index
    %b = npu.block_idx : index
    %a = npu.alloc {{offset = 0}} : {ub64}
    %wu = npu.alloc {{offset = 256}} : {ub64}
    %o = npu.alloc {{offset = 512}} : {ub64}
    %r = npu.alloc {{offset = 768}} : {ub4}
    %xo = arith.muli %b, %c16 : index
    npu.copy %x[%xo], %a[%c0] {{cols = 64}}
    npu.copy %w[%c0], %wu[%c0] {{cols = 64}}
    npu.set_flag {{src = "MTE2", dst = "V", event = 0}}
    npu.wait_flag {{src = "MTE2", dst = "V", event = 0}}
    npu.vmul %a[%c0], %wu[%c0], %o[%c0] {{cols = 64}}
    npu.vreduce_sum %o[%c0], %r[%c0] {{rows = 4, cols = 16}}
    npu.vtranspose %a[%c0], %wu[%c0] {{rows = 4, cols = 16}}
    npu.vadd %o[%c0], %wu[%c0], %o[%c0] {{cols = 64}}
    npu.set_flag {{src = "V", dst = "MTE3", event = 0}}
    npu.wait_flag {{src = "V", dst = "MTE3", event = 0}}
    %p5 = arith.muli %b, %c5 : index
    %p = arith.remui %p5, %c8 : index
    %yo = arith.muli %p, %c68 : index
    npu.copy %o[%c0], %y[%yo] {{cols = 64}}
    %yr = arith.addi %yo, %c64 : index
    npu.copy %r[%c0], %y[%yr] {{cols = 4}}
    npu.sync_all
    %n1 = arith.addi %b, %c1 : index
    %n = arith.remui %n1, %c8 : index
    %q5 = arith.muli %n, %c5 : index
    %q = arith.remui %q5, %c8 : index
    %ro = arith.muli %q, %c68 : index
    npu.copy %y[%ro], %a[%c0] {{cols = 64}}
    npu.set_flag {{src = "MTE2", dst = "V", event = 0}}
    npu.wait_flag {{src = "MTE2", dst = "V", event = 0}}{branch}
    npu.vadds %a[%c0], %a[%c0] {{cols = 64, scalar = 1.0}}
    npu.set_flag {{src = "V", dst = "MTE3", event = 0}}
    npu.wait_flag {{src = "V", dst = "MTE3", event = 0}}
    %zo = arith.muli %b, %c64 : index
    npu.copy %a[%c0], %z[%zo] {{cols = 64}}
}}
func.func @main(%x: {x} {{ge.name = "x"}}, %w: {w} {{ge.name = "w"}}, %y: {y} {{ge.name = "y", npu.output}},
                %z: {z} {{ge.name = "z", npu.output}}) {{
    npu.launch @k(%x, %w, %y, %z)
    func.return
}}
"""


def permuted_matmul(transpose: bool = False) -> str:
    """bench/sim_speed.py's matmul with its blocks' rows permuted (3 * block mod
    blocks: the fixpipe writes GM at offsets not affine in the block), and B's
    load into L0 transposed if `transpose`."""
    text = matmul_module(128, 64, 64, 16, BLOCKS)
    text = text.replace(
        "%row0 = arith.muli %blk, %rows : index",
        "%c3 = arith.constant 3 : index\n    %c8 = arith.constant 8 : index\n"
        "    %p3 = arith.muli %blk, %c3 : index\n    %p = arith.remui %p3, %c8 : index\n"
        "    %row0 = arith.muli %p, %rows : index",
    )
    if transpose:
        text = text.replace("npu.load_l0 %b1[%c0], %b0[%c0] {rows = 16, cols = 16}",
                            "npu.load_l0 %b1[%c0], %b0[%c0] {rows = 16, cols = 16, transpose = true}")
    return text


@pytest.mark.parametrize("divergent", [False, True])
def test_vector_kernel_exact(divergent):
    full, approx = run_both(vector_kernel(divergent))
    assert_same(full, approx)
    tally = approx.report.approximate
    assert tally.launches == 1 and tally.full_launches == 0
    assert tally.batched > 0
    if not divergent:
        assert tally.batches == 1  # all eight blocks as one


@pytest.mark.parametrize("transpose", [False, True])
def test_matmul_with_permuted_blocks_exact(transpose):
    full, approx = run_both(permuted_matmul(transpose))
    assert_same(full, approx)
    tally = approx.report.approximate
    assert tally.batches == 1 and tally.by_block < tally.batched


def test_divergent_blocks_split_and_merge():
    """The blocks split at the scf.if and the loop, and are one batch again in the
    next kernel's phase: every phase's batches run the same instructions."""
    full, approx = run_both(vector_kernel(True))
    assert_same(full, approx)
    assert approx.report.approximate.batches >= 2


def test_wrong_batched_form_is_caught(monkeypatch):
    """A mutation: load_l0 applying the per-block kernel to the batched views (its
    `.T` then swaps the block axis): the outputs must differ or the run fail."""
    monkeypatch.setitem(batch_kernels.BATCHED, npu_memory.LoadL0Op.kernel, lambda op, a, kernel: kernel)
    try:
        full, approx = run_both(permuted_matmul(transpose=True))
    except (ValueError, IndexError):
        return
    assert any(a.tobytes() != b.tobytes() for a, b in zip(approx.outputs, full.outputs))


def test_affine_views_checked(monkeypatch):
    """A mutation: offsets taken as affine in the block when they are not (the
    permuted writes): the outputs must differ or the run fail."""
    from gecomp.simulator.npu import batched

    def always_affine(self, o):
        return int(o[0]), int(o[1] - o[0])

    monkeypatch.setattr(batched.Replay, "_step", always_affine)
    try:
        full, approx = run_both(vector_kernel(False))
    except ValueError:  # a view beyond its buffer
        return
    assert any(a.tobytes() != b.tobytes() for a, b in zip(approx.outputs, full.outputs))


def test_scalar_ops_per_block():
    """The lifted arith ops give, entry by entry, the per-block functions' results."""
    from gecomp.simulator.npu.scalar import BINARY

    rng = np.random.default_rng(0)
    a = rng.integers(-50, 50, 16)
    b = rng.integers(1, 9, 16) * rng.choice([-1, 1], 16)

    class Op:
        pass

    for name, fn in BINARY.items():
        op = Op()
        op.name = name
        lifted = batch_scalar.lifted(op, fn)
        left, right = (np.abs(a), np.abs(b)) if name.endswith("ui") or name in ("arith.shli", "arith.shrsi") else (a, b)
        if name in ("arith.shli", "arith.shrsi", "arith.shrui"):
            right = right % 5
        got = lifted(left, right)
        want = [fn(int(x), int(y)) for x, y in zip(left, right)]
        assert np.asarray(got).tolist() == want, name


def test_uniform_and_divergence():
    assert batch_scalar.uniform(np.array([3, 3, 3])) == 3
    with pytest.raises(batch_scalar.Diverged):
        batch_scalar.uniform(np.array([3, 4, 3]))
    single = lambda op, lo, hi, st: range(lo, hi, st)  # noqa: E731
    values = batch_scalar.iterations(None, np.array([0, 1, 2]), np.array([8, 9, 10]), 4, single)
    assert [v.tolist() for v in values] == [[0, 1, 2], [4, 5, 6]]
    with pytest.raises(batch_scalar.Diverged):
        batch_scalar.iterations(None, np.array([0, 1, 2]), 5, 4, single)
