"""`npu.sync_all`, the barrier of all the blocks of a launch, in the simulator: what
one block wrote before it is what the others read after it, at the soft-SyncAll
cost (a flag stored to GM, every flag read back); GM buffers of the plan may share
bytes between phases of one launch, not within one; and a barrier that cannot be
met is a located error, not a hang."""

from __future__ import annotations

import numpy as np
import pytest

from gecomp.dialects.context import make_context
from gecomp.core.diagnostics import CompileError
from gecomp.core.parsing import parse_module, verify_module
from gecomp.dialects import npu
from gecomp.simulator.hardware import load_preset
from gecomp.simulator.npu import simulate
from gecomp.simulator.npu.costs import transfer_cost
from gecomp.simulator.npu.hazards import PIPE_NAMES
from gecomp.simulator.npu.lockstep import Block, Lockstep
from gecomp.transforms.npu.insert_sync import InsertSyncPass

GM = "memref<128xf16, #npu.space<gm>>"


def mirror_module(between: str, block_dim: int = 2) -> str:
    """Each of 2 blocks stores its half of x into the other half of %t, then (after
    `between`) copies its own half of %t to y: y is x with its halves swapped."""
    return f"""builtin.module {{
  npu.kernel @mirror(%x: {GM}, %t: {GM}, %y: {GM}) attributes {{block_dim = 2}} {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %b = npu.block_idx : index
    %own = arith.muli %b, %c64 : index
    %other = arith.subi %c1, %b : index
    %mirror = arith.muli %other, %c64 : index
    %u = npu.alloc {{offset = 0}} : memref<64xf16, #npu.space<ub>>
    npu.copy %x[%own], %u[%c0] {{cols = 64}}
    npu.pipe_barrier {{pipe = "ALL"}}
    npu.copy %u[%c0], %t[%mirror] {{cols = 64}}
    {between}
    npu.copy %t[%own], %u[%c0] {{cols = 64}}
    npu.pipe_barrier {{pipe = "ALL"}}
    npu.copy %u[%c0], %y[%own] {{cols = 64}}
  }}
  func.func @main(%x: {GM} {{ge.name = "x"}}, %y: {GM} {{ge.name = "y", npu.output}}) {{
    %t = npu.gm_buffer {{offset = 0}} : {GM}
    npu.launch @mirror(%x, %t, %y) {{block_dim = {block_dim}}}
    func.return
  }}
}}"""


def run(text: str, inputs: list[np.ndarray]):
    module = parse_module(make_context(), text, "sync.mlir")
    verify_module(module)
    return simulate(module, inputs, "tiny")


X = np.arange(128, dtype=np.float16)

SPLIT = "npu.sync_all_arrive\n    npu.sync_all_wait"


def test_what_a_block_wrote_before_the_barrier_every_block_reads_after_it():
    result = run(mirror_module("npu.sync_all"), [X])
    np.testing.assert_array_equal(result.outputs[0], np.concatenate([X[64:], X[:64]]))


def test_without_the_barrier_a_block_reads_what_the_other_has_not_written_yet():
    """The same kernel with a pipe_barrier (one core only) in its place: block 0
    reads the half block 1 writes later, and gets the arena's poison."""
    result = run(mirror_module('npu.pipe_barrier {pipe = "ALL"}'), [X])
    assert not np.array_equal(result.outputs[0], np.concatenate([X[64:], X[:64]]))


def test_the_barrier_costs_a_flag_stored_and_every_flag_read_back():
    """Both blocks arrive together, so the barrier adds exactly one 32-byte store
    (UB -> GM) and one read of every core's flag (GM -> UB) to a full pipe drain."""
    hw = load_preset("tiny")
    synced = run(mirror_module("npu.sync_all"), [X]).report.total_cycles
    drained = run(mirror_module('npu.pipe_barrier {pipe = "ALL"}'), [X]).report.total_cycles
    store = transfer_cost(hw, "ub_to_gm", 1, 32).cycles
    poll = transfer_cost(hw, "gm_to_ub", 1, 32 * hw.core_count).cycles
    assert synced - drained == store + poll


