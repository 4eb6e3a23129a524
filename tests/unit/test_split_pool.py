"""`fused-split-pool`: a max pool whose window has no kernel (no tile of one output
pixel fits UB) becomes a max over the window's rows then one over its columns.

The identity is checked on the reference interpreter over random shapes (strides,
padding, ceil mode); the split pools are compiled and simulated on the `tiny`
preset (32 KiB of UB: a 24 x 24 window does not fit) in both formats; a dilated
ONNX MaxPool with padding is run end to end through `ge-compile` and the
simulator against onnx's reference implementation; a window that fits stays one
kernel."""

from __future__ import annotations

import numpy as np
import pytest

from vector_testing import assert_matches, compile_and_compare, one_op, tensor

from gecomp.core.parsing import parse_module
from gecomp.core.passes import parse_pass_pipeline, run_pipeline
from gecomp.dialects import ge
from gecomp.dialects.context import make_context
from gecomp.lowering.fused_to_npu.kernel_exists import kernel_problem
from gecomp.lowering.fused_to_npu.split_k import replace_op
from gecomp.lowering.fused_to_npu.split_pool import separable_passes
from gecomp.simulator.hardware import load_preset
from gecomp.simulator.run import execute


def _out(size: int, k: int, s: int, before: int, after: int, ceil: bool) -> int:
    span = size + before + after - k
    out = (-(-span // s) if ceil else span // s) + 1
    if ceil and (out - 1) * s >= size + before:  # the last window must start inside
        out -= 1
    return out


def _pool_text(shape, kernel, strides, pads, ceil, dtype="f32", fmt=None) -> str:
    n, c, h, w = shape
    oh = _out(h, kernel[0], strides[0], pads[0], pads[2], ceil)
    ow = _out(w, kernel[1], strides[1], pads[1], pads[3], ceil)
    attrs = f"kernel = {list(kernel)}, strides = {list(strides)}, pads = {list(pads)}, ceil_mode = {str(ceil).lower()}"
    return one_op("ge.max_pool2d", [tensor(shape, dtype, fmt)], tensor([n, c, oh, ow], dtype, fmt), attrs=attrs)


def _random_window(rng):
    kernel = [int(rng.integers(2, 7)), int(rng.integers(2, 7))]
    strides = [int(rng.integers(1, 4)), int(rng.integers(1, 4))]
    pads = [int(rng.integers(0, k)) for k in kernel * 2]
    shape = [int(rng.integers(1, 3)), int(rng.integers(1, 5)), int(rng.integers(kernel[0], 20)),
             int(rng.integers(kernel[1], 20))]
    return shape, kernel, strides, pads, bool(rng.integers(2))


def _split_module(text: str):
    module = parse_module(make_context(), text, "test.mlir")
    (pool,) = [op for op in module.walk() if isinstance(op, ge.MaxPool2DOp)]
    rows, cols = separable_passes(pool)
    replace_op(pool, [rows, cols], [cols.result])
    return module


@pytest.mark.parametrize("seed", range(12))
def test_rows_then_columns_equal_the_window(seed):
    rng = np.random.default_rng(seed)
    shape, kernel, strides, pads, ceil = _random_window(rng)
    text = _pool_text(shape, kernel, strides, pads, ceil)
    x = rng.standard_normal(shape).astype(np.float32)
    whole = execute(parse_module(make_context(), text, "test.mlir"), [x]).results[0]
    split = execute(_split_module(text), [x]).results[0]
    np.testing.assert_array_equal(split, whole)


@pytest.mark.parametrize(
    ("shape", "kernel", "strides", "pads", "ceil", "dtype", "fmt"),
    [
        ([1, 3, 30, 29], [24, 24], [1, 2], [3, 5, 2, 4], False, "f32", None),
        ([2, 20, 28, 27], [25, 23], [2, 1], [0, 1, 0, 0], True, "f16", None),
        ([1, 20, 27, 31], [24, 26], [1, 1], [2, 0, 1, 3], False, "f16", "NC1HWC0"),
    ],
)
def test_a_window_too_large_for_ub_compiles_split_and_matches(shape, kernel, strides, pads, ceil, dtype, fmt):
    text = _pool_text(shape, kernel, strides, pads, ceil, dtype, fmt)
    (pool,) = [op for op in parse_module(make_context(), text, "t.mlir").walk() if isinstance(op, ge.MaxPool2DOp)]
    assert "no tile of one output pixel fits UB" in kernel_problem(pool, load_preset("tiny"))
    assert _windows_after_the_pass(text) == [(kernel[0], 1), (1, kernel[1])]
    mismatch, _, _ = compile_and_compare(text, pipeline="ge-lower-to-npu{hw=tiny}", hw="tiny")
    assert mismatch is None


def _windows_after_the_pass(text: str) -> list[tuple[int, ...]]:
    module = parse_module(make_context(), text, "test.mlir")
    run_pipeline(parse_pass_pipeline("fused-split-pool{hw=tiny}"), make_context(), module)
    return [tuple(op.attr_values().kernel) for op in module.walk() if isinstance(op, ge.MaxPool2DOp)]


def test_a_window_that_fits_stays_whole():
    assert _windows_after_the_pass(_pool_text([1, 4, 13, 11], [3, 3], [2, 2], [1, 1, 1, 1], False)) == [(3, 3)]


def test_a_dilated_padded_onnx_max_pool_through_the_simulator():
    """The importer moves a dilated window's phases into the channels and pools
    them with the undilated window: 48 x 96 here, no tile of which fits the
    ascend910's UB. Expected values from onnx's reference implementation."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    from onnx.reference import ReferenceEvaluator

    from gecomp.frontend.conformance import BACKENDS, SuiteCase, run_case

    node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[48, 96], dilations=[2, 2],
                            strides=[3, 2], pads=[4, 7, 3, 6])
    graph = helper.make_graph([node], "pool", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 101, 199])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    x = np.random.default_rng(3).standard_normal([1, 2, 101, 199]).astype(np.float32)
    (want,) = ReferenceEvaluator(model).run(None, {"x": x})
    case = SuiteCase("dilated", model, [([x], [want])], rtol=0, atol=0)
    assert run_case(case, BACKENDS["npu"]).status == "passed"


def test_integer_max_pool_split_matches():
    x = np.random.default_rng(4).integers(-128, 127, size=[1, 3, 26, 25], dtype=np.int8)
    assert_matches(_pool_text([1, 3, 26, 25], [24, 23], [1, 1], [1, 0, 0, 2], False, "i8"),
                   pipeline="ge-lower-to-npu{hw=tiny}", inputs=[x])
