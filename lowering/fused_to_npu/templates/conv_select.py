"""Convolution kernels chosen by cost: the template of ge.conv2d and
fused.conv2d_bias_act.

The same convolution has several implementations, each best for some shapes
(as in CANN, which picks among Conv2D, DepthwiseConv2D and a matmul):

* `depthwise-vector` (`depthwise_conv.py`): one channel per group on the vector
  unit, channels along the lanes; the cube would multiply 1-channel blocks,
  mostly zeros;
* `gemm-1x1`: a 1x1, stride-1, unpadded convolution is a matrix product whose A
  is the NC1HWC0 input itself, read straight from GM (`conv.gemm_1x1_problem`);
* `strided-1x1`: a 1x1 convolution of stride > 1 (a ResNet downsample) is the
  matrix product over the pixels it reads, staged GM -> L1 one strided copy per
  channel block and output row (`conv.StridedPixels`): no UB slab, no gathers;
* `img2col`: the implicit GEMM, the img2col matrix gathered into L1 per K chunk
  (`conv.img2col_problem`): the general case.

Each implementation has ONE predicate of legality, its plan: building the plan
either gives the kernel's estimated cycles (the closed forms of the simulator's
costs, `lowering/tiling.py` for the cube ones) or raises with the reason it does
not apply; the chooser and the builder both go through it, so an implementation
is chosen only if its kernel is built. The estimated-fastest legal one is kept,
unless the op pins one with `npu.conv_algorithm` (how `fused-tune-convs`, run by
`ge-compile{tune=N}`, hands on the one it measured fastest); `debug=true`
prints every candidate's estimate or reason.

Not implemented, and why:

* Winograd F(2x2, 3x3) needs the input and output transforms (B^T d B, A^T m A)
  as vector work on 4x4 tiles and 16 batched products of (tiles x C) @ (C x O);
  in f32 (the models' precision here) the cube's rate makes the 2.25x fewer
  multiplications win only when the cube bounds the layer, while the transforms
  add about 2 x 16 vector passes over the data; left for fp16 precision modes;
* FFT: for the 3x3 and 5x5 windows of these networks its transforms cost more
  than the direct product saves (FFT pays off for windows of 11 and more).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.dialects.builtin import StringAttr

from ....core.diagnostics import CompileError, op_error
from ....dialects import fused, ge
from ..context import KernelContext
from .registry import kernel_for
from ..kernel_builder import KernelBuilder
from .conv import ConvCase, conv_case, gemm_1x1_problem, img2col_problem, sliced_case, strided_1x1_problem
from .cube import require_cube_type
from .cube_kernel import choose_problem_tiling, emit_cube_kernel
from .depthwise_conv import plan_depthwise

CONV_ALGORITHM = "npu.conv_algorithm"
"""A convolution's attribute pinning its implementation by name (`ALGORITHMS`)."""


@dataclass(frozen=True)
class Plan:
    """A legal implementation of one convolution: its estimate and how to emit it."""

    name: str
    estimate: float
    emit: Callable[[], None]


def _cube_plan(name: str, problem_of: Callable[[ConvCase], object]) -> Callable[[ConvCase], Plan]:
    def plan(c: ConvCase) -> Plan:
        problem = problem_of(c)
        _, tiling = choose_problem_tiling(c.k.hw, problem)  # ValueError: no tiling fits
        return Plan(name, tiling.estimate, lambda: emit_cube_kernel(c.k, problem))

    return plan


def _img2col_plan(c: ConvCase) -> Plan:
    """img2col with a strided window's slabs de-interleaved (its gathers read runs)
    where a tiling fits with the slab's second copy in UB; else with the gathers
    reading strided pixels (AlexNet's 11x11 stride-4 stem: one output row's slab
    is 11 input rows of 224 pixels, and four copies of it do not fit UB)."""
    try:
        return _cube_plan("img2col", img2col_problem)(c)
    except ValueError:
        if c.g.strides[1] == 1:
            raise
    return _cube_plan("img2col", lambda case: img2col_problem(case, deinterleave=False))(c)


def _depthwise_plan(c: ConvCase) -> Plan:
    kernel = plan_depthwise(c.k, c.g, c.x, c.w, c.bias, c.residual, c.out, c.act)
    return Plan("depthwise-vector", kernel.estimate(), kernel.emit)


ALGORITHMS: dict[str, Callable[[ConvCase], Plan]] = {
    "depthwise-vector": _depthwise_plan,
    "gemm-1x1": _cube_plan("gemm-1x1", gemm_1x1_problem),
    "strided-1x1": _cube_plan("strided-1x1", strided_1x1_problem),
    "img2col": _img2col_plan,
}


def conv_plans(c: ConvCase) -> dict[str, Plan | str]:
    """Every implementation's plan, or the reason it does not apply. A plan is built
    on a scratch builder (its tiling may allocate nothing yet, but nothing of a
    rejected candidate may leak into the kernel)."""
    plans: dict[str, Plan | str] = {}
    for name, plan_of in ALGORITHMS.items():
        try:
            plans[name] = plan_of(c)
        except (ValueError, CompileError) as e:
            plans[name] = str(e).split("error: ", 1)[-1].removeprefix("has no NPU kernel for this case: ")
    return plans


