"""fused.group as one vector kernel: groups written by hand (every supported
body: elementwise chains with broadcasts, reductions and normalisations in the
rows, reshapes, concats, FRACTAL_NZ results and inputs, several results) and
groups made by `ge-fuse` from ge graphs; `fused-ungroup` splitting the groups
no kernel can run. Tiny preset, against the reference interpreter."""

from __future__ import annotations

import pytest

from gecomp.dialects.context import make_context
from gecomp.core.parsing import parse_module
from gecomp.core.passes import parse_pass_pipeline, run_pipeline
from gecomp.dialects import npu
from vector_testing import assert_matches, compile_and_compare, tensor


def group(args: dict[str, str], results: list[str], body: str, returns: list[str] | None = None) -> str:
    """@main calling one fused.group with `args` (name -> type) and `body` (ge ops
    on %name arguments, ending with a fused.yield)."""
    names = ", ".join(f"%in_{n}" for n in args)
    types = ", ".join(args.values())
    outs = ", ".join(results)
    out_names = ", ".join(f"%g#{i}" for i in range(len(results))) if len(results) > 1 else "%g"
    block_args = ", ".join(f"%{n}: {t}" for n, t in args.items())
    main_args = ", ".join(f"%in_{n}: {t}" for n, t in args.items())
    return f"""func.func @main({main_args}) -> ({outs}) {{
  %g{":" + str(len(results)) if len(results) > 1 else ""} = fused.group {names} : ({types}) -> ({outs}) {{
  ^bb0({block_args}):
{body}
  }}
  func.return {out_names} : {outs}
}}"""


def kernels(text: str, pipeline: str = "ge-lower-to-npu{hw=tiny merge=false}") -> list[str]:
    """The kernels `pipeline` makes (by default as lowered: npu-merge-launches off)."""
    ctx = make_context()
    module = parse_module(ctx, text, "test.mlir")
    run_pipeline(parse_pass_pipeline(pipeline), ctx, module)
    return [op.sym_name.data for op in module.walk() if isinstance(op, npu.KernelOp)]


X, B, S = tensor([37, 300]), tensor([300]), tensor([37, 1])

ELEMENTWISE = group(
    {"x": X, "b": B, "s": S},
    [X],
    f"""    %c = ge.const dense<0.5> : tensor<f16>
    %0 = ge.add %x, %b : ({X}, {B}) -> {X}
    %1 = ge.gelu %0 : ({X}) -> {X}
    %2 = ge.mul %1, %s : ({X}, {S}) -> {X}
    %3 = ge.mul %2, %c : ({X}, tensor<f16>) -> {X}
    fused.yield %3 : {X}""",
)

REDUCING = group(
    {"x": X},
    [X, S],
    f"""    %m = ge.reduce_max %x {{axes = [1]}} : ({X}) -> {S}
    %0 = ge.sub %x, %m : ({X}, {S}) -> {X}
    %1 = ge.exp %0 : ({X}) -> {X}
    %2 = ge.reduce_sum %1 {{axes = [1]}} : ({X}) -> {S}
    %3 = ge.div %1, %2 : ({X}, {S}) -> {X}
    %4 = ge.softmax %3 : ({X}) -> {X}
    fused.yield %4, %2 : {X}, {S}""",
)

NORM = tensor([64, 96])
NORMALISING = group(
    {"x": NORM, "r": NORM, "g": tensor([96]), "bb": tensor([96])},
    [NORM, NORM, NORM],
    f"""    %0 = ge.add %x, %r : ({NORM}, {NORM}) -> {NORM}
    %1 = ge.layer_norm %0, %g, %bb : ({NORM}, tensor<96xf16>, tensor<96xf16>) -> {NORM}
    %2 = ge.relu %1 : ({NORM}) -> {NORM}
    %3 = ge.rms_norm %2, %g {{epsilon = 1.0e-06}} : ({NORM}, tensor<96xf16>) -> {NORM}
    fused.yield %3, %0, %0 : {NORM}, {NORM}, {NORM}""",
)

CONCAT = group(
    {"x": tensor([64, 96]), "y": tensor([64, 32])},
    [tensor([64, 128])],
    """    %0 = ge.tanh %x : (tensor<64x96xf16>) -> tensor<64x96xf16>
    %1 = ge.reshape %0 : (tensor<64x96xf16>) -> tensor<64x1x96xf16>
    %2 = ge.reshape %1 : (tensor<64x1x96xf16>) -> tensor<64x96xf16>
    %3 = ge.concat %2, %y {axis = 1} : (tensor<64x96xf16>, tensor<64x32xf16>) -> tensor<64x128xf16>
    fused.yield %3 : tensor<64x128xf16>""",
)

NZ_OUT = tensor([48, 72], fmt="FRACTAL_NZ")
NZ_RESULT = group(
    {"x": tensor([48, 72]), "w": tensor([72])},
    [NZ_OUT],
    f"""    %0 = ge.rms_norm %x, %w {{epsilon = 1.0e-06}} : (tensor<48x72xf16>, tensor<72xf16>) -> tensor<48x72xf16>
    %1 = ge.transdata %0 {{src_format = "ND", dst_format = "FRACTAL_NZ"}} : (tensor<48x72xf16>) -> {NZ_OUT}
    fused.yield %1 : {NZ_OUT}""",
)

