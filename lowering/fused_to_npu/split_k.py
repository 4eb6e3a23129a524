"""`fused-split-k`: a `fused.matmul_bias_act` with few rows and a long K becomes a
split-K product and a kernel that adds up its partials, when that is faster.

A matrix product's items are blocks of output rows and columns, and each core
reads all of K for its block: A's rows and B's columns in full. When M is small
and K long (64 x 4096 @ 4096 x 512), that is most of a megabyte per core
through the core's own GM path. Cut into K slices (`fused.matmul_partials`),
an item reads one slice of each and writes an fp32 partial;
`fused.partials_bias_act` then adds the partials, the bias and the residual
and applies the activation. The pass estimates the product as it is and with
2, 4 and 8 slices (the second kernel's traffic included, and what running it
costs: its launch, or with `merge=true` the barrier where npu-merge-launches
joins it to the product) and keeps the fastest. `debug=true` prints the
estimates; `--pass-statistics` counts the ops split and kept.

The pieces every split-K rewrite shares live here too (`split_k_forms`,
`sliced_forms`, `matmul_partials`, `row_kernel_cycles`, `choose_form`):
`fused-split-matmul-norm` uses them for the split-K form of a matmul + residual
+ norm, `fused-split-k-conv` for a 1x1 convolution's.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr, TensorType, f32
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from ...core.diagnostics import op_error
from ...core.passes import record_statistic
from ...dialects import fused
from ...dialects.ge.formats import Format
from ...simulator.hardware import HardwarePreset, load_preset
from ...simulator.npu.costs import next_kernel_cycles
from ..tiling import FRACTAL, Prefetched, best_cube_tiling
from .context import GmTensor, named
from .prefetch_room import room_before
from .templates.cube import bias_act_epilogue, epilogue_input, gemm_problem, views_of
from .templates.cube_epilogue import CubeEpilogue

SPLITS = (2, 4, 8)
"""The K slices a split-K form may have."""

REDUCE_PASSES = 6
"""fp32 vector passes of the partials' kernel besides one add per partial: the
bias and residual widened and added, an activation, the rounding."""


@dataclass(frozen=True)
class FormChoicePass(ModulePass):
    """Rewrites every op it `targets` into the form the tiling estimates fastest:
    `estimates(op, hw, next_kernel)` gives each form's cycles (a second kernel
    costing `next_kernel` to run: a launch, or with `merge` the barrier of the
    kernel npu-merge-launches makes), `rewrite(op, verdict)` applies the verdict
    and names the statistic to count. `whole` is the form that keeps the op as
    it is (what `ge-to-npu` lowers an op still carrying `npu.form`)."""

    hw: str = "ascend910"
    debug: bool = False
    merge: bool = True

    target_ops: ClassVar[tuple[type[Operation], ...]] = ()
    whole: ClassVar[str] = ""

    def targets(self, op: Operation) -> bool:
        return isinstance(op, self.target_ops)

    def estimates(self, op: Operation, hw: HardwarePreset, next_kernel: float) -> dict[str, float]:
        raise NotImplementedError

    def rewrite(self, op: Operation, verdict: str) -> str:
        raise NotImplementedError

    def after_barrier(self, op: Operation, hw: HardwarePreset | None = None) -> Prefetched | bool:
        """Whether `op`'s (first) kernel will start after a barrier: a later phase of
        the merged kernel, whose constant Bs npu-prefetch-constants loads before
        it (`cube_cycles`), with the room the kernel before leaves them."""
        return self.merge and room_before(op, hw or load_preset(self.hw), whole_tiling)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        hw = load_preset(self.hw)
        next_kernel = next_kernel_cycles(hw, self.merge)
        for target in [o for o in op.walk() if self.targets(o)]:
            verdict = choose_form(self.name, target, self.estimates(target, hw, next_kernel), self.debug)
            record_statistic(self.name, self.rewrite(target, verdict))


@dataclass(frozen=True)
class SplitKPass(FormChoicePass):
    """Split long-K, few-row matmul_bias_act ops into a split-K product and the sum of
    its partials where the tiling estimates that faster (see the module docstring)."""

    name = "fused-split-k"
    target_ops = (fused.MatmulBiasActOp,)
    whole = "one kernel"

    def estimates(self, op: Operation, hw: HardwarePreset, next_kernel: float) -> dict[str, float]:
        return estimates(op, hw, next_kernel, after_barrier=self.after_barrier(op, hw))

    def rewrite(self, op: Operation, verdict: str) -> str:
        if verdict == self.whole:
            return "ops kept"
        split_k(op, int(verdict.removeprefix("split-K ")))
        return "ops split"


def estimates(
    op: fused.MatmulBiasActOp, hw: HardwarePreset, next_kernel: float, after_barrier: bool = False
) -> dict[str, float]:
    """Estimated cycles of `op` as one kernel and as each split-K form (whose second
    kernel costs `next_kernel` to run besides its work); `after_barrier`: the
    cube kernels are later phases of a merged kernel (`cube_cycles`)."""
    a = op.attr_values()
    x = named(op, [GmTensor(None, v.type, v) for v in op.operands])
    out = GmTensor(None, op.result.type, op.result)
    forms = {SplitKPass.whole: cube_cycles(hw, whole_problem(op), after_barrier)}
    if any(t is not None and t.format != Format.ND for t in (out, x.residual)):
        return forms
    read = out.itemsize if x.residual is not None else 0

    def reduce_cycles(splits: int) -> float:
        return row_kernel_cycles(hw, out.shape, splits * 4 + read, out.itemsize, splits + REDUCE_PASSES)

    return forms | split_k_forms(hw, x.lhs, x.rhs, out.shape, a, reduce_cycles, next_kernel, after_barrier)


def whole_problem(op: fused.MatmulBiasActOp):
    """`op` as one cube kernel's problem."""
    a = op.attr_values()
    x = named(op, [GmTensor(None, v.type, v) for v in op.operands])
    out = GmTensor(None, op.result.type, op.result)
    inputs = [i for i in (epilogue_input(x.bias, out.shape), epilogue_input(x.residual, out.shape)) if i is not None]
    epilogue = bias_act_epilogue(views_of([out]), inputs, a.act)
    return gemm_problem(x.lhs, [x.rhs], out.shape, a.transpose_a, a.transpose_b, epilogue)


