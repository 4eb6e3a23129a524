"""Which template writes the kernel of which op.

A template module registers its function for the op classes it lowers with
`@kernel_for(...)`; importing the `templates` package imports every family, so
that `template_for` answers for all of them. The registry lives here, below the
families and beside them, so that the lowering (`convert.py`, `kernel_exists.py`)
imports the package downward and nothing imports back up into it.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.ir import Operation

from ..context import KernelTemplate

_TEMPLATES: dict[str, KernelTemplate] = {}


def kernel_for(*op_classes: type[Operation]) -> Callable[[KernelTemplate], KernelTemplate]:
    """Register a template for these op classes (by op name)."""

    def register(template: KernelTemplate) -> KernelTemplate:
        for cls in op_classes:
            _TEMPLATES[cls.name] = template
        return template

    return register


def template_for(op: Operation) -> KernelTemplate | None:
    """The template registered for `op`'s name, if any."""
    return _TEMPLATES.get(op.name)
