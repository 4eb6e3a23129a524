"""Shared pytest fixtures for the unit tests.

Kept small and generic: a per-test random generator, a way to run one `ge` op
both directly and through the reference interpreter, a comparison against an
independent reference with `simulator/compare.py`'s tolerances, and a way to
read a verifier's message.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import settings
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, ModuleOp, TensorType
from xdsl.ir import Attribute, Block, Operation, Region
from xdsl.utils.exceptions import VerifyException

from gecomp.core import dtypes
from gecomp.dialects.context import make_context
from gecomp.core.parsing import parse_module, verify_module
from gecomp.dialects.ge import GEOp
from gecomp.dialects.ge.base import to_attribute
from gecomp.simulator.compare import worst_mismatch
from gecomp.simulator.reference import run_reference


# Property tests draw the same cases on every run, so a CI run is reproducible and
# a red one is a regression, not a newly drawn case. Set GECOMP_EXPLORE=1 to draw
# new cases (and add any failure found to the test as an @example).
settings.register_profile("reproducible", derandomize=True, print_blob=True)
settings.register_profile("explore", print_blob=True)
settings.load_profile("explore" if os.environ.get("GECOMP_EXPLORE") else "reproducible")


def pytest_make_parametrize_id(config, val, argname):
    """Readable test ids: numpy scalar types by dtype name, ops by their IR name."""
    if isinstance(val, type) and issubclass(val, np.generic):
        return np.dtype(val).name
    if isinstance(val, type) and issubclass(val, Operation):
        return val.name
    return None


@pytest.fixture
def rng(request) -> np.random.Generator:
    """A generator seeded from the test's id: reproducible, different per test."""
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


def tensor_type_of(array: np.ndarray) -> TensorType:
    return dtypes.tensor_type(array.shape, dtypes.from_numpy_dtype(array.dtype))


def _main_module(block: Block, arg_types: Sequence[Attribute], result_types: Sequence[Attribute]) -> ModuleOp:
    main = func.FuncOp("main", FunctionType.from_lists(list(arg_types), list(result_types)), Region(block))
    return ModuleOp([main])


def run_ge_op(op_cls: type[GEOp], *inputs, result_type=None, **attrs):
    """Builds `op_cls` on block arguments shaped like `inputs` (result types inferred),
    evaluates it with `op.evaluate` and, after printing and re-parsing a module with
    `func.func @main`, with the reference interpreter; both must agree exactly and
    have the inferred result types. Returns the result (a list for multi-result ops)."""
    arrays = [np.asarray(x) for x in inputs]
    arg_types = [tensor_type_of(x) for x in arrays]
    block = Block(arg_types=arg_types)
    op = op_cls.new(*block.args, result_type=result_type, **attrs)
    op.verify()
    direct = op.evaluate(arrays)
    block.add_ops([op, func.ReturnOp(*op.results)])
    text = str(_main_module(block, arg_types, op.result_types))
    module = parse_module(make_context(), text, "<run_ge_op>")
    verify_module(module)
    interpreted = run_reference(module, arrays)
    assert len(direct) == len(interpreted) == len(op.results)
    for got, again, t in zip(direct, interpreted, op.result_types, strict=True):
        assert got.dtype == dtypes.to_numpy_dtype(t.element_type)
        assert got.shape == tuple(t.get_shape())
        np.testing.assert_array_equal(got, again, strict=True)
    return direct[0] if len(direct) == 1 else direct


@pytest.fixture
def run_op():
    """`run_op(OpClass, *arrays, result_type=None, **attrs)`: see `run_ge_op`."""
    return run_ge_op


def assert_matches(actual: np.ndarray, expected, what: str = "result") -> None:
    """`expected` (computed in higher precision) is rounded once to `actual`'s dtype,
    then compared with the per-dtype tolerance of `simulator/compare.py`
    (integers and booleans exactly; NaN matches NaN, inf matches the same inf)."""
    actual = np.asarray(actual)
    with np.errstate(over="ignore", invalid="ignore"):
        rounded = np.asarray(expected).astype(actual.dtype)
    assert rounded.shape == actual.shape, f"{what}: shape {actual.shape}, expected {rounded.shape}"
    with np.errstate(invalid="ignore"):  # inf - inf where both are the same inf
        mismatch = worst_mismatch(what, rounded, actual)
    assert mismatch is None or mismatch.ratio <= 1.0, str(mismatch)


@pytest.fixture
def close():
    """`close(actual, expected)`: see `assert_matches`."""
    return assert_matches


def ge_verify_message(op_cls: type[GEOp], operand_types, result_types=None, **attrs) -> str:
    """Builds `op_cls` with the given operand and declared result types (default: the
    first operand's) without inference, verifies it, and returns the verifier's
    message; fails the test if it verifies."""
    block = Block(arg_types=list(operand_types))
    definition = op_cls.get_irdl_definition()
    fields = op_cls.attr_fields()
    declared = list(result_types) if result_types is not None else [operand_types[0]]
    # `_group` splits flat lists over variadic definitions, as `GEOp.new` does.
    op = op_cls.build(
        operands=op_cls._group(definition.operands, list(block.args)),
        result_types=op_cls._group(definition.results, declared),
        properties={name: to_attribute(fields[name].kind, value) for name, value in attrs.items()},
    )
    with pytest.raises(VerifyException) as info:
        op.verify()
    return str(info.value)


@pytest.fixture
def verify_message():
    """`verify_message(OpClass, operand_types, result_types=None, **attrs)`: see
    `ge_verify_message`."""
    return ge_verify_message
