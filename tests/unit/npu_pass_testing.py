"""Helpers for the tests of the npu passes: compile a module with a pass pipeline,
simulate it, and compare two compilations' outputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gecomp.dialects.context import make_context
from gecomp.core.diagnostics import CompileError
from gecomp.core.parsing import parse_module, verify_module
from gecomp.core.passes import parse_pass_pipeline, run_pipeline
from gecomp.dialects import npu
from gecomp.simulator.hardware import load_preset
from gecomp.simulator.npu import simulate
from gecomp.core.signature import input_specs, main_function, random_inputs
from gecomp.transforms.npu.insert_sync import synchronize
from npu_testing import kernel_module, local

LIT_NPU = Path(__file__).resolve().parents[1] / "lit" / "npu"

SYNC_OP_NAMES = ("npu.set_flag", "npu.wait_flag", "npu.pipe_barrier")


def compiled(text: str, pipeline: str = ""):
    """The module parsed from `text`, after `pipeline`, verified."""
    ctx = make_context()
    module = parse_module(ctx, text, "test.mlir")
    verify_module(module)
    run_pipeline(parse_pass_pipeline(pipeline), ctx, module)
    verify_module(module)
    return module


def kernel_of(module) -> npu.KernelOp:
    return next(op for op in module.walk() if isinstance(op, npu.KernelOp))


def sync_ops(module) -> int:
    return sum(1 for op in module.walk() if op.name in SYNC_OP_NAMES)


def inputs_for(module, seed: int = 0) -> list[np.ndarray]:
    return random_inputs(input_specs(main_function(module)), seed)


def outputs(module, hw: str = "tiny", inputs=None):
    """Simulated outputs (with the race check) and the report."""
    result = simulate(module, inputs if inputs is not None else inputs_for(module), hw=hw)
    return result.outputs, result.report


def assert_same_outputs(expected: list[np.ndarray], actual: list[np.ndarray]) -> None:
    assert len(expected) == len(actual)
    for e, a in zip(expected, actual):
        np.testing.assert_array_equal(a, e, strict=True)


def assert_every_flag_is_needed(text: str, pipeline: str, hw: str) -> int:
    """Leaving out any one of the flags `npu-insert-sync` plans for the kernel of
    `text` (after `pipeline`) makes the simulator report a race; returns how many
    flags it plans."""
    event_ids = load_preset(hw).event_ids
    module = compiled(text, pipeline)
    inputs = inputs_for(module)
    planned = len(synchronize(kernel_of(module), event_ids).planned)
    assert planned > 0
    for left_out in range(planned):
        module = compiled(text, pipeline)
        synchronize(kernel_of(module), event_ids, leave_out={left_out})
        with pytest.raises(CompileError, match="race:"):
            outputs(module, hw, inputs)
    return planned


def lit_kernel(name: str) -> str:
    return (LIT_NPU / f"{name}.mlir").read_text()


# A sync-free 32x64 @ 64x32 matmul over four k steps, the first mmad not accumulating.
K_LOOP_MATMUL = kernel_module(
    """
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %c512 = arith.constant 512 : index
  %a1 = npu.alloc : memref<32x16xf16, #npu.space<l1>>
  %b1 = npu.alloc : memref<16x32xf16, #npu.space<l1>>
  %a0 = npu.alloc : memref<32x16xf16, #npu.space<l0a>>
  %b0 = npu.alloc : memref<16x32xf16, #npu.space<l0b>>
  %acc = npu.alloc : memref<32x32xf32, #npu.space<l0c>>
  scf.for %k = %c0 to %c4 step %c1 {
    %ao = arith.muli %k, %c16 : index
    %bo = arith.muli %k, %c512 : index
    npu.copy %a[%ao], %a1[%c0] {rows = 32, cols = 16, strides = [64, 16]}
    npu.copy %b[%bo], %b1[%c0] {rows = 16, cols = 32}
    npu.load_l0 %a1[%c0], %a0[%c0] {rows = 32, cols = 16}
    npu.load_l0 %b1[%c0], %b0[%c0] {rows = 16, cols = 32}
    %first = arith.cmpi eq, %k, %c0 : index
    scf.if %first {
      npu.mmad %a0[%c0], %b0[%c0], %acc[%c0] {m = 32, n = 32, k = 16}
    } else {
      npu.mmad %a0[%c0], %b0[%c0], %acc[%c0] {m = 32, n = 32, k = 16, accumulate = true}
    }
  }
  npu.fixpipe %acc[%c0], %c[%c0] {rows = 32, cols = 32}""",
    {"a": "memref<32x64xf16, #npu.space<gm>>", "b": "memref<64x32xf16, #npu.space<gm>>"},
    {"c": "memref<32x32xf16, #npu.space<gm>>"},
)


def pipelined_matmul(items: int, pairs: int, steps: int, looped: bool) -> str:
    """C[i] (32 x 32) = A[i] (32 x K) @ B (K x 32) for `items` i, K in 2 x `pairs`
    chunks of `steps` L0 steps of 16: L1 and L0 tiles in two copies used in turn.
    `looped`: an scf.for over the items, one over pairs of chunks and one over
    pairs of steps per chunk (marked pipelined); else all written out."""
    kc, k = 16 * steps, 32 * steps * pairs
    consts, lines = {0, 1}, []

    def c(v: int) -> str:
        consts.add(v)
        return f"%c{v}"

    def emit(line: str, depth: int) -> None:
        lines.append("  " * (depth + 1) + line)

    def mmad(copy: int, first, depth: int) -> None:
        op = f"npu.mmad %a0_{copy}[%c0], %b0_{copy}[%c0], %acc[%c0] {{m = 32, n = 32, k = 16"
        if first is True or first is False:
            emit(op + (", accumulate = true}" if first is False else "}"), depth)
            return
        emit(f"scf.if {first} {{", depth)
        emit(op + "}", depth + 1)
        emit("} else {", depth)
        emit(op + ", accumulate = true}", depth + 1)
        emit("}", depth)

    def step(l1: int, col: str, copy: int, first, depth: int) -> None:
        emit(f"npu.load_l0 %a1_{l1}[{col}], %a0_{copy}[%c0] {{rows = 32, cols = 16, strides = [{kc}, 16]}}", depth)
        emit(f"%bcol{len(lines)} = arith.muli {col}, %c32 : index" if col.startswith("%s") else "", depth)
        bcol = f"%bcol{len(lines) - 1}" if col.startswith("%s") else c(int(col[2:]) * 32)
        emit(f"npu.load_l0 %b1_{l1}[{bcol}], %b0_{copy}[%c0] {{rows = 16, cols = 32}}", depth)
        mmad(copy, first, depth)

    def chunk(a_off: str, b_off: str, l1: int, first, depth: int) -> None:
        emit(f"npu.copy %a[{a_off}], %a1_{l1}[%c0] {{rows = 32, cols = {kc}, strides = [{k}, {kc}]}}", depth)
        emit(f"npu.copy %b[{b_off}], %b1_{l1}[%c0] {{rows = {kc}, cols = 32}}", depth)
        if not looped:
            for s in range(steps):
                step(l1, c(16 * s), s % 2, first if s == 0 else False, depth)
            return
        name = f"%s{len(lines)}"
        emit(f"scf.for {name} = %c0 to {c(steps // 2)} step %c1 {{", depth)
        emit(f"{name}_ping = arith.muli {name}, {c(32)} : index", depth + 1)
        emit(f"{name}_pong = arith.addi {name}_ping, {c(16)} : index", depth + 1)
        if first is True or first is False:
            step_first = f"{name}_first" if first is True else False
            if first is True:
                emit(f"{step_first} = arith.cmpi eq, {name}, %c0 : index", depth + 1)
        else:
            emit(f"{name}_sum = arith.addi {name}, {first[1]} : index", depth + 1)
            emit(f"{name}_first = arith.cmpi eq, {name}_sum, %c0 : index", depth + 1)
            step_first = f"{name}_first"
        step(l1, f"{name}_ping", 0, step_first, depth + 1)
        step(l1, f"{name}_pong", 1, False, depth + 1)
        emit("} {npu.pipelined}", depth)

    if looped:
        emit(f"scf.for %it = %c0 to {c(items)} step %c1 {{", 0)
        emit(f"%ao = arith.muli %it, {c(32 * k)} : index", 1)
        emit(f"%co = arith.muli %it, {c(1024)} : index", 1)
        emit(f"scf.for %kp = %c0 to {c(pairs)} step %c1 {{", 1)
        emit(f"%k0 = arith.muli %kp, {c(2 * kc)} : index", 2)
        emit(f"%ap = arith.addi %ao, %k0 : index", 2)
        emit(f"%bp = arith.muli %kp, {c(2 * kc * 32)} : index", 2)
        chunk("%ap", "%bp", 0, ("sum", "%kp"), 2)
        emit(f"%aq = arith.addi %ap, {c(kc)} : index", 2)
        emit(f"%bq = arith.addi %bp, {c(kc * 32)} : index", 2)
        chunk("%aq", "%bq", 1, False, 2)
        emit("} {npu.pipelined}", 1)
        emit("npu.fixpipe %acc[%c0], %c[%co] {rows = 32, cols = 32}", 1)
        emit("}", 0)
    else:
        for it in range(items):
            for ch in range(2 * pairs):
                chunk(c(it * 32 * k + ch * kc), c(ch * kc * 32), ch % 2, ch == 0, 0)
            emit(f"npu.fixpipe %acc[%c0], %c[{c(it * 1024)}] {{rows = 32, cols = 32}}", 0)
    allocs = [f"  %a1_{i} = npu.alloc : {local(32 * kc, 'l1')}" for i in (0, 1)]
    allocs += [f"  %b1_{i} = npu.alloc : {local(32 * kc, 'l1')}" for i in (0, 1)]
    allocs += [f"  %a0_{i} = npu.alloc : {local(512, 'l0a')}" for i in (0, 1)]
    allocs += [f"  %b0_{i} = npu.alloc : {local(512, 'l0b')}" for i in (0, 1)]
    allocs.append(f"  %acc = npu.alloc : {local(1024, 'l0c', 'f32')}")
    const_lines = [f"  %c{v} = arith.constant {v} : index" for v in sorted(consts) if v != 0]
    body = "\n".join(const_lines + allocs + [x for x in lines if x.strip()])
    ins = {"a": f"memref<{items * 32}x{k}xf16, #npu.space<gm>>", "b": f"memref<{k}x32xf16, #npu.space<gm>>"}
    return kernel_module(body, ins, {"c": f"memref<{items * 32}x32xf16, #npu.space<gm>>"})
