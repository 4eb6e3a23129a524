"""`ge-precision`: compute an f32 graph's ops in f16 as CANN ATC's
`--precision_mode` does, because the Ascend cube multiplies fp16 (accumulating in
fp32 in L0C) four times faster than fp32 and fp16 tensors move half the bytes.

Modes (ATC's meaning, from the ATC / AOE `--precision_mode` pages, e.g.
hiascend.com canncommercial 800 atlasatcparam_16_0068 and aoepar_16_042; MindSpore's
`op_precision.precision_mode` page gives the same definitions in English):

* `must_keep_origin_dtype`: every op in the model's own type; the pass does nothing.
* `force_fp16`: "when an operator supports both float16 and float32, choose
  float16": every f32 op here (all have f16 kernels) is computed in f16.
* `allow_fp32_to_fp16`: "for cube (matrix) operators use float16; vector
  operators keep float32 where they support it" (all do here): matmul,
  batch_matmul and conv2d in f16, everything else in f32.
* `allow_mix_precision`: ATC's built-in lists: ops on the allow list (trust list,
  `precision_reduce` true) in f16, ops on the deny list (block list, false) in
  f32, the others (gray list) "follow the operator before them": here, f16 when
  every non-constant float operand was computed in f16.

The lists: the allow list is the cube ops (CANN's documented example is Conv2D
with `precision_reduce: true`). CANN's per-op flags live in the installed
`aic-<soc>-ops-info.json`, which the stored docs do not show, so the deny list is
[EST]: PyTorch autocast's float32 list (torch.amp docs: softmax, log_softmax,
layer_norm, exp, log, pow, rsqrt, reciprocal, sum, ...) mapped to ge ops, plus
the other normalisations and the mean. `keep-fp32=op,op` keeps ops in f32 in any
mode (ATC's `--keep_dtype`, and `--modify_mixlist`'s block-list additions);
`allow-fp16=op,op` moves ops onto the allow list of `allow_mix_precision`.

Pure data movement (reshape, transpose, slice, concat, ...) computes nothing, so
its precision is lossless either way: in every lowering mode it follows its
input, so an f16 matmul result reshaped for the next matmul is never cast up and
down again.

Where it runs: in `ge-compile`, after `ge-graph-opt` and before `ge-fuse`. After
graph optimisation, because batch norms are then already folded into f32 conv
weights (folded once, in f32, then rounded to f16 once) and the graph is as
small as it gets; before fusion, because a cast is then an ordinary elementwise
op that fusion puts into the cube kernel's epilogue or the producer's group,
and the fused kernels see plain f16 matmuls and convolutions they already
have kernels for. Casts go at the boundaries: an f32 value read by an f16 op is
cast once (the cast shared by every f16 reader), an f16 result read by an f32
op or returned is cast back once. Constant operands are converted here, at
compile time (`#ge.random` weights re-typed, dense ones rounded), so no kernel
converts a weight at run time; an op with a constant operand beyond fp16's
range (65504) stays f32 rather than read an infinite weight. Cube ops in f16 accumulate in fp32: that is what
the NPU's L0C does for every fp16 `mmad`, and what the reference interpreter
does for f16 products.

The module records the mode and the ops it lowered (`core/precision.py`), which
`ge-sim --check` uses to compare at fp16 tolerance, and `--report` prints.
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType, f16, f32
from xdsl.dialects.func import FuncOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from ...core import precision
from ...core.diagnostics import CompileError
from ...core.passes import record_statistic
from ...dialects.ge import GE_OPS, CastOp, ConstOp, GEOp
from ...dialects.ge.canonicalization import constant_from_array, defining_op, retyped_constant
from ...dialects.ge.const import RandomAttr, constant_value
from ...dialects.ge.formats import block_shape, format_of

CUBE_OPS = frozenset({"ge.matmul", "ge.batch_matmul", "ge.conv2d"})
"""The allow list: computed by the cube."""

DENY_LIST = frozenset(
    {
        "ge.softmax", "ge.log_softmax", "ge.layer_norm", "ge.rms_norm", "ge.batch_norm",
        "ge.reduce_sum", "ge.reduce_mean", "ge.exp", "ge.log", "ge.pow", "ge.rsqrt",
        "ge.reciprocal",
    }
)
"""[EST] ops `allow_mix_precision` keeps in f32 (see the module docstring)."""

MOVEMENT_OPS = frozenset(
    {
        "ge.reshape", "ge.transpose", "ge.expand", "ge.concat", "ge.split", "ge.slice",
        "ge.gather", "ge.pad", "ge.transdata", "ge.dropout", "ge.identity",
    }
)
"""Ops that only move elements: lossless in any precision, so they follow their input."""

GE_OP_NAMES = frozenset(op.name for op in GE_OPS)


def op_names(names: tuple[str, ...], option: str) -> frozenset[str]:
    """`softmax` or `ge.softmax` -> `ge.softmax`; an unknown name is an error
    naming the option."""
    full = {n if n.startswith("ge.") else f"ge.{n}" for n in (s.strip() for s in names) if n}
    unknown = sorted(full - GE_OP_NAMES)
    if unknown:
        raise CompileError(
            f"{option}: unknown op {', '.join(repr(u.removeprefix('ge.')) for u in unknown)}; "
            f"give ge op names such as matmul, softmax, layer_norm"
        )
    return frozenset(full)


def check_mode(mode: str, option: str) -> None:
    """A one-line error naming `option` and the modes unless `mode` is one."""
    if mode not in precision.MODES:
        raise CompileError(f"{option}: unknown precision mode '{mode}'; expected one of {', '.join(precision.MODES)}")


@dataclass(frozen=True)
class PrecisionPass(ModulePass):
    """Compute f32 ops in f16 as ATC's --precision_mode does (mode, keep-fp32, allow-fp16)."""

    name = "ge-precision"

    mode: str = precision.DEFAULT_MODE
    keep_fp32: tuple[str, ...] = ()
    allow_fp16: tuple[str, ...] = ()
    debug: bool = False

    def __post_init__(self):
        check_mode(self.mode, f"{self.name} mode")
        op_names(self.keep_fp32, f"{self.name} keep-fp32")
        op_names(self.allow_fp16, f"{self.name} allow-fp16")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.mode == precision.MUST_KEEP_ORIGIN_DTYPE:
            return
        policy = Policy(self.mode, op_names(self.keep_fp32, ""), op_names(self.allow_fp16, ""))
        lowered: Counter[str] = Counter()
        kept: Counter[str] = Counter()
        casts = 0
        for func in (f for f in op.walk() if isinstance(f, FuncOp)):
            for block in func.body.blocks:
                rewrite = _BlockRewrite(policy)
                rewrite.run(block)
                lowered.update(rewrite.lowered)
                kept.update(rewrite.kept)
                casts += rewrite.casts
        precision.record(op, self.mode, dict(lowered))
        record_statistic(self.name, "ops lowered to f16", sum(lowered.values()))
        record_statistic(self.name, "casts inserted", casts)
        if self.debug:
            print(f"[{self.name}] {precision.summary(op)}; kept f32: "
                  f"{_listed(kept) or 'none'}; {casts} casts inserted", file=sys.stderr)


