"""The kernel of `fused.rotary_matmul`: both products of a rotated projection on
each staged lhs tile (`GemmShape.products` = 2: an L0C accumulator each), combined
in the epilogue as `plain * cos + rotated * sin` in fp32 and rounded once into
the output (`dialects/fused/rotary.py` says why the rotation is a second product)."""

from __future__ import annotations

from types import SimpleNamespace

from ....dialects import fused
from ..context import KernelContext, named
from ..vector_emitter import Tile, add_terms, emit_elementwise
from .cube import epilogue_input, matmul_problem, output_views
from .cube_epilogue import CubeEpilogue, EpilogueTiles
from .cube_kernel import emit_cube_kernel
from .registry import kernel_for


def rotary_body(t: EpilogueTiles) -> None:
    """out = (products[0] + bias) * cos + (products[1] + rotated_bias) * sin in
    fp32 (the epilogue's inputs: cos, sin, then the biases if any; tiles widened
    to fp32, or splat immediates)."""
    cos, sin, *biases = t.inputs
    for index, (product, factor) in enumerate(zip(t.products, (cos, sin), strict=True)):
        add_terms(t.v, product, biases[index : index + 1])
        wide = t.v.widened(factor) if isinstance(factor, Tile) else factor
        emit_elementwise(t.v, "ge.mul", SimpleNamespace(), [product, wide], product)
        if wide is not factor:
            t.v.release(wide)
    plain, rotated = t.products
    emit_elementwise(t.v, "ge.add", SimpleNamespace(), [plain, rotated], plain)
    t.v.cast(plain, t.outputs[0])


@kernel_for(fused.RotaryMatmulOp)
def lower_rotary_matmul(op: fused.RotaryMatmulOp, k: KernelContext) -> None:
    a = op.attr_values()
    x = named(op, k.inputs)
    shape = k.outputs[0].shape
    inputs = [epilogue_input(t, shape) for t in (x.cos, x.sin, x.bias, x.rotated_bias) if t is not None]
    epilogue = CubeEpilogue(output_views(k), inputs, rotary_body)
    problem = matmul_problem(k, x.lhs, [x.rhs, x.rotated_rhs], a.transpose_a, a.transpose_b, epilogue)
    emit_cube_kernel(k, problem)
