"""Det: the determinant of the last two (square) axes, by the Leibniz formula.

det(A) = sum over permutations p of sign(p) * A[0, p0] * A[1, p1] * ... : each
entry a slice of the batch, each term a product of n of them. That is n! terms,
so matrices up to MAX_ORDER x MAX_ORDER (24 terms of 4 factors) are expanded; a
larger one is refused with a one-line error (it would need a pivoted
elimination, whose row exchanges depend on the values). The values agree with
onnx's reference (`numpy.linalg.det`, an LU factorisation) to rounding.
"""

from __future__ import annotations

import itertools
import math

from ...core import dtypes
from .. import ops
from ..builder import Tensor, slice_
from .context import NodeContext
from .registry import converts

MAX_ORDER = 4


@converts("Det")
def det(c: NodeContext):
    x = c.input(0, "X")
    if x.rank < 2 or x.shape[-1] != x.shape[-2]:
        raise c.fail(f"input must be a batch of square matrices, got {x.type}")
    if not dtypes.is_float(x.dtype):
        raise c.fail(f"input must be a float tensor, got {x.type}")
    n = x.shape[-1]
    if n > MAX_ORDER:
        raise c.unsupported(f"the determinant of {n} x {n} matrices (at most {MAX_ORDER} x {MAX_ORDER}: "
                            f"the Leibniz formula's {math.factorial(n)} terms)")
    batch = list(x.shape[:-2])
    entries = [[ops.reshape(slice_(x, [i, j], [i + 1, j + 1], [-2, -1]), batch) for j in range(n)] for i in range(n)]
    total: Tensor | None = None
    for permutation in itertools.permutations(range(n)):
        term = entries[0][permutation[0]]
        for i in range(1, n):
            term = term * entries[i][permutation[i]]
        if total is None:
            total = term
        else:
            total = total - term if _odd(permutation) else total + term
    return total


def _odd(permutation: tuple[int, ...]) -> bool:
    """Whether the permutation has an odd number of inversions."""
    return sum(a > b for a, b in itertools.combinations(permutation, 2)) % 2 == 1
