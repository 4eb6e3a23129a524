"""Every entry of the ATen -> ge table against PyTorch: the op alone in a graph,
converted (which checks its shape rule against the traced result), run by the
reference interpreter on random inputs and compared with PyTorch's own result.
A new entry without a case here fails `test_every_entry_has_a_case`."""

import operator

import pytest

torch = pytest.importorskip("torch")

from gecomp.frontend.torch.aten_table import TABLE, refusal  # noqa: E402
from gecomp.frontend.torch.convert import ConversionError, convert_graph, to_numpy  # noqa: E402
from gecomp.simulator.compare import worst_mismatch  # noqa: E402
from gecomp.simulator.run import execute  # noqa: E402

aten = torch.ops.aten
gen = torch.Generator().manual_seed(0)


def r(*shape, dtype=torch.float32):
    return torch.randn(*shape, generator=gen).to(dtype)


def pos(*shape):
    return torch.rand(*shape, generator=gen) + 0.5


def ids(high, *shape):
    return torch.randint(0, high, shape, generator=gen)


# target -> list of (args, kwargs); tensors become graph inputs, the rest literals.
CASES = {
    aten.add.Tensor: [((r(2, 3), r(3)), {}), ((r(2, 3), r(2, 3)), {"alpha": 2})],
    aten.add.Scalar: [((r(2, 3), 1.5), {})],
    aten.sub.Tensor: [((r(2, 3), r(1, 3)), {})],
    aten.sub.Scalar: [((r(4), 2.0), {})],
    aten.mul.Tensor: [((r(2, 3), r(2, 1)), {}), ((ids(5, 3), r(3)), {})],
    aten.mul.Scalar: [((r(2, 3), 0.125), {})],
    aten.maximum.default: [((r(2, 3), r(3)), {})],
    aten.minimum.default: [((r(2, 3), r(2, 3)), {})],
    aten.pow.Tensor_Scalar: [((pos(2, 3), 2.0), {}), ((pos(3), 0.5), {})],
    aten.pow.Tensor_Tensor: [((pos(2, 3), r(2, 3)), {})],
    aten.div.Tensor: [((r(2, 3), pos(3)), {})],
    aten.div.Scalar: [((r(2, 3), 4.0), {})],
    aten.div.Tensor_mode: [((r(2, 3), pos(3)), {"rounding_mode": None})],
    aten.neg.default: [((r(5),), {})],
    aten.abs.default: [((r(5),), {})],
    aten.relu.default: [((r(2, 5),), {})],
    aten.exp.default: [((r(5),), {})],
    aten.log.default: [((pos(5),), {})],
    aten.sqrt.default: [((pos(5),), {})],
    aten.rsqrt.default: [((pos(5),), {})],
    aten.reciprocal.default: [((pos(5),), {})],
    aten.tanh.default: [((r(5),), {})],
    aten.sigmoid.default: [((r(5),), {})],
    aten.silu.default: [((r(5),), {})],
    aten.erf.default: [((r(5),), {})],
    aten.gelu.default: [((r(2, 5),), {}), ((r(2, 5),), {"approximate": "tanh"})],
    aten.leaky_relu.default: [((r(2, 5), 0.2), {})],
    aten.hardtanh.default: [((r(2, 5) * 8, 0.0, 6.0), {})],
    aten.clamp.default: [((r(2, 5), -0.5, 0.5), {}), ((r(2, 5), None, 0.1), {})],
    aten.where.self: [((r(2, 3) > 0, r(2, 3), r(3)), {})],
    aten._to_copy.default: [((r(2, 3),), {"dtype": torch.float16}), ((ids(5, 4),), {"dtype": torch.float32})],
    aten.clone.default: [((r(2, 3),), {})],
    aten.alias.default: [((r(2, 3),), {})],
    aten.detach.default: [((r(2, 3),), {})],
    aten.lift_fresh_copy.default: [((r(2, 3),), {})],
    aten.mm.default: [((r(4, 8), r(8, 5)), {})],
    aten.bmm.default: [((r(2, 4, 8), r(2, 8, 5)), {})],
    aten.addmm.default: [((r(5), r(4, 8), r(8, 5)), {}), ((r(4, 5), r(4, 8), r(8, 5)), {"beta": 0.5, "alpha": 2})],
    aten.convolution.default: [
        ((r(1, 4, 6, 6), r(8, 4, 3, 3), r(8), [1, 1], [1, 1], [1, 1], False, [0, 0], 1), {}),
        ((r(1, 4, 7, 7), r(4, 1, 3, 3), None, [2, 2], [0, 0], [1, 1], False, [0, 0], 4), {}),
        ((r(1, 4, 20), r(6, 4, 3), r(6), [2], [1], [1], False, [0], 1), {}),  # 1-D: over a unit height
        ((r(1, 4, 12), r(4, 2, 3), None, [1], [2], [2], False, [0], 2), {}),
    ],
    aten._softmax.default: [((r(2, 5), -1, False), {})],
    aten._log_softmax.default: [((r(2, 5), 1, False), {})],
    aten._safe_softmax.default: [((r(2, 3, 5), -1), {})],
    aten.native_layer_norm.default: [((r(2, 3, 8), [8], r(8), r(8), 1e-5), {}),
                                     ((r(2, 8), [8], None, None, 1e-6), {})],
    aten.native_group_norm.default: [((r(1, 6, 10), r(6), r(6), 1, 6, 10, 3, 1e-5), {}),
                                     ((r(2, 4, 3, 3), None, None, 2, 4, 9, 4, 1e-5), {})],
    aten.native_batch_norm.default: [((r(1, 4, 3, 3), r(4), r(4), r(4), pos(4), False, 0.1, 1e-5), {})],
    aten._native_batch_norm_legit_no_training.default: [((r(1, 4, 3, 3), r(4), r(4), r(4), pos(4), 0.1, 1e-5), {})],
    aten.max_pool2d_with_indices.default: [((r(1, 2, 6, 6), [3, 3], [2, 2], [1, 1]), {}),
                                           ((r(1, 2, 5, 5), [2, 2], [2, 2], [0, 0], [1, 1], True), {})],
    aten.avg_pool2d.default: [((r(1, 2, 6, 6), [2, 2], [2, 2]), {}),
                              ((r(1, 2, 6, 6), [3, 3], [1, 1], [1, 1], False, False), {})],
    aten.mean.dim: [((r(2, 3, 4), [-1], True), {}), ((r(1, 3, 4, 4), [2, 3], True), {})],
    aten.sum.dim_IntList: [((r(2, 3, 4), [1]), {})],
    aten.amax.default: [((r(2, 3, 4), [0, 2]), {})],
    aten.view.default: [((r(2, 6), [3, 4]), {})],
    aten._unsafe_view.default: [((r(2, 6), [12]), {})],
    aten.reshape.default: [((r(2, 6), [4, -1]), {})],
    aten.view_copy.default: [((r(2, 6), [2, 3, 2]), {})],
    aten.squeeze.dim: [((r(2, 1, 3), 1), {})],
    aten.squeeze.dims: [((r(1, 2, 1, 3), [0, 2]), {})],
    aten.squeeze.default: [((r(1, 2, 1),), {})],
    aten.unsqueeze.default: [((r(2, 3), 1), {})],
    aten.permute.default: [((r(2, 3, 4), [2, 0, 1]), {})],
    aten.permute_copy.default: [((r(2, 3, 4), [0, 2, 1]), {})],
    aten.t.default: [((r(2, 3),), {})],
    aten.transpose.int: [((r(2, 3, 4), 0, 2), {})],
    aten.expand.default: [((r(3, 1), [2, 3, 4]), {})],
    aten.expand_copy.default: [((r(1, 4), [3, 4]), {})],
    aten.slice.Tensor: [((r(4, 6), 1, 1, 5, 2), {}), ((r(4, 6), 0, 0, 9223372036854775807), {})],
    aten.slice_copy.Tensor: [((r(4, 6), 0, -3, None), {})],
    aten.select.int: [((r(4, 6), 1, -1), {})],
    aten.select_copy.int: [((r(4, 6), 0, 2), {})],
    aten.cat.default: [(([r(2, 3), r(2, 5)], 1), {}), (([r(2, 3), r(1, 3)], -2), {})],
    aten.split_with_sizes.default: [((r(6, 2), [2, 4]), {})],
    aten.split_with_sizes_copy.default: [((r(2, 6), [3, 3], 1), {})],
    aten.split.Tensor: [((r(7, 2), 3), {})],
    aten.split_copy.Tensor: [((r(2, 6), 2, -1), {})],
    aten.embedding.default: [((r(10, 4), ids(10, 2, 3)), {})],
    aten.index_select.default: [((r(5, 4), 1, ids(4, 3)), {})],
    aten._transformer_encoder_layer_fwd.default: [],  # built below from a real layer
    operator.getitem: [],  # every multi-result case above reads its result through it
}


