"""gecomp: a multi-level graph compiler for an Ascend-like NPU, built on xDSL.

The repository root is this package; its folders are the levels of the
architecture (see DESIGN.md): ``dialects`` (ge, fused, npu), ``transforms``
(passes inside a level), ``lowering`` (passes between levels), ``simulator``
(reference interpreter and the cycle-approximate NPU simulator), ``frontend``
(ONNX, Python builder) and ``tools`` (the command-line entry points).
"""

__version__ = "0.1.0"

import importlib
import importlib.abc
import importlib.machinery
import sys

# `gecomp.torch` is the torch.compile backend, whose code lives in
# frontend/torch (the `torch` extra). It is an alias, not a file at the root: a
# root `torch.py` would shadow the real torch for anyone running Python from the
# repository (`python -c` puts the working directory first on sys.path). The
# alias is resolved on first use, so `import gecomp` never imports torch.
_ALIASES = {f"{__name__}.torch": f"{__name__}.frontend.torch"}


class _AliasLoader(importlib.abc.Loader):
    """Imports the aliased module and hands back that same module object."""

    def __init__(self, target: str):
        self.target = target

    def create_module(self, spec):
        return importlib.import_module(self.target)

    def exec_module(self, module):
        pass


class _AliasFinder(importlib.abc.MetaPathFinder):
    """Finds `gecomp.torch` for `import gecomp.torch` / `from gecomp import torch`."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in _ALIASES:
            return None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(_ALIASES[fullname]))


if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
    sys.meta_path.append(_AliasFinder())


def __getattr__(name: str):
    """`gecomp.torch` as an attribute (`gecomp.torch.backend(...)` after `import gecomp`)."""
    if f"{__name__}.{name}" in _ALIASES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
