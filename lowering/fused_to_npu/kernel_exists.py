"""Whether the NPU lowering can build a kernel for an op: THE predicate every
decision that makes a kernel-to-be shares with the lowering itself.

`ge-pattern-fuse` (which named op, reading which formats), `ge-auto-fuse`
(which ops become one `fused.group`) and `fused-ungroup` all ask the same
question, and the answer is the template's own: the op's kernel is written into
a scratch kernel that is thrown away, so a decision is legal exactly when the
kernel it asks for exists (a template refusing a case raises a located
`CompileError`; any other exception is a bug of the template and propagates),
and its buffers fit the preset's local memories as `npu-plan-local-memory` will
place them (a template sizing a buffer beyond what its tiling counted would
otherwise be accepted here and refused by the lowering).
The answer is memoised on the op's `kernel_key` (fusion asks it of every
candidate, a model of identical layers the same question many times).
"""

from __future__ import annotations

from xdsl.ir import Operation

from ...core import memo
from ...core.diagnostics import CompileError
from ...simulator.hardware import HardwarePreset
from ...transforms.npu.plan_local_memory import plan_kernel
from .context import GmTensor, KernelContext
from .templates import template_for
from .convert import gm_memref
from .kernel_builder import KernelBuilder
from .kernel_cache import kernel_key

_PROBLEMS = memo.Memo()


def kernel_problem(op: Operation, hw: HardwarePreset) -> str | None:
    """Why no kernel can be built for `op` on `hw` (None if one can): the
    template's own error, from a scratch build."""
    template = template_for(op)
    if template is None:
        return "no kernel template"
    if not op.results:
        # A group of dead ops (nothing it computes is used): there is no kernel to
        # build, and nothing to fuse; dead-code elimination erases the ops.
        return "computes nothing that is used"
    values = [*op.operands, *op.results]
    param_types = [gm_memref(v.type) for v in values]
    key = kernel_key(op, hw, param_types, [True] * len(op.results), False) if memo.enabled() else None
    if key is not None and (known := _PROBLEMS.get(key)) is not memo.Memo.MISSING:
        return known
    problem = _scratch_build(op, template, hw, values, param_types)
    if key is not None:
        _PROBLEMS.put(key, problem)
    return problem


def scratch_context(op: Operation, hw: HardwarePreset, param_types=None) -> KernelContext:
    """A kernel context of `op` (its operands, then its results, as GM parameters)
    on a scratch builder that is thrown away: what a template builds or estimates
    there is written into no kernel."""
    values = [*op.operands, *op.results]
    b = KernelBuilder("scratch", param_types or [gm_memref(v.type) for v in values])
    k = KernelContext(op, b, [], [], hw)
    tensors = [GmTensor(p, v.type, v) for p, v in zip(b.params, values)]
    k.inputs, k.outputs = tensors[: len(op.operands)], tensors[len(op.operands) :]
    return k


def _scratch_build(op: Operation, template, hw: HardwarePreset, values, param_types) -> str | None:
    k = scratch_context(op, hw, param_types)
    b = k.b
    try:
        template(op, k)
        plan_kernel(b.kernel, hw)  # its buffers fit the local memories, as npu-plan-local-memory places them
    except CompileError as e:
        return str(e).split("error: ", 1)[-1]
    return None
