"""npu-prefetch-constants moves a phase's leading constant loads above its barrier,
and only those it can move without changing what any instruction reads: the
numbers stay the same, and the simulator (its race check included) agrees."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import scf

from gecomp.dialects.context import make_context
from gecomp.core.parsing import parse_module
from gecomp.dialects import npu
from gecomp.simulator.hardware import load_preset
from gecomp.simulator.npu import simulate
from gecomp.simulator.npu.costs import transfer_cost, vector_cycles
from gecomp.transforms.npu.prefetch_constants import PrefetchConstantsPass, mte2_slack, phases

VECTOR_WORK = '    npu.vmuls %s[%c0], %s[%c0] {cols = 256, scalar = 1.0}\n'


def module(second_phase: str, vector_ops: int = 1, w_offset: int = 1024) -> str:
    """x doubled into %t by phase 1 (with `vector_ops` more vector instructions),
    then `second_phase`, which reads %t and the constant %w (1.5 everywhere) and
    writes y; `%w_ub` is a 256-element UB buffer at `w_offset`."""
    return f"""builtin.module {{
  npu.kernel @k(%x: memref<512xf16, #npu.space<gm>>, %t: memref<512xf16, #npu.space<gm>>, %w: memref<1024xf16, #npu.space<gm>>, %y: memref<512xf16, #npu.space<gm>>) attributes {{block_dim = 2, npu.phases = ["a", "b"]}} {{
    %c0 = arith.constant 0 : index
    %c256 = arith.constant 256 : index
    %b = npu.block_idx : index
    %o = arith.muli %b, %c256 : index
    %u = npu.alloc {{offset = 0}} : memref<256xf16, #npu.space<ub>>
    %s = npu.alloc {{offset = 512}} : memref<256xf16, #npu.space<ub>>
    npu.copy %x[%o], %u[%c0] {{cols = 256}}
    npu.set_flag {{src = "MTE2", dst = "V", event = 0}}
    npu.wait_flag {{src = "MTE2", dst = "V", event = 0}}
    npu.vmuls %u[%c0], %s[%c0] {{cols = 256, scalar = 1.0}}
{VECTOR_WORK * vector_ops}    npu.vadd %u[%c0], %s[%c0], %u[%c0] {{cols = 256}}
    npu.set_flag {{src = "V", dst = "MTE3", event = 0}}
    npu.wait_flag {{src = "V", dst = "MTE3", event = 0}}
    npu.copy %u[%c0], %t[%o] {{cols = 256}}
    npu.sync_all
    %c1 = arith.constant 0 : index
    %b2 = npu.block_idx : index
    %o2 = arith.muli %b2, %c256 : index
    %v = npu.alloc {{offset = 2048}} : memref<256xf16, #npu.space<ub>>
    %w_ub = npu.alloc {{offset = {w_offset}}} : memref<256xf16, #npu.space<ub>>
{second_phase}
    npu.pipe_barrier {{pipe = "ALL"}}
    npu.vadd %v[%c1], %w_ub[%c1], %v[%c1] {{cols = 256}}
    npu.pipe_barrier {{pipe = "ALL"}}
    npu.copy %v[%c1], %y[%o2] {{cols = 256}}
  }}
  func.func @main(%x: memref<512xf16, #npu.space<gm>> {{ge.name = "x"}}, %y: memref<512xf16, #npu.space<gm>> {{ge.name = "y", npu.output}}) {{
    %t = npu.gm_buffer {{offset = 0}} : memref<512xf16, #npu.space<gm>>
    %w = npu.gm_constant {{value = dense<1.5> : tensor<1024xf16>, logical = tensor<1024xf16>}} : memref<1024xf16, #npu.space<gm>>
    npu.launch @k(%x, %t, %w, %y) {{block_dim = 2}}
    func.return
  }}
}}"""


LOAD_T = "    npu.copy %t[%o2], %v[%c1] {cols = 256}"
LOAD_W = "    npu.copy %w[%o2], %w_ub[%c1] {cols = 256}"
FLAG = '    npu.set_flag {src = "MTE2", dst = "V", event = 0}\n    npu.wait_flag {src = "MTE2", dst = "V", event = 0}'


def prefetched(text: str) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(the names of the copies of phase 2 moved into phase 1, y before, y after)."""
    x = np.random.default_rng(0).standard_normal(512).astype(np.float16)
    before = simulate(parse_module(make_context(), text, "t.mlir"), [x], hw="tiny").outputs[0]
    m = parse_module(make_context(), text, "t.mlir")
    PrefetchConstantsPass(hw="tiny").apply(make_context(), m)
    kernel = next(op for op in m.walk() if isinstance(op, npu.KernelOp))
    first = phases(kernel)[0]
    moved = [str(op.dst.name_hint) for op in first if isinstance(op, npu.CopyOp) and op.src.name_hint == "w"]
    after = simulate(m, [x], hw="tiny").outputs[0]
    np.testing.assert_allclose(after.astype(np.float32), 2 * x.astype(np.float32) + 1.5, rtol=2e-3, atol=2e-3)
    return moved, before, after