def _encoder_layer_case(norm_first, activation):
    layer = torch.nn.TransformerEncoderLayer(16, 2, 32, batch_first=True, norm_first=norm_first,
                                             activation=activation).eval()
    a = layer.self_attn
    args = (r(2, 5, 16), 16, 2, a.in_proj_weight.detach(), a.in_proj_bias.detach(), a.out_proj.weight.detach(),
            a.out_proj.bias.detach(), activation == "gelu", norm_first, 1e-5, layer.norm1.weight.detach(),
            layer.norm1.bias.detach(), layer.norm2.weight.detach(), layer.norm2.bias.detach(),
            layer.linear1.weight.detach(), layer.linear1.bias.detach(), layer.linear2.weight.detach(),
            layer.linear2.bias.detach())
    return args, {}


CASES[aten._transformer_encoder_layer_fwd.default] = [_encoder_layer_case(False, "relu"),
                                                      _encoder_layer_case(True, "gelu")]


def _single_op_graph(target, args, kwargs):
    """A graph with `target` on placeholders for the tensor arguments; meta values
    from running the op; multi-result ops read result 0 through getitem."""
    graph = torch.fx.Graph()
    inputs = []

    def place(a):
        if isinstance(a, torch.Tensor):
            node = graph.placeholder(f"x{len(inputs)}")
            node.meta["val"] = a
            inputs.append(a)
            return node
        if isinstance(a, list) and a and isinstance(a[0], torch.Tensor):
            return [place(t) for t in a]
        return a

    node_args = tuple(place(a) for a in args)
    result = target(*args, **kwargs)
    node = graph.call_function(target, node_args, dict(kwargs))
    node.meta["val"] = result
    if isinstance(result, tuple | list):
        first = graph.call_function(operator.getitem, (node, 0))
        first.meta["val"] = result[0]
        graph.output((first,))
        return graph, inputs, result[0]
    graph.output((node,))
    return graph, inputs, result


