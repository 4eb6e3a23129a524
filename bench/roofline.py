"""Simulated cycles against the roofline, per case, on a hardware preset.

    python bench/roofline.py                      # every case, ascend910
    python bench/roofline.py --only matmul        # cases whose name contains it
    python bench/roofline.py --check              # also compare the numbers with the reference
    python bench/roofline.py --pipeline 'ge-compile{fuse=false}'
    python bench/roofline.py --only BERT --pipeline 'ge-compile{tune=4}'   # tilings tuned by simulation (~45 s)
    python bench/roofline.py --precision force_fp16   # each case as an f32 export, compiled in that mode

`--precision MODE` turns every case into the f32 model a framework would export
(each f16 type f32) and compiles it with `precision=MODE` (ATC's precision modes,
docs/compiling.md); the roofline is then the compiled module's own
(`roofline_cycles` of ge-sim's report: its kernels' work at the precision they
compute in), since the cases' closed forms assume fp16.

For a case the roofline is a lower bound on its time: for a matrix product
max(flops / cube peak, compulsory GM bytes / HBM bandwidth), the compulsory
bytes being every input and output once (A + B + C). "simulated" is the whole
module's time as `ge-sim` reports it (kernel launches included), "kernels" the
sum of its launches' own durations; achieved = roofline / simulated.

"ports" is a second lower bound, from each core's own GM ports rather than the
shared HBM: per launch, the busiest block's GM bytes per pipe at the per-core
bandwidth of their paths (`port_cycles` in simulator/npu/report.py), summed over
the launches. It exceeds the roofline where every core must re-read an operand
(a matrix product with few rows reads all of A on every core); "of bound" =
max(roofline, ports) / simulated says how close the kernels come to what their
own data movement allows.

Cases are entries of CASES: a name, the ge module (text), and the roofline (a
function of the preset and the simulation report, so a case may bound itself
by what its kernels did, e.g. a sum of per-kernel rooflines). Add rows there.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from gecomp.dialects.context import make_context
from gecomp.core.diagnostics import CompileError
from gecomp.core.dtypes import tensor_bytes
from gecomp.core.parsing import parse_module
from gecomp.core.passes import parse_pass_pipeline, run_pipeline
from gecomp.simulator.compare import compiled_floor, worst_mismatch
from gecomp.simulator.hardware import HardwarePreset, load_preset
from gecomp.simulator.npu import simulate
from gecomp.dialects import npu
from gecomp.simulator.npu.program import STAT_INDEX
from gecomp.simulator.npu.report import SimulationReport, roofline_terms
from gecomp.simulator.reference import run_reference
from gecomp.core.signature import input_specs, main_function, output_specs, random_inputs

Roofline = Callable[[HardwarePreset, SimulationReport, ModuleOp], float]


@dataclass(frozen=True)
class Case:
    name: str
    module: Callable[[], str]
    roofline: Roofline
    note: str = ""


def tensor(shape, dtype: str = "f16") -> str:
    return f"tensor<{'x'.join(map(str, shape))}x{dtype}>"


# ---- matrix products -------------------------------------------------------------------------


def matmul_roofline(m: int, n: int, k: int, batch: int = 1, in_bytes: int = 2) -> Roofline:
    """max(2 m n k / the cube's peak flops per cycle, (A + B + C) bytes / HBM bytes per cycle)."""

    def bound(hw: HardwarePreset, report: SimulationReport, module: ModuleOp) -> float:
        flops = 2 * batch * m * n * k
        compulsory = batch * (m * k + k * n + m * n) * in_bytes
        return max(flops / hw.peak_fp16_flops_per_cycle, compulsory / hw.hbm_bytes_per_cycle)

    return bound


def matmul_module(m: int, n: int, k: int, weights: bool) -> Callable[[], str]:
    """C = A @ B with A an input; B an input too, or a weight (a constant, which the
    layout pass stores in FRACTAL_NZ at compile time)."""

    def text() -> str:
        a, b, c = tensor((m, k)), tensor((k, n)), tensor((m, n))
        if weights:
            return f"""func.func @main(%a: {a} {{ge.name = "a"}}) -> ({c} {{ge.name = "c"}}) {{
  %b = ge.const #ge.random<normal, seed = 2, mean = 0.0, std = 0.02> : {b}
  %c = ge.matmul %a, %b : ({a}, {b}) -> {c}
  func.return %c : {c}
}}"""
        return f"""func.func @main(%a: {a} {{ge.name = "a"}}, %b: {b} {{ge.name = "b"}}) -> ({c} {{ge.name = "c"}}) {{
  %c = ge.matmul %a, %b : ({a}, {b}) -> {c}
  func.return %c : {c}
}}"""

    return text


# ---- bandwidth-bound kernels and whole models -------------------------------------------------

EXAMPLES_DIR = Path(__file__).resolve().parents[1] / "examples"


def add_module(n: int) -> str:
    t = tensor((n,))
    return f"""func.func @main(%x: {t} {{ge.name = "x"}}, %y: {t} {{ge.name = "y"}}) -> ({t} {{ge.name = "z"}}) {{
  %z = ge.add %x, %y : ({t}, {t}) -> {t}
  func.return %z : {t}
}}"""


def bandwidth_roofline(nbytes: int) -> Roofline:
    """The bytes every input and output cross the HBM once, at its bandwidth."""
    return lambda hw, report, module: nbytes / hw.hbm_bytes_per_cycle


def module_roofline(hw: HardwarePreset, report: SimulationReport, module: ModuleOp) -> float:
    """The module's own bound as ge-sim reports it (`roofline_cycles`: its kernels'
    compute and the GM bytes they move), so a kernel that only moves data (a
    copy, a format change) raises it, and removing one lowers it."""
    return report.roofline_cycles


def sum_of_kernel_rooflines(hw: HardwarePreset, report: SimulationReport, module: ModuleOp) -> float:
    """Each launch as if alone on the chip: max(its cube work, its vector work, its
    GM arguments read or written once / HBM bandwidth); the kernels' sum bounds a
    model that runs them one after the other (streams may beat it by overlapping)."""
    argument_bytes = {}
    for launch in module.walk():
        if isinstance(launch, npu.LaunchOp):
            argument_bytes[launch.callee.string_value()] = sum(
                tensor_bytes(a.type) for a in set(launch.args)
            )
    total = 0.0
    for k in report.kernels:
        stats = k.stats
        terms = roofline_terms(hw, stats[STAT_INDEX["cube_min"]], stats[STAT_INDEX["vector_min"]], argument_bytes[k.name])
        total += float(terms["roofline_cycles"])
    return total


def sum_of_separate_kernel_rooflines(text: Callable[[], str]) -> Roofline:
    """`sum_of_kernel_rooflines` of the kernels as lowered, each launched on its own
    (`ge-compile{merge=false}`): merged into the phases of one kernel, their bound
    stays the sum of each phase's, which one max(...) over the merged kernel would
    understate."""

    def bound(hw: HardwarePreset, report: SimulationReport, module: ModuleOp) -> float:
        ctx = make_context()
        separate = parse_module(ctx, text(), "separate")
        inputs = random_inputs(input_specs(main_function(separate)), 0)
        run_pipeline(parse_pass_pipeline(f"ge-compile{{hw={hw.name} merge=false}}"), ctx, separate)
        return sum_of_kernel_rooflines(hw, simulate(separate, inputs, hw=hw.name).report, separate)

    return bound


EXAMPLE_SEQUENCE = 128
"""The sequence length of examples/bert_layer.mlir: the only dimension of 128 in
its tensor types (hidden 768, 12 heads of 64, FFN 3072)."""


def bert_layer(sequence: int = EXAMPLE_SEQUENCE) -> Callable[[], str]:
    """examples/bert_layer.mlir with another sequence length: every dimension of
    128 in a tensor type (`tensor<128x...`, `...x128x...`) becomes `sequence`."""

    def text() -> str:
        example = EXAMPLES_DIR.joinpath("bert_layer.mlir").read_text()
        assert f"sequence {EXAMPLE_SEQUENCE}," in example, "bert_layer.mlir's sequence length changed"
        return re.sub(rf"(?<=[<x]){EXAMPLE_SEQUENCE}(?=x)", str(sequence), example)

    return text


CASES: list[Case] = [
    Case("matmul 2048^3 fp16, weights", matmul_module(2048, 2048, 2048, True), matmul_roofline(2048, 2048, 2048),
         "A an input (ND), B a constant (FRACTAL_NZ)"),
    Case("matmul 2048^3 fp16, two inputs", matmul_module(2048, 2048, 2048, False), matmul_roofline(2048, 2048, 2048),
         "A and B inputs (ND)"),
    Case("matmul 1024x4096x1024 fp16, weights", matmul_module(1024, 1024, 4096, True), matmul_roofline(1024, 1024, 4096)),
    Case("add 16M fp16", lambda: add_module(1 << 24), bandwidth_roofline(3 * (1 << 24) * 2),
         "x + y: two reads and a write of 32 MiB"),
    Case("BERT layer, fused", bert_layer(), sum_of_separate_kernel_rooflines(bert_layer()),
         "roofline = the sum of its kernels' rooflines"),
    *(
        Case(f"BERT layer seq {n}, fused", bert_layer(n), sum_of_separate_kernel_rooflines(bert_layer(n)),
             "the example at another sequence length")
        for n in (384, 512)
    ),
    Case("MMoE, fused", lambda: EXAMPLES_DIR.joinpath("mmoe.mlir").read_text(), module_roofline,
         "roofline = the module's as compiled (issue 29's MMoE metric)"),
]


# ---- running ---------------------------------------------------------------------------------


@dataclass
class Row:
    case: Case
    simulated: int
    kernels: int
    roofline: float
    ports: float
    compile_s: float
    simulate_s: float
    check: str

    @property
    def achieved(self) -> float:
        return self.roofline / self.simulated if self.simulated else 0.0

    @property
    def of_bound(self) -> float:
        return max(self.roofline, self.ports) / self.simulated if self.simulated else 0.0


def as_f32(text: str) -> str:
    """The case as an f32 export: every f16 element type f32."""
    return re.sub(r"(?<=[<x])f16>", "f32>", text)


def run_case(case: Case, hw: str, pipeline: str, check: bool, seed: int = 0, precision: str | None = None) -> Row:
    ctx = make_context()
    module = parse_module(ctx, as_f32(case.module()) if precision else case.module(), case.name)
    main = main_function(module)
    inputs = random_inputs(input_specs(main), seed)
    source = module.clone()
    expected = run_reference(module.clone(), inputs) if check else None
    names = [s.name for s in output_specs(main)]
    start = time.perf_counter()
    run_pipeline(parse_pass_pipeline(pipeline, {"precision": precision} if precision else None), ctx, module)
    compiled = time.perf_counter()
    simulation = simulate(module, inputs, hw=hw, check_races=check)
    simulated = time.perf_counter()
    report = simulation.report
    verdict = ""
    if expected is not None:
        floor = compiled_floor(source, module)
        worst = [worst_mismatch(n, np.asarray(e), np.asarray(g), floor) for n, e, g in zip(names, expected, simulation.outputs)]
        bad = [w for w in worst if w is not None and w.ratio > 1.0]
        verdict = "ok" if not bad else f"MISMATCH {bad[0]}"
    return Row(
        case,
        report.total_cycles,
        sum(k.cycles for k in report.kernels),
        report.roofline_cycles if precision else case.roofline(load_preset(hw), report, module),
        sum(k.port_cycles for k in report.kernels),
        compiled - start,
        simulated - compiled,
        verdict,
    )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hw", default="ascend910")
    parser.add_argument("--only", default="", help="run the cases whose name contains this")
    parser.add_argument("--pipeline", default="ge-compile")
    parser.add_argument("--check", action="store_true", help="compare with the reference and check races")
    parser.add_argument("--precision", metavar="MODE", help="compile each case as an f32 export in this precision mode")
    args = parser.parse_args(argv)
    try:  # a bad preset, pipeline or mode is a one-line error before any case runs
        load_preset(args.hw)
        parse_pass_pipeline(args.pipeline, {"precision": args.precision} if args.precision else None)
    except CompileError as e:
        print(e.format(), file=sys.stderr)
        sys.exit(1)
    header = (
        f"{'case':<40}{'simulated':>11}{'kernels':>10}{'roofline':>10}{'achieved':>10}{'ports':>8}{'of bound':>10}"
        f"{'compile s':>11}{'sim s':>8}"
    )
    print(f"preset {args.hw}, pipeline {args.pipeline}" + (f", f32 cases, precision {args.precision}" if args.precision else ""))
    print(header)
    for case in CASES:
        if args.only not in case.name:
            continue
        row = run_case(case, args.hw, args.pipeline, args.check, precision=args.precision)
        print(
            f"{case.name:<40}{row.simulated:>11}{row.kernels:>10}{row.roofline:>10.0f}{100 * row.achieved:>9.1f}%"
            f"{row.ports:>8.0f}{100 * row.of_bound:>9.1f}%"
            f"{row.compile_s:>11.2f}{row.simulate_s:>8.2f}  {row.check}{'  ' + case.note if case.note else ''}",
            flush=True,
        )


if __name__ == "__main__":
    main()
