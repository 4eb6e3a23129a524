"""An ATen FX graph (one partition of a captured graph) -> a ge module.

Nodes are converted in order through `aten_table.TABLE`; each result is checked
against the shape and dtype PyTorch traced for it (`node.meta["val"]`), so a
converter that disagrees with PyTorch stops at that node with both types named.
Placeholders are the module's arguments unless the capture knows their value
(parameters, buffers, folded constants: `node.meta["constant"]`), which become
`ge.const`s: weights are constants of an inference graph.

`precision` is the element type floats are computed in (None: as traced). With
`f16`, float32 arguments, constants and results are f16 in the module; the
backend converts tensors at the boundary.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import torch
from torch.fx import Graph, Node
from xdsl.dialects.builtin import ModuleOp

from ...core.diagnostics import CompileError, SourceLocation
from .. import ops
from ..builder import BuildError, GraphBuilder, Tensor, element_type
from .aten_table import TABLE, refusal


class ConversionError(CompileError):
    """A node PyTorch traced that cannot be expressed in ge as it is."""


def numpy_dtype(dtype: torch.dtype, precision: str | None = None) -> np.dtype:
    """The numpy dtype a torch dtype is computed in (floats in `precision` if given)."""
    if dtype.is_floating_point and precision is not None:
        return np.dtype(element_type_name(precision))
    if dtype == torch.bfloat16:
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return torch.empty((), dtype=dtype).numpy().dtype


def element_type_name(precision: str) -> str:
    names = {"f16": "float16", "fp16": "float16", "float16": "float16", "f32": "float32", "fp32": "float32",
             "float32": "float32"}
    if precision not in names:
        raise CompileError(f"unknown precision {precision!r}: expected one of f16, f32")
    return names[precision]


def to_numpy(t: torch.Tensor, precision: str | None = None) -> np.ndarray:
    """A tensor's values in the dtype the module computes them in."""
    t = t.detach().cpu()
    target = numpy_dtype(t.dtype, precision)
    if t.dtype == torch.bfloat16:
        return t.float().numpy().astype(target)
    return t.numpy().astype(target, copy=False)


