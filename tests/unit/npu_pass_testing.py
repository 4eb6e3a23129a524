"""Helpers for the tests of the npu passes: compile a module with a pass pipeline,
simulate it, and compare two compilations' outputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from gecomp.core.context import make_context
from gecomp.core.parsing import parse_module, verify_module
from gecomp.core.passes import parse_pass_pipeline, run_pipeline
from gecomp.dialects import npu
from gecomp.simulator.npu import simulate
from gecomp.simulator.signature import input_specs, main_function, random_inputs
from npu_testing import kernel_module

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
