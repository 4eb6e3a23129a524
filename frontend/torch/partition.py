"""Splitting a captured ATen graph where ge cannot follow.

The nodes the table converts are grouped by PyTorch's own partitioner
(`CapabilityBasedPartitioner`: maximal groups with no cycle through an outside
node) into submodules `fused_N`; the others stay in the outer graph and run in
eager PyTorch between them, each reported once by a one-line warning naming
the op (`strict`: an error instead).
"""

from __future__ import annotations

import operator
import warnings
from dataclasses import dataclass, field


from torch.fx import Graph, GraphModule, Node
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase
from torch.fx.passes.utils.fuser_utils import fuse_by_partitions

from ...core.diagnostics import CompileError
from .aten_table import refusal
from .convert import _op_name


class FallbackWarning(UserWarning):
    """An op that runs in eager PyTorch instead of on the NPU."""


@dataclass
class Split:
    """The outer graph (partitions as `fused_N` submodules) and the refused ops."""

    module: GraphModule
    partitions: list[str]
    fallbacks: dict[str, str] = field(default_factory=dict)  # op -> why (first node's reason)


class _Convertible(OperatorSupportBase):
    def __init__(self):
        self.refused: dict[Node, str] = {}

    def is_node_supported(self, submodules, node: Node) -> bool:
        if node.op != "call_function":
            return False
        if node not in self.refused:
            why = refusal(node)
            if why is None and node.target is operator.getitem and isinstance(node.args[0], Node):
                producer = node.args[0]
                why = None if self.is_node_supported(submodules, producer) else "takes apart an eager op's results"
            self.refused[node] = why
        return self.refused[node] is None


def split(traced: GraphModule, strict: bool = False) -> Split:
    """`traced` with its convertible nodes grouped into `fused_N` submodules."""
    support = _Convertible()
    fallbacks: dict[str, str] = {}
    for node in traced.graph.nodes:
        if node.op == "call_function" and not support.is_node_supported({}, node):
            if node.target is operator.getitem:
                continue
            name = _op_name(node)
            message = f"{name} (node '{node.name}') {support.refused[node]}"
            if strict:
                raise CompileError(f"gecomp.torch: {message} (strict=True: nothing falls back to eager PyTorch)")
            fallbacks.setdefault(name, message)
    for message in fallbacks.values():
        warnings.warn(f"gecomp.torch: {message}; it runs in eager PyTorch", FallbackWarning, stacklevel=2)
    if not fallbacks:
        whole = _whole_graph(traced)
        if whole is not None:
            return whole
    partitioner = CapabilityBasedPartitioner(traced, support, allows_single_node_partition=True)
    partitions = [p for p in partitioner.propose_partitions() if _computes(p.nodes)]
    module = fuse_by_partitions(traced, [p.nodes for p in partitions], prefix="fused_", always_return_tuple=True)
    names = [n.target for n in module.graph.nodes if n.op == "call_module" and n.target.startswith("fused_")]
    return Split(module, names, fallbacks)


def _whole_graph(traced: GraphModule) -> Split | None:
    """When every node converts, the one partition is the graph itself: an outer
    graph calling it as `fused_0` with the arguments it uses and returning its
    results, what the partitioner would make, without its search for groups and
    the copy of every node (a third of the capture time of a BERT). None where
    the graph returns something other than computed values (then the
    partitioner decides)."""
    graph = traced.graph
    output = next(n for n in graph.nodes if n.op == "output")
    results = output.args[0]
    flat = list(results) if isinstance(results, list | tuple) else [results]
    if not flat or not all(isinstance(r, Node) and r.op == "call_function" for r in flat):
        return None
    outer = Graph()
    arguments = []
    for node in [n for n in graph.nodes if n.op == "placeholder"]:
        kept = outer.placeholder(node.name)
        kept.meta = dict(node.meta)
        if node.users:
            arguments.append(kept)
        else:
            graph.erase_node(node)
    call = outer.call_module("fused_0", tuple(arguments))
    values = [outer.call_function(operator.getitem, (call, i)) for i in range(len(flat))]
    for value, result in zip(values, flat):
        value.meta = dict(result.meta)
    outer.output(type(results)(values) if isinstance(results, list | tuple) else values[0])
    output.args = (tuple(flat),)
    traced.recompile()
    return Split(GraphModule({"fused_0": traced}, outer), ["fused_0"], {})


def _computes(nodes) -> bool:
    """A partition worth a module: not only getitems of nothing."""
    return any(n.target is not operator.getitem for n in nodes)


def partition_inputs(outer: GraphModule, name: str) -> list[Node]:
    """The outer graph's values passed to submodule `name`, in argument order."""
    (call,) = [n for n in outer.graph.nodes if n.op == "call_module" and n.target == name]
    return list(call.args)


def mark_constant_inputs(outer: GraphModule, name: str) -> None:
    """The submodule's placeholders fed by constants carry their value (and every
    placeholder the traced meta value) so conversion makes them `ge.const`s."""
    sub = getattr(outer, name)
    placeholders = [n for n in sub.graph.nodes if n.op == "placeholder"]
    for placeholder, source in zip(placeholders, partition_inputs(outer, name)):
        placeholder.meta["val"] = source.meta.get("val")
        if "constant" in source.meta:
            placeholder.meta["constant"] = source.meta["constant"]


