"""From the FX graph dynamo hands a backend to an ATen graph of static shapes.

PyTorch's own machinery does the work: `make_fx` retraces the dynamo graph on
fake tensors of the call's concrete shapes (so one graph per shape: the gears),
through `torch.func.functionalize` (no in-place ops) and the core ATen
decompositions. Two decompositions are left out because ge has the op they take
apart: `_safe_softmax` (softmax) and the encoder layer's fast path has none to
begin with.

The retrace runs as AOT autograd and `torch.export` run theirs: under the Python
dispatcher, so ops whose decomposition PyTorch writes in Python for every
backend (`aten.lstm`, `gru`, `rnn_tanh`, `rnn_relu`: torch._decomp's step by step
cells of mm, sigmoid and tanh) take it, instead of their C++ composites, whose
in-place gate activations functionalisation does not see. And it runs with
oneDNN off (`torch.backends.mkldnn.enabled`, restored after): that Python LSTM
decomposition picks oneDNN's whole-layer `mkldnn_rnn_layer` kernel when oneDNN is
on and the tensors are on the CPU, a choice for the host CPU, not for the NPU
the graph is compiled for. Both are scoped to the retrace; the user's settings
are untouched.

The table is PyTorch's core ATen decompositions of ops that have a kernel
(`_core_aten_decompositions_post_autograd`, built once per process). The public
`core_aten_decompositions()` adds an entry for every CompositeImplicitAutograd
op of every namespace, which takes the better part of a second to collect; those
ops need no entry here, because `make_fx` traces below autograd, where a
composite op runs its implicit decomposition anyway (the traced graphs are the
same).

Then everything that does not depend on a graph input is computed once, in
PyTorch, and stored on the node (`node.meta["constant"]`): parameters and buffers
(dynamo passes them as arguments; inference treats them as constants), and what
is computed from them or from sizes alone (arange, full, rotary tables, causal
masks, transposed weights). The ge module sees those as `ge.const`.
"""

from __future__ import annotations

import contextlib
import copy
import functools
from collections.abc import Sequence

import torch
from torch._decomp import _core_aten_decompositions_post_autograd
from torch._dispatch.python import enable_python_dispatcher
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx import GraphModule, Node
from torch.fx._lazy_graph_module import _use_lazy_graph_module
from torch.fx.node import map_arg
from torch.fx.experimental.proxy_tensor import make_fx

_KEPT_WHOLE = (torch.ops.aten._safe_softmax.default,)


@functools.cache
def decompositions() -> dict:
    table = dict(_core_aten_decompositions_post_autograd())
    for op in _KEPT_WHOLE:
        table.pop(op, None)
    return table


DYNAMO_SETTINGS = {
    # without it dynamo breaks the graph at every nn.LSTM / nn.GRU / nn.RNN and runs
    # the module in eager PyTorch; with it the module is one `torch.lstm` (...) node,
    # which the retrace decomposes into its cells
    "allow_rnn": True,
}


def dynamo_settings() -> contextlib.AbstractContextManager:
    """`DYNAMO_SETTINGS` for the duration of a `with` block: where gecomp makes the
    `torch.compile` call itself (`export_module`)."""
    return torch._dynamo.config.patch(**DYNAMO_SETTINGS)


def apply_dynamo_settings() -> None:
    """`DYNAMO_SETTINGS` for the rest of the process: what a backend does when it is
    made. A `with` block cannot be had there: the capture happens at the compiled
    model's first call, after `torch.compile` has returned, and `torch.compile`
    gives a custom backend no context of its own around its captures (it wraps
    the backend and drops the `backend_ctx_ctor` that `torch._dynamo.optimize`
    honours). For other backends the setting means what it means for this one:
    recurrent modules are captured (inductor runs them) instead of breaking
    the graph."""
    for name, value in DYNAMO_SETTINGS.items():
        setattr(torch._dynamo.config, name, value)


def static_inputs(gm: GraphModule, example_inputs: Sequence) -> set[int]:
    """The positions of the dynamo graph's arguments that are parameters or buffers
    of the module (dynamo marks their placeholders static), not user inputs."""
    static = set()
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for i, (node, value) in enumerate(zip(placeholders, example_inputs)):
        if isinstance(value, torch.nn.Parameter) or _is_module_state(node):
            static.add(i)
    return static


def _is_module_state(node: Node) -> bool:
    grapharg = node.meta.get("grapharg")
    source = getattr(grapharg, "source", None)
    while source is not None:
        if type(source).__name__ in ("UnspecializedParamBufferSource", "ParamBufferSource", "NNModuleSource",
                                     "UnspecializedNNModuleSource", "UnspecializedBuiltinNNModuleSource"):
            return True
        source = getattr(source, "base", None)
    return False


