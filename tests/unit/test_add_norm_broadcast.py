"""`fused.add_layer_norm` / `fused.add_rms_norm` whose residual broadcasts within
the normalised dims (fuzz seed 1330, graph 14: `Add(r[1,10,9], x[3,6,10,9])`
then a LayerNormalization over the whole tensor). The residual's role was taken
in rows of the last dim while the kernel's rows are the norm's, so the kernel
read the broadcast operand as if it were full-sized (a copy of 1620 elements of
a 90-element buffer). Its role is now taken in the norm's own rows
(`row_view.operand_role(columns=...)`): one the same for every row is a ROW
expanded into the row as it is loaded (`Spread`: copies with a source stride 0
where it repeats); one that the copies cannot expand at aligned UB offsets is
refused by the template, so the legality predicate that fusion asks
(`kernel_exists.kernel_problem`) refuses it too and the add stays a kernel of
its own."""

from __future__ import annotations

import pytest

from gecomp.core.passes import parse_pass_pipeline, run_pipeline
from gecomp.dialects import fused, ge
from gecomp.dialects.context import make_context
from gecomp.lowering.fused_to_npu.kernel_exists import kernel_problem, scratch_context
from gecomp.lowering.fused_to_npu.row_view import Role, Spread, operand_role
from gecomp.simulator.hardware import load_preset
from graph_testing import ops_of, parse
from vector_testing import assert_matches, compile_and_compare, tensor


def _add_norm(op: str, shape, residual, axis: int, dtype: str = "f16") -> str:
    x, r, p = tensor(shape, dtype), tensor(residual, dtype), tensor(shape[axis:], dtype)
    params = 2 if op == "fused.add_layer_norm" else 1
    names = ", ".join(f"%p{i}" for i in range(params))
    args = ", ".join(f"%p{i}: {p}" for i in range(params))
    types = ", ".join([r, x] + [p] * params)
    return f"""func.func @main(%x: {x}, %r: {r}, {args}) -> ({x}, {x}) {{
  %y, %s = {op} %r, %x, {names} {{axis = {axis}, epsilon = 1.0e-05}} : ({types}) -> ({x}, {x})
  func.return %y, %s : {x}, {x}
}}"""


SPREAD = [
    ([3, 6, 10, 9], [1, 10, 9], 0),  # the fuzz graph: 90 values 18 times, one copy
    ([3, 6, 10, 9], [10, 9], 1),  # 3 rows of 540, the residual 6 times in each
    ([2, 3, 4, 16], [2, 1, 4, 16], 0),  # a loop of 2 copies (64 values 3 times, then the next 64)
]


@pytest.mark.parametrize("shape,residual,axis", SPREAD, ids=str)
@pytest.mark.parametrize("op", ["fused.add_layer_norm", "fused.add_rms_norm"])
@pytest.mark.parametrize("dtype", ["f16", "f32"])
def test_residual_broadcast_within_the_norm_is_expanded(op, shape, residual, axis, dtype):
    text = _add_norm(op, shape, residual, axis, dtype)
    assert kernel_problem(ops_of(parse(text), fused.AddLayerNormOp if "layer" in op else fused.AddRmsNormOp)[0],
                          load_preset("ascend910")) is None
    assert_matches(text, pipeline="ge-lower-to-npu{hw=ascend910}", hw="ascend910")


def test_the_fuzz_graph_residual_is_one_copy_with_a_source_stride_0():
    module = parse(_add_norm("fused.add_layer_norm", [3, 6, 10, 9], [1, 10, 9], 0))
    k = scratch_context(ops_of(module, fused.AddLayerNormOp)[0], load_preset("ascend910"))
    role = operand_role(k, k.inputs[0], [3, 6, 10, 9], columns=4)
    assert role.role == Role.ROW and role.spread == Spread(rows=18, cols=90, src_stride=0, dst_stride=90)
    looped = operand_role(k, k.inputs[0], [2, 3, 10, 9], columns=4)  # (1, 10, 9) in rows of (2, 3, 10, 9)
    assert looped.spread == Spread(rows=6, cols=90, src_stride=0, dst_stride=90)


@pytest.mark.parametrize("residual", [[6, 1, 9], [3, 6, 10, 1]], ids=str)
def test_a_residual_no_copy_expands_is_refused_and_not_fused(residual):
    """(6, 1, 9) in a row of (3, 6, 10, 9) is runs of 9 at UB offsets 90 apart (not
    32-byte aligned); (3, 6, 10, 1) repeats each element 9 times. The template
    refuses both, so the predicate does, so pattern fusion keeps the add apart and
    the compiled graph still computes the unfused ops' values."""
    hw = load_preset("ascend910")
    fused_text = _add_norm("fused.add_layer_norm", [3, 6, 10, 9], residual, 0)
    problem = kernel_problem(ops_of(parse(fused_text), fused.AddLayerNormOp)[0], hw)
    assert problem is not None and "operand of shape" in problem
    x, r, p = tensor([3, 6, 10, 9]), tensor(residual), tensor([3, 6, 10, 9])
    text = f"""func.func @main(%x: {x}, %r: {r}, %g: {p}, %b: {p}) -> {x} {{
  %s = ge.add %r, %x : ({r}, {x}) -> {x}
  %y = ge.layer_norm %s, %g, %b {{axis = 0, epsilon = 1.0e-05}} : ({x}, {p}, {p}) -> {x}
  func.return %y : {x}
}}"""
    module = parse(text)
    run_pipeline(parse_pass_pipeline("ge-fuse"), make_context(), module)
    assert not ops_of(module, fused.AddLayerNormOp) and ops_of(module, ge.LayerNormOp)
    mismatch, _, _ = compile_and_compare(text, "ge-compile{hw=ascend910}", hw="ascend910")
    assert mismatch is None, str(mismatch)
