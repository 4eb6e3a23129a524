"""`npu-plan-local-memory`: aligned offsets, reuse only between buffers never live
at the same time, fixed offsets kept, a clear error when a tiling does not fit."""

from __future__ import annotations

import re

import pytest

from gecomp.core.diagnostics import CompileError
from gecomp.dialects import npu
from npu_pass_testing import assert_same_outputs, compiled, inputs_for, lit_kernel, outputs
from npu_testing import gm, kernel_module

PLAN = "npu-plan-local-memory{hw=tiny}"


def offsets(module) -> dict[str, int]:
    return {op.result.name_hint: op.attr_values().offset for op in module.walk() if isinstance(op, npu.AllocOp)}


def without_offsets(text: str) -> str:
    return re.sub(r"npu\.alloc \{offset = \d+\}", "npu.alloc", text)


TWO_PHASES = kernel_module(
    """
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c512 = arith.constant 512 : index
  %a = npu.alloc : memref<4096xf16, #npu.space<ub>>      // phase 1 only
  %b = npu.alloc : memref<1024xf16, #npu.space<ub>>      // phase 2 only
  %c = npu.alloc : memref<1024xf16, #npu.space<ub>>      // phase 2 only
  %keep = npu.alloc : memref<16xf32, #npu.space<ub>>     // across both
  npu.vdup %keep[%c0] {cols = 16, value = 1.0}
  scf.for %i = %c0 to %c4 step %c1 {
    %o = arith.muli %i, %c512 : index
    npu.copy %x[%o], %a[%c0] {cols = 4096}
    npu.vexp %a[%c0], %a[%c0] {cols = 4096}
    npu.copy %a[%c0], %t[%o] {cols = 4096}
  }
  scf.for %i = %c0 to %c4 step %c1 {
    %o = arith.muli %i, %c512 : index
    npu.copy %t[%o], %b[%c0] {cols = 1024}
    npu.vadd %b[%c0], %b[%c0], %c[%c0] {cols = 1024}
    npu.copy %c[%c0], %z[%o] {cols = 1024}
  }
  npu.copy %keep[%c0], %k[%c0] {cols = 16}""",
    {"x": gm(6144)},
    {"t": gm(6144), "z": gm(4096), "k": "memref<16xf32, #npu.space<gm>>"},
)


def test_buffers_of_two_phases_keep_apart_while_there_is_room():
    """a (MTE2, V, MTE3) and b / c never live together, but sharing bytes would
    make phase 2's first copy wait for phase 1's last store: with room to spare
    every buffer gets bytes of its own."""
    at = offsets(compiled(TWO_PHASES, PLAN))
    assert at["a"] == 0 and {at["b"], at["c"]} == {8192, 10240} and at["keep"] == 12288


def test_buffers_of_two_phases_share_bytes_when_space_is_short():
    tight = TWO_PHASES.replace("memref<4096xf16, #npu.space<ub>>", "memref<14336xf16, #npu.space<ub>>")
    tight = tight.replace("{cols = 4096}", "{cols = 14336}").replace("6144x", "15872x")
    planned = compiled(tight, PLAN)  # 28 KB + 2 x 2 KB + 64 B apart would not fit tiny's 32 KB of UB
    at = offsets(planned)
    assert at["a"] == 0 and {at["b"], at["c"]} == {0, 2048}  # b and c inside a's 28 KB
    assert at["keep"] == 28672  # live throughout: apart from all
    synced = compiled(tight, f"{PLAN},npu-insert-sync{{hw=tiny}}")
    serial = compiled(tight, f"{PLAN},npu-serialize")
    inputs = inputs_for(serial)
    assert_same_outputs(outputs(serial, "tiny", inputs)[0], outputs(synced, "tiny", inputs)[0])


def test_temporaries_of_one_pipe_share_bytes_even_with_room():
    """Two vector temporaries live at different times: the V pipe runs in order,
    so sharing their bytes costs no wait."""
    text = kernel_module(
        """
  %u = npu.alloc : memref<256xf32, #npu.space<ub>>
  %t1 = npu.alloc : memref<256xf32, #npu.space<ub>>
  %t2 = npu.alloc : memref<256xf32, #npu.space<ub>>
  npu.copy %x[%c0], %u[%c0] {cols = 256}
  npu.vexp %u[%c0], %t1[%c0] {cols = 256}
  npu.vadd %t1[%c0], %u[%c0], %u[%c0] {cols = 256}
  npu.vabs %u[%c0], %t2[%c0] {cols = 256}
  npu.vadd %t2[%c0], %u[%c0], %u[%c0] {cols = 256}
  npu.copy %u[%c0], %z[%c0] {cols = 256}""",
        {"x": "memref<256xf32, #npu.space<gm>>"},
        {"z": "memref<256xf32, #npu.space<gm>>"},
    )
    at = offsets(compiled(text, PLAN))
    assert at["t1"] == at["t2"] != at["u"]


