"""Every check of the simulator fires, with a message naming the instruction(s)."""

from __future__ import annotations

import re

import pytest

from gecomp.core.diagnostics import CompileError
from npu_testing import gm, kernel_module, local, run

LOAD = '  npu.copy %x[%c0], %u[%c0] {cols = 1024}'
MTE2_TO_V = '  npu.set_flag {src = "MTE2", dst = "V", event = 0}\n  npu.wait_flag {src = "MTE2", dst = "V", event = 0}'
V_TO_MTE3 = '  npu.set_flag {src = "V", dst = "MTE3", event = 0}\n  npu.wait_flag {src = "V", dst = "MTE3", event = 0}'
STORE = '  npu.copy %u[%c0], %y[%c0] {cols = 1024}'
UB = f"  %u = npu.alloc {{offset = 0}} : {local(1024, 'ub')}"


def module(*lines: str, block_dim: int = 1) -> str:
    return kernel_module("\n".join(lines), {"x": gm(1024)}, {"y": gm(1024)}, block_dim=block_dim)


def error_of(text: str, hw: str = "tiny") -> str:
    with pytest.raises(CompileError) as info:
        run(text, hw=hw)
    return info.value.format()


def line_of(text: str, needle: str, occurrence: int = 1) -> int:
    lines = [i + 1 for i, line in enumerate(text.splitlines()) if needle in line]
    return lines[occurrence - 1]


def test_a_correct_pipeline_runs():
    result = run(module(UB, LOAD, MTE2_TO_V, "  npu.vexp %u[%c0], %u[%c0] {cols = 1024}", V_TO_MTE3, STORE))
    assert result.report.total_cycles > 0


def test_missing_wait_is_a_race_naming_both_instructions():
    text = module(UB, LOAD, '  npu.set_flag {src = "MTE2", dst = "V", event = 0}', "  npu.vexp %u[%c0], %u[%c0] {cols = 1024}")
    message = error_of(text)
    vexp, copy = line_of(text, "npu.vexp"), line_of(text, "npu.copy")
    assert message.startswith(f"test.mlir:{vexp}:3: error: race: 'npu.vexp' on pipe V reads ub bytes [0, 2048)")
    assert f"that 'npu.copy' at test.mlir:{copy}:3 on pipe MTE2 writes" in message


def test_missing_sync_is_a_race_whatever_the_timing():
    # A long vector op goes first, so in time the exp on u starts after the copy
    # into u has finished; nothing orders them all the same.
    text = module(
        UB,
        f"  %v = npu.alloc {{offset = 4096}} : {local(8192, 'ub')}",
        LOAD,
        "  npu.vexp %v[%c0], %v[%c0] {rows = 8, cols = 1024}",
        "  npu.vexp %u[%c0], %u[%c0] {cols = 1024}",
    )
    timed = run(text, check_races=False, trace=True).report.trace_events
    copy_end = next(end for _, _, name, _, end in timed if name == "npu.copy")
    exp_start = [start for _, _, name, start, _ in timed if name == "npu.vexp"][1]
    assert exp_start > copy_end
    assert "race: 'npu.vexp' on pipe V reads ub bytes [0, 2048)" in error_of(text)


def test_overwriting_what_another_pipe_still_reads_is_a_race():
    # MTE2 reloads u after V is done with it, but while MTE3 may still be storing
    # it (write after read).
    text = module(
        UB, LOAD, MTE2_TO_V, "  npu.vexp %u[%c0], %u[%c0] {cols = 1024}",
        '  npu.set_flag {src = "V", dst = "MTE3", event = 0}', '  npu.set_flag {src = "V", dst = "MTE2", event = 0}',
        '  npu.wait_flag {src = "V", dst = "MTE3", event = 0}', STORE,
        '  npu.wait_flag {src = "V", dst = "MTE2", event = 0}', LOAD,
    )
    message = error_of(text)
    assert f"test.mlir:{line_of(text, 'npu.copy %x', 2)}:3: error: race: 'npu.copy' on pipe MTE2 writes ub" in message
    assert f"that 'npu.copy' at test.mlir:{line_of(text, 'npu.copy %u')}:3 on pipe MTE3 reads" in message


def test_a_barrier_all_orders_everything():
    text = module(UB, LOAD, '  npu.pipe_barrier {pipe = "ALL"}', "  npu.vexp %u[%c0], %u[%c0] {cols = 1024}", '  npu.pipe_barrier {pipe = "ALL"}', STORE)
    run(text)
    one_pipe = text.replace('{pipe = "ALL"}', '{pipe = "V"}', 1)
    assert "race" in error_of(one_pipe)


def test_disjoint_rows_of_one_buffer_do_not_race():
    # MTE2 fills even rows while V works on odd rows of the same buffer: the byte
    # ranges interleave but no element is shared.
    text = module(
        UB,
        '  %c32 = arith.constant 32 : index',
        "  npu.copy %x[%c0], %u[%c0] {rows = 16, cols = 32, strides = [32, 64]}",
        "  npu.vdup %u[%c32] {rows = 16, cols = 32, strides = [64], value = 1.0}",
        MTE2_TO_V,
    )
    run(text)


