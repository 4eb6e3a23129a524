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

Every rewrite keeps the values (the reference interpreter's `ge.gelu` computes
the formula the ops wrote out, in float32; the GEMM is the same sums).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern

from ...dialects import ge
from ...dialects.ge.canonicalization import GEPattern, splat_scalar
from ...dialects.ge.formats import Format, format_of

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
        rewriter.replace_op(op, gelu)


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
        rewriter.replace_op(op, [flat, gemm, back], [back.result])


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
        rewriter.replace_op(op, [moved, back], [back.result])

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


IDIOMS: dict[type[Operation], tuple[RewritePattern, ...]] = {
    ge.MulOp: (WrittenOutGelu(), EpilogueBelowView()),
    ge.BatchMatmulOp: (LhsBatchedMatmulToGemm(),),
    **{op: (EpilogueBelowView(),) for op in (*EPILOGUE_ACTIVATIONS, ge.AddOp, ge.SubOp, ge.DivOp)},
}


def idiom_patterns(op: Operation) -> Iterable[RewritePattern]:
    """The idiom patterns anchored on `op`'s type (none for most ops)."""
    return IDIOMS.get(type(op), ())
