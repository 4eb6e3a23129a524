"""Every instruction computes what numpy computes: vector ops, strided and
broadcast operands, the cube path with its layouts, the scalar read."""

from __future__ import annotations

import numpy as np
import pytest

from gecomp.core import numeric
from gecomp.dialects.ge.formats import from_physical, to_physical
from npu_testing import gm, kernel_module, local, run

ROWS, COLS = 4, 64
N = ROWS * COLS
SYNC_IN = '  npu.set_flag {src = "MTE2", dst = "V", event = 0}\n  npu.wait_flag {src = "MTE2", dst = "V", event = 0}'
SYNC_OUT = '  npu.set_flag {src = "V", dst = "MTE3", event = 0}\n  npu.wait_flag {src = "V", dst = "MTE3", event = 0}'


def vector_kernel(op_line: str, in_types=("f16", "f16"), out_type="f16") -> str:
    """a, b (ROWS x COLS in GM) -> ua, ub in UB; `op_line` writes uz; uz -> z."""
    body = f"""
  %ua = npu.alloc {{offset = 0}} : {local(N, "ub", in_types[0])}
  %ub = npu.alloc {{offset = 4096}} : {local(N, "ub", in_types[1])}
  %uz = npu.alloc {{offset = 8192}} : {local(N, "ub", out_type)}
  npu.copy %a[%c0], %ua[%c0] {{cols = {N}}}
  npu.copy %b[%c0], %ub[%c0] {{cols = {N}}}
{SYNC_IN}
  {op_line}
{SYNC_OUT}
  npu.copy %uz[%c0], %z[%c0] {{cols = {N}}}"""
    return kernel_module(body, {"a": gm(N, in_types[0]), "b": gm(N, in_types[1])}, {"z": gm(N, out_type)})


SHAPE = f"rows = {ROWS}, cols = {COLS}"
CASES = [
    ("npu.vadd %ua[%c0], %ub[%c0], %uz[%c0]", lambda a, b: a + b),
    ("npu.vsub %ua[%c0], %ub[%c0], %uz[%c0]", lambda a, b: a - b),
    ("npu.vmul %ua[%c0], %ub[%c0], %uz[%c0]", lambda a, b: a * b),
    ("npu.vdiv %ua[%c0], %ub[%c0], %uz[%c0]", lambda a, b: a / b),
    ("npu.vmax %ua[%c0], %ub[%c0], %uz[%c0]", np.maximum),
    ("npu.vmin %ua[%c0], %ub[%c0], %uz[%c0]", np.minimum),
    ("npu.vadds %ua[%c0], %uz[%c0] {{scalar = 1.5, {s}}}", lambda a, b: a + 1.5),
    ("npu.vmuls %ua[%c0], %uz[%c0] {{scalar = -0.25, {s}}}", lambda a, b: a * -0.25),
    ("npu.vmaxs %ua[%c0], %uz[%c0] {{scalar = 0.5, {s}}}", lambda a, b: np.maximum(a, 0.5)),
    ("npu.vmins %ua[%c0], %uz[%c0] {{scalar = 0.5, {s}}}", lambda a, b: np.minimum(a, 0.5)),
    ("npu.vexp %ua[%c0], %uz[%c0]", lambda a, b: np.exp(a)),
    ("npu.vln %ua[%c0], %uz[%c0]", lambda a, b: np.log(np.abs(a))),  # on |a| (see POSITIVE_ONLY)
    ("npu.vsqrt %ua[%c0], %uz[%c0]", lambda a, b: np.sqrt(np.abs(a))),
    ("npu.vrsqrt %ua[%c0], %uz[%c0]", lambda a, b: 1 / np.sqrt(np.abs(a))),
    ("npu.vrec %ua[%c0], %uz[%c0]", lambda a, b: 1 / a),
    ("npu.vtanh %ua[%c0], %uz[%c0]", lambda a, b: np.tanh(a)),
    ("npu.vsigmoid %ua[%c0], %uz[%c0]", lambda a, b: 1 / (1 + np.exp(-a))),
    ("npu.verf %ua[%c0], %uz[%c0]", lambda a, b: numeric.erf(a)),
    ("npu.vrelu %ua[%c0], %uz[%c0]", lambda a, b: np.maximum(a, 0)),
    ("npu.vabs %ua[%c0], %uz[%c0]", lambda a, b: np.abs(a)),
    ("npu.vcopy %ua[%c0], %uz[%c0]", lambda a, b: a),
    ("npu.vdup %uz[%c0] {{value = 3.25, {s}}}", lambda a, b: np.full_like(a, 3.25)),
    ("npu.vtranspose %ua[%c0], %uz[%c0] {{rows = 16, cols = 16}}", lambda a, b: np.concatenate(
        [a.reshape(-1)[:256].reshape(16, 16).T.reshape(-1), a.reshape(-1)[256:]])),
]