@pytest.mark.parametrize("barrier, wait", [("npu.sync_all", "npu.sync_all"), (SPLIT, "npu.sync_all_wait")])
def test_the_trace_shows_the_flag_transfers_and_the_wait_for_the_others(barrier, wait):
    """Per block: the flag store on MTE3 and the read of every flag on MTE2 (busy,
    as the report counts them), and on the scalar track the wait from the block's
    drain to its release, which ends where the next phase starts."""
    hw = load_preset("tiny")
    report = simulate(parse_module(make_context(), mirror_module(barrier), "sync.mlir"), [X], "tiny", trace=True).report
    events = [(core, PIPE_NAMES[pipe], name, start, end) for core, pipe, name, start, end in report.trace_events]
    phase_end = report.kernels[0].start + report.kernels[0].phases[0].cycles
    for core in (0, 1):
        mine = [e[1:] for e in events if e[0] == core and "sync_all" in e[2]]
        store, read = (next(e for e in mine if e[1].endswith(what)) for what in ("flag store", "flag read"))
        waited = next(e for e in mine if e[1] == wait)
        assert store[0] == "MTE3" and store[3] - store[2] == transfer_cost(hw, "ub_to_gm", 1, 32).data_cycles
        assert read[0] == "MTE2" and read[3] - read[2] == transfer_cost(hw, "gm_to_ub", 1, 32 * hw.core_count).data_cycles
        assert waited[0] == "S" and store[2] <= waited[2] < waited[3] == phase_end
    for pipe in ("MTE2", "MTE3"):
        traced = sum(end - start for _, p, name, start, end in events if p == pipe and name != "npu.wait_flag")
        assert traced == report.kernels[0].busy[PIPE_NAMES.index(pipe)]


def test_more_blocks_than_cores_cannot_meet():
    with pytest.raises(CompileError, match=r"launches @mirror on 3 blocks, but its npu.sync_all needs every block resident at once: at most the 2 cores"):
        run(mirror_module("npu.sync_all", block_dim=3), [X])


@pytest.mark.parametrize("barrier", [npu.SyncAllOp, npu.SyncAllWaitOp])
def test_blocks_stranded_at_a_barrier_are_a_deadlock_not_a_hang(barrier):
    """The lockstep itself: two blocks wait for a third that never comes."""
    lockstep = Lockstep()
    op = barrier.new()
    blocks = [Block(core, 0, lambda: lockstep.meet(0, 3, op), lambda: None, lambda: None) for core in range(2)]
    try:
        with pytest.raises(CompileError, match=rf"deadlock: 2 block\(s\) wait at this '{op.name}'"):
            lockstep.run(blocks, lambda block: None)
    finally:
        lockstep.close()


def phases_module(b_offset: int, c_offset: int) -> str:
    """One block, three phases: x -> %a; %a -> %b; %b -> %c -> y. %a lives in
    phases 0-1, %b in 1-2, %c in 2 only."""

    def move(src: str, dst: str) -> str:
        return f"""npu.copy {src}[%c0], %u[%c0] {{cols = 128}}
    npu.pipe_barrier {{pipe = "ALL"}}
    npu.copy %u[%c0], {dst}[%c0] {{cols = 128}}
    npu.pipe_barrier {{pipe = "ALL"}}"""

    return f"""builtin.module {{
  npu.kernel @phases(%x: {GM}, %a: {GM}, %b: {GM}, %c: {GM}, %y: {GM}) attributes {{block_dim = 1}} {{
    %c0 = arith.constant 0 : index
    %u = npu.alloc {{offset = 0}} : memref<128xf16, #npu.space<ub>>
    {move("%x", "%a")}
    npu.sync_all
    {move("%a", "%b")}
    npu.sync_all
    {move("%b", "%c")}
    {move("%c", "%y")}
  }}
  func.func @main(%x: {GM} {{ge.name = "x"}}, %y: {GM} {{ge.name = "y", npu.output}}) {{
    %a = npu.gm_buffer {{offset = 0}} : {GM}
    %b = npu.gm_buffer {{offset = {b_offset}}} : {GM}
    %c = npu.gm_buffer {{offset = {c_offset}}} : {GM}
    npu.launch @phases(%x, %a, %b, %c, %y)
    func.return
  }}
}}"""