def test_the_first_chunk_moves_and_its_buffer_leaves_the_previous_phase_bytes():
    moved, before, after = prefetched(module(f"{LOAD_T}\n{LOAD_W}", w_offset=0))  # %w_ub on %u's bytes
    assert moved == ["w_ub"]
    np.testing.assert_array_equal(before, after)


def test_a_buffer_an_earlier_instruction_of_the_phase_touches_stays():
    touch = "    npu.copy %t[%o2], %w_ub[%c1] {cols = 256}"  # overwritten by %w's load after it
    moved, _, _ = prefetched(module(f"{LOAD_T}\n{touch}\n{LOAD_W}"))
    assert moved == []


def test_a_copy_in_a_loop_stays():
    loop = "    %c2 = arith.constant 1 : index\n    scf.for %i = %c1 to %c2 step %c2 {\n" + LOAD_W + "\n    }"
    moved, _, _ = prefetched(module(f"{LOAD_T}\n{loop}"))
    assert moved == []


@pytest.mark.parametrize("vector_ops,moves", [(0, False), (40, True)])
def test_after_the_first_chunk_copies_move_only_within_the_previous_phase_slack(vector_ops, moves):
    """Behind the phase's first MTE2 flag, %w's load moves only if phase 1's vector
    work leaves MTE2 idle for longer than it takes."""
    moved, _, _ = prefetched(module(f"{LOAD_T}\n{FLAG}\n{LOAD_W}", vector_ops=vector_ops))
    assert (moved == ["w_ub"]) == moves


def test_the_slack_is_how_much_longer_the_busiest_other_pipe_works():
    """Phase 1: 41 vmuls and a vadd over 256 fp16 on V, against one 512-byte load."""
    hw = load_preset("tiny")
    m = parse_module(make_context(), module(LOAD_W, vector_ops=40), "t.mlir")
    kernel = next(op for op in m.walk() if isinstance(op, npu.KernelOp))
    vector = 41 * vector_cycles(hw, "scalar", 512) + vector_cycles(hw, "binary", 512)
    assert mte2_slack(phases(kernel)[0], hw) == vector - transfer_cost(hw, "gm_to_ub", 1, 512).data_cycles


def prefetched_barriers(text: str, runs: int = 1) -> tuple[list[str], str]:
    """(the kernel's barrier ops after the pass ran `runs` times, the module's text)."""
    m = parse_module(make_context(), text, "t.mlir")
    for _ in range(runs):
        PrefetchConstantsPass(hw="tiny").apply(make_context(), m)
    kernel = next(op for op in m.walk() if isinstance(op, npu.KernelOp))
    return [op.name for op in kernel.entry.ops if isinstance(op, npu.KernelBarrierOp)], str(m)


