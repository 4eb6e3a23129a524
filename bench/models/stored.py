"""How the model set is committed: ONNX graphs with their large weights stripped,
each recorded well enough to regenerate it deterministically when loaded.

A float initializer of two or more dimensions above `STRIP_BYTES` is removed
from the graph; the model's `metadata_props` entry `gecomp.weights` (JSON) keeps,
per tensor, its name, element type, dims, a seed, its min and max, and the mean
and standard deviation of each row (each index of the first axis: a convolution's
output channel, a Gemm weight's output feature; float32, base64). `regenerate`
draws a standard normal sample from `numpy.random.default_rng(seed)`, makes each
row's sample mean 0 and standard deviation 1 exactly, scales and shifts it to the
row's recorded statistics and clips it to [min, max].

Why per row, exactly: the TorchScript exporter folds BatchNorm into the
convolution before it, so a folded weight's rows carry the per-channel scales
gamma / sqrt(var); and where BatchNorm stays a node, its running statistics were
measured on the original weights. With per-tensor statistics the regenerated
networks drifted far from their scale (the largest output of EfficientNet-B0
went from 0.57 as built to 369 and 661 for the two exports, ResNet-18's from 1.6
to 19 and 23); with exact per-row mean and variance each output channel keeps its
sum and its norm (ResNet-18 2.2 and 2.0, MobileNetV2 1.3 and 1.0 against 0.87,
EfficientNet-B0, whose squeeze-excitation gates amplify what is left, 30 and 5.8).
One-dimensional tensors (biases, norm weights, folded
BatchNorm offsets), small ones, integer and boolean ones and those holding a
non-finite value (masks of -inf) stay in the graph as exported.

The entry `gecomp.inputs` (JSON) says how to make the graph inputs: `normal`
(float, standard normal) or `integers` in [low, high) (token ids below the
vocabulary size), from a seed: `inputs(model)`.

Node metadata (`metadata_props` and `doc_string` of the nodes: the dynamo
exporter's stack traces and module names, three quarters of its files) is dropped
as well (`drop_node_metadata`): it takes no part in what the graph computes.

Both directions need only onnx and numpy, so CI runs the set without torch.
"""

from __future__ import annotations

import base64
import json

import numpy as np

STRIP_BYTES = 4096
"""Float initializers of rank >= 2 larger than this are stripped: the weight
matrices and convolution kernels."""

WEIGHTS_KEY = "gecomp.weights"
INPUTS_KEY = "gecomp.inputs"


def strip(model) -> int:
    """Remove `model`'s large float initializers in place, recording each in its
    metadata; returns how many were stripped."""
    from onnx import numpy_helper

    kept, specs = [], []
    for tensor in model.graph.initializer:
        array = numpy_helper.to_array(tensor)
        if not _strippable(array):
            kept.append(tensor)
            continue
        rows = array.reshape(array.shape[0], -1).astype(np.float64)
        specs.append({
            "name": tensor.name,
            "data_type": int(tensor.data_type),
            "dims": [int(d) for d in tensor.dims],
            "seed": len(specs),
            "min": float(array.min()),
            "max": float(array.max()),
            "row_mean": _encode(rows.mean(axis=1)),
            "row_std": _encode(rows.std(axis=1)),
        })
    del model.graph.initializer[:]
    model.graph.initializer.extend(kept)
    _set_metadata(model, WEIGHTS_KEY, json.dumps(specs, separators=(",", ":")))
    return len(specs)


def _encode(values: np.ndarray) -> str:
    return base64.b64encode(values.astype("<f4").tobytes()).decode("ascii")


def _decode(text: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(text), "<f4").astype(np.float64)


def drop_node_metadata(model) -> None:
    """Remove the nodes' metadata and doc strings, in place (functions' nodes too)."""
    graphs = [model.graph, *model.functions]
    for graph in graphs:
        for node in graph.node:
            del node.metadata_props[:]
            node.doc_string = ""


def _strippable(array: np.ndarray) -> bool:
    return (
        array.dtype.kind == "f"
        and array.ndim >= 2
        and array.nbytes > STRIP_BYTES
        and bool(np.isfinite(array).all())
    )


def regenerate(spec: dict) -> np.ndarray:
    """The array of one stripped tensor: same dtype, dims, range, and each row's
    mean and standard deviation."""
    from onnx import helper

    dims = spec["dims"]
    rng = np.random.default_rng(spec["seed"])
    sample = rng.standard_normal((dims[0], int(np.prod(dims[1:]))))
    sample -= sample.mean(axis=1, keepdims=True)
    spread = sample.std(axis=1, keepdims=True)
    sample /= np.where(spread > 0, spread, 1.0)
    rows = sample * _decode(spec["row_std"])[:, None] + _decode(spec["row_mean"])[:, None]
    dtype = helper.tensor_dtype_to_np_dtype(spec["data_type"])
    return np.clip(rows, spec["min"], spec["max"]).reshape(dims).astype(dtype)


def restore(model):
    """`model` with its stripped initializers regenerated (in place; returned)."""
    from onnx import numpy_helper

    specs = json.loads(metadata(model).get(WEIGHTS_KEY, "[]"))
    model.graph.initializer.extend(
        numpy_helper.from_array(regenerate(spec), spec["name"]) for spec in specs
    )
    return model


def describe_inputs(model, specs: list[dict]) -> None:
    """Record how to make the graph inputs (`inputs`): one dict per input,
    `{"kind": "normal"}` or `{"kind": "integers", "low": L, "high": H}`."""
    _set_metadata(model, INPUTS_KEY, json.dumps(specs, separators=(",", ":")))


def inputs(model, seed: int = 0) -> list[np.ndarray]:
    """The graph inputs of a committed model, as its `gecomp.inputs` entry says,
    from one generator seeded with `seed`."""
    from onnx import helper

    rng = np.random.default_rng(seed)
    initializers = {t.name for t in model.graph.initializer}
    graph_inputs = [i for i in model.graph.input if i.name not in initializers]
    specs = json.loads(metadata(model).get(INPUTS_KEY, "[]")) or [{"kind": "normal"}] * len(graph_inputs)
    arrays = []
    for info, spec in zip(graph_inputs, specs, strict=True):
        tensor_type = info.type.tensor_type
        shape = [d.dim_value for d in tensor_type.shape.dim]
        dtype = helper.tensor_dtype_to_np_dtype(tensor_type.elem_type)
        if spec["kind"] == "integers":
            arrays.append(rng.integers(spec["low"], spec["high"], shape).astype(dtype))
        else:
            arrays.append(rng.standard_normal(shape).astype(dtype))
    return arrays


def metadata(model) -> dict[str, str]:
    return {p.key: p.value for p in model.metadata_props}


def _set_metadata(model, key: str, value: str) -> None:
    for prop in model.metadata_props:
        if prop.key == key:
            prop.value = value
            return
    entry = model.metadata_props.add()
    entry.key, entry.value = key, value
