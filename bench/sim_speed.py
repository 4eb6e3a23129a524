"""Speed of the NPU simulator: simulated instructions per second, timing, race
checking and numerics together, on kernels of many small tiles, and on models.

    python bench/sim_speed.py                          # the table
    python bench/sim_speed.py --profile                # plus where the time goes (cProfile: the
                                                       # blocks run as greenlets of this thread, so
                                                       # every block's work is in the profile)
    python bench/sim_speed.py --models                 # plus every model of the set (compiles each: slow)
    python bench/sim_speed.py --models zoo.resnet50    # plus the models named
    python bench/sim_speed.py --mlir compiled.mlir     # plus npu-level modules already compiled
    python bench/sim_speed.py --approx --mlir a.mlir   # plus the approximate simulation's columns
    python bench/sim_speed.py --approx --no-cases --mlir a.mlir --base /tmp/x/old --repeat 3
                                                       # plus an older tree's approximate simulation

Every row simulates twice: the full simulation (`shortcuts=False`, `ge-sim
--exact`; "full s") and the default one ("s", "cpu s": wall and CPU seconds of
the process). "instr/s" and "instr/cpu s" are instructions per wall and per CPU second, "speedup" is full s / s, "same" whether cycles, report and outputs
(bitwise) are identical, "RSS MiB" the process's peak resident memory so far.

Each row runs one generated npu module through `simulate()` (after parsing,
which is not timed) and checks its outputs against numpy. "instructions" counts
the npu instructions the cores executed (copies, loads, mmad, vector ops,
set/wait flags, barriers); the scalar unit's arith / scf work is simulated too
but not counted. The target of issue 5 is 20,000 instructions/s.

With `--approx` each row also runs the approximate simulation (`simulate(...,
approx=True)`, `ge-sim --approx`: outputs exact, cycles from a few timed blocks
per launch) and adds: "approx cpu s", "approx instr/cpu s" (the instructions the
simulation executes, which the approximate one counts exactly, per CPU second:
instructions per second equivalent), "x default" (default CPU s / approximate
CPU s) and "cycle err%" (approximate cycles / simulated cycles - 1); a row whose
outputs or instruction count differ says "OUTPUTS DIFFER".

`--base DIR` (with `--approx`, `--mlir` rows) also runs the approximate
simulation of an older tree (DIR holds its `gecomp` package, e.g. a `git worktree`
at DIR/gecomp) in a subprocess on the same file and inputs, and adds its CPU
seconds ("base cpu s", the simulation alone), "x base" (base / this tree's
approximate CPU s) and "base err%" (its cycle error against this tree's default
simulation): old and new measured in one run, alternating. `--repeat N`
takes the least of N runs for both approximate columns.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import resource
import time

import numpy as np

from gecomp.dialects.context import make_context
from gecomp.core.parsing import parse_module, verify_module
from gecomp.simulator.npu import simulate
from gecomp.core.signature import input_specs, main_function, random_inputs

GM = "#npu.space<gm>"
UB = "#npu.space<ub>"


def vector_module(tile: int, tiles: int, blocks: int) -> str:
    """z = (x + y) * 0.5, double-buffered (ping-pong unrolled by two), `tiles` tiles
    of `tile` fp16 elements per block."""
    n = tile * tiles * blocks
    t = f"memref<{n}xf16, {GM}>"
    buf = f"memref<{tile}xf16, {UB}>"
    size = tile * 2

    def stage(p: int, index: str) -> str:
        return f"""
        %o{p} = arith.addi %base, {index} : index
        npu.wait_flag {{src = "V", dst = "MTE2", event = {p}}}
        npu.copy %x[%o{p}], %x{p}[%c0] {{cols = {tile}}}
        npu.copy %y[%o{p}], %y{p}[%c0] {{cols = {tile}}}
        npu.set_flag {{src = "MTE2", dst = "V", event = {p}}}
        npu.wait_flag {{src = "MTE2", dst = "V", event = {p}}}
        npu.wait_flag {{src = "MTE3", dst = "V", event = {p}}}
        npu.vadd %x{p}[%c0], %y{p}[%c0], %z{p}[%c0] {{cols = {tile}}}
        npu.vmuls %z{p}[%c0], %z{p}[%c0] {{cols = {tile}, scalar = 0.5}}
        npu.set_flag {{src = "V", dst = "MTE2", event = {p}}}
        npu.set_flag {{src = "V", dst = "MTE3", event = {p}}}
        npu.wait_flag {{src = "V", dst = "MTE3", event = {p}}}
        npu.copy %z{p}[%c0], %z[%o{p}] {{cols = {tile}}}
        npu.set_flag {{src = "MTE3", dst = "V", event = {p}}}"""

    flags = "".join(
        f'\n    npu.{op}_flag {{src = "{s}", dst = "{d}", event = {p}}}'
        for op in ("set",)
        for s, d in (("V", "MTE2"), ("MTE3", "V"))
        for p in (0, 1)
    )
    tail = flags.replace("set_flag", "wait_flag")
    return f"""