def _listed(counts: Counter[str]) -> str:
    return ", ".join(f"{name.removeprefix('ge.')} x{n}" for name, n in sorted(counts.items()))


@dataclass(frozen=True)
class Policy:
    """Which op runs in f16, given whether its inputs were computed in f16."""

    mode: str
    keep: frozenset[str]
    allow: frozenset[str]

    def wants_f16(self, name: str, inputs_f16: bool) -> bool:
        if name in self.keep:
            return False
        if self.mode == precision.FORCE_FP16:
            return True
        if name in CUBE_OPS or (self.mode == precision.ALLOW_MIX_PRECISION and name in self.allow):
            return True
        if name in MOVEMENT_OPS:
            return inputs_f16
        if self.mode == precision.ALLOW_MIX_PRECISION:
            return name not in DENY_LIST and inputs_f16
        return False


def _in_f16(t: TensorType) -> TensorType:
    """`t` with f16 elements, its physical format (encoding) kept: FRACTAL_NZ's
    blocks are 16 x 16 either way, but NC1HWC0's and FRACTAL_Z's C0 is 32 bytes
    of elements, so those are chosen after this pass (ge-compile runs ge-layout
    after it)."""
    fmt = format_of(t)
    if block_shape(fmt, f16) != block_shape(fmt, f32):
        raise CompileError(
            f"ge-precision: {t} is already in {fmt.value}, whose blocks depend on the element type; "
            f"run ge-precision before ge-layout (ge-compile{{precision=...}} does)"
        )
    return TensorType(f16, t.get_shape(), t.encoding)


def _is_f32(value: SSAValue) -> bool:
    return isinstance(value.type, TensorType) and value.type.element_type == f32


def _candidate(op: Operation) -> bool:
    """An op the pass may compute in f16: a ge op (not a constant, whose readers
    convert it, nor a cast, whose type is the point) with f32 results only."""
    if not isinstance(op, GEOp) or isinstance(op, ConstOp | CastOp) or not op.results:
        return False
    return all(_is_f32(r) for r in op.results) and all(isinstance(v.type, TensorType) for v in op.operands)


