"""Helpers for the execution-plan tests (memory reuse, streams): synthetic host
plans over GM buffers of many sizes, lowering a graph up to the plan, random
schedules of a lowered graph, and running the simulator's own plan checks."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from gecomp.dialects.context import make_context
from gecomp.core.parsing import parse_module, verify_module
from gecomp.core.passes import run_pipeline
from gecomp.lowering.pipelines import LowerToNpuPipeline
from gecomp.lowering.plan import stages_before_plan
from gecomp.lowering.plan.launches import HostPlanModel
from gecomp.lowering.plan.streams import apply_schedule
from gecomp.simulator.npu import simulate
from gecomp.simulator.reference import run_reference
from gecomp.core.signature import input_specs, main_function, random_inputs

SIZES = (16, 48, 256, 512, 1008, 4096)
"""Element counts (f16) of the synthetic buffers: below, at and above the 512-byte alignment."""


def gm(n: int) -> str:
    return f"memref<{n}xf16, #npu.space<gm>>"


@dataclass(frozen=True)
class SyntheticLaunch:
    reads: tuple[int, ...]  # value indices
    writes: int  # value index
    stream: int


@dataclass(frozen=True)
class SyntheticPlan:
    """Values 0..inputs-1 are @main inputs; every launch reads some values and writes
    one (a new intermediate, an output, or an intermediate again)."""

    inputs: int
    sizes: tuple[int, ...]  # per value
    outputs: frozenset[int]
    launches: tuple[SyntheticLaunch, ...]

    def text(self) -> str:
        kernels, body = [], []
        names = [f"%v{i}" for i in range(len(self.sizes))]
        for n, launch in enumerate(self.launches):
            params = [*launch.reads, launch.writes]
            kernels.append(_touch_kernel(f"t{n}", [self.sizes[p] for p in params], len(launch.reads)))
            args = ", ".join(names[p] for p in params)
            body.append(f"    npu.launch @t{n}({args}) {{stream = {launch.stream}}}")
        args = [i for i in range(len(self.sizes)) if i < self.inputs or i in self.outputs]
        params = ", ".join(
            f'{names[i]}: {gm(self.sizes[i])} {{ge.name = "v{i}"{", npu.output" if i in self.outputs else ""}}}'
            for i in args
        )
        buffers = [f"    {names[i]} = npu.gm_buffer : {gm(self.sizes[i])}" for i in range(len(self.sizes)) if i not in args]
        main = "\n".join([f"  func.func @main({params}) {{", *buffers, *body, "    func.return", "  }"])
        return "builtin.module {\n" + "\n".join(kernels) + "\n" + main + "\n}\n"


def _touch_kernel(name: str, sizes: list[int], reads: int) -> str:
    """Reads 16 elements of each of its first `reads` parameters, writes 16 of the
    last, then reads the first again (so it cannot run in place: placement alone)."""
    params = ", ".join(f"%p{i}: {gm(n)}" for i, n in enumerate(sizes))
    loads = "\n".join(f"    npu.copy %p{i}[%c0], %u[%c0] {{cols = 16}}" for i in range(reads))
    return f"""  npu.kernel @{name}({params}) attributes {{block_dim = 1}} {{
    %c0 = arith.constant 0 : index
    %u = npu.alloc {{offset = 0}} : memref<16xf16, #npu.space<ub>>
{loads}
    npu.pipe_barrier {{pipe = "ALL"}}
    npu.copy %u[%c0], %p{reads}[%c0] {{cols = 16}}
    npu.pipe_barrier {{pipe = "ALL"}}
    npu.copy %p0[%c0], %u[%c0] {{cols = 16}}
  }}"""


@st.composite
def synthetic_plans(draw, max_launches: int = 10, max_streams: int = 3) -> SyntheticPlan:
    """Random DAGs of launches over buffers of random sizes, on random streams."""
    inputs = draw(st.integers(1, 3))
    sizes = [draw(st.sampled_from(SIZES)) for _ in range(inputs)]
    written: list[int] = []
    launches = []
    for _ in range(draw(st.integers(1, max_launches))):
        pool = list(range(inputs)) + written
        reads = tuple(dict.fromkeys(draw(st.lists(st.sampled_from(pool), min_size=1, max_size=3))))
        if written and draw(st.integers(0, 5)) == 0:
            target = draw(st.sampled_from(written))  # write an intermediate again
        else:
            target = len(sizes)
            sizes.append(draw(st.sampled_from(SIZES)))
            written.append(target)
        launches.append(SyntheticLaunch(reads, target, draw(st.integers(0, max_streams - 1))))
    outputs = frozenset(draw(st.sets(st.sampled_from(written), max_size=2)))
    return SyntheticPlan(inputs, tuple(sizes), outputs, tuple(launches))


def parse(text: str):
    module = parse_module(make_context(), text, "plan.mlir")
    verify_module(module)
    return module


def run_simulation(module, hw: str = "tiny", seed: int = 0):
    """Simulate `module` (its plan checks run first) on random inputs."""
    specs = input_specs(main_function(module))
    return simulate(module, random_inputs(specs, seed), hw)


# ---- real graphs ----------------------------------------------------------------------


def lower_without_plan(module, hw: str = "tiny", pipeline=None) -> None:
    """Every stage of ge-lower-to-npu (or `pipeline`) before the execution plan."""
    run_pipeline(stages_before_plan(pipeline or LowerToNpuPipeline(hw=hw)), make_context(), module)


def random_schedule(module, rng: np.random.Generator, streams: int) -> None:
    """Random streams and a random topological host order, then the events they need."""
    plan = HostPlanModel(module)
    preds = plan.dependencies()
    n = len(plan.launches)
    remaining = [set(p) for p in preds]
    order: list[int] = []
    while len(order) < n:
        ready = [j for j in range(n) if j not in order and not remaining[j]]
        j = int(rng.choice(ready))
        order.append(j)
        for r in remaining:
            r.discard(j)
    apply_schedule(plan, order, [int(rng.integers(0, streams)) for _ in range(n)])


def reference_outputs(module, inputs) -> list[np.ndarray]:
    return [np.asarray(o) for o in run_reference(module, inputs)]
