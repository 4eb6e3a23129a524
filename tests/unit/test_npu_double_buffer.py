"""`npu-double-buffer`: the same numbers for every trip count, the loop rewritten
in ping-pong pairs, and the overlap it buys in simulated cycles."""

from __future__ import annotations

import pytest
from xdsl.dialects import scf

from gecomp.dialects import npu
from gecomp.simulator.hardware import load_preset
from gecomp.transforms.npu.double_buffer import double_buffer_kernel
from npu_pass_testing import K_LOOP_MATMUL, assert_same_outputs, compiled, inputs_for, kernel_of, outputs
from npu_testing import gm, kernel_module, preset_file

SYNC = "npu-plan-local-memory{hw=tiny},npu-insert-sync{hw=tiny}"
DOUBLE = "npu-double-buffer{hw=tiny}," + SYNC


def tile_loop(trips: str, block_dim: int = 1, setup: str = "", tile: int = 256, tiles_max: int = 8) -> str:
    """z = x * 2 + y over `trips` tiles of one block (each block its own part)."""
    per_block = tile * tiles_max
    return kernel_module(
        f"""
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %tile = arith.constant {tile} : index
  %per_block = arith.constant {per_block} : index
  %blk = npu.block_idx : index
  %base = arith.muli %blk, %per_block : index
{setup}
  %xa = npu.alloc : memref<{tile}xf16, #npu.space<ub>>
  %ya = npu.alloc : memref<{tile}xf16, #npu.space<ub>>
  %za = npu.alloc : memref<{tile}xf16, #npu.space<ub>>
  scf.for %i = %c0 to {trips} step %c1 {{
    %t = arith.muli %i, %tile : index
    %o = arith.addi %base, %t : index
    npu.copy %x[%o], %xa[%c0] {{cols = {tile}}}
    npu.copy %y[%o], %ya[%c0] {{cols = {tile}}}
    npu.vmuls %xa[%c0], %xa[%c0] {{cols = {tile}, scalar = 2.0}}
    npu.vadd %xa[%c0], %ya[%c0], %za[%c0] {{cols = {tile}}}
    npu.copy %za[%c0], %z[%o] {{cols = {tile}}}
  }}""",
        {"x": gm(per_block * block_dim), "y": gm(per_block * block_dim)},
        {"z": gm(per_block * block_dim)},
        block_dim=block_dim,
    )


def loops(module) -> list[scf.ForOp]:
    return [op for op in module.walk() if isinstance(op, scf.ForOp)]


def allocs(module) -> list[npu.AllocOp]:
    return [op for op in module.walk() if isinstance(op, npu.AllocOp)]


def same_numbers(text: str, hw: str = "tiny"):
    single, double = compiled(text, SYNC), compiled(text, DOUBLE)
    inputs = inputs_for(single)
    assert_same_outputs(outputs(single, hw, inputs)[0], outputs(double, hw, inputs)[0])
    return double


def test_dynamic_trip_counts_from_block_idx():
    """Blocks 0..5 run 0, 1, 2, 3, 4 and 5 tiles: empty, single, even and odd."""
    double = same_numbers(tile_loop("%blk", block_dim=6))
    (pairs,) = loops(double)
    assert len(allocs(double)) == 6
    used = {
        op.operands[i].name_hint for op in pairs.body.walk() if isinstance(op, npu.InstructionOp) for i in op.buffer_operands()
    }
    assert used == {"x", "y", "z", "xa", "ya", "za", "xa_pong", "ya_pong", "za_pong"}
    (remainder,) = [op for op in double.walk() if isinstance(op, scf.IfOp)]  # the odd tile, on the first copies
    used = {
        op.operands[i].name_hint
        for op in remainder.walk()
        if isinstance(op, npu.InstructionOp) and not isinstance(op, npu.SetFlagOp | npu.WaitFlagOp)
        for i in op.buffer_operands()
    }
    assert used == {"x", "y", "z", "xa", "ya", "za"}


