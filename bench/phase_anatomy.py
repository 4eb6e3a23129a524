"""Where each phase's cycles go: fill, work, drain, spread, barrier.

    python bench/phase_anatomy.py                                   # the BERT layer, ascend910
    python bench/phase_anatomy.py examples/llama_layer.mlir
    python bench/phase_anatomy.py --pipeline 'ge-compile{merge=false}'
    python bench/phase_anatomy.py efficientnet_b0.torchscript --by-source   # a model of the set

A name of the model set (bench/models.py's rows, e.g. `efficientnet_b0.torchscript`)
is imported as bench/models.py imports it, with its inputs. `--by-source` adds a
table of the columns summed over the phases of each source op type (the kernel's
`npu.sources`: e.g. every squeeze-and-excitation group of a network in one row),
to see whether a kind of phase costs its work or its being a phase.

The module is compiled and simulated once, traced; each phase of a merged kernel
(each kernel otherwise) is split into what its typical block does (the median
block: its first cube or vector instruction, its last compute or store, its
arrival at the next barrier) and what the slowest block and the barrier add
(`simulator/npu/anatomy.py`):

    fill     from the phase's start to the first compute: operands loaded after the barrier
    work     from the first compute to the last compute or output store
    drain    from there to the block's arrival at the barrier: the last stores landing
    spread   the last block's arrival after the typical one's
    barrier  from the last arrival to the phase's end: the flag round trip

The columns add up to the phase's cycles. Everything but "work" is time a phase
pays for being a phase: what overlapping it with its neighbours could win.
"pipe bound" is the most one pipe of one block works in the phase (and which
pipe): the phase cannot take less; "over it" is the rest, the time its pipes
wait on each other and on latencies rather than work.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import defaultdict

from what_if import compile_module

from gecomp.core.diagnostics import CompileError
from gecomp.dialects import npu
from gecomp.simulator.hardware import load_preset
from gecomp.simulator.npu import simulate
from gecomp.simulator.npu.anatomy import phase_anatomy

COLUMNS = ("fill", "work", "drain", "spread", "barrier")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", nargs="?", default="examples/bert_layer.mlir")
    parser.add_argument("--hw", default="ascend910")
    parser.add_argument("--pipeline", default="ge-compile")
    parser.add_argument("--by-source", action="store_true", help="also sum the columns per source op type")
    args = parser.parse_args(argv)
    try:
        preset = load_preset(args.hw)
        module, inputs = _compile(args.file, args.pipeline)
    except CompileError as e:
        print(e.format(), file=sys.stderr)
        sys.exit(1)
    report = simulate(module, inputs, hw=preset, trace=True, check_races=False).report
    phases = phase_anatomy(report)
    width = max([len("phase"), *(len(p.name) for p in phases)])
    print(f"{args.file} compiled with {args.pipeline} for {preset.name}: cycles per phase (typical block)")
    print(f"{'phase':<{width}}{'cycles':>8}" + "".join(f"{c:>9}" for c in COLUMNS)
          + f"{'not work':>10}{'MTE2 busy':>11}{'pipe bound':>16}{'over it':>9}")
    for p in phases:
        cells = "".join(f"{getattr(p, c):>9}" for c in COLUMNS)
        share = p.around_work / p.cycles if p.cycles else 0
        bound = f"{p.pipe_bound} {p.bound_pipe}"
        print(f"{p.name:<{width}}{p.cycles:>8}{cells}{share:>10.0%}{p.mte2_busy:>11.0%}{bound:>16}{p.cycles - p.pipe_bound:>9}")
    total = sum(p.cycles for p in phases)
    sums = "".join(f"{sum(getattr(p, c) for p in phases):>9}" for c in COLUMNS)
    around = sum(p.around_work for p in phases)
    bounds = sum(p.pipe_bound for p in phases)
    print(f"{'phases':<{width}}{total:>8}{sums}{around / total if total else 0:>10.0%}{'':>11}{bounds:>16}{total - bounds:>9}")
    kernels = sum(k.cycles for k in report.kernels)
    print(
        f"module: {report.total_cycles} cycles, its kernels {kernels} (the first starts at "
        f"{min((k.start for k in report.kernels), default=0)}); a phase starts when its first block is released "
        f"and ends when its last one is, so merged phases may overlap by a few hundred cycles"
    )
    if args.by_source:
        _print_by_source(phases, _phase_sources(module), width)


def _compile(file: str, pipeline: str):
    """(the compiled module, its inputs): a file, or a model of the set by name."""
    if os.path.exists(file) or file == "-":
        return compile_module(file, pipeline)
    from gecomp.bench import models
    from gecomp.bench.models import run
    from gecomp.core.passes import parse_pass_pipeline, run_pipeline
    from gecomp.dialects.context import make_context

    if file not in models.names():
        raise CompileError(f"'{file}' is neither a file nor a model of bench/models.py")
    module = run.import_proto(models.load(file))
    run_pipeline(parse_pass_pipeline(pipeline), make_context(), module)
    return module, models.inputs(file)


def _phase_sources(module) -> dict[str, str]:
    """Each phase name's source op type, from the kernels' `npu.sources`."""
    found: dict[str, str] = {}
    for kernel in module.walk():
        if isinstance(kernel, npu.KernelOp):
            found.update(zip(kernel.phase_names(), kernel.sources()))
    return found


def _print_by_source(phases, sources: dict[str, str], width: int) -> None:
    """The columns summed per source op type, the costliest first."""
    rows: dict[str, list] = defaultdict(list)
    for p in phases:
        rows[sources.get(p.name, "?")].append(p)
    print()
    print(f"{'source':<{width}}{'phases':>8}{'cycles':>8}" + "".join(f"{c:>9}" for c in COLUMNS) + f"{'not work':>10}")
    for source, group in sorted(rows.items(), key=lambda kv: -sum(p.cycles for p in kv[1])):
        total = sum(p.cycles for p in group)
        cells = "".join(f"{sum(getattr(p, c) for p in group):>9}" for c in COLUMNS)
        around = sum(p.around_work for p in group)
        print(f"{source:<{width}}{len(group):>8}{total:>8}{cells}{around / total if total else 0:>10.0%}")


if __name__ == "__main__":
    main()
