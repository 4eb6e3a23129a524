"""Sequence chunking of a device function (`ge-partition{... chunks=K}`): the
tail of the graph whose rows (tokens) are independent is run as K chunks of
rows, so one chunk's collective overlaps the next chunk's compute.

After tensor parallelism the all_reduces are bandwidth-bound and each is read
by the very next op: on one chunk of rows nothing can run while it is in flight.
But from the row-parallel product after attention to the outputs (output
projection, all_reduce, residual, norm, MLP, all_reduce), row i of a result
depends only on row i of its operands. Cutting those rows into K chunks gives
K independent copies of that tail: chunk c's all_reduce runs on the
communication stream while chunk c+1 computes (the lowering in
`lowering/plan/device_streams.py` cuts compute runs where an op needs a
collective's result, so the copies become separate runs).

The tail is found on the graph, not on names: the earliest op from which a
split of the rows (dim 0 of every value with as many rows as the outputs; the
rest, weights and broadcast operands, whole) flows through the ops' layout
rules (`sharding.py`, the same rules `ge-partition` uses between devices) to
every output without any value needed whole; it must hold a collective, or
chunking buys nothing. The chunks' outputs are concatenated on the rows (the
collectives write them in place: `device_streams.py` gives such a concat no
kernel).

The copies are emitted stage by stage: first every chunk's ops up to its first
collective, chunk by chunk, then every chunk's ops up to its second, and so
on, so each stream sees the chunks in order and chunk c+1's work stands
between chunk c's collective and the op that reads it.
"""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.ir import Block, Operation, SSAValue

from ...core.diagnostics import CompileError
from ...dialects import ge
from .sharding import REPLICATED, Layout, Plan, is_split, propagate_ops, shard_type, split

COMMUNICATION = (ge.CollectiveOp, ge.SendOp, ge.RecvOp)


def chunk_function(function: func.FuncOp, chunks: int) -> None:
    """Rewrite `function`'s row-independent tail as `chunks` chunks of rows (in place)."""
    block = function.body.block
    ret = block.last_op
    rows = _output_rows(function, ret, chunks)
    ops = [op for op in block.ops if op is not ret and not isinstance(op, ge.ConstOp)]
    found = _row_independent_tail(ops, ret, rows, chunks)
    if found is None:
        raise CompileError(
            f"ge-partition: chunks={chunks} does not apply to @{function.sym_name.data}: no tail of it whose "
            f"{rows} rows are independent up to the outputs holds a collective",
            function,
        )
    start, plan = found
    _ChunkWriter(block, ops[start:], ret, plan, chunks).write()


def _output_rows(function: func.FuncOp, ret: Operation, chunks: int) -> int:
    name = function.sym_name.data
    if not ret.operands:
        raise CompileError(f"ge-partition: chunks={chunks} does not apply to @{name}: it returns nothing", function)
    rows = {tuple(v.type.get_shape())[:1] for v in ret.operands}
    if len(rows) != 1 or not next(iter(rows)):
        raise CompileError(f"ge-partition: chunks={chunks} does not apply to @{name}: its outputs do not share a leading (row) dim", function)
    (count,) = next(iter(rows))
    if count % chunks or count < chunks:
        raise CompileError(f"ge-partition: chunks={chunks} does not apply to @{name}: its {count} output rows do not divide into {chunks}", function)
    return count


def _row_independent_tail(ops: list[Operation], ret: Operation, rows: int, chunks: int) -> tuple[int, Plan] | None:
    """The tail that keeps the rows split from its inputs to the outputs (nothing
    gathered whole) and runs the most collectives in chunks, with its plan; None
    when no tail chunks a collective. Of those, one whose chunked collectives read
    their chunk's own product (`_reads_own_product`: each waits only for its own
    rows' work, not for a whole product sliced), and of those the shortest: the
    ops before it run once on whole values (no slices of intermediate tensors,
    fewer kernels per chunk)."""
    best: tuple[tuple[int, bool, int], Plan] | None = None
    last_comm = max((i for i, op in enumerate(ops) if isinstance(op, COMMUNICATION)), default=-1)
    for start in range(last_comm + 1):
        tail = ops[start:]
        inside = {r for op in tail for r in op.results}
        frontier = {v: _row_layout(v, rows, chunks) for op in [*tail, ret] for v in op.operands if v not in inside}
        plan = propagate_ops([*tail, ret], chunks, frontier)
        mixed = [c for c in plan.conversions if c.op is not ret and (c.gathers or c.source.kind == "partial")]
        if mixed or any(plan.layouts[v] != split(0) for v in ret.operands):
            continue
        comms = [op for op in tail if isinstance(op, COMMUNICATION) and plan.layouts[op.results[0]] != REPLICATED]
        members = set(tail)
        computed = all(_reads_own_product(op, members) for op in comms)
        key = (len(comms), computed, start)
        if comms and (best is None or key > best[0]):
            best = (key, plan)
    return None if best is None else (best[0][2], best[1])