def test_a_wait_without_set_is_a_deadlock():
    text = module(UB, LOAD, '  npu.wait_flag {src = "MTE2", dst = "V", event = 0}', "  npu.vexp %u[%c0], %u[%c0] {cols = 1024}")
    message = error_of(text)
    assert message.startswith(f"test.mlir:{line_of(text, 'wait_flag')}:3: error: deadlock: 'npu.wait_flag' (MTE2 -> V, event 0)")
    assert "waits for set_flag number 1 of this flag but only 0 execute before the kernel ends" in message


def test_one_wait_too_many_in_a_loop_is_a_deadlock():
    body = [UB, "  %c1 = arith.constant 1 : index", "  %c3 = arith.constant 3 : index",
            '  npu.set_flag {src = "MTE2", dst = "V", event = 0}',
            "  scf.for %i = %c0 to %c3 step %c1 {",
            '    npu.wait_flag {src = "MTE2", dst = "V", event = 0}',
            '    npu.set_flag {src = "MTE2", dst = "V", event = 0}',
            '    npu.wait_flag {src = "MTE2", dst = "V", event = 0}',
            "  }"]
    # The sets run on MTE2, which never waits: all 4 execute; V's waits queue up
    # and the fifth finds no set.
    assert "waits for set_flag number 5 of this flag but only 4 execute" in error_of(module(*body))


def test_a_scalar_wait_or_barrier_that_cannot_be_satisfied_is_a_deadlock():
    scalar = module(UB, '  npu.wait_flag {src = "MTE2", dst = "S", event = 0}', LOAD)
    assert "deadlock: 'npu.wait_flag' (MTE2 -> S, event 0) on pipe S" in error_of(scalar)
    barrier = module(UB, '  npu.wait_flag {src = "MTE3", dst = "V", event = 0}', '  npu.pipe_barrier {pipe = "ALL"}',
                     '  npu.set_flag {src = "MTE3", dst = "V", event = 0}')
    assert "when every pipe must drain at the 'npu.pipe_barrier' ALL" in error_of(barrier)


def test_a_wait_before_its_set_in_program_order_is_fine():
    # V waits first, MTE2 sets later in the program: the flag still arrives.
    text = module(UB, '  npu.wait_flag {src = "MTE2", dst = "V", event = 0}', "  npu.vexp %u[%c0], %u[%c0] {cols = 1024}",
                  LOAD, '  npu.set_flag {src = "MTE2", dst = "V", event = 0}')
    result = run(text)
    assert result.report.kernels[0].busy[5] > 0


def test_unbalanced_flags_are_reported():
    text = module(UB, LOAD, '  npu.set_flag {src = "MTE2", dst = "V", event = 0}', MTE2_TO_V)
    assert "unbalanced flags: set_flag (MTE2 -> V, event 0) executes 2 times but is waited for 1 times" in error_of(text)


def test_over_capacity_names_the_space_and_size():
    text = module(f"  %u = npu.alloc {{offset = 0}} : {local(40000, 'ub')}")
    message = error_of(text)
    assert "over capacity: a 80000-byte ub buffer at offset 0 ends at byte 80000, beyond the 32768-byte ub of preset 'tiny'" in message
    run(text, hw="ascend910")


def test_misaligned_buffers_and_accesses():
    assert "misaligned: offset 16 in ub is not a multiple of its 32-byte alignment" in error_of(
        module(f"  %u = npu.alloc {{offset = 16}} : {local(1024, 'ub')}")
    )
    l0a = module(f"  %a = npu.alloc {{offset = 0}} : {local(1024, 'l0a')}", f"  %l1 = npu.alloc {{offset = 0}} : {local(1024, 'l1')}",
                 "  %c8 = arith.constant 8 : index", "  npu.load_l0 %l1[%c0], %a[%c8] {rows = 16, cols = 16}")
    assert "misaligned: offset 8 is byte 16 of l0a, not a multiple of its 512-byte alignment" in error_of(l0a)


def test_out_of_bounds_offsets_static_and_at_run_time():
    static = module(UB, "  %c100 = arith.constant 100 : index", "  npu.copy %x[%c0], %u[%c100] {cols = 1000}")
    assert "out of bounds: writes elements [100, 1100) of a 1024-element ub buffer" in error_of(static)
    dynamic = module(UB, "  %c1 = arith.constant 1 : index", "  %c3 = arith.constant 3 : index", "  %c400 = arith.constant 400 : index",
                     "  scf.for %i = %c0 to %c3 step %c1 {", "    %o = arith.muli %i, %c400 : index",
                     "    npu.copy %x[%o], %u[%c0] {cols = 400}", "  }")
    message = error_of(dynamic)
    assert f"test.mlir:{line_of(dynamic, 'npu.copy')}:5: error: 'npu.copy' op out of bounds: reads elements [800, 1200) of a 1024-element gm buffer" in message