def ranked(plans: dict[str, Plan | str]) -> list[Plan]:
    """The legal plans, estimated-fastest first."""
    return sorted((p for p in plans.values() if isinstance(p, Plan)), key=lambda p: p.estimate)


def pinned_algorithm(op) -> str | None:
    attr = op.attributes.get(CONV_ALGORITHM)
    if attr is None:
        return None
    if not isinstance(attr, StringAttr) or attr.data not in ALGORITHMS:
        raise op_error(op, f"'{CONV_ALGORITHM}' must be one of {', '.join(ALGORITHMS)}, got {attr}")
    return attr.data


def pin_algorithm(op, name: str) -> None:
    op.attributes[CONV_ALGORITHM] = StringAttr(name)


def explain(c: ConvCase, plans: dict[str, Plan | str], chosen: Plan) -> str:
    g = c.g
    parts = []
    for name, plan in plans.items():
        if isinstance(plan, Plan):
            mark = " (chosen)" if plan is chosen else ""
            parts.append(f"{name} estimated {plan.estimate:.0f} cycles{mark}")
        else:
            parts.append(f"{name} not legal: {plan}")
    return (
        f"conv {g.n}x{g.c}x{g.h}x{g.w} -> {g.o}x{g.oh}x{g.ow}, window {g.kh}x{g.kw}, strides {list(g.strides)}, "
        f"dilations {list(g.dilations)}, groups {g.groups}: " + "; ".join(parts)
    )


def _with_scratch_builder(c: ConvCase) -> ConvCase:
    """The case on a throwaway builder: estimating may not write into the kernel."""
    k = c.k
    scratch = KernelContext(k.op, KernelBuilder("scratch", [p.type for p in k.b.params]), [], [], k.hw)
    swap = {p: q for p, q in zip(k.b.params, scratch.b.params)}
    tensors = [type(t)(swap[t.value], t.type, t.source) for t in (*k.inputs, *k.outputs)]
    scratch.inputs, scratch.outputs = tensors[: len(k.inputs)], tensors[len(k.inputs) :]
    return conv_case(k.op, scratch)


@kernel_for(ge.Conv2DOp, fused.Conv2DBiasActOp)
def lower_conv2d(op, k: KernelContext) -> None:
    """Estimate every implementation, keep the fastest legal one (or the pinned one),
    and build it."""
    c = conv_case(op, k)
    plans = conv_plans(_with_scratch_builder(c))
    pinned = pinned_algorithm(op)
    if pinned is not None and not isinstance(plans[pinned], Plan):
        raise k.unsupported(f"{CONV_ALGORITHM} = {pinned}: {plans[pinned]}")
    legal = ranked(plans)
    if not legal:
        require_cube_type(k, c.x, c.w)  # no kernel at all for a type the cube does not multiply: say so, by kind
        raise k.unsupported("; ".join(f"{name}: {why}" for name, why in plans.items()))
    choice = pinned or legal[0].name
    k.explain(explain(c, plans, plans[choice]))
    ALGORITHMS[choice](c).emit()



def mean_plan(op: fused.Conv2DBiasActMeanOp, k: KernelContext):
    """The depthwise kernel of `op` computing its output's per-channel means too
    (`depthwise_conv.DepthwiseKernel._plane_mean`); ValueError says why there is
    none. THE predicate of the form: `fused-depthwise-mean` asks it (through
    `kernel_problem`) before making the op, the lowering builds from it."""
    c = conv_case(op, k)
    return plan_depthwise(k, c.g, c.x, c.w, c.bias, None, c.out, op.attr_value("act"), mean=k.outputs[1])


@kernel_for(fused.Conv2DBiasActMeanOp)
def lower_conv2d_mean(op: fused.Conv2DBiasActMeanOp, k: KernelContext) -> None:
    """A depthwise convolution with its output's per-channel means (one kernel)."""
    try:
        kernel = mean_plan(op, k)
    except ValueError as e:
        raise k.unsupported(str(e))
    k.explain(f"with per-channel means: estimated {kernel.estimate():.0f} cycles")
    kernel.emit()


def sliced_plans(c: ConvCase, partials, splits: int) -> dict[str, Plan | str]:
    """Every implementation's plan of the split-K form of `c` in `splits` slices
    (`conv.sliced_case`), or why it does not apply (all of them, with the reason
    split-K does not)."""
    try:
        sliced = sliced_case(c, partials, splits)
    except ValueError as e:
        return {name: str(e) for name in ALGORITHMS}
    return conv_plans(sliced)


@kernel_for(fused.Conv2DPartialsOp)
def lower_conv2d_partials(op: fused.Conv2DPartialsOp, k: KernelContext) -> None:
    """The K slices' products of a convolution as the batch of one kernel, the
    fastest legal implementation of the sliced convolution (`sliced_case`),
    each product stored in fp32 straight from L0C."""
    c = conv_case(op, k)
    splits = op.attr_value("splits")
    plans = sliced_plans(_with_scratch_builder(c), c.out, splits)
    legal = ranked(plans)
    if not legal:
        raise k.unsupported("; ".join(f"{name}: {why}" for name, why in plans.items()))
    k.explain(f"split-K {splits}: " + explain(c, plans, legal[0]))
    ALGORITHMS[legal[0].name](sliced_case(c, c.out, splits)).emit()
