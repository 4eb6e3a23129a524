"""Canonical forms of what exporters write out as several ops: the idioms
`ge-simplify` rewrites so that fusion sees one op where the network had one.

* **GELU, written out.** Exporters decompose `nn.GELU` and Hugging Face's
  activations: `x * 0.5 * (1 + erf(x / sqrt 2))` (exact, TorchScript's and
  BERT's), `0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))` (GPT-2's
  `gelu_new`, `approximate="tanh"`). Left as five to eight ops they are a
  chain no kernel template takes as an epilogue; as one `ge.gelu` the matmul
  patterns take it into the GEMM's epilogue, and auto fusion counts one op.
  The products are matched as a tree of multiplications in any order and
  association (the factor 0.5 may sit on x or on the bracket), the cube as
  `pow(x, 3)` or `x * x * x`, the erf's argument as `x / sqrt 2` or
  `x * (1 / sqrt 2)`.
* **A batched product with an unbatched weight.** `MatMul` of a (*b, M, K)
  activation by a (K, N) weight imports as a `ge.batch_matmul` whose batch
  dims are on the lhs only: the same numbers as one (prod(b) * M, K) x (K, N)
  GEMM, which is what the cube kernels, `matmul + bias + act` fusion and the
  Q/K/V merging (`ge-merge-matmuls`, 2-D products only) are written for. The
  reshapes around it are views of ND tensors (no kernel); the rewrite is made
  only on ND tensors, before the layout pass gives the product its fractal
  formats, in which a reshape would be a copy.
* **Views below the epilogue.** That GEMM's result is reshaped back to
  (*b, M, N) before the exporter's bias add and activation; an activation, or a
  bias add / scaling by a constant that broadcasts along the last dim only,
  commutes with a reshape that keeps the last dim, so the reshape moves below
  it and the epilogue sits on the GEMM, where `matmul + bias + act` fusion
  takes it (GELU included, whatever the row length).
* **A product split into pieces.** GPT-2's `c_attn` computes Q, K and V as one
  product and splits its columns; split along the last dim of a product by a
  constant weight is the products by the weight's column blocks, which merge
  again into one kernel, and no split kernel copies the result.
* **Grouped-query attention.** `repeat_kv` repeats each key / value head g
  times (Unsqueeze, Expand, Reshape); on the rows before the head split that is
  a repetition of each head's columns, computed on the weight (and on the
  rotary constants between): no expand kernel, and attention sees as many key
  heads as query heads, a plain split it absorbs.
* **Rotary embedding.** Hugging Face's `apply_rotary_pos_emb` splits heads, then
  computes `t * cos + rotate_half(t) * sin` with `rotate_half(t) =
  concat(-t[..., D/2:], t[..., :D/2])`: two slices, a negation and a concat per
  tensor, which no vector kernel runs in one piece. `rotate_half` is a signed
  permutation P of each head's dims, so on the rows before the head split it
  is `y P`, and when y is a product by a constant weight, `x (W P)` (each
  column of W P is a column of W, negated or not: the same sums, exactly). The
  rotation becomes `y * cos' + (x W P) * sin'` on the (*b, S, N*D) rows, cos
  and sin laid out as the rows are: one elementwise kernel, with one more
  product of x that merges with Q, K and V, and the head split after it stays
  the plain split attention fusion absorbs.

Every rewrite keeps the values (the reference interpreter's `ge.gelu` computes
the formula the ops wrote out, in float32; the GEMM is the same sums).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern

from ...dialects import ge
from ...core.dtypes import to_numpy_dtype
from ...dialects.ge.canonicalization import GEPattern, constant_from_array, splat_scalar
from ...dialects.ge.formats import Format, format_of
from ...dialects.ge.reduction import reduced_axes

RTOL = 1e-5
"""How close a written-out constant must be to the exact one (float32 rounding
of sqrt 2, sqrt(2 / pi) and the like, as exporters store them)."""


def _close(value: float | None, want: float) -> bool:
    return value is not None and not isinstance(value, bool) and math.isclose(value, want, rel_tol=RTOL)


def _scalar(value: SSAValue) -> float | None:
    """The number of a splat float constant, else None."""
    s = splat_scalar(value)
    return float(s) if isinstance(s, float) else None


def _single_use_producer(value: SSAValue, op_class: type[Operation]) -> Operation | None:
    owner = value.owner
    return owner if isinstance(owner, op_class) and value.has_one_use() else None


def _factors(value: SSAValue, ops: list[Operation]) -> list[SSAValue]:
    """The leaves of the tree of single-use multiplications producing `value`
    (the multiplications visited are appended to `ops`)."""
    mul = _single_use_producer(value, ge.MulOp)
    if mul is None:
        return [value]
    ops.append(mul)
    return _factors(mul.lhs, ops) + _factors(mul.rhs, ops)


def _product_factors(root: ge.MulOp) -> list[SSAValue]:
    return _factors(root.lhs, []) + _factors(root.rhs, [])


def _take_constant(factors: list[SSAValue], want: float) -> bool:
    """Remove one constant factor equal to `want` from `factors`; whether there was one."""
    for i, f in enumerate(factors):
        if _close(_scalar(f), want):
            del factors[i]
            return True
    return False


def _scaled(value: SSAValue, want: float) -> SSAValue | None:
    """x if `value` is `x * want` (or `x / (1 / want)`, either operand order for
    the product) computed for this use only, else None."""
    div = _single_use_producer(value, ge.DivOp)
    if div is not None:
        return div.lhs if _close(_scalar(div.rhs), 1.0 / want) else None
    if _single_use_producer(value, ge.MulOp) is None:
        return None
    factors = _factors(value, [])
    if len(factors) != 2 or not _take_constant(factors, want):
        return None
    return factors[0]


def _one_plus(value: SSAValue, op_class: type[Operation]) -> SSAValue | None:
    """The argument u of `1 + f(u)` (f = `op_class`, either order of the sum)."""
    add = _single_use_producer(value, ge.AddOp)
    if add is None:
        return None
    for term, one in ((add.lhs, add.rhs), (add.rhs, add.lhs)):
        f = _single_use_producer(term, op_class)
        if f is not None and _close(_scalar(one), 1.0):
            return f.operands[0]
    return None


def _is_cube_of(value: SSAValue, x: SSAValue) -> bool:
    """`value` is x^3: `pow(x, 3)` or a product of three x."""
    power = _single_use_producer(value, ge.PowOp)
    if power is not None:
        return power.lhs is x and _close(_scalar(power.rhs), 3.0)
    factors = _factors(value, []) if _single_use_producer(value, ge.MulOp) else [value]
    return len(factors) == 3 and all(f is x for f in factors)


TANH_CUBIC = 0.044715
SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def _tanh_argument_of(u: SSAValue, x: SSAValue) -> bool:
    """u = sqrt(2/pi) * (x + 0.044715 * x^3)."""
    inner = _scaled(u, SQRT_2_OVER_PI)
    add = _single_use_producer(inner, ge.AddOp) if inner is not None else None
    if add is None:
        return False
    for lin, cubic in ((add.lhs, add.rhs), (add.rhs, add.lhs)):
        if lin is not x:
            continue
        factors = _factors(cubic, []) if _single_use_producer(cubic, ge.MulOp) else [cubic]
        if not _take_constant(factors, TANH_CUBIC):
            continue
        if len(factors) == 1 and _is_cube_of(factors[0], x):
            return True
        if len(factors) == 3 and all(f is x for f in factors):
            return True
    return False


def _gelu_of(root: ge.MulOp) -> tuple[SSAValue, str] | None:
    """(x, approximate) if `root` ends a written-out GELU of x (module docstring)."""
    factors = _product_factors(root)
    if len(factors) != 3 or not _take_constant(factors, 0.5):
        return None
    for i, bracket in enumerate(factors):
        x = factors[1 - i]
        u = _one_plus(bracket, ge.ErfOp)
        if u is not None and _scaled(u, 1.0 / math.sqrt(2.0)) is x:
            return x, "none"
        u = _one_plus(bracket, ge.TanhOp)
        if u is not None and _tanh_argument_of(u, x):
            return x, "tanh"
    return None


class WrittenOutGelu(GEPattern):
    """x * 0.5 * (1 + erf(x / sqrt 2)) -> gelu(x); the tanh form -> gelu(x, tanh)."""

    COUNTER = "written-out gelu to ge.gelu"

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not isinstance(op, ge.MulOp):
            return
        found = _gelu_of(op)
        if found is None:
            return
        x, approximate = found
        if x.type != op.result.type:
            return  # a broadcasting constant made the product larger than x
        gelu = ge.GeluOp.new(x, approximate=approximate)
        gelu.location = op.location
        rewriter.replace(op, [gelu], gelu.results)


def _is_nd(t) -> bool:
    return isinstance(t, TensorType) and format_of(t) == Format.ND


class LhsBatchedMatmulToGemm(GEPattern):
    """batch_matmul((*b, M, K), (K, N)) -> reshape((prod(b) M, K)) x (K, N), reshaped back."""

    COUNTER = "lhs-batched matmul to 2-D"

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not isinstance(op, ge.BatchMatmulOp) or op.attr_value("transpose_a"):
            return
        lhs_t, rhs_t, out_t = op.lhs.type, op.rhs.type, op.result.type
        if len(lhs_t.get_shape()) < 3 or len(rhs_t.get_shape()) != 2:
            return
        if not (_is_nd(lhs_t) and _is_nd(rhs_t) and _is_nd(out_t)):
            return
        *batch, m, k = lhs_t.get_shape()
        rows = math.prod(batch) * m
        flat = ge.ReshapeOp.new(op.lhs, result_type=TensorType(lhs_t.element_type, (rows, k)))
        gemm = ge.MatmulOp.new(flat, op.rhs, transpose_a=False, transpose_b=op.attr_value("transpose_b"))
        back = ge.ReshapeOp.new(gemm, result_type=out_t)
        for new in (flat, gemm, back):
            new.location = op.location
        rewriter.replace(op, [flat, gemm, back], [back.result])


EPILOGUE_ACTIVATIONS = (ge.GeluOp, ge.ReluOp, ge.SiluOp, ge.SigmoidOp, ge.TanhOp, ge.LeakyReluOp)
"""Unary ops a GEMM epilogue may end in (the reshape moves below them)."""

EPILOGUE_BINARY = (ge.AddOp, ge.SubOp, ge.MulOp, ge.DivOp)


def _row_view(value: SSAValue) -> ge.ReshapeOp | None:
    """The single-use ND reshape producing `value` that keeps the last dim, else None."""
    view = _single_use_producer(value, ge.ReshapeOp)
    if view is None or not (_is_nd(view.input.type) and _is_nd(view.result.type)):
        return None
    before, after = view.input.type.get_shape(), view.result.type.get_shape()
    return view if before and after and before[-1] == after[-1] else None


def _along_rows(constant: SSAValue, width: int) -> bool:
    """A constant that broadcasts along the last dim only: a scalar or a (width,) vector."""
    if _scalar(constant) is None and not isinstance(constant.owner, ge.ConstOp):
        return False
    dims = constant.type.get_shape()
    return len(dims) == 0 or tuple(dims) in ((1,), (width,))


class EpilogueBelowView(GEPattern):
    """f(reshape(y)) -> reshape(f(y)) for an activation f, or a bias / scale by a
    constant along the rows, when the reshape keeps the last dim."""

    COUNTER = "reshape moved below an epilogue op"

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        found = self._unary(op) if isinstance(op, EPILOGUE_ACTIVATIONS) else self._binary(op)
        if found is None or not _is_nd(op.results[0].type):
            return
        operands, view = found
        moved = type(op).build(
            operands=operands,
            result_types=[TensorType(op.results[0].type.element_type, view.input.type.get_shape())],
            properties=dict(op.properties),
            attributes=dict(op.attributes),
        )
        back = ge.ReshapeOp.new(moved, result_type=op.results[0].type)
        moved.location = back.location = op.location
        rewriter.replace(op, [moved, back], [back.result])

    @staticmethod
    def _unary(op: Operation) -> tuple[list[SSAValue], ge.ReshapeOp] | None:
        view = _row_view(op.operands[0])
        return ([view.input], view) if view is not None else None

    @staticmethod
    def _binary(op: Operation) -> tuple[list[SSAValue], ge.ReshapeOp] | None:
        """(the operands with the view's input in place of the view, the view) if
        one operand is a row view and the other a constant along the rows."""
        if not isinstance(op, EPILOGUE_BINARY):
            return None
        lhs, rhs = op.operands
        for i, (viewed, constant) in enumerate(((lhs, rhs), (rhs, lhs))):
            view = _row_view(viewed)
            if view is None or view.result.type != op.results[0].type:
                continue
            if not _along_rows(constant, view.input.type.get_shape()[-1]):
                continue
            return ([view.input, constant] if i == 0 else [constant, view.input]), view
        return None


def _leading_view(value: SSAValue) -> ge.ReshapeOp | None:
    """The ND reshape producing `value` that only adds leading unit dims (a (M, N)
    GEMM result seen as (1, M, N)), whatever its other users, else None. Only
    this direction: the rewrites below then always lower the rank, and stop."""
    view = value.owner if isinstance(value.owner, ge.ReshapeOp) else None
    if view is None or not (_is_nd(view.input.type) and _is_nd(view.result.type)):
        return None
    before, after = tuple(view.input.type.get_shape()), tuple(view.result.type.get_shape())
    extra = len(after) - len(before)
    return view if before and extra > 0 and after[extra:] == before and set(after[:extra]) == {1} else None


class ResidualBelowView(GEPattern):
    """`reshape(y) + r` -> `reshape(y + reshape(r))` when the reshape only adds
    leading unit dims, r has the sum's shape (no broadcast) and a norm reads the
    sum: the
    residual add of an exported layer (its GEMM result viewed as (1, M, N)) in
    the GEMM's own shape, so the `matmul + residual + norm` patterns see the
    GEMM, the add and the norm without a view between them. The reshape of r is
    a view, and cancels against the one that made r when r was a GEMM's too."""

    COUNTER = "reshape moved below a residual add"

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not isinstance(op, ge.AddOp) or not _is_nd(op.result.type):
            return
        if not any(isinstance(u.operation, ge.LayerNormOp | ge.RMSNormOp) for u in op.result.uses):
            return  # only a sum a norm reads: other adds (a GELU's inside) keep their shape
        lhs, rhs = op.operands
        for i, (viewed, other) in enumerate(((lhs, rhs), (rhs, lhs))):
            view = _leading_view(viewed)
            if view is None or view.result.type != op.result.type or other.type != op.result.type:
                continue
            inner = TensorType(op.result.type.element_type, view.input.type.get_shape())
            seen = ge.ReshapeOp.new(other, result_type=inner)
            operands = [view.input, seen.result] if i == 0 else [seen.result, view.input]
            moved = ge.AddOp.build(operands=operands, result_types=[inner], properties=dict(op.properties),
                                   attributes=dict(op.attributes))
            back = ge.ReshapeOp.new(moved, result_type=op.result.type)
            seen.location = moved.location = back.location = op.location
            rewriter.replace(op, [seen, moved, back], [back.result])
            return


class NormBelowView(GEPattern):
    """`norm(reshape(y))` -> `reshape(norm(y))` for a layer / RMS norm over the
    last dim only, when the reshape only adds or drops leading unit dims: the
    statistics are per row either way, and the norm then reads the residual sum
    in the GEMM's shape (`ResidualBelowView`), where `matmul + residual + norm`
    fusion takes all three."""

    COUNTER = "reshape moved below a norm"

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not isinstance(op, ge.LayerNormOp | ge.RMSNormOp) or not _is_nd(op.result.type):
            return
        view = _leading_view(op.input)
        rank = len(op.result.type.get_shape())
        if view is None or op.attr_value("axis") % rank != rank - 1:
            return
        moved = type(op).new(view.input, *op.operands[1:], axis=-1, epsilon=op.attr_value("epsilon"))
        back = ge.ReshapeOp.new(moved, result_type=op.result.type)
        moved.location = back.location = op.location
        rewriter.replace(op, [moved, back], [back.result])



# ---- RMSNorm, written out --------------------------------------------------------------


def _mean_square_of(value: SSAValue, x: SSAValue) -> bool:
    """Whether `value` is mean(x * x) (or mean(x ** 2)) over x's last dim only, kept."""
    mean = _single_use_producer(value, ge.ReduceMeanOp)
    rank = len(x.type.get_shape())
    if mean is None or not mean.attr_value("keepdims") or rank == 0:
        return False
    if reduced_axes(mean.attr_value("axes"), rank) != (rank - 1,):
        return False
    square = _single_use_producer(mean.input, ge.MulOp)
    return square is not None and square.lhs is x and square.rhs is x


def _rms_of(root: ge.MulOp) -> tuple[SSAValue, float] | None:
    """(x, epsilon) if `root` is x * rsqrt(mean(x * x, last dim) + epsilon)."""
    for x, r in ((root.lhs, root.rhs), (root.rhs, root.lhs)):
        rsqrt = _single_use_producer(r, ge.RsqrtOp)
        total = _single_use_producer(rsqrt.input, ge.AddOp) if rsqrt is not None else None
        if total is None or not isinstance(x.type, TensorType) or not _is_nd(x.type):
            continue
        for mean, eps in ((total.lhs, total.rhs), (total.rhs, total.lhs)):
            epsilon = _scalar(eps)
            if epsilon is not None and epsilon > 0 and _mean_square_of(mean, x):
                return x, epsilon
    return None


class WrittenOutRmsNorm(GEPattern):
    """`x * rsqrt(mean(x * x, -1) + eps)` (Hugging Face's LlamaRMSNorm / T5's
    layer norm as exporters write them: Pow or Mul, ReduceMean, Add, Sqrt and
    Reciprocal or Div, which `ge-simplify` brings to one `rsqrt`) -> one
    `ge.rms_norm` with a scale of ones; the model's weight multiply after it
    stays a separate elementwise op the norm's patterns and fusion see. As
    one op, the residual add before it and the GEMM before that fuse with it
    (`fused.add_rms_norm`, `fused.matmul_add_rms_norm`): one kernel where the
    written-out form was a chain of reductions and broadcasts."""

    COUNTER = "written-out rms_norm to ge.rms_norm"

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not isinstance(op, ge.MulOp) or op.result.type != op.lhs.type and op.result.type != op.rhs.type:
            return
        found = _rms_of(op)
        if found is None or found[0].type != op.result.type:
            return
        x, epsilon = found
        width = x.type.get_shape()[-1]
        ones = constant_from_array(np.ones((width,), to_numpy_dtype(x.type.element_type)),
                                   TensorType(x.type.element_type, [width]))
        norm = ge.RMSNormOp.new(x, ones.results[0], axis=-1, epsilon=epsilon)
        ones.location = norm.location = op.location
        rewriter.replace(op, [ones, norm], [norm.result])

# ---- rotary embedding ------------------------------------------------------------------


def _head_split(t: SSAValue) -> tuple[ge.ReshapeOp, ge.TransposeOp] | None:
    """(reshape, transpose) if t = transpose(reshape(y)) splits the rows y, (*b, S, N*D)
    or another flattening of those rows, into (*b, N, S, D)."""
    transpose = t.owner
    if not isinstance(transpose, ge.TransposeOp):
        return None
    reshape = transpose.input.owner
    if not isinstance(reshape, ge.ReshapeOp) or not _is_nd(reshape.input.type):
        return None
    flat, split = tuple(reshape.input.type.get_shape()), tuple(reshape.result.type.get_shape())
    rank = len(split)
    if rank < 3 or not flat or flat[-1] != split[-2] * split[-1] or math.prod(flat[:-1]) != math.prod(split[:-2]):
        return None
    perm = (*range(rank - 3), rank - 2, rank - 3, rank - 1)
    return (reshape, transpose) if tuple(transpose.attr_value("perm")) == perm else None


def _half_slice(value: SSAValue, source: SSAValue, upper: bool) -> bool:
    """`value` = source[..., :D/2] (or [..., D/2:] when `upper`), nothing else cut."""
    op = value.owner
    if not isinstance(op, ge.SliceOp) or op.input is not source:
        return False
    dims = source.type.get_shape()
    half = dims[-1] // 2
    if dims[-1] % 2:
        return False
    starts, ends, steps = (tuple(op.attr_value(n)) for n in ("starts", "ends", "steps"))
    want_starts = (0,) * (len(dims) - 1) + ((half,) if upper else (0,))
    want_ends = (*dims[:-1], dims[-1] if upper else half)
    return starts == want_starts and tuple(min(e, d) for e, d in zip(ends, dims)) == want_ends and set(steps) == {1}


def _rotated_half_of(value: SSAValue) -> SSAValue | None:
    """t if `value` = concat(-t[..., D/2:], t[..., :D/2]) on the last axis."""
    concat = value.owner
    if not isinstance(concat, ge.ConcatOp) or len(concat.operands) != 2:
        return None
    rank = len(value.type.get_shape())
    if concat.attr_value("axis") % rank != rank - 1:
        return None
    neg, low = concat.operands
    if not isinstance(neg.owner, ge.NegOp):
        return None
    upper = neg.owner.operands[0]
    source = upper.owner.input if isinstance(upper.owner, ge.SliceOp) else None
    if source is None or not (_half_slice(upper, source, True) and _half_slice(low, source, False)):
        return None
    return source


def _const_array(value: SSAValue):
    owner = value.owner
    return owner.as_array() if isinstance(owner, ge.ConstOp) and isinstance(value.type, TensorType) else None


def _rope_terms(op: ge.AddOp):
    """(t, cos, sin) if op = t * cos + rotate_half(t) * sin (any order), cos and
    sin constants."""
    for a, b in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
        plain, rotated = a.owner, b.owner
        if not isinstance(plain, ge.MulOp) or not isinstance(rotated, ge.MulOp):
            continue
        for r, sin in ((rotated.lhs, rotated.rhs), (rotated.rhs, rotated.lhs)):
            t = _rotated_half_of(r)
            if t is None or _const_array(sin) is None:
                continue
            for x, cos in ((plain.lhs, plain.rhs), (plain.rhs, plain.lhs)):
                if x is t and _const_array(cos) is not None:
                    return t, cos, sin
    return None


def rotate_half_matrix(heads: int, dim: int) -> np.ndarray:
    """P with (y P) = rotate_half of each head's `dim` values of the rows y."""
    half = dim // 2
    p = np.zeros((heads * dim, heads * dim), np.float32)
    for h in range(heads):
        base = h * dim
        for j in range(half):
            p[base + half + j, base + j] = -1.0  # out[j] = -in[half + j]
            p[base + j, base + half + j] = 1.0  # out[half + j] = in[j]
    return p


def _constant(array: np.ndarray, like: TensorType) -> ge.ConstOp:
    t = TensorType(like.element_type, array.shape)
    return constant_from_array(array.astype(to_numpy_dtype(like.element_type)), t)


def _times(y: SSAValue, p: np.ndarray, new_ops: list[Operation]) -> SSAValue:
    """y P, computed as a product of y's own lhs by (W P) where y is a product by a
    constant weight (through row views and bias adds), else as y x P."""
    found = _by_weight(y, lambda w: w @ p, p.shape[1], new_ops)
    if found is not None:
        return found
    new_ops.append(_constant(p, TensorType(y.type.element_type, p.shape)))
    new_ops.append(ge.BatchMatmulOp.new(y, new_ops[-1].results[0]))
    return new_ops[-1].results[0]


def _by_weight(y: SSAValue, columns, width: int, new_ops: list[Operation]) -> SSAValue | None:
    """`columns` applied to the last dim of y, computed on the weight: where y is a
    product of x by a constant (K, N) weight W (or W stored (N, K), `transpose_b`,
    as linear layers keep it), through row views and constant bias adds, the same
    product of x by columns(W) (bias b by columns(b)),
    `width` columns wide; None where y is not such a product (nothing built)."""
    built: list[Operation] = []
    value = _rebuild(y, columns, width, built)
    if value is None:
        for op in reversed(built):
            op.erase()
        return None
    new_ops += built
    return value


def _rebuild(y: SSAValue, columns, width: int, new_ops: list[Operation]) -> SSAValue | None:
    owner = y.owner
    if isinstance(owner, ge.ReshapeOp) and _is_nd(owner.input.type) and _is_nd(y.type):
        dims = y.type.get_shape()
        if owner.input.type.get_shape()[-1] != dims[-1]:
            return None
        inner = _rebuild(owner.input, columns, width, new_ops)
        if inner is None:
            return None
        new_ops.append(ge.ReshapeOp.new(inner, result_type=TensorType(y.type.element_type, (*dims[:-1], width))))
        return new_ops[-1].results[0]
    if isinstance(owner, (ge.BiasAddOp, ge.AddOp, ge.SubOp, ge.MulOp)):
        rank = len(y.type.get_shape())
        if isinstance(owner, ge.BiasAddOp) and owner.attr_value("axis") % rank != rank - 1:
            return None
        operands = [_operand_columns(v, y, columns, width, new_ops) for v in owner.operands]
        if any(v is None for v in operands):
            return None
        new_ops.append(type(owner).build(
            operands=operands,
            result_types=[TensorType(y.type.element_type, (*y.type.get_shape()[:-1], width))],
            properties=dict(owner.properties),
        ))
        return new_ops[-1].results[0]
    if isinstance(owner, (ge.MatmulOp, ge.BatchMatmulOp)):
        w = _const_array(owner.rhs)
        if w is None or w.ndim != 2:
            return None
        transposed = owner.attr_value("transpose_b")  # (N, K) stored: columns of its transpose, stored so
        new_ops.append(_constant(np.ascontiguousarray(columns(w.T).T) if transposed else columns(w), owner.rhs.type))
        new_ops.append(type(owner).new(owner.lhs, new_ops[-1].results[0], transpose_a=owner.attr_value("transpose_a"),
                                       transpose_b=transposed))
        return new_ops[-1].results[0]
    return None


def _operand_columns(v: SSAValue, y: SSAValue, columns, width: int, new_ops: list[Operation]) -> SSAValue | None:
    """An operand of an elementwise op producing y, with `columns` applied: a
    constant along the rows ((N,) or y's own shape) transformed as data, a value
    of y's type rebuilt from its weight; None otherwise."""
    c = _const_array(v)
    if c is not None and c.size == 1 and c.ndim <= 1:
        return v  # a scalar scales every column alike
    if c is not None:
        n = y.type.get_shape()[-1]
        if c.ndim == 0 or c.shape[-1] != n or (c.ndim > 1 and tuple(c.shape) != tuple(y.type.get_shape())):
            return None
        data = columns(c.reshape(-1, n)).reshape(*c.shape[:-1], width)
        new_ops.append(_constant(data, v.type))
        return new_ops[-1].results[0]
    return _rebuild(v, columns, width, new_ops) if v.type == y.type else None


class SplitProduct(GEPattern):
    """split(x W + b) along the last dim -> x W_i + b_i per piece (GPT-2's fused
    c_attn, split into Q, K and V): no split kernel, and the pieces merge back
    into one multi-product kernel (`ge-merge-matmuls`) sharing x's tiles."""

    COUNTER = "split of a product into products"

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not isinstance(op, ge.SplitOp) or not _is_nd(op.input.type):
            return
        rank = len(op.input.type.get_shape())
        if op.attr_value("axis") % rank != rank - 1:
            return
        new_ops: list[Operation] = []
        pieces: list[SSAValue] = []
        start = 0
        for size in op.attr_value("sizes"):
            piece = _by_weight(op.input, lambda m, a=start, b=start + size: np.ascontiguousarray(m[:, a:b]), size, new_ops)
            if piece is None:
                for built in reversed(new_ops):
                    built.erase()
                return
            pieces.append(piece)
            start += size
        for new in new_ops:
            new.location = op.location
        rewriter.replace(op, new_ops, pieces)


class RotaryOnRows(GEPattern):
    """t * cos + rotate_half(t) * sin on a head split t of rows y -> the split of
    y * cos' + (y P) * sin' (module docstring)."""

    COUNTER = "rotary embedding on the rows"

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not isinstance(op, ge.AddOp) or not _is_nd(op.result.type):
            return
        found = _rope_terms(op)
        split = _head_split(found[0]) if found is not None else None
        if split is None or found[0].type != op.result.type:
            return
        t, cos, sin = found
        reshape, transpose = split
        y = reshape.input
        heads, dim = reshape.result.type.get_shape()[-2:]
        new_ops: list[Operation] = []
        rotated = _times(y, rotate_half_matrix(heads, dim), new_ops)
        terms = []
        for value, factor in ((y, cos), (rotated, sin)):
            rows = _rows_layout(_const_array(factor), t.type.get_shape(), transpose, y.type.get_shape())
            new_ops.append(_constant(rows, factor.type))
            new_ops.append(ge.MulOp.new(value, new_ops[-1].results[0]))
            terms.append(new_ops[-1].results[0])
        new_ops.append(ge.AddOp.new(*terms))
        new_ops.append(ge.ReshapeOp.new(new_ops[-1].results[0], result_type=reshape.result.type))
        new_ops.append(ge.TransposeOp.new(new_ops[-1].results[0], perm=transpose.attr_value("perm")))
        for new in new_ops:
            new.location = op.location
        rewriter.replace(op, new_ops, new_ops[-1].results)


class RepeatedHeads(GEPattern):
    """repeat_kv (grouped-query attention): the key / value heads t (B, Nkv, S, D),
    a head split of rows R, unsqueezed, expanded g times and reshaped to
    (B, Nkv g, S, D) -> the head split of R with each head's columns repeated,
    computed on the weights R comes from (a product by a constant weight through
    bias, rotary and other elementwise steps with constants along the rows).
    The products grow by g, the expand kernel goes, and the attention sees a
    plain head split of as many heads as the query (layout BSH)."""

    COUNTER = "repeated kv heads on the weights"

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not isinstance(op, ge.ReshapeOp) or not _is_nd(op.result.type):
            return
        expand = op.input.owner
        if not isinstance(expand, ge.ExpandOp) or not op.input.has_one_use():
            return
        unsqueeze = expand.operands[0].owner
        if not isinstance(unsqueeze, ge.ReshapeOp) or not expand.operands[0].has_one_use():
            return
        t = unsqueeze.input
        split = _head_split(t)
        if split is None:
            return
        nkv, seq, dim = t.type.get_shape()[-3:]
        lead = tuple(t.type.get_shape()[:-3])
        if tuple(unsqueeze.result.type.get_shape()) != (*lead, nkv, 1, seq, dim):
            return
        group = expand.result.type.get_shape()[-3]
        if tuple(expand.result.type.get_shape()) != (*lead, nkv, group, seq, dim):
            return
        if tuple(op.result.type.get_shape()) != (*lead, nkv * group, seq, dim):
            return
        reshape, transpose = split
        rows = reshape.input
        heads = [h // group for h in range(nkv * group)]

        def repeat(m: np.ndarray) -> np.ndarray:
            return np.concatenate([m[:, h * dim : (h + 1) * dim] for h in heads], axis=1)

        new_ops: list[Operation] = []
        repeated = _by_weight(rows, repeat, nkv * group * dim, new_ops)
        if repeated is None:
            return
        split_dims = reshape.result.type.get_shape()
        new_ops.append(ge.ReshapeOp.new(repeated, result_type=TensorType(
            rows.type.element_type, (*split_dims[:-2], nkv * group, dim))))
        new_ops.append(ge.TransposeOp.new(new_ops[-1].results[0], perm=transpose.attr_value("perm")))
        for new in new_ops:
            new.location = op.location
        rewriter.replace(op, new_ops, new_ops[-1].results)


def _rows_layout(factor: np.ndarray, split_shape, transpose: ge.TransposeOp, rows_shape) -> np.ndarray:
    """A factor of the head-split layout (broadcast to it) laid out as the rows."""
    full = np.broadcast_to(factor, split_shape)
    inverse = np.argsort(transpose.attr_value("perm"))
    return np.ascontiguousarray(np.transpose(full, inverse)).reshape(rows_shape)


IDIOMS: dict[type[Operation], tuple[RewritePattern, ...]] = {
    ge.MulOp: (WrittenOutGelu(), WrittenOutRmsNorm(), EpilogueBelowView()),
    ge.AddOp: (RotaryOnRows(), EpilogueBelowView(), ResidualBelowView()),
    ge.LayerNormOp: (NormBelowView(),),
    ge.RMSNormOp: (NormBelowView(),),
    ge.BatchMatmulOp: (LhsBatchedMatmulToGemm(),),
    ge.SplitOp: (SplitProduct(),),
    ge.ReshapeOp: (RepeatedHeads(),),
    **{op: (EpilogueBelowView(),) for op in (*EPILOGUE_ACTIVATIONS, ge.SubOp, ge.DivOp)},
}





# ---- packed in-projection: Q, K and V picked out of one product ------------------------
#
# nn.MultiheadAttention (torchvision's ViT, nn.TransformerEncoderLayer) computes Q, K
# and V as one product by the packed (E, 3E) in-projection weight, then, as exported,
# `unflatten(-1, (3, E)).unsqueeze(0).transpose(0, -2).squeeze(-2)` and a `select`
# (ge.gather of a constant index) of each. Each pick is a block of the product's
# columns: the product by that block of the weight (`PackedProductPick`), a plain
# 2-D GEMM the three of which merge again into one kernel. What is left around
# attention are views that differ from a head split only by where the unit dims sit
# (batch 1 of the sequence-first layout the module computes in): a reshape adding
# unit dims moves above the transpose before it (`UnitViewAboveTranspose`), a
# transpose that only moves unit dims is a reshape and, before a reshape, unit dims
# stay in place (`UnitDimsInPlace`). The head splits and merges are then the
# `transpose(reshape(rows))` forms attention fusion absorbs in layout BSH, as on the
# torch.compile path, which sees PyTorch's own split of the same product.


def _through_views(value: SSAValue) -> tuple[SSAValue, list[Operation]]:
    """(y, views) where `value` is y through the ND reshapes and transposes `views`
    (in the order applied; none if `value` is not a view)."""
    views: list[Operation] = []
    while isinstance(value.owner, ge.ReshapeOp | ge.TransposeOp) and _is_nd(value.owner.operands[0].type):
        views.append(value.owner)
        value = value.owner.operands[0]
    return value, views[::-1]


def _element_sources(shape: tuple[int, ...], views: list[Operation]) -> np.ndarray:
    """For each element after `views`, the flat index of the element of the
    (`shape`-shaped) source it is."""
    ids = np.arange(math.prod(shape)).reshape(shape)
    for view in views:
        if isinstance(view, ge.TransposeOp):
            ids = np.transpose(ids, view.attr_value("perm"))
        else:
            ids = ids.reshape(view.result.type.get_shape())
    return ids


def _picked_columns(picked: np.ndarray, shape: tuple[int, ...]) -> np.ndarray | None:
    """The columns C if the flat indices `picked` into a `shape`-shaped y are y[..., C]
    in row-major order (every row, the same columns, rows in order), else None."""
    width = shape[-1]
    rows = math.prod(shape[:-1])
    if not rows or picked.size % rows:
        return None
    flat = picked.reshape(rows, picked.size // rows)
    columns = flat[0] % width
    want = np.arange(rows)[:, None] * width + columns[None, :]
    return columns if np.array_equal(flat, want) else None


def _picked(op: Operation, sources: np.ndarray) -> np.ndarray | None:
    """The elements of `sources` (a view of the product) that `op` picks: a gather
    of a constant index, or a slice with positive steps that keeps the last dim
    whole (a cut of columns, as rotate_half's halves, is left to the patterns
    that read it), else None."""
    if isinstance(op, ge.GatherOp):
        index = _const_array(op.indices)
        if index is None or index.dtype.kind not in "iu":
            return None
        axis = op.attr_value("axis") % sources.ndim
        return np.take(sources, np.where(index < 0, index + sources.shape[axis], index), axis=axis)
    if isinstance(op, ge.SliceOp):
        starts, ends, steps = (tuple(op.attr_value(n)) for n in ("starts", "ends", "steps"))
        if min(steps) < 1 or (starts[-1], ends[-1], steps[-1]) != (0, sources.shape[-1], 1):
            return None
        return sources[tuple(slice(a, b, c) for a, b, c in zip(starts, ends, steps))]
    return None


class PackedProductPick(GEPattern):
    """gather(views(x W + b), i) of a constant index i, or a slice of them, that
    picks a block C of the product's columns in row order -> reshape(x W[:, C] +
    b[C]) (module section above): no gather or slice kernel, no transpose of the
    packed product. (The torch.compile path's `select` is such a slice.)"""

    COUNTER = "pick of a packed product to a product"

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not isinstance(op, ge.GatherOp | ge.SliceOp) or not _is_nd(op.result.type):
            return
        y, views = _through_views(op.operands[0])
        shape = tuple(y.type.get_shape()) if isinstance(y.type, TensorType) else ()
        if len(shape) < 2 or not _is_nd(y.type):
            return
        picked = _picked(op, _element_sources(shape, views))
        columns = _picked_columns(picked, shape) if picked is not None else None
        if columns is None or np.array_equal(columns, np.arange(shape[-1])):
            return
        new_ops: list[Operation] = []
        product = _by_weight(y, lambda m: np.ascontiguousarray(m[:, columns]), len(columns), new_ops)
        if product is None:
            return
        new_ops.append(ge.ReshapeOp.new(product, result_type=op.result.type))
        for new in new_ops:
            new.location = op.location
        rewriter.replace(op, new_ops, new_ops[-1].results)


def _non_unit(shape) -> tuple[int, ...]:
    return tuple(d for d in shape if d != 1)


def _unit_dims_only(view: ge.ReshapeOp) -> bool:
    """The ND reshape only adds or drops dims of size 1."""
    return (_is_nd(view.input.type) and _is_nd(view.result.type)
            and _non_unit(view.input.type.get_shape()) == _non_unit(view.result.type.get_shape()))


def _leading_units_only(view: ge.ReshapeOp) -> bool:
    """The ND reshape only adds leading dims of size 1 (a batch of one)."""
    before, after = tuple(view.input.type.get_shape()), tuple(view.result.type.get_shape())
    extra = len(after) - len(before)
    return _unit_dims_only(view) and extra > 0 and after[extra:] == before


def _splat_scale(value: SSAValue) -> tuple[Operation, SSAValue] | None:
    """(the op, its non-constant operand) if `value` is a single-use product by a
    splat constant, else None."""
    mul = _single_use_producer(value, ge.MulOp)
    if mul is None:
        return None
    for x, c in ((mul.lhs, mul.rhs), (mul.rhs, mul.lhs)):
        if _scalar(c) is not None and x.type == mul.result.type:
            return mul, x
    return None


class UnitViewAboveTranspose(GEPattern):
    """reshape(transpose(t) [* c]) where the reshape only adds leading unit dims ->
    transpose'(reshape'(t)) [* c]: t viewed with those unit dims leading (its own
    dropped), then one transpose to the result. A head split that an exporter
    wrote as a transpose then an added batch dim (and a splat scale between,
    SDPA's sqrt(scale) on q and k) becomes the `transpose(reshape(rows)) * c`
    form attention fusion absorbs. (Unit dims added elsewhere, as repeat_kv's
    unsqueeze, stay where they are.)"""

    COUNTER = "unit-dim view moved above a transpose"

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not isinstance(op, ge.ReshapeOp) or not _leading_units_only(op):
            return
        scale = _splat_scale(op.input)
        moved = scale[1] if scale is not None else op.input
        transpose = _single_use_producer(moved, ge.TransposeOp)
        if transpose is None or not _is_nd(transpose.input.type):
            return
        t_shape, out = tuple(transpose.input.type.get_shape()), tuple(op.result.type.get_shape())
        kept = [d for d in range(len(t_shape)) if t_shape[d] != 1]
        units = len(out) - len(kept)
        where = {d: units + i for i, d in enumerate(kept)}  # t's dim -> the viewed t's dim
        order = iter(where[d] for d in transpose.attr_value("perm") if d in where)
        leading = iter(range(units))
        perm = [next(leading) if size == 1 else next(order) for size in out]
        element = op.result.type.element_type
        view = ge.ReshapeOp.new(transpose.input, result_type=TensorType(
            element, (1,) * units + tuple(t_shape[d] for d in kept)))
        new_ops: list[Operation] = [view, ge.TransposeOp.new(view.result, perm=perm)]
        if scale is not None:
            mul, x = scale
            c = mul.rhs if x is mul.lhs else mul.lhs
            operands = [new_ops[-1].results[0], c] if x is mul.lhs else [c, new_ops[-1].results[0]]
            new_ops.append(ge.MulOp.build(operands=operands, result_types=[op.result.type],
                                          properties=dict(mul.properties), attributes=dict(mul.attributes)))
        for new in new_ops:
            new.location = op.location
        rewriter.replace(op, new_ops, new_ops[-1].results)


def _in_place_perm(shape: tuple[int, ...], perm: tuple[int, ...]) -> tuple[int, ...]:
    """The permutation moving the non-unit dims of `shape` as `perm` does, its unit
    dims staying where they are."""
    moved = iter(d for d in perm if shape[d] != 1)
    return tuple(d if shape[d] == 1 else next(moved) for d in range(len(shape)))


class UnitDimsInPlace(GEPattern):
    """A transpose that only moves unit dims, next to a reshape (its input's
    producer or its only user) -> a reshape (a view, no kernel); a transpose only
    read by a reshape -> the transpose leaving unit dims in place, then the
    reshape (the same elements in the same order: a head merge of batch 1 written
    (S, B, N, D), as the sequence-first module does, becomes (B, S, N, D))."""

    COUNTER = "unit dims of a transpose left in place"

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not isinstance(op, ge.TransposeOp) or not (_is_nd(op.input.type) and _is_nd(op.result.type)):
            return
        shape, perm = tuple(op.input.type.get_shape()), tuple(op.attr_value("perm"))
        in_place = _in_place_perm(shape, perm)
        if in_place == perm:
            return
        users = [u.operation for u in op.result.uses]
        reader = users[0] if len(users) == 1 and isinstance(users[0], ge.ReshapeOp) else None
        if in_place == tuple(range(len(shape))) and (reader is not None or isinstance(op.input.owner, ge.ReshapeOp)):
            view = ge.ReshapeOp.new(op.input, result_type=op.result.type)
            view.location = op.location
            rewriter.replace(op, [view], view.results)
        elif reader is not None and _is_nd(reader.result.type) and not _unit_dims_only(reader):
            # (a reader adding or dropping unit dims only is UnitViewAboveTranspose's)
            transpose = ge.TransposeOp.new(op.input, perm=in_place)
            view = ge.ReshapeOp.new(transpose.result, result_type=reader.result.type)
            transpose.location, view.location = op.location, reader.location
            rewriter.replace(reader, [transpose, view], view.results)
            rewriter.erase(op)


PACKED_PROJECTION_IDIOMS: dict[type[Operation], tuple[RewritePattern, ...]] = {
    ge.GatherOp: (PackedProductPick(),),
    ge.SliceOp: (PackedProductPick(),),
    ge.ReshapeOp: (UnitViewAboveTranspose(),),
    ge.TransposeOp: (UnitDimsInPlace(),),
}


def idiom_patterns(op: Operation) -> Iterable[RewritePattern]:
    """The idiom patterns anchored on `op`'s type (none for most ops)."""
    return (*IDIOMS.get(type(op), ()), *PACKED_PROJECTION_IDIOMS.get(type(op), ()))
