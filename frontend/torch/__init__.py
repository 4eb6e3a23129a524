"""PyTorch in directly: a `torch.compile` backend for the NPU simulator.

    import torch, gecomp.frontend.torch as gtorch     # or: from gecomp import torch as gtorch
    model = torch.compile(model, backend=gtorch.backend(hw="ascend910", precision="f16"))
    y = model(x)                     # torch tensors computed by the simulated NPU
    print(gtorch.last_report())      # cycles, time_us, kernels of that call

* `capture.py`: dynamo's graph retraced to core ATen at static shapes with
  PyTorch's decompositions; parameters and what depends on nothing else folded;
* `aten_table.py`: the one table from ATen ops to ge ops;
* `convert.py`: an ATen graph -> a ge module, each node checked against its trace;
* `partition.py`: what ge cannot run stays in eager PyTorch, between parts;
* `backend.py`: the backend, a compiled module per shape (gears), the reports;
* `export.py`: `export_module`, the same graph as `.mlir` for ge-opt / ge-sim.

This package is the only place gecomp imports torch (the `torch` extra).
"""

import sys

from .backend import Backend, Report, backend, last_report
from .convert import ConversionError
from .export import export_module
from .partition import FallbackWarning

__all__ = ["backend", "Backend", "Report", "last_report", "export_module", "ConversionError", "FallbackWarning"]

sys.modules.setdefault(__name__.replace(".frontend.torch", ".torch"), sys.modules[__name__])
