"""`fused-split-matmul-norm`: a matmul + residual + norm becomes two kernels when
one would be slower.

`fused.matmul_add_layer_norm` / `fused.matmul_add_rms_norm` normalise whole
rows, so their cube kernel gives each core whole rows of the product: every
core reads all of B. With few rows and a large B (a transformer's output
projections at small batch: 128 x 3072 @ 3072 x 768) that is most of B per
core through the core's own GM path, while a plain matmul spreads B's columns
over the cores. This pass asks the tiling (`lowering/tiling.py`) for both:

* fused: the whole-row cube kernel with the norm epilogue;
* split: `fused.matmul_bias_act` (bias and residual: the sum) with its own
  tiling, then `ge.layer_norm` / `ge.rms_norm` of the sum (a row kernel), plus
  one kernel launch and the norm kernel's traffic (read the sum, write y);

and rewrites the op into the split form when that is estimated faster. The
results are the same values (the sum is the fused op's second result); the
norm then reads the sum rounded to fp16 instead of the fp32 one, a difference
within the fp16 tolerance. `debug=true` prints both estimates per op;
`--pass-statistics` counts the ops split and kept.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from ...core.passes import record_statistic
from ...dialects import fused, ge
from ...simulator.hardware import HardwarePreset, load_preset
from ..tiling import choose_cube_tiling
from .context import GmTensor
from .templates.cube import add_norm_epilogue, bias_act_epilogue, epilogue_input, gemm_problem, named, views_of

NORM_OPS = (fused.MatmulAddLayerNormOp, fused.MatmulAddRmsNormOp)

NORM_VECTOR_PASSES = 12
"""Full-width fp32 vector passes a row norm makes over its rows (widen, mean,
centre, square, variance, scale, gamma, beta, round ...), for its estimate."""


@dataclass(frozen=True)
class SplitMatmulNormPass(ModulePass):
    """Split matmul + residual + norm ops into a matmul kernel and a norm kernel where
    the tiling estimates that faster (see the module docstring)."""

    name = "fused-split-matmul-norm"

    hw: str = "ascend910"
    debug: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        hw = load_preset(self.hw)
        for norm in [o for o in op.walk() if isinstance(o, NORM_OPS)]:
            fused_cycles, split_cycles = estimates(norm, hw)
            verdict = "split" if split_cycles < fused_cycles else "kept"
            if self.debug:
                print(
                    f"[{self.name}] {norm.name} at {norm.location}: one kernel ~{fused_cycles:.0f} cycles, "
                    f"matmul + norm ~{split_cycles:.0f} cycles: {verdict}",
                    file=sys.stderr,
                )
            if verdict == "split":
                split(norm)
            record_statistic(self.name, f"ops {verdict}")


def estimates(op: Operation, hw: HardwarePreset) -> tuple[float, float]:
    """(fused, split) estimated cycles of `op` (kernel launches of the split's
    second kernel included); inf where no tiling fits."""
    a = op.attr_values()
    x = named(op, [GmTensor(None, v.type, v) for v in op.operands])
    outs = [GmTensor(None, r.type, r) for r in op.results]
    shape = outs[0].shape
    layer = isinstance(op, fused.MatmulAddLayerNormOp)
    whole = add_norm_epilogue(views_of(outs), x, layer, a.epsilon)
    inputs = [i for i in (epilogue_input(x.bias, shape), epilogue_input(x.residual, shape)) if i is not None]
    plain = bias_act_epilogue(views_of(outs[1:]), inputs, "none")
    fused_cycles = _cube_cycles(hw, gemm_problem(x.lhs, [x.rhs], shape, a.transpose_a, a.transpose_b, whole, True))
    product = _cube_cycles(hw, gemm_problem(x.lhs, [x.rhs], shape, a.transpose_a, a.transpose_b, plain))
    return fused_cycles, product + hw.kernel_launch_cycles + norm_cycles(hw, shape, outs[0].itemsize)


def _cube_cycles(hw: HardwarePreset, problem) -> float:
    try:
        return choose_cube_tiling(hw, problem.shape, problem.a, problem.bs, problem.epilogue.cost(1)).estimate
    except ValueError:
        return math.inf


def norm_cycles(hw: HardwarePreset, shape, itemsize: int) -> float:
    """A row norm over all cores: its GM traffic (read the sum, write y) at the HBM
    and the cores' paths, and its vector passes."""
    elements = math.prod(shape)
    traffic = 2 * elements * itemsize
    memory = max(traffic / hw.hbm_bytes_per_cycle, traffic / hw.core_count / hw.paths["gm_to_ub"].bytes_per_cycle)
    vector = NORM_VECTOR_PASSES * elements * 4 / hw.vector_repeat_bytes / hw.core_count
    return memory + vector


def split(op: Operation) -> None:
    """Replace `op` by fused.matmul_bias_act (the sum) and the norm of the sum."""
    a = op.attr_values()
    x = {name: getattr(op, name) for name in op.present_operand_names()}
    optional = {name: x[name] for name in ("bias", "residual") if name in x}
    total = fused.MatmulBiasActOp.new(
        x["lhs"], x["rhs"], **optional, act="none", transpose_a=a.transpose_a, transpose_b=a.transpose_b,
        result_type=op.results[1].type,
    )
    if isinstance(op, fused.MatmulAddLayerNormOp):
        norm = ge.LayerNormOp.new(total.result, x["gamma"], x["beta"], axis=-1, epsilon=a.epsilon, result_type=op.results[0].type)
    else:
        norm = ge.RMSNormOp.new(total.result, x["gamma"], axis=-1, epsilon=a.epsilon, result_type=op.results[0].type)
    for new, old in ((total.result, op.results[1]), (norm.results[0], op.results[0])):
        new.name_hint = old.name_hint
        old.replace_all_uses_with(new)
    block = op.parent_block()
    block.insert_op_before(total, op)
    block.insert_op_before(norm, op)
    op.detach()
    op.erase()
