"""Kernels of the matrix-product ops: ge.matmul, ge.batch_matmul and the fused
matmuls (bias / residual / activation, scaled and masked batch products, the
gated feed-forward, matmul + residual + layer / RMS norm).

Each is one `cube_kernel` problem: the A and B views of its operands (any
format, transposed or not, batch dims broadcast), and an epilogue written with
the ge ops' vector definitions (`emit_elementwise`), in fp32 from L0C and
rounded once into the output, as the fused ops' reference semantics are.
"""

from __future__ import annotations

import math
from dataclasses import replace
from types import SimpleNamespace

from xdsl.dialects.builtin import f32

from ....dialects import fused, ge
from ....dialects.npu.cube import MMAD_TYPES
from ....dialects.fused.base import ACTIVATIONS, INPUT
from ...tiling import GemmShape
from ..context import GmTensor, KernelContext, named
from .registry import kernel_for
from ..vector_emitter import Tile, VectorEmitter, add_rounded_terms, add_terms, emit_elementwise
from .cube_epilogue import CubeEpilogue, EpilogueInput, EpilogueTiles
from .cube_kernel import CubeProblem, emit_cube_kernel
from .cube_operands import broadcast_view, matrix_view
from .normalization import layer_norm_rows

RATES = {t: rate for t, (rate, accumulator) in MMAD_TYPES.items() if accumulator == f32}
"""Element types the cube multiplies here, and their rate keys (fp32 accumulation)."""


def require_cube_type(k: KernelContext, *tensors: GmTensor) -> None:
    """The cube's one legality check of element types (matmuls, convolutions,
    flash attention): operands of one type it multiplies, else a refusal naming
    the type (`NoUnitForTypeError`: f64 has no unit; mixed types are a gap)."""
    element_type = tensors[0].element_type
    if element_type not in RATES:
        raise k.no_unit_for(element_type, f"the cube multiplies {', '.join(map(str, RATES))}")
    mixed = sorted({str(t.element_type) for t in tensors} - {str(element_type)})
    if mixed:
        raise k.unsupported(f"operands of {element_type} and {', '.join(mixed)} in one product")


def epilogue_input(t: GmTensor | None, out_shape) -> EpilogueInput | None:
    """A GM operand of the epilogue (a splat constant becomes an immediate)."""
    if t is None:
        return None
    splat = t.splat()
    if splat is not None:
        return EpilogueInput(None, splat)
    return EpilogueInput(broadcast_view(t, out_shape))


def gemm_problem(
    lhs: GmTensor,
    rhs: list[GmTensor],
    out_shape,
    transpose_a: bool,
    transpose_b: bool,
    epilogue: CubeEpilogue,
    whole_rows: bool = False,
    splits: int = 1,
) -> CubeProblem:
    """`epilogue(lhs @ rhs_i ...)` over the output's batch dims (ValueError for what
    the cube kernel does not take). With `splits`, the output's one batch dim
    holds the products of the K slices (`fused.matmul_partials`)."""
    batch = out_shape[:-2]
    element_type = lhs.element_type
    if element_type not in RATES:
        raise ValueError(f"the cube multiplies {', '.join(map(str, RATES))} here, not {element_type}")
    if splits > 1:
        a = matrix_view(lhs, (), transpose_a).k_slices(splits, along_cols=True)
        bs = [matrix_view(r, (), transpose_b).k_slices(splits, along_cols=False) for r in rhs]
    else:
        a = matrix_view(lhs, batch, transpose_a)
        bs = [matrix_view(r, batch, transpose_b) for r in rhs]
    shape = GemmShape(
        math.prod(batch), out_shape[-2], out_shape[-1], a.cols, len(bs), whole_rows, lhs.itemsize, RATES[element_type]
    )
    return CubeProblem(shape, a, bs, epilogue, element_type)


def matmul_problem(
    k: KernelContext, lhs, rhs, transpose_a, transpose_b, epilogue, whole_rows=False, splits=1
) -> CubeProblem:
    require_cube_type(k, lhs)
    try:
        return gemm_problem(lhs, rhs, k.outputs[0].shape, transpose_a, transpose_b, epilogue, whole_rows, splits)
    except ValueError as e:
        raise k.unsupported(str(e)) from None


def views_of(outputs: list[GmTensor]) -> list:
    return [broadcast_view(t, t.shape) for t in outputs]


def output_views(k: KernelContext) -> list:
    return views_of(k.outputs)


def _inputs(*items: EpilogueInput | None) -> list[EpilogueInput]:
    return [i for i in items if i is not None]


# ---- plain products -------------------------------------------------------------------------


