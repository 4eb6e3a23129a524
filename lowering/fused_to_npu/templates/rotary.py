"""The kernel of `fused.rotary_matmul`: every product of every output on each
staged lhs tile (`GemmShape.products`: an L0C accumulator each), each output's
epilogue in fp32 from its products, `(plain + bias) * cos + (rotated + rotated
bias) * sin` for a rotated output, `plain + bias` for another, rounded once into
the output (`dialects/fused/rotary.py` says why the rotation is a second product)."""

from __future__ import annotations

from types import SimpleNamespace

from ....dialects import fused
from ..context import KernelContext
from ..vector_emitter import Tile, VectorEmitter, add_terms, emit_elementwise
from .cube import epilogue_input, matmul_problem, output_views
from .cube_epilogue import CubeEpilogue, EpilogueTiles
from .cube_kernel import emit_cube_kernel
from .registry import kernel_for


def _scale(v: VectorEmitter, product: Tile, factor) -> None:
    """product *= factor (a tile widened to fp32, or a splat immediate)."""
    wide = v.widened(factor) if isinstance(factor, Tile) else factor
    emit_elementwise(v, "ge.mul", SimpleNamespace(), [product, wide], product)
    if wide is not factor:
        v.release(wide)


def rotary_body(rotated: tuple[int, ...], biased: bool):
    """The epilogue of the outputs `rotated` describes: the inputs are cos, sin,
    then one bias per product when `biased`."""

    def body(t: EpilogueTiles) -> None:
        cos, sin, *biases = t.inputs
        at = 0
        for out, turn in zip(t.outputs, rotated, strict=True):
            count = 2 if turn else 1
            products = t.products[at : at + count]
            for i, product in enumerate(products):
                add_terms(t.v, product, biases[at + i : at + i + 1] if biased else [])
            if turn:
                _scale(t.v, products[0], cos)
                _scale(t.v, products[1], sin)
                emit_elementwise(t.v, "ge.add", SimpleNamespace(), products, products[0])
            t.v.cast(products[0], out)
            at += count

    return body


@kernel_for(fused.RotaryMatmulOp)
def lower_rotary_matmul(op: fused.RotaryMatmulOp, k: KernelContext) -> None:
    a = op.attr_values()
    lhs, cos, sin, *rest = k.inputs
    count = sum(1 + bool(r) for r in a.rotated)
    weights, biases = rest[:count], rest[count:]
    shape = k.outputs[0].shape
    inputs = [epilogue_input(t, shape) for t in (cos, sin, *biases)]
    epilogue = CubeEpilogue(output_views(k), inputs, rotary_body(tuple(a.rotated), a.biased))
    emit_cube_kernel(k, matmul_problem(k, lhs, weights, a.transpose_a, a.transpose_b, epilogue))
