"""Random `ge` graphs for property tests: a hypothesis strategy shared by the
graph optimisation, fusion and lowering tests.

Stable API::

    from hypothesis import given
    from random_graphs import GENERATED_OPS, RandomGraph, graphs, graphs_with

    @given(graphs())                       # or graphs(max_ops=4, element_types=("f16",))
    def test_my_pass(g: RandomGraph):
        module = g.module()                # a fresh, verified ModuleOp (its own context)
        g.text                             # the same module as MLIR text (shown on failure)
        g.inputs                           # random inputs for @main, in argument order
        g.op_names                         # the ge op names the graph contains

    @given(graphs_with("ge.conv2d"))       # at least one ge.conv2d in every graph

* `graphs(max_ops=8, element_types=("f16", "f32", "i32"), ops=None, max_elements=512)`:
  a `func.func @main` of 1..max_ops generated ops (plus the constants and small
  helper ops they need), drawn from `ops` (default: every name in `GENERATED_OPS`,
  which is every op of `dialects/ge`, `GE_OPS`). Integer graphs use the ops that
  accept integers.
* `graphs_with(op_name, **options)`: the same, with `op_name` among the ops.

What the graphs contain, so passes meet real work:

* shapes of rank 0 to 4 with sizes 1, 2, 3, 4, 5, 7, 8, 16 and 17 (not multiples of
  16, size 1, several fractals), numpy broadcasting between operands;
* f16 and f32 (and i32) values, casts between them;
* constants of every kind: dense, splat (0, 1, -1, 2, true, false... so
  simplification patterns fire), and `#ge.random`; some ops have only constant
  operands, so constant folding has work; dead values (not every value is returned);
* chains that canonicalisation rewrites (transpose into matmul, cast round trips,
  batch_norm after conv2d or matmul with constant statistics) and `ge.transdata`
  round trips through NC1HWC0 / FRACTAL_NZ / FRACTAL_Z with an op in the format.

The graphs are numerically tame by construction, so "same numbers before and
after" is a meaningful check at `simulator/compare.py`'s tolerances: operands of
log / sqrt / rsqrt / reciprocal / div / pow are made positive (|x| + 0.5), exp
takes tanh(x), weights are scaled by 1/sqrt(fan-in), batch_norm variances are
positive, gather indices are in range, and integer / boolean values come from
leaves (arguments or constants), never from rounding a computed float.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, ModuleOp, TensorType, f16, f32, i1, i32, i64
from xdsl.ir import Attribute, Block, Region, SSAValue

from gecomp.core import dtypes
from gecomp.dialects.context import make_context
from gecomp.core.parsing import parse_module, verify_module
from gecomp.dialects import ge
from gecomp.dialects.ge.canonicalization import splat_constant
from gecomp.dialects.ge.formats import Format, format_error, with_format
from gecomp.core.signature import input_specs, main_function, random_inputs

__all__ = ["GENERATED_OPS", "RandomGraph", "graphs", "graphs_with"]

DIMS = (1, 2, 3, 4, 5, 7, 8, 16, 17)
_ELEMENT_TYPES = {"f16": f16, "f32": f32, "i32": i32}


@dataclass(frozen=True)
class RandomGraph:
    """A generated module (as text) and inputs for its @main."""

    text: str
    inputs: tuple[np.ndarray, ...] = field(compare=False)
    op_names: frozenset[str]

    def module(self) -> ModuleOp:
        """A freshly parsed and verified module, in a context of its own."""
        module = parse_module(make_context(), self.text, "<random graph>")
        verify_module(module)
        return module

    def __repr__(self) -> str:
        shapes = ", ".join(f"{a.dtype}{list(a.shape)}" for a in self.inputs)
        return f"RandomGraph(inputs=[{shapes}])\n{self.text}"


# ---- the builder -------------------------------------------------------------------------


class _Builder:
    """Grows one block op by op; `pool` holds the plain-typed values ops may reuse."""

    def __init__(self, draw, element_type: Attribute, max_elements: int):
        self.draw = draw
        self.element_type = element_type
        self.max_elements = max_elements
        self.rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        self.block = Block()
        self.pool: list[SSAValue] = []
        self.names: set[str] = set()

    # -- drawing ------------------------------------------------------------------------

    def choice(self, options: Sequence):
        return self.draw(st.sampled_from(list(options)))

    def integer(self, low: int, high: int) -> int:
        return self.draw(st.integers(low, high))

    def flag(self) -> bool:
        return self.draw(st.booleans())

    def shape(self, min_rank: int = 0, max_rank: int = 4, rank: int | None = None) -> tuple[int, ...]:
        rank = self.integer(min_rank, max_rank) if rank is None else rank
        dims = []
        for _ in range(rank):
            budget = self.max_elements // max(1, math.prod(dims))
            dims.append(self.choice([d for d in DIMS if d <= budget] or [1]))
        return tuple(dims)

    # -- values -------------------------------------------------------------------------

    @property
    def is_float(self) -> bool:
        return dtypes.is_float(self.element_type)

    def emit(self, op, pooled: bool = True):
        self.block.add_op(op)
        self.names.add(op.name)
        if pooled:
            self.pool.extend(r for r in op.results if _numel(r.type) <= self.max_elements)
        return op

    def arg(self, t: TensorType) -> SSAValue:
        return self.block.insert_arg(t, len(self.block.args))

    def leaf(self, shape, element_type: Attribute | None = None,
             kinds=("arg", "arg", "arg", "random", "dense", "splat")) -> SSAValue:
        """A new argument or constant of this shape (half of the time an argument)."""
        element_type = element_type or self.element_type
        t = TensorType(element_type, list(shape))
        kind = self.choice(kinds)
        if kind == "arg":
            return self.arg(t)
        if kind == "splat":
            return self.splat(self.choice(_splat_values(element_type)), t)
        if kind == "random":
            return self.emit(ge.ConstOp.from_value(_random_attr(self, element_type), t), False).result
        return self.emit(ge.ConstOp.from_array(_dense_values(self.rng, shape, element_type), t), False).result

    def splat(self, scalar, t: TensorType) -> SSAValue:
        return self.emit(splat_constant(scalar, t), False).result

    def weight(self, shape, fan_in: int) -> SSAValue:
        """A constant (or sometimes an argument) scaled like a trained weight."""
        t = TensorType(self.element_type, list(shape))
        if not self.is_float:
            return self.leaf(shape, kinds=("dense", "random", "arg"))
        std = 1.0 / math.sqrt(max(fan_in, 1))
        kind = self.choice(("random", "dense", "arg"))
        if kind == "random":
            attr = ge.RandomAttr.normal(self.integer(0, 1000), 0.0, std)
            return self.emit(ge.ConstOp.from_value(attr, t), False).result
        if kind == "dense":
            values = self.rng.standard_normal(shape) * std
            return self.emit(ge.ConstOp.from_array(values, t), False).result
        return self.scale(self.arg(t), std)

    def scale(self, value: SSAValue, factor: float) -> SSAValue:
        factor_const = self.splat(factor, TensorType(value.type.element_type, []))
        return self.emit(ge.MulOp.new(value, factor_const), False).result

    def value(self, shape=None, element_type: Attribute | None = None, min_rank: int = 0, max_rank: int = 4,
              rank: int | None = None) -> SSAValue:
        """A pooled value meeting the constraints (most of the time), else a new leaf."""
        element_type = element_type or self.element_type
        candidates = [
            v for v in self.pool
            if v.type.element_type == element_type
            and (shape is None or tuple(v.type.get_shape()) == tuple(shape))
            and (rank is None or v.type.get_num_dims() == rank)
            and min_rank <= v.type.get_num_dims() <= max_rank
        ]
        if candidates and self.integer(0, 3) > 0:
            return self.choice(candidates)
        if shape is None:
            shape = self.shape(min_rank, max_rank, rank)
        return self.leaf(shape, element_type)

    def positive(self, value: SSAValue) -> SSAValue:
        """|x| + 0.5 (|x| + 1 for integers): a safe divisor, logarithm or power base."""
        t = value.type
        magnitude = self.emit(ge.AbsOp.new(value), False).result
        offset = self.splat(0.5 if dtypes.is_float(t.element_type) else 1, TensorType(t.element_type, []))
        return self.emit(ge.AddOp.new(magnitude, offset), False).result

    def bounded(self, value: SSAValue) -> SSAValue:
        return self.emit(ge.TanhOp.new(value), False).result

    def partner_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """A shape broadcast-compatible with `shape` (same, scalar, suffix, with ones)."""
        kind = self.choice(("same", "same", "scalar", "suffix", "ones", "wider"))
        if kind == "scalar" or not shape:
            return () if kind == "scalar" else shape
        if kind == "suffix":
            return shape[self.integer(0, len(shape)):]
        if kind == "ones":
            return tuple(1 if self.flag() else d for d in shape)
        if kind == "wider" and len(shape) < 4 and math.prod(shape) * 2 <= self.max_elements:
            return (2, *shape)
        return shape


def _numel(t: TensorType) -> int:
    return math.prod(t.get_shape())


def _splat_values(element_type: Attribute) -> tuple:
    if dtypes.is_bool(element_type):
        return (True, False)
    if dtypes.is_integer(element_type):
        return (0, 1, -1, 2, 3)
    return (0.0, 1.0, -1.0, 2.0, 0.5, -0.75)


def _random_attr(b: _Builder, element_type: Attribute) -> ge.RandomAttr:
    seed = b.integer(0, 1000)
    if dtypes.is_float(element_type) and b.flag():
        return ge.RandomAttr.normal(seed, 0.0, 1.0)
    if dtypes.is_integer(element_type):
        return ge.RandomAttr.uniform(seed, -3.0, 4.0)
    return ge.RandomAttr.uniform(seed, -1.0, 1.0)


def _dense_values(rng: np.random.Generator, shape, element_type: Attribute) -> np.ndarray:
    if dtypes.is_bool(element_type):
        return rng.random(shape) < 0.5
    if dtypes.is_integer(element_type):
        return rng.integers(-3, 4, size=shape)
    return rng.standard_normal(shape)


# ---- one maker per op kind -----------------------------------------------------------------

Maker = Callable[[_Builder, type], None]
_MAKERS: dict[str, tuple[Maker, bool]] = {}
"""op name -> (maker, accepts integer graphs)."""


def _maker(*op_classes, integers: bool = True):
    def register(fn: Maker) -> Maker:
        for op_class in op_classes:
            _MAKERS[op_class.name] = (lambda b, fn=fn, op_class=op_class: fn(b, op_class), integers)
        return fn

    return register


@_maker(ge.ConstOp)
def _make_const(b: _Builder, op_class) -> None:
    value = b.leaf(b.shape(), kinds=("random", "dense", "splat"))
    b.pool.append(value)


@_maker(ge.AddOp, ge.SubOp, ge.MulOp, ge.MaximumOp, ge.MinimumOp, ge.DivOp, ge.PowOp)
def _make_binary(b: _Builder, op_class) -> None:
    lhs = b.value()
    shape = b.partner_shape(tuple(lhs.type.get_shape()))
    if op_class is ge.PowOp:
        lhs = b.positive(lhs) if b.is_float else lhs
        exponents = (1.0, 2.0, 0.5, -1.0, 3.0) if b.is_float else (1, 2, 3)
        if b.flag() or not b.is_float:
            rhs = b.splat(b.choice(exponents), TensorType(b.element_type, list(shape)))
        else:
            rhs = b.bounded(b.value(shape))
    else:
        rhs = b.value(shape)
        if op_class is ge.DivOp:
            rhs = b.positive(rhs)
        elif b.integer(0, 3) == 0:
            rhs = b.splat(b.choice(_splat_values(b.element_type)), TensorType(b.element_type, list(shape)))
    if op_class is not ge.PowOp and op_class is not ge.DivOp and b.flag():
        lhs, rhs = rhs, lhs
    b.emit(op_class.new(lhs, rhs))


@_maker(ge.NegOp, ge.AbsOp, ge.ReluOp, ge.IdentityOp, ge.DropoutOp)
def _make_unary(b: _Builder, op_class) -> None:
    x = b.value()
    if b.integer(0, 3) == 0:  # a chain canonicalisation folds: neg(neg x), relu(relu x)...
        x = b.emit(op_class.new(x), False).result
    attrs = {"ratio": b.choice((0.0, 0.1, 0.5))} if op_class is ge.DropoutOp else {}
    b.emit(op_class.new(x, **attrs))


@_maker(ge.TanhOp, ge.SigmoidOp, ge.GeluOp, ge.SiluOp, ge.ErfOp, ge.LeakyReluOp, ge.ExpOp,
        ge.LogOp, ge.SqrtOp, ge.RsqrtOp, ge.ReciprocalOp, integers=False)
def _make_float_unary(b: _Builder, op_class) -> None:
    x = b.value()
    if op_class is ge.ExpOp:
        x = b.bounded(x)
    elif op_class in (ge.LogOp, ge.SqrtOp, ge.RsqrtOp, ge.ReciprocalOp):
        x = b.positive(x)
        if op_class is ge.ReciprocalOp and b.flag():  # reciprocal(sqrt x) becomes rsqrt
            x = b.emit(ge.SqrtOp.new(x), False).result
    attrs = {}
    if op_class is ge.GeluOp:
        attrs["approximate"] = b.choice(("none", "tanh"))
    if op_class is ge.LeakyReluOp:
        attrs["alpha"] = b.choice((0.01, 0.2))
    b.emit(op_class.new(x, **attrs))


@_maker(ge.CastOp)
def _make_cast(b: _Builder, op_class) -> None:
    kind = b.choice(("float", "round_trip", "same", "to_int", "to_bool", "from_int"))
    if kind in ("to_int", "to_bool"):  # from a leaf: rounding never sees a computed value
        source = b.leaf(b.shape(), f32 if b.is_float else b.element_type, kinds=("arg", "dense", "random"))
        target = i32 if kind == "to_int" else i1
        b.emit(ge.CastOp.new(source, result_type=TensorType(target, list(source.type.get_shape()))))
        return
    if kind == "from_int":
        source = b.leaf(b.shape(), i32, kinds=("arg", "dense", "random"))
        b.emit(ge.CastOp.new(source, result_type=TensorType(b.element_type, list(source.type.get_shape()))))
        return
    x = b.value()
    shape = list(x.type.get_shape())
    if kind == "same" or not b.is_float:
        b.emit(ge.CastOp.new(x, result_type=TensorType(b.element_type, shape)))
        return
    other = f32 if b.element_type == f16 else f16
    wide = b.emit(ge.CastOp.new(x, result_type=TensorType(other, shape)), kind == "float")
    if kind == "round_trip":
        b.emit(ge.CastOp.new(wide.result, result_type=TensorType(b.element_type, shape)))


@_maker(ge.WhereOp)
def _make_where(b: _Builder, op_class) -> None:
    x = b.value()
    shape = tuple(x.type.get_shape())
    cond_shape = b.partner_shape(shape)
    cond_kind = b.choice(("leaf", "leaf", "splat", "cast"))
    if cond_kind == "splat":
        cond = b.splat(b.flag(), TensorType(i1, list(cond_shape)))
    elif cond_kind == "cast":
        source = b.leaf(cond_shape, f32, kinds=("arg", "dense"))
        cond = b.emit(ge.CastOp.new(source, result_type=TensorType(i1, list(cond_shape))), False).result
    else:
        cond = b.leaf(cond_shape, i1, kinds=("arg", "dense"))
    y = b.value(b.partner_shape(shape))
    if b.flag():
        x, y = y, x
    b.emit(ge.WhereOp.new(cond, x, y))


@_maker(ge.CompareOp, ge.AndOp, ge.OrOp, ge.NotOp)
def _make_mask(b: _Builder, op_class) -> None:
    """A mask (comparisons combined by and / or / not) selecting between two values,
    as attention masks do: the mask is i1, the result of the element type."""
    x = b.value()
    shape = tuple(x.type.get_shape())

    def comparison():
        rhs = b.value(b.partner_shape(shape))
        predicate = b.choice(tuple(ge.COMPARISONS))
        return b.emit(ge.CompareOp.new(x, rhs, predicate=predicate), False).result

    mask = comparison()
    if op_class in (ge.AndOp, ge.OrOp):
        mask = b.emit(op_class.new(mask, comparison()), False).result
    elif op_class is ge.NotOp:
        mask = b.emit(ge.NotOp.new(mask), False).result
    other = b.value(tuple(mask.type.get_shape()))
    b.emit(ge.WhereOp.new(mask, x, other))


@_maker(ge.ModOp)
def _make_mod(b: _Builder, op_class) -> None:
    x = b.value()
    divisor = b.positive(b.value(b.partner_shape(tuple(x.type.get_shape()))))
    if b.flag():
        divisor = b.emit(ge.NegOp.new(divisor), False).result  # the result takes the divisor's sign
    b.emit(ge.ModOp.new(x, divisor, fmod=b.flag()))


@_maker(ge.BitwiseAndOp, ge.BitwiseOrOp, ge.BitwiseXorOp, ge.BitShiftOp, ge.BitwiseNotOp)
def _make_bitwise(b: _Builder, op_class) -> None:
    """Bit operations on integers (i32 leaves in a float graph, whose result is
    cast back); shifts by 0 to 7 bits, so values stay in range."""
    integer = b.element_type if not b.is_float else i32
    x = b.value(element_type=integer) if not b.is_float else b.leaf(b.shape(), i32, kinds=("arg", "dense", "random"))
    shape = tuple(x.type.get_shape())
    if op_class is ge.BitwiseNotOp:
        op = ge.BitwiseNotOp.new(x)
    elif op_class is ge.BitShiftOp:
        amount = b.splat(b.integer(0, 7), TensorType(integer, list(b.partner_shape(shape))))
        op = ge.BitShiftOp.new(x, amount, direction=b.choice(("left", "right")))
    else:
        op = op_class.new(x, b.leaf(b.partner_shape(shape), integer, kinds=("arg", "dense", "splat")))
    if not b.is_float:
        b.emit(op)
        return
    y = b.emit(op, False).result
    b.emit(ge.CastOp.new(y, result_type=TensorType(b.element_type, list(y.type.get_shape()))))


@_maker(ge.SignOp)
def _make_sign(b: _Builder, op_class) -> None:
    b.emit(ge.SignOp.new(b.value()))


@_maker(ge.FloorOp, ge.CeilOp, ge.RoundOp, *ge.TRIGONOMETRIC_OPS, integers=False)
def _make_rounding_or_trigonometric(b: _Builder, op_class) -> None:
    """Inputs kept in each function's domain: (-1, 1) for asin / acos / atanh (a
    scaled tanh), [1, ...) for acosh, |x| < 1 for tan, small for sinh / cosh."""
    x = b.value()
    if op_class in (ge.AsinOp, ge.AcosOp, ge.AtanhOp, ge.TanOp, ge.SinhOp, ge.CoshOp):
        x = b.scale(b.bounded(x), 0.9)
    elif op_class is ge.AcoshOp:
        x = b.positive(x)
        x = b.emit(ge.AddOp.new(x, b.splat(0.5, TensorType(b.element_type, []))), False).result
    elif op_class in (ge.FloorOp, ge.CeilOp, ge.RoundOp):
        x = b.scale(x, 3.3)  # values away from the halves most of the time
    b.emit(op_class.new(x))


def _maybe_transposed(b: _Builder, shape: tuple[int, ...], make: Callable[[tuple[int, ...]], SSAValue]) -> SSAValue:
    """A value of `shape`, sometimes produced by a transpose of its last two dims
    (which canonicalisation moves into the matmul's flags)."""
    if len(shape) >= 2 and b.integer(0, 3) == 0:
        swapped = (*shape[:-2], shape[-1], shape[-2])
        perm = (*range(len(shape) - 2), len(shape) - 1, len(shape) - 2)
        return b.emit(ge.TransposeOp.new(make(swapped), perm=perm), False).result
    return make(shape)


@_maker(ge.MatmulOp, ge.BatchMatmulOp)
def _make_matmul(b: _Builder, op_class) -> None:
    batched = op_class is ge.BatchMatmulOp
    lhs = b.value(min_rank=3 if batched else 2, max_rank=4 if batched else 2)
    ta, tb = b.flag(), b.flag()
    *batch, rows, cols = lhs.type.get_shape()
    k = rows if ta else cols
    n = b.choice([d for d in DIMS if d * k <= b.max_elements] or [1])
    rhs_batch = tuple(batch[b.integer(0, len(batch)):]) if batched else ()
    rhs_shape = (*rhs_batch, n, k) if tb else (*rhs_batch, k, n)
    if b.flag():
        rhs = _maybe_transposed(b, rhs_shape, lambda s: b.weight(s, k))
    else:
        rhs = _maybe_transposed(b, rhs_shape, lambda s: b.value(s))
    b.emit(op_class.new(lhs, rhs, transpose_a=ta, transpose_b=tb))


def _conv_input(b: _Builder) -> SSAValue:
    return b.value(min_rank=4, max_rank=4)


@_maker(ge.Conv2DOp, integers=False)
def _make_conv(b: _Builder, op_class) -> SSAValue:
    x = _conv_input(b)
    n, c, h, w = x.type.get_shape()
    groups = b.choice([g for g in (1, 2, 3) if c % g == 0])
    out = groups * b.choice((1, 2, 3, 8, 16, 17))
    kh, kw = b.integer(1, 3), b.integer(1, 3)
    dilations = (b.integer(1, 2), b.integer(1, 2))
    pads = [b.integer(0, 2) for _ in range(4)]
    span_h, span_w = (kh - 1) * dilations[0] + 1, (kw - 1) * dilations[1] + 1
    if h + pads[0] + pads[2] < span_h or w + pads[1] + pads[3] < span_w:
        kh = kw = 1
        dilations = (1, 1)
    strides = (b.integer(1, 2), b.integer(1, 2))
    weight = b.weight((out, c // groups, kh, kw), c // groups * kh * kw)
    conv = ge.Conv2DOp.new(x, weight, strides=strides, pads=pads, dilations=dilations, groups=groups)
    if _numel(conv.result.type) > b.max_elements * 4:
        conv = ge.Conv2DOp.new(x, b.weight((1, c, 1, 1), c))
    return b.emit(conv).result


@_maker(ge.MaxPool2DOp, ge.AvgPool2DOp, integers=False)
def _make_pool(b: _Builder, op_class) -> None:
    x = _conv_input(b)
    h, w = x.type.get_shape()[2:]
    kernel = (b.integer(1, min(3, h)), b.integer(1, min(3, w)))
    pads = [b.integer(0, k - 1) for k in (*kernel, *kernel)]
    attrs = {"kernel": kernel, "strides": (b.integer(1, 2), b.integer(1, 2)), "pads": pads, "ceil_mode": b.flag()}
    if op_class is ge.AvgPool2DOp:
        attrs["count_include_pad"] = b.flag()
    b.emit(op_class.new(x, **attrs))


@_maker(ge.GlobalAvgPoolOp, integers=False)
def _make_global_pool(b: _Builder, op_class) -> None:
    b.emit(ge.GlobalAvgPoolOp.new(b.value(min_rank=3, max_rank=4)))


@_maker(ge.BiasAddOp)
def _make_bias_add(b: _Builder, op_class) -> None:
    x = b.value(min_rank=1)
    shape = x.type.get_shape()
    axis = b.integer(-len(shape), len(shape) - 1)
    bias = b.leaf((shape[axis],))
    b.emit(ge.BiasAddOp.new(x, bias, axis=axis))


@_maker(ge.BatchNormOp, integers=False)
def _make_batch_norm(b: _Builder, op_class) -> None:
    producer = b.choice(("conv", "matmul", "any"))
    if producer == "conv":
        x = _make_conv(b, ge.Conv2DOp)
    elif producer == "matmul":
        lhs = b.value(rank=2)
        k = lhs.type.get_shape()[1]
        n = b.choice([d for d in DIMS if d * k <= b.max_elements] or [1])
        tb = b.flag()
        x = b.emit(ge.MatmulOp.new(lhs, b.weight((n, k) if tb else (k, n), k), transpose_b=tb)).result
    else:
        x = b.value(min_rank=2)
    channels = (x.type.get_shape()[1],)
    constant = b.integer(0, 3) < 3  # mostly constant statistics: the foldable case
    kinds = ("random", "dense") if constant else ("arg",)
    t = TensorType(b.element_type, list(channels))

    def parameter(low: float, high: float) -> SSAValue:
        if not constant:
            return b.arg(t)
        if b.choice(kinds) == "random":
            return b.emit(ge.ConstOp.from_value(ge.RandomAttr.uniform(b.integer(0, 1000), low, high), t), False).result
        return b.emit(ge.ConstOp.from_array(b.rng.uniform(low, high, channels), t), False).result

    scale, bias, mean = parameter(0.5, 1.5), parameter(-0.5, 0.5), parameter(-0.5, 0.5)
    variance = parameter(0.5, 1.5) if constant else b.positive(b.arg(t))
    epsilon = b.choice((1e-5, 1e-3))
    b.emit(ge.BatchNormOp.new(x, scale, bias, mean, variance, epsilon=epsilon))


@_maker(ge.LayerNormOp, ge.RMSNormOp, integers=False)
def _make_norm(b: _Builder, op_class) -> None:
    x = b.value(min_rank=1)
    shape = tuple(x.type.get_shape())
    axis = b.integer(-len(shape), len(shape) - 1)
    normalized = shape[axis % len(shape):]
    parameters = [b.leaf(normalized) for _ in op_class.get_irdl_definition().operands[1:]]
    b.emit(op_class.new(x, *parameters, axis=axis, epsilon=b.choice((1e-5, 1e-6))))


@_maker(ge.SoftmaxOp, ge.LogSoftmaxOp, integers=False)
def _make_softmax(b: _Builder, op_class) -> None:
    x = b.value(min_rank=1)
    rank = x.type.get_num_dims()
    b.emit(op_class.new(x, axis=b.integer(-rank, rank - 1)))


@_maker(ge.ReduceSumOp, ge.ReduceMeanOp, ge.ReduceMaxOp)
def _make_reduce(b: _Builder, op_class) -> None:
    x = b.value(min_rank=1)
    rank = x.type.get_num_dims()
    axes = [axis for axis in range(rank) if b.flag()]
    if axes and b.flag():
        axes = [axis - rank for axis in axes]
    b.emit(op_class.new(x, axes=axes, keepdims=b.flag()))


@_maker(ge.TransposeOp)
def _make_transpose(b: _Builder, op_class) -> None:
    x = b.value(min_rank=1)
    perm = b.draw(st.permutations(list(range(x.type.get_num_dims()))))
    b.emit(ge.TransposeOp.new(x, perm=perm))


def _factors(n: int) -> list[int]:
    factors, p = [], 2
    while n > 1:
        while n % p == 0:
            factors.append(p)
            n //= p
        p += 1
    return factors


@_maker(ge.ReshapeOp)
def _make_reshape(b: _Builder, op_class) -> None:
    x = b.value()
    shape = tuple(x.type.get_shape())
    if b.integer(0, 4) == 0:
        target = shape
    else:
        factors = b.draw(st.permutations(_factors(math.prod(shape))))
        rank = b.integer(1 if factors else 0, min(4, max(len(factors), 1)))
        target = [1] * rank
        for f in factors:
            target[b.integer(0, rank - 1)] *= f
    b.emit(ge.ReshapeOp.new(x, result_type=TensorType(x.type.element_type, list(target))))


@_maker(ge.ExpandOp)
def _make_expand(b: _Builder, op_class) -> None:
    x = b.value(max_rank=3)
    shape = [d if d != 1 or b.flag() else b.choice((2, 3, 5)) for d in x.type.get_shape()]
    if b.flag():
        shape.insert(0, b.choice((1, 2, 3)))
    if math.prod(shape) > b.max_elements:
        shape = list(x.type.get_shape())
    b.emit(ge.ExpandOp.new(x, result_type=TensorType(x.type.element_type, shape)))


@_maker(ge.ConcatOp)
def _make_concat(b: _Builder, op_class) -> None:
    first = b.value(min_rank=1)
    shape = tuple(first.type.get_shape())
    axis = b.integer(0, len(shape) - 1)
    inputs = [first]
    for _ in range(b.integer(0, 2)):
        other = list(shape)
        other[axis] = b.choice((1, 2, 3))
        inputs.append(b.value(tuple(other)))
    if b.flag():
        axis -= len(shape)
    b.emit(ge.ConcatOp.new(*inputs, axis=axis))


@_maker(ge.SplitOp)
def _make_split(b: _Builder, op_class) -> None:
    x = b.value(min_rank=1)
    shape = x.type.get_shape()
    axis = b.integer(0, len(shape) - 1)
    size = shape[axis]
    cuts = sorted(set(b.draw(st.lists(st.integers(1, size - 1), max_size=2)))) if size > 1 else []
    bounds = [0, *cuts, size]
    sizes = [hi - lo for lo, hi in zip(bounds, bounds[1:])]
    b.emit(ge.SplitOp.new(x, axis=axis, sizes=sizes))


@_maker(ge.SliceOp)
def _make_slice(b: _Builder, op_class) -> None:
    x = b.value(min_rank=1)
    starts, ends, steps = [], [], []
    full = b.integer(0, 3) == 0
    for size in x.type.get_shape():
        step = 1 if full else b.choice((1, 1, 2, -1))
        if step > 0:
            start = 0 if full else b.integer(0, size - 1)
            end = size if full else b.integer(start + 1, size)
        else:
            start = b.integer(0, size - 1)
            end = b.integer(-1, start - 1)
        starts.append(start)
        ends.append(end)
        steps.append(step)
    b.emit(ge.SliceOp.new(x, starts=starts, ends=ends, steps=steps))


@_maker(ge.GatherOp)
def _make_gather(b: _Builder, op_class) -> None:
    data = b.value(min_rank=1)
    shape = data.type.get_shape()
    axis = b.integer(-len(shape), len(shape) - 1)
    size = shape[axis]
    index_shape = b.shape(0, 2)
    indices = b.rng.integers(-size, size, size=index_shape)
    index_type = TensorType(b.choice((i32, i64)), list(index_shape))
    index_const = b.emit(ge.ConstOp.from_array(indices, index_type), False).result
    b.emit(ge.GatherOp.new(data, index_const, axis=axis))


@_maker(ge.PadOp)
def _make_pad(b: _Builder, op_class) -> None:
    x = b.value(min_rank=1, max_rank=3)
    shape = x.type.get_shape()
    mode = b.choice(("constant", "reflect", "edge"))
    zero = b.integer(0, 3) == 0
    limit = (lambda d: min(2, d - 1)) if mode == "reflect" else (lambda d: 2)
    pads = [0 if zero else b.integer(0, limit(d)) for d in (*shape, *shape)]
    b.emit(ge.PadOp.new(x, pads=pads, mode=mode, value=b.choice((0.0, 1.5))))


@_maker(ge.TransDataOp)
def _make_transdata(b: _Builder, op_class) -> None:
    """x -> transdata into a format -> (an elementwise op in that format) -> back to ND."""
    x = b.value(min_rank=2)
    shape = tuple(x.type.get_shape())
    formats = [f for f in (Format.FRACTAL_NZ, Format.NC1HWC0, Format.FRACTAL_Z) if format_error(f, shape) is None]
    fmt = b.choice(formats)
    inside = b.emit(ge.TransDataOp.new(x, src_format="ND", dst_format=fmt), False).result
    if b.flag():
        inside = b.emit(ge.ReluOp.new(inside, result_type=with_format(x.type, fmt)), False).result
    b.emit(ge.TransDataOp.new(inside, src_format=fmt, dst_format="ND"))


GENERATED_OPS: frozenset[str] = frozenset(_MAKERS)
"""The op names the generator emits: every op of the ge dialect."""


# ---- the strategies ----------------------------------------------------------------------


def _ops_for(element_type: Attribute, ops: Sequence[str]) -> list[str]:
    integers = dtypes.is_integer(element_type)
    return [name for name in ops if _MAKERS[name][1] or not integers]


@st.composite
def graphs(draw, max_ops: int = 8, element_types: Sequence[str] = ("f16", "f32", "i32"),
           ops: Sequence[str] | None = None, max_elements: int = 512, required: str | None = None) -> RandomGraph:
    """A random graph of 1..max_ops drawn ops (see the module docstring)."""
    names = sorted(ops or GENERATED_OPS)
    unknown = set(names) - GENERATED_OPS
    if unknown:
        raise ValueError(f"the generator has no maker for {sorted(unknown)}")
    element_type = _ELEMENT_TYPES[draw(st.sampled_from(list(element_types)))]
    if required is not None and not _MAKERS[required][1] and dtypes.is_integer(element_type):
        element_type = f32
    allowed = _ops_for(element_type, names) or _ops_for(f32, names)
    b = _Builder(draw, element_type, max_elements)
    count = draw(st.integers(1, max_ops))
    sequence = [draw(st.sampled_from(allowed)) for _ in range(count)]
    if required is not None:
        sequence[draw(st.integers(0, count - 1))] = required
    for name in sequence:
        _MAKERS[name][0](b)
    return _finish(draw, b)


def graphs_with(op_name: str, **options) -> st.SearchStrategy[RandomGraph]:
    """Random graphs that contain `op_name` at least once."""
    if op_name not in GENERATED_OPS:
        raise ValueError(f"the generator has no maker for {op_name}")
    return graphs(required=op_name, **options)


def _finish(draw, b: _Builder) -> RandomGraph:
    """Return the last value and up to two other unused ones; the rest stays dead."""
    unused = [v for v in b.pool if not v.uses]
    outputs = [b.pool[-1]] if b.pool else []
    extra = [v for v in unused if v not in outputs]
    if extra:
        outputs += draw(st.lists(st.sampled_from(extra), max_size=2, unique=True))
    if not outputs:
        outputs = [b.leaf((), kinds=("random",))]
    b.block.add_op(func.ReturnOp(*outputs))
    arg_types = [a.type for a in b.block.args]
    main = func.FuncOp("main", FunctionType.from_lists(arg_types, [v.type for v in outputs]), Region(b.block))
    text = str(ModuleOp([main]))
    module = parse_module(make_context(), text, "<random graph>")
    verify_module(module)
    inputs = random_inputs(input_specs(main_function(module)), draw(st.integers(0, 2**16)))
    return RandomGraph(text, tuple(inputs), frozenset(b.names))