NZ_IN = tensor([37, 3], fmt="FRACTAL_NZ")
NZ_INPUT = group(
    {"x": NZ_IN},
    [tensor([37, 3])],
    f"""    %0 = ge.sigmoid %x : ({NZ_IN}) -> {NZ_IN}
    %1 = ge.transdata %0 {{src_format = "FRACTAL_NZ", dst_format = "ND"}} : ({NZ_IN}) -> tensor<37x3xf16>
    fused.yield %1 : tensor<37x3xf16>""",
)

NZ_BATCHED = tensor([20, 2, 16], fmt="FRACTAL_NZ")
NZ_MATRICES = group(
    {"x": tensor([20, 16]), "y": tensor([20, 16])},
    [NZ_BATCHED],
    f"""    %0 = ge.softmax %x : (tensor<20x16xf16>) -> tensor<20x16xf16>
    %a = ge.reshape %0 : (tensor<20x16xf16>) -> tensor<20x1x16xf16>
    %b = ge.reshape %y : (tensor<20x16xf16>) -> tensor<20x1x16xf16>
    %c = ge.concat %a, %b {{axis = 1}} : (tensor<20x1x16xf16>, tensor<20x1x16xf16>) -> tensor<20x2x16xf16>
    %1 = ge.transdata %c {{src_format = "ND", dst_format = "FRACTAL_NZ"}} : (tensor<20x2x16xf16>) -> {NZ_BATCHED}
    fused.yield %1 : {NZ_BATCHED}""",
)

GROUPS = {
    "elementwise": ELEMENTWISE,
    "reducing": REDUCING,
    "normalising": NORMALISING,
    "concat": CONCAT,
    "nz-result": NZ_RESULT,
    "nz-input": NZ_INPUT,
    "nz-matrices": NZ_MATRICES,
}


@pytest.mark.parametrize("name", GROUPS)
@pytest.mark.parametrize("hw", ["tiny", "ascend910"])
def test_group_is_one_kernel(name, hw):
    text = GROUPS[name]
    computing = [n for n in kernels(text, f"ge-lower-to-npu{{hw={hw} merge=false}}") if "_output_" not in n]
    assert len(computing) == 1  # (an NZ result of @main is converted to ND by its own copy)
    assert_matches(text, pipeline=f"ge-lower-to-npu{{hw={hw}}}", hw=hw, atol=1e-3 if name == "reducing" else None)


GATHER = group(
    {"t": tensor([10, 16]), "i": tensor([8], "i32")},
    [tensor([8, 16])],
    """    %0 = ge.gather %t, %i : (tensor<10x16xf16>, tensor<8xi32>) -> tensor<8x16xf16>
    %1 = ge.relu %0 : (tensor<8x16xf16>) -> tensor<8x16xf16>
    fused.yield %1 : tensor<8x16xf16>""",
)

UNALIGNED_CONCAT = group(
    {"x": tensor([20, 12]), "y": tensor([20, 12])},
    [tensor([20, 24])],
    """    %0 = ge.exp %x : (tensor<20x12xf16>) -> tensor<20x12xf16>
    %1 = ge.concat %0, %y {axis = 1} : (tensor<20x12xf16>, tensor<20x12xf16>) -> tensor<20x24xf16>
    fused.yield %1 : tensor<20x24xf16>""",
)


@pytest.mark.parametrize("text", [GATHER, UNALIGNED_CONCAT], ids=["gather", "unaligned-concat"])
def test_unsupported_group_is_split(text):
    """fused-ungroup puts the ops back: one kernel each, same numbers."""
    import numpy as np

    assert len(kernels(text)) == 2
    inputs = None
    if text is GATHER:
        inputs = [np.random.default_rng(0).standard_normal((10, 16)).astype(np.float16), np.arange(8, dtype=np.int32)]
    assert_matches(text, inputs=inputs)


GRAPH = """func.func @main(%x: tensor<37x300xf16>, %b: tensor<300xf16>, %s: tensor<37x1xf16>) -> tensor<37x300xf16> {
  %0 = ge.add %x, %b : (tensor<37x300xf16>, tensor<300xf16>) -> tensor<37x300xf16>
  %1 = ge.gelu %0 : (tensor<37x300xf16>) -> tensor<37x300xf16>
  %2 = ge.mul %1, %s : (tensor<37x300xf16>, tensor<37x1xf16>) -> tensor<37x300xf16>
  %3 = ge.softmax %2 : (tensor<37x300xf16>) -> tensor<37x300xf16>
  %4 = ge.reduce_max %3 {axes = [1]} : (tensor<37x300xf16>) -> tensor<37x1xf16>
  %5 = ge.sub %3, %4 : (tensor<37x300xf16>, tensor<37x1xf16>) -> tensor<37x300xf16>
  func.return %5 : tensor<37x300xf16>
}"""


@pytest.mark.parametrize("fuse", ["true", "false"])
def test_auto_fused_graph(fuse):
    pipeline = f"ge-compile{{hw=tiny fuse={fuse}}}"
    assert len(kernels(GRAPH, pipeline)) == (1 if fuse == "true" else 6)
    assert_matches(GRAPH, pipeline=pipeline, atol=1e-3)


def test_cube_group_goes_to_the_cube_kernels():
    text = group(
        {"a": tensor([32, 16]), "w": tensor([16, 32])},
        [tensor([32, 32])],
        """    %0 = ge.matmul %a, %w : (tensor<32x16xf16>, tensor<16x32xf16>) -> tensor<32x32xf16>
    %1 = ge.relu %0 : (tensor<32x32xf16>) -> tensor<32x32xf16>
    fused.yield %1 : tensor<32x32xf16>""",
    )
    mismatch, _, _ = compile_and_compare(text)
    assert mismatch is None
