"""`fused-split-pool`: a max pool whose window has no kernel becomes its two
separable passes, a max over the window's rows then one over its columns.

The pooling kernel (`templates/pooling.py`) holds, for each tile of outputs, the
input pixels their windows cover in UB: a large window (a 60 x 80 window, as a
dilated pool of the pytorch-converted suite becomes once its phases are moved
into the channels) leaves no tile of even one output pixel that fits. Max is
separable and padding never wins, so

    max_pool2d(x, (kh, kw), (sh, sw), (t, l, b, r))
      = max_pool2d(max_pool2d(x, (kh, 1), (sh, 1), (t, 0, b, 0)), (1, kw), (1, sw), (0, l, 0, r))

exactly, ceil mode included (each axis's output size depends on that axis
alone). Each pass reads a window of one row or one column, which fits where the
whole window does not; the rows' maxima go through GM between the two kernels.

The decision is the lowering's own: an op is split exactly when the template
builds no kernel for it (`kernel_problem`) and builds one for each pass; a
window with a kernel is left whole (one kernel, no intermediate tensor).
`--pass-statistics` counts the pools split.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from ...core.passes import record_statistic
from ...dialects import ge
from ...simulator.hardware import load_preset
from .kernel_exists import kernel_problem
from .split_k import replace_op


@dataclass(frozen=True)
class SplitPoolPass(ModulePass):
    """Split every max pool without a kernel into a max over rows and a max over
    columns, when both have one (see the module docstring)."""

    name = "fused-split-pool"
    hw: str = "ascend910"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        hw = load_preset(self.hw)
        for pool in [o for o in op.walk() if isinstance(o, ge.MaxPool2DOp)]:
            a = pool.attr_values()
            if 1 in a.kernel or kernel_problem(pool, hw) is None:
                continue
            rows, cols = separable_passes(pool)
            if kernel_problem(rows, hw) is None and kernel_problem(cols, hw) is None:
                replace_op(pool, [rows, cols], [cols.result])
                record_statistic(self.name, "max pools split into rows and columns")


def separable_passes(pool: ge.MaxPool2DOp) -> tuple[ge.MaxPool2DOp, ge.MaxPool2DOp]:
    """The max over the window's rows (on `pool`'s input, in its format) and the
    max over its columns of that (`pool`'s result type), not yet inserted."""
    a = pool.attr_values()
    (kh, kw), (sh, sw), (top, left, bottom, right) = a.kernel, a.strides, a.pads
    rows = ge.MaxPool2DOp.new(pool.input, kernel=(kh, 1), strides=(sh, 1), pads=(top, 0, bottom, 0),
                              ceil_mode=a.ceil_mode)
    cols = ge.MaxPool2DOp.new(rows.result, kernel=(1, kw), strides=(1, sw), pads=(0, left, 0, right),
                              ceil_mode=a.ceil_mode, result_type=pool.result.type)
    return rows, cols