def test_buffers_of_different_phases_may_share_bytes():
    result = run(phases_module(b_offset=256, c_offset=0), [X])
    np.testing.assert_array_equal(result.outputs[0], X)


def test_buffers_of_one_phase_may_not():
    with pytest.raises(
        CompileError,
        match=r"%a and %b overlap in the arena \(bytes \[0, 256\)\) while both are live: %a is used from launch "
        r"#0 \(phase 0\) to #0 \(phase 1\), %b from launch #0 \(phase 1\)",
    ):
        run(phases_module(b_offset=0, c_offset=512), [X])


def test_the_report_splits_a_kernel_into_its_phases():
    """A row per phase: the second starts when the barrier releases the first, and
    the phases' counts add up to the kernel's."""
    report = run(mirror_module("npu.sync_all"), [X]).report
    (kernel,) = report.kernels
    first, second = kernel.phases
    assert (first.name, second.name) == ("phase 0", "phase 1")
    assert first.start == kernel.start and second.start == first.end and second.end == kernel.end
    assert [a + b for a, b in zip(first.busy, second.busy)] == kernel.busy
    assert [a + b for a, b in zip(first.stats, second.stats)] == kernel.stats
    assert [p["name"] for p in report.as_json()["kernels"][0]["phases"]] == ["phase 0", "phase 1"]
    assert "  phase 1" in report.text()


# ---- the barrier in two halves: npu.sync_all_arrive ... npu.sync_all_wait ----------------

def test_an_arrive_and_its_wait_with_nothing_between_are_a_sync_all():
    joined = run(mirror_module("npu.sync_all"), [X])
    split = run(mirror_module(SPLIT), [X])
    np.testing.assert_array_equal(split.outputs[0], np.concatenate([X[64:], X[:64]]))
    assert split.report.total_cycles == joined.report.total_cycles
    assert [p.cycles for p in split.report.kernels[0].phases] == [p.cycles for p in joined.report.kernels[0].phases]


def constant_module(barrier: str) -> str:
    """`mirror_module` with a second phase that adds the constant %w (1024 fp16 of
    2.0) to what it reads; `barrier` stands between the phases and may load %w."""
    w_type = "memref<1024xf16, #npu.space<gm>>"
    text = mirror_module(barrier).replace(
        f"npu.kernel @mirror(%x: {GM}, %t: {GM}, %y: {GM})", f"npu.kernel @mirror(%x: {GM}, %t: {GM}, %y: {GM}, %w: {w_type})"
    )
    text = text.replace(
        '    npu.copy %t[%own], %u[%c0] {cols = 64}\n    npu.pipe_barrier {pipe = "ALL"}\n',
        '    npu.copy %t[%own], %u[%c0] {cols = 64}\n    npu.pipe_barrier {pipe = "ALL"}\n'
        "    npu.vadd %u[%c0], %wu[%c0], %u[%c0] {cols = 64}\n"
        '    npu.pipe_barrier {pipe = "ALL"}\n',
    )
    text = text.replace(
        "    %u = npu.alloc {offset = 0} : memref<64xf16, #npu.space<ub>>\n",
        "    %u = npu.alloc {offset = 0} : memref<64xf16, #npu.space<ub>>\n"
        "    %wl = npu.alloc {offset = 1024} : memref<1024xf16, #npu.space<ub>>\n"
        "    %wu = npu.alloc {offset = 1024} : memref<64xf16, #npu.space<ub>>\n",
    )
    return text.replace(
        "    npu.launch @mirror(%x, %t, %y)",
        f"    %w = npu.gm_constant {{value = dense<2.0> : tensor<1024xf16>, logical = tensor<1024xf16>}} : {w_type}\n"
        "    npu.launch @mirror(%x, %t, %y, %w)",
    )