def test_missing_offsets_are_reported():
    assert "has no offset: local buffers must be placed" in error_of(module(f"  %u = npu.alloc : {local(1024, 'ub')}"))
    text = kernel_module(UB, {"x": gm(1024)}, {"y": gm(1024)},
                         launch="%t = npu.gm_buffer : memref<1024xf16, #npu.space<gm>>\n  npu.launch @k(%x, %t)")
    assert "has no offset: GM buffers must be placed in the arena" in error_of(text)


def test_event_ids_beyond_the_preset():
    text = module('  npu.set_flag {src = "MTE2", dst = "V", event = 4}', '  npu.wait_flag {src = "MTE2", dst = "V", event = 4}')
    assert "event id 4 is beyond the hardware's 4 event ids per pipe pair (0..3, preset 'tiny')" in error_of(text)


COPY_KERNEL = f"""  %u = npu.alloc {{offset = 0}} : {local(1024, 'ub')}
  npu.copy %x[%c0], %u[%c0] {{cols = 1024}}
  npu.set_flag {{src = "MTE2", dst = "MTE3", event = 0}}
  npu.wait_flag {{src = "MTE2", dst = "MTE3", event = 0}}
  npu.copy %u[%c0], %y[%c0] {{cols = 1024}}"""


def plan(launches: str, arena: int = 4096) -> str:
    text = kernel_module(COPY_KERNEL, {"x": gm(1024)}, {"y": gm(1024)}, arena=arena)
    text = text.replace('%y: memref<1024xf16, #npu.space<gm>> {ge.name = "y", npu.output}',
                        '%y: memref<1024xf16, #npu.space<gm>> {ge.name = "y", npu.output}, %w: memref<1024xf16, #npu.space<gm>> {ge.name = "w", npu.output}')
    return re.sub(r"npu.launch @k\(%x, %y\)", launches, text)


def test_gm_buffers_overlapping_while_live():
    ok = plan("%a = npu.gm_buffer {offset = 0} : memref<1024xf16, #npu.space<gm>>\n"
              "  %b = npu.gm_buffer {offset = 0} : memref<1024xf16, #npu.space<gm>>\n"
              "  npu.launch @k(%x, %a)\n  npu.launch @k(%a, %y)\n  npu.launch @k(%x, %b)\n  npu.launch @k(%b, %w)")
    run(ok)
    live = ok.replace("npu.launch @k(%a, %y)\n  npu.launch @k(%x, %b)", "npu.launch @k(%x, %b)\n  npu.launch @k(%a, %y)")
    message = error_of(live)
    assert "GM buffers %a and %b overlap in the arena (bytes [0, 2048)) while both are live" in message


def test_reusing_gm_bytes_across_streams_needs_an_event():
    text = plan("%a = npu.gm_buffer {offset = 0} : memref<1024xf16, #npu.space<gm>>\n"
                "  %b = npu.gm_buffer {offset = 0} : memref<1024xf16, #npu.space<gm>>\n"
                "  npu.launch @k(%x, %a)\n  npu.launch @k(%a, %y)\n  npu.launch @k(%x, %b) {stream = 1}\n  npu.launch @k(%b, %w) {stream = 1}")
    assert "GM buffer %b reuses bytes [0, 2048) of %a, but the launch of @k on stream 1" in error_of(text)
    ordered = text.replace("npu.launch @k(%x, %b) {stream = 1}",
                           "npu.record_event {stream = 0, event = 0}\n  npu.wait_event {stream = 1, event = 0}\n  npu.launch @k(%x, %b) {stream = 1}")
    run(ordered)


def test_cross_stream_races_and_unrecorded_events():
    text = plan("%a = npu.gm_buffer {offset = 0} : memref<1024xf16, #npu.space<gm>>\n"
                "  npu.launch @k(%x, %a)\n  npu.launch @k(%a, %y) {stream = 1}")
    assert "race between streams: reads GM buffer %a that the launch of @k on stream 0" in error_of(text)
    waiting = text.replace("npu.launch @k(%a, %y) {stream = 1}", "npu.wait_event {stream = 1, event = 2}\n  npu.launch @k(%a, %y) {stream = 1}")
    assert "deadlock: waits for event 2, which no earlier npu.record_event records" in error_of(waiting)


def test_gm_buffers_outside_the_recorded_arena():
    text = plan("%a = npu.gm_buffer {offset = 4096} : memref<1024xf16, #npu.space<gm>>\n  npu.launch @k(%x, %a)")
    assert "out of the arena: bytes [4096, 6144) of a 4096-byte GM arena" in error_of(text)


def test_errors_in_later_blocks_name_the_values():
    text = module(UB, "  %b = npu.block_idx : index", "  %c512 = arith.constant 512 : index", "  %o = arith.muli %b, %c512 : index",
                  "  npu.copy %x[%o], %u[%c0] {cols = 1000}", block_dim=2)
    assert "out of bounds: reads elements [512, 1512) of a 1024-element gm buffer" in error_of(text)
