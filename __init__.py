"""gecomp: a multi-level graph compiler for an Ascend-like NPU, built on xDSL.

The repository root is this package; its folders are the levels of the
architecture (see DESIGN.md): ``dialects`` (ge, fused, npu), ``transforms``
(passes inside a level), ``lowering`` (passes between levels), ``simulator``
(reference interpreter and the cycle-approximate NPU simulator), ``frontend``
(ONNX, Python builder) and ``tools`` (the command-line entry points).
"""

__version__ = "0.1.0"


def __getattr__(name: str):
    """`gecomp.torch` is the torch.compile backend (frontend/torch, the `torch`
    extra), imported on first use so `import gecomp` never imports torch."""
    if name == "torch":
        from .frontend import torch as backend_package

        return backend_package
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
