"""The fused matmuls and cube groups lowered to the cube kernel with their
epilogues: compile, simulate, compare with the reference interpreter."""

from __future__ import annotations

import pytest

from cube_lowering_testing import check_lowering, compile_module, overlapped, parse, tensor

from gecomp.dialects import npu
from gecomp.lowering.fused_to_npu.templates import cube_kernel


def arg(name: str, shape, dtype: str = "f16") -> tuple[str, str]:
    return f'%{name}: {tensor(shape, dtype)} {{ge.name = "{name}"}}', tensor(shape, dtype)


def module(args: list[tuple[str, str]], op: str, operands: str, attrs: str, results: list[str], returned: int | None = None) -> str:
    """`@main` applying `op` once and returning its first `returned` results (all)."""
    names = [f"%r{i}" for i in range(len(results))]
    kept = results[:returned]
    outs = ", ".join(f'{t} {{ge.name = "out{i}"}}' for i, t in enumerate(kept))
    result_types = results[0] if len(results) == 1 else f"({', '.join(results)})"
    return f"""func.func @main({", ".join(a for a, _ in args)}) -> ({outs}) {{
  {", ".join(names)} = {op} {operands} {attrs} : ({", ".join(t for _, t in args)}) -> {result_types}
  func.return {", ".join(names[: len(kept)])} : {", ".join(kept)}
}}"""


def intermediates(compiled) -> int:
    """GM buffers the host plan allocates beside its arguments."""
    return sum(isinstance(op, npu.GmBufferOp) for op in compiled.walk())


def check_sum_dropped(text_of, hw: str = "tiny") -> None:
    """A norm whose residual sum nothing reads computes y alone: the same numbers,
    and no GM buffer for the sum (returning both, the sum goes to an output)."""
    both = parse(text_of(None))
    check_lowering(both, hw)
    y_only = parse(text_of(1))
    check_lowering(y_only, hw)
    assert intermediates(y_only) == intermediates(both)


# ---- fused.matmul_bias_act ---------------------------------------------------------------


@pytest.mark.parametrize(
    "m,k,n,bias,residual,act",
    [
        (33, 40, 50, True, (33, 50), "none"),
        (17, 16, 65, True, None, "relu"),
        (1, 33, 17, False, (1, 17), "gelu"),
        (40, 17, 33, True, (33,), "gelu_tanh"),
        (65, 20, 16, False, (65, 1), "silu"),
        (16, 16, 16, False, None, "none"),
    ],
)
def test_matmul_bias_act(m, k, n, bias, residual, act):
    check_lowering(bias_act_module("fused.matmul_bias_act", [arg("a", (m, k)), arg("b", (k, n))], (m, n), bias, residual, act))


def bias_act_module(op: str, args: list, shape, bias: bool, residual, act: str) -> str:
    """`op` of `args` with an optional bias (N) and residual of shape `residual`."""
    n = shape[-1]
    operands = ", ".join(a.split(":")[0] for a, _ in args)
    if bias:
        args = [*args, arg("bias", (n,))]
        operands += " bias %bias"
    if residual:
        args = [*args, arg("res", residual)]
        operands += " residual %res"
    return module(args, op, operands, f'{{act = "{act}"}}', [tensor(shape)])


def test_matmul_bias_act_ascend910_transposed():
    m, k, n = 130, 200, 300
    args = [arg("a", (k, m)), arg("b", (n, k)), arg("bias", (n,)), arg("res", (m, n))]
    attrs = '{act = "gelu", transpose_a = true, transpose_b = true}'
    check_lowering(module(args, "fused.matmul_bias_act", "%a, %b bias %bias residual %res", attrs, [tensor((m, n))]), "ascend910")


# ---- fused.multi_matmul_bias_act ----------------------------------------------------------


MULTI_CASES = [
    (33, 40, 50, 3, True, "gelu", "tiny"),
    (17, 16, 65, 2, False, "none", "tiny"),
    (1, 33, 17, 3, True, "relu", "tiny"),
    (130, 200, 96, 3, True, "none", "ascend910"),
]


