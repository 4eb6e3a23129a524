"""Running a block of value-semantic ops (`ge`, `fused`) on numpy arrays.

The semantics live with the ops: each has an `evaluate(inputs)` method, and this
loop only feeds it values in order. It sits with the dialects, not with the
reference interpreter that drives whole modules (`simulator/reference.py`), because
a fused group evaluates its own region with it: a dialect must not reach up into the
simulator for its semantics.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.ir import Block, SSAValue
from xdsl.traits import IsTerminator

from ..core.diagnostics import CompileError, op_error


def evaluate_block(block: Block, args: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Run a block's ops on `args`; the terminator's operands are the results."""
    env = evaluate_values(block, args)
    return [env[v] for v in block.last_op.operands]


def evaluate_values(block: Block, args: Sequence[np.ndarray]) -> dict[SSAValue, np.ndarray]:
    """Run a block's ops on `args`: every value it defines, by SSA value (what
    `--compare-each` compares each kernel's outputs with)."""
    env: dict[SSAValue, np.ndarray] = dict(zip(block.args, args, strict=True))
    for op in block.ops:
        inputs = [env[v] for v in op.operands]
        if op is block.last_op and op.has_trait(IsTerminator):
            return env
        evaluate = getattr(op, "evaluate", None)
        if evaluate is None:
            raise op_error(op, "cannot be run by the reference interpreter")
        outputs = evaluate(inputs)
        env.update(zip(op.results, outputs, strict=True))
    raise CompileError("block has no terminator")