@pytest.mark.parametrize(
    "second_phase, barriers",
    [
        (f"{LOAD_T}\n{LOAD_W}", ["npu.sync_all_arrive", "npu.sync_all_wait"]),
        (f"{LOAD_T}\n    npu.copy %t[%o2], %w_ub[%c1] {{cols = 256}}\n{LOAD_W}", ["npu.sync_all"]),
    ],
)
def test_the_barrier_splits_around_what_moves_and_stays_whole_otherwise(second_phase, barriers):
    assert prefetched_barriers(module(second_phase))[0] == barriers


def test_a_split_barrier_is_left_as_it_is():
    once = prefetched_barriers(module(f"{LOAD_T}\n{LOAD_W}"))[1]
    assert prefetched_barriers(module(f"{LOAD_T}\n{LOAD_W}"), runs=2)[1] == once


def test_the_copies_of_one_buffer_all_move_in_order():
    """A buffer loaded by several copies (a mask's 16-column blocks, one copy each):
    the later copies move after the first, in order, not held back by it."""
    halves = (
        "    %c128 = arith.constant 128 : index\n"
        "    %o3 = arith.addi %o2, %c128 : index\n"
        "    npu.copy %w[%o2], %w_ub[%c1] {cols = 128}\n"
        "    npu.copy %w[%o3], %w_ub[%c128] {cols = 128}"
    )
    moved, before, after = prefetched(module(f"{LOAD_T}\n{halves}"))
    assert moved == ["w_ub", "w_ub"]
    np.testing.assert_array_equal(before, after)


def guarded_copies_moved(text: str) -> list[tuple[str, int]]:
    """(buffer, how many `scf.if` it is under) of each copy of %w that ends in phase 1,
    the outputs checked against 2x + 1.5 before and after the pass (the simulator's
    bounds and race checks included)."""
    x = np.random.default_rng(0).standard_normal(512).astype(np.float16)
    want = 2 * x.astype(np.float32) + 1.5
    np.testing.assert_allclose(simulate(parse_module(make_context(), text, "t.mlir"), [x], hw="tiny").outputs[0].astype(np.float32), want, rtol=2e-3, atol=2e-3)
    m = parse_module(make_context(), text, "t.mlir")
    PrefetchConstantsPass(hw="tiny").apply(make_context(), m)
    kernel = next(op for op in m.walk() if isinstance(op, npu.KernelOp))
    found = []
    for top in phases(kernel)[0]:
        for op in top.walk():
            if isinstance(op, npu.CopyOp) and op.src.name_hint == "w":
                depth, parent = 0, op.parent_op()
                while parent is not None and not isinstance(parent, npu.KernelOp):
                    depth += isinstance(parent, scf.IfOp)
                    parent = parent.parent_op()
                found.append((str(op.dst.name_hint), depth))
    np.testing.assert_allclose(simulate(m, [x], hw="tiny").outputs[0].astype(np.float32), want, rtol=2e-3, atol=2e-3)
    return found


# Block 0 loads %w[4 * o2] (out of bounds on block 1), block 1 %w[o2 + 512]: each
# copy must move under its own block's condition, as a phase's full items and its
# tail item, or a phase on fewer blocks than its kernel, are written.
CASES = """    %c1g = arith.constant 1 : index
    %c4g = arith.constant 4 : index
    %c512g = arith.constant 512 : index
    %first = arith.cmpi ult, %b2, %c1g : index
    %rest = arith.cmpi uge, %b2, %c1g : index
    scf.if %first {
      %o4 = arith.muli %o2, %c4g : index
      npu.copy %w[%o4], %w_ub[%c1] {cols = 256}
    }
    scf.if %rest {
      %o5 = arith.addi %o2, %c512g : index
      npu.copy %w[%o5], %w_ub[%c1] {cols = 256}
    }"""


def test_guarded_copies_move_under_their_guards():
    """LLaMA's gated feed-forward runs on 30 of 32 blocks and its tail item under a
    condition of its own: its weights' first chunk waited for the barrier (fill
    1649 of its 5187 cycles)."""
    assert guarded_copies_moved(module(f"{LOAD_T}\n{CASES}")) == [("w_ub", 1), ("w_ub", 1)]


