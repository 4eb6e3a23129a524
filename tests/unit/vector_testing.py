"""Helpers for the vector-kernel lowering tests: a one-op (or small) graph as
MLIR text, compiled through a pipeline and simulated, against the reference
interpreter on the same random inputs."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gecomp.dialects.context import make_context
from gecomp.core.parsing import parse_module, verify_module
from gecomp.core.passes import parse_pass_pipeline, run_pipeline
from gecomp.dialects.ge.formats import Format, format_of, from_physical, to_physical
from gecomp.simulator.compare import worst_mismatch
from gecomp.simulator.run import execute
from gecomp.core.signature import input_specs, main_function, output_specs, random_inputs


def tensor(shape: Sequence[int], dtype: str = "f16", fmt: str | None = None) -> str:
    dims = "x".join(str(d) for d in shape)
    body = f"{dims}x{dtype}" if shape else dtype
    return f"tensor<{body}, #ge.format<{fmt}>>" if fmt else f"tensor<{body}>"


def one_op(op: str, inputs: Sequence[str], result: str, attrs: str = "", results: Sequence[str] | None = None) -> str:
    """@main(inputs) -> result(s) computing a single `op` over all its arguments."""
    results = list(results) if results is not None else [result]
    args = ", ".join(f"%a{i}: {t}" for i, t in enumerate(inputs))
    operands = ", ".join(f"%a{i}" for i in range(len(inputs)))
    names = ", ".join(f"%r{i}" for i in range(len(results)))
    attr_text = f" {{{attrs}}}" if attrs else ""
    types = ", ".join(results)
    result_types = types if len(results) == 1 else f"({types})"
    return f"""func.func @main({args}) -> ({types}) {{
  {names} = {op} {operands}{attr_text} : ({", ".join(inputs)}) -> {result_types}
  func.return {names} : {types}
}}"""


def compile_and_compare(text: str, pipeline: str = "ge-lower-to-npu{hw=tiny}", hw: str = "tiny", seed: int = 0,
                        inputs: list[np.ndarray] | None = None, atol: float | None = None):
    """Compile `text` with `pipeline`, simulate it on `hw`, and return (worst
    mismatch or None, the simulation report, the compiled module). `atol`
    tightens the absolute part of the fp16 tolerance (probabilities are small
    numbers: 1e-2 absolute would hide a wrong softmax of a wide row)."""
    ctx = make_context()
    module = parse_module(ctx, text, "test.mlir")
    verify_module(module)
    reference = module.clone()
    run_pipeline(parse_pass_pipeline(pipeline), ctx, module)
    specs = input_specs(main_function(reference))
    if inputs is None:
        inputs = random_inputs(specs, seed)
    expected = execute(reference, inputs).results
    execution = execute(module, [_physical(x, s) for x, s in zip(inputs, specs)], hw=hw)
    actual = [_logical(x, s) for x, s in zip(execution.results, output_specs(main_function(reference)))]
    mismatches = [worst_mismatch(f"result{i}", e, a) for i, (e, a) in enumerate(zip(expected, actual))]
    failed = [m for m in mismatches if m is not None and m.ratio > 1]
    if atol is not None:
        failed += [m for i, (e, a) in enumerate(zip(expected, actual)) if (m := _tight(f"result{i}", e, a, atol))]
    return (failed[0] if failed else None), execution.report, module


def _tight(name: str, expected: np.ndarray, actual: np.ndarray, atol: float):
    """The worst element outside |a - e| <= atol + 1e-2 |e| (None if all inside)."""
    e, a = expected.astype(np.float64), actual.astype(np.float64)
    ratio = np.abs(a - e) / (atol + 1e-2 * np.abs(e))
    ratio = np.where(np.isnan(e) & np.isnan(a), 0.0, ratio)
    flat = int(np.nanargmax(ratio)) if ratio.size else 0
    if ratio.size == 0 or ratio.flat[flat] <= 1:
        return None
    index = tuple(int(i) for i in np.unravel_index(flat, e.shape))
    return f"{name}{list(index)}: expected {e.flat[flat]:.6g}, got {a.flat[flat]:.6g} (atol {atol})"


def _physical(array: np.ndarray, spec) -> np.ndarray:
    """The memory image the NPU holds for a graph argument or result in a format
    (the simulator takes and gives @main's buffers as they lie)."""
    fmt = format_of(spec.type)
    return array if fmt == Format.ND else to_physical(array, fmt, spec.type.element_type)


def _logical(array: np.ndarray, spec) -> np.ndarray:
    """A result's logical value (results of @main leave the NPU in ND)."""
    fmt = format_of(spec.type)
    return array if fmt == Format.ND or array.shape == spec.shape else from_physical(array, fmt, spec.shape)


def assert_matches(text: str, **options) -> object:
    """Compile and simulate; fail with the worst element if outside tolerance.
    Returns the simulation report."""
    mismatch, report, _ = compile_and_compare(text, **options)
    assert mismatch is None, f"{mismatch}\n{text}"
    return report