def test_buffers_of_one_loop_never_share_bytes():
    """ping / pong buffers are each dead after their half of the body, but sharing
    bytes would stop the pipes from working on both halves at once."""
    planned = compiled(without_offsets(lit_kernel("vadd_double_buffer")), "npu-plan-local-memory")
    at = offsets(planned)
    assert sorted(at.values()) == [0, 4096, 8192, 12288, 16384, 20480]


def test_alignment_of_each_space():
    text = kernel_module(
        """
  %l1 = npu.alloc : memref<16x16xf16, #npu.space<l1>>
  %a = npu.alloc : memref<8x16xf16, #npu.space<l0a>>
  %a2 = npu.alloc : memref<16x16xf16, #npu.space<l0a>>
  %b = npu.alloc : memref<16x16xf16, #npu.space<l0b>>
  %c1 = npu.alloc : memref<8x16xf32, #npu.space<l0c>>
  %c2 = npu.alloc : memref<16x16xf32, #npu.space<l0c>>
  %u = npu.alloc : memref<3xf16, #npu.space<ub>>
  %v = npu.alloc : memref<5xf16, #npu.space<ub>>
  npu.copy %x[%c0], %l1[%c0] {rows = 16, cols = 16}
  npu.load_l0 %l1[%c0], %a[%c0] {rows = 8, cols = 16}
  npu.load_l0 %l1[%c0], %a2[%c0] {rows = 16, cols = 16}
  npu.load_l0 %l1[%c0], %b[%c0] {rows = 16, cols = 16}
  npu.mmad %a[%c0], %b[%c0], %c1[%c0] {m = 8, n = 16, k = 16}
  npu.mmad %a2[%c0], %b[%c0], %c2[%c0] {m = 16, n = 16, k = 16}
  npu.copy %x[%c0], %u[%c0] {cols = 3}
  npu.copy %x[%c0], %v[%c0] {cols = 5}
  npu.vadd %u[%c0], %v[%c0], %u[%c0] {cols = 3}
  npu.copy %u[%c0], %z[%c0] {cols = 3}""",
        {"x": gm(256)},
        {"z": gm(3)},
    )
    at = offsets(compiled(text, PLAN))
    assert {at["a"], at["a2"]} == {0, 512}  # L0A: 512-byte alignment (a is 256 bytes)
    assert at["c1"] == at["c2"] == 0  # each written once, never live together
    assert {at["u"], at["v"]} == {0, 32}  # UB: 32 bytes


def test_offsets_already_given_are_kept_and_avoided():
    text = TWO_PHASES.replace(
        "%keep = npu.alloc :", "%keep = npu.alloc {offset = 64} :"
    )
    at = offsets(compiled(text, PLAN))
    assert at["keep"] == 64
    assert at["a"] >= 64 + 64  # a (8 KB, live with keep) starts after keep's 64 bytes
    assert at["a"] % 32 == 0


def test_a_tiling_that_does_not_fit_names_kernel_space_peak_and_capacity():
    big = TWO_PHASES.replace("memref<4096xf16, #npu.space<ub>>", "memref<16384xf16, #npu.space<ub>>")
    big = big.replace("{cols = 4096}", "{cols = 16384}").replace("gm(6144)", "gm(24576)")
    with pytest.raises(CompileError) as error:
        compiled(big.replace("6144x", "24576x"), PLAN)
    message = error.value.message
    assert "kernel @k does not fit in UB" in message
    assert "32832 bytes at their peak (%a (32768 B), %keep (64 B))" in message
    assert "preset 'tiny' has 32768" in message


def test_planned_kernels_simulate_like_the_hand_placed_ones():
    for name, hw in (("vadd_double_buffer", "ascend910"), ("matmul_256", "ascend910"), ("softmax_rows", "tiny")):
        original = compiled(lit_kernel(name))
        planned = compiled(without_offsets(lit_kernel(name)), f"npu-plan-local-memory{{hw={hw}}}")
        inputs = inputs_for(original)
        assert_same_outputs(outputs(original, hw, inputs)[0], outputs(planned, hw, inputs)[0])