def _reads_own_product(comm: Operation, tail: set[Operation]) -> bool:
    """Whether a collective's operand is computed in the tail from a product of
    the chunk (through row-wise ops such as a residual added to the summand), so
    that the chunk's collective waits for its own rows' product, not for a whole
    product computed before the tail and sliced."""
    seen: set[Operation] = set()
    work = [v.owner for v in comm.operands]
    while work:
        op = work.pop()
        if op in seen or op not in tail or isinstance(op, COMMUNICATION):
            continue
        if isinstance(op, (ge.MatmulOp, ge.BatchMatmulOp)):
            return True
        seen.add(op)
        work.extend(v.owner for v in op.operands)
    return False


def _row_layout(value: SSAValue, rows: int, chunks: int) -> Layout:
    """A value from before the tail: split by rows if it has the outputs' rows
    (not a constant: weights stay whole), else whole (broadcast operands)."""
    dims = tuple(value.type.get_shape())
    if isinstance(value.owner, ge.ConstOp) or not dims or dims[0] != rows:
        return REPLICATED
    return split(0)


class _ChunkWriter:
    """Writes the tail's ops once per chunk, stage by stage, then the concatenated outputs."""

    def __init__(self, block: Block, tail: list[Operation], ret: Operation, plan: Plan, chunks: int):
        self.block, self.tail, self.ret, self.plan, self.chunks = block, tail, ret, plan, chunks
        self.values: dict[tuple[SSAValue, int], SSAValue] = {}
        self.new_ops: list[Operation] = []

    def write(self) -> None:
        stage = self._stages()
        whole = [op for op in self.tail if all(self.plan.layouts[r] == REPLICATED for r in op.results)]
        chunked = [op for op in self.tail if op not in whole]
        for op in whole:
            # Work on whole values only (a weight transposed, say): once, not per chunk.
            op.detach()
            self.new_ops.append(op)
        made = {r for op in chunked for r in op.results}
        for i, level in enumerate(sorted({stage[op] for op in chunked})):
            for c in range(self.chunks):
                if i == 0:
                    # Every part of the tail's inputs a chunk reads is cut with its first
                    # ops, before any collective of the chunk: the copy never waits for one.
                    for op in chunked:
                        for v, layout in zip(op.operands, self.plan.requires[op]):
                            if v not in made:
                                self._operand(v, layout, c)
                for op in chunked:
                    if stage[op] == level:
                        self._copy(op, c)
        outputs = []
        for v in self.ret.operands:
            parts = [self.values[(v, c)] for c in range(self.chunks)]
            concat = ge.ConcatOp.new(*parts, axis=0)
            concat.result.name_hint = v.name_hint
            self.new_ops.append(concat)
            outputs.append(concat.result)
        self.block.insert_ops_before(self.new_ops, self.ret)
        for i, v in enumerate(outputs):
            self.ret.operands[i] = v
        for op in reversed(chunked):
            op.detach()
            op.erase()

    def _stages(self) -> dict[Operation, int]:
        """An op's stage: how many collectives stand on the longest path to it in the tail."""
        after: dict[SSAValue, int] = {}
        stage: dict[Operation, int] = {}
        for op in self.tail:
            stage[op] = max((after.get(v, 0) for v in op.operands), default=0)
            for r in op.results:
                after[r] = stage[op] + isinstance(op, COMMUNICATION)
        return stage

    def _operand(self, value: SSAValue, target: Layout, c: int) -> SSAValue:
        if (value, c) in self.values:
            return self.values[(value, c)]
        if not is_split(target):
            return value
        # A whole value (an input of the tail, or a constant) read by rows: its c-th part.
        dims = list(value.type.get_shape())
        part = dims[target.axis] // self.chunks
        starts, ends = [0] * len(dims), list(dims)
        starts[target.axis], ends[target.axis] = c * part, (c + 1) * part
        if isinstance(value.owner, ge.ConstOp):
            array = value.owner.as_array()[tuple(slice(s, e) for s, e in zip(starts, ends))]
            sliced = ge.ConstOp.from_array(array.copy(), shard_type(value.type, target, self.chunks))
        else:
            sliced = ge.SliceOp.new(value, starts=starts, ends=ends, steps=[1] * len(dims))
        sliced.result.name_hint = value.name_hint
        self.new_ops.append(sliced)
        self.values[(value, c)] = sliced.result
        return sliced.result

    def _copy(self, op: Operation, c: int) -> None:
        operands = [self._operand(v, layout, c) for v, layout in zip(op.operands, self.plan.requires[op])]
        types = [shard_type(r.type, self.plan.layouts[r], self.chunks) for r in op.results]
        new = type(op).new(*operands, result_type=types, attributes=dict(op.attributes), **vars(op.attr_values()))
        self.new_ops.append(new)
        for old, result in zip(op.results, new.results):
            result.name_hint = old.name_hint
            self.values[(old, c)] = result