def test_a_guard_read_at_run_time_keeps_its_copies():
    """A condition from a value the scalar unit reads (not block_idx arithmetic)
    cannot be computed before the barrier: the copy under it stays."""
    runtime = (
        "    %i = npu.read_scalar %w[%c1] : index\n"
        "    %c9 = arith.constant 9 : index\n"
        "    %g = arith.cmpi ult, %i, %c9 : index\n"
        f"    scf.if %g {{\n  {LOAD_W}\n    }}"
    )
    assert guarded_copies_moved(module(f"{LOAD_T}\n{runtime}")) == []


def test_a_buffer_prefetched_under_a_guard_stays_live_for_the_next_barrier():
    """Phase 2's first load of %w goes under phase 1's barrier, guarded (its whole
    phase is in an `scf.if`): its buffer's allocation leaves the branch for the
    barrier's halves. The next barrier's move must still see that buffer as the
    previous phase's (phase 2 reads it on V, no flag orders V before the next
    phase's MTE2 loads): phase 3's load of %w onto the same bytes moves elsewhere.
    t5_encoder's and conv blocks' merged kernels raced there (the race checker
    fails the simulation without the fix)."""
    x = np.random.default_rng(0).standard_normal(512).astype(np.float16)
    phase_1 = "\n".join(module("", w_offset=1024).split("\n")[2:17])  # x doubled into %t
    text = f"""builtin.module {{
  npu.kernel @k(%x: memref<512xf16, #npu.space<gm>>, %t: memref<512xf16, #npu.space<gm>>, %w: memref<1024xf16, #npu.space<gm>>, %y: memref<512xf16, #npu.space<gm>>) attributes {{block_dim = 2, npu.phases = ["a", "b", "c"]}} {{
{phase_1}
    npu.sync_all
    %c1 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    %b2 = npu.block_idx : index
    %o2 = arith.muli %b2, %c256 : index
    %g = arith.cmpi ult, %b2, %c2 : index
    scf.if %g {{
      %w_ub = npu.alloc {{offset = 1024}} : memref<256xf16, #npu.space<ub>>
      %v = npu.alloc {{offset = 2048}} : memref<256xf16, #npu.space<ub>>
      npu.copy %w[%o2], %w_ub[%c1] {{cols = 256}}
      npu.copy %t[%o2], %v[%c1] {{cols = 256}}
      npu.set_flag {{src = "MTE2", dst = "V", event = 0}}
      npu.wait_flag {{src = "MTE2", dst = "V", event = 0}}
      npu.vadd %v[%c1], %w_ub[%c1], %v[%c1] {{cols = 256}}
      npu.set_flag {{src = "V", dst = "MTE3", event = 0}}
      npu.wait_flag {{src = "V", dst = "MTE3", event = 0}}
      npu.copy %v[%c1], %t[%o2] {{cols = 256}}
    }}
    npu.sync_all
    %c3 = arith.constant 0 : index
    %b3 = npu.block_idx : index
    %o3 = arith.muli %b3, %c256 : index
    %z_ub = npu.alloc {{offset = 1024}} : memref<256xf16, #npu.space<ub>>
    %q = npu.alloc {{offset = 4096}} : memref<256xf16, #npu.space<ub>>
    npu.copy %w[%o3], %z_ub[%c3] {{cols = 256}}
    npu.copy %t[%o3], %q[%c3] {{cols = 256}}
    npu.set_flag {{src = "MTE2", dst = "V", event = 0}}
    npu.wait_flag {{src = "MTE2", dst = "V", event = 0}}
    npu.vadd %q[%c3], %z_ub[%c3], %q[%c3] {{cols = 256}}
    npu.set_flag {{src = "V", dst = "MTE3", event = 0}}
    npu.wait_flag {{src = "V", dst = "MTE3", event = 0}}
    npu.copy %q[%c3], %y[%o3] {{cols = 256}}
  }}
  func.func @main(%x: memref<512xf16, #npu.space<gm>> {{ge.name = "x"}}, %y: memref<512xf16, #npu.space<gm>> {{ge.name = "y", npu.output}}) {{
    %t = npu.gm_buffer {{offset = 0}} : memref<512xf16, #npu.space<gm>>
    %w = npu.gm_constant {{value = dense<1.5> : tensor<1024xf16>, logical = tensor<1024xf16>}} : memref<1024xf16, #npu.space<gm>>
    npu.launch @k(%x, %t, %w, %y) {{block_dim = 2}}
    func.return
  }}
}}"""
    want = 2 * x.astype(np.float32) + 3.0
    before = simulate(parse_module(make_context(), text, "t.mlir"), [x], hw="tiny").outputs[0]
    np.testing.assert_allclose(before.astype(np.float32), want, rtol=2e-3, atol=2e-3)
    m = parse_module(make_context(), text, "t.mlir")
    PrefetchConstantsPass(hw="tiny").apply(make_context(), m)
    kernel = next(op for op in m.walk() if isinstance(op, npu.KernelOp))
    barriers = [op.name for op in kernel.entry.ops if isinstance(op, npu.KernelBarrierOp)]
    # Both loads moved; phase 3's then on back to the first barrier (phase 1's tail
    # leaves it room), on bytes neither phase 1 nor 2 uses: the second barrier is whole again.
    assert barriers == ["npu.sync_all_arrive", "npu.sync_all_wait", "npu.sync_all"]
    np.testing.assert_array_equal(simulate(m, [x], hw="tiny").outputs[0], before)