@pytest.mark.parametrize("m,k,n,products,biased,act,hw", MULTI_CASES)
def test_multi_matmul_bias_act(m, k, n, products, biased, act, hw):
    check_lowering(multi_module(m, k, n, products, biased, act), hw)


def multi_module(m: int, k: int, n: int, products: int, biased: bool, act: str, nz_weights: bool = False) -> str:
    args = [arg("a", (m, k))]
    weights = []
    for i in range(products):
        if nz_weights:
            w = tensor((k, n), encoding="FRACTAL_NZ")
            weights.append(f"%w{i} = ge.const #ge.random<normal, seed = {i}, mean = 0.0, std = 0.05> : {w}")
        else:
            args.append(arg(f"w{i}", (k, n)))
    if biased:
        args += [arg(f"b{i}", (n,)) for i in range(products)]
    operands = ", ".join(["%a"] + [f"%w{i}" for i in range(products)] + ([f"%b{i}" for i in range(products)] if biased else []))
    attrs = f'{{act = "{act}", biased = {str(biased).lower()}}}'
    types = [tensor((m, k))] + [tensor((k, n), encoding="FRACTAL_NZ" if nz_weights else None)] * products
    types += [tensor((n,))] * (products if biased else 0)
    results = [tensor((m, n))] * products
    names = [f"%r{i}" for i in range(products)]
    outs = ", ".join(f'{t} {{ge.name = "out{i}"}}' for i, t in enumerate(results))
    body = "\n  ".join(weights)
    return f"""func.func @main({", ".join(a for a, _ in args)}) -> ({outs}) {{
  {body}
  {", ".join(names)} = fused.multi_matmul_bias_act {operands} {attrs} : ({", ".join(types)}) -> ({", ".join(results)})
  func.return {", ".join(names)} : {", ".join(results)}
}}"""


# ---- fused.batch_matmul ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "mask,mask_type,scale",
    [(None, None, 0.125), ((2, 1, 17, 20), "i1", 0.5), ((17, 20), "f16", 1.0), ((1, 1, 1, 20), "i1", 2.0)],
)
def test_fused_batch_matmul(mask, mask_type, scale):
    b, m, k, n = (2, 3), 17, 24, 20
    args = [arg("a", (*b, m, k)), arg("b", (*b, n, k))]
    operands = "%a, %b"
    if mask:
        args.append(arg("mask", mask, mask_type))
        operands += " mask %mask"
    attrs = f"{{transpose_b = true, scale = {scale}, mask_value = -100.0}}"
    check_lowering(module(args, "fused.batch_matmul", operands, attrs, [tensor((*b, m, n))]))


# ---- fused.gated_matmul ---------------------------------------------------------------------------


@pytest.mark.parametrize("m,k,n,act", [(33, 40, 50, "silu"), (1, 17, 16, "gelu"), (20, 65, 17, "relu")])
def test_gated_matmul(m, k, n, act):
    args = [arg("x", (m, k)), arg("g", (k, n)), arg("u", (k, n))]
    check_lowering(module(args, "fused.gated_matmul", "%x, %g, %u", f'{{act = "{act}"}}', [tensor((m, n))]))


# ---- matmul + residual + norm -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "m,k,n,layer,bias,hw",
    [(33, 40, 50, True, True, "tiny"), (17, 16, 65, False, False, "tiny"), (1, 20, 17, True, False, "tiny"),
     (64, 128, 300, True, True, "ascend910")],
)
def test_matmul_add_norm(m, k, n, layer, bias, hw):
    args = [arg("a", (m, k)), arg("b", (k, n)), arg("res", (m, n)), arg("gamma", (n,))]
    operands = "%a, %b, %res, %gamma"
    if layer:
        args.append(arg("beta", (n,)))
        operands += ", %beta"
    if bias:
        args.append(arg("bias", (n,)))
        operands += " bias %bias"
    op = "fused.matmul_add_layer_norm" if layer else "fused.matmul_add_rms_norm"
    out = tensor((m, n))
    check_sum_dropped(lambda returned: module(args, op, operands, "{epsilon = 1.0e-05}", [out, out], returned), hw)