@kernel_for(ge.MatmulOp, ge.BatchMatmulOp)
def lower_matmul(op: ge.MatmulOp | ge.BatchMatmulOp, k: KernelContext) -> None:
    a = op.attr_values()
    lhs, rhs = k.inputs
    problem = matmul_problem(k, lhs, [rhs], a.transpose_a, a.transpose_b, CubeEpilogue(output_views(k)))
    emit_cube_kernel(k, problem)


@kernel_for(fused.MatmulPartialsOp)
def lower_matmul_partials(op: fused.MatmulPartialsOp, k: KernelContext) -> None:
    """The K slices' products as batches of one cube kernel, each stored in fp32
    straight from L0C."""
    a = op.attr_values()
    lhs, rhs = k.inputs
    epilogue = CubeEpilogue(output_views(k))
    emit_cube_kernel(k, matmul_problem(k, lhs, [rhs], a.transpose_a, a.transpose_b, epilogue, splits=a.splits))


# ---- epilogue pieces ------------------------------------------------------------------------


def activate(v: VectorEmitter, act: str, x: Tile, out: Tile | None = None) -> None:
    """out (default x) = act(x), step by step as the fused activation name's ge ops
    define it (in place; a chain that reads its input again runs in one
    temporary). An `out` of x's type takes the last step's result, so the
    epilogue needs no copy into the output tile."""
    steps = ACTIVATIONS[act]
    rereads = any(second == INPUT for _, _, second in steps)
    t = v.temp(x.element_type) if rereads else x
    last = out if out is not None else x
    for i, (op, attrs, second) in enumerate(steps):
        source = x if i == 0 else t
        dst = last if i == len(steps) - 1 else t
        inputs = [source] if second is None else [source, x if second == INPUT else second]
        emit_elementwise(v, op.name, SimpleNamespace(**attrs), inputs, dst)
    if rereads:
        v.release(t)


def bias_act_epilogue(outputs: list, inputs: list[EpilogueInput], act: str) -> CubeEpilogue:
    """act(product + each input) (the fixpipe's cast alone when there is nothing to
    add or apply, unless the outputs are NZ views whose UB tiles can be kept in
    their column blocks, `CubeEpilogue.ub_block`: the fixpipe moves whole L0C
    fractals into a row-major tile, and a vector copy per block then saves the
    store a 32-byte run per row and block, as a split-K convolution's fp32
    partials had). Without an activation the sum is rounded as the unfused ops
    round it (`add_rounded_terms`: what a norm of it needs, no dearer than fp32);
    an activation's input stays fp32, rounded once after it."""

    def body(t: EpilogueTiles) -> None:
        acc = t.product()
        if act == "none":
            add_rounded_terms(t.v, acc, t.inputs, t.outputs[0].element_type, t.outputs[0], widen=False)
            return
        add_terms(t.v, acc, t.inputs)
        out = t.outputs[0]
        direct = out.element_type == acc.element_type and bool(ACTIVATIONS[act])
        activate(t.v, act, acc, out if direct else None)
        if not direct:
            t.v.cast(acc, out)

    epilogue = CubeEpilogue(outputs, inputs, body)
    if inputs or act != "none" or epilogue.ub_block:
        return epilogue  # a cast alone too, per block, where the outputs can be kept in blocks (`ub_block`)
    return CubeEpilogue(outputs, inputs, None)


def add_norm_epilogue(outputs: list, x: SimpleNamespace, layer: bool, epsilon: float) -> CubeEpilogue:
    """s = product + bias + residual (the second output, if written); y = norm(s)
    over each row (the first output). The sum is rounded to the output type as the
    unfused ops round it (`add_rounded_terms`), then normalised in fp32."""
    out_shape = outputs[0].tensor.shape
    params = [x.gamma, x.beta] if layer else [x.gamma]
    inputs = _inputs(*(epilogue_input(t, out_shape) for t in (x.bias, x.residual, *params)))
    terms = 2 if x.bias is not None else 1

    def body(t: EpilogueTiles) -> None:
        s = t.product()
        add_rounded_terms(t.v, s, t.inputs[:terms], t.outputs[0].element_type, next(iter(t.outputs[1:]), None))
        gamma, *beta = t.inputs[terms:]
        layer_norm_rows(t.v, s, t.outputs[0], gamma, beta[0] if beta else None, epsilon, rms=not layer, consume=True)

    return CubeEpilogue(outputs, inputs, body)


# ---- fused products -----------------------------------------------------------------------------


@kernel_for(fused.MatmulBiasActOp)
def lower_matmul_bias_act(op: fused.MatmulBiasActOp, k: KernelContext) -> None:
    a = op.attr_values()
    x = named(op, k.inputs)
    shape = k.outputs[0].shape
    inputs = _inputs(epilogue_input(x.bias, shape), epilogue_input(x.residual, shape))
    epilogue = bias_act_epilogue(output_views(k), inputs, a.act)
    emit_cube_kernel(k, matmul_problem(k, x.lhs, [x.rhs], a.transpose_a, a.transpose_b, epilogue))


