"""npu-narrow-sync: a merged kernel's barriers become cross-core flags, each block
waiting only for the blocks whose GM it depends on. The numbers stay those of the
separate launches, and the race checker between blocks catches a wait that is
dropped or weakened (the mutation test)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from gecomp.dialects.context import make_context
from gecomp.core.diagnostics import CompileError
from gecomp.core.parsing import parse_module, verify_module
from gecomp.core.signature import input_specs, main_function, random_inputs
from gecomp.dialects import npu
from gecomp.lowering.plan.merge_launches import MergeLaunchesPass
from gecomp.lowering.plan.narrow_sync import NarrowSyncPass
from gecomp.simulator.npu import simulate
from npu_testing import compiled_graph

SOURCE = (Path(__file__).parents[1] / "lit" / "npu" / "passes" / "narrow-sync.mlir").read_text()
"""@double, @own, @swap on 2 blocks: t = 2x and s = t + x half by half, then each
block copies the other block's half of s to y."""


def narrowed(text: str = SOURCE):
    module = parse_module(make_context(), text, "narrow.mlir")
    MergeLaunchesPass(hw="tiny").apply(make_context(), module)
    NarrowSyncPass(hw="tiny").apply(make_context(), module)
    return module


def wait_ops(module) -> list[npu.CrossWaitFlagOp]:
    return [op for op in module.walk() if isinstance(op, npu.CrossWaitFlagOp)]