# ---- fused.group with a cube op -------------------------------------------------------------------


def test_cube_group_epilogue():
    """A batch_matmul with a bias, a scalar scale, a sigmoid gate on a second
    input, two results (one of them an intermediate of the epilogue)."""
    a, b, bias, r, out = tensor((2, 33, 40)), tensor((2, 40, 50)), tensor((50,)), tensor((2, 33, 50)), tensor((2, 33, 50))
    text = f"""func.func @main(%a: {a} {{ge.name = "a"}}, %b: {b} {{ge.name = "b"}}, %bias: {bias} {{ge.name = "bias"}}, %r: {r} {{ge.name = "r"}}) -> ({out} {{ge.name = "y"}}, {out} {{ge.name = "z"}}) {{
  %y, %z = fused.group %a, %b, %bias, %r : ({a}, {b}, {bias}, {r}) -> ({out}, {out}) {{
  ^bb0(%0: {a}, %1: {b}, %2: {bias}, %3: {r}):
    %half = ge.const dense<0.5> : tensor<f16>
    %p = ge.batch_matmul %0, %1 : ({a}, {b}) -> {out}
    %q = ge.add %p, %2 : ({out}, {bias}) -> {out}
    %s = ge.mul %q, %half : ({out}, tensor<f16>) -> {out}
    %t = ge.sigmoid %s : ({out}) -> {out}
    %u = ge.mul %t, %3 : ({out}, {r}) -> {out}
    fused.yield %u, %q : {out}, {out}
  }}
  func.return %y, %z : {out}, {out}
}}"""
    check_lowering(text)


def test_cube_group_format_change():
    """A group around an NZ product that writes its result in ND (as auto fusion
    makes them after the layout pass)."""
    nz = tensor((40, 24), encoding="FRACTAL_NZ")
    out_nz = tensor((17, 24), encoding="FRACTAL_NZ")
    text = f"""func.func @main(%a: {tensor((17, 40))} {{ge.name = "a"}}) -> ({tensor((17, 24))} {{ge.name = "y"}}) {{
  %w = ge.const #ge.random<normal, seed = 3, mean = 0.0, std = 0.5> : {nz}
  %y = fused.group %a, %w : ({tensor((17, 40))}, {nz}) -> {tensor((17, 24))} {{
  ^bb0(%0: {tensor((17, 40))}, %1: {nz}):
    %p = ge.matmul %0, %1 : ({tensor((17, 40))}, {nz}) -> {out_nz}
    %r = ge.relu %p : ({out_nz}) -> {out_nz}
    %d = ge.transdata %r {{src_format = "FRACTAL_NZ", dst_format = "ND"}} : ({out_nz}) -> {tensor((17, 24))}
    fused.yield %d : {tensor((17, 24))}
  }}
  func.return %y : {tensor((17, 24))}
}}"""
    check_lowering(text)


def relu_group(out_dtype: str, also_sigmoid: bool) -> str:
    """A cube group `relu(a @ b + bias)` into an `out_dtype` output; with
    `also_sigmoid` the relu's result also feeds a second result."""
    a, b, bias, out = tensor((2, 33, 40)), tensor((2, 40, 50)), tensor((50,)), tensor((2, 33, 50))
    y = tensor((2, 33, 50), out_dtype)
    extra = f"    %s = ge.sigmoid %r : ({out}) -> {out}\n" if also_sigmoid else ""
    results = [y, out] if also_sigmoid else [y]
    yields = "%c, %s" if also_sigmoid else "%c"
    names = ", ".join(f'{t} {{ge.name = "y{i}"}}' for i, t in enumerate(results))
    cast = f'    %c = ge.cast %r {{to = {out_dtype}}} : ({out}) -> {y}\n' if out_dtype != "f16" else "    %c = ge.identity %r : ({0}) -> {0}\n".format(out)
    return f"""func.func @main(%a: {a} {{ge.name = "a"}}, %b: {b} {{ge.name = "b"}}, %bias: {bias} {{ge.name = "bias"}}) -> ({names}) {{
  %y:{len(results)} = fused.group %a, %b, %bias : ({a}, {b}, {bias}) -> ({", ".join(results)}) {{
  ^bb0(%0: {a}, %1: {b}, %2: {bias}):
    %p = ge.batch_matmul %0, %1 : ({a}, {b}) -> {out}
    %q = ge.add %p, %2 : ({out}, {bias}) -> {out}
    %r = ge.relu %q : ({out}) -> {out}
{cast}{extra}    fused.yield {yields} : {", ".join(results)}
  }}
  func.return {", ".join(f"%y#{i}" for i in range(len(results)))} : {", ".join(results)}
}}"""


