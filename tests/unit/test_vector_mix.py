"""ge-vector-mix (lowering/graph_to_fused/vector_mix.py): gates mixing a transposed
stack of expert outputs (`batch_matmul(gate [b.., 1, E], transpose(H [E, b.., N]))`)
become one fused group of weighted plane sums that computes what the products
did (reference interpreter before and after the rewrite) and, compiled through
ge-compile, matches the reference on the simulator with the stack read in place
(its planes are read from their offsets: templates/groups.py). Products that are
not such mixes are left alone."""

from __future__ import annotations

import numpy as np
import pytest

from gecomp.core.parsing import verify_module
from gecomp.core.passes import run_pipeline
from gecomp.core.signature import input_specs, main_function, random_inputs
from gecomp.dialects import fused, ge, npu
from gecomp.dialects.context import make_context
from gecomp.lowering.graph_to_fused.vector_mix import MAX_PLANES, VectorMixPass, vector_mix
from gecomp.lowering.pipelines import CompilePipeline
from gecomp.simulator.npu import simulate
from gecomp.simulator.reference import run_reference

from graph_testing import assert_close, ops_of, parse


def t(shape, dtype: str) -> str:
    return f"tensor<{'x'.join(map(str, shape))}x{dtype}>"


def mixes(planes: int, batch: list[int], n: int, tasks: int, dtype: str = "f16", gate: str = "softmax") -> str:
    """`tasks` gates (`gate` over the planes: softmax, or the input itself) mixing the
    planes of `h` [planes, batch.., n]."""
    rank = len(batch) + 2
    perm = [*range(1, rank - 1), 0, rank - 1]
    stack_shape = [[planes, *batch, n][p] for p in perm]
    h = t([planes, *batch, n], dtype)
    lines = [f"%s = ge.transpose %h {{perm = {perm}}} : ({h}) -> {t(stack_shape, dtype)}"]
    args = [f'%h: {h} {{ge.name = "h"}}']
    results = []
    for i in range(tasks):
        args.append(f'%g{i}: {t([*batch, planes], dtype)} {{ge.name = "g{i}"}}')
        if gate == "softmax":
            lines.append(f"%w{i} = ge.softmax %g{i} : ({t([*batch, planes], dtype)}) -> {t([*batch, planes], dtype)}")
        else:
            lines.append(f"%w{i} = ge.{gate} %g{i} : ({t([*batch, planes], dtype)}) -> {t([*batch, planes], dtype)}")
        lines.append(f"%v{i} = ge.reshape %w{i} : ({t([*batch, planes], dtype)}) -> {t([*batch, 1, planes], dtype)}")
        lines.append(
            f"%m{i} = ge.batch_matmul %v{i}, %s : ({t([*batch, 1, planes], dtype)}, {t(stack_shape, dtype)}) -> {t([*batch, 1, stack_shape[-1]], dtype)}"
        )
        results.append((f"%m{i}", t([*batch, 1, stack_shape[-1]], dtype)))
    outs = ", ".join(f'{ty} {{ge.name = "y{i}"}}' for i, (_, ty) in enumerate(results))
    body = "\n    ".join(lines)
    return f"""builtin.module {{
  func.func @main({", ".join(args)}) -> ({outs}) {{
    {body}
    func.return {", ".join(v for v, _ in results)} : {", ".join(ty for _, ty in results)}
  }}
}}"""


CASES = [
    (8, [256], 256, 2, "f16"),
    (2, [48], 32, 1, "f16"),
    (5, [40], 96, 2, "f16"),
    (3, [2, 24], 64, 1, "f16"),
    (4, [32], 48, 2, "f32"),
]


@pytest.mark.parametrize("planes,batch,n,tasks,dtype", CASES)
def test_mixes_become_one_group_computing_what_the_products_did(planes, batch, n, tasks, dtype):
    text = mixes(planes, batch, n, tasks, dtype)
    module = parse(text)
    assert vector_mix(module) == tasks
    verify_module(module)
    assert not ops_of(module, ge.BatchMatmulOp)
    groups = ops_of(module, fused.GroupOp)
    assert len(groups) == 1 and len(groups[0].results) == tasks  # the stack's planes read once for every task
    inputs = random_inputs(input_specs(main_function(module)), 0)
    assert_close(run_reference(parse(text), inputs), run_reference(module, inputs))


@pytest.mark.parametrize(
    "planes,batch,n,tasks,dtype,gate", [(*CASES[1], "softmax"), (*CASES[3], "sigmoid"), (*CASES[4], "softmax"), (*CASES[2], "abs")]
)
def test_mixes_on_the_simulator(planes, batch, n, tasks, dtype, gate):
    """Compiled (tiny preset), the mix kernel reads the stack's planes in place and
    the gates' columns from their tiles: no kernel transposes the stack or a gate,
    runs a product or copies a slice; a softmax gate is computed in the mix's
    kernel."""
    text = mixes(planes, batch, n, tasks, dtype, gate)
    module = parse(text)
    run_pipeline(CompilePipeline(hw="tiny").stages(), make_context(), module)
    sources = [s.data for k in module.walk() if isinstance(k, npu.KernelOp) for s in k.attributes[npu.SOURCES_ATTR].data]
    assert not any("batch_matmul" in s or s in ("ge.slice", "ge.transpose") for s in sources), sources
    assert gate != "softmax" or not any(s == "ge.softmax" for s in sources), sources
    inputs = random_inputs(input_specs(main_function(module)), 0)
    assert_close(run_reference(parse(text), inputs), simulate(module, inputs, "tiny").outputs)


