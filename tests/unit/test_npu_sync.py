"""`npu-insert-sync`: race-free kernels (the simulator's exact race check), the same
numbers, and no more flags than needed.

"No more than needed" is tested two ways on the hand-written kernels of
tests/lit/npu (whose syncs the pass replaces): the pass emits at most as many
sync ops as the hand-placed ones, and leaving out any single flag it planned
makes the simulator report a race.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from gecomp.dialects import npu
from gecomp.transforms.npu.insert_sync import strip_syncs
from npu_pass_testing import (
    K_LOOP_MATMUL,
    assert_every_flag_is_needed,
    assert_same_outputs,
    pipelined_matmul,
    compiled,
    inputs_for,
    kernel_of,
    lit_kernel,
    outputs,
    sync_ops,
)
from npu_testing import gm, kernel_module, preset_file

# (kernel, preset, sync ops written by hand, sync ops the pass emits)
TEACHING = [
    ("vadd_double_buffer", "ascend910", 24, 20),
    ("matmul_256", "ascend910", 14, 10),
    ("softmax_rows", "tiny", 6, 6),
]


@pytest.mark.parametrize("name, hw, by_hand, emitted", TEACHING, ids=[t[0] for t in TEACHING])
def test_teaching_kernels_get_no_more_sync_than_by_hand(name, hw, by_hand, emitted):
    original = compiled(lit_kernel(name))
    assert sync_ops(original) == by_hand
    expected, _ = outputs(original, hw)
    synced = compiled(lit_kernel(name), f"npu-insert-sync{{hw={hw}}}")
    assert sync_ops(synced) == emitted <= by_hand
    actual, _ = outputs(synced, hw)  # raises on a race, a deadlock or unbalanced flags
    assert_same_outputs(expected, actual)


@pytest.mark.parametrize("name, hw", [(t[0], t[1]) for t in TEACHING], ids=[t[0] for t in TEACHING])
def test_every_flag_of_the_teaching_kernels_is_needed(name, hw):
    assert_every_flag_is_needed(lit_kernel(name), "", hw)


def test_running_twice_changes_nothing():
    once = compiled(lit_kernel("matmul_256"), "npu-insert-sync")
    twice = compiled(str(once), "npu-insert-sync")
    assert str(twice) == str(once)


def test_strip_removes_flags_and_barriers():
    module = compiled(lit_kernel("vadd_double_buffer"), "npu-serialize")
    present = sync_ops(module)
    assert present > 24
    assert strip_syncs(kernel_of(module)) == present
    assert sync_ops(module) == 0


def test_out_of_event_ids_falls_back_to_barriers(tmp_path):
    one_id = preset_file(tmp_path, "ascend910", **{"sync.event_ids": 1})
    expected, _ = outputs(compiled(lit_kernel("vadd_double_buffer")), "ascend910")
    module = compiled(lit_kernel("vadd_double_buffer"), f'npu-insert-sync{{hw="{one_id}"}}')
    text = str(module)
    assert "npu.pipe_barrier" in text
    assert set(re.findall(r"event = (\d+)", text)) == {"0"}
    actual, _ = outputs(module, one_id)
    assert_same_outputs(expected, actual)


# ---- kernels of our own, written without sync ---------------------------------------------


def reference_and_synced(text: str, hw: str = "tiny", plan: str = "npu-plan-local-memory{hw=tiny},"):
    """Outputs of the fully serialised kernel and of the one npu-insert-sync made."""
    serial = compiled(text, f"{plan}npu-serialize")
    synced = compiled(text, f"{plan}npu-insert-sync{{hw={hw}}}")
    inputs = inputs_for(serial)
    return outputs(serial, hw, inputs)[0], outputs(synced, hw, inputs)[0], synced


def flags(module, src: str, dst: str) -> int:
    return sum(
        1 for op in module.walk() if isinstance(op, npu.SetFlagOp) and (op.attr_values().src, op.attr_values().dst) == (src, dst)
    )


VECTOR_TILES = kernel_module(
    """
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c256 = arith.constant 256 : index
  %c1536 = arith.constant 1536 : index
  %blk = npu.block_idx : index
  %tiles = arith.muli %blk, %c3 : index          // 0, 3, 6 tiles: a zero-trip loop too
  %base = arith.muli %blk, %c1536 : index
  %xa = npu.alloc : memref<256xf16, #npu.space<ub>>
  %ya = npu.alloc : memref<256xf16, #npu.space<ub>>
  %za = npu.alloc : memref<256xf16, #npu.space<ub>>
  scf.for %i = %c0 to %tiles step %c1 {
    %t = arith.muli %i, %c256 : index
    %o = arith.addi %base, %t : index
    npu.copy %x[%o], %xa[%c0] {cols = 256}
    npu.copy %y[%o], %ya[%c0] {cols = 256}
    npu.vadd %xa[%c0], %ya[%c0], %za[%c0] {cols = 256}
    npu.vmuls %za[%c0], %za[%c0] {cols = 256, scalar = 0.5}
    npu.copy %za[%c0], %z[%o] {cols = 256}
  }""",
    {"x": gm(4608), "y": gm(4608)},
    {"z": gm(4608)},
    block_dim=3,
)


def test_vector_tile_loop_with_dynamic_trip_count(close):
    expected, actual, synced = reference_and_synced(VECTOR_TILES)
    assert_same_outputs(expected, actual)
    x, y = inputs_for(synced)
    for block, tiles in ((1, 3), (2, 6)):  # block 0 has no tile
        done = slice(1536 * block, 1536 * block + 256 * tiles)
        close(actual[0][done], (x[done].astype(np.float64) + y[done]) * 0.5)
    # load -> add, add -> store, and the two "buffer free again" flags back
    assert [flags(synced, *pair) for pair in (("MTE2", "V"), ("V", "MTE3"), ("V", "MTE2"), ("MTE3", "V"))] == [1, 1, 1, 1]


def test_k_loop_matmul_accumulating_through_an_if(close):
    expected, actual, synced = reference_and_synced(K_LOOP_MATMUL)
    assert_same_outputs(expected, actual)
    a, b = inputs_for(synced)
    close(actual[0], a.astype(np.float64) @ b.astype(np.float64))
    # MTE2 -> MTE1 (tiles in L1), MTE1 -> M (tiles in L0), L1 and L0 free again, M -> FIX
    assert sync_ops(synced) == 10


PHASES = kernel_module(
    """
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c128 = arith.constant 128 : index
  %c512 = arith.constant 512 : index
  %e = npu.alloc : memref<512xf16, #npu.space<ub>>
  %r = npu.alloc : memref<128xf16, #npu.space<ub>>
  %s = npu.alloc : memref<128xf16, #npu.space<ub>>
  // phase 1: t = exp(x), tile by tile
  scf.for %i = %c0 to %c4 step %c1 {
    %o = arith.muli %i, %c512 : index
    npu.copy %x[%o], %e[%c0] {cols = 512}
    npu.vexp %e[%c0], %e[%c0] {cols = 512}
    npu.copy %e[%c0], %t[%o] {cols = 512}
  }
  // phase 2: z = t + t read back from GM, in rows of 4 chunks of 128
  scf.for %row = %c0 to %c4 step %c1 {
    %ro = arith.muli %row, %c512 : index
    scf.for %j = %c0 to %c4 step %c1 {
      %jo = arith.muli %j, %c128 : index
      %o = arith.addi %ro, %jo : index
      npu.copy %t[%o], %r[%c0] {cols = 128}
      npu.vadd %r[%c0], %r[%c0], %s[%c0] {cols = 128}
      npu.copy %s[%c0], %z[%o] {cols = 128}
    }
  }""",
    {"x": gm(2048)},
    {"t": gm(2048), "z": gm(2048)},
)


@pytest.mark.parametrize("order", ["sync-then-plan", "plan-then-sync"])
def test_several_loops_nested_and_a_gm_round_trip(order):
    plan, sync = "npu-plan-local-memory{hw=tiny}", "npu-insert-sync{hw=tiny}"
    pipeline = f"{sync},{plan}" if order == "sync-then-plan" else f"{plan},{sync}"
    serial = compiled(PHASES, f"{plan},npu-serialize")
    synced = compiled(PHASES, pipeline)
    inputs = inputs_for(serial)
    expected, actual = outputs(serial, "tiny", inputs)[0], outputs(synced, "tiny", inputs)[0]
    assert_same_outputs(expected, actual)
    x = inputs[0].astype(np.float32)
    np.testing.assert_allclose(actual[1].astype(np.float32), 2 * np.exp(x).astype(np.float16), rtol=2e-3)
    assert flags(synced, "MTE3", "MTE2") >= 1  # t is read back after it is stored


def test_planner_reuse_is_ordered_even_when_sync_runs_first():
    """Phase 1's buffer %e and phase 2's %r, %s are never live together, so the
    planner may put them on the same bytes (it does when they would not fit apart:
    %e is made almost as large as tiny's UB): sync inserted before planning must
    already order phase 2's writes after phase 1's last reads."""
    tight = PHASES.replace("%e = npu.alloc : memref<512xf16", "%e = npu.alloc : memref<16256xf16")
    synced = compiled(tight, "npu-insert-sync{hw=tiny},npu-plan-local-memory{hw=tiny}")
    offsets = {
        op.result.name_hint: op.attr_values().offset for op in synced.walk() if isinstance(op, npu.AllocOp)
    }
    assert offsets["r"] < 1024 and offsets["e"] == 0  # %r sits inside %e's bytes
    outputs(synced, "tiny")


@pytest.mark.parametrize("read_at, raw", [("%c256", False), ("%c128", True)])
def test_gm_read_back_needs_a_flag_only_where_the_bytes_meet(read_at, raw):
    """A stores z[base, base+256) and B reads z[base+R, base+R+256): a GM RAW only
    when the tiles overlap (block offsets cancel: the same block does both). The UB
    buffers are placed apart, so GM is the only way MTE3 could feed MTE2."""
    text = kernel_module(
        f"""
  %c128 = arith.constant 128 : index
  %c256 = arith.constant 256 : index
  %c512 = arith.constant 512 : index
  %a = npu.alloc {{offset = 0}} : memref<256xf16, #npu.space<ub>>
  %b = npu.alloc {{offset = 512}} : memref<256xf16, #npu.space<ub>>
  %blk = npu.block_idx : index
  %base = arith.muli %blk, %c512 : index
  %r = arith.addi %base, {read_at} : index
  npu.copy %x[%base], %a[%c0] {{cols = 256}}
  npu.copy %a[%c0], %z[%base] {{cols = 256}}
  npu.copy %z[%r], %b[%c0] {{cols = 256}}
  npu.copy %b[%c0], %y[%base] {{cols = 256}}""",
        {"x": gm(1024)},
        {"z": gm(1024), "y": gm(1024)},
        block_dim=2,
    )
    expected, actual, synced = reference_and_synced(text)
    assert flags(synced, "MTE3", "MTE2") == (1 if raw else 0)
    if raw:  # the bytes B reads that A stored are A's
        assert_same_outputs(expected, actual)


def test_scalar_reads_wait_for_the_vector_unit():
    text = kernel_module(
        """
  %c1 = arith.constant 1 : index
  %idx = npu.alloc : memref<16xf16, #npu.space<ub>>
  %row = npu.alloc : memref<64xf16, #npu.space<ub>>
  npu.vdup %idx[%c0] {cols = 16, value = 3.0}
  %i = npu.read_scalar %idx[%c0] : index
  %o = arith.muli %i, %c1 : index
  npu.vdup %idx[%c0] {cols = 16, value = 1.0}
  npu.copy %x[%o], %row[%c0] {cols = 64}
  npu.copy %row[%c0], %z[%c0] {cols = 64}""",
        {"x": gm(256)},
        {"z": gm(64)},
    )
    expected, actual, synced = reference_and_synced(text)
    assert_same_outputs(expected, actual)
    x = inputs_for(synced)[0]
    np.testing.assert_array_equal(actual[0], x[3:67])
    assert flags(synced, "V", "S") == 1  # V -> S before the read; S -> V needs nothing
    assert flags(synced, "S", "V") == 0


def test_what_a_loop_orders_at_its_end_is_not_transitive():
    """In the loop V learns that MTE2 wrote %a only after V's last instruction
    (the wait at the end of the body), and MTE3 learned V's work before that: after
    the loop MTE3 does not know MTE2's write, and reading %a needs a flag."""
    text = kernel_module(
        """
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c128 = arith.constant 128 : index
  %a = npu.alloc : memref<128xf16, #npu.space<ub>>
  %e = npu.alloc : memref<128xf16, #npu.space<ub>>
  npu.copy %x[%c0], %a[%c0] {cols = 128}
  scf.for %i = %c0 to %c2 step %c1 {
    %o = arith.muli %i, %c128 : index
    npu.vexp %a[%c0], %e[%c0] {cols = 128}
    npu.copy %e[%c0], %z[%o] {cols = 128}
    npu.copy %x[%o], %a[%c0] {cols = 128}
  }
  npu.copy %a[%c0], %y[%c0] {cols = 128}""",
        {"x": gm(256)},
        {"z": gm(256), "y": gm(128)},
    )
    expected, actual, _ = reference_and_synced(text)
    assert_same_outputs(expected, actual)


def test_an_ordering_made_inside_a_loop_that_may_not_run_implies_nothing_else():
    """The inner loop (no iteration on block 0) orders its mmad after the fixpipe
    through MTE2 (which overwrites %u after the fixpipe) and the scalar unit (which
    waits for MTE2 to read %v); the next outer iteration's mmad, which overwrites
    what the fixpipe reads, still needs its own flag."""
    text = kernel_module(
        """
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %blk = npu.block_idx : index
  %a1 = npu.alloc : memref<256xf16, #npu.space<l1>>
  %a0 = npu.alloc : memref<256xf16, #npu.space<l0a>>
  %b0 = npu.alloc : memref<256xf16, #npu.space<l0b>>
  %acc = npu.alloc : memref<256xf32, #npu.space<l0c>>
  %u = npu.alloc : memref<256xf16, #npu.space<ub>>
  %v = npu.alloc : memref<16xf16, #npu.space<ub>>
  npu.copy %x[%c0], %a1[%c0] {rows = 16, cols = 16}
  npu.load_l0 %a1[%c0], %a0[%c0] {rows = 16, cols = 16}
  npu.load_l0 %a1[%c0], %b0[%c0] {rows = 16, cols = 16}
  npu.mmad %a0[%c0], %b0[%c0], %acc[%c0] {m = 16, n = 16, k = 16}
  scf.for %i = %c0 to %c2 step %c1 {
    npu.mmad %a0[%c0], %b0[%c0], %acc[%c0] {m = 16, n = 16, k = 16, accumulate = true}
    npu.fixpipe %acc[%c0], %u[%c0] {rows = 16, cols = 16}
    scf.for %j = %c0 to %blk step %c1 {
      npu.copy %x[%c0], %u[%c0] {cols = 256}
      npu.copy %x[%c0], %v[%c0] {cols = 16}
      %s = npu.read_scalar %v[%c0] : index
      npu.mmad %a0[%c0], %b0[%c0], %acc[%c0] {m = 16, n = 16, k = 16, accumulate = true}
    }
  }
  npu.fixpipe %acc[%c0], %z[%c0] {rows = 16, cols = 16}""",
        {"x": gm(256)},
        {"z": gm(256)},
        block_dim=2,
    )
    expected, actual, _ = reference_and_synced(text)
    assert_same_outputs(expected, actual)


# ---- software-pipelined loops ---------------------------------------------------------------


def _plan_and_sync(hw: str = "tiny") -> str:
    return f"npu-plan-local-memory{{hw={hw}}},npu-insert-sync{{hw={hw}}}"


def test_pipelined_loops_run_as_fast_as_straight_line_code():
    """An item loop around a loop over pairs of K chunks (L1 tiles in two copies)
    around loops over pairs of L0 steps (two L0 copies): the "buffer free" flags
    are handed from one step loop to the next and through the enclosing loops, so
    the next chunk and the next item load while this one computes, exactly as
    when every instruction is written out (3 items x 4 chunks x 4 steps)."""
    looped = compiled(pipelined_matmul(3, 2, 4, looped=True), _plan_and_sync())
    straight = compiled(pipelined_matmul(3, 2, 4, looped=False), _plan_and_sync())
    inputs = inputs_for(looped)
    (loop_out, loop_report), (straight_out, straight_report) = outputs(looped, "tiny", inputs), outputs(straight, "tiny", inputs)
    assert_same_outputs(straight_out, loop_out)
    a, b = inputs
    products = a.astype(np.float64).reshape(3, 32, -1) @ b.astype(np.float64)
    np.testing.assert_allclose(loop_out[0].astype(np.float64), products.reshape(96, 32), rtol=2e-3, atol=2e-2)
    assert loop_report.total_cycles <= straight_report.total_cycles * 1.002
    assert sync_ops(looped) < sync_ops(straight) / 5


def test_pipelined_loops_pass_their_flags_through():
    """The "L1 free" (MTE1 -> MTE2) and "L0 free" (M -> MTE1) flags of the inner
    loops are set before the item loop and waited after it: nothing waits for them
    between two runs of the chunk loop."""
    module = compiled(pipelined_matmul(2, 2, 4, looped=True), _plan_and_sync())
    kernel = kernel_of(module)
    items = next(op for op in kernel.entry.ops if op.name == "scf.for")
    around = [op for op in kernel.entry.ops if isinstance(op, npu.SetFlagOp | npu.WaitFlagOp)]
    pairs = {(op.name, op.attr_values().src, op.attr_values().dst) for op in around}
    assert {("npu.set_flag", "MTE1", "MTE2"), ("npu.wait_flag", "MTE1", "MTE2")} <= pairs
    assert {("npu.set_flag", "M", "MTE1"), ("npu.wait_flag", "M", "MTE1")} <= pairs
    waits_in_item_body = [
        (op.attr_values().src, op.attr_values().dst) for op in items.body.block.ops if isinstance(op, npu.WaitFlagOp)
    ]
    assert ("MTE1", "MTE2") not in waits_in_item_body and ("M", "MTE1") not in waits_in_item_body


def test_every_flag_of_the_pipelined_kernel_is_needed():
    assert_every_flag_is_needed(pipelined_matmul(2, 2, 4, looped=True), "npu-plan-local-memory{hw=tiny}", "tiny")


ITEM_PAIRS = {
    "the last item has none": "%np = arith.subi %c2, %it : index",
    "every other item has none": "%odd = arith.remui %it, %c2 : index\n    %np = arith.muli %odd, %c2 : index",
    "the first item has none": "%even = arith.remui %it, %c2 : index\n    %np = arith.muli %even, %c2 : index",
}


@pytest.mark.parametrize("pairs", ITEM_PAIRS, ids=list(ITEM_PAIRS))
def test_chains_through_a_loop_that_runs_zero_times_in_some_items(pairs):
    """The chunk loop's flags are chained through the item loop; when the chunk loop
    runs zero times for an item (a trip count known only at run time), its chained
    waits and sets do not run either. The synced kernel must still be race-free and
    compute what the serialised one computes (an item without chunks stores the
    previous item's accumulator)."""
    text = pipelined_matmul(3, 2, 4, looped=True).replace(
        "scf.for %kp = %c0 to %c2 step %c1 {", ITEM_PAIRS[pairs] + "\n    scf.for %kp = %c0 to %np step %c1 {"
    )
    assert "%np" in text
    inputs = inputs_for(compiled(text))
    synced, _ = outputs(compiled(text, _plan_and_sync()), inputs=inputs)
    serial, _ = outputs(compiled(text, "npu-plan-local-memory{hw=tiny},npu-serialize"), inputs=inputs)
    assert_same_outputs(serial, synced)


def _elementwise_on_one_block(tiles: int) -> str:
    """The kernel of tests/lit/npu/passes/elementwise.mlir (z = 2x + y over tiles of
    512, a trip count known only at run time) on one block of `tiles` tiles, so
    that its double-buffered loop runs more than once."""
    text = lit_kernel("passes/elementwise")
    for old, new in (("block_dim = 2", "block_dim = 1"), ("%c2 = arith.constant 2 :", f"%c2 = arith.constant {tiles} :")):
        assert text.count(old) == 1
        text = text.replace(old, new)
    return text


def test_every_flag_of_the_double_buffered_elementwise_kernel_is_needed():
    """Two pairs of tiles and an odd one: the "buffer free" flags chained through
    the loop, whose trip count is known only at run time, and waited after it
    order the loop's last uses of the buffers before the odd tile's, so the
    level holding the loop adds no flag of its own for them."""
    assert_every_flag_is_needed(
        _elementwise_on_one_block(5), "npu-double-buffer,npu-plan-local-memory", "ascend910"
    )


@pytest.mark.parametrize("staged_at, war", [("%c32", False), ("%c16", True)])
def test_a_panel_read_at_a_loop_varying_column_and_staged_elsewhere(staged_at, war):
    """MTE1 reads 16-column tiles of an L1 panel at columns j*16 (j < 2) in a loop,
    then MTE2 stages columns [S, S+32) of every row: apart from what the loop read
    when S = 32 (the columns fall in the gaps between the read rows for every j),
    a write-after-read when S = 16."""
    text = kernel_module(
        f"""
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %panel = npu.alloc {{offset = 0}} : memref<1024xf16, #npu.space<l1>>
  %w_l1 = npu.alloc {{offset = 2048}} : memref<256xf16, #npu.space<l1>>
  %a = npu.alloc {{offset = 0}} : memref<256xf16, #npu.space<l0a>>
  %b = npu.alloc {{offset = 0}} : memref<256xf16, #npu.space<l0b>>
  %acc = npu.alloc {{offset = 0}} : memref<256xf32, #npu.space<l0c>>
  npu.copy %x[%c0], %panel[%c0] {{rows = 16, cols = 32, strides = [64, 64]}}
  npu.copy %w[%c0], %w_l1[%c0] {{cols = 256}}
  npu.load_l0 %w_l1[%c0], %b[%c0] {{rows = 16, cols = 16, strides = [16, 16]}}
  scf.for %j = %c0 to %c2 step %c1 {{
    %col = arith.muli %j, %c16 : index
    npu.load_l0 %panel[%col], %a[%c0] {{rows = 16, cols = 16, strides = [64, 16]}}
    npu.mmad %a[%c0], %b[%c0], %acc[%c0] {{m = 16, n = 16, k = 16, accumulate = true}}
  }}
  npu.copy %x[%c32], %panel[{staged_at}] {{rows = 16, cols = 32, strides = [64, 64]}}
  npu.fixpipe %acc[%c0], %y[%c0] {{rows = 16, cols = 16}}""",
        {"x": gm(1024), "w": gm(256)},
        {"y": gm(256, "f32")},
    )
    expected, actual, synced = reference_and_synced(text)
    assert (flags(synced, "MTE1", "MTE2") > 0) == war
    assert_same_outputs(expected, actual)


@pytest.mark.parametrize("bias_read_first", [False, True])
def test_gm_loads_share_one_landing_when_the_first_is_needed_later(bias_read_first):
    """MTE2 copies a bias into UB, then a weight tile into L1 for MTE1. A set_flag
    on MTE2 holds it until its transfers land, so one set after both copies (the
    bias's flag moved to the weight's) costs one landing instead of two, when the
    vector unit reads the bias after MTE1 reads the weights anyway. When the vector
    unit reads the bias first, its flag stays right after the bias copy."""
    vector = """
  npu.vadd %bias[%c0], %bias[%c0], %t[%c0] {cols = 64}
  npu.copy %t[%c0], %y[%c0] {cols = 64}"""
    cube = """
  npu.load_l0 %w_l1[%c0], %b[%c0] {rows = 16, cols = 16, strides = [16, 16]}
  npu.load_l0 %a_l1[%c0], %a[%c0] {rows = 16, cols = 16, strides = [16, 16]}
  npu.mmad %a[%c0], %b[%c0], %acc[%c0] {m = 16, n = 16, k = 16}
  npu.fixpipe %acc[%c0], %z[%c0] {rows = 16, cols = 16}"""
    text = kernel_module(
        f"""
  %bias = npu.alloc {{offset = 0}} : memref<64xf16, #npu.space<ub>>
  %t = npu.alloc {{offset = 128}} : memref<64xf16, #npu.space<ub>>
  %w_l1 = npu.alloc {{offset = 0}} : memref<256xf16, #npu.space<l1>>
  %a_l1 = npu.alloc {{offset = 512}} : memref<256xf16, #npu.space<l1>>
  %a = npu.alloc {{offset = 0}} : memref<256xf16, #npu.space<l0a>>
  %b = npu.alloc {{offset = 0}} : memref<256xf16, #npu.space<l0b>>
  %acc = npu.alloc {{offset = 0}} : memref<256xf32, #npu.space<l0c>>
  npu.copy %v[%c0], %bias[%c0] {{cols = 64}}
  npu.copy %w[%c0], %w_l1[%c0] {{cols = 256}}
  npu.copy %w[%c0], %a_l1[%c0] {{cols = 256}}{vector if bias_read_first else cube}{cube if bias_read_first else vector}""",
        {"v": gm(64), "w": gm(256)},
        {"y": gm(64), "z": gm(256, "f32")},
    )
    expected, actual, synced = reference_and_synced(text)
    assert_same_outputs(expected, actual)
    body = [op for op in kernel_of(synced).body.block.ops if isinstance(op, (npu.CopyOp, npu.SetFlagOp))]
    mte2_sets = [i for i, op in enumerate(body) if isinstance(op, npu.SetFlagOp) and op.attr_values().src == "MTE2"]
    last_load = max(i for i, op in enumerate(body[:4]) if isinstance(op, npu.CopyOp))
    assert len(mte2_sets) == 2
    if bias_read_first:
        assert mte2_sets[0] == 1  # right after the bias copy: its landing of its own
    else:
        assert min(mte2_sets) > last_load  # both after the last load: one landing


def test_a_flag_is_not_stretched_over_a_round_trip_through_its_consumer_pipe():
    """The cube computes the next scores (mmad into %s) and then a product of the
    probabilities the vector unit has just rounded (%p, through MTE3 and MTE1);
    the vector unit reads the scores, then the product. One M -> V flag set after
    the product would order both reads, but would hold the scores' fixpipe until
    the probabilities had gone round through L1 and the cube: the scores get a
    flag of their own, set right after their mmad, and the fixpipe starts before
    the product is done."""
    text = kernel_module(
        """
  %q_l1 = npu.alloc {offset = 0} : memref<256xf16, #npu.space<l1>>
  %p_l1 = npu.alloc {offset = 512} : memref<256xf16, #npu.space<l1>>
  %q = npu.alloc {offset = 0} : memref<256xf16, #npu.space<l0a>>
  %pa = npu.alloc {offset = 512} : memref<256xf16, #npu.space<l0a>>
  %k = npu.alloc {offset = 0} : memref<256xf16, #npu.space<l0b>>
  %s = npu.alloc {offset = 0} : memref<256xf32, #npu.space<l0c>>
  %pv = npu.alloc {offset = 1024} : memref<256xf32, #npu.space<l0c>>
  %p = npu.alloc {offset = 0} : memref<256xf16, #npu.space<ub>>
  %t = npu.alloc {offset = 512} : memref<256xf32, #npu.space<ub>>
  %u = npu.alloc {offset = 1536} : memref<256xf32, #npu.space<ub>>
  npu.copy %x[%c0], %q_l1[%c0] {cols = 256}
  npu.copy %x[%c0], %p[%c0] {cols = 256}
  npu.load_l0 %q_l1[%c0], %q[%c0] {rows = 16, cols = 16, strides = [16, 16]}
  npu.load_l0 %q_l1[%c0], %k[%c0] {rows = 16, cols = 16, strides = [16, 16]}
  npu.vexp %p[%c0], %p[%c0] {cols = 256}
  npu.mmad %q[%c0], %k[%c0], %s[%c0] {m = 16, n = 16, k = 16}
  npu.copy %p[%c0], %p_l1[%c0] {rows = 16, cols = 16, strides = [16, 16]}
  npu.load_l0 %p_l1[%c0], %pa[%c0] {rows = 16, cols = 16, strides = [16, 16]}
  npu.mmad %pa[%c0], %k[%c0], %pv[%c0] {m = 16, n = 16, k = 16}
  npu.fixpipe %s[%c0], %t[%c0] {rows = 16, cols = 16}
  npu.fixpipe %pv[%c0], %u[%c0] {rows = 16, cols = 16}
  npu.vadd %t[%c0], %u[%c0], %t[%c0] {cols = 256}
  npu.copy %t[%c0], %y[%c0] {cols = 256}""",
        {"x": gm(256)},
        {"y": gm(256, "f32")},
    )
    expected, actual, synced = reference_and_synced(text)
    assert_same_outputs(expected, actual)
    body = list(kernel_of(synced).body.block.ops)
    first_mmad = next(i for i, op in enumerate(body) if isinstance(op, npu.MmadOp))
    after = body[first_mmad + 1]
    assert isinstance(after, npu.SetFlagOp) and (after.attr_values().src, after.attr_values().dst) == ("M", "V")
    assert flags(synced, "M", "V") == 2