def random_x(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(512).astype(np.float16)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_narrowed_kernel_computes_what_the_separate_launches_do(seed):
    x = random_x(seed)
    separate = simulate(parse_module(make_context(), SOURCE, "narrow.mlir"), [x], "tiny")
    merged = simulate(narrowed(), [x], "tiny")
    np.testing.assert_array_equal(merged.outputs[0], separate.outputs[0])
    np.testing.assert_allclose(merged.outputs[0], np.roll(3 * x.astype(np.float64), 256), rtol=2e-3, atol=2e-3)


def test_each_block_waits_for_exactly_the_blocks_it_reads():
    first, second = wait_ops(narrowed())
    assert first.triples() == []  # each block reads the half of t it wrote itself
    assert second.triples() == [(0, 1, 2), (1, 0, 2)]  # each reads the other's half of s, written in phase 2


def _mutants() -> list[tuple[str, str]]:
    """The narrowed module's text with one wait dropped or weakened, each."""
    text = str(narrowed())
    found = re.search(r"waits = \[0, 1, 2, 1, 0, 2\]", text)
    assert found is not None
    replace = lambda new: text[: found.start()] + new + text[found.end() :]  # noqa: E731
    return [
        ("drop block 0's wait", replace("waits = [1, 0, 2]")),
        ("drop block 1's wait", replace("waits = [0, 1, 2]")),
        ("weaken block 0's wait to the first flag", replace("waits = [0, 1, 1, 1, 0, 2]")),
        ("weaken block 1's wait to the first flag", replace("waits = [0, 1, 2, 1, 0, 1]")),
    ]


@pytest.mark.parametrize("mutant", _mutants(), ids=lambda m: m[0])
def test_a_dropped_or_weakened_wait_is_reported_as_a_race(mutant):
    _, text = mutant
    module = parse_module(make_context(), text, "mutant.mlir")
    with pytest.raises(CompileError, match=r"race: 'npu.copy' of block [01] (reads|writes) GM bytes .* that 'npu.copy' at .* of block [01]"):
        simulate(module, [random_x(0)], "tiny")


def test_a_barrier_that_is_no_longer_needed_passes_the_race_checker():
    """The control of the mutation test: the narrowed module itself is race-free
    (the checker is on by default) and its first phase boundary waits for nobody."""
    simulate(narrowed(), [random_x(0)], "tiny")


@pytest.mark.parametrize(
    "waits,message",
    [
        ("[0, 1]", "multiple of 3"),
        ("[0, 0, 1]", "waits for itself"),
        ("[0, 2, 1]", "out of the kernel's 2 blocks"),
        ("[0, 1, 3]", "only 2 'npu.cross_set_flag' stand before this wait"),
        ("[0, 1, 1, 0, 1, 2]", "waits for block 1 twice"),
    ],
)
def test_the_verifier_refuses_malformed_waits(waits, message):
    text = re.sub(r"waits = \[0, 1, 2, 1, 0, 2\]", f"waits = {waits}", str(narrowed()))
    with pytest.raises(CompileError, match=re.escape(message)):
        verify_module(parse_module(make_context(), text, "bad.mlir"))


def test_a_wait_outside_the_kernel_body_top_level_is_refused():
    text = str(narrowed()).replace("npu.cross_wait_flag {waits = []}", "scf.if %true {\n npu.cross_wait_flag {waits = []}\n}")
    text = text.replace("npu.cross_set_flag\n", "npu.cross_set_flag\n %true = arith.constant true\n", 1)
    with pytest.raises(CompileError, match="must stand at the top level of the npu.kernel body"):
        verify_module(parse_module(make_context(), text, "bad.mlir"))


def _merged_and_narrowed(text: str):
    module = parse_module(make_context(), text, "scalar.mlir")
    MergeLaunchesPass(hw="tiny").apply(make_context(), module)
    NarrowSyncPass(hw="tiny").apply(make_context(), module)
    return module


READ_T_AT = "    npu.copy %t[%o], %v[%c0] {cols = 256}\n"


def test_control_flow_on_a_value_read_from_gm_keeps_the_barriers():
    """A loop bound that comes from GM data: what the blocks touch cannot be
    traced statically, so the kernel falls back to npu.sync_all."""
    loop = (
        "    %r = npu.read_scalar %x[%c0] : index\n    %c1 = arith.constant 1 : index\n"
        "    scf.for %i = %c0 to %r step %c1 {\n    }\n"
    )
    module = _merged_and_narrowed(SOURCE.replace(READ_T_AT, loop + READ_T_AT, 1))
    assert not wait_ops(module)
    assert sum(isinstance(op, npu.SyncAllOp) for op in module.walk()) == 2


def test_an_address_read_from_gm_counts_as_its_whole_argument():
    """A gather's rows (an embedding lookup) are read at offsets computed from GM
    data: that access counts as one of every element of its argument, and the rest
    of the kernel is narrowed as usual. Here @own reads t at an offset plus
    (a value of x) x 0: its first wait is for the other block's first flag (it may
    read any of t), not for nobody; the numbers are the separate launches'."""
    read = "    %r = npu.read_scalar %x[%c0] : index\n    %z = arith.muli %r, %c0 : index\n    %p = arith.addi %o, %z : index\n"
    text = SOURCE.replace(READ_T_AT, read + READ_T_AT.replace("%t[%o]", "%t[%p]"), 1)
    module = _merged_and_narrowed(text)
    first, second = wait_ops(module)
    assert first.triples() == [(0, 1, 1), (1, 0, 1)]
    assert second.triples() == [(0, 1, 2), (1, 0, 2)]
    x = random_x(4)
    separate = simulate(parse_module(make_context(), text, "scalar.mlir"), [x], "tiny")
    np.testing.assert_array_equal(simulate(module, [x], "tiny").outputs[0], separate.outputs[0])


EXAMPLES = Path(__file__).parents[2] / "examples"


@pytest.mark.parametrize("example", ["mlp.mlir"])
def test_a_compiled_example_narrowed_computes_what_its_separate_launches_do(example):
    """A real merged kernel (ge-compile's tilings, GM plan and prefetched constants)
    narrowed: race-free, its outputs bit for bit those of the same kernels with
    their barriers, and those of the unmerged module (whose tilings may differ:
    merging changes some forms) within the fp16 tolerance, on random inputs."""
    text = (EXAMPLES / example).read_text()
    separate, _ = compiled_graph(text, "ge-compile{merge=false}")
    barriers, _ = compiled_graph(text, "ge-compile")
    merged, _ = compiled_graph(text, "ge-compile,npu-narrow-sync{widest=100}")
    assert wait_ops(merged) and not any(isinstance(op, (npu.SyncAllOp, npu.SyncAllWaitOp)) for op in merged.walk())
    for seed in (0, 1):
        inputs = random_inputs(input_specs(main_function(merged)), seed)
        outputs = simulate(merged, inputs).outputs
        for got, want in zip(outputs, simulate(barriers, inputs).outputs):
            np.testing.assert_array_equal(got, want)
        for got, want in zip(outputs, simulate(separate, inputs).outputs):
            np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=1e-2, atol=1e-3)