@pytest.mark.parametrize("trips, loops_after, remainder", [("%c5", 1, True), ("%c2", 1, False), ("%c1", 1, False)])
def test_constant_trip_counts_fold(trips, loops_after, remainder):
    double = same_numbers(tile_loop(trips))
    assert len(loops(double)) == loops_after
    assert not any(isinstance(op, scf.IfOp) for op in double.walk())
    vector_adds = sum(1 for op in double.walk() if isinstance(op, npu.VAddOp))
    assert vector_adds == {"%c5": 3, "%c2": 2, "%c1": 1}[trips]  # pair + inlined last tile, pair, untouched
    if trips == "%c1":
        assert len(allocs(double)) == 3


def test_disabled_changes_nothing():
    text = tile_loop("%c5")
    assert str(compiled(text, "npu-double-buffer{enable=false}")) == str(compiled(text))


def test_accumulators_keep_one_copy():
    """The k-loop's tiles in L1 / L0 alternate; the L0C accumulator, read by every
    mmad after the first and by the fixpipe after the loop, keeps one copy."""
    double = same_numbers(K_LOOP_MATMUL)
    names = sorted(op.result.name_hint for op in allocs(double))
    assert names == sorted(["a1", "a1_pong", "b1", "b1_pong", "a0", "a0_pong", "b0", "b0_pong", "acc"])


def test_values_carried_across_iterations_keep_one_copy():
    """A running sum in UB is read before it is written in every iteration."""
    text = kernel_module(
        """
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %c128 = arith.constant 128 : index
  %xa = npu.alloc : memref<128xf16, #npu.space<ub>>
  %sum = npu.alloc : memref<128xf16, #npu.space<ub>>
  npu.vdup %sum[%c0] {cols = 128, value = 0.0}
  scf.for %i = %c0 to %c6 step %c1 {
    %o = arith.muli %i, %c128 : index
    npu.copy %x[%o], %xa[%c0] {cols = 128}
    npu.vadd %sum[%c0], %xa[%c0], %sum[%c0] {cols = 128}
  }
  npu.copy %sum[%c0], %z[%c0] {cols = 128}""",
        {"x": gm(768)},
        {"z": gm(128)},
    )
    double = same_numbers(text)
    assert sorted(op.result.name_hint for op in allocs(double)) == ["sum", "xa", "xa_pong"]


def test_loop_results_flow_through_both_halves_and_the_remainder():
    text = kernel_module(
        """
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %blk = npu.block_idx : index
  %n = arith.addi %blk, %c1 : index           // 1, 2 or 3 tiles
  %xa = npu.alloc : memref<128xf16, #npu.space<ub>>
  %start = arith.muli %blk, %c128 : index
  %end = scf.for %i = %c0 to %n step %c1 iter_args(%o = %start) -> (index) {
    npu.copy %x[%o], %xa[%c0] {cols = 128}
    npu.vexp %xa[%c0], %xa[%c0] {cols = 128}
    npu.copy %xa[%c0], %z[%o] {cols = 128}
    %next = arith.addi %o, %c128 : index
    scf.yield %next : index
  }
  npu.copy %x[%end], %xa[%c0] {cols = 128}
  npu.copy %xa[%c0], %y[%end] {cols = 128}""",
        {"x": gm(1024)},
        {"z": gm(1024), "y": gm(1024)},
        block_dim=3,
    )
    double = same_numbers(text)
    assert len(allocs(double)) == 1  # xa is used after the loop: not private, one copy


def test_copies_that_would_not_fit_are_not_made():
    """Three 8 KB buffers fit the tiny preset's 32 KB UB, six do not."""
    module = compiled(tile_loop("%c4", tile=4096, tiles_max=4))
    outcome = double_buffer_kernel(kernel_of(module), load_preset("tiny"))
    assert (outcome.doubled, outcome.too_big) == (0, 1)
    assert len(allocs(module)) == 3 and len(loops(module)) == 1
    roomy = compiled(tile_loop("%c4", tile=4096, tiles_max=4))
    assert double_buffer_kernel(kernel_of(roomy), load_preset("ascend910")).doubled == 1


