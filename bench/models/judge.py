"""Which answer a simulated row is judged against: onnxruntime, or when onnxruntime
is itself too far from the exact answer, the float64 truth.

The fast path is the check `ge-sim --check` makes: every simulated output within
the tolerance of the compiled precision of onnxruntime's (judge "ort"). A deep
f32 network (EfficientNet-B0's 81 convolutions) accumulates rounding error with
depth in onnxruntime too, so the two f32 evaluations can disagree by more than
the tolerance while both are about equally close to the exact answer. Only then
the model is computed in float64 (`float64.truth`), and the row passes (judge
"f64") if, for every output, the simulator's worst error against the truth is no
larger than onnxruntime's own worst error against the truth, or within tolerance
of the truth. Errors are in multiples of the tolerance (|x - truth| over
atol + rtol * |truth|, the units of the check column), worst over each output.

Why the worst case per output, with no margin (k = 1), and not an elementwise
allowance max(tolerance, k * |ort - truth|): two f32 evaluations of the same
deep graph round their sums in different orders, so their errors are of the
same size but fall on different elements; elementwise, any element where
onnxruntime happens to be nearly exact would fail a candidate that is as good
overall, for any k. The worst error over an output is how inexact an f32
evaluation of this model is; the candidate must not be more inexact than the
oracle the table trusts. A candidate worse than the oracle fails, as before.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

ORT, F64, FAIL = "ort", "f64", "fail"


@dataclass(frozen=True)
class Verdict:
    judge: str  # ORT (within tolerance of onnxruntime), F64 (no worse than it against the truth) or FAIL
    vs_oracle: float  # the candidate's worst error against onnxruntime, x tolerance
    candidate_vs_truth: float | None = None  # x tolerance, worst over the outputs (None: truth not computed)
    oracle_vs_truth: float | None = None
    candidate_abs: float | None = None  # max |candidate - truth| over the outputs
    oracle_abs: float | None = None
    note: str = ""

    @property
    def passed(self) -> bool:
        return self.judge != FAIL


def judge(
    oracle: Sequence[np.ndarray],
    candidate: Sequence[np.ndarray],
    floor: np.dtype | None,
    vs_oracle: float,
    truth: Callable[[], Sequence[np.ndarray]],
) -> Verdict:
    """The verdict on `candidate` (the simulated outputs), whose worst error against
    `oracle` (onnxruntime's) is `vs_oracle` times the tolerance of `floor`, the
    least precise float type it was computed in. `truth()` gives the float64
    outputs; it is called only when `vs_oracle` > 1."""
    if vs_oracle <= 1:
        return Verdict(ORT, vs_oracle)
    try:
        exact = [np.asarray(t) for t in truth()]
    except Exception as e:  # noqa: BLE001 - the row says why the truth is missing
        lines = str(e).strip().splitlines()
        return Verdict(FAIL, vs_oracle, note=f"f64 truth: {type(e).__name__}: {lines[0] if lines else ''}")
    if len(exact) != len(oracle) or len(exact) != len(candidate):
        return Verdict(FAIL, vs_oracle, note=f"f64 truth: {len(exact)} outputs, onnxruntime {len(oracle)}")
    passed, worst = True, None
    candidate_ratio = oracle_ratio = candidate_abs = oracle_abs = 0.0
    for i, (t, o, c) in enumerate(zip(exact, oracle, candidate)):
        o, c = np.asarray(o), np.asarray(c)
        unit = _least_precise(o.dtype, floor)
        mine, theirs = _worst(f"output {i}", t, c, unit), _worst(f"output {i}", t, o, unit)
        mine_ratio, their_ratio = _ratio(mine), _ratio(theirs)
        if mine_ratio > max(1.0, their_ratio):
            passed = False
            worst = worst or f"{mine} vs f64; onnxruntime {their_ratio:.3g}x"
        candidate_ratio, oracle_ratio = max(candidate_ratio, mine_ratio), max(oracle_ratio, their_ratio)
        candidate_abs, oracle_abs = max(candidate_abs, _max_abs(t, c)), max(oracle_abs, _max_abs(t, o))
    return Verdict(
        F64 if passed else FAIL, vs_oracle, candidate_ratio, oracle_ratio, candidate_abs, oracle_abs,
        note="" if passed else worst,
    )


def _least_precise(dtype: np.dtype, floor: np.dtype | None) -> np.dtype | None:
    """The tolerance the oracle's type and the compiled precision allow (the truth
    itself is float64 and must not tighten it)."""
    from gecomp.simulator.compare import least_precise

    return least_precise(dtype, floor)


def _worst(name: str, truth: np.ndarray, actual: np.ndarray, floor: np.dtype | None):
    from gecomp.simulator.compare import worst_mismatch

    return worst_mismatch(name, truth, actual, floor)


def _ratio(mismatch) -> float:
    return mismatch.ratio if mismatch is not None else 0.0


def _max_abs(truth: np.ndarray, actual: np.ndarray) -> float:
    if truth.shape != actual.shape:
        return float("inf")
    if not truth.size:
        return 0.0
    error = np.abs(truth.astype(np.float64) - actual.astype(np.float64))
    return float(np.max(np.where(np.isnan(error), np.inf, error)))