def whole_tiling(op: Operation, hw: HardwarePreset):
    """The estimated-fastest tiling of a `fused.matmul_bias_act` as one kernel (None
    for another op, or one no tiling fits): `prefetch_room.room_before`'s view of
    the kernel before a form choice."""
    if not isinstance(op, fused.MatmulBiasActOp):
        return None
    try:
        problem = whole_problem(op)
        return best_cube_tiling(hw, problem.shape, problem.a, problem.bs, problem.epilogue.cost(1))[0]
    except ValueError:
        return None


def split_k(op: fused.MatmulBiasActOp, splits: int) -> None:
    """Replace `op` by fused.matmul_partials and fused.partials_bias_act."""
    a = op.attr_values()
    x = {name: getattr(op, name) for name in op.present_operand_names()}
    partials = matmul_partials(op, splits)
    optional = {name: x[name] for name in ("bias", "residual") if name in x}
    total = fused.PartialsBiasActOp.new(partials.result, **optional, act=a.act, result_type=op.result.type)
    replace_op(op, [partials, total], total.results)


# ---- shared by the split-K rewrites ----------------------------------------------------------


def split_k_forms(
    hw: HardwarePreset,
    lhs: GmTensor,
    rhs: GmTensor,
    shape,
    a,
    reduce_cycles: Callable[[int], float],
    next_kernel: float,
    after_barrier: bool = False,
) -> dict[str, float]:
    """"split-K <splits>" -> estimated cycles of the partials' cube kernel, running
    the second kernel (`next_kernel`) and `reduce_cycles(splits)`, for each K cut
    into whole fractals (`after_barrier`: see `cube_cycles`)."""
    depth = lhs.shape[0 if a.transpose_a else 1]

    def problem_of(splits: int):
        if depth % (splits * FRACTAL):
            raise ValueError(f"K = {depth} in {splits} slices of whole fractals")
        partials = GmTensor(None, TensorType(f32, [splits, *shape]), None)
        epilogue = CubeEpilogue(views_of([partials]))
        return gemm_problem(lhs, [rhs], partials.shape, a.transpose_a, a.transpose_b, epilogue, splits=splits)

    return sliced_forms(lambda splits: cube_cycles(hw, problem_of(splits), after_barrier), reduce_cycles, next_kernel)


def sliced_forms(
    partials_cycles: Callable[[int], float], reduce_cycles: Callable[[int], float], next_kernel: float
) -> dict[str, float]:
    """"split-K <splits>" -> estimated cycles of the partials' kernel
    (`partials_cycles(splits)`, ValueError where that many slices do not apply),
    running the second kernel (`next_kernel`) and `reduce_cycles(splits)`."""
    forms = {}
    for splits in SPLITS:
        try:
            partials = partials_cycles(splits)
        except ValueError:
            continue
        forms[f"split-K {splits}"] = partials + next_kernel + reduce_cycles(splits)
    return forms