def chain_module(phases_before: int = 3, rows: int = 12, cols: int = 1024, w_offset: int = 0, w: str = "1.5") -> str:
    """`phases_before` phases that each scale %t (x at first) by 2 in UB (each with
    a little vector work, so MTE2 idles through their tails), then one that loads
    `rows` x `cols` of the constant %w per block into %w_ub (at `w_offset`, on the
    bytes of the first phases' buffers) and stores y = 2 w + t on each block's
    first 256 elements, 2 w on the rest."""
    n = rows * cols
    body = []
    for p in range(phases_before):
        src = "%x" if p == 0 else "%t"
        body.append(f"""    %b{p} = npu.block_idx : index
    %c256_{p} = arith.constant 256 : index
    %c0_{p} = arith.constant 0 : index
    %o{p} = arith.muli %b{p}, %c256_{p} : index
    %u{p} = npu.alloc {{offset = {512 * (p % 2)}}} : memref<256xf16, #npu.space<ub>>
    npu.copy {src}[%o{p}], %u{p}[%c0_{p}] {{cols = 256}}
    npu.set_flag {{src = "MTE2", dst = "V", event = 0}}
    npu.wait_flag {{src = "MTE2", dst = "V", event = 0}}
    npu.vmuls %u{p}[%c0_{p}], %u{p}[%c0_{p}] {{cols = 256, scalar = 1.0}}
    npu.vmuls %u{p}[%c0_{p}], %u{p}[%c0_{p}] {{cols = 256, scalar = 2.0}}
    npu.set_flag {{src = "V", dst = "MTE3", event = 0}}
    npu.wait_flag {{src = "V", dst = "MTE3", event = 0}}
    npu.copy %u{p}[%c0_{p}], %t[%o{p}] {{cols = 256}}
    npu.sync_all""")
    names = ", ".join(f'"p{p}"' for p in range(phases_before + 1))
    return f"""builtin.module {{
  npu.kernel @chain(%x: memref<512xf16, #npu.space<gm>>, %t: memref<512xf16, #npu.space<gm>>, %w: memref<{2 * n}xf16, #npu.space<gm>>, %y: memref<{2 * n}xf16, #npu.space<gm>>) attributes {{block_dim = 2, npu.phases = [{names}]}} {{
""" + "\n".join(body) + f"""
    %bw = npu.block_idx : index
    %cn = arith.constant {n} : index
    %c256w = arith.constant 256 : index
    %c0w = arith.constant 0 : index
    %ow = arith.muli %bw, %cn : index
    %ot = arith.muli %bw, %c256w : index
    %w_ub = npu.alloc {{offset = {w_offset}}} : memref<{n}xf16, #npu.space<ub>>
    %v = npu.alloc {{offset = {n * 2 + 1024}}} : memref<256xf16, #npu.space<ub>>
    npu.copy %w[%ow], %w_ub[%c0w] {{rows = {rows}, cols = {cols}}}
    npu.copy %t[%ot], %v[%c0w] {{cols = 256}}
    npu.set_flag {{src = "MTE2", dst = "V", event = 0}}
    npu.wait_flag {{src = "MTE2", dst = "V", event = 0}}
    npu.vadd %w_ub[%c0w], %w_ub[%c0w], %w_ub[%c0w] {{cols = {n}}}
    npu.pipe_barrier {{pipe = "V"}}
    npu.vadd %w_ub[%c0w], %v[%c0w], %w_ub[%c0w] {{cols = 256}}
    npu.set_flag {{src = "V", dst = "MTE3", event = 0}}
    npu.wait_flag {{src = "V", dst = "MTE3", event = 0}}
    npu.copy %w_ub[%c0w], %y[%ow] {{cols = {n}}}
  }}
  func.func @main(%x: memref<512xf16, #npu.space<gm>> {{ge.name = "x"}}, %y: memref<{2 * n}xf16, #npu.space<gm>> {{ge.name = "y", npu.output}}) {{
    %t = npu.gm_buffer {{offset = 0}} : memref<512xf16, #npu.space<gm>>
    %w = npu.gm_constant {{value = dense<{w}> : tensor<{2 * n}xf16>, logical = tensor<{2 * n}xf16>}} : memref<{2 * n}xf16, #npu.space<gm>>
    npu.launch @chain(%x, %t, %w, %y) {{block_dim = 2}}
    func.return
  }}
}}"""