npu.kernel @vec(%x: {t}, %y: {t}, %z: {t}) attributes {{block_dim = {blocks}}} {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %tile = arith.constant {tile} : index
    %pairs = arith.constant {tiles // 2} : index
    %per_block = arith.constant {tile * tiles} : index
    %b = npu.block_idx : index
    %start = arith.muli %b, %per_block : index
    %x0 = npu.alloc {{offset = 0}} : {buf}
    %x1 = npu.alloc {{offset = {size}}} : {buf}
    %y0 = npu.alloc {{offset = {2 * size}}} : {buf}
    %y1 = npu.alloc {{offset = {3 * size}}} : {buf}
    %z0 = npu.alloc {{offset = {4 * size}}} : {buf}
    %z1 = npu.alloc {{offset = {5 * size}}} : {buf}{flags}
    scf.for %i = %c0 to %pairs step %c1 {{
        %two_tiles = arith.muli %tile, %c2 : index
        %t0 = arith.muli %i, %two_tiles : index
        %base = arith.addi %start, %t0 : index
        %second = arith.addi %c0, %tile : index{stage(0, "%c0")}{stage(1, "%second")}
    }}{tail}
}}
func.func @main(%x: {t} {{ge.name = "x"}}, %y: {t} {{ge.name = "y"}}, %z: {t} {{ge.name = "z", npu.output}}) {{
    npu.launch @vec(%x, %y, %z)
    func.return
}}
"""


def matmul_module(m: int, n: int, k: int, tile: int, blocks: int) -> str:
    """C = A @ B (fp16 in, fp32 out), (tile x tile) output tiles split over blocks by
    rows, a k loop of (tile x tile) steps: gm -> l1 -> l0a/l0b -> mmad -> fixpipe."""
    ta, tb, tc = (f"memref<{r * c}x{e}, {GM}>" for r, c, e in ((m, k, "f16"), (k, n, "f16"), (m, n, "f32")))
    l1 = f"memref<{tile * tile}xf16, #npu.space<l1>>"
    elems = tile * tile
    rows_per_block = m // blocks
    return f"""