def test_mmoe_like_mix_equals_the_cube_product_and_beats_it():
    """Eight planes of 256x256 and two gates, f16, on ascend910: the weighted sums
    in f32, rounded once, give what the cube's products (f32 accumulation in L0C)
    give, to the last bit here, in fewer simulated cycles than the transpose,
    format change and products they replace."""
    text = mixes(8, [256], 256, 2)
    inputs = random_inputs(input_specs(main_function(parse(text))), 1)
    runs = {}
    for mix in (True, False):
        module = parse(text)
        stages = [s for s in CompilePipeline(hw="ascend910").stages() if mix or not isinstance(s, VectorMixPass)]
        run_pipeline(stages, make_context(), module)
        runs[mix] = simulate(module, inputs, "ascend910")
    for e, g in zip(runs[False].outputs, runs[True].outputs):
        assert np.array_equal(np.asarray(e), np.asarray(g))
    assert runs[True].report.total_cycles < runs[False].report.total_cycles


NOT_A_STACK = """builtin.module {
  func.func @main(%x: tensor<32x4x32xf16> {ge.name = "x"}, %g: tensor<32x1x4xf16> {ge.name = "g"}) -> (tensor<32x1x32xf16> {ge.name = "y"}) {
    %m = ge.batch_matmul %g, %x : (tensor<32x1x4xf16>, tensor<32x4x32xf16>) -> tensor<32x1x32xf16>
    func.return %m : tensor<32x1x32xf16>
  }
}"""


@pytest.mark.parametrize(
    "text",
    [
        mixes(MAX_PLANES + 1, [32], 32, 1),  # more planes than one group's unrolled sum holds
        NOT_A_STACK.replace("%x: tensor<32x4x32xf16>", "%z: tensor<32x32x4xf16>").replace(
            "    %m =", "    %x = ge.transpose %z {perm = [0, 2, 1]} : (tensor<32x32x4xf16>) -> tensor<32x4x32xf16>\n    %m ="
        ),  # a transpose, but the K axis is the stored tensor's last
        NOT_A_STACK,  # the planes are not leading axis of anything: strided rows
    ],
    ids=["too-many-planes", "other-transpose", "not-a-transposed-stack"],
)
def test_other_products_are_left_alone(text):
    module = parse(text)
    assert vector_mix(module) == 0
    assert len(ops_of(module, ge.BatchMatmulOp)) == len(ops_of(parse(text), ge.BatchMatmulOp))


MULTIPLY_ADD = """builtin.module {
  func.func @main(%a: tensor<48x64xf16> {ge.name = "a"}, %b: tensor<48x1xf16> {ge.name = "b"}, %c: tensor<48x64xf16> {ge.name = "c"}) -> (tensor<48x64xf16> {ge.name = "y"}) {
    %s = ge.exp %c : (tensor<48x64xf16>) -> tensor<48x64xf16>
    %p = ge.mul %a, %b : (tensor<48x64xf16>, tensor<48x1xf16>) -> tensor<48x64xf16>
    %r = ge.add ORDER : (tensor<48x64xf16>, tensor<48x64xf16>) -> tensor<48x64xf16>
    func.return %r : tensor<48x64xf16>
  }
}"""


@pytest.mark.parametrize("order", ["%s, %p", "%p, %s"])
def test_a_groups_multiply_add_is_one_vmla(order):
    """In a fused group, `acc + x * y` (the product read there alone, acc a
    temporary last read there) is one vmla into acc's temporary: the same
    roundings as the product and the sum, one pass fewer."""
    text = MULTIPLY_ADD.replace("ORDER", order)
    module = parse(text)
    run_pipeline(CompilePipeline(hw="tiny").stages(), make_context(), module)
    kernels = [k for k in module.walk() if isinstance(k, npu.KernelOp)]
    names = {op.name for k in kernels for op in k.walk()}
    assert "npu.vmla" in names and "npu.vmul" not in names, names
    inputs = random_inputs(input_specs(main_function(module)), 0)
    expected = run_reference(parse(text), inputs)
    assert np.array_equal(np.asarray(expected[0]), np.asarray(simulate(module, inputs, "tiny").outputs[0]))


@pytest.mark.parametrize("planes,batch,n,tasks,dtype", [CASES[2], CASES[3], CASES[4]])
def test_gate_columns_are_read_in_place(planes, batch, n, tasks, dtype):
    """A gate's column is the row of the gate's transpose (templates/groups.py
    `_column_view`): read in place as the per-row factor of its product, not copied
    out first. Per tile, an f32 gate's columns cost no instruction and an f16
    gate's one widening cast each (before: a vcopy per column, then the cast);
    the result equals the reference bit for bit on random shapes and gates."""
    text = mixes(planes, batch, n, tasks, dtype)
    module = parse(text)
    run_pipeline(CompilePipeline(hw="tiny").stages(), make_context(), module)
    kernels = [k for k in module.walk() if isinstance(k, npu.KernelOp)]
    assert len(kernels) == 1
    body = list(kernels[0].walk())
    def cols(op):
        return op.properties["cols"].value.data

    columns = [op for op in body if isinstance(op, npu.VCastOp) and cols(op) != n]  # a gate's column: a tile's rows
    products = [op for op in body if isinstance(op, (npu.VMulOp, npu.VMlaOp)) and cols(op) == n]
    copies = [op for op in body if isinstance(op, npu.VCopyOp) and cols(op) != n]  # a column copied out
    assert not copies, [str(op) for op in copies]
    assert len(columns) == (len(products) if dtype == "f16" else 0) and len(products) % (planes * tasks) == 0
    inputs = random_inputs(input_specs(main_function(module)), 3)
    expected = run_reference(parse(text), inputs)
    for e, g in zip(expected, simulate(module, inputs, "tiny").outputs):
        assert_close(e, g)
