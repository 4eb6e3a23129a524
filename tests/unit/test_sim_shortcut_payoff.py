"""bench/sim_shortcut_payoff.py measures what the simulator shortcuts of issue 35
could save: the blocks whose phase timing another block of the launch repeats
(and among them those whose every GM booking would get its unloaded time in any
order), and the loop iterations that repeat the previous one's. Checked here on
kernels whose answer is known: two blocks too light to meet on the HBM share all
but one block's instructions; eight blocks streaming at once share nothing; a
loop bound by its pipes repeats its increments but never its state relative to
the scalar unit, which runs ahead, and its transfers are order-free only when
no other block streams at the same time."""

from __future__ import annotations

from gecomp.bench import sim_shortcut_payoff as payoff
from gecomp.bench.sim_speed import vector_module
from gecomp.core.parsing import parse_module
from gecomp.core.signature import input_specs, main_function, random_inputs
from gecomp.dialects.context import make_context
from gecomp.simulator.npu import instructions, scalar, simulate


def observed(text: str, hw: str = "ascend910"):
    module = parse_module(make_context(), text, "<payoff>")
    inputs = random_inputs(input_specs(main_function(module)), seed=0)
    observer = payoff.Observer()
    with payoff._hooks(observer):
        result = simulate(module, inputs, hw=hw, after_launch=lambda launch: observer.launch_end())
    observer.run_end()
    plain = simulate(module, inputs, hw=hw)
    assert plain.report.json_text() == result.report.json_text()  # the hooks only look
    return observer, result.report.instructions


def test_light_identical_blocks_share_all_but_one():
    observer, n = observed(vector_module(128, 2, 2))
    assert observer.block_shared == observer.order_free == n // 2
    assert observer.same_count == 0


def test_blocks_streaming_together_are_not_order_free():
    observer, n = observed(vector_module(2048, 16, 8))
    assert observer.order_free == 0
    assert observer.block_shared + observer.same_count == n - n // 8  # all alike in count


def test_pipe_bound_loop_repeats_its_increments_only():
    observer, n = observed(vector_module(16, 64, 1), "tiny")
    assert 0.95 * n < observer.loop_instructions <= n
    assert observer.loop_repeats == 0
    assert 0.8 * observer.loop_instructions < observer.loop_pipe_repeats <= observer.loop_instructions
    assert observer.loop_free_repeats == observer.loop_pipe_repeats  # one block: nobody to contend with


def test_streaming_loops_are_steady_but_not_order_free():
    observer, _ = observed(vector_module(2048, 16, 8))
    assert observer.loop_pipe_repeats > 0
    assert observer.loop_free_repeats == 0


def test_hooks_are_removed():
    before = (instructions.release, instructions.InstructionDecoder._gm_transfer, scalar.ScalarDecoder.run_steps)
    observed(vector_module(128, 2, 2))
    assert (instructions.release, instructions.InstructionDecoder._gm_transfer, scalar.ScalarDecoder.run_steps) == before
