"""The project's model set (bench/models/): every committed export imports as
exported and its reference-interpreter result matches onnxruntime; ONNX's light
zoo imports and matches the outputs shipped with it; every export that compiles
in seconds (COMPILED) compiles with ge-compile and simulates to onnxruntime's numbers. Also the committed form
itself: weights regenerated deterministically at the recorded scale, and the set
small enough to keep in the repository.

bench/models.py prints the same steps as a table (with timings and cycles)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from gecomp.bench import models  # noqa: E402
from gecomp.bench.models import run, stored  # noqa: E402
from gecomp.simulator.npu.blas import single_threaded_blas  # noqa: E402

COMMITTED = models.names(zoo=False)
ZOO = models.names(committed=False)

# Compiled and simulated in CI: every committed export (both exporters) but the
# models that take from about 20 CPU seconds (ResNet-18, MobileNetV2, EfficientNet-B0
# at 64x64) to minutes (the LSTM, unrolled over 16 steps, in ge-auto-fuse) to
# compile; bench/models.py runs those and the zoo. The others take 2 to 15 CPU
# seconds each, compile and simulation: the transformers (encoder, causal decoder,
# RMSNorm with rotary tables, relative position bias, ViT's patches), whisper and
# wav2vec2's convolutions over time, and SqueezeNet's convolutions and pools.
SLOW_TO_COMPILE = ("lstm", "resnet18", "mobilenet_v2", "efficientnet_b0")
COMPILED = [name for name in COMMITTED if name.split(".")[0] not in SLOW_TO_COMPILE]

SET_BUDGET_BYTES = 5 * 1024 * 1024


def _close_to_onnxruntime(got, want, name: str) -> None:
    """Within 1e-4 of onnxruntime relative to the output's scale: float32
    computations summed in a different order differ by a few ulps of the largest
    values, not of each element."""
    assert len(got) == len(want), f"{name}: {len(got)} outputs, onnxruntime has {len(want)}"
    for g, w in zip(got, want):
        assert g.shape == w.shape, f"{name}: shape {g.shape}, onnxruntime {w.shape}"
        scale = max(1.0, float(np.max(np.abs(w))))
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4 * scale, err_msg=name)


@pytest.mark.parametrize("name", COMMITTED)
def test_committed_model_imports_and_matches_onnxruntime(name):
    proto = models.load(name)
    inputs = models.inputs(name)
    module = run.import_proto(proto)
    _close_to_onnxruntime(run.reference(module, inputs), run.onnxruntime_outputs(proto, inputs), name)


@pytest.mark.parametrize("name", ZOO)
def test_light_zoo_model_imports_and_matches_its_expected_outputs(name):
    # Run after the simulator as well as alone: the simulator limits numpy's BLAS to
    # one thread for good (simulator/npu/blas.py), which once changed SqueezeNet's
    # 1000 logits of 9.5e9 in their last bit, and so its softmax, in the full suite.
    single_threaded_blas()
    module = run.import_proto(models.load(name))
    got = run.reference(module, models.inputs(name))
    want = models.expected(name)
    rtol, atol = models.zoo_tolerance(name)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=name)


@pytest.mark.parametrize("name", COMPILED)
def test_small_model_compiles_and_simulates_to_onnxruntime(name):
    proto = models.load(name)
    inputs = models.inputs(name)
    module = run.import_proto(proto)
    run.compile_module(module)
    simulated = run.simulate(module, inputs, run.onnxruntime_outputs(proto, inputs))
    assert simulated.kernels > 0 and simulated.cycles > 0
    assert simulated.worst_ratio <= 1.0, f"{name}: {simulated.worst}"


def test_models_left_out_of_the_ci_compiles_are_models_of_the_set():
    committed = {name.split(".")[0] for name in COMMITTED}
    assert set(SLOW_TO_COMPILE) <= committed, set(SLOW_TO_COMPILE) - committed


def test_every_model_of_the_export_list_was_tried_with_both_exporters():
    status = models.export_status()
    for model, exporters in status.items():
        assert set(exporters) == set(models.EXPORTERS), model
        for exporter, outcome in exporters.items():
            committed = f"{model}.{exporter}" in COMMITTED
            assert committed == (outcome == "ok"), f"{model}.{exporter}: {outcome}"
    assert len(status) >= 14


def test_committed_set_is_small():
    total = sum(
        os.path.getsize(os.path.join(models.GRAPHS, f)) for f in os.listdir(models.GRAPHS)
    )
    assert total < SET_BUDGET_BYTES, f"{total} bytes committed"


def test_stripped_weights_come_back_deterministic_with_their_rows_statistics():
    name = "resnet18.torchscript"
    specs = json.loads(stored.metadata(onnx.load(models._path(name)))[stored.WEIGHTS_KEY])
    assert specs, "resnet18 has weights above the strip threshold"
    first = {t.name: onnx.numpy_helper.to_array(t) for t in models.load(name).graph.initializer}
    again = {t.name: onnx.numpy_helper.to_array(t) for t in models.load(name).graph.initializer}
    for spec in specs:
        array = first[spec["name"]]
        np.testing.assert_array_equal(array, again[spec["name"]])
        assert list(array.shape) == spec["dims"]
        assert spec["min"] <= array.min() and array.max() <= spec["max"]


def test_strip_records_rows_and_keeps_vectors_small_integer_and_non_finite_tensors():
    from onnx import helper, numpy_helper

    rng = np.random.default_rng(1)
    scales = np.linspace(0.1, 3.0, 64)[:, None]
    big = (rng.standard_normal((64, 64)) * scales + scales).astype(np.float32)
    vector = rng.standard_normal(2048).astype(np.float32)  # 8 KB, one dimension: kept
    big_mask = np.full((64, 64), -np.inf, np.float32)
    ids = np.arange(4096, dtype=np.int64).reshape(64, 64)
    small = np.ones((2, 4), np.float32)
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])], "g",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1])],
        [numpy_helper.from_array(a, n) for a, n in
         [(big, "big"), (vector, "vector"), (big_mask, "mask"), (ids, "ids"), (small, "small")]],
    )
    model = helper.make_model(graph)
    assert stored.strip(model) == 1
    assert {t.name for t in model.graph.initializer} == {"vector", "mask", "ids", "small"}
    stored.restore(model)
    restored = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    again = stored.regenerate(json.loads(stored.metadata(model)[stored.WEIGHTS_KEY])[0])
    np.testing.assert_array_equal(restored["big"], again)
    assert restored["big"].dtype == np.float32 and restored["big"].shape == (64, 64)
    # each row keeps its mean and spread (up to the clip to the tensor's range)
    assert np.all(np.abs(restored["big"].mean(axis=1) - big.mean(axis=1)) <= 0.05 * scales.ravel())
    np.testing.assert_allclose(restored["big"].std(axis=1), big.std(axis=1), rtol=0.05)
    assert big.min() <= restored["big"].min() and restored["big"].max() <= big.max()
    assert not np.array_equal(restored["big"], big)  # regenerated, not stored
    np.testing.assert_array_equal(restored["ids"], ids)
    np.testing.assert_array_equal(restored["vector"], vector)


def test_token_inputs_stay_inside_the_vocabulary():
    proto = onnx.load(models._path("bert.torchscript"))
    spec = json.loads(stored.metadata(proto)[stored.INPUTS_KEY])[0]
    (ids,) = models.inputs("bert.torchscript")
    assert ids.dtype == np.int64 and 0 <= ids.min() and ids.max() < spec["high"]
