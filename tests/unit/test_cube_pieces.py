"""The cube kernel stages a written-out K chunk one L0 step's K range at a time
(`_CubeKernel._pieces`): each step's L0 moves wait for their own piece, so the
cube starts once the first piece lands, where one copy of the whole chunk held
it until the last byte. The numbers stay the reference's, the race checker
passes, a step moved ahead of its piece's landing is a race it reports
(mutation), and items in turn alternate their L0 copies across the turns
(`_flip_l0`)."""

from __future__ import annotations

import math
import os

import pytest

from cube_lowering_testing import check_lowering, compile_module, parse, simulated_cycles
from gecomp.core.diagnostics import CompileError
from gecomp.core.signature import input_specs, main_function, random_inputs
from gecomp.dialects import npu
from gecomp.lowering.fused_to_npu.templates import cube_kernel
from gecomp.simulator.npu import simulate

PIPELINE = "ge-lower-to-npu{hw=ascend910}"

MATMUL = """
func.func @main(%a: tensor<64x1024xf16> {ge.name = "a"}, %b: tensor<1024x128xf16> {ge.name = "b"}) -> (tensor<64x128xf16> {ge.name = "c"}) {
  %c = ge.matmul %a, %b : (tensor<64x1024xf16>, tensor<1024x128xf16>) -> tensor<64x128xf16>
  func.return %c : tensor<64x128xf16>
}
"""
"""One item a core, K in two chunks of 512 walked in two L0 steps each (ascend910)."""


def kernel_ops(module) -> list:
    kernel = next(op for op in module.walk() if isinstance(op, npu.KernelOp))
    return list(kernel.body.block.ops)


def l1_writer_and_readers(ops):
    """(index of each copy into L1, index of each load_l0) among `ops`."""
    copies = [i for i, op in enumerate(ops) if isinstance(op, npu.CopyOp) and "l1" in str(op.operands[2].type)]
    loads = [i for i, op in enumerate(ops) if isinstance(op, npu.LoadL0Op)]
    return copies, loads


def test_first_step_moves_before_the_chunk_has_landed():
    """Structure: the first L0 move stands before the chunk's last copy, each behind
    a flag of its own; numbers: the reference's, race-checked; time: shorter than
    the same kernel staging each chunk whole."""
    simulation = check_lowering(MATMUL, hw="ascend910", pipeline=PIPELINE)
    module = compile_module(parse(MATMUL), PIPELINE)
    ops = kernel_ops(module)
    copies, loads = l1_writer_and_readers(ops)
    assert loads[0] < copies[3], "the first step's L0 moves wait for the whole chunk"
    waits = [i for i, op in enumerate(ops) if isinstance(op, npu.WaitFlagOp) and op.pipe_name() == "MTE1"]
    assert sum(1 for w in waits if w < copies[3]) >= 2, "one flag covers the chunk's copies"
    whole = cube_kernel._CubeKernel._staged_in_pieces
    try:
        cube_kernel._CubeKernel._staged_in_pieces = lambda self, k0, size: False
        staged_whole = compile_module(parse(MATMUL), PIPELINE)
    finally:
        cube_kernel._CubeKernel._staged_in_pieces = whole
    assert simulation.report.total_cycles < simulated_cycles(staged_whole, MATMUL)


def test_race_checker_catches_a_step_ahead_of_its_piece():
    """Mutation: the second step's wait for its piece moved past its L0 move, which
    then reads L1 before the copy lands: the simulator reports a race."""
    module = compile_module(parse(MATMUL), PIPELINE)
    ops = kernel_ops(module)
    waits = [op for op in ops if isinstance(op, npu.WaitFlagOp) and op.pipe_name() == "MTE1"
             and 'src = "MTE2"' in str(op)]
    wait = waits[2]  # B's and A's of the first step, then B's of the second
    load = next(op for op in ops[ops.index(wait):] if isinstance(op, npu.LoadL0Op))
    wait.detach()
    load.parent_block().insert_op_after(wait, load)
    inputs = random_inputs(input_specs(main_function(parse(MATMUL))), 0)
    with pytest.raises(CompileError, match="race"):
        simulate(module, inputs, hw="ascend910")