POSITIVE_ONLY = ("npu.vln", "npu.vsqrt", "npu.vrsqrt")


@pytest.mark.parametrize("op, expect", CASES, ids=[c[0].split()[0] for c in CASES])
def test_vector_ops(op, expect, close):
    line = op.format(s=SHAPE) if "{{" in op else f"{op} {{{SHAPE}}}"
    if op.split()[0] in POSITIVE_ONLY:  # on |a|, which vabs writes first
        line = f"npu.vabs %ua[%c0], %ua[%c0] {{{SHAPE}}}\n  {line}"
    rng = np.random.default_rng(1)
    a = rng.standard_normal(N).astype(np.float16)
    b = (rng.standard_normal(N) + 3).astype(np.float16)
    (z,) = run(vector_kernel(line), [a, b]).outputs
    close(z, expect(a.astype(np.float64), b.astype(np.float64)))


def test_reductions_cast_compare_select(close):
    rng = np.random.default_rng(2)
    a = rng.standard_normal(N).astype(np.float32)
    b = rng.standard_normal(N).astype(np.float32)
    x = a.reshape(ROWS, COLS)
    for op, want in (("vreduce_sum", x.sum(1)), ("vreduce_max", x.max(1)), ("vreduce_min", x.min(1))):
        text = vector_kernel(f"npu.{op} %ua[%c0], %uz[%c0] {{{SHAPE}}}", ("f32", "f32"), "f32")
        z = run(text, [a, b]).outputs[0]
        close(z[:ROWS], want)
    # reduce into a strided destination: one result every 8 elements
    text = vector_kernel(f"npu.vreduce_sum %ua[%c0], %uz[%c0] {{{SHAPE}, strides = [{COLS}, 8]}}", ("f32", "f32"), "f32")
    close(run(text, [a, b]).outputs[0][: 8 * ROWS : 8], x.sum(1))
    text = vector_kernel(f"npu.vcast %ua[%c0], %uz[%c0] {{{SHAPE}}}", ("f32", "f32"), "f16")
    np.testing.assert_array_equal(run(text, [a, b]).outputs[0], a.astype(np.float16))
    for mode, fn in (("rint", np.rint), ("floor", np.floor), ("ceil", np.ceil), ("trunc", np.trunc)):
        text = vector_kernel(f'npu.vcast %ua[%c0], %uz[%c0] {{{SHAPE}, round = "{mode}"}}', ("f32", "f32"), "i32")
        np.testing.assert_array_equal(run(text, [a * 4, b]).outputs[0], fn(a * 4).astype(np.int32))
    text = vector_kernel(f'npu.vcmp %ua[%c0], %ub[%c0], %uz[%c0] {{{SHAPE}, cmp = "lt"}}', ("f32", "f32"), "i1")
    np.testing.assert_array_equal(run(text, [a, b]).outputs[0], a < b)
    text = vector_kernel(f'npu.vcmps %ua[%c0], %uz[%c0] {{{SHAPE}, cmp = "ge", scalar = 0.25}}', ("f32", "f32"), "i1")
    np.testing.assert_array_equal(run(text, [a, b]).outputs[0], a >= np.float32(0.25))


def test_select():
    body = f"""
  %um = npu.alloc {{offset = 0}} : {local(N, "ub", "i1")}
  %ua = npu.alloc {{offset = 1024}} : {local(N, "ub")}
  %ub = npu.alloc {{offset = 2048}} : {local(N, "ub")}
  npu.copy %m[%c0], %um[%c0] {{cols = {N}}}
  npu.copy %a[%c0], %ua[%c0] {{cols = {N}}}
  npu.copy %b[%c0], %ub[%c0] {{cols = {N}}}
{SYNC_IN}
  npu.vsel %um[%c0], %ua[%c0], %ub[%c0], %ua[%c0] {{cols = {N}}}
{SYNC_OUT}
  npu.copy %ua[%c0], %z[%c0] {{cols = {N}}}"""
    text = kernel_module(body, {"m": gm(N, "i1"), "a": gm(N), "b": gm(N)}, {"z": gm(N)})
    rng = np.random.default_rng(3)
    m = rng.random(N) < 0.5
    a, b = (rng.standard_normal(N).astype(np.float16) for _ in range(2))
    np.testing.assert_array_equal(run(text, [m, a, b]).outputs[0], np.where(m, a, b))


