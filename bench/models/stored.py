"""How the model set is committed: ONNX graphs with their large weights stripped,
each recorded well enough to regenerate it deterministically when loaded.

A float initializer above `STRIP_BYTES` is removed from the graph; the model's
`metadata_props` entry `gecomp.weights` (JSON) keeps, per tensor, its name,
element type, dims, a seed and the statistics that keep the network's scale
(mean, std, min, max). `restore` draws a normal sample of that mean and std from
`numpy.random.default_rng(seed)`, clipped to [min, max] (so a non-negative
running variance stays non-negative), and puts the initializer back. Small
tensors, integer and boolean tensors, and tensors holding a non-finite value
(masks of -inf) stay in the graph as exported.

The entry `gecomp.inputs` (JSON) says how to make the graph inputs: `normal`
(float, standard normal) or `integers` in [low, high) (token ids below the
vocabulary size), from a seed: `inputs(model)`.

Node metadata (`metadata_props` and `doc_string` of the nodes: the dynamo
exporter's stack traces and module names, three quarters of its files) is dropped
as well (`drop_node_metadata`): it takes no part in what the graph computes.

Both directions need only onnx and numpy, so CI runs the set without torch.
"""

from __future__ import annotations

import json

import numpy as np

STRIP_BYTES = 4096
"""Float initializers larger than this are stripped (a few KB: biases and norm
weights of the small configurations stay, weight matrices go)."""

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
        values = array.astype(np.float64)
        specs.append({
            "name": tensor.name,
            "data_type": int(tensor.data_type),
            "dims": [int(d) for d in tensor.dims],
            "seed": len(specs),
            "mean": float(values.mean()),
            "std": float(values.std()),
            "min": float(values.min()),
            "max": float(values.max()),
        })
    del model.graph.initializer[:]
    model.graph.initializer.extend(kept)
    _set_metadata(model, WEIGHTS_KEY, json.dumps(specs, separators=(",", ":")))
    return len(specs)


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
        and array.nbytes > STRIP_BYTES
        and bool(np.isfinite(array).all())
    )


def regenerate(spec: dict) -> np.ndarray:
    """The array of one stripped tensor: same dtype, dims, mean, std and range."""
    from onnx import helper

    dtype = helper.tensor_dtype_to_np_dtype(spec["data_type"])
    rng = np.random.default_rng(spec["seed"])
    sample = rng.standard_normal(spec["dims"]) * spec["std"] + spec["mean"]
    return np.clip(sample, spec["min"], spec["max"]).astype(dtype)


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