BERT = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "bert_layer.mlir")


def test_turns_alternate_their_l0_copies():
    """The BERT layer's Q/K/V projections, three products in turn of three L0 steps
    each, written out: consecutive L0A moves of the phase alternate their buffer
    across the turns too (each turn ended on the copy the next one started on)."""
    with open(BERT) as f:
        module = compile_module(parse(f.read()), "ge-compile")
    ops = kernel_ops(module)
    first_phase = ops[: next(i for i, op in enumerate(ops) if isinstance(op, (npu.SyncAllOp, npu.SyncAllArriveOp)))]
    targets = [op.operands[2] for op in first_phase if isinstance(op, npu.LoadL0Op) and "l0a" in str(op.operands[2].type)]
    assert len(targets) == 9
    assert all(x is not y for x, y in zip(targets, targets[1:])), [t.name_hint for t in targets]


def grouped(k: int, relu: bool) -> str:
    """x (16 x k) times a stack of four (k x 48) weights (+ bias and relu if `relu`):
    on tiny, items of one K chunk, several a core, each epilogue written after the
    next item's chunk is staged (`_deferred_items`), the chunk in pieces."""
    t = lambda *shape: f"tensor<{'x'.join(map(str, shape))}xf16>"  # noqa: E731
    body = f"%y = ge.batch_matmul %x, %w : ({t(16, k)}, {t(4, k, 48)}) -> {t(4, 16, 48)}"
    if relu:
        body = f"""%m = ge.batch_matmul %x, %w : ({t(16, k)}, {t(4, k, 48)}) -> {t(4, 16, 48)}
  %b = ge.const #ge.random<normal, seed = 2, mean = 0.0, std = 0.1> : {t(4, 1, 48)}
  %a = ge.add %m, %b : ({t(4, 16, 48)}, {t(4, 1, 48)}) -> {t(4, 16, 48)}
  %y = ge.relu %a : ({t(4, 16, 48)}) -> {t(4, 16, 48)}"""
    return f"""func.func @main(%x: {t(16, k)} {{ge.name = "x"}}) -> ({t(4, 16, 48)} {{ge.name = "y"}}) {{
  %w = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.125> : {t(4, k, 48)}
  {body}
  func.return %y : {t(4, 16, 48)}
}}"""


TINY = "ge-compile{hw=tiny merge=false}"


def _mmads_and_fixpipes(module) -> list[str]:
    return [op.name for op in module.walk() if isinstance(op, (npu.MmadOp, npu.FixpipeOp))]


@pytest.mark.parametrize("k", [80, 96])
def test_the_item_before_leaves_l0c_before_the_first_multiply(k):
    """Items of one K chunk in pieces, their epilogues deferred (tiny: K = 80 as steps
    of 64 + 16, or 96 as 64 + 32): the item before's fixpipes read its L0C before
    this item's first multiply overwrites it, the rest of its epilogue after the
    last piece's staging. The numbers are the reference's (race-checked); with the
    whole epilogue after the last piece, behind the first multiply (1bfc2f6's
    placement, race-free in program order), they are not (mutation)."""
    text = grouped(k, relu=True)
    check_lowering(text, "tiny", pipeline=TINY)
    names = _mmads_and_fixpipes(compile_module(parse(text), TINY))
    assert "npu.fixpipe" in names[: names.index("npu.mmad") + 3], names  # the deferred item's drain
    drain, rest = cube_kernel._PreviousEpilogue.drain, cube_kernel._PreviousEpilogue.rest
    try:
        cube_kernel._PreviousEpilogue.drain = lambda self: None
        cube_kernel._PreviousEpilogue.rest = lambda self: self()
        with pytest.raises(AssertionError, match="y"):
            check_lowering(text, "tiny", pipeline=TINY)
    finally:
        cube_kernel._PreviousEpilogue.drain, cube_kernel._PreviousEpilogue.rest = drain, rest