@dataclass
class _BlockRewrite:
    """One block, in order: each candidate op is rebuilt in f16 or left alone;
    f16 results get one cast back to f32 for the readers that stay f32."""

    policy: Policy
    lowered: Counter = field(default_factory=Counter)
    kept: Counter = field(default_factory=Counter)
    casts: int = 0
    computed_f16: dict[SSAValue, SSAValue] = field(default_factory=dict)  # f32 value -> its f16 original
    converted: dict[SSAValue, SSAValue] = field(default_factory=dict)  # f32 value -> cast or f16 constant
    up_casts: list[Operation] = field(default_factory=list)
    constants: set[Operation] = field(default_factory=set)

    def run(self, block: Block) -> None:
        for op in list(block.ops):
            if not _candidate(op):
                continue
            varying = [v for v in op.operands if _is_f32(v) and defining_op(v, ConstOp) is None]
            inputs_f16 = bool(varying) and all(v in self.computed_f16 for v in varying)
            if self.policy.wants_f16(op.name, inputs_f16) and _constants_fit_f16(op):
                self._lower(op)
                self.lowered[op.name] += 1
            else:
                self.kept[op.name] += 1
        self._erase_unused()

    def _lower(self, op: GEOp) -> None:
        operands = [self._as_f16(v) if _is_f32(v) else v for v in op.operands]
        new = type(op).new(
            *operands,
            result_type=[_in_f16(r.type) for r in op.results],
            attributes=dict(op.attributes),
            **vars(op.attr_values()),
        )
        new.location = op.location
        Rewriter.insert_op(new, InsertPoint.before(op))
        for old, value in zip(op.results, new.results, strict=True):
            back = CastOp.new(value, result_type=old.type)
            back.location = op.location
            Rewriter.insert_op(back, InsertPoint.after(new))
            value.name_hint = old.name_hint
            old.replace_all_uses_with(back.result)
            self.computed_f16[back.result] = value
            self.up_casts.append(back)
            self.casts += 1
        Rewriter.erase_op(op)

    def _as_f16(self, value: SSAValue) -> SSAValue:
        """`value` in f16: the f16 result it was cast up from, its constant converted
        now, or one cast shared by every f16 reader."""
        if value in self.computed_f16:
            return self.computed_f16[value]
        if value in self.converted:
            return self.converted[value]
        const = defining_op(value, ConstOp)
        if const is not None:
            new = _f16_constant(const)
            self.constants.add(const)
        else:
            new = CastOp.new(value, result_type=_in_f16(value.type))
            self.casts += 1
        owner = value.owner
        where = InsertPoint.after(owner) if isinstance(owner, Operation) else InsertPoint.at_start(owner)
        Rewriter.insert_op(new, where)
        self.converted[value] = new.results[0]
        return new.results[0]

    def _erase_unused(self) -> None:
        for op in (*self.up_casts, *self.constants):
            if not any(r.uses for r in op.results):
                Rewriter.erase_op(op)
                self.casts -= isinstance(op, CastOp)


F16_MAX = 65504.0

RANDOM_SPAN_STDS = 8.0
"""A normal `#ge.random` weight is taken to stay within mean +- 8 std (numpy's
draws of any size seen here do; P(|z| > 8) ~ 1e-15)."""


def _constants_fit_f16(op: Operation) -> bool:
    """Every f32 constant operand of `op` is finite in f16. One that is not keeps
    the op in f32: rounding a weight to inf at compile time would be a wrong
    answer the compiler chose (values computed at run time can still overflow,
    as on the NPU; `ge-sim --check` reports them)."""
    for v in op.operands:
        const = defining_op(v, ConstOp) if _is_f32(v) else None
        if const is not None and _largest_magnitude(const) > F16_MAX:
            return False
    return True


def _largest_magnitude(const: ConstOp) -> float:
    value = const.value
    if isinstance(value, RandomAttr):
        a, b = value.a.data, value.b.data
        if value.distribution.data == "normal":
            return abs(a) + RANDOM_SPAN_STDS * abs(b)
        return max(abs(a), abs(b))
    array = constant_value(value, const.result.type)
    return float(np.max(np.abs(array))) if array.size else 0.0


def _f16_constant(const: ConstOp) -> Operation:
    """The constant rounded to f16 at compile time. A `#ge.random` weight is
    re-typed: it draws the same values and rounds them once to f16 (a normal
    draw is f32 first, so this is exactly the f32 weight rounded; a uniform one
    rounds from float64, which can differ from rounding the f32 weight by one
    f16 ulp in a rare tie)."""
    t = _in_f16(const.result.type)
    if isinstance(const.value, RandomAttr):
        return retyped_constant(const, t)
    return constant_from_array(constant_value(const.value, const.result.type).astype("float16"), t)