def chain_expected(x: np.ndarray, w: np.ndarray, phases_before: int) -> np.ndarray:
    y = 2 * w.astype(np.float32)
    t = x.astype(np.float32) * 2.0**phases_before
    n = len(w) // 2
    for block in range(2):
        y[block * n : block * n + 256] += t[block * 256 : (block + 1) * 256]
    return y


def pieces_per_group(m) -> list[int]:
    """How many loads of %w each phase group of the kernel holds (what stands
    between an arrive and its wait counts with the phase before)."""
    kernel = next(op for op in m.walk() if isinstance(op, npu.KernelOp))
    return [sum(1 for top in g for op in top.walk() if isinstance(op, npu.CopyOp) and op.src.name_hint == "w") for g in phases(kernel)]


def test_the_last_phase_weights_rows_land_more_than_one_phase_back():
    """Phase p3's 12 rows of 2 KB do not fit the MTE2 room of one barrier: they
    leave p3's barrier altogether and land in two pieces, at the barriers before
    p2 and p1 (during p0 and p1), their buffer moved off the bytes those phases
    use. The numbers are the same (with varied weights, so a row landing at the
    wrong place shows) and the race checker passes."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal(512).astype(np.float16)
    w = (rng.integers(-64, 64, 2 * 12 * 1024) / 8).astype(np.float16)
    text = chain_module(w="[" + ", ".join(str(float(v)) for v in w) + "]")
    before = simulate(parse_module(make_context(), text, "t.mlir"), [x], hw="tiny").outputs[0]
    m = parse_module(make_context(), text, "t.mlir")
    PrefetchConstantsPass(hw="tiny").apply(make_context(), m)
    assert pieces_per_group(m) == [1, 1, 0, 0]  # none is left at p3's barrier (in p2's group)
    after = simulate(m, [x], hw="tiny").outputs[0]
    np.testing.assert_array_equal(before, after)
    np.testing.assert_allclose(after.astype(np.float32), chain_expected(x, w, 3), rtol=2e-3, atol=2e-3)


def test_without_the_byte_check_the_race_checker_catches_the_move(monkeypatch):
    """Mutation: with the bytes of the phases in between not checked, a piece of
    the weights lands on the UB bytes phase p1 still computes on (nothing orders
    its vector work before the early load): the simulator's race check fails."""
    from gecomp.core.diagnostics import CompileError
    from gecomp.transforms.npu import prefetch_constants

    monkeypatch.setattr(prefetch_constants, "_clashes", lambda *args: False)
    m = parse_module(make_context(), chain_module(), "t.mlir")
    PrefetchConstantsPass(hw="tiny").apply(make_context(), m)
    x = np.random.default_rng(0).standard_normal(512).astype(np.float16)
    with pytest.raises(CompileError, match="race"):
        simulate(m, [x], hw="tiny")