def matmul_partials(op: Operation, splits: int) -> fused.MatmulPartialsOp:
    """The split-K product of a fused matmul `op` (its lhs, rhs and transposes)."""
    a = op.attr_values()
    return fused.MatmulPartialsOp.new(
        op.lhs, op.rhs, splits=splits, transpose_a=a.transpose_a, transpose_b=a.transpose_b,
        result_type=TensorType(f32, [splits, *op.results[0].type.get_shape()]),
    )


def cube_cycles(hw: HardwarePreset, problem, after_barrier: bool = False) -> float:
    """The tiling's estimate of a cube problem; inf where no tiling fits.
    `after_barrier`: the kernel will be a later phase of a merged kernel, so
    constant Bs have their first chunk loaded before its barrier, as
    `emit_cube_kernel` tiles it (npu-prefetch-constants)."""
    prefetched = after_barrier if after_barrier and all(getattr(x, "is_constant", False) for x in problem.bs) else False
    try:
        return best_cube_tiling(hw, problem.shape, problem.a, problem.bs, problem.epilogue.cost(1), prefetched)[0].estimate
    except ValueError:
        return math.inf


def row_kernel_cycles(hw: HardwarePreset, shape, read_per_element: int, written_per_element: int, passes: int) -> float:
    """A row kernel over all cores, tiled as `row_kernel.py` tiles it (two tiles of
    rows per core): `passes` full-width fp32 vector passes and its GM traffic,
    overlapped, after the first tile's load."""
    rows, cols = math.prod(shape[:-1]), shape[-1]
    tile_rows = max(1, math.ceil(rows / hw.core_count / 2))
    tiles = math.ceil(rows / tile_rows / hw.core_count)
    repeats = math.ceil(tile_rows * cols * 4 / hw.vector_repeat_bytes)
    vector = tiles * passes * hw.vector_costs["binary"].cycles(repeats)
    traffic = rows * cols * (read_per_element + written_per_element)
    memory = max(traffic / hw.hbm_bytes_per_cycle, traffic / hw.core_count / hw.paths["gm_to_ub"].bytes_per_cycle)
    first_tile = hw.paths["gm_to_ub"].cycles(tile_rows * cols * read_per_element)
    return first_tile + max(vector, memory)


FORM = "npu.form"
"""An op's attribute pinning its form ("split-K 2"), whatever the estimates say:
how `fused-tune-forms` hands on the forms it measured to be faster, and how a
user pins one by hand."""


def pin_form(op: Operation, form: str) -> None:
    op.attributes[FORM] = StringAttr(form)


def pinned_form(op: Operation, forms: dict[str, float]) -> str | None:
    """The op's `npu.form`, if it has one; a located error if it is not one of `forms`."""
    attr = op.attributes.get(FORM)
    if attr is None:
        return None
    if not isinstance(attr, StringAttr) or attr.data not in forms:
        raise op_error(op, f"'{FORM}' must be one of {', '.join(map(repr, forms))}; got {attr}")
    return attr.data


def choose_form(pass_name: str, op: Operation, forms: dict[str, float], debug: bool) -> str:
    """The form `npu.form` pins, or else the one estimated fastest (printing every
    estimate with `debug`)."""
    pinned = pinned_form(op, forms)
    verdict = pinned if pinned is not None else min(forms, key=forms.get)
    if debug:
        listed = ", ".join(f"{form} ~{cycles:.0f}" for form, cycles in forms.items())
        how = f" ({FORM})" if pinned is not None else ""
        debug_line(pass_name, f"{op.name} at {op.location}: {listed} cycles: {verdict}{how}")
    return verdict


def debug_line(pass_name: str, text: str) -> None:
    """One `debug=true` line of a form choice on stderr, named by its pass."""
    print(f"[{pass_name}] {text}", file=sys.stderr)


def replace_op(op: Operation, ops: list[Operation], values: list[SSAValue]) -> None:
    """Put `ops` where `op` is, at its source location, and `values` in place of
    its results."""
    for new, old in zip(values, op.results, strict=True):
        new.name_hint = old.name_hint
        old.replace_all_uses_with(new)
    block = op.parent_block()
    for new_op in ops:
        new_op.location = op.location
        block.insert_op_before(new_op, op)
    op.detach()
    op.erase()
