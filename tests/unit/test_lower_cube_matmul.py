"""ge.matmul and ge.batch_matmul lowered to the cube kernel: compile, simulate,
compare with the reference interpreter.

Shapes are drawn per test from sizes that exercise the kernel's cases: 1, odd
sizes, sizes just above a tile (16, 32, 64 on the tiny preset), transposed
operands, broadcast batch dims, and operands / results in FRACTAL_NZ (weights
uploaded in that format; an NZ result read back by a second product, so the
padding the kernel writes is read too)."""

from __future__ import annotations

import numpy as np
import pytest

from cube_lowering_testing import check_lowering, main_module, overlapped, tensor

SIZES = (1, 5, 16, 17, 33, 65, 100)


def random_constant(shape, seed: int, encoding: str | None = None) -> str:
    return f"ge.const #ge.random<normal, seed = {seed}, mean = 0.0, std = 0.5> : {tensor(shape, encoding=encoding)}"


def matmul_module(m, k, n, ta=False, tb=False, nz_operands=False, nz_result=False, batch=((), ())) -> str:
    """lhs @ rhs (batch_matmul when batch dims are given); NZ operands are constants."""
    ab, bb = batch
    ashape = (*ab, k, m) if ta else (*ab, m, k)
    bshape = (*bb, n, k) if tb else (*bb, k, n)
    out_batch = tuple(np.broadcast_shapes(ab, bb))
    op = "ge.batch_matmul" if ab or bb else "ge.matmul"
    enc = "FRACTAL_NZ" if nz_operands else None
    args, lines = [], []
    for name, shape, seed in (("a", ashape, 1), ("b", bshape, 2)):
        if nz_operands:
            lines.append(f"%{name} = {random_constant(shape, seed, enc)}")
        else:
            args.append(f'%{name}: {tensor(shape)} {{ge.name = "{name}"}}')
    product = tensor((*out_batch, m, n), encoding="FRACTAL_NZ" if nz_result else None)
    flags = f"{{transpose_a = {str(ta).lower()}, transpose_b = {str(tb).lower()}}}"
    lines.append(
        f"%c = {op} %a, %b {flags} : ({tensor(ashape, encoding=enc)}, {tensor(bshape, encoding=enc)}) -> {product}"
    )
    result, rtype = "%c", product
    if nz_result:
        lines.append(f"%w = {random_constant((*out_batch, n, 3), 3)}")
        rtype = tensor((*out_batch, m, 3))
        lines.append(f"%d = {op} %c, %w : ({product}, {tensor((*out_batch, n, 3))}) -> {rtype}")
        result = "%d"
    return main_module(args, lines, result, rtype)


def _cases(count: int, seed: int):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        m, k, n = (int(rng.choice(SIZES)) for _ in range(3))
        yield m, k, n, bool(rng.integers(2)), bool(rng.integers(2)), bool(rng.integers(2)), bool(rng.integers(2))


@pytest.mark.parametrize("m,k,n,ta,tb,nz,nz_result", list(_cases(14, 6)))
def test_matmul_tiny(m, k, n, ta, tb, nz, nz_result):
    check_lowering(matmul_module(m, k, n, ta, tb, nz, nz_result), hw="tiny")


@pytest.mark.parametrize(
    "m,k,n,ta,tb,nz",
    [(1, 1, 1, False, False, False), (130, 200, 300, True, False, True), (17, 513, 33, False, True, False)],
)
def test_matmul_ascend910(m, k, n, ta, tb, nz):
    check_lowering(matmul_module(m, k, n, ta, tb, nz), hw="ascend910")


@pytest.mark.parametrize(
    "batch,m,k,n,ta,tb",
    [
        (((3,), (3,)), 20, 30, 40, False, False),
        (((2, 1), (1, 3)), 17, 9, 33, True, True),
        (((1,), (4,)), 1, 16, 17, False, False),
        (((2, 3), (3,)), 16, 17, 1, False, True),
    ],
)
def test_batch_matmul_broadcast(batch, m, k, n, ta, tb):
    check_lowering(matmul_module(m, k, n, ta, tb, batch=batch), hw="tiny")


def test_batch_matmul_nz():
    check_lowering(matmul_module(33, 20, 18, nz_operands=True, nz_result=True, batch=((2,), (2,))), hw="tiny")


def test_matmul_race_free_with_insert_sync():
    check_lowering(matmul_module(65, 100, 33, True, False, True, True), pipeline=overlapped("tiny"))


@pytest.mark.parametrize(
    "m,k,n,ta,tb,nz,batch",
    [
        (32, 96, 1024, False, False, False, ()),
        (20, 200, 700, True, False, False, ()),  # transposed A, a tail item
        (17, 160, 640, False, True, True, ()),  # A and B in FRACTAL_NZ
        (48, 300, 2048, True, True, False, ()),  # 13 items per core
        (20, 64, 700, False, False, False, (2,)),  # a batch: each core's items in one matrix
    ],
)
def test_a_resident_in_l1(capsys, m, k, n, ta, tb, nz, batch):
    """Items of one core that share their rows of A: the first stages A whole into
    L1 (chunk by chunk), the others only B; the numbers stay right."""
    check_lowering(matmul_module(m, k, n, ta, tb, nz, batch=(batch, batch)), pipeline="ge-lower-to-npu{hw=tiny debug=true}")
    assert "A resident in L1" in capsys.readouterr().err