def test_a_kept_barrier_orders_the_phases_it_closes():
    """The first barrier kept (npu.sync_all), the second narrowed: its wait counts
    only the flag sets placed (one), and a dependency on the phase the kept
    barrier closed needs no wait."""
    from gecomp.lowering.plan.narrow_sync import narrow

    def merged_kernel():
        module = parse_module(make_context(), SOURCE, "narrow.mlir")
        MergeLaunchesPass(hw="tiny").apply(make_context(), module)
        return module, next(op for op in module.walk() if isinstance(op, npu.KernelOp))

    module, kernel = merged_kernel()
    narrow(kernel, [None, {0: {1: 2}, 1: {0: 2}}])
    (wait,) = wait_ops(module)
    assert wait.triples() == [(0, 1, 1), (1, 0, 1)]
    assert sum(isinstance(op, npu.SyncAllOp) for op in kernel.entry.ops) == 1
    verify_module(module)
    x = random_x(3)
    np.testing.assert_allclose(simulate(module, [x], "tiny").outputs[0], np.roll(3 * x.astype(np.float64), 256), rtol=2e-3, atol=2e-3)

    module, kernel = merged_kernel()
    narrow(kernel, [None, {0: {1: 1}}])  # on phase 0, which the kept barrier closed
    assert wait_ops(module)[0].triples() == []


def test_a_wait_for_a_flag_nobody_sets_is_a_deadlock_not_a_hang():
    """The lockstep itself: block 0 waits for block 1's first flag, block 1 ends
    without setting it; and a block parked at a wait is cancelled when another
    fails (no thread left behind)."""
    from gecomp.simulator.npu.lockstep import Block, CrossCore, Lockstep

    lockstep = Lockstep()
    wait = npu.CrossWaitFlagOp.new(waits=[0, 1, 1])
    blocks = [
        Block(0, 0, lambda: lockstep.meet(0, 2, CrossCore("wait", 0, ((1, 1),), op=wait)), lambda: None, lambda: None),
        Block(1, 10, lambda: None, lambda: None, lambda: None),
    ]
    try:
        with pytest.raises(CompileError, match=r"deadlock: block 0 waits at this 'npu.cross_wait_flag' for flags \[\(1, 1\)\]"):
            lockstep.run(blocks, lambda block: None)

        def fail():
            raise CompileError("block 1 failed")

        blocks = [
            Block(0, 0, lambda: lockstep.meet(0, 2, CrossCore("wait", 0, ((1, 1),), op=wait)), lambda: None, lambda: None),
            Block(1, 10, fail, lambda: None, lambda: None),
        ]
        with pytest.raises(CompileError, match="block 1 failed"):
            lockstep.run(blocks, lambda block: None)
    finally:
        lockstep.close()
    assert not lockstep._workers


TWICE_SWAPPED = SOURCE.replace(
    """    npu.launch @own(%t, %x, %s)
    npu.launch @swap(%s, %y)""",
    """    npu.launch @swap(%t, %s)
    npu.launch @swap(%t, %y)""",
)
"""@double, then @swap twice reading t: each swap reads the half of t the other
block wrote in the first phase, and the second swap nothing the first one wrote."""


def test_a_barrier_is_judged_on_the_phases_after_the_last_kept_one():
    """widest=0 keeps the first barrier (each block reads the other's half of t)
    and narrows the second to a wait for nobody: what the second swap reads of
    the other block was written before the kept barrier, which orders it. Judged
    on every phase before it, the second barrier was kept too."""
    module = parse_module(make_context(), TWICE_SWAPPED, "twice.mlir")
    MergeLaunchesPass(hw="tiny").apply(make_context(), module)
    NarrowSyncPass(hw="tiny", widest=0).apply(make_context(), module)
    kernel = next(op for op in module.walk() if isinstance(op, npu.KernelOp))
    assert sum(isinstance(op, npu.SyncAllOp) for op in kernel.entry.ops) == 1
    (wait,) = wait_ops(module)
    assert wait.triples() == []
    verify_module(module)
    x = random_x(5)
    separate = simulate(parse_module(make_context(), TWICE_SWAPPED, "twice.mlir"), [x], "tiny")
    merged = simulate(module, [x], "tiny")  # race-checked
    np.testing.assert_array_equal(merged.outputs[0], separate.outputs[0])
    np.testing.assert_allclose(merged.outputs[0], np.roll(2 * x.astype(np.float64), 256), rtol=2e-3, atol=2e-3)


