"""Greedy reduction of a failing fuzz graph to a minimal one that fails the same way.

A candidate is kept when onnxruntime still runs it and the failing path still
ends with the same `Outcome.signature` (status and message, numbers blanked).
Candidates, tried until none is kept:

* drop a graph output (one is always kept);
* drop a node: its outputs are read from one of its inputs of the same type
  when there is one, else from a new graph input (the rest of the graph keeps
  its shapes);
* cut a node's operand: a computed operand becomes a new graph input;
* shrink a graph input: one of its dims becomes 1 (kept only if the graph is
  still valid, which onnxruntime checks).

Dead nodes, initializers and inputs are pruned after each step. New inputs
are drawn from the same range as the fuzzer's, from a seeded generator.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Iterator

import numpy as np

from .fuzz_paths import Outcome, Path, oracle, run_graph

Graph = tuple[object, dict[str, np.ndarray]]  # (onnx.ModelProto, inputs by name)


def reduce_graph(model, inputs: dict[str, np.ndarray], path: Path, target: Outcome,
                 budget_s: float = 120.0, seed: int = 0) -> Graph:
    """The smallest graph found within `budget_s` whose `path` still fails as `target`."""
    rng = np.random.default_rng(seed)
    deadline = time.monotonic() + budget_s
    current = _pruned(model, inputs)

    def still_fails(candidate: Graph) -> bool:
        return _outcome(candidate, path).signature == target.signature

    progress = True
    while progress and time.monotonic() < deadline:
        progress = False
        for candidate in _candidates(current, rng):
            if time.monotonic() >= deadline:
                break
            candidate = _pruned(*candidate)
            if _is_graph(candidate) and _size(candidate) < _size(current) and still_fails(candidate):
                current, progress = candidate, True
                break
    return current


def _outcome(graph: Graph, path: Path) -> Outcome:
    model, inputs = graph
    try:
        expected = oracle(model, inputs)
    except Exception:  # noqa: BLE001 - an invalid candidate: not the same failure
        return Outcome("invalid")
    return run_graph(model, inputs, [path], expected=expected, judge_refusals=False)[path.name]


def _is_graph(graph: Graph) -> bool:
    """At least one node, and no output that is a graph input (nothing to compile)."""
    model, _ = graph
    inputs = {i.name for i in model.graph.input}
    return len(model.graph.node) > 0 and not any(o.name in inputs for o in model.graph.output)


def _size(graph: Graph) -> tuple[int, int, int]:
    model, inputs = graph
    return len(model.graph.node), len(model.graph.output), sum(a.size for a in inputs.values())


def _candidates(graph: Graph, rng: np.random.Generator) -> Iterator[Graph]:
    model, inputs = graph
    for i in range(len(model.graph.output)):
        if len(model.graph.output) > 1:
            m = copy.deepcopy(model)
            del m.graph.output[i]
            yield m, dict(inputs)
    types = _types(model)
    for index in reversed(range(len(model.graph.node))):
        yield _without_node(model, inputs, index, types, rng)
    for index, node in enumerate(model.graph.node):
        for name in dict.fromkeys(node.input):
            if name and name in types and name not in inputs and not _is_initializer(model, name):
                yield _cut(model, inputs, index, name, types, rng)
    for info in model.graph.input:
        for d, size in enumerate(inputs[info.name].shape):
            if size > 1:
                yield _shrunk(model, inputs, info.name, d, rng)


def _types(model) -> dict:
    from onnx import shape_inference

    inferred = shape_inference.infer_shapes(model)
    return {v.name: v for v in (*inferred.graph.value_info, *inferred.graph.input, *inferred.graph.output)}


def _is_initializer(model, name: str) -> bool:
    return any(t.name == name for t in model.graph.initializer)


def _random_input(info, rng: np.random.Generator) -> np.ndarray:
    from onnx import helper

    t = info.type.tensor_type
    shape = [d.dim_value for d in t.shape.dim]
    return rng.uniform(-2.0, 2.0, size=shape).astype(helper.tensor_dtype_to_np_dtype(t.elem_type))


def _without_node(model, inputs, index: int, types: dict, rng) -> Graph:
    m, inputs = copy.deepcopy(model), dict(inputs)
    node = m.graph.node[index]
    renames = {}
    for out in node.output:
        if out not in types:
            continue
        same = [i for i in node.input if i in types and types[i].type == types[out].type]
        if same:
            renames[out] = same[0]
        else:
            info = copy.deepcopy(types[out])
            m.graph.input.append(info)
            inputs[out] = _random_input(info, rng)
    del m.graph.node[index]
    _rename_uses(m, renames)
    return m, inputs


def _rename_uses(m, renames: dict[str, str]) -> None:
    for node in m.graph.node:
        for i, name in enumerate(node.input):
            if name in renames:
                node.input[i] = renames[name]
    for out in m.graph.output:
        if out.name in renames:
            target = renames[out.name]
            if any(o.name == target for o in m.graph.output) or any(i.name == target for i in m.graph.input):
                continue  # an output that is an input or another output: left dangling, pruned
            out.name = target


def _cut(model, inputs, index: int, name: str, types: dict, rng) -> Graph:
    m, inputs = copy.deepcopy(model), dict(inputs)
    fresh = f"{name}_in"
    info = copy.deepcopy(types[name])
    info.name = fresh
    m.graph.input.append(info)
    inputs[fresh] = _random_input(info, rng)
    node = m.graph.node[index]
    for i, n in enumerate(node.input):
        if n == name:
            node.input[i] = fresh
    return m, inputs


def _shrunk(model, inputs, name: str, dim: int, rng) -> Graph:
    m, inputs = copy.deepcopy(model), dict(inputs)
    info = next(i for i in m.graph.input if i.name == name)
    info.type.tensor_type.shape.dim[dim].dim_value = 1
    inputs[name] = _random_input(info, rng)
    for out in m.graph.output:  # their shapes may change: let inference say
        out.type.tensor_type.ClearField("shape")
    for v in list(m.graph.value_info):
        m.graph.value_info.remove(v)
    return _with_output_shapes(m), inputs


def _with_output_shapes(m):
    from onnx import shape_inference

    try:
        inferred = shape_inference.infer_shapes(m, strict_mode=True)
    except Exception:  # noqa: BLE001 - onnxruntime rejects the candidate later
        return m
    found = {v.name: v for v in (*inferred.graph.value_info, *inferred.graph.output)}
    for out in m.graph.output:
        if out.name in found:
            out.CopyFrom(found[out.name])
    return m


def _pruned(model, inputs) -> Graph:
    """Without the nodes no output needs, and the initializers and inputs nothing reads."""
    m = copy.deepcopy(model)
    needed = {o.name for o in m.graph.output}
    kept = []
    for node in reversed(m.graph.node):
        if any(o in needed for o in node.output):
            kept.append(node)
            needed.update(i for i in node.input if i)
    del m.graph.node[:]
    m.graph.node.extend(reversed(kept))
    for t in [t for t in m.graph.initializer if t.name not in needed]:
        m.graph.initializer.remove(t)
    for i in [i for i in m.graph.input if i.name not in needed]:
        m.graph.input.remove(i)
    # an output that is a graph input directly is no graph: dropped unless it is the last one
    for o in [o for o in m.graph.output if o.name in {i.name for i in m.graph.input}]:
        if len(m.graph.output) > 1:
            m.graph.output.remove(o)
    return m, {k: v for k, v in inputs.items() if k in {i.name for i in m.graph.input}}


def to_text(model) -> str:
    """The model in ONNX's textual syntax (`onnx.printer`)."""
    from onnx import printer

    return printer.to_text(model)


__all__ = ["reduce_graph", "to_text"]