def test_rows_stop_where_no_bytes_are_free_for_them():
    """Phase p0 holds 16 KB of the tiny preset's 32 KB UB, so the 24 KB of p3's
    weights find no bytes at the first barrier: the walk stops there and the rows
    already planned for the second barrier keep the bytes found for them (it lost
    them and crashed: resnet18's compile); the numbers are the same."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal(512).astype(np.float16)
    w = (rng.integers(-64, 64, 2 * 12 * 1024) / 8).astype(np.float16)
    text = chain_module(w="[" + ", ".join(str(float(v)) for v in w) + "]")
    first = "%u0 = npu.alloc {offset = 0} : memref<256xf16, #npu.space<ub>>"
    busy = "\n    %big = npu.alloc {offset = 1024} : memref<8192xf16, #npu.space<ub>>\n    npu.vmuls %big[%c0_0], %big[%c0_0] {cols = 8192, scalar = 1.0}"
    text = text.replace(first, first + busy)
    before = simulate(parse_module(make_context(), text, "t.mlir"), [x], hw="tiny").outputs[0]
    m = parse_module(make_context(), text, "t.mlir")
    PrefetchConstantsPass(hw="tiny").apply(make_context(), m)
    assert pieces_per_group(m) == [0, 1, 1, 0]  # none at the first barrier
    np.testing.assert_array_equal(simulate(m, [x], hw="tiny").outputs[0], before)


# Two launches side by side (npu-merge-launches): block 0 runs the first, block 1
# the second, each with its own local memory plan, so both use %w_ub's bytes; the
# first's vmuls touches them after its copy.
SIDE_BY_SIDE = """    %c1g = arith.constant 1 : index
    %c2g = arith.constant 2 : index
    %first = arith.cmpi ult, %b2, %c1g : index
    %from = arith.cmpi uge, %b2, %c1g : index
    %below = arith.cmpi ult, %b2, %c2g : index
    %second = arith.andi %from, %below : i1
    scf.if %first {
      npu.copy %w[%o2], %w_ub[%c1] {cols = 256}
      npu.set_flag {src = "MTE2", dst = "V", event = 0}
      npu.wait_flag {src = "MTE2", dst = "V", event = 0}
      npu.vmuls %w_ub[%c1], %w_ub[%c1] {cols = 256, scalar = 1.0}
      npu.pipe_barrier {pipe = "ALL"}
    }
    scf.if %second {
      npu.copy %w[%o2], %w_ub[%c1] {cols = 256}
    }"""


def test_side_by_side_launches_prefetch_both_halves():
    """MMoE's two towers share a phase on blocks [0, 16) and [16, 32): the second's
    weights waited for the barrier (its blocks 455 cycles behind the first's)
    because the first's instructions touch the same local bytes, which no block
    running the second ever does (the guards' block ranges are disjoint). Both
    copies move, each under its guard; outputs equal, race-checked. A guard whose
    range meets the other's keeps the copy (`block_range`)."""
    assert guarded_copies_moved(module(f"{LOAD_T}\n{SIDE_BY_SIDE}")) == [("w_ub", 1), ("w_ub", 1)]
    overlapping = SIDE_BY_SIDE.replace("%from = arith.cmpi uge, %b2, %c1g", "%from = arith.cmpi uge, %b2, %c0")
    assert guarded_copies_moved(module(f"{LOAD_T}\n{overlapping}")) == [("w_ub", 1)]
