"""core/reverify.py: verifying a module again checks only what changed, and still
finds every error a full verification finds.

Each mutation breaks a compiled module in one way a pass could (an attribute, an
operand's type, an op moved out of its kernel, a removed terminator, a kernel's
block count under its barriers, a graph op's result type) after the reverifier
saw it valid: the reverifier must report the same error as a full verification."""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.utils.exceptions import DiagnosticException

from gecomp.core.diagnostics import CompileError
from gecomp.core.parsing import parse_module, verify_module, verify_op
from gecomp.core.passes import Instrumentation, instrumented, parse_pass_pipeline, run_pipeline
from gecomp.core.reverify import Reverifier
from gecomp.dialects import npu
from gecomp.dialects.context import make_context
from gecomp.dialects.ge.base import Kind
from gecomp.dialects.npu.base import to_attribute

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _compiled(example: str, pipeline: str = "ge-compile{hw=tiny}"):
    module = parse_module(make_context(), (EXAMPLES / example).read_text(), example)
    run_pipeline(parse_pass_pipeline(pipeline), make_context(), module)
    return module


@pytest.fixture(scope="module")
def mlp_text() -> str:
    return str(_compiled("mlp.mlir"))


def _fresh(text: str):
    """A compiled module and a reverifier that has seen it valid."""
    module = parse_module(make_context(), text, "compiled.mlir")
    reverifier = Reverifier(verify_op)
    reverifier.verify(module)
    return module, reverifier


def _errors(module, reverifier) -> tuple[str, str]:
    """The reverifier's error and a full verification's, on the same module."""
    messages = []
    for check in (lambda: reverifier.verify(module), lambda: verify_module(module)):
        with pytest.raises((CompileError, DiagnosticException, ValueError)) as caught:
            check()
        messages.append(str(caught.value))
    return messages[0], messages[1]


def _first(module, cls):
    return next(op for op in module.walk() if isinstance(op, cls))


def test_nothing_changed_verifies_only_what_is_always_checked(mlp_text):
    module, reverifier = _fresh(mlp_text)
    total = reverifier.verified
    reverifier.verify(module)
    assert reverifier.verified - total < total / 5  # terminators, launches (symbols), barriers
    assert reverifier.skipped > total / 2


def _set_cols_zero(module):
    copy = _first(module, npu.CopyOp)
    copy.properties["cols"] = to_attribute(Kind.INT, 0)


def _shrink_a_buffer(module):
    """An instruction's buffer operand replaced by a one-element buffer of its space
    (the operand's type changes, the op's attributes do not): its access overflows."""
    copy = _first(module, npu.CopyOp)
    buffer = copy.operands[2].type
    alloc = npu.AllocOp.new(result_type=npu.memref([1], buffer.element_type, buffer.memory_space.data))
    copy.parent.insert_op_before(alloc, copy)
    operands = list(copy.operands)
    operands[2] = alloc.results[0]
    copy.operands = operands


def _move_out_of_its_kernel(module):
    """An instruction moved (with the values it uses) before its kernel, at module level."""
    copy = _first(module, npu.CopyOp)
    kernel = copy.parent_op()
    while not isinstance(kernel, npu.KernelOp):
        kernel = kernel.parent_op()
    copy.detach()
    module.body.block.insert_op_before(copy, kernel)


def _remove_a_kernel_terminator(module):
    kernel = _first(module, npu.KernelOp)
    kernel.body.block.last_op.detach()


MUTATIONS = {
    "attribute": _set_cols_zero,
    "operand type": _shrink_a_buffer,
    "moved out of its kernel": _move_out_of_its_kernel,
    "kernel without terminator": _remove_a_kernel_terminator,
}


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_a_mutation_after_a_valid_verification_is_found(mlp_text, name):
    module, reverifier = _fresh(mlp_text)
    MUTATIONS[name](module)
    again, full = _errors(module, reverifier)
    assert again == full


def test_an_error_stays_reported_until_fixed(mlp_text):
    module, reverifier = _fresh(mlp_text)
    copy = _first(module, npu.CopyOp)
    cols = copy.properties["cols"]
    copy.properties["cols"] = to_attribute(Kind.INT, 0)
    for _ in range(2):  # the failing op is not remembered as verified
        with pytest.raises(CompileError):
            reverifier.verify(module)
    copy.properties["cols"] = cols
    reverifier.verify(module)


def test_barrier_pairing_reads_its_neighbours():
    """A kernel barrier's verifier reads the barriers beside it: removing the
    `npu.sync_all_arrive` before a wait leaves the wait unchanged, yet invalid."""
    module = _compiled("bert_layer.mlir", "ge-compile")
    reverifier = Reverifier(verify_op)
    reverifier.verify(module)
    wait = _first(module, npu.SyncAllWaitOp)
    arrive = wait.prev_op
    while not isinstance(arrive, npu.SyncAllArriveOp):
        arrive = arrive.prev_op
    arrive.detach()
    again, full = _errors(module, reverifier)
    assert again == full and "sync_all_arrive" in full


def test_graph_op_attribute_changed():
    """A graph op whose attribute no longer gives its result type (a matmul's
    transpose flipped): its inference disagrees with the declared result."""
    module = parse_module(make_context(), (EXAMPLES / "mlp.mlir").read_text(), "mlp.mlir")
    reverifier = Reverifier(verify_op)
    reverifier.verify(module)
    matmul = next(o for o in module.walk() if o.name == "ge.matmul")
    matmul.properties["transpose_b"] = to_attribute(Kind.BOOL, True)
    again, full = _errors(module, reverifier)
    assert again == full


def test_the_pipeline_verifies_after_every_pass_with_fewer_checks():
    """ge-compile of the MLP verified after each pass: the reverifier's checks are a
    fraction of what verifying everything each time would be."""
    module = parse_module(make_context(), (EXAMPLES / "mlp.mlir").read_text(), "mlp.mlir")
    instrumentation = Instrumentation(verify_each=True)
    with instrumented(instrumentation):
        run_pipeline(parse_pass_pipeline("ge-compile{hw=tiny}"), make_context(), module)
    r = instrumentation.reverifier
    assert r.verified > 0 and r.skipped > r.verified
