"""What a run can allocate: every tensor of a module lives in host memory as a numpy
array (the reference interpreter's values, the simulator's GM), so a type such as
`tensor<100000000000xf32>` is refused up front, naming the op and the bytes it
would need, instead of failing deep inside numpy with a MemoryError (or swapping the
machine to a halt).

The limit is a quarter of the machine's physical memory per tensor: a run holds
several live tensors and their compute copies at once.
"""

from __future__ import annotations

import math
import os

from xdsl.dialects import func
from xdsl.dialects.builtin import MemRefType, ModuleOp, TensorType

from ..core import dtypes
from ..core.diagnostics import CompileError


def tensor_limit_bytes() -> int:
    """The largest tensor a run may allocate on this machine."""
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        physical = 16 << 30
    return physical // 4


def _bytes_of(type_) -> int | None:
    if not isinstance(type_, TensorType | MemRefType):
        return None
    if not dtypes.is_supported(type_.element_type) or any(d < 0 for d in type_.get_shape()):
        return None
    return math.prod(type_.get_shape()) * dtypes.byte_width(type_.element_type)


def _gib(n: int) -> str:
    return f"{n / (1 << 30):.1f} GiB"


def check_allocatable(module: ModuleOp, limit: int | None = None) -> None:
    """Refuse, before allocating anything, a module holding a tensor over `limit` bytes."""
    limit = tensor_limit_bytes() if limit is None else limit

    def refuse(what: str, type_, size: int, where) -> CompileError:
        return CompileError(
            f"{what} {type_} needs {size} bytes ({_gib(size)}), more than a run can allocate here "
            f"({_gib(limit)} per tensor)",
            where,
        )

    for op in module.walk():
        if isinstance(op, func.FuncOp):
            for i, arg in enumerate(op.args):
                size = _bytes_of(arg.type)
                if size is not None and size > limit:
                    raise refuse(f"argument #{i} of @{op.sym_name.data}:", arg.type, size, op)
        for result in op.results:
            size = _bytes_of(result.type)
            if size is not None and size > limit:
                raise refuse(f"'{op.name}' op result", result.type, size, op)