class Conversion:
    """Converts one FX graph. `c` in the table's converters."""

    def __init__(self, graph: Graph, name: str = "torch", precision: str | None = None):
        self.graph = graph
        self.precision = precision
        self.g = GraphBuilder(name)
        self.values: dict[Node, object] = {}
        self.node: Node | None = None
        self.g_inputs: list[Tensor] = []

    # ---- driving -----------------------------------------------------------------------------

    def run(self) -> ModuleOp:
        for node in self.graph.nodes:
            self.node = node
            with self.g.located(_location(node)):
                if node.op == "placeholder":
                    self.values[node] = self._placeholder(node)
                elif node.op == "get_attr":
                    self.values[node] = self._constant(node, node.meta["constant"])
                elif node.op == "call_function":
                    self.values[node] = self._call(node)
                elif node.op == "output":
                    self._outputs(node)
                else:
                    raise self.fail(f"'{node.op}' nodes are not converted")
        return self.g.build()

    def _placeholder(self, node: Node) -> Tensor:
        if "constant" in node.meta:
            return self._constant(node, node.meta["constant"])
        val = node.meta["val"]
        name = f"input{len(self.g_inputs)}"
        tensor = self.g.input(list(val.shape), dtype=numpy_dtype(val.dtype, self.precision), name=name)
        self.g_inputs.append(tensor)
        return tensor

    def _constant(self, node: Node, value: torch.Tensor) -> Tensor:
        return self.g.const(to_numpy(value, self.precision), name=node.name)

    def _call(self, node: Node):
        why = refusal(node)
        if why is not None:
            raise self.fail(why)
        args = [self._resolve(a) for a in node.args]
        kwargs = {k: self._resolve(v) for k, v in node.kwargs.items()}
        try:
            result = TABLE[node.target].convert(self, *args, **kwargs)
        except BuildError as e:
            raise self.fail(e.message) from None
        self._check(node, result)
        return result

    def _resolve(self, arg):
        if isinstance(arg, Node):
            return self.values[arg]
        if isinstance(arg, list | tuple):
            return type(arg)(self._resolve(a) for a in arg)
        return arg

    def _outputs(self, node: Node) -> None:
        results = node.args[0] if isinstance(node.args[0], list | tuple) else [node.args[0]]
        for i, r in enumerate(results):
            if not isinstance(r, Node):
                raise self.fail(f"output #{i} is not a tensor ({r!r})")
            value = self.values[r]
            if "constant" in r.meta or r.op == "placeholder" and not isinstance(value, Tensor):
                value = self._constant(r, r.meta["constant"])
            self.g.output(value, name=f"result{i}")

    # ---- checking against the trace -----------------------------------------------------------

    def _check(self, node: Node, result) -> None:
        """The converted result has the shape and dtype PyTorch traced."""
        traced = node.meta.get("val")
        if isinstance(traced, torch.Tensor):
            self._check_one(node, result, traced)
        elif isinstance(traced, list | tuple):
            produced = result if isinstance(result, list | tuple) else [result]
            if len(produced) != len(traced):
                raise self.fail(f"converted to {len(produced)} results, PyTorch traced {len(traced)}")
            for r, t in zip(produced, traced):
                if r is not None and isinstance(t, torch.Tensor):
                    self._check_one(node, r, t)

    def _check_one(self, node: Node, result, traced: torch.Tensor) -> None:
        if not isinstance(result, Tensor):
            raise self.fail(f"converted to {result!r}, PyTorch traced a tensor")
        want_shape = tuple(int(d) for d in traced.shape)
        want_dtype = element_type(numpy_dtype(traced.dtype, self.precision))
        if result.shape != want_shape or result.dtype != want_dtype:
            raise self.fail(f"converted to {result.type}, but PyTorch traced "
                            f"{list(want_shape)} {traced.dtype} (the table's shape rule is wrong)")

    def fail(self, message: str) -> ConversionError:
        node = self.node
        where = f"node '{node.name}' ({_op_name(node)})" if node is not None else "graph"
        return ConversionError(f"{where}: {message}", _location(node) if node is not None else None)

    # ---- helpers for the table ----------------------------------------------------------------

    def traced(self) -> torch.Tensor:
        """The node's (first) result as PyTorch traced it."""
        val = self.node.meta["val"]
        return val[0] if isinstance(val, list | tuple) else val

    def result_shape(self) -> tuple[int, ...]:
        return tuple(int(d) for d in self.traced().shape)

    def result_element_type(self):
        return element_type(numpy_dtype(self.traced().dtype, self.precision))

    def scalar(self, value, dtype=None) -> Tensor:
        """A rank-0 constant of the node's result element type."""
        target = dtype if dtype is not None else self.result_element_type()
        from ...core import dtypes

        return self.g.const(np.asarray(value, dtype=dtypes.to_numpy_dtype(target)), dtype=target)

    def operands(self, *values) -> list[Tensor]:
        """Operands in the node's result element type (PyTorch's type promotion):
        tensors of another type cast, Python numbers as rank-0 constants."""
        target = self.result_element_type()
        out = []
        for v in values:
            if isinstance(v, Tensor):
                out.append(v if v.dtype == target else ops.cast(v, target))
            elif isinstance(v, bool | int | float):
                out.append(self.scalar(v, target))
            else:
                raise self.fail(f"operand {v!r} is not a tensor or a number")
        return out

    def ones_if_none(self, t, shape: Sequence[int]):
        return t if t is not None else self.scalar(1.0) if not shape else self._filled(1.0, shape)

    def zeros_if_none(self, t, shape: Sequence[int]):
        return t if t is not None else self._filled(0.0, shape)

    def _filled(self, value: float, shape: Sequence[int]) -> Tensor:
        from ...core import dtypes

        dtype = self.result_element_type()
        return self.g.const(np.full([int(d) for d in shape], value, dtype=dtypes.to_numpy_dtype(dtype)), dtype=dtype)


def convert_graph(graph: Graph, name: str = "torch", precision: str | None = None) -> ModuleOp:
    """The ge module computing `graph` (every node must have a table entry)."""
    return Conversion(graph, name, precision).run()


def _op_name(node: Node) -> str:
    target = node.target
    return str(target) if hasattr(target, "_schema") else getattr(target, "__name__", str(target))


_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


def _location(node: Node) -> SourceLocation | None:
    """The user's line that made the node (the last frame of its recorded stack)."""
    trace = node.meta.get("stack_trace")
    if not trace:
        return None
    frames = _FRAME.findall(trace)
    if not frames:
        return None
    file, line = frames[-1]
    return SourceLocation(file, int(line), 1)