@pytest.mark.parametrize("also_sigmoid", [False, True])
def test_cube_group_relu_after_rounding(also_sigmoid):
    """A relu that makes an fp16 result runs on the rounded fp16 output tile (half
    the vector repeats of the fp32 temporary; relu commutes with rounding, so the
    numbers are the reference's); a relu whose value another op also reads stays
    in fp32."""
    module = parse(relu_group("f16", also_sigmoid))
    check_lowering(module)
    relus = [op for op in module.walk() if isinstance(op, npu.VReluOp)]
    widths = {op.operands[0].type.element_type.bitwidth for op in relus}
    assert widths == ({32} if also_sigmoid else {16})


# ---- split into a matmul and a norm when that is faster ----------------------------------------


def norm_module(m, k, n) -> str:
    args = [arg("a", (m, k)), arg("b", (k, n)), arg("res", (m, n)), arg("gamma", (n,)), arg("beta", (n,))]
    out = tensor((m, n))
    return module(args, "fused.matmul_add_layer_norm", "%a, %b, %res, %gamma, %beta", "{epsilon = 1.0e-05}", [out, out])


FORMS = {
    "fused": {"fused.matmul_add_layer_norm"},
    "split": {"fused.matmul_bias_act", "ge.layer_norm"},
    "split-K": {"fused.matmul_partials", "fused.partials_add_layer_norm"},
}


@pytest.mark.parametrize(
    "m,k,n,hw,form",
    [(33, 40, 50, "tiny", "fused"), (16, 512, 256, "tiny", "split-K"), (64, 128, 300, "tiny", "split"),
     (128, 768, 768, "ascend910", "split-K"), (512, 64, 64, "ascend910", "fused")],
)
def test_matmul_add_norm_split_decision(m, k, n, hw, form):
    """Few rows against a large B: each core of the whole-row kernel would read all of
    B (or its rows do not fit the buffers at all): a matmul kernel and a norm
    kernel; with a long K for so few rows, a split-K matmul and the norm of its
    partials."""
    compiled = compile_module(parse(norm_module(m, k, n)), f"fused-split-matmul-norm{{hw={hw}}}")
    names = {op.name for op in compiled.walk()}
    for name, ops in FORMS.items():
        assert ops <= names if name == form else not ops & names, name


@pytest.mark.parametrize("m,k,n", [(64, 128, 300), (16, 512, 256)])
def test_matmul_add_norm_split_numbers(m, k, n):
    check_lowering(norm_module(m, k, n))


def test_matmul_add_norm_split_k_decision_and_numbers():
    """BERT's FFN output (128 x 3072 @ 3072 x 768): even split, every core reads all
    of A's columns for its rows; cut along K, each reads a slice."""
    m, k, n = 128, 3072, 768
    compiled = compile_module(parse(norm_module(m, k, n)), "fused-split-matmul-norm{hw=ascend910}")
    ops = {op.name: op for op in compiled.walk()}
    assert "fused.matmul_add_layer_norm" not in ops and "fused.partials_add_layer_norm" in ops
    splits = ops["fused.matmul_partials"].attr_value("splits")
    assert splits > 1 and k % (16 * splits) == 0
    check_lowering(norm_module(m, k, n), "ascend910")


# ---- split-K: fused.matmul_partials and the partials' norm ----------------------------------


