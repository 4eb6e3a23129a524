"""The reference interpreter for the value-semantic levels (`ge`, `fused`).

It walks `@main` in order and asks each op to `evaluate` itself: the semantics
live with the ops, so this file knows nothing about any particular op. A fused
group evaluates its region through `evaluate_block` (`dialects/evaluation.py`), the
same loop.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from ..core.diagnostics import CompileError
from ..core.signature import main_function
from ..dialects.evaluation import evaluate_block


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

