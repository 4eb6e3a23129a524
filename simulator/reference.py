"""The reference interpreter for the value-semantic levels (`ge`, `fused`).

It walks `@main` in order and asks each op to `evaluate` itself: the semantics
live with the ops, so this file knows nothing about any particular op. A fused
group evaluates its region through `evaluate_block`, the same loop.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, SSAValue
from xdsl.traits import IsTerminator

from ..core.diagnostics import CompileError, op_error
from ..core.signature import main_function


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
        if op is block.last_op and _is_terminator(op):
            return env
        evaluate = getattr(op, "evaluate", None)
        if evaluate is None:
            raise op_error(op, "cannot be run by the reference interpreter")
        outputs = evaluate(inputs)
        env.update(zip(op.results, outputs, strict=True))
    raise CompileError("block has no terminator")


def run_reference(module: ModuleOp, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Outputs of `@main` for positional inputs, checked against the signature."""
    partitioned = module.attributes.get("ge.devices")
    if partitioned is not None:
        raise CompileError(f"the module is partitioned for {partitioned.value.data} devices: run it on all of them (ge-sim --devices)", module)
    main = main_function(module)
    arg_types = main.function_type.inputs.data
    if len(inputs) != len(arg_types):
        raise CompileError(f"@main takes {len(arg_types)} inputs, got {len(inputs)}", main)
    return evaluate_block(main.body.block, list(inputs))


def _is_terminator(op) -> bool:
    return op.has_trait(IsTerminator)
