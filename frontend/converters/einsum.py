"""Einsum as transposes, reshapes, reductions and (batched) matrix products.

The equation is parsed into one list of labels per operand ("..." becomes one
label per broadcast dim, aligned from the right as numpy does) and the output's
(given after "->", or the labels used once, in order, after the ellipsis). Then:

1. per operand, a label repeated within it (a diagonal, "ii->i") is taken with a
   `ge.gather` of the diagonal's flat positions; a dim of size 1 where another
   operand has n is expanded;
2. labels no later operand nor the output needs are summed away (`ge.reduce_sum`);
3. operands are combined left to right: for A and B, the labels both have are
   batch dims if still needed, else contracted; A is transposed to (batch, A's
   own, contracted), B to (batch, contracted, B's own), each reshaped to three
   dims, multiplied (`ge.matmul` / `ge.batch_matmul`) and reshaped back: "bij,bjk",
   "bhqd,bhkd", outer products (nothing contracted) and inner products alike.
   Element types the Cube unit does not multiply (f64, bf16, integers) are
   multiplied elementwise and summed over the contracted dim instead;
4. the result is transposed into the output's order.
"""

from __future__ import annotations

import math
import re

import numpy as np

from ...dialects.ge import GatherOp, TransposeOp
from .. import ops
from ..builder import Tensor
from .context import NodeContext
from .registry import converts

_TERM = re.compile(r"^(?:[A-Za-z]|\.\.\.)*$")


@converts("Einsum")
def einsum(c: NodeContext):
    operands = c.inputs()
    terms, output = _parse(c, c.string("equation"), operands)
    pending = [_prepare(c, x, labels) for x, labels in zip(operands, terms)]
    sizes: dict[str, int] = {}
    for x, labels in pending:
        for label, size in zip(labels, x.shape):
            if sizes.get(label, 1) not in (1, size) and size != 1:
                raise c.fail(f"label '{_shown(label)}' has sizes {sizes[label]} and {size}")
            sizes[label] = max(sizes.get(label, 1), size)
    pending = [(_broadcast(x, labels, sizes), labels) for x, labels in pending]
    x, labels = _sum_unneeded(*pending[0], _needed(pending[1:], output))
    for i, (y, y_labels) in enumerate(pending[1:], start=1):
        needed = _needed(pending[i + 1:], output)
        y, y_labels = _sum_unneeded(y, y_labels, needed | set(labels))
        x, labels = _sum_unneeded(x, labels, needed | set(y_labels))
        x, labels = _contract(x, labels, y, y_labels, needed)
    x, labels = _sum_unneeded(x, labels, set(output))
    if labels != output:
        x = c.g.op(TransposeOp, x, perm=[labels.index(label) for label in output])
    return x


def _shown(label: str) -> str:
    return "..." if label.startswith("#") else label


def _parse(c: NodeContext, equation: str, operands: list[Tensor]) -> tuple[list[list[str]], list[str]]:
    """Labels per operand and of the output; '#k' stands for the k-th dim of the
    ellipsis counted from its right end."""
    equation = equation.replace(" ", "")
    inputs, arrow, output = equation.partition("->")
    texts = inputs.split(",")
    if len(texts) != len(operands):
        raise c.fail(f"equation '{equation}' has {len(texts)} operands, the node {len(operands)} inputs")
    terms, ellipsis = [], 0
    for text, x in zip(texts, operands):
        if not _TERM.match(text) or text.count("...") > 1:
            raise c.fail(f"equation '{equation}': cannot read the term '{text}'")
        named = len(text.replace("...", ""))
        extra = x.rank - named
        if extra < 0 or (extra and "..." not in text):
            raise c.fail(f"equation term '{text}' does not match input {x.type}")
        before, _, after = text.partition("...") if "..." in text else (text, "", "")
        terms.append([*before, *(f"#{k}" for k in reversed(range(extra))), *after])
        ellipsis = max(ellipsis, extra)
    dots = [f"#{k}" for k in reversed(range(ellipsis))]
    if arrow:
        if not _TERM.match(output) or output.count("...") > 1:
            raise c.fail(f"equation '{equation}': cannot read the output '{output}'")
        before, _, after = output.partition("...") if "..." in output else (output, "", "")
        result = [*before, *(dots if "..." in output else []), *after]
    else:
        counts = [label for t in terms for label in t if not label.startswith("#")]
        result = [*dots, *sorted(label for label in set(counts) if counts.count(label) == 1)]
    known = {label for t in terms for label in t}
    unknown = [label for label in result if label not in known]
    if unknown or len(set(result)) != len(result):
        raise c.fail(f"equation '{equation}': output labels must appear in the inputs, once each")
    return terms, result


