"""The named fusion patterns on generated subgraphs of the shapes they exist for
(attention, gated feed-forward, matmul / conv epilogues, residual add + norm,
softmax chains, SwiGLU), with random sizes and random optional parts.

Each graph must (1) be rewritten into the fused op its pattern makes, by
`ge-fuse` alone and after `ge-graph-opt` (layout pass, format changes), and
(2) compute the same numbers as before within `simulator/compare.py`'s
tolerance. The generic random graphs (`test_fusion_properties.py`) rarely
contain these shapes; these tests make sure every pattern's rewrite is
exercised numerically. 150 graphs, small shapes.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, ModuleOp, TensorType, f16, f32, i1
from xdsl.ir import Block, Region, SSAValue

from gecomp.dialects.context import make_context
from gecomp.core.parsing import parse_module, verify_module
from gecomp.core.passes import Instrumentation, instrumented, parse_pass_pipeline, run_pipeline
from gecomp.dialects import ge
from gecomp.simulator.compare import worst_mismatch
from gecomp.simulator.reference import run_reference
from gecomp.core.signature import input_specs, main_function, random_inputs

SETTINGS = settings(deadline=None, max_examples=150, suppress_health_check=[HealthCheck.too_slow])


class Graph:
    """Grows `@main` op by op from drawn choices."""

    def __init__(self, draw, element_type):
        self.draw = draw
        self.et = element_type
        self.block = Block()
        self.seed = 0

    def arg(self, shape, element_type=None) -> SSAValue:
        return self.block.insert_arg(TensorType(element_type or self.et, list(shape)), len(self.block.args))

    def weight(self, shape, fan_in: int) -> SSAValue:
        self.seed += 1
        value = ge.RandomAttr.normal(self.seed, 0.0, 1.0 / math.sqrt(fan_in))
        return self.add(ge.ConstOp.from_value(value, TensorType(self.et, list(shape))))

    def splat(self, value: float, element_type=None) -> SSAValue:
        array = np.asarray(value, dtype=np.float16 if (element_type or self.et) == f16 else np.float32)
        return self.add(ge.ConstOp.from_array(array))

    def add(self, op) -> SSAValue:
        self.block.add_op(op)
        return op.results[0]

    def op(self, cls, *operands, **attrs) -> SSAValue:
        return self.add(cls.new(*operands, **attrs))

    def flip(self) -> bool:
        return self.draw(st.booleans())

    def pick(self, options):
        return self.draw(st.sampled_from(list(options)))

    def module(self, outputs) -> str:
        self.block.add_op(func.ReturnOp(*outputs))
        function_type = FunctionType.from_lists([a.type for a in self.block.args], [v.type for v in outputs])
        return str(ModuleOp([func.FuncOp("main", function_type, Region(self.block))]))


def _activation(g: Graph, x: SSAValue) -> SSAValue:
    act = g.pick(("relu", "gelu", "gelu_tanh", "silu"))
    if act == "relu":
        return g.op(ge.ReluOp, x)
    if act == "silu":
        return g.op(ge.SiluOp, x)
    return g.op(ge.GeluOp, x, approximate="tanh" if act == "gelu_tanh" else "none")


def _heads_split(g: Graph, x: SSAValue, heads: int, key_transposed: bool) -> SSAValue:
    *batch, s, hidden = x.type.get_shape()
    split = ge.ReshapeOp.new(x, result_type=TensorType(g.et, [*batch, s, heads, hidden // heads]))
    g.add(split)
    rank = len(batch) + 3
    lead = list(range(rank - 3))
    perm = lead + ([rank - 2, rank - 1, rank - 3] if key_transposed else [rank - 2, rank - 3, rank - 1])
    return g.op(ge.TransposeOp, split.results[0], perm=perm)


def attention(g: Graph) -> tuple[list[SSAValue], str]:
    heads, d, s = g.pick((1, 2)), g.pick((4, 8)), g.pick((4, 8, 16))
    batch = [2] if g.flip() else []
    key_transposed = g.flip()
    bsh = g.flip()
    if bsh:
        q, k, v = (g.arg([*batch, s, heads * d]) for _ in range(3))
        qh, kh, vh = _heads_split(g, q, heads, False), _heads_split(g, k, heads, key_transposed), _heads_split(g, v, heads, False)
    else:
        qh, vh = g.arg([*batch, heads, s, d]), g.arg([*batch, heads, s, d])
        kh = g.arg([*batch, heads, d, s] if key_transposed else [*batch, heads, s, d])
    scores = g.op(ge.BatchMatmulOp, qh, kh, transpose_b=not key_transposed)
    scale = g.pick((None, "mul", "div"))
    if scale == "mul":
        scores = g.op(ge.MulOp, scores, g.splat(1.0 / math.sqrt(d)))
    elif scale == "div":
        scores = g.op(ge.DivOp, scores, g.splat(math.sqrt(d)))
    mask = g.pick((None, "where", "add"))
    if mask == "where":
        scores = g.op(ge.WhereOp, g.arg([s, s], i1), scores, g.splat(-1.0e4))
    elif mask == "add":
        scores = g.op(ge.AddOp, scores, g.arg([s, s]))
    probs = g.op(ge.SoftmaxOp, scores)
    if g.flip():
        probs = g.op(ge.DropoutOp, probs, ratio=0.1)
    out = g.op(ge.BatchMatmulOp, probs, vh)
    if bsh:
        rank = len(batch) + 3
        merged = g.op(ge.TransposeOp, out, perm=list(range(rank - 3)) + [rank - 2, rank - 3, rank - 1])
        out = g.add(ge.ReshapeOp.new(merged, result_type=TensorType(g.et, [*batch, s, heads * d])))
    return [out], "fused.flash_attention"


def gated(g: Graph) -> tuple[list[SSAValue], str]:
    m, k, n = g.pick((4, 8)), g.pick((8, 16)), g.pick((8, 16))
    x = g.arg([m, k])
    gate = _activation(g, g.op(ge.MatmulOp, x, g.weight([k, n], k)))
    up = g.op(ge.MatmulOp, x, g.weight([k, n], k))
    return [g.op(ge.MulOp, *((gate, up) if g.flip() else (up, gate)))], "fused.gated_matmul"


def matmul_epilogue(g: Graph) -> tuple[list[SSAValue], str]:
    m, k, n = g.pick((4, 8)), g.pick((8, 16)), g.pick((8, 16))
    y = g.op(ge.MatmulOp, g.arg([m, k]), g.weight([k, n], k))
    if g.flip():
        bias = g.weight([n], 1)
        y = g.op(ge.BiasAddOp, y, bias) if g.flip() else g.op(ge.AddOp, y, bias)
    if g.flip():
        y = g.op(ge.DropoutOp, y, ratio=0.1)
    residual = g.flip()
    if residual:
        r = g.arg([m, n])
        y = g.op(ge.AddOp, *((y, r) if g.flip() else (r, y)))
    if residual and g.flip():
        norm = g.pick((ge.LayerNormOp, ge.RMSNormOp))
        params = [g.weight([n], 1) for _ in range(2 if norm is ge.LayerNormOp else 1)]
        normed = g.op(norm, y, *params, epsilon=1e-5)
        outputs = [normed, y] if g.flip() else [normed]
        name = "fused.matmul_add_layer_norm" if norm is ge.LayerNormOp else "fused.matmul_add_rms_norm"
        return outputs, name
    return [_activation(g, y) if g.flip() else g.op(ge.ReluOp, y)], "fused.matmul_bias_act"


def conv_epilogue(g: Graph) -> tuple[list[SSAValue], str]:
    c, o, hw = g.pick((2, 4)), g.pick((2, 4)), g.pick((4, 5))
    x = g.arg([1, c, hw, hw])
    y = g.op(ge.Conv2DOp, x, g.weight([o, c, 3, 3], 9 * c), pads=[1, 1, 1, 1])
    if g.flip():
        y = g.op(ge.BiasAddOp, y, g.weight([o], 1), axis=1)
    else:
        y = g.op(ge.AddOp, y, g.weight(g.pick(([o, 1, 1], [1, o, 1, 1])), 1))
    if g.flip():
        y = g.op(ge.AddOp, y, g.arg([1, o, hw, hw]))
    return [g.op(ge.ReluOp, y)], "fused.conv2d_bias_act"


def add_norm(g: Graph) -> tuple[list[SSAValue], str]:
    rows, n = g.pick((2, 4)), g.pick((8, 16))
    total = g.op(ge.AddOp, g.arg([rows, n]), g.arg([rows, n]))
    if g.flip():
        y = g.op(ge.LayerNormOp, total, g.weight([n], 1), g.weight([n], 1))
        name = "fused.add_layer_norm"
    else:
        y = g.op(ge.RMSNormOp, total, g.weight([n], 1))
        name = "fused.add_rms_norm"
    return ([y, g.op(ge.ReluOp, total)] if g.flip() else [y]), name


def softmax_chain(g: Graph) -> tuple[list[SSAValue], str]:
    x = g.arg([g.pick((2, 3)), g.pick((4, 8))])
    x = g.op(ge.MulOp, x, g.splat(g.pick((0.5, 2.0))))
    if g.flip():
        x = g.op(ge.AddOp, x, g.arg(x.type.get_shape()))
    p = g.op(ge.SoftmaxOp, x)
    return [g.op(ge.DropoutOp, p, ratio=0.2) if g.flip() else p], "fused.softmax"


def swiglu(g: Graph) -> tuple[list[SSAValue], str]:
    shape = [g.pick((2, 4)), g.pick((8, 16))]
    gate, up = g.arg(shape), g.arg(shape)
    if g.flip():
        silu = g.op(ge.SiluOp, gate)
    else:
        silu = g.op(ge.MulOp, gate, g.op(ge.SigmoidOp, gate))
    return [g.op(ge.MulOp, *((silu, up) if g.flip() else (up, silu)))], "fused.swiglu"


SHAPES = {f.__name__: f for f in (attention, gated, matmul_epilogue, conv_epilogue, add_norm, softmax_chain, swiglu)}


@st.composite
def pattern_graphs(draw):
    """(module text, the fused op it must become, inputs)."""
    g = Graph(draw, draw(st.sampled_from((f16, f32))))
    outputs, fused_name = SHAPES[draw(st.sampled_from(sorted(SHAPES)))](g)
    text = g.module(outputs)
    module = parse_module(make_context(), text, "<pattern graph>")
    verify_module(module)
    inputs = random_inputs(input_specs(main_function(module)), draw(st.integers(0, 2**16)))
    return text, fused_name, inputs


def _compile(text: str, pipeline: str):
    module = parse_module(make_context(), text, "<pattern graph>")
    with instrumented(Instrumentation(verify_each=True)):
        run_pipeline(parse_pass_pipeline(pipeline), make_context(), module)
    return module


@pytest.mark.parametrize("pipeline", ["ge-fuse", "ge-graph-opt,ge-fuse"])
@SETTINGS
@given(case=pattern_graphs())
def test_pattern_fires_and_keeps_the_numbers(pipeline, case):
    text, fused_name, inputs = case
    expected = run_reference(parse_module(make_context(), text), list(inputs))
    module = _compile(text, pipeline)
    names = {op.name for op in module.walk()}
    assert fused_name in names, f"{pipeline} did not make {fused_name}:\n{module}"
    actual = run_reference(module, list(inputs))
    for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
        mismatch = worst_mismatch(f"result{i}", e, a)
        assert mismatch is None or mismatch.ratio <= 1.0, f"{mismatch}\n{text}\n{module}"