@kernel_for(fused.MultiMatmulBiasActOp)
def lower_multi_matmul_bias_act(op: fused.MultiMatmulBiasActOp, k: KernelContext) -> None:
    """One product per weight on the same A tile (`GemmShape.products`), each with
    its own L0C accumulators, bias and output; or, each product's output depending
    on it alone, the products in turn (`GemmShape.turns`) if the tiler prefers."""
    a = op.attr_values()
    lhs, *rest = k.inputs
    count = len(op.results)
    weights, biases = rest[:count], rest[count:]
    inputs = [epilogue_input(b, k.outputs[0].shape) for b in biases]

    def body(t: EpilogueTiles) -> None:
        for index, (acc, out) in enumerate(zip(t.products, t.outputs)):
            add_terms(t.v, acc, t.inputs[index : index + 1])
            activate(t.v, a.act, acc)
            t.v.cast(acc, out)

    outputs = output_views(k)
    epilogue = CubeEpilogue(outputs, inputs, body)
    turns = [bias_act_epilogue([out], inputs[n : n + 1], a.act) for n, out in enumerate(outputs)]
    problem = matmul_problem(k, lhs, weights, a.transpose_a, a.transpose_b, epilogue)
    emit_cube_kernel(k, replace(problem, turn_epilogues=turns))


@kernel_for(fused.FusedBatchMatmulOp)
def lower_fused_batch_matmul(op: fused.FusedBatchMatmulOp, k: KernelContext) -> None:
    a = op.attr_values()
    x = named(op, k.inputs)
    mask = epilogue_input(x.mask, k.outputs[0].shape)
    boolean = x.mask is not None and x.mask.element_type != x.lhs.element_type

    def body(t: EpilogueTiles) -> None:
        acc, v = t.product(), t.v
        if a.scale != 1.0:
            emit_elementwise(v, "ge.mul", SimpleNamespace(), [acc, float(a.scale)], acc)
        if mask is not None and boolean:
            emit_elementwise(v, "ge.where", SimpleNamespace(), [t.inputs[0], acc, float(a.mask_value)], acc)
        elif mask is not None:
            add_terms(v, acc, t.inputs)
        v.cast(acc, t.outputs[0])

    epilogue = CubeEpilogue(output_views(k), _inputs(mask), body)
    emit_cube_kernel(k, matmul_problem(k, x.lhs, [x.rhs], a.transpose_a, a.transpose_b, epilogue))


@kernel_for(fused.GatedMatmulOp)
def lower_gated_matmul(op: fused.GatedMatmulOp, k: KernelContext) -> None:
    a = op.attr_values()
    x = named(op, k.inputs)

    def body(t: EpilogueTiles) -> None:
        gate, up = t.products
        activate(t.v, a.act, gate)
        emit_elementwise(t.v, "ge.mul", SimpleNamespace(), [gate, up], gate)
        t.v.cast(gate, t.outputs[0])

    epilogue = CubeEpilogue(output_views(k), [], body)
    problem = matmul_problem(k, x.lhs, [x.gate_weight, x.up_weight], a.transpose_a, a.transpose_b, epilogue)
    emit_cube_kernel(k, problem)


@kernel_for(fused.MatmulAddLayerNormOp, fused.MatmulAddRmsNormOp)
def lower_matmul_add_norm(op, k: KernelContext) -> None:
    """s = lhs @ rhs + bias + residual; y = norm(s): each item spans whole rows."""
    a = op.attr_values()
    x = named(op, k.inputs)
    epilogue = add_norm_epilogue(output_views(k), x, isinstance(op, fused.MatmulAddLayerNormOp), a.epsilon)
    emit_cube_kernel(k, matmul_problem(k, x.lhs, [x.rhs], a.transpose_a, a.transpose_b, epilogue, whole_rows=True))


def cube_problem(k: KernelContext, cube, tensors: list[GmTensor], epilogue: CubeEpilogue) -> CubeProblem:
    """The problem of a ge cube op (matmul, batch_matmul) read from `tensors` with
    `epilogue` (a cube group's)."""
    if isinstance(cube, ge.MatmulOp | ge.BatchMatmulOp):
        a = cube.attr_values()
        return matmul_problem(k, tensors[0], [tensors[1]], a.transpose_a, a.transpose_b, epilogue)
    raise k.unsupported(f"a group around '{cube.name}'")


from .cube_group import lower_cube_group  # noqa: E402,F401  (groups.py delegates cube groups here)