def _prepare(c: NodeContext, x: Tensor, labels: list[str]) -> tuple[Tensor, list[str]]:
    """Repeated labels of one operand taken along their diagonal."""
    labels = list(labels)
    while len(set(labels)) != len(labels):
        label = next(label for label in labels if labels.count(label) > 1)
        first = labels.index(label)
        second = labels.index(label, first + 1)
        n = x.shape[first]
        if x.shape[second] != n:
            raise c.fail(f"label '{label}' has sizes {n} and {x.shape[second]} in one operand")
        rest = [i for i in range(x.rank) if i not in (first, second)]
        moved = c.g.op(TransposeOp, x, perm=[*rest, first, second])
        flat = ops.reshape(moved, [*(x.shape[i] for i in rest), n * n])
        x = c.g.op(GatherOp, flat, c.g.const(np.arange(n, dtype=np.int64) * (n + 1)), axis=len(rest))
        labels = [*(labels[i] for i in rest), label]
    return x, labels


def _broadcast(x: Tensor, labels: list[str], sizes: dict[str, int]) -> Tensor:
    target = [sizes[label] for label in labels]
    return x if list(x.shape) == target else ops.expand(x, target)


def _needed(rest: list[tuple[Tensor, list[str]]], output: list[str]) -> set[str]:
    return set(output).union(*(labels for _, labels in rest))


def _sum_unneeded(x: Tensor, labels: list[str], needed: set[str]) -> tuple[Tensor, list[str]]:
    summed = [i for i, label in enumerate(labels) if label not in needed]
    if not summed:
        return x, labels
    y = ops.reduce_sum(x, axes=summed, keepdims=False)
    return y, [label for label in labels if label in needed]


def _contract(a: Tensor, a_labels: list[str], b: Tensor, b_labels: list[str], needed: set[str]):
    """The product of two operands whose shared labels are batch dims (needed
    later) or contracted (not)."""
    shared = [label for label in a_labels if label in b_labels]
    batch = [label for label in shared if label in needed]
    contracted = [label for label in shared if label not in needed]
    left = [label for label in a_labels if label not in shared]
    right = [label for label in b_labels if label not in shared]
    size = dict(zip(a_labels, a.shape)) | dict(zip(b_labels, b.shape))

    def arranged(x: Tensor, labels: list[str], groups: list[list[str]]) -> Tensor:
        order = [label for group in groups for label in group]
        if order != labels:
            x = x.graph.op(TransposeOp, x, perm=[labels.index(label) for label in order])
        return ops.reshape(x, [math.prod(size[label] for label in group) for group in groups])

    lhs = arranged(a, a_labels, [batch, left, contracted]) if batch else arranged(a, a_labels, [left, contracted])
    rhs = arranged(b, b_labels, [batch, contracted, right]) if batch else arranged(b, b_labels, [contracted, right])
    product = _product(lhs, rhs)
    labels = [*batch, *left, *right]
    return ops.reshape(product, [size[label] for label in labels]), labels


CUBE_TYPES = ("f16", "f32")
"""The element types a matrix product runs on the Cube unit in (others take the
vector form: a broadcast `ge.mul` and a `ge.reduce_sum`)."""


def _product(lhs: Tensor, rhs: Tensor) -> Tensor:
    """(..., L, K) x (..., K, R) -> (..., L, R)."""
    if str(lhs.dtype) in CUBE_TYPES:
        return ops.matmul(lhs, rhs)
    lead = lhs.rank - 2
    terms = ops.reshape(lhs, [*lhs.shape, 1]) * ops.reshape(rhs, [*rhs.shape[:lead], 1, *rhs.shape[lead:]])
    return ops.reduce_sum(terms, axes=[lead + 1], keepdims=False)
