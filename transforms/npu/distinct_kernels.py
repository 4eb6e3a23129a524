"""A per-kernel transformation run once per distinct kernel.

A model of identical layers has identical kernels (ge-to-npu clones them from
its kernel cache), and the passes that rewrite each kernel on its own
(npu-double-buffer, npu-plan-local-memory, npu-insert-sync) would redo the
same analysis for every copy. `transform_kernels` runs the transformation on
the first of a kind and makes the others copies of its result: two kernels are
of a kind when their structure is the same (`core.memo.structure_key`: ops,
types, attributes, value names, nested regions), their symbol names and
locations aside. The transformation must depend on nothing but the kernel and
the pass's options, which is what makes the copy exact. `GECOMP_KERNEL_CACHE=0`
transforms every kernel itself.

Keying a kernel and copying it cost more than a cheap transformation:
npu-double-buffer and npu-plan-local-memory transform every kernel
(`module_kernels`), npu-insert-sync, whose analysis costs ten times a copy, once
per kind (ResNet-50: keying and copying were a tenth of its compile).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TypeVar

from xdsl.dialects.builtin import ModuleOp

from ...core import memo
from ...dialects import npu

T = TypeVar("T")


def transform_kernels(module: ModuleOp, transform: Callable[[npu.KernelOp], T]) -> list[T]:
    """`transform(kernel)` for every `npu.kernel` of `module` in order, or, for a
    kernel of a kind already transformed, that one's outcome, the kernel replaced
    by a copy of the transformed one under its own name and location."""
    done: dict[tuple, tuple[npu.KernelOp, T]] = {}
    outcomes = []
    for kernel in list(module_kernels(module)):
        key = memo.structure_key(kernel, names=True, ignore=("sym_name",)) if memo.enabled() else None
        if key is not None and key in done:
            first, outcome = done[key]
            _replace(kernel, first)
        else:
            outcome = transform(kernel)
            if key is not None:
                done[key] = (kernel, outcome)
        outcomes.append(outcome)
    return outcomes


def module_kernels(module: ModuleOp) -> Iterator[npu.KernelOp]:
    """The module's kernels in walk order, without walking their bodies (most of a
    model's ops): a kernel holds instructions, never another kernel."""
    for top in module.body.block.ops:
        if isinstance(top, npu.KernelOp):
            yield top
        else:
            yield from (op for op in top.walk() if isinstance(op, npu.KernelOp))


def _replace(kernel: npu.KernelOp, transformed: npu.KernelOp) -> None:
    copy = transformed.clone()
    copy.properties["sym_name"] = kernel.properties["sym_name"]
    copy.location = kernel.location
    kernel.parent_block().insert_op_before(copy, kernel)
    kernel.detach()
    kernel.erase()