def test_overlap_of_three_equal_stages(tmp_path):
    """Load, compute and store of t cycles each over n tiles: about 3nt with a
    barrier after every instruction, (2n+1)t single-buffered (the next load
    overlaps the store), (n+2)t double-buffered."""
    hw = preset_file(
        tmp_path,
        "ascend910",
        **{"paths.ub_to_gm.bytes_per_cycle": 54.5, "paths.ub_to_gm.latency": 200, "vector.transcendental": [15, 10.5]},
    )
    n, t = 8, 351  # 8 KB tiles: 200 + 8192 / 54.5 cycles each way, 15 + 10.5 * 32 repeats for vexp
    text = kernel_module(
        f"""
  %c1 = arith.constant 1 : index
  %cn = arith.constant {n} : index
  %c4096 = arith.constant 4096 : index
  %xa = npu.alloc : memref<4096xf16, #npu.space<ub>>
  %za = npu.alloc : memref<4096xf16, #npu.space<ub>>
  scf.for %i = %c0 to %cn step %c1 {{
    %o = arith.muli %i, %c4096 : index
    npu.copy %x[%o], %xa[%c0] {{cols = 4096}}
    npu.vexp %xa[%c0], %za[%c0] {{cols = 4096}}
    npu.copy %za[%c0], %z[%o] {{cols = 4096}}
  }}""",
        {"x": gm(4096 * n)},
        {"z": gm(4096 * n)},
    )
    q = f'{{hw="{hw}"}}'
    cycles = {}
    results = {}
    for name, pipeline in {
        "serial": f"npu-plan-local-memory{q},npu-serialize",
        "single": f"npu-plan-local-memory{q},npu-insert-sync{q}",
        "double": f"npu-double-buffer{q},npu-plan-local-memory{q},npu-insert-sync{q}",
    }.items():
        module = compiled(text, pipeline)
        results[name], report = outputs(module, hw, inputs_for(module))
        (kernel,) = report.kernels
        assert kernel.busy[5] == n * t  # V: n vexp of t cycles
        cycles[name] = kernel.cycles
    assert_same_outputs(results["serial"], results["double"])
    assert cycles["serial"] == pytest.approx(3 * n * t, rel=0.03)
    assert cycles["single"] == pytest.approx((2 * n + 1) * t, rel=0.03)
    assert cycles["double"] == pytest.approx((n + 2) * t, rel=0.03)


def test_nested_loops_alternate_at_both_levels():
    """Rows of 4 chunks: the chunk buffer alternates in the inner loop; the row sum,
    reset at the start of every row, alternates in the outer loop (whose body, the
    inner loop now in pairs, is unrolled in turn)."""
    text = kernel_module(
        """
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c128 = arith.constant 128 : index
  %c512 = arith.constant 512 : index
  %row_sum = npu.alloc : memref<128xf16, #npu.space<ub>>
  %chunk = npu.alloc : memref<128xf16, #npu.space<ub>>
  scf.for %r = %c0 to %c4 step %c1 {
    npu.vdup %row_sum[%c0] {cols = 128, value = 0.0}
    %ro = arith.muli %r, %c512 : index
    scf.for %c = %c0 to %c3 step %c1 {
      %co = arith.muli %c, %c128 : index
      %o = arith.addi %ro, %co : index
      npu.copy %x[%o], %chunk[%c0] {cols = 128}
      npu.vadd %row_sum[%c0], %chunk[%c0], %row_sum[%c0] {cols = 128}
    }
    %zo = arith.muli %r, %c128 : index
    npu.copy %row_sum[%c0], %z[%zo] {cols = 128}
  }""",
        {"x": gm(2048)},
        {"z": gm(512)},
    )
    double = same_numbers(text)
    names = sorted(op.result.name_hint for op in allocs(double))
    assert names == ["chunk", "chunk_pong", "row_sum", "row_sum_pong"]
    outer = loops(double)[0]
    inner_pairs = [op for op in outer.body.block.ops if isinstance(op, scf.ForOp)]
    assert len(inner_pairs) == 2  # the row's chunk loop, once per half of the row pair
