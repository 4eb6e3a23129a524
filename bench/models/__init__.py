"""The project's model set, as the tests and the benches load it: one loader.

Two sources, one naming:

* `<model>.<exporter>`: the networks of `export.py` (torchvision, Hugging Face
  transformers, torch.nn) as torch's exporters wrote them (`torchscript`: the
  legacy exporter at opset 17; `dynamo`), committed in `graphs/` with their
  large weights stripped and regenerated here from a seed (`stored.py`), so the
  set needs only onnx and numpy, not torch;
* `zoo.<model>`: ONNX's light model zoo shipped in the onnx wheel
  (`onnx/backend/test/data/light`: AlexNet, DenseNet-121, Inception v1 / v2,
  ResNet-50, ShuffleNet, SqueezeNet, VGG-19, ZFNet), with the inputs ONNX's
  backend test runner feeds them and the expected outputs shipped beside them.

    from gecomp.bench.models import names, load, inputs, expected
    for name in names():
        proto = load(name)            # onnx.ModelProto, weights in place
        feeds = inputs(name)          # graph inputs (non-initializer), in order
        want = expected(name)         # shipped outputs (zoo), else None
"""

from __future__ import annotations

import functools
import json
import os

import numpy as np

from . import stored

GRAPHS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "graphs")
STATUS = os.path.join(GRAPHS, "status.json")
EXPORTERS = ("torchscript", "dynamo")
ZOO = "zoo."


def names(committed: bool = True, zoo: bool = True) -> list[str]:
    """Every model of the set: the committed exports (model order, then exporter),
    then the light zoo."""
    found = []
    if committed:
        files = {f.removesuffix(".onnx") for f in os.listdir(GRAPHS) if f.endswith(".onnx")}
        models = sorted({f.rsplit(".", 1)[0] for f in files})
        found += [f"{m}.{e}" for m in models for e in EXPORTERS if f"{m}.{e}" in files]
    if zoo:
        found += [ZOO + m for m in sorted(_zoo_tests())]
    return found


def export_status() -> dict[str, dict[str, str]]:
    """What `export.py` recorded per model and exporter: "ok" or why it failed."""
    with open(STATUS) as f:
        return json.load(f)


def load(name: str):
    """The `onnx.ModelProto` of `name`, its weights regenerated (committed models)
    or as shipped (zoo)."""
    import onnx

    proto = onnx.load(_path(name))
    return proto if name.startswith(ZOO) else stored.restore(proto)


def inputs(name: str, seed: int = 0) -> list[np.ndarray]:
    """The graph inputs of `name` (those that are not initializers), in order."""
    proto = _load_unrestored(name)
    if not name.startswith(ZOO):
        return stored.inputs(proto, seed)
    from onnx.backend.test.runner import Runner

    initializers = {t.name for t in proto.graph.initializer}
    return [
        Runner.generate_dummy_data(x, seed=0, name=name.removeprefix(ZOO), random=False)
        for x in proto.graph.input
        if x.name not in initializers
    ]


def expected(name: str) -> list[np.ndarray] | None:
    """The outputs shipped with a zoo model (None for the committed exports, whose
    truth is onnxruntime)."""
    if not name.startswith(ZOO):
        return None
    import onnx
    from onnx import numpy_helper

    prefix = _path(name).removesuffix(".onnx")
    outputs, i = [], 0
    while os.path.exists(f"{prefix}_output_{i}.pb"):
        tensor = onnx.TensorProto()
        with open(f"{prefix}_output_{i}.pb", "rb") as f:
            tensor.ParseFromString(f.read())
        outputs.append(numpy_helper.to_array(tensor))
        i += 1
    return outputs


def zoo_tolerance(name: str) -> tuple[float, float]:
    """(rtol, atol) ONNX's own runner checks a zoo model's outputs with."""
    test = _zoo_tests()[name.removeprefix(ZOO)]
    return test.rtol, test.atol


def _path(name: str) -> str:
    if name.startswith(ZOO):
        model = name.removeprefix(ZOO)
        if model not in _zoo_tests():
            raise KeyError(f"unknown model '{name}' (zoo models: {', '.join(sorted(_zoo_tests()))})")
        import onnx

        return os.path.join(os.path.dirname(onnx.__file__), _zoo_tests()[model].url.removeprefix("onnx/"))
    path = os.path.join(GRAPHS, f"{name}.onnx")
    if not os.path.exists(path):
        raise KeyError(f"unknown model '{name}' (see names())")
    return path


def _load_unrestored(name: str):
    import onnx

    return onnx.load(_path(name))


@functools.cache
def _zoo_tests() -> dict:
    """The light zoo's test cases as ONNX lists them (model name -> TestCase)."""
    from onnx.backend.test.case.model import collect_testcases

    return {
        t.model_name: t
        for t in collect_testcases()
        if t.url and t.url.startswith("onnx/backend/test/data/light/")
    }
