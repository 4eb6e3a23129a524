"""Compile once what is the same: kernels, and the scratch builds that ask whether
a kernel exists, are keyed on everything that determines them, so that a model
of twelve identical layers lowers each distinct kernel once.

**The key** (`kernel_key`) of an op's kernel holds:

* the op's structure: its name, result types, attributes and properties, and
  its regions (a `fused.group`'s body) op by op, each value named by its place
  in the op, never by its identity;
* per operand: its type, which earlier operand is the same value (a kernel may
  read `x * x` once), and whether a `ge.const` computes it, with its single
  value when the constant is a splat or has one element (`GmTensor.splat`, which
  templates fold into the kernel as an immediate; `GmTensor.is_constant`, which
  lets npu-prefetch-constants move a weight's first load);
* the caller's part: the GM memref types of the kernel's parameters, which
  results it writes (an unread droppable result gets none), the hardware preset
  and whether the kernel follows a barrier of a merged kernel
  (`KernelContext.after_a_barrier`).

**Why that is sufficient**: a template (`templates/registry.kernel_for`) sees the op, its
`GmTensor`s and a `KernelContext`; the op and the tensors' types, formats and
constness are in the key, and the only graph facts a template reads beyond them
are a constant's splat value (in the key) and the op's own regions (in the key).
The weights' data are not: no template bakes a non-splat constant into a kernel
(it is read from GM). Names and locations are not either: the cached kernel is
cloned under the new kernel's name and the op's location. A value the key does
not cover would make the cached kernel differ from a fresh build;
`GECOMP_KERNEL_CACHE=0` builds every kernel afresh, and
tests/unit/test_kernel_cache.py checks the compiled modules are the same text
either way.

`GECOMP_KERNEL_CACHE=0` (read at each use, `core/memo.py`) turns off the kernel
cache, the memo of `kernel_problem` and the tiling search's (`lowering/tiling.py`).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Attribute, Operation, SSAValue

from ...core.memo import stand_in, structure_key
from ...dialects import npu
from ...dialects.ge import ConstOp
from .context import GmTensor

# ---- the key ------------------------------------------------------------------------------


def kernel_key(
    op: Operation, hw, param_types: Sequence[Attribute], written: Sequence[bool], after_a_barrier: bool
) -> Hashable | None:
    """Everything that determines the kernel of `op` (module docstring); None when
    its regions read a value defined outside it (not keyed: built afresh)."""
    structure = structure_key(op)
    if structure is None:
        return None
    return (
        stand_in(hw),
        structure,
        tuple(_operand(op, i, v) for i, v in enumerate(op.operands)),
        tuple(param_types),
        tuple(written),
        after_a_barrier,
    )


def _operand(op: Operation, index: int, value: SSAValue) -> tuple:
    first = next(i for i, v in enumerate(op.operands) if v is value)
    constant = None
    if isinstance(value.owner, ConstOp):
        constant = ("const", GmTensor(None, value.type, value).splat())
    return (value.type, first if first != index else None, constant)


# ---- the caches ---------------------------------------------------------------------------


@dataclass
class CachedKernel:
    """A kernel as its template left it (before any later pass touched it), and
    what the template said about it. `instance` clones it under a new name."""

    kernel: npu.KernelOp
    block_dim: int
    notes: list[str]
    tiling_choices: int

    def instance(self, name: str) -> npu.KernelOp:
        kernel = self.kernel.clone()
        kernel.properties["sym_name"] = StringAttr(name)
        return kernel


class KernelCache:
    """The kernels one `ge-to-npu` has built, by `kernel_key`; `hits` and `misses`
    count the lookups."""

    def __init__(self) -> None:
        self._kernels: dict[Hashable, CachedKernel] = {}
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable) -> CachedKernel | None:
        found = self._kernels.get(key)
        if found is None:
            self.misses += 1
        else:
            self.hits += 1
        return found

    def put(self, key: Hashable, kernel: npu.KernelOp, block_dim: int, notes: list[str], tiling_choices: int) -> None:
        """Keep a freshly built `kernel` itself, not a copy: the module's kernel stays as
        its template wrote it until the `ge-to-npu` that owns this cache ends (only its
        location and sources attribute are set, which every instance sets again), and
        the later passes, which rewrite it in place, run after that. `instance` copies it."""
        self._kernels[key] = CachedKernel(kernel, block_dim, list(notes), tiling_choices)
