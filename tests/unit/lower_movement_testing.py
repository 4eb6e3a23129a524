"""Helpers for the data movement lowering tests: one-op (or few-op) graphs built
with GraphBuilder, compiled by `ge-lower-to-npu`, simulated, and compared with
the reference interpreter (exactly for moves: a copy changes no bit)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from gecomp.dialects.context import make_context
from gecomp.core.passes import parse_pass_pipeline, run_pipeline
from gecomp.frontend.builder import GraphBuilder, Tensor
from gecomp.simulator.compare import worst_mismatch
from gecomp.simulator.npu import simulate
from gecomp.simulator.reference import run_reference
from gecomp.core.signature import input_specs, main_function, random_inputs

import gecomp.dialects.ge as ge


def graph(shapes: Sequence[Sequence[int]], body: Callable[..., Tensor | Sequence[Tensor]], dtype: str = "f16",
          input_dtypes: Sequence[str | None] | None = None) -> ModuleOp:
    """A module whose @main takes inputs of `shapes` and returns `body(g, *inputs)`."""
    g = GraphBuilder("main", dtype=dtype)
    dtypes_ = input_dtypes or [None] * len(shapes)
    xs = [g.input(list(s), dtype=d, name=f"x{i}") for i, (s, d) in enumerate(zip(shapes, dtypes_))]
    outs = body(g, *xs)
    for i, out in enumerate(outs if isinstance(outs, (list, tuple)) else [outs]):
        g.output(out, name=f"y{i}")
    return g.build()


def transdata(g: GraphBuilder, x: Tensor, fmt: str) -> Tensor:
    """x converted to `fmt` (from whatever format it is in)."""
    src = x.type.encoding.format.data if hasattr(x.type.encoding, "format") else "ND"
    return g.op(ge.TransDataOp, x, src_format=src, dst_format=fmt)


def compile_and_compare(module: ModuleOp, hw: str = "tiny", seed: int = 0, exact: bool = True,
                        pipeline: str | None = None, inputs: Sequence[np.ndarray] | None = None):
    """Compile with `pipeline` (default ge-lower-to-npu{hw}), simulate on `hw`, and
    check against the reference; returns the simulation report."""
    reference = module.clone()
    compiled(module, hw, pipeline)
    if inputs is None:
        inputs = random_inputs(input_specs(main_function(module)), seed)
    simulation = simulate(module, list(inputs), hw=hw)
    expected = run_reference(reference, list(inputs))
    for i, (want, got) in enumerate(zip(expected, simulation.outputs, strict=True)):
        if exact:
            assert want.shape == got.shape and want.dtype == got.dtype, (want.shape, got.shape)
            assert np.array_equal(want, got, equal_nan=want.dtype.kind == "f"), f"output {i}: {worst_mismatch('y', want, got)}"
        else:
            mismatch = worst_mismatch(f"y{i}", want, got)
            assert mismatch is None or mismatch.ratio <= 1.0, str(mismatch)
    return simulation.report


def compiled(module: ModuleOp, hw: str = "tiny", pipeline: str | None = None) -> ModuleOp:
    run_pipeline(parse_pass_pipeline(pipeline or f"ge-lower-to-npu{{hw={hw}}}"), make_context(), module)
    return module


def gm_images(module: ModuleOp, inputs: Sequence[np.ndarray], hw: str = "tiny") -> dict[str, np.ndarray]:
    """Run a compiled module (planned without GM reuse, so every intermediate keeps
    its bytes) and return the final memory image of each intermediate GM buffer,
    by name: how formatted intermediates look, padding included (unwritten bytes
    stay the simulator's NaN / 0xFF poison)."""
    from gecomp.simulator.hardware import load_preset
    from gecomp.simulator.npu.l2 import GlobalMemory
    from gecomp.simulator.npu.plan import HostPlan, run_plan

    preset = load_preset(hw)
    plan = HostPlan(module, main_function(module), preset, GlobalMemory(preset))
    plan.allocate(list(inputs))
    with np.errstate(all="ignore"):
        run_plan(plan, True, False, lambda *args: None)
    return {b.label: b.array[: b.numel].reshape(b.shape).copy() for b in plan.buffers if b.in_arena}


def kernel_ops(module: ModuleOp, hw: str, index: int) -> list:
    """The npu instructions of the module's kernel number `index` after ge-to-npu
    (loops and branches included, in program order)."""
    from gecomp.dialects import npu

    compiled(module, hw, f"ge-to-npu{{hw={hw}}}")
    kernels = [op for op in module.body.block.ops if isinstance(op, npu.KernelOp)]
    return [op for op in kernels[index].walk() if isinstance(op, npu.InstructionOp)]


__all__ = ["compile_and_compare", "compiled", "gm_images", "graph", "kernel_ops", "transdata"]
