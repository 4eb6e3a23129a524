"""The approximate simulation (`simulate(..., approx=True)`, `ge-sim --approx`):
outputs bitwise and instruction counts equal to the simulation's, cycles within a
stated bound on small cases, the report saying what was timed and race-checked,
and the option's command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from gecomp.bench.sim_speed import matmul_module, vector_module
from gecomp.core.diagnostics import CompileError
from gecomp.core.parsing import load_module, parse_module, verify_module
from gecomp.core.passes import parse_pass_pipeline, run_pipeline
from gecomp.core.signature import input_specs, main_function, random_inputs
from gecomp.dialects.context import make_context
from gecomp.simulator.npu import approx, simulate
from gecomp.simulator.npu.hazards import PIPE_NAMES
from gecomp.tools import ge_sim
from npu_pass_testing import compiled, inputs_for
from npu_random_kernels import random_kernel

EXAMPLES = Path(__file__).resolve().parents[2].joinpath("examples")
CYCLE_ERROR = 0.10
"""The bound on the relative cycle error asserted on the small cases here (measured
0-6.4%: the examples 0.0-0.8%, the streaming add 6.4%); the benches print the
error of every model."""


def assert_exact_outputs(simulated, approximate) -> None:
    assert approximate.report.instructions == simulated.report.instructions
    assert len(approximate.outputs) == len(simulated.outputs)
    for a, b in zip(approximate.outputs, simulated.outputs):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert a.tobytes() == b.tobytes()


def error(simulated, approximate) -> float:
    return abs(approximate.report.total_cycles / simulated.report.total_cycles - 1)


def both(module, inputs, hw: str):
    return simulate(module, inputs, hw=hw), simulate(module, inputs, hw=hw, approx=True)


def parsed(text: str):
    module = parse_module(make_context(), text, "<test>")
    verify_module(module)
    return module


@pytest.mark.parametrize("name", ["mlp.mlir", "resnet_block.mlir", "wide_deep.mlir"])
def test_examples_outputs_exact_cycles_close(name):
    module = load_module(make_context(), str(EXAMPLES / name))
    run_pipeline(parse_pass_pipeline("ge-compile{hw=ascend910}"), make_context(), module)
    inputs = random_inputs(input_specs(main_function(module)), 0)
    simulated, approximate = both(module, inputs, "ascend910")
    assert_exact_outputs(simulated, approximate)
    assert error(simulated, approximate) <= CYCLE_ERROR
    tally = approximate.report.approximate
    assert tally.launches + tally.full_launches == len(simulated.report.kernels)


@pytest.mark.parametrize(
    "text",
    [vector_module(2048, 8, 32), vector_module(2048, 4, 80), matmul_module(256, 256, 256, 32, 4)],
    ids=["streaming add, 32 blocks", "streaming add, 80 blocks in waves", "matmul, 4 blocks"],
)
def test_identical_blocks_are_timed_once_under_their_shared_load(text):
    """32 blocks streaming an add load the HBM: one is timed, booking the bytes of
    32 (error measured 6.4%, 0.0% for the matmul). Timed at its own bytes only it
    ends 21% early: the bound fails if the weights are lost. 80 blocks on 32 cores
    run in three waves: the timed one books the bytes of 80 / 3 (3.8%; at the
    first wave's 32 it is 12.4% slow)."""
    module = parsed(text)
    inputs = random_inputs(input_specs(main_function(module)), 0)
    simulated, approximate = both(module, inputs, "ascend910")
    assert_exact_outputs(simulated, approximate)
    assert approximate.report.approximate.timed == 1
    assert error(simulated, approximate) <= CYCLE_ERROR


@pytest.mark.parametrize("seed", range(4))
def test_random_kernels_outputs_exact(seed):
    module = compiled(random_kernel(seed, False), "npu-insert-sync{hw=tiny},npu-plan-local-memory{hw=tiny}")
    inputs = inputs_for(module)
    simulated, approximate = both(module, inputs, "tiny")
    assert_exact_outputs(simulated, approximate)
    assert error(simulated, approximate) <= CYCLE_ERROR


@pytest.mark.parametrize("seed", range(6))
def test_a_race_of_the_timed_blocks_is_still_found(seed):
    """Without npu-insert-sync the random kernels race; their blocks run the same
    instructions, so the timed one races as the simulation's does."""
    module = compiled(random_kernel(seed, False), "npu-plan-local-memory{hw=tiny}")
    inputs = inputs_for(module)
    assert races(module, inputs) == races(module, inputs, approx=True)


def races(module, inputs, **options) -> bool:
    try:
        simulate(module, inputs, hw="tiny", **options)
    except CompileError as e:
        return "race" in str(e)
    return False


def test_cover_and_weights():
    """Every (phase, hash) has a timed block; in each phase one timed block of each
    group stands in (the lowest), weighing its group's blocks on the L2 and those
    at distinct addresses on the HBM; the group's other timed blocks skip the phase."""
    signatures = [[1, 5], [1, 6], [2, 6], [1, 6]]
    timed = approx.cover(signatures)
    assert {(p, signatures[t][p]) for t in timed for p in range(2)} == {(p, s[p]) for s in signatures for p in range(2)}
    assert timed == [0, 2]  # block 0 covers two pairs (lowest first), block 2 the two left
    addresses = [[[0, 64], [7]], [[0, 128], [8]], [[4, 4], [9]], [[0, 192], [8]]]
    w = approx.weights(signatures, addresses, [0, 1, 2], cores=4)
    # phase 0: blocks 0, 1, 3 share hash 1, block 0 stands in: first transfer one address, second three;
    # phase 1: block 0 alone; blocks 1, 2, 3 share hash 6, block 1 stands in, two distinct addresses
    assert w[0] == [(1.0, 3.0), (3.0, 3.0), (1.0, 1.0)]
    assert w[1] == [(2.0, 3.0)]
    assert w[2] == [(1.0, 1.0), (1.0, 1.0)]  # phase 0 alone (hash 2); phase 1 skipped
    assert approx.skips(signatures, [0, 1, 2]) == {0: (False, False), 1: (True, False), 2: (False, True)}
    assert approx.representatives(signatures, [0, 1, 2]) == [[0, 0], [0, 1], [2, 1], [0, 1]]


def test_the_report_says_what_was_timed():
    module = parsed(vector_module(2048, 16, 8))
    inputs = random_inputs(input_specs(main_function(module)), 0)
    report = simulate(module, inputs, hw="ascend910", approx=True).report
    assert "approximate (--approx)" in report.text() and "race check: the 1 timed blocks only" in report.text()
    tally = report.as_json()["approximate"]
    assert {k: tally[k] for k in ("blocks", "timed", "launches", "full_launches", "batches", "by_block")} == {
        "blocks": 8, "timed": 1, "launches": 1, "full_launches": 0, "batches": 1, "by_block": 0}
    assert tally["batched"] == 8 * 16 * 5  # every block's 5 vector and copy instructions per tile, in one batch
    assert f"{tally['batched']} of {tally['batched']} block instructions computed in batches" in report.text()
    assert "approximate" not in simulate(module, inputs, hw="ascend910").report.as_json()


def test_cli(tmp_path, capsys):
    path = tmp_path / "vec.mlir"
    path.write_text(vector_module(128, 8, 4))
    assert ge_sim.main([str(path), "--hw", "tiny", "--approx", "--report"]) == 0
    assert "approximate (--approx)" in capsys.readouterr().out
    for extra in (["--exact"], ["--trace", str(tmp_path / "t.json")]):
        assert ge_sim.main([str(path), "--hw", "tiny", "--approx", *extra]) == 1
        err = capsys.readouterr().err.strip()
        assert err.startswith("error:") and "--approx" in err and "\n" not in err
    assert "--approx" in ge_sim.build_parser().format_help()


def test_a_timed_block_skips_the_phases_another_stands_in_for(monkeypatch):
    """test_sim_batched's vector kernel: phase 0 the same on all 8 blocks, phase 1
    in three groups (blocks 0-2 scale and exp, 3-4 exp, 5-7 neither). Three blocks
    are timed; in phase 0 block 0 stands in for all, the other two skip it: their
    vector pipe does nothing there (it would if they timed it), block 0's books the
    eight blocks' work. Outputs exact, cycles close."""
    from test_sim_batched import vector_kernel

    seen = {}
    shared = approx.shared_timing

    def spy(times, reps, counts, start, cores):
        seen.update(times=times, reps=reps)
        return shared(times, reps, counts, start, cores)

    monkeypatch.setattr(approx, "shared_timing", spy)
    module = parsed(vector_kernel(True))
    inputs = random_inputs(input_specs(main_function(module)), 0)
    simulated, approximate = both(module, inputs, "ascend910")
    assert_exact_outputs(simulated, approximate)
    assert error(simulated, approximate) <= CYCLE_ERROR
    times = seen["times"]
    assert sorted(times) == [0, 3, 5]
    assert all(rep[0] == 0 for rep in seen["reps"])  # phase 0: block 0 for every block
    vector = PIPE_NAMES.index("V")
    phase0 = {t: approx._phases(begin, core)[0] for t, (begin, core) in times.items()}
    assert phase0[0][2][vector] > 0
    assert phase0[3][2][vector] == 0 and phase0[5][2][vector] == 0
    # phase 1: each group times its own block, none skips
    assert all(approx._phases(begin, core)[1][2][vector] > 0 for begin, core in times.values())


def test_a_skipped_phase_skips_its_loops_without_flags(monkeypatch):
    """The same kernel with a 200-trip loop of vector ops (no flag inside, no
    result) in phase 0: the two timed blocks skipping phase 0 skip the loop whole
    (their scalar unit pays none of its 2 cycles per trip), the stand-in runs it.
    Outputs exact (the numerics pass runs it)."""
    from test_sim_batched import vector_kernel

    text = vector_kernel(True).replace(
        "npu.vtranspose %a[%c0], %wu[%c0] {rows = 4, cols = 16}",
        "npu.vtranspose %a[%c0], %wu[%c0] {rows = 4, cols = 16}\n"
        "    %c200 = arith.constant 200 : index\n"
        "    scf.for %t0 = %c0 to %c200 step %c1 {\n"
        "      npu.vmuls %wu[%c0], %wu[%c0] {cols = 64, scalar = 1.0}\n"
        "    }",
    )
    seen = {}
    shared = approx.shared_timing

    def spy(times, reps, counts, start, cores):
        seen.update(times=times)
        return shared(times, reps, counts, start, cores)

    module = parsed(text)
    inputs = random_inputs(input_specs(main_function(module)), 0)
    simulated = simulate(module, inputs, hw="ascend910")
    monkeypatch.setattr(approx, "shared_timing", spy)
    approximate = simulate(module, inputs, hw="ascend910", approx=True)
    assert_exact_outputs(simulated, approximate)
    scalar = PIPE_NAMES.index("S")
    phase0 = {t: approx._phases(begin, core)[0][2][scalar] for t, (begin, core) in seen["times"].items()}
    assert sorted(phase0) == [0, 3, 5]
    assert phase0[0] >= 400 and phase0[3] < 400 and phase0[5] < 400


def _narrowed_merged(text: str):
    from gecomp.lowering.plan.merge_launches import MergeLaunchesPass
    from gecomp.lowering.plan.narrow_sync import NarrowSyncPass

    module = parsed(text)
    MergeLaunchesPass(hw="tiny").apply(make_context(), module)
    NarrowSyncPass(hw="tiny").apply(make_context(), module)
    return module


def test_cross_flags_that_wait_for_nobody_are_approximated():
    """npu-narrow-sync's lit kernel (three launches merged on 2 blocks) with @swap
    copying its own half: every barrier becomes a flag set and a wait for nobody
    (ResNet-50 has five), which the approximate simulation approximates (each ends a
    phase); the original, whose second wait makes each block wait for the other,
    runs the full simulation. Outputs exact either way, cycles close."""
    source = (Path(__file__).parents[1] / "lit" / "npu" / "passes" / "narrow-sync.mlir").read_text()
    own = source.replace("%from = arith.muli %other, %c256", "%from = arith.muli %b, %c256")
    assert own != source
    for text, approximated in ((own, True), (source, False)):
        module = _narrowed_merged(text)
        waits = [op for op in module.walk() if op.name == "npu.cross_wait_flag"]
        assert len(waits) == 2 and any(w.triples() for w in waits) != approximated
        inputs = random_inputs(input_specs(main_function(module)), 0)
        simulated = simulate(module, inputs, hw="tiny")
        approximate = simulate(module, inputs, hw="tiny", approx=True)
        assert_exact_outputs(simulated, approximate)
        assert error(simulated, approximate) <= CYCLE_ERROR
        tally = approximate.report.approximate
        assert (tally.launches, tally.full_launches) == ((1, 0) if approximated else (0, 1))
