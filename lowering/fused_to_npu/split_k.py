"""`fused-split-k`: a `fused.matmul_bias_act` with few rows and a long K becomes a
split-K product and a kernel that adds up its partials, when that is faster.

A matrix product's items are blocks of output rows and columns, and each core
reads all of K for its block: A's rows and B's columns in full. When M is small
and K long (the down projection of a decoder MLP: 256 x 2816 @ 2816 x 1024),
that is megabytes per core through the core's own GM path. Cut into K slices
(`fused.matmul_partials`), an item reads one slice of each and writes an fp32
partial; `fused.partials_bias_act` then adds the partials, the bias and the
residual and applies the activation. The pass estimates the product as it is
and with 2, 4 and 8 slices (the second kernel's launch and traffic included,
`split_norm.row_kernel_cycles`) and keeps the fastest. `debug=true` prints the
estimates; `--pass-statistics` counts the ops split and kept.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType, f32
from xdsl.passes import ModulePass

from ...core.passes import record_statistic
from ...dialects import fused
from ...simulator.hardware import HardwarePreset, load_preset
from ..tiling import FRACTAL
from .context import GmTensor, named
from .split_norm import SPLITS, cube_cycles, replace_op, row_kernel_cycles
from .templates.cube import bias_act_epilogue, epilogue_input, gemm_problem, views_of
from .templates.cube_epilogue import CubeEpilogue

REDUCE_PASSES = 6
"""fp32 vector passes of the partials' kernel besides one add per partial: the
bias and residual widened and added, an activation, the rounding."""


@dataclass(frozen=True)
class SplitKPass(ModulePass):
    """Split long-K, few-row matmul_bias_act ops into a split-K product and the sum of
    its partials where the tiling estimates that faster (see the module docstring)."""

    name = "fused-split-k"

    hw: str = "ascend910"
    debug: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        hw = load_preset(self.hw)
        for matmul in [o for o in op.walk() if isinstance(o, fused.MatmulBiasActOp)]:
            forms = estimates(matmul, hw)
            verdict = min(forms, key=forms.get)
            if self.debug:
                listed = ", ".join(f"{form} ~{cycles:.0f}" for form, cycles in forms.items())
                print(f"[{self.name}] {matmul.name} at {matmul.location}: {listed} cycles: {verdict}", file=sys.stderr)
            if verdict != "one kernel":
                split_k(matmul, int(verdict.removeprefix("split-K ")))
            record_statistic(self.name, f"ops {'kept' if verdict == 'one kernel' else 'split'}")


def estimates(op: fused.MatmulBiasActOp, hw: HardwarePreset) -> dict[str, float]:
    """Estimated cycles of `op` as one kernel and as each split-K form."""
    a = op.attr_values()
    x = named(op, [GmTensor(None, v.type, v) for v in op.operands])
    out = GmTensor(None, op.result.type, op.result)
    shape = out.shape
    inputs = [i for i in (epilogue_input(x.bias, shape), epilogue_input(x.residual, shape)) if i is not None]
    product = gemm_problem(x.lhs, [x.rhs], shape, a.transpose_a, a.transpose_b, bias_act_epilogue(views_of([out]), inputs, a.act))
    forms = {"one kernel": cube_cycles(hw, product)}
    if len(shape) != 2 or any(t is not None and t.format.value != "ND" for t in (out, x.residual)):
        return forms
    for splits in SPLITS:
        if product.shape.k % (splits * FRACTAL):
            continue
        partials = GmTensor(None, TensorType(f32, [splits, *shape]), None)
        problem = gemm_problem(
            x.lhs, [x.rhs], partials.shape, a.transpose_a, a.transpose_b, CubeEpilogue(views_of([partials])), splits=splits
        )
        read = splits * 4 + (out.itemsize if x.residual is not None else 0)
        reduce = row_kernel_cycles(hw, shape, read, out.itemsize, splits + REDUCE_PASSES)
        forms[f"split-K {splits}"] = cube_cycles(hw, problem) + hw.kernel_launch_cycles + reduce
    return forms


def split_k(op: fused.MatmulBiasActOp, splits: int) -> None:
    """Replace `op` by fused.matmul_partials and fused.partials_bias_act."""
    a = op.attr_values()
    x = {name: getattr(op, name) for name in op.present_operand_names()}
    partials = fused.MatmulPartialsOp.new(
        x["lhs"], x["rhs"], splits=splits, transpose_a=a.transpose_a, transpose_b=a.transpose_b,
        result_type=TensorType(f32, [splits, *op.result.type.get_shape()]),
    )
    optional = {name: x[name] for name in ("bias", "residual") if name in x}
    total = fused.PartialsBiasActOp.new(partials.result, **optional, act=a.act, result_type=op.result.type)
    replace_op(op, [partials, total], total.results)