LOAD_W = "npu.copy %w[%c0], %wl[%c0] {cols = 1024}"


def test_what_stands_between_the_halves_does_not_hold_back_the_arrival():
    """The constant's load placed before a sync_all delays the block's flag until it
    has landed; between an arrive and its wait it runs while the flags travel, and
    the wait then also covers it. Same numbers either way."""
    expected = np.concatenate([X[64:], X[:64]]) + np.float16(2.0)
    before = run(constant_module(f"{LOAD_W}\n    npu.sync_all"), [X])
    split = run(constant_module(f"npu.sync_all_arrive\n    {LOAD_W}\n    npu.sync_all_wait"), [X])
    after = run(constant_module(f"npu.sync_all\n    {LOAD_W}"), [X])
    for result in (before, split, after):
        np.testing.assert_array_equal(result.outputs[0], expected)
    hw = load_preset("tiny")
    store = transfer_cost(hw, "ub_to_gm", 1, 32).cycles
    load = transfer_cost(hw, "gm_to_ub", 1, 2048)
    assert split.report.total_cycles < min(before.report.total_cycles, after.report.total_cycles)
    # The load (issued at the arrive, MTE2 idle) lands before the flags are read back:
    # the split barrier costs what the bare one does, the load's data cycles at most.
    bare = run(mirror_module("npu.sync_all"), [X]).report.kernels[0].phases[0].cycles
    assert split.report.kernels[0].phases[0].cycles - bare <= load.data_cycles
    assert before.report.kernels[0].phases[0].cycles - bare >= load.cycles - store


def test_writing_gm_between_the_halves_is_an_error():
    between = "npu.sync_all_arrive\n    npu.copy %u[%c0], %t[%own] {cols = 64}\n    npu.sync_all_wait"
    with pytest.raises(CompileError) as info:
        run(mirror_module(between), [X])
    assert info.value.format().startswith(
        "sync.mlir:15:5: error: 'npu.copy' op writes GM between 'npu.sync_all_arrive' and its wait, where other blocks"
    )


def test_reading_gm_a_phase_writes_between_the_halves_is_an_error():
    between = "npu.sync_all_arrive\n    npu.copy %t[%own], %u[%c0] {cols = 64}\n    npu.sync_all_wait"
    with pytest.raises(
        CompileError, match=r"reads kernel argument #1 between 'npu.sync_all_arrive' and its wait, but the kernel writes"
    ):
        run(mirror_module(between), [X])


@pytest.mark.parametrize(
    "between, message",
    [
        ("npu.sync_all_arrive", "'npu.sync_all_arrive' op must be followed by its 'npu.sync_all_wait'"),
        ("npu.sync_all_wait", "'npu.sync_all_wait' op must follow its 'npu.sync_all_arrive'"),
        ("npu.sync_all_arrive\n    npu.sync_all\n    npu.sync_all_wait", "'npu.sync_all_arrive' op must be followed by"),
    ],
)
def test_the_halves_come_in_pairs(between, message):
    with pytest.raises(CompileError) as info:
        run(mirror_module(between), [X])
    assert info.value.format().startswith(f"sync.mlir:14:5: error: {message}")


def test_the_report_splits_a_kernel_at_the_wait():
    report = run(constant_module(f"npu.sync_all_arrive\n    {LOAD_W}\n    npu.sync_all_wait"), [X]).report
    (kernel,) = report.kernels
    first, second = kernel.phases
    assert second.start == first.end and second.end == kernel.end
    assert [a + b for a, b in zip(first.busy, second.busy)] == kernel.busy


def test_insert_sync_refuses_a_kernel_split_by_either_barrier():
    for barrier, name in (("npu.sync_all", "npu.sync_all"), (SPLIT, "npu.sync_all_arrive")):
        module = parse_module(make_context(), mirror_module(barrier), "sync.mlir")
        with pytest.raises(CompileError, match=f"cannot synchronise @mirror: its phases are joined by {name} "):
            InsertSyncPass().apply(make_context(), module)
