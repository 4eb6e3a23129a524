"""Flag waits at a phase's head that npu-prefetch-constants has left with less to
order: each moves past the instructions of its pipe that no longer need it.

`npu-insert-sync` plans a kernel's flags before its launches are merged: a cube
kernel's first K chunk stages A, then B, and one MTE2 -> MTE1 flag set after
both orders MTE1's first L0 moves after both copies (two flags would cost a
pair more and gain nothing while both copies follow the barrier).
`npu-prefetch-constants` then moves B's copies between the halves of the
barrier: they have landed when `npu.sync_all_wait` lets the block go on (the
flag read queues behind them on MTE2), and the flag now waits for A alone. An
L0 move of B standing after the wait (the cube kernel moves the first B tile of
a prefetched chunk first, `_CubeKernel._step`) would still wait for A's landing.

So a top-level `npu.wait_flag` of a phase opened by `npu.sync_all_wait` goes
down past each following instruction of its own pipe that touches no byte any
instruction of the phase before it touches (its inputs come from before the
barrier: the prefetched copies, which the barrier's wait orders), and past the
instructions of other pipes (sync ops too: a wait holds its own pipe's queue
only); the first instruction of its pipe that touches such bytes, a sync op of
its pipe or any op with regions stops it. (The cube kernel writes out the first
pair of L0 steps of a prefetched chunk, which would otherwise start a loop.)
Moving a wait later keeps its set before it in program order and its pipe's
queue order for everything it stops at, so what it ordered stays ordered; the
simulator's race checker checks the result.

Measured with the cube kernel's B-first step, in one run against a worktree of
68aa3d4 (ascend910): BERT-4L 74,962 -> 73,938 cycles, GPT-2-4L 76,626 -> 75,602,
LLaMA-4L 78,436 -> 76,623 (bench/transformer_rows.py, each check passing; the
attention output projection's phase ~1,840 -> ~1,590: its 64 KB B tile, in L1
since the attention phase, moves into L0B while A's 16 KB land); the BERT layer
37,456 -> 37,316; the LLaMA layer unchanged (87,892). The other cube phases of
these models start their first mmad 130-260 cycles sooner but stay as long:
their MTE2 is busy to their end.
"""

from __future__ import annotations

from xdsl.ir import Operation

from ...dialects import npu
from ...dialects.npu.base import ALL_PIPES
from .buffers import SYNC_OPS, Span, root_alloc, span_of


def _spans(op: npu.InstructionOp) -> list[Span] | None:
    """The placed local bytes `op` touches (whole buffers; its GM operands left out),
    or None if a local operand is not a placed buffer (not known to be apart)."""
    spans = []
    for i in op.buffer_operands():
        if str(npu.space_of(op.operands[i].type)) == "gm":
            continue
        alloc = root_alloc(op.operands[i])
        span = span_of(alloc) if alloc is not None else None
        if span is None:
            return None
        spans.append(span)
    return spans


def _touched(ops: list[Operation]) -> list[Span] | None:
    """Every placed local byte range the instructions of `ops` (nested too) touch,
    or None if one touches something else."""
    spans: list[Span] = []
    for top in ops:
        for op in top.walk():
            if isinstance(op, npu.InstructionOp) and not isinstance(op, SYNC_OPS):
                own = _spans(op)
                if own is None:
                    return None
                spans.extend(own)
    return spans


def _other_pipe(op: Operation, pipe: str) -> bool:
    """Whether `op` is an instruction (a sync op too) of another pipe than `pipe`,
    with no regions: a wait of `pipe` holds nothing of its queue (a barrier of
    every pipe is no other pipe's)."""
    return isinstance(op, npu.InstructionOp) and not op.regions and op.pipe_name() not in (pipe, ALL_PIPES)


def _free(op: Operation, pipe: str, before: list[Span]) -> bool:
    """Whether `op` is an instruction of `pipe` that a flag wait of that pipe may go
    past: no regions, not a sync op, bytes apart from `before`."""
    if not isinstance(op, npu.InstructionOp) or isinstance(op, SYNC_OPS) or op.regions:
        return False
    if op.pipe_name() != pipe:
        return False
    own = _spans(op)
    local = len(own or ()) == len(op.buffer_operands())  # GM bytes it touches could be any phase's
    return own is not None and local and not any(s.overlaps(t) for s in own for t in before)


def sink_phase_waits(phase: list[Operation]) -> int:
    """Move the first top-level flag wait of `phase` (its top-level ops, in order,
    after an `npu.sync_all_wait`) down past the instructions of its pipe that
    touch no byte the phase touched before them, and past the instructions of
    other pipes (whose bytes then count as touched); returns how many
    instructions of its pipe it went past."""
    passed = 0
    for index, op in enumerate(phase):
        if not isinstance(op, npu.WaitFlagOp):
            continue
        pipe = op.pipe_name()
        before = _touched(phase[:index])
        if before is None:
            return passed
        last = None
        for later in phase[index + 1 :]:
            if _free(later, pipe, before):
                last = later
                passed += 1
            elif _other_pipe(later, pipe):
                own = _touched([later])  # what comes after it must stay apart from it too
                if own is None:
                    break
                before = before + own
            elif isinstance(later, npu.InstructionOp) or later.regions:
                break  # plain ops (index arithmetic, allocs) are gone past freely
        if last is not None:
            op.detach()
            last.parent_block().insert_op_after(op, last)
        return passed  # the first wait only: the ones after it keep their order with it
    return passed
