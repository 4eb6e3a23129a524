"""Transformer layers as the exporters write them compile to the kernels the
hand-written examples get (issue 29 item 3): small ONNX graphs shaped like the
TorchScript and dynamo exporters' output (3-D MatMul + Add, head splits by
Reshape + Transpose, the scale as Div or Mul, an additive mask, GELU written
out in its erf and tanh forms). Each is checked for the fused ops `ge-fuse`
makes, and compiled with `ge-compile` and simulated against onnxruntime.

The ge-level rewrites themselves are FileChecked in
tests/lit/ge/graph-opt/simplify-exported-idioms.mlir."""

from __future__ import annotations

import math

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from gecomp.bench.models import run  # noqa: E402
from gecomp.dialects.context import make_context  # noqa: E402
from gecomp.core.passes import parse_pass_pipeline, run_pipeline  # noqa: E402

SEQ, HIDDEN, HEADS, FFN = 16, 64, 4, 128
HEAD = HIDDEN // HEADS


class Graph:
    """A small ONNX graph builder: nodes named in order, initializers from a seed."""

    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.count = [], [], 0

    def const(self, array) -> str:
        name = f"c{len(self.inits)}"
        self.inits.append(numpy_helper.from_array(np.asarray(array, np.float32) if np.asarray(array).dtype.kind == "f" else np.asarray(array), name))
        return name

    def weight(self, *shape, scale=0.15) -> str:
        return self.const(self.rng.normal(0, scale, shape))

    def op(self, op_type: str, *inputs: str, **attrs) -> str:
        self.count += 1
        out = f"{op_type.lower()}{self.count}"
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], **attrs))
        return out

    def model(self, out: str, out_shape) -> onnx.ModelProto:
        graph = helper.make_graph(
            self.nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, SEQ, HIDDEN])],
            [helper.make_tensor_value_info(out, TensorProto.FLOAT, out_shape)], self.inits,
        )
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])

    # ---- the exporters' building blocks -------------------------------------------------

    def linear(self, x: str, n_in: int, n_out: int) -> str:
        """TorchScript's nn.Linear on a 3-D input: MatMul by the transposed weight, Add bias."""
        return self.op("Add", self.op("MatMul", x, self.weight(n_in, n_out)), self.weight(n_out, scale=0.05))

    def heads(self, x: str, key: bool = False) -> str:
        split = self.op("Reshape", x, self.const(np.array([1, SEQ, HEADS, HEAD], np.int64)))
        return self.op("Transpose", split, perm=[0, 2, 3, 1] if key else [0, 2, 1, 3])

    def rotary(self, t: str) -> str:
        """Hugging Face's apply_rotary_pos_emb on a head split t (1, N, S, D)."""
        angles = np.arange(SEQ)[:, None] * (10000.0 ** (-np.arange(0, HEAD, 2) / HEAD))[None, :]
        angles = np.concatenate([angles, angles], axis=-1).reshape(1, 1, SEQ, HEAD)
        half = np.array([HEAD // 2], np.int64)
        lo = self.op("Slice", t, self.const(np.array([0], np.int64)), self.const(half), self.const(np.array([3], np.int64)))
        hi = self.op("Slice", t, self.const(half), self.const(np.array([HEAD], np.int64)), self.const(np.array([3], np.int64)))
        rotated = self.op("Concat", self.op("Neg", hi), lo, axis=-1)
        return self.op("Add", self.op("Mul", t, self.const(np.cos(angles))), self.op("Mul", rotated, self.const(np.sin(angles))))

    def fused_qkv(self, x: str) -> tuple[str, str, str]:
        """GPT-2's c_attn: Conv1D as Reshape to 2-D, Gemm, Reshape back, Split in three."""
        rows = self.op("Reshape", x, self.const(np.array([SEQ, HIDDEN], np.int64)))
        y = self.op("Gemm", rows, self.weight(HIDDEN, 3 * HIDDEN), self.weight(3 * HIDDEN, scale=0.05))
        y = self.op("Reshape", y, self.const(np.array([1, SEQ, 3 * HIDDEN], np.int64)))
        outs = [f"split_{i}" for i in range(3)]
        self.nodes.append(helper.make_node("Split", [y, self.const(np.array([HIDDEN] * 3, np.int64))], outs, axis=2))
        return tuple(outs)

    def attention(self, x: str, scale_as: str, mask: bool, rotary: bool = False, fused_qkv: bool = False) -> str:
        q, k, v = self.fused_qkv(x) if fused_qkv else (self.linear(x, HIDDEN, HIDDEN) for _ in range(3))
        if rotary:
            kt = self.op("Transpose", self.rotary(self.heads(k)), perm=[0, 1, 3, 2])
            scores = self.op("MatMul", self.rotary(self.heads(q)), kt)
        else:
            scores = self.op("MatMul", self.heads(q), self.heads(k, key=True))
        if scale_as == "q_and_k":  # SDPA's decomposition: sqrt(scale) on q and on k^T
            root = self.const(np.float32(HEAD ** -0.25))
            scores = self.nodes.pop().input
            scores = self.op("MatMul", self.op("Mul", scores[0], root), self.op("Mul", scores[1], root))
        elif scale_as == "div":
            scores = self.op("Div", scores, self.const(np.float32(math.sqrt(HEAD))))
        else:
            scores = self.op("Mul", scores, self.const(np.float32(1 / math.sqrt(HEAD))))
        if mask:
            causal = np.triu(np.full((SEQ, SEQ), np.finfo(np.float32).min, np.float32), 1)
            scores = self.op("Add", scores, self.const(causal.reshape(1, 1, SEQ, SEQ)))
        probs = self.op("Softmax", scores, axis=-1)
        out = self.op("Transpose", self.op("MatMul", probs, self.heads(v)), perm=[0, 2, 1, 3])
        return self.op("Reshape", out, self.const(np.array([1, SEQ, HIDDEN], np.int64)))

    def gelu_erf(self, x: str) -> str:
        erf = self.op("Erf", self.op("Div", x, self.const(np.float32(math.sqrt(2)))))
        return self.op("Mul", self.op("Mul", x, self.op("Add", erf, self.const(np.float32(1)))), self.const(np.float32(0.5)))

    def gelu_tanh(self, x: str) -> str:
        cube = self.op("Mul", self.op("Pow", x, self.const(np.float32(3))), self.const(np.float32(0.044715)))
        inner = self.op("Mul", self.op("Add", x, cube), self.const(np.float32(math.sqrt(2 / math.pi))))
        bracket = self.op("Add", self.op("Tanh", inner), self.const(np.float32(1)))
        return self.op("Mul", self.op("Mul", x, self.const(np.float32(0.5))), bracket)

    def layer(self, gelu: str, scale_as: str, mask: bool) -> str:
        x = "x"
        h = self.op("Add", x, self.linear(self.attention(x, scale_as, mask), HIDDEN, HIDDEN))
        f = self.gelu_erf(self.linear(h, HIDDEN, FFN)) if gelu == "erf" else self.gelu_tanh(self.linear(h, HIDDEN, FFN))
        return self.op("Add", h, self.linear(f, FFN, HIDDEN))


def _layer(gelu: str, scale_as: str, mask: bool) -> onnx.ModelProto:
    g = Graph()
    return g.model(g.layer(gelu, scale_as, mask), [1, SEQ, HIDDEN])


def _fused_ops(proto) -> list[str]:
    module = run.import_proto(proto)
    run_pipeline(parse_pass_pipeline("ge-graph-opt,ge-fuse"), make_context(), module)
    return [op.name for op in module.walk()]


def _compiled_matches_onnxruntime(proto) -> None:
    inputs = [np.random.default_rng(1).normal(0, 1, (1, SEQ, HIDDEN)).astype(np.float32)]
    want = run.onnxruntime_outputs(proto, inputs)
    module = run.import_proto(proto)
    run.compile_module(module)
    sim = run.simulate(module, inputs, want)
    assert sim.worst_ratio <= 1.0, sim.worst


LAYERS = [("erf", "div", False), ("tanh", "mul", True), ("erf", "q_and_k", True)]


@pytest.mark.parametrize("gelu, scale_as, mask", LAYERS)
def test_exported_layer_fuses_like_the_hand_written_one(gelu, scale_as, mask):
    ops = _fused_ops(_layer(gelu, scale_as, mask))
    assert ops.count("fused.multi_matmul_bias_act") == 1, "Q, K and V merged into one GEMM"
    assert ops.count("fused.flash_attention") == 1
    assert "ge.transpose" not in ops, "the head splits and merge are absorbed (layout BSH)"
    assert "ge.softmax" not in ops and "ge.batch_matmul" not in ops
    assert not {"ge.erf", "ge.tanh", "ge.pow"} & set(ops), "GELU is one op"
    assert "ge.gelu" not in ops, "the GELU is the epilogue of its GEMM"


@pytest.mark.parametrize("gelu, scale_as, mask", LAYERS)
def test_exported_layer_compiles_to_onnxruntime_numbers(gelu, scale_as, mask):
    _compiled_matches_onnxruntime(_layer(gelu, scale_as, mask))


def test_rotary_embedding_has_no_slices_left_and_matches_onnxruntime():
    """LLaMA's rotary embedding on q and k (transposed after it, as
    `key_states.transpose(2, 3)`): no slice, negation or concat is left, each
    rotation is the epilogue of the products of x, attention still fuses."""
    g = Graph()
    proto = g.model(g.attention("x", "div", True, rotary=True), [1, SEQ, HIDDEN])
    ops = _fused_ops(proto)
    assert not {"ge.slice", "ge.concat", "ge.neg"} & set(ops)
    assert ops.count("fused.flash_attention") == 1
    _compiled_matches_onnxruntime(proto)


def test_grouped_query_attention_with_rotary_needs_no_expand():
    """LLaMA's attention: 4 query heads, 2 key / value heads repeated by
    repeat_kv (Unsqueeze, Expand, Reshape) after the rotary embedding: the
    repetition moves into the weights, no expand, slice or transpose is left,
    the attention fuses in layout BSH, and the numbers match onnxruntime."""
    g = Graph()
    kv_heads, group = HEADS // 2, 2
    q = g.op("MatMul", "x", g.weight(HIDDEN, HIDDEN))
    k, v = (g.op("MatMul", "x", g.weight(HIDDEN, kv_heads * HEAD)) for _ in range(2))

    def split(y, heads):
        r = g.op("Reshape", y, g.const(np.array([1, SEQ, heads, HEAD], np.int64)))
        return g.op("Transpose", r, perm=[0, 2, 1, 3])

    def repeat_kv(t):
        u = g.op("Reshape", t, g.const(np.array([1, kv_heads, 1, SEQ, HEAD], np.int64)))
        e = g.op("Expand", u, g.const(np.array([1, kv_heads, group, SEQ, HEAD], np.int64)))
        return g.op("Reshape", e, g.const(np.array([1, HEADS, SEQ, HEAD], np.int64)))

    qh = g.rotary(split(q, HEADS))
    kh = g.op("Transpose", repeat_kv(g.rotary(split(k, kv_heads))), perm=[0, 1, 3, 2])
    scores = g.op("Div", g.op("MatMul", qh, kh), g.const(np.float32(math.sqrt(HEAD))))
    out = g.op("MatMul", g.op("Softmax", scores, axis=-1), repeat_kv(split(v, kv_heads)))
    out = g.op("Reshape", g.op("Transpose", out, perm=[0, 2, 1, 3]), g.const(np.array([1, SEQ, HIDDEN], np.int64)))
    proto = g.model(out, [1, SEQ, HIDDEN])
    ops = _fused_ops(proto)
    assert not {"ge.expand", "ge.slice", "ge.concat", "ge.transpose"} & set(ops), ops
    assert ops.count("fused.flash_attention") == 1
    _compiled_matches_onnxruntime(proto)


def test_split_of_a_fused_qkv_product_is_merged_products():
    """GPT-2's c_attn (one Gemm split into Q, K, V): no split kernel, one
    multi-product kernel, attention in BSH."""
    g = Graph()
    proto = g.model(g.attention("x", "div", True, fused_qkv=True), [1, SEQ, HIDDEN])
    ops = _fused_ops(proto)
    assert "ge.split" not in ops
    assert ops.count("fused.multi_matmul_bias_act") == 1 and ops.count("fused.flash_attention") == 1
    assert "ge.transpose" not in ops
    _compiled_matches_onnxruntime(proto)


def test_lhs_batched_projection_is_one_gemm():
    """The dynamo exporter's seq-first input projection (64x1x256) @ (256x768),
    smaller: a 2-D GEMM with its bias, no batch_matmul left."""
    g = Graph()
    y = g.op("Add", g.op("MatMul", "x", g.weight(HIDDEN, 3 * HIDDEN)), g.weight(3 * HIDDEN, scale=0.05))
    graph = helper.make_graph(
        g.nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [SEQ, 1, HIDDEN])],
        [helper.make_tensor_value_info(y, TensorProto.FLOAT, [SEQ, 1, 3 * HIDDEN])], g.inits,
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    ops = _fused_ops(proto)
    assert "ge.batch_matmul" not in ops and ops.count("fused.matmul_bias_act") == 1
    inputs = [np.random.default_rng(2).normal(0, 1, (SEQ, 1, HIDDEN)).astype(np.float32)]
    module = run.import_proto(proto)
    run.compile_module(module)
    sim = run.simulate(module, inputs, run.onnxruntime_outputs(proto, inputs))
    assert sim.worst_ratio <= 1.0, sim.worst


def _post_norm_layer() -> onnx.ModelProto:
    """BERT's post-norm residual blocks as TorchScript writes them: the output
    projection (3-D MatMul + Add bias), the residual Add, LayerNormalization over
    the last axis; then the FFN and the same again."""
    g = Graph(3)

    def add_norm(y: str, residual: str) -> str:
        return g.op("LayerNormalization", g.op("Add", y, residual), g.weight(HIDDEN, scale=1.0), g.weight(HIDDEN),
                    axis=-1, epsilon=1e-12)

    h = add_norm(g.linear(g.attention("x", "div", False), HIDDEN, HIDDEN), "x")
    out = add_norm(g.linear(g.gelu_erf(g.linear(h, HIDDEN, FFN)), FFN, HIDDEN), h)
    return g.model(out, [1, SEQ, HIDDEN])


def test_residual_and_norm_join_the_gemm_through_the_exporters_view():
    """The GEMM's (M, N) result is viewed as (1, M, N) before the residual add and
    the norm: both move below the view, and each projection, its residual and
    its LayerNorm become one `fused.matmul_add_layer_norm` (no separate norm or
    add kernel); the compiled layer matches onnxruntime."""
    proto = _post_norm_layer()
    ops = _fused_ops(proto)
    assert ops.count("fused.matmul_add_layer_norm") == 2, ops
    assert not {"ge.layer_norm", "ge.add", "fused.add_layer_norm"} & set(ops), ops
    _compiled_matches_onnxruntime(proto)


def _rms_norm_block() -> onnx.ModelProto:
    """LLaMA's pre-norm residual block as TorchScript writes it: RMSNorm as Pow,
    ReduceMean, Add eps, Sqrt, Reciprocal and two Muls (the weight last), the
    projection, the residual Add, and the next RMSNorm."""
    g = Graph(4)

    def rms(x: str) -> str:
        mean = g.op("ReduceMean", g.op("Pow", x, g.const(np.float32(2))), axes=[-1], keepdims=1)
        inv = g.op("Reciprocal", g.op("Sqrt", g.op("Add", mean, g.const(np.float32(1e-6)))))
        return g.op("Mul", g.weight(HIDDEN, scale=1.0), g.op("Mul", x, inv))

    h = g.op("Add", "x", g.op("MatMul", rms("x"), g.weight(HIDDEN, HIDDEN)))
    return g.model(rms(h), [1, SEQ, HIDDEN])


def test_written_out_rms_norm_is_one_op_that_fuses_with_the_residual():
    """Each written-out RMSNorm is one `ge.rms_norm` for fusion: the second one,
    after the projection's residual add, fuses with the GEMM and the add
    (`fused.matmul_add_rms_norm`); no reduction or rsqrt kernel is left, and the
    compiled block matches onnxruntime."""
    proto = _rms_norm_block()
    ops = _fused_ops(proto)
    assert ops.count("fused.matmul_add_rms_norm") == 1, ops
    assert not {"ge.reduce_mean", "ge.rsqrt", "ge.sqrt", "ge.reciprocal"} & set(ops), ops
    _compiled_matches_onnxruntime(proto)


def _packed_mha_layer(bias: bool = True) -> onnx.ModelProto:
    """nn.MultiheadAttention (batch_first, as torchvision's ViT and
    nn.TransformerEncoderLayer use it) as the dynamo exporter writes it: the
    module's sequence-first layout (Transpose to (S, 1, E)), the packed
    in-projection (one MatMul by the (E, 3E) weight), PyTorch's
    `unflatten(-1, (3, E)).unsqueeze(0).transpose(0, -2).squeeze(-2)` and a
    Gather of 0, 1, 2; heads as (S, N, D) -> (N, S, D), SDPA's sqrt(scale) on q
    and k before the batch dim is added, the merge as (S, 1, N, D); the output
    projection, back to batch first, the residual and the norm."""
    g = Graph(5)
    seq_first = g.op("Transpose", "x", perm=[1, 0, 2])
    y = g.op("MatMul", seq_first, g.weight(HIDDEN, 3 * HIDDEN))
    if bias:
        y = g.op("Add", y, g.weight(3 * HIDDEN, scale=0.05))
    packed = g.op("Reshape", y, g.const(np.array([1, SEQ, 1, 3, HIDDEN], np.int64)))
    packed = g.op("Transpose", packed, perm=[3, 1, 2, 0, 4])
    packed = g.op("Reshape", packed, g.const(np.array([3, SEQ, 1, HIDDEN], np.int64)))
    q, k, v = (g.op("Reshape", g.op("Gather", packed, g.const(np.array(i, np.int64)), axis=0),
                    g.const(np.array([SEQ, HEADS, HEAD], np.int64))) for i in range(3))
    root = g.const(np.float32(HEAD ** -0.25))

    def batched(t: str, shape) -> str:
        return g.op("Reshape", t, g.const(np.array([1, *shape], np.int64)))

    q = batched(g.op("Mul", g.op("Transpose", q, perm=[1, 0, 2]), root), (HEADS, SEQ, HEAD))
    kt = batched(g.op("Mul", g.op("Transpose", k, perm=[1, 2, 0]), root), (HEADS, HEAD, SEQ))
    v = batched(g.op("Transpose", v, perm=[1, 0, 2]), (HEADS, SEQ, HEAD))
    out = g.op("MatMul", g.op("Softmax", g.op("MatMul", q, kt), axis=-1), v)
    out = g.op("Reshape", g.op("Transpose", out, perm=[2, 0, 1, 3]), g.const(np.array([SEQ, HIDDEN], np.int64)))
    out = g.op("Reshape", g.op("MatMul", out, g.weight(HIDDEN, HIDDEN)), g.const(np.array([SEQ, 1, HIDDEN], np.int64)))
    h = g.op("Add", "x", g.op("Transpose", out, perm=[1, 0, 2]))
    return g.model(g.op("LayerNormalization", h, g.weight(HIDDEN, scale=1.0), g.weight(HIDDEN), axis=-1), [1, SEQ, HIDDEN])


@pytest.mark.parametrize("bias", [True, False])
def test_packed_in_projection_is_three_merged_products(bias):
    """Q, K and V picked out of the packed product by Gathers are the products by
    the weight's column blocks (merged again into one kernel), the unit-dim
    views of the sequence-first layout cancel, attention takes the head splits
    in layout BSH, the output projection fuses with the residual and the norm:
    no gather or transpose kernel left, and the numbers match onnxruntime."""
    proto = _packed_mha_layer(bias)
    ops = _fused_ops(proto)
    assert not {"ge.gather", "ge.transpose", "ge.mul"} & set(ops), ops
    assert ops.count("fused.multi_matmul_bias_act") == 1 and ops.count("fused.flash_attention") == 1, ops
    assert ops.count("fused.matmul_add_layer_norm") == 1, ops
    _compiled_matches_onnxruntime(proto)


def test_split_of_a_product_by_a_stored_transposed_weight():
    """A linear layer's product as Gemm(transB=1) by its (3E, E) weight, split in
    three (what the torch.compile path's addmm by t(W) is): the pieces are the
    products by the weight's row blocks, merged into one kernel, no split."""
    g = Graph(6)
    rows = g.op("Reshape", "x", g.const(np.array([SEQ, HIDDEN], np.int64)))
    y = g.op("Gemm", rows, g.weight(3 * HIDDEN, HIDDEN), g.weight(3 * HIDDEN, scale=0.05), transB=1)
    outs = [f"split_{i}" for i in range(3)]
    g.nodes.append(helper.make_node("Split", [y, g.const(np.array([HIDDEN] * 3, np.int64))], outs, axis=1))
    total = g.op("Add", g.op("Mul", outs[0], outs[1]), outs[2])
    graph = helper.make_graph(
        g.nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, SEQ, HIDDEN])],
        [helper.make_tensor_value_info(total, TensorProto.FLOAT, [SEQ, HIDDEN])], g.inits,
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    ops = _fused_ops(proto)
    assert "ge.split" not in ops and ops.count("fused.multi_matmul_bias_act") == 1, ops
    _compiled_matches_onnxruntime(proto)
