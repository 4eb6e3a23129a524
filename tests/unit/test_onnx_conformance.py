"""ONNX's own backend node test cases for every supported op, imported and run by
the reference interpreter (bench/onnx_conformance.py prints the table).

Every case must pass or be refused cleanly as unsupported, for a reason of a
known kind (each is listed in the README); at least 95% of the cases in scope
pass (here: all of them)."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("onnx")

from gecomp.frontend.conformance import (  # noqa: E402
    FAILED,
    MULTI_NODE,
    UNSUPPORTED,
    pass_rates,
    run_conformance,
    summarize,
    total_row,
)
from gecomp.frontend.converters import CONVERTERS  # noqa: E402

# Why a case may be refused; a new kind must be looked at and listed in the README.
KNOWN_REFUSALS = re.compile(
    r"has element type (bfloat16|float8\w*|float4e2m1|u?int[24]|u?int16|uint(8|32|64)|string)"
    r"|training mode is not supported"
    r"|the Indices output is not supported"
    r"|is an? (sequence|optional)"
)


@pytest.fixture(scope="module")
def results():
    return run_conformance("reference", multi_node=True)


def test_no_case_fails(results):
    failed = [f"{r.name}: {r.reason}" for r in results if r.status == FAILED]
    assert failed == []


def test_refusals_are_of_known_kinds(results):
    unknown = [f"{r.name}: {r.reason}" for r in results if r.status == UNSUPPORTED and not KNOWN_REFUSALS.search(r.reason)]
    assert unknown == []


def test_every_supported_op_has_cases_and_the_target_is_met(results):
    rows = summarize(results)
    total = total_row(rows)
    covered = {r.op_type for r in rows if r.cases and r.op_type not in ("total", MULTI_NODE)}
    assert covered == set(CONVERTERS)
    assert total.cases >= 450
    overall, in_scope = pass_rates(total)
    assert in_scope >= 0.95
    assert total.passed >= 330
    multi = next(r for r in rows if r.op_type == MULTI_NODE)
    assert multi.cases >= 80 and multi.passed == multi.cases


def test_backends_by_name():
    from gecomp.core.diagnostics import CompileError

    results = run_conformance("pipeline:canonicalize,cse", ["Gemm", "Softmax"], multi_node=False)
    assert results and all(r.status == "passed" for r in results)
    with pytest.raises(CompileError, match="unknown backend 'nope'"):
        run_conformance("nope", ["Relu"])