def test_narrowing_again_judges_the_narrowed_barriers_anew():
    """ge-compile narrows the barriers no block needs (widest=0); a second run with
    a wider limit narrows the rest and keeps the first run's flags counted: the
    waits are those of one run at that limit."""
    once = narrowed()
    twice = parse_module(make_context(), SOURCE, "narrow.mlir")
    MergeLaunchesPass(hw="tiny").apply(make_context(), twice)
    NarrowSyncPass(hw="tiny", widest=0).apply(make_context(), twice)
    assert [w.triples() for w in wait_ops(twice)] == [[]]
    NarrowSyncPass(hw="tiny").apply(make_context(), twice)
    assert [w.triples() for w in wait_ops(twice)] == [w.triples() for w in wait_ops(once)] == [[], [(0, 1, 2), (1, 0, 2)]]
    x = random_x(6)
    np.testing.assert_array_equal(simulate(twice, [x], "tiny").outputs[0], simulate(once, [x], "tiny").outputs[0])


def test_ge_compile_turns_the_barriers_no_block_needs_into_flags():
    """examples/wide_deep.mlir: ge-compile leaves waits for nobody where a phase
    reads only what its own block wrote, and computes what the unmerged kernels
    do (race-checked, random inputs)."""
    text = (EXAMPLES / "wide_deep.mlir").read_text()
    merged, inputs = compiled_graph(text, "ge-compile")
    separate, _ = compiled_graph(text, "ge-compile{merge=false}")
    waits = wait_ops(merged)
    assert waits and all(w.triples() == [] for w in waits)
    for got, want in zip(simulate(merged, inputs).outputs, simulate(separate, inputs).outputs):
        np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=1e-2, atol=1e-3)


def test_granules_of_spans_are_their_union_whatever_the_order_and_overlap():
    """`_cells` merges the spans instead of counting over the whole allocation: the
    same granules as marking every span's granules one by one."""
    from gecomp.lowering.plan.narrow_sync import _cells

    rng = np.random.default_rng(0)
    for _ in range(500):
        count = int(rng.integers(1, 9))
        starts = rng.integers(0, 60, count)
        ends = starts + rng.integers(0, 12, count)
        marked = np.zeros(80, dtype=bool)
        for lo, hi in zip(starts, ends):
            marked[lo : hi + 1] = True
        assert np.array_equal(_cells((starts, ends)), np.flatnonzero(marked))
    assert len(_cells(None)) == 0


def test_phase_masks_over_touched_granules_answer_as_masks_over_the_allocation():
    """`_PhaseMasks` keeps who wrote / touched a granule for the granules touched only:
    the blocks it names for any set of granules are those a mask over the whole
    allocation names (blocks up to 64: the top bit too)."""
    from gecomp.lowering.plan.narrow_sync import _cells, _PhaseMasks

    rng = np.random.default_rng(1)
    size = 120
    for _ in range(300):
        block_dim = int(rng.choice([1, 3, 64]))
        cells = []
        for b in range(block_dim):
            phase = {}
            for writes in (False, True):
                spans = None
                if rng.random() < 0.6:
                    starts = rng.integers(0, size - 10, int(rng.integers(1, 4)))
                    spans = (starts, starts + rng.integers(0, 9, len(starts)))
                phase[("arena", writes)] = _cells(spans)
            cells.append([phase] if rng.random() < 0.9 else [])  # a block without this phase
        written, touched = np.zeros(size, dtype=np.uint64), np.zeros(size, dtype=np.uint64)
        for b, phases in enumerate(cells):
            for (_, writes), granules in (phases[0].items() if phases else []):
                touched[granules] |= np.uint64(1 << b)
                if writes:
                    written[granules] |= np.uint64(1 << b)
        masks = _PhaseMasks.of(cells, 0, "arena", block_dim)
        for _ in range(5):
            asked = np.unique(rng.integers(0, size, int(rng.integers(0, 12))))
            assert masks.written_bits(asked) == int(np.bitwise_or.reduce(written[asked], initial=0))
            assert masks.touched_bits(asked) == int(np.bitwise_or.reduce(touched[asked], initial=0))
