"""Checks the outputs ge-sim wrote against numpy expressions written in the test.

    ge-sim kernel.mlir --seed 1 --outputs %t.npz
    python expect.py kernel.mlir %t.npz --seed 1

The module states what it computes in comment lines `// EXPECT: z = x + y`
(an output name, a numpy expression over the input names; `np`, `softmax` and
`relu` are at hand). The inputs are regenerated exactly as ge-sim made them (the
same seed, `random_inputs`), the expression is evaluated in float64, rounded to
the output's dtype and compared with `simulator/compare.py`'s tolerance.
Prints one line per output; exit code 1 if any differs.
"""

import argparse
import re
import sys

import numpy as np

from gecomp.dialects.context import make_context
from gecomp.core.parsing import load_module
from gecomp.simulator.compare import worst_mismatch
from gecomp.core.signature import input_specs, main_function, output_specs, random_inputs

EXPECT = re.compile(r"^\s*//\s*EXPECT:\s*(\w+)\s*=\s*(.+)$")


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def relu(x):
    return np.maximum(x, 0)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("module")
    parser.add_argument("outputs")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    main_op = main_function(load_module(make_context(), args.module))
    specs = input_specs(main_op)
    inputs = random_inputs(specs, args.seed)
    scope = {"np": np, "softmax": softmax, "relu": relu}
    scope.update({s.name: x.astype(np.float64) for s, x in zip(specs, inputs)})
    results = np.load(args.outputs)
    dtypes = {s.name: s.dtype for s in output_specs(main_op)}
    failed = False
    with open(args.module, encoding="utf-8") as f:
        expectations = [m.groups() for m in map(EXPECT.match, f) if m]
    if not expectations:
        print("no // EXPECT: lines", file=sys.stderr)
        return 1
    for name, expression in expectations:
        expected = np.asarray(eval(expression, scope)).reshape(results[name].shape).astype(dtypes[name])
        mismatch = worst_mismatch(name, expected, results[name])
        if mismatch is not None and mismatch.ratio > 1.0:
            print(f"FAILED {mismatch}")
            failed = True
        else:
            print(f"ok: {name} matches {expression}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
