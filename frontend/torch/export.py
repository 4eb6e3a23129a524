"""`export_module`: the ge module the backend would compile, for `ge-opt` / `ge-sim`.

The model is captured exactly as `torch.compile` with the backend captures it
(dynamo, one graph: `fullgraph=True`), then retraced, folded and converted the
same way, so the command-line tools see the graph the backend runs. Every op
must convert: an export has no eager PyTorch to fall back to.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from xdsl.dialects.builtin import ModuleOp
from xdsl.printer import Printer

from ...core.diagnostics import CompileError
from .capture import dynamo_settings, fold_constants, static_inputs, trace_aten
from .convert import convert_graph
from .partition import mark_constant_inputs, split


def export_module(model: torch.nn.Module, example_inputs: Sequence[torch.Tensor], path: str | None = None,
                  precision: str | None = None, name: str = "torch") -> ModuleOp:
    """The ge module of `model` at the shapes of `example_inputs` (arguments
    `input0..`, results `result0..`), written to `path` as `.mlir` if given."""
    modules: list[ModuleOp] = []

    def capture(gm, inputs):
        traced = trace_aten(gm, inputs)
        fold_constants(traced, inputs, static_inputs(gm, inputs))
        parts = split(traced, strict=True)
        if len(parts.partitions) != 1:
            raise CompileError(f"the graph splits into {len(parts.partitions)} parts; an export needs one")
        mark_constant_inputs(parts.module, parts.partitions[0])
        modules.append(convert_graph(getattr(parts.module, parts.partitions[0]).graph, name, precision))
        return gm.forward

    with torch.no_grad(), dynamo_settings():
        torch.compile(model, backend=capture, fullgraph=True, dynamic=False)(*example_inputs)
    if not modules:
        raise CompileError("dynamo captured no graph (the model computes nothing from its inputs)")
    module = modules[-1]
    if path is not None:
        with open(path, "w", encoding="utf-8") as f:
            Printer(stream=f).print_op(module)
            f.write("\n")
    return module