def scalar_reads(gm: torch.nn.Module, args: Sequence, positions: Sequence[int] | None = None) -> dict[int, float]:
    """Arguments that are 0-d tensors the graph only reads with `.item()`, by
    position, with the value each holds in `args`. With `dynamic=True` some
    versions of dynamo (2.13) pass a module's float attributes this way
    (LayerNorm's eps): a fake tensor cannot give that value, so the retrace takes
    it from the call, and a compiled graph is keyed on it. `positions`: the
    graph's `scalar_positions`, where the caller keeps them (every call reads them)."""
    if positions is None:
        positions = scalar_positions(gm)
    return {i: args[i].item() for i in positions
            if i < len(args) and isinstance(args[i], torch.Tensor) and args[i].dim() == 0}


def scalar_positions(gm: torch.nn.Module) -> list[int]:
    """The positions of the graph's arguments it only reads with `.item()`."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"] if isinstance(gm, GraphModule) else []
    return [i for i, node in enumerate(placeholders)
            if node.users and all(u.op == "call_method" and u.target == "item" for u in node.users)]


def _with_scalars_read(gm: GraphModule, scalars: dict[int, float]) -> GraphModule:
    """A copy of `gm` whose `.item()` reads of the arguments in `scalars` are their values."""
    if not scalars:
        return gm
    graph = copy.deepcopy(gm.graph)
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    for i, value in scalars.items():
        for read in list(placeholders[i].users):
            for use in list(read.users):
                use.args = map_arg(use.args, lambda n, read=read, value=value: value if n is read else n)
                use.kwargs = map_arg(use.kwargs, lambda n, read=read, value=value: value if n is read else n)
            graph.erase_node(read)
    return GraphModule(gm, graph)


def trace_aten(gm: torch.nn.Module, args: Sequence) -> GraphModule:
    """`gm` retraced to core ATen at the shapes of `args` (tensors are only looked at
    for their shape and dtype, but for the scalars the graph reads, `scalar_reads`)."""
    gm = _with_scalars_read(gm, scalar_reads(gm, args))
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    fakes = [mode.from_tensor(a, static_shapes=True) if isinstance(a, torch.Tensor) else a for a in args]
    # a lazy GraphModule: its Python code is generated when first run or read, not at
    # every recompile() (folding and splitting change the graph, and the ge
    # conversion never runs it: 3 code generations of the whole graph, a quarter
    # of the time after the retrace, as inductor avoids them)
    with torch.no_grad(), enable_python_dispatcher(), _device_independent_decompositions(), mode, \
            _use_lazy_graph_module(True):
        traced = make_fx(torch.func.functionalize(gm, remove="mutations"), decomposition_table=decompositions())(*fakes)
    return traced


@contextlib.contextmanager
def _device_independent_decompositions():
    """oneDNN off while tracing: decompositions that choose a CPU kernel when it is
    on (the LSTM's `mkldnn_rnn_layer`) take their device-independent form."""
    enabled = torch.backends.mkldnn.enabled
    torch.backends.mkldnn.enabled = False
    try:
        yield
    finally:
        torch.backends.mkldnn.enabled = enabled


def fold_constants(traced: GraphModule, args: Sequence, static: set[int]) -> int:
    """Computes every node that depends on no user input; each such value a
    computed node uses becomes a `get_attr` node holding it (`meta["constant"]`),
    and the nodes that only fed constants are erased. Returns how many nodes were
    folded."""
    values: dict[Node, torch.Tensor] = {}
    placeholders = [n for n in traced.graph.nodes if n.op == "placeholder"]
    for i in static:
        values[placeholders[i]] = args[i]
    folded = 0
    for node in traced.graph.nodes:
        if node.op == "call_function" and _foldable(node, values):
            node_args = torch.fx.node.map_arg(node.args, lambda n: values[n])
            node_kwargs = torch.fx.node.map_arg(node.kwargs, lambda n: values[n])
            with torch.no_grad():
                values[node] = node.target(*node_args, **node_kwargs)
            folded += 1
    anchor = placeholders[-1] if placeholders else None
    for node, value in list(values.items()):
        if isinstance(value, torch.Tensor) and any(u not in values for u in node.users):
            anchor = _replace_by_constant(traced, node, value, anchor, values)
    traced.graph.eliminate_dead_code()
    traced.recompile()
    return folded


def _foldable(node: Node, values: dict) -> bool:
    return all(n in values for n in node.all_input_nodes) and not getattr(
        node.target, "_nondeterministic_seeded", False)


def _replace_by_constant(traced: GraphModule, node: Node, value: torch.Tensor, anchor: Node | None,
                         values: dict) -> Node:
    """Uses of `node` outside the constants read `value` from an attribute instead
    (a `get_attr` placed after `anchor`, the graph's arguments first)."""
    name = f"_gecomp_constant_{node.name}"
    traced.register_buffer(name, value.detach(), persistent=False)
    graph = traced.graph
    with graph.inserting_after(anchor) if anchor is not None else graph.inserting_before(None):
        constant = graph.get_attr(name)
    constant.meta.update(val=node.meta.get("val"), constant=value)
    node.replace_all_uses_with(constant, delete_user_cb=lambda user: user not in values)
    return constant