npu.kernel @mm(%a: {ta}, %b: {tb}, %c: {tc}) attributes {{block_dim = {blocks}}} {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %t = arith.constant {tile} : index
    %mt = arith.constant {rows_per_block // tile} : index
    %nt = arith.constant {n // tile} : index
    %kt = arith.constant {k // tile} : index
    %lda = arith.constant {k} : index
    %ldb = arith.constant {n} : index
    %rows = arith.constant {rows_per_block} : index
    %blk = npu.block_idx : index
    %row0 = arith.muli %blk, %rows : index
    %a1 = npu.alloc {{offset = 0}} : {l1}
    %b1 = npu.alloc {{offset = {elems * 2}}} : {l1}
    %a0 = npu.alloc {{offset = 0}} : memref<{elems}xf16, #npu.space<l0a>>
    %b0 = npu.alloc {{offset = 0}} : memref<{elems}xf16, #npu.space<l0b>>
    %acc = npu.alloc {{offset = 0}} : memref<{elems}xf32, #npu.space<l0c>>
    npu.set_flag {{src = "MTE1", dst = "MTE2", event = 0}}
    npu.set_flag {{src = "M", dst = "MTE1", event = 0}}
    npu.set_flag {{src = "FIX", dst = "M", event = 0}}
    scf.for %i = %c0 to %mt step %c1 {{
      scf.for %j = %c0 to %nt step %c1 {{
        %ri = arith.muli %i, %t : index
        %r = arith.addi %row0, %ri : index
        %cj = arith.muli %j, %t : index
        %arow = arith.muli %r, %lda : index
        npu.wait_flag {{src = "FIX", dst = "M", event = 0}}
        scf.for %kk = %c0 to %kt step %c1 {{
          %ck = arith.muli %kk, %t : index
          %ao = arith.addi %arow, %ck : index
          %brow = arith.muli %ck, %ldb : index
          %bo = arith.addi %brow, %cj : index
          npu.wait_flag {{src = "MTE1", dst = "MTE2", event = 0}}
          npu.copy %a[%ao], %a1[%c0] {{rows = {tile}, cols = {tile}, strides = [{k}, {tile}]}}
          npu.copy %b[%bo], %b1[%c0] {{rows = {tile}, cols = {tile}, strides = [{n}, {tile}]}}
          npu.set_flag {{src = "MTE2", dst = "MTE1", event = 0}}
          npu.wait_flag {{src = "MTE2", dst = "MTE1", event = 0}}
          npu.wait_flag {{src = "M", dst = "MTE1", event = 0}}
          npu.load_l0 %a1[%c0], %a0[%c0] {{rows = {tile}, cols = {tile}}}
          npu.load_l0 %b1[%c0], %b0[%c0] {{rows = {tile}, cols = {tile}}}
          npu.set_flag {{src = "MTE1", dst = "MTE2", event = 0}}
          npu.set_flag {{src = "MTE1", dst = "M", event = 0}}
          npu.wait_flag {{src = "MTE1", dst = "M", event = 0}}
          %first = arith.cmpi eq, %kk, %c0 : index
          scf.if %first {{
            npu.mmad %a0[%c0], %b0[%c0], %acc[%c0] {{m = {tile}, n = {tile}, k = {tile}}}
          }} else {{
            npu.mmad %a0[%c0], %b0[%c0], %acc[%c0] {{m = {tile}, n = {tile}, k = {tile}, accumulate = true}}
          }}
          npu.set_flag {{src = "M", dst = "MTE1", event = 0}}
        }}
        npu.set_flag {{src = "M", dst = "FIX", event = 0}}
        npu.wait_flag {{src = "M", dst = "FIX", event = 0}}
        %crow = arith.muli %r, %ldb : index
        %co = arith.addi %crow, %cj : index
        npu.fixpipe %acc[%c0], %c[%co] {{rows = {tile}, cols = {tile}, strides = [{tile}, {n}]}}
        npu.set_flag {{src = "FIX", dst = "M", event = 0}}
      }}
    }}
    npu.wait_flag {{src = "MTE1", dst = "MTE2", event = 0}}
    npu.wait_flag {{src = "M", dst = "MTE1", event = 0}}
    npu.wait_flag {{src = "FIX", dst = "M", event = 0}}
}}
func.func @main(%a: {ta} {{ge.name = "a"}}, %b: {tb} {{ge.name = "b"}}, %c: {tc} {{ge.name = "c", npu.output}}) {{
    npu.launch @mm(%a, %b, %c)
    func.return
}}
"""


def expected_vector(inputs):
    x, y = (v.astype(np.float32) for v in inputs)
    return [((x + y).astype(np.float16).astype(np.float32) * 0.5).astype(np.float16)]


def expected_matmul(shape):
    m, n, k = shape

    def expect(inputs):
        a, b = (v.astype(np.float32).reshape(r, c) for v, (r, c) in zip(inputs, ((m, k), (k, n))))
        return [(a @ b).reshape(-1)]

    return expect


CASES = [
    ("vector add, 128-element tiles", lambda: vector_module(128, 512, 4), "tiny", expected_vector),
    ("vector add, 2048-element tiles", lambda: vector_module(2048, 64, 8), "ascend910", expected_vector),
    ("matmul 256^3, 32x32x32 tiles", lambda: matmul_module(256, 256, 256, 32, 2), "tiny", expected_matmul((256, 256, 256))),
]


def run_case(text: str, hw: str, expect, check_races: bool = True, trace: bool = False, shortcuts: bool = True,
             approx: bool = False):
    module = parse_module(make_context(), text, "<bench>")
    verify_module(module)
    inputs = random_inputs(input_specs(main_function(module)), seed=0)
    result, wall, _ = timed_simulation(module, inputs, hw, check_races=check_races, trace=trace, shortcuts=shortcuts,
                                       approx=approx)
    for got, want in zip(result.outputs, expect(inputs)):
        np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2e-2, atol=2e-2)
    return result, wall


def timed_simulation(module, inputs, hw: str, **options):
    """(Simulation, wall seconds, CPU seconds of the process: all its threads).
    On a machine shared with other work the CPU seconds are the steadier figure."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = simulate(module, inputs, hw=hw, **options)
    return result, time.perf_counter() - wall, time.process_time() - cpu


def peak_rss_mib() -> float:
    """Peak resident memory of this process so far (ru_maxrss is KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def identical(a, b) -> bool:
    """Same cycles, same report, bitwise the same outputs."""
    return a.report.json_text() == b.report.json_text() and all(
        x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes() for x, y in zip(a.outputs, b.outputs)
    )


HEADER = (
    f"{'kernel / model':<44}{'instructions':>13}{'cycles':>11}{'full s':>9}{'s':>8}{'cpu s':>8}"
    f"{'instr/s':>10}{'instr/cpu s':>12}{'speedup':>9}{'same':>6}{'RSS MiB':>9}"
)


APPROX_HEADER = f"{'approx cpu s':>13}{'approx instr/cpu s':>19}{'x default':>10}{'cycle err%':>11}"
BASE_HEADER = f"{'base cpu s':>11}{'x base':>8}{'base err%':>10}"

BASE_SCRIPT = """
import sys, time
from gecomp.dialects.context import make_context
from gecomp.core.parsing import load_module
from gecomp.core.signature import input_specs, main_function, random_inputs
from gecomp.simulator.npu import simulate
module = load_module(make_context(), sys.argv[1])
inputs = random_inputs(input_specs(main_function(module)), seed=0)
best = None
for _ in range(int(sys.argv[3])):
    start = time.process_time()
    result = simulate(module, inputs, hw=sys.argv[2], approx=True)
    spent = time.process_time() - start
    best = spent if best is None else min(best, spent)
print(best, result.report.instructions, result.report.total_cycles)
"""


def base_cpu(base: str, path: str, hw: str, repeat: int) -> tuple[float, int]:
    """CPU seconds and cycles of the approximate simulation of `path` by the tree at `base`."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, PYTHONPATH=base)
    out = subprocess.run([sys.executable, "-c", BASE_SCRIPT, path, hw, str(repeat)], env=env, check=True,
                         capture_output=True, text=True).stdout
    return float(out.split()[0]), int(out.split()[2])


def row(label: str, fast, wall: float, cpu: float, full, full_wall: float, approximate=None) -> str:
    n = fast.report.instructions
    text = (
        f"{label:<44}{n:>13}{fast.report.total_cycles:>11}{full_wall:>9.2f}{wall:>8.2f}{cpu:>8.2f}"
        f"{n / wall:>10.0f}{n / cpu:>12.0f}{full_wall / wall:>9.2f}{'yes' if identical(fast, full) else 'NO':>6}{peak_rss_mib():>9.0f}"
    )
    if approximate is not None:
        text += approx_columns(fast, cpu, *approximate)
    return text


def approx_columns(fast, cpu: float, approximate, approx_cpu: float) -> str:
    """The approximate simulation's columns (module docstring) against the default's."""
    n = fast.report.instructions
    error = 100 * (approximate.report.total_cycles / fast.report.total_cycles - 1)
    exact = approximate.report.instructions == n and all(
        x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()
        for x, y in zip(approximate.outputs, fast.outputs)
    )
    return (
        f"{approx_cpu:>13.2f}{n / approx_cpu:>19.0f}{cpu / approx_cpu:>10.2f}{error:>+11.2f}"
        + ("" if exact else "  OUTPUTS DIFFER")
    )


def model_rows(names: list[str], hw: str, approx: bool = False) -> None:
    """Compile each model of the set (ge-compile, not timed) and simulate it with
    the full simulation and the default one."""
    from gecomp.bench import models
    from gecomp.bench.models import run

    for name in names:
        module = run.import_proto(models.load(name))
        run.compile_module(module, hw)
        inputs = [np.asarray(x) for x in models.inputs(name)]
        print(file_row(name, module, inputs, hw, approx), flush=True)


def file_row(label: str, module, inputs, hw: str, approx: bool = False, repeat: int = 1,
             base: tuple[str, str] | None = None) -> str:
    """A row; `base`: (older tree, file) whose approximate simulation is timed too."""
    full, full_wall, _ = timed_simulation(module, inputs, hw, shortcuts=False)
    fast, wall, cpu = timed_simulation(module, inputs, hw)
    approximate, olds = None, []
    if approx:
        runs = []
        for _ in range(repeat):  # alternating with the older tree's, on a machine whose load varies
            runs.append(timed_simulation(module, inputs, hw, approx=True))
            if base is not None:
                olds.append(base_cpu(base[0], base[1], hw, 1))
        approximate = (runs[0][0], min(r[2] for r in runs))
    text = row(label, fast, wall, cpu, full, full_wall, approximate)
    if olds:
        least = min(cpu for cpu, _ in olds)
        error = 100 * (olds[0][1] / fast.report.total_cycles - 1)
        text += f"{least:>11.2f}{least / approximate[1]:>8.2f}{error:>+10.2f}"
    return text


def mlir_rows(paths: list[str], hw: str, approx: bool = False, repeat: int = 1, base: str | None = None) -> None:
    """Simulate npu-level .mlir files (random inputs, seed 0), both ways."""
    from gecomp.core.parsing import load_module

    for path in paths:
        module = load_module(make_context(), path)
        inputs = random_inputs(input_specs(main_function(module)), seed=0)
        print(file_row(path.rsplit("/", 1)[-1], module, inputs, hw, approx, repeat,
                       None if base is None else (base, path)), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", action="store_true", help="profile the first case and print the top functions")
    parser.add_argument("--models", nargs="*", metavar="NAME",
                        help="also compile and simulate these models of the set (none named: all of them)")
    parser.add_argument("--mlir", nargs="+", metavar="FILE", default=[], help="also simulate these npu-level modules")
    parser.add_argument("--hw", default="ascend910", help="preset of the model and --mlir rows (default ascend910)")
    parser.add_argument("--approx", action="store_true", help="also run the approximate simulation: its columns")
    parser.add_argument("--no-cases", action="store_true", help="only the --mlir and --models rows")
    parser.add_argument("--base", metavar="DIR", help="with --approx: also time this older tree's approximate "
                        "simulation of the --mlir rows (DIR/gecomp is the tree)")
    parser.add_argument("--repeat", type=int, default=1, metavar="N", help="least CPU s of N approximate runs")
    args = parser.parse_args()
    header = HEADER + (APPROX_HEADER if args.approx else "") + (BASE_HEADER if args.approx and args.base else "")
    print(header)
    print("-" * len(header))
    for label, make, hw, expect in [] if args.no_cases else CASES:
        text = make()
        full, full_wall = run_case(text, hw, expect, shortcuts=False)
        start = time.process_time()
        fast, wall = run_case(text, hw, expect)
        cpu = time.process_time() - start
        approximate = None
        if args.approx:
            start = time.process_time()
            result, _ = run_case(text, hw, expect, approx=True)
            approximate = (result, time.process_time() - start)
        print(row(f"{label} ({hw})", fast, wall, cpu, full, full_wall, approximate), flush=True)
    mlir_rows(args.mlir, args.hw, args.approx, args.repeat, args.base)
    if args.models is not None:
        from gecomp.bench import models

        model_rows(args.models or models.names(), args.hw, args.approx)
    if args.profile:
        label, make, hw, expect = CASES[0]
        profiler = cProfile.Profile()
        text = make()
        profiler.enable()
        run_case(text, hw, expect)
        profiler.disable()
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(18)
        print(f"\nprofile of '{label}' (sorted by own time):")
        print(out.getvalue())


if __name__ == "__main__":
    main()