def test_every_entry_has_a_case():
    assert set(TABLE) == set(CASES)


@pytest.mark.parametrize("target, index", [(t, i) for t, cases in CASES.items() for i in range(len(cases))],
                         ids=lambda v: str(v))
def test_entry_matches_pytorch(target, index):
    args, kwargs = CASES[target][index]
    graph, inputs, expected = _single_op_graph(target, args, kwargs)
    module = convert_graph(graph)  # checks the converted shape and dtype against `expected`
    (actual,) = execute(module, [to_numpy(t) for t in inputs]).results
    expected = to_numpy(expected)
    assert actual.dtype == expected.dtype
    mismatch = worst_mismatch("result", expected, actual)
    assert mismatch is None or mismatch.ratio <= 1, str(mismatch)


def test_shape_rule_disagreeing_with_the_trace_is_an_error():
    graph, _, _ = _single_op_graph(aten.mm.default, (r(4, 8), r(8, 5)), {})
    mm = next(n for n in graph.nodes if n.target is aten.mm.default)
    mm.meta["val"] = torch.empty(4, 6)
    with pytest.raises(ConversionError, match=r"node 'mm_default' \(aten.mm.default\): converted to tensor<4x5xf32>, "
                                              r"but PyTorch traced \[4, 6\]"):
        convert_graph(graph)


def test_refusals_name_the_reason():
    graph, _, _ = _single_op_graph(aten.native_batch_norm.default,
                                   (r(1, 4, 3, 3), r(4), r(4), r(4), pos(4), True, 0.1, 1e-5), {})
    bn = next(n for n in graph.nodes if n.target is aten.native_batch_norm.default)
    assert "training-mode batch norm" in refusal(bn)
    sin = torch.fx.Graph().call_function(aten.sin.default, ())
    assert refusal(sin) == "has no ge conversion"


def test_safe_softmax_under_a_mask_that_empties_rows_is_refused():
    graph, _, _ = _single_op_graph(aten._safe_softmax.default, (r(2, 4), -1), {})
    node = next(n for n in graph.nodes if n.target is aten._safe_softmax.default)
    x = node.args[0]
    causal = torch.full((4, 4), float("-inf")).triu(1)
    x.meta["constant"] = causal  # a causal mask: every row keeps its diagonal
    assert refusal(node) is None
    x.meta["constant"] = torch.full((2, 4), float("-inf"))
    assert "row of -inf" in refusal(node)