def test_an_epilogue_that_does_not_drain_first_keeps_the_chunk_whole():
    """A deferred epilogue of no vector body (the fixpipe casts straight into the
    output tile, chunk by chunk) does not split: its chunk is staged whole, and the
    numbers are the reference's. Staged in pieces with the epilogue after the last
    piece they are not (mutation)."""
    text = grouped(80, relu=False)
    splits = []
    init = cube_kernel._PreviousEpilogue.__init__

    def recording(self, kernel, block):
        init(self, kernel, block)
        splits.append(self.splits)

    def as_plain_hook(self, kernel, block):
        init(self, kernel, block)
        self.splits = None

    try:
        cube_kernel._PreviousEpilogue.__init__ = recording
        check_lowering(text, "tiny", pipeline=TINY)
        assert splits and not any(splits), splits
        cube_kernel._PreviousEpilogue.__init__ = as_plain_hook
        with pytest.raises(AssertionError, match="y"):
            check_lowering(text, "tiny", pipeline=TINY)
    finally:
        cube_kernel._PreviousEpilogue.__init__ = init


LATER_PHASE = """
func.func @main(%x: tensor<128x768xf16> {ge.name = "x"}, %g: tensor<768xf16> {ge.name = "g"}, %be: tensor<768xf16> {ge.name = "be"}) -> (tensor<128x3072xf16> {ge.name = "y"}) {
  %ln = ge.layer_norm %x, %g, %be {epsilon = 1.0e-12} : (tensor<128x768xf16>, tensor<768xf16>, tensor<768xf16>) -> tensor<128x768xf16>
  %w = ge.const #ge.random<normal, seed = 11, mean = 0.0, std = 0.02> : tensor<768x3072xf16>
  %h = ge.matmul %ln, %w : (tensor<128x768xf16>, tensor<768x3072xf16>) -> tensor<128x3072xf16>
  %b = ge.const #ge.random<normal, seed = 12, mean = 0.0, std = 0.02> : tensor<3072xf16>
  %hb = ge.add %h, %b : (tensor<128x3072xf16>, tensor<3072xf16>) -> tensor<128x3072xf16>
  %y = ge.gelu %hb : (tensor<128x3072xf16>) -> tensor<128x3072xf16>
  func.return %y : tensor<128x3072xf16>
}
"""
"""A norm, then a BERT FFN-in (GELU) as the merged kernel's later phase: its weights are
constants, so the core's first K chunk of them is prefetched before the barrier;
items of a resident A, two a core, K chunks of 512 walked in L0 steps of 256 (ascend910)."""


def test_a_later_items_weights_are_staged_in_pieces():
    """Only the core's first chunk of B is prefetched (npu-prefetch-constants moves
    that one): a later item's first chunk is staged a step at a time like any other
    written-out chunk, not whole as if prefetched (its first step then waited for
    the whole 96 KB chunk: the BERT layer's FFN-in 8,549 -> 8,099 cycles). Numbers:
    the reference's, race-checked."""
    module = compile_module(parse(LATER_PHASE), "ge-compile{hw=ascend910}")
    kernel = next(op for op in module.walk() if isinstance(op, npu.KernelOp))
    body = list(kernel.body.block.ops)
    barrier = max(i for i, op in enumerate(body) if isinstance(op, npu.SyncAllWaitOp))
    weights = [op for op in kernel.walk() if isinstance(op, npu.CopyOp) and "l1" in str(op.operands[2].type)
               and math.prod(op.operands[0].type.get_shape()) == 768 * 3072]
    assert weights, "the weights are staged into L1"
    after = [op for op in weights if body.index(_top(op, kernel)) > barrier]
    assert after, "the later items stage their weights after the barrier"
    step = 256 * 16  # an NZ copy of one L0 step of 256 rows: 256 x 16 elements per 16-column block
    assert max(op.properties["cols"].value.data for op in after) <= step, "a later item's chunk staged whole"
    check_lowering(LATER_PHASE, hw="ascend910", pipeline="ge-compile{hw=ascend910}")


def _top(op, kernel):
    """The op of the kernel's body that holds `op`."""
    while op.parent_op() is not kernel:
        op = op.parent_op()
    return op