def test_broadcast_operands(close):
    # z[r, c] = (x[r, c] - rowmax[r]) * scale[c]: a per-row scalar (column stride 0)
    # and a row broadcast to every row (row stride 0).
    rng = np.random.default_rng(4)
    x = rng.standard_normal((ROWS, COLS)).astype(np.float32)
    scale = rng.standard_normal(COLS).astype(np.float32)
    body = f"""
  %ux = npu.alloc {{offset = 0}} : {local(N, "ub", "f32")}
  %us = npu.alloc {{offset = 2048}} : {local(COLS, "ub", "f32")}
  %um = npu.alloc {{offset = 4096}} : {local(ROWS, "ub", "f32")}
  npu.copy %x[%c0], %ux[%c0] {{cols = {N}}}
  npu.copy %s[%c0], %us[%c0] {{cols = {COLS}}}
{SYNC_IN}
  npu.vreduce_max %ux[%c0], %um[%c0] {{{SHAPE}}}
  npu.vsub %ux[%c0], %um[%c0], %ux[%c0] {{{SHAPE}, strides = [{COLS}, 1, {COLS}], col_strides = [1, 0, 1]}}
  npu.vmul %ux[%c0], %us[%c0], %ux[%c0] {{{SHAPE}, strides = [{COLS}, 0, {COLS}]}}
{SYNC_OUT}
  npu.copy %ux[%c0], %z[%c0] {{cols = {N}}}"""
    text = kernel_module(body, {"x": gm(N, "f32"), "s": gm(COLS, "f32")}, {"z": gm(N, "f32")})
    (z,) = run(text, [x.reshape(-1), scale]).outputs
    close(z.reshape(ROWS, COLS), (x - x.max(1, keepdims=True)) * scale)


def test_strided_copies_move_tiles():
    # z (8 x 32) = x[4:12, 16:48] of a 16 x 64 matrix, through a UB tile with padded rows.
    x = np.arange(16 * 64, dtype=np.float16).reshape(16, 64) / 64
    body = f"""
  %c272 = arith.constant 272 : index
  %u = npu.alloc {{offset = 0}} : {local(8 * 48, "ub")}
  npu.copy %x[%c272], %u[%c0] {{rows = 8, cols = 32, strides = [64, 48]}}
  npu.set_flag {{src = "MTE2", dst = "MTE3", event = 0}}
  npu.wait_flag {{src = "MTE2", dst = "MTE3", event = 0}}
  npu.copy %u[%c0], %z[%c0] {{rows = 8, cols = 32, strides = [48, 32]}}"""
    text = kernel_module(body, {"x": gm(16 * 64)}, {"z": gm(8 * 32)})
    (z,) = run(text, [x.reshape(-1)]).outputs
    np.testing.assert_array_equal(z.reshape(8, 32), x[4:12, 16:48])


