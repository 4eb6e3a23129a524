"""What onnx's version converter leaves out when it upgrades an old model.

`onnx.version_converter` has no PRelu 6 -> 7 adapter. Before opset 7, PRelu's
slope was per channel: the 1-D slope of C values that PyTorch and Caffe2
export applies along axis 1 of X (N, C, ...). From opset 7 on the slope
broadcasts numpy's way, against X's trailing axes, so the same slope would
meet the last axis instead. Before converting, such a slope (an initializer)
is reshaped to (C, 1, ..., 1), which means the same thing in both opsets.
"""

from __future__ import annotations


def per_channel_prelu_slopes(proto, opset: int):
    """`proto` (default-domain `opset` below 7) with every PRelu's 1-D
    initializer slope of X's channel count reshaped to (C, 1, ..., 1); `proto`
    itself if there is none."""
    import onnx

    if opset >= 7:
        return proto
    initializers = {t.name: t for t in proto.graph.initializer}
    nodes = [n for n in proto.graph.node if n.op_type == "PRelu" and n.domain in ("", "ai.onnx")
             and len(n.input) == 2 and n.input[1] in initializers
             and len(initializers[n.input[1]].dims) == 1 and initializers[n.input[1]].dims[0] > 1]
    if not nodes:
        return proto
    ranks = _ranks(onnx, proto)
    proto = _copy(proto)
    initializers = {t.name: t for t in proto.graph.initializer}
    inputs = {i.name: i for i in proto.graph.input}
    for node in nodes:
        rank = ranks.get(node.input[0])
        slope = initializers[node.input[1]]
        if rank is None or rank <= 2 or ranks.get(node.input[1], 1) != 1:
            continue
        dims = [slope.dims[0], *([1] * (rank - 2))]
        del slope.dims[:]
        slope.dims.extend(dims)
        declared = inputs.get(slope.name)
        if declared is not None and declared.type.HasField("tensor_type"):
            shape = declared.type.tensor_type.shape
            del shape.dim[:]
            for d in dims:
                shape.dim.add().dim_value = d
        ranks[node.input[1]] = len(dims)
    return proto


def _ranks(onnx, proto) -> dict[str, int]:
    """name -> rank of every value whose rank onnx's shape inference knows."""
    try:
        inferred = onnx.shape_inference.infer_shapes(proto)
    except Exception:  # noqa: BLE001 - best effort: a slope of unknown X stays as it is
        inferred = proto
    graph = inferred.graph
    ranks = {t.name: len(t.dims) for t in graph.initializer}
    for info in [*graph.input, *graph.value_info, *graph.output]:
        if info.type.HasField("tensor_type") and info.type.tensor_type.HasField("shape"):
            ranks[info.name] = len(info.type.tensor_type.shape.dim)
    return ranks


def _copy(message):
    copy = type(message)()
    copy.CopyFrom(message)
    return copy
