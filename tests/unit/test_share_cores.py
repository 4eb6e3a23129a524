"""fused-share-cores (lowering/fused_to_npu/share_cores.py): two independent
products next to each other are tiled for half the cores each and run side by
side in one phase of the merged kernel (npu-merge-launches), where the estimates
say so; the GM plan keeps the pair's buffers apart (plan/lifetimes.py, a launch's
`span`), so the pair's phase is race-free and the outputs equal the reference.
A product that reads the other's result is never paired."""

from __future__ import annotations

import pytest

from gecomp.core.passes import run_pipeline
from gecomp.core.signature import input_specs, main_function, random_inputs
from gecomp.dialects import npu
from gecomp.dialects.context import make_context
from gecomp.lowering.pipelines import CompilePipeline
from gecomp.lowering.plan.launches import SHARED_PHASE_ATTR, Launch
from gecomp.simulator.npu import simulate
from gecomp.simulator.reference import run_reference

from graph_testing import assert_close, parse


def towers(m: int, k: int, n: int, seed: int) -> str:
    """Two task towers (relu(x_t @ W_t + b_t) @ V_t, sigmoid), each reading its own
    input through a softmax computed before both (so the inputs live in the arena
    and die at the towers' first products), as MMoE's towers read their gates'
    mixes."""
    t = lambda *s: f"tensor<{'x'.join(map(str, s))}xf16>"  # noqa: E731
    lines = [f"%a{i} = ge.softmax %x{i} : ({t(m, k)}) -> {t(m, k)}" for i in range(2)]
    outs = []
    for i in range(2):
        lines += [
            f"%w{i} = ge.const #ge.random<normal, seed = {seed + i}, mean = 0.0, std = 0.06> : {t(k, n)}",
            f"%b{i} = ge.const #ge.random<normal, seed = {seed + 2 + i}, mean = 0.0, std = 0.01> : {t(n)}",
            f"%p{i} = ge.matmul %a{i}, %w{i} : ({t(m, k)}, {t(k, n)}) -> {t(m, n)}",
            f"%q{i} = ge.bias_add %p{i}, %b{i} : ({t(m, n)}, {t(n)}) -> {t(m, n)}",
            f"%h{i} = ge.relu %q{i} : ({t(m, n)}) -> {t(m, n)}",
            f"%v{i} = ge.const #ge.random<normal, seed = {seed + 4 + i}, mean = 0.0, std = 0.1> : {t(n, 1)}",
            f"%r{i} = ge.matmul %h{i}, %v{i} : ({t(m, n)}, {t(n, 1)}) -> {t(m, 1)}",
            f"%y{i} = ge.sigmoid %r{i} : ({t(m, 1)}) -> {t(m, 1)}",
        ]
        outs.append(f"%y{i}")
    args = ", ".join(f'%x{i}: {t(m, k)} {{ge.name = "x{i}"}}' for i in range(2))
    results = ", ".join(f'{t(m, 1)} {{ge.name = "y{i}"}}' for i in range(2))
    body = "\n    ".join(lines)
    return f"""builtin.module {{
  func.func @main({args}) -> ({results}) {{
    {body}
    func.return {", ".join(outs)} : {t(m, 1)}, {t(m, 1)}
  }}
}}"""


def compiled(text: str, **options):
    module = parse(text)
    run_pipeline(CompilePipeline(hw="ascend910", **options).stages(), make_context(), module)
    kernels = [op for op in module.walk() if isinstance(op, npu.KernelOp)]
    return module, [name for k in kernels for name in k.phase_names()]


@pytest.mark.parametrize("m,k,n,seed", [(256, 256, 128, 1), (128, 384, 128, 7), (256, 128, 256, 3)])
def test_independent_towers_share_a_phase(m, k, n, seed):
    text = towers(m, k, n, seed)
    module, phases = compiled(text)
    paired = [sorted(name.split("_", 1)[1] for name in p.split("+")) for p in phases if "+" in p]
    assert paired == [["h0_nz", "h1_nz"], ["y0", "y1"]], phases  # the first products side by side, and the last
    inputs = random_inputs(input_specs(main_function(module)), seed)
    result = simulate(module, inputs, "ascend910")  # race-checked
    for e, g in zip(run_reference(parse(text), inputs), result.outputs):
        assert_close(e, g)
    eager, _ = compiled(text, merge=False)  # no merged kernel: nothing to share
    assert not any(SHARED_PHASE_ATTR in op.attributes for op in eager.walk() if isinstance(op, npu.LaunchOp))


def test_the_gm_plan_keeps_the_pair_apart(monkeypatch):
    """Mutation: planned for host order alone (each launch's span its own index),
    the second tower's first product may take the bytes of the first tower's input,
    which dies at the first product: then the two touch common bytes and cannot
    share a phase. The span is what lets them."""
    text = towers(256, 256, 128, 1)
    monkeypatch.setattr(Launch, "span", property(lambda launch: (launch.index, launch.index)))
    _, phases = compiled(text)
    assert not any("h0_nz" in p and "h1_nz" in p for p in phases), phases
