"""`fused-split-matmul-norm`: a matmul + residual + norm becomes two kernels when
one would be slower.

`fused.matmul_add_layer_norm` / `fused.matmul_add_rms_norm` normalise whole
rows, so their cube kernel gives each core whole rows of the product: every
core reads all of B. With few rows and a large B (a transformer's output
projections at small batch: 128 x 3072 @ 3072 x 768) that is most of B per
core through the core's own GM path, while a plain matmul spreads B's columns
over the cores. This pass asks the tiling (`lowering/tiling.py`) for three
forms:

* fused: the whole-row cube kernel with the norm epilogue;
* split: `fused.matmul_bias_act` (bias and residual: the sum) with its own
  tiling, then `ge.layer_norm` / `ge.rms_norm` of the sum (a row kernel), plus
  running a second kernel (a launch, or with `merge=true` the barrier where
  npu-merge-launches joins the two) and its traffic (read the sum, write y);
* split-K: `fused.matmul_partials` cuts K into 2, 4 or 8 slices, each item
  of its cube kernel multiplies one slice of A by one slice of B into an fp32
  partial, and `fused.partials_add_layer_norm` / `..._rms_norm` adds the
  partials, the bias and the residual as it normalises. With few rows even
  the split form makes each core read all of A's columns for its rows (the
  128 x 3072 A of BERT's FFN output: 393 KB per core); a K slice is a
  fraction of that, for the norm kernel's read of the fp32 partials;

and rewrites the op into the fastest. The results are the same values (the sum
is the fused op's second result): every form normalises the sum rounded as the
unfused ops round it (product, then each addition: `add_rounded_terms`); the
partials add up in another order, differences within the product's rounding.
`debug=true` prints every estimate per op;
`--pass-statistics` counts the ops of each form.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import Operation

from ...dialects import fused, ge
from ...dialects.ge.formats import Format
from ...simulator.hardware import HardwarePreset
from .context import GmTensor, named
from .split_k import FormChoicePass, cube_cycles, matmul_partials, replace_op, row_kernel_cycles, split_k_forms
from .templates.cube import add_norm_epilogue, bias_act_epilogue, epilogue_input, gemm_problem, views_of

NORM_OPS = (fused.MatmulAddLayerNormOp, fused.MatmulAddRmsNormOp)

NORM_VECTOR_PASSES = 12
"""Full-width fp32 vector passes a row norm makes over its rows (widen, mean,
centre, square, variance, scale, gamma, beta, round ...), for its estimate."""


@dataclass(frozen=True)
class SplitMatmulNormPass(FormChoicePass):
    """Split matmul + residual + norm ops into a matmul kernel and a norm kernel, or a
    split-K product and the norm of its partials, where the tiling estimates that
    faster (see the module docstring)."""

    name = "fused-split-matmul-norm"
    target_ops = NORM_OPS
    whole = "fused"

    def estimates(self, op: Operation, hw: HardwarePreset, next_kernel: float) -> dict[str, float]:
        return estimates(op, hw, next_kernel, after_barrier=self.after_barrier(op, hw))

    def rewrite(self, op: Operation, verdict: str) -> str:
        if verdict == "split":
            split(op)
        elif verdict != self.whole:
            split_k(op, int(verdict.removeprefix("split-K ")))
        return f"ops {verdict.split()[0]}"


def estimates(op: Operation, hw: HardwarePreset, next_kernel: float, after_barrier: bool = False) -> dict[str, float]:
    """Estimated cycles of each form of `op` ("fused", "split", "split-K <splits>"),
    running the second kernel (`next_kernel`) included; inf where no tiling fits.
    `after_barrier`: the cube kernels are later phases of a merged kernel, their
    constant Bs' first chunk loaded before the barrier (`split_k.cube_cycles`)."""
    a = op.attr_values()
    x = named(op, [GmTensor(None, v.type, v) for v in op.operands])
    outs = [GmTensor(None, r.type, r) for r in op.results]
    shape = outs[0].shape
    layer = isinstance(op, fused.MatmulAddLayerNormOp)
    whole = add_norm_epilogue(views_of(outs), x, layer, a.epsilon)
    inputs = [i for i in (epilogue_input(x.bias, shape), epilogue_input(x.residual, shape)) if i is not None]
    plain = bias_act_epilogue(views_of(outs[1:]), inputs, "none")
    product = gemm_problem(x.lhs, [x.rhs], shape, a.transpose_a, a.transpose_b, plain)
    forms = {
        SplitMatmulNormPass.whole: cube_cycles(
            hw, gemm_problem(x.lhs, [x.rhs], shape, a.transpose_a, a.transpose_b, whole, True), after_barrier
        ),
        "split": cube_cycles(hw, product, after_barrier) + next_kernel + norm_cycles(hw, shape, outs[0].itemsize),
    }
    if x.residual.format != Format.ND:
        return forms
    reduce_cycles = lambda splits: norm_cycles(hw, shape, outs[0].itemsize, splits)  # noqa: E731
    return forms | split_k_forms(hw, x.lhs, x.rhs, shape, a, reduce_cycles, next_kernel, after_barrier)


def norm_cycles(hw: HardwarePreset, shape, itemsize: int, splits: int = 0) -> float:
    """A row norm: it reads the sum and writes y; with `splits` partials it reads
    them and the residual instead, adds them up (a pass each, and the residual's
    widening, add and the sum's rounding) and writes the sum as well."""
    if not splits:
        return row_kernel_cycles(hw, shape, itemsize, itemsize, NORM_VECTOR_PASSES)
    return row_kernel_cycles(hw, shape, splits * 4 + itemsize, 2 * itemsize, NORM_VECTOR_PASSES + splits + 2)


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
    replace_op(op, [total, norm], [norm.results[0], total.result])


def split_k(op: Operation, splits: int) -> None:
    """Replace `op` by fused.matmul_partials (`splits` slices of K) and the
    partials' norm."""
    a = op.attr_values()
    x = {name: getattr(op, name) for name in op.present_operand_names()}
    partials = matmul_partials(op, splits)
    norm_class = fused.PartialsAddLayerNormOp if isinstance(op, fused.MatmulAddLayerNormOp) else fused.PartialsAddRmsNormOp
    params = [x[name] for name in ("gamma", "beta") if name in x]
    bias = {"bias": x["bias"]} if "bias" in x else {}
    norm = norm_class.new(
        partials.result, x["residual"], *params, **bias, epsilon=a.epsilon, result_type=[r.type for r in op.results]
    )
    replace_op(op, [partials, norm], norm.results)