def cube_kernel(m: int, n: int, k: int, *, a_transposed: bool, b_nz: bool, c_nz: bool, relu: bool, steps: int = 1) -> str:
    """C = A @ B with A given as A^T (k x m) when `a_transposed`, B in FRACTAL_NZ when
    `b_nz`, C written in NZ when `c_nz`; the k dimension in `steps` accumulating steps."""
    ks = k // steps
    a_load = (
        f'npu.load_l0 %a1[%ao], %a0[%c0] {{rows = {ks}, cols = {m}, transpose = true}}'
        if a_transposed
        else f"npu.load_l0 %a1[%ao], %a0[%c0] {{rows = {m}, cols = {ks}, strides = [{k}, {ks}]}}"
    )
    b_load = (
        f'npu.load_l0 %b1[%bo], %b0[%c0] {{rows = {ks}, cols = {n}, layout = "nz", strides = [{k * 16}, {n}]}}'
        if b_nz
        else f"npu.load_l0 %b1[%bo], %b0[%c0] {{rows = {ks}, cols = {n}}}"
    )
    out = f'layout = "nz", relu = {str(relu).lower()}' if c_nz else f"relu = {str(relu).lower()}"
    mmads = []
    for s in range(steps):
        a_offset = s * ks * m if a_transposed else s * ks
        b_offset = s * ks * 16 if b_nz else s * ks * n
        mmads.append(f"""
  %ao{s} = arith.constant {a_offset} : index
  %bo{s} = arith.constant {b_offset} : index
  npu.wait_flag {{src = "M", dst = "MTE1", event = 0}}
  {a_load.replace("%ao", f"%ao{s}")}
  {b_load.replace("%bo", f"%bo{s}")}
  npu.set_flag {{src = "MTE1", dst = "M", event = 0}}
  npu.wait_flag {{src = "MTE1", dst = "M", event = 0}}
  npu.mmad %a0[%c0], %b0[%c0], %acc[%c0] {{m = {m}, n = {n}, k = {ks}{", accumulate = true" if s else ""}}}
  npu.set_flag {{src = "M", dst = "MTE1", event = 0}}""")
    body = f"""
  %a1 = npu.alloc {{offset = 0}} : {local(m * k, "l1")}
  %b1 = npu.alloc {{offset = {m * k * 2}}} : {local(k * n, "l1")}
  %a0 = npu.alloc {{offset = 0}} : {local(m * ks, "l0a")}
  %b0 = npu.alloc {{offset = 0}} : {local(ks * n, "l0b")}
  %acc = npu.alloc {{offset = 0}} : {local(m * n, "l0c", "f32")}
  npu.copy %a[%c0], %a1[%c0] {{cols = {m * k}}}
  npu.copy %b[%c0], %b1[%c0] {{cols = {k * n}}}
  npu.set_flag {{src = "MTE2", dst = "MTE1", event = 0}}
  npu.wait_flag {{src = "MTE2", dst = "MTE1", event = 0}}
  npu.set_flag {{src = "M", dst = "MTE1", event = 0}}{"".join(mmads)}
  npu.wait_flag {{src = "M", dst = "MTE1", event = 0}}
  npu.set_flag {{src = "M", dst = "FIX", event = 0}}
  npu.wait_flag {{src = "M", dst = "FIX", event = 0}}
  npu.fixpipe %acc[%c0], %c[%c0] {{rows = {m}, cols = {n}, {out}}}"""
    return kernel_module(body, {"a": gm(m * k), "b": gm(k * n)}, {"c": gm(m * n)})