@pytest.mark.parametrize(
    "m,k,n,splits,layouts",
    [
        (17, 64, 50, 2, ""),
        (33, 128, 40, 4, "transpose_a"),
        (16, 96, 33, 3, "transpose_b"),
        (40, 128, 48, 2, "nz_a nz_b"),
        (1, 256, 17, 8, "nz_b"),
    ],
)
def test_matmul_partials(m, k, n, splits, layouts):
    """Each K slice's product, read in place from A's columns and B's rows in any
    layout (transposed, FRACTAL_NZ), lands in its own fp32 plane."""
    flags = {f: f in layouts for f in ("transpose_a", "transpose_b")}
    a_shape = (k, m) if flags["transpose_a"] else (m, k)
    b_shape = (n, k) if flags["transpose_b"] else (k, n)
    a_type = tensor(a_shape, encoding="FRACTAL_NZ" if "nz_a" in layouts else None)
    b_type = tensor(b_shape, encoding="FRACTAL_NZ" if "nz_b" in layouts else None)
    out = tensor((splits, m, n), "f32")
    attrs = ", ".join([f"splits = {splits}", *(f"{f} = true" for f, on in flags.items() if on)])
    text = f"""func.func @main(%x: {tensor(a_shape)} {{ge.name = "a"}}, %y: {tensor(b_shape)} {{ge.name = "b"}}) -> ({out} {{ge.name = "out"}}) {{
  %a = ge.transdata %x {{src_format = "ND", dst_format = "{"FRACTAL_NZ" if "nz_a" in layouts else "ND"}"}} : ({tensor(a_shape)}) -> {a_type}
  %b = ge.transdata %y {{src_format = "ND", dst_format = "{"FRACTAL_NZ" if "nz_b" in layouts else "ND"}"}} : ({tensor(b_shape)}) -> {b_type}
  %p = fused.matmul_partials %a, %b {{{attrs}}} : ({a_type}, {b_type}) -> {out}
  func.return %p : {out}
}}"""
    check_lowering(text)


@pytest.mark.parametrize(
    "norm,bias,residual,splits",
    [("layer_norm", True, (33, 40), 2), ("rms_norm", False, (33, 40), 4), ("layer_norm", False, (1, 40), 3)],
)
def test_partials_add_norm(norm, bias, residual, splits):
    m, n = 33, 40
    args = [arg("p", (splits, m, n), "f32"), arg("res", residual), arg("gamma", (n,))]
    operands = "%p, %res, %gamma"
    if norm == "layer_norm":
        args.append(arg("beta", (n,)))
        operands += ", %beta"
    if bias:
        args.append(arg("bias", (n,)))
        operands += " bias %bias"
    out = tensor((m, n))
    check_sum_dropped(lambda returned: module(args, f"fused.partials_add_{norm}", operands, "{epsilon = 1.0e-05}", [out, out], returned))


def test_matmul_partials_rejects_uneven_slices():
    text = module([arg("a", (8, 40)), arg("b", (40, 8))], "fused.matmul_partials", "%a, %b", "{splits = 2}", [tensor((2, 8, 8), "f32")])
    with pytest.raises(Exception, match="whole 16-element blocks"):
        parse(text)


def test_fused_race_free_with_insert_sync():
    args = [arg("a", (33, 40)), arg("b", (40, 50)), arg("bias", (50,)), arg("res", (33, 50))]
    text = module(args, "fused.matmul_bias_act", "%a, %b bias %bias residual %res", '{act = "gelu"}', [tensor((33, 50))])
    check_lowering(text, pipeline=overlapped("tiny"))
    check_lowering(norm_module(33, 40, 50), pipeline=overlapped("tiny"))


@pytest.mark.parametrize(
    "bias,residual,act",
    [(True, (33, 40), "gelu"), (False, (1, 40), "relu"), (True, None, "none")],
)
def test_partials_bias_act(bias, residual, act):
    m, n, splits = 33, 40, 3
    check_lowering(bias_act_module("fused.partials_bias_act", [arg("p", (splits, m, n), "f32")], (m, n), bias, residual, act))