@pytest.mark.parametrize("a_transposed, b_nz, c_nz, relu, steps", [
    (False, False, False, False, 1),
    (True, True, True, True, 1),
    (False, True, False, True, 2),
    (True, False, True, False, 3),
])
def test_cube_path(a_transposed, b_nz, c_nz, relu, steps, close):
    m, n, k = 32, 48, 96
    rng = np.random.default_rng(5)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    a_gm = a.T if a_transposed else a
    b_gm = to_physical(b, "FRACTAL_NZ") if b_nz else b
    text = cube_kernel(m, n, k, a_transposed=a_transposed, b_nz=b_nz, c_nz=c_nz, relu=relu, steps=steps)
    (c,) = run(text, [np.ascontiguousarray(a_gm).reshape(-1), np.ascontiguousarray(b_gm).reshape(-1)]).outputs
    if c_nz:
        c = from_physical(c.reshape(n // 16, m // 16, 16, 16), "FRACTAL_NZ", (m, n))
    want = a.astype(np.float64) @ b.astype(np.float64)
    close(c.reshape(m, n), np.maximum(want, 0) if relu else want)


def cube_prologue(n: int, dtype: str, acc: str) -> str:
    """a, b (n x n in GM) -> L1 -> L0A / L0B -> %acc = a @ b in L0C, ordered by barriers."""
    e = 2 if dtype == "f16" else 1
    return f"""
  %a1 = npu.alloc {{offset = 0}} : {local(n * n, "l1", dtype)}
  %b1 = npu.alloc {{offset = {n * n * e}}} : {local(n * n, "l1", dtype)}
  %a0 = npu.alloc {{offset = 0}} : {local(n * n, "l0a", dtype)}
  %b0 = npu.alloc {{offset = 0}} : {local(n * n, "l0b", dtype)}
  %acc = npu.alloc {{offset = 0}} : {local(n * n, "l0c", acc)}
  npu.copy %a[%c0], %a1[%c0] {{cols = {n * n}}}
  npu.copy %b[%c0], %b1[%c0] {{cols = {n * n}}}
  npu.pipe_barrier {{pipe = "ALL"}}
  npu.load_l0 %a1[%c0], %a0[%c0] {{rows = {n}, cols = {n}}}
  npu.load_l0 %b1[%c0], %b0[%c0] {{rows = {n}, cols = {n}}}
  npu.pipe_barrier {{pipe = "ALL"}}
  npu.mmad %a0[%c0], %b0[%c0], %acc[%c0] {{m = {n}, n = {n}, k = {n}}}"""


def test_int8_mmad_accumulates_in_int32():
    n = 32
    body = cube_prologue(n, "i8", "i32") + f"""
  npu.pipe_barrier {{pipe = "ALL"}}
  npu.fixpipe %acc[%c0], %c[%c0] {{rows = {n}, cols = {n}}}"""
    text = kernel_module(body, {"a": gm(n * n, "i8"), "b": gm(n * n, "i8")}, {"c": gm(n * n, "i32")})
    rng = np.random.default_rng(6)
    a, b = (rng.integers(-128, 128, (n, n)).astype(np.int8) for _ in range(2))
    (c,) = run(text, [a.reshape(-1), b.reshape(-1)]).outputs
    np.testing.assert_array_equal(c.reshape(n, n), a.astype(np.int32) @ b.astype(np.int32))


def test_fixpipe_to_ub_feeds_the_vector_unit(close):
    n = 16
    body = cube_prologue(n, "f16", "f32") + f"""
  %u = npu.alloc {{offset = 0}} : {local(n * n, "ub", "f32")}
  npu.set_flag {{src = "M", dst = "V", event = 0}}
  npu.wait_flag {{src = "M", dst = "V", event = 0}}
  npu.fixpipe %acc[%c0], %u[%c0] {{rows = {n}, cols = {n}}}
  npu.vtanh %u[%c0], %u[%c0] {{cols = {n * n}}}
  npu.set_flag {{src = "V", dst = "MTE3", event = 0}}
  npu.wait_flag {{src = "V", dst = "MTE3", event = 0}}
  npu.copy %u[%c0], %c[%c0] {{cols = {n * n}}}"""
    text = kernel_module(body, {"a": gm(n * n), "b": gm(n * n)}, {"c": gm(n * n, "f32")})
    rng = np.random.default_rng(7)
    a, b = (rng.standard_normal(n * n).astype(np.float16) for _ in range(2))
    result = run(text, [a, b])
    close(result.outputs[0].reshape(n, n), np.tanh(a.reshape(n, n).astype(np.float64) @ b.reshape(n, n)))
    assert result.report.bytes_per_path()["l0c_to_ub"] == n * n * 4


def test_read_scalar_gathers_rows():
    # z[i] = table[index[i]] for 4 rows of 32 elements.
    body = f"""
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c32 = arith.constant 32 : index
  %ui = npu.alloc {{offset = 0}} : {local(8, "ub", "i32")}
  %ur = npu.alloc {{offset = 32}} : {local(128, "ub")}
  npu.copy %index[%c0], %ui[%c0] {{cols = 8}}
  npu.set_flag {{src = "MTE2", dst = "S", event = 0}}
  npu.wait_flag {{src = "MTE2", dst = "S", event = 0}}
  scf.for %i = %c0 to %c4 step %c1 {{
    %row = npu.read_scalar %ui[%i] : index
    %src = arith.muli %row, %c32 : index
    %dst = arith.muli %i, %c32 : index
    npu.copy %table[%src], %ur[%dst] {{cols = 32}}
  }}
  npu.set_flag {{src = "MTE2", dst = "MTE3", event = 0}}
  npu.wait_flag {{src = "MTE2", dst = "MTE3", event = 0}}
  npu.copy %ur[%c0], %z[%c0] {{cols = 128}}"""
    text = kernel_module(body, {"index": gm(8, "i32"), "table": gm(10 * 32)}, {"z": gm(128)})
    table = np.arange(320, dtype=np.float16).reshape(10, 32)
    index = np.array([7, 2, 9, 2, 0, 0, 0, 0], dtype=np.int32)
    (z,) = run(text, [index, table.reshape(-1)]).outputs
    np.testing.assert_array_equal(z.reshape(4, 32), table[index[:4]])


def test_outputs_nothing_writes_are_nan_and_blocks_split_the_work():
    body = f"""
  %b = npu.block_idx : index
  %n = npu.block_dim : index
  %c64 = arith.constant 64 : index
  %o = arith.muli %b, %c64 : index
  %u = npu.alloc {{offset = 0}} : {local(64, "ub")}
  npu.copy %x[%o], %u[%c0] {{cols = 64}}
  npu.set_flag {{src = "MTE2", dst = "MTE3", event = 0}}
  npu.wait_flag {{src = "MTE2", dst = "MTE3", event = 0}}
  npu.copy %u[%c0], %z[%o] {{cols = 64}}"""
    text = kernel_module(body, {"x": gm(256)}, {"z": gm(256)}, block_dim=3)
    x = np.arange(256, dtype=np.float16)
    (z,) = run(text, [x]).outputs
    np.testing.assert_array_equal(z[:192], x[:192])
    assert np.isnan(z[192:]).all()