def test_split_k_decision_and_numbers():
    """64 rows, K = 4096: each core of the plain product reads its rows' 512 KB of
    A; cut along K it reads a slice, and the partials' kernel adds them up."""
    args = [arg("a", (64, 4096)), arg("b", (4096, 512)), arg("bias", (512,))]
    text = module(args, "fused.matmul_bias_act", "%a, %b bias %bias", '{act = "gelu"}', [tensor((64, 512))])
    compiled = compile_module(parse(text), "fused-split-k{hw=ascend910}")
    names = {op.name for op in compiled.walk()}
    assert {"fused.matmul_partials", "fused.partials_bias_act"} <= names and "fused.matmul_bias_act" not in names
    check_lowering(text, "ascend910")
    few = module([arg("a", (256, 64)), arg("b", (64, 64))], "fused.matmul_bias_act", "%a, %b", "", [tensor((256, 64))])
    assert "fused.matmul_partials" not in {op.name for op in compile_module(parse(few), "fused-split-k{hw=ascend910}").walk()}



def test_partials_must_be_nd():
    """A plane is a run of rows from its offset, which an NZ image is not: refused, not
    read wrong."""
    nz = tensor((2, 32, 48), "f32", encoding="FRACTAL_NZ")
    text = f"""func.func @main(%p: {tensor((2, 32, 48), "f32")} {{ge.name = "p"}}) -> ({tensor((32, 48))} {{ge.name = "y"}}) {{
  %q = ge.transdata %p {{src_format = "ND", dst_format = "FRACTAL_NZ"}} : ({tensor((2, 32, 48), "f32")}) -> {nz}
  %y = fused.partials_bias_act %q {{act = "relu"}} : ({nz}) -> {tensor((32, 48))}
  func.return %y : {tensor((32, 48))}
}}"""
    with pytest.raises(Exception, match="partials in FRACTAL_NZ"):
        compile_module(parse(text), "ge-lower-to-npu{hw=tiny}")


# ---- products in turn --------------------------------------------------------------------------


@pytest.fixture
def products_in_turn(monkeypatch):
    """Every problem whose products may take turns takes them, whatever the estimate."""
    original = cube_kernel.choose_problem_tiling

    def in_turns(hw, problem, rank=0):
        turns = problem.in_turns()
        return (turns, turns.tiling(hw)) if turns is not None else original(hw, problem, rank)

    monkeypatch.setattr(cube_kernel, "choose_problem_tiling", in_turns)


@pytest.mark.parametrize(
    "m,k,n,products,biased,act,hw", [*MULTI_CASES, (128, 256, 768, 3, True, "none", "ascend910")]
)
def test_multi_matmul_bias_act_in_turns(products_in_turn, m, k, n, products, biased, act, hw):
    """Each product's output block an item of its own, the turns of a block on one
    core (A resident when the tiler may keep it), synchronised by npu-insert-sync
    and checked for races."""
    text = multi_module(m, k, n, products, biased, act)
    check_lowering(text, hw, pipeline=overlapped(hw))


def test_qkv_projections_take_turns_with_a_resident(capsys):
    """BERT's Q, K and V projections (128 x 768 against three 768 x 768 NZ weights):
    the tiler computes the products in turn, three 64 x 48 items per core reading
    their rows of A once."""
    check_lowering(multi_module(128, 768, 768, 3, True, "none", nz_weights=True), "ascend910",
                   pipeline="ge-lower-to-npu{hw=ascend910 debug=true}")
    explained = capsys.readouterr().err
    assert "x 3 products in turn" in explained and "3 per core" in explained and "A resident in L1" in explained


def test_split_k_weighs_the_second_kernel_as_merged_or_launched():
    """128 x 1024 @ 1024 x 256: cutting K pays off when the partials' kernel costs a
    barrier in a merged kernel (`merge=true`, the default), not when it costs a
    launch of its own."""
    args = [arg("h", (128, 1024)), arg("w", (1024, 256)), arg("bias", (256,))]
    text = module(args, "fused.matmul_bias_act", "%h, %w bias %bias", '{act = "none"}', [tensor((128, 256))])

    def split(merge: str) -> bool:
        compiled = compile_module(parse(text), f"fused-split-k{{hw=ascend910 merge={merge}}}")
        return "fused.matmul_partials" in {op.name for op in compiled.walk()}

    assert split("true") and not split("false")
