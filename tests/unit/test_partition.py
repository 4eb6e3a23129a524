"""ge-partition: every device's outputs equal the single-device reference (data
parallel MLP, Megatron tensor parallel BERT and LLaMA layers, the reshape rule),
and strategies that do not apply are errors naming why."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from gecomp.dialects.context import make_context
from gecomp.core.diagnostics import CompileError
from gecomp.core.parsing import load_module, parse_module
from gecomp.core.passes import parse_pass_pipeline, run_pipeline
from gecomp.simulator.compare import precision_floor, worst_mismatch
from gecomp.simulator.devices import device_functions, run_devices
from gecomp.simulator.reference import run_reference
from gecomp.core.signature import input_specs, main_function, random_inputs
from gecomp.transforms.distributed.sharding import reshaped_axis

EXAMPLES = Path(__file__).parents[2] / "examples"


def partitioned(path_or_text, pipeline: str):
    """(single-device module, partitioned module)."""
    ctx = make_context()
    if isinstance(path_or_text, Path):
        source = load_module(ctx, str(path_or_text))
    else:
        source = parse_module(ctx, path_or_text, "<test>")
    module = source.clone()
    run_pipeline(parse_pass_pipeline(pipeline), ctx, module)
    module.verify()
    return source, module


def assert_devices_match_reference(source, module, expect_outputs_on=None):
    inputs = random_inputs(input_specs(main_function(source)), 0)
    expected = run_reference(source, inputs)
    results = run_devices(module, inputs)
    holders = range(len(results)) if expect_outputs_on is None else expect_outputs_on
    for device in holders:
        assert len(results[device]) == len(expected), f"device {device} returns {len(results[device])} outputs"
        for i, (want, got) in enumerate(zip(expected, results[device])):
            mismatch = worst_mismatch(f"device {device} output {i}", want, got, precision_floor(source))
            assert mismatch is None or mismatch.ratio <= 1.0, str(mismatch)
    return results


def collectives(module) -> Counter:
    return Counter(op.name for op in module.walk() if op.name in ("ge.all_reduce", "ge.all_gather", "ge.send", "ge.recv"))


def test_mlp_data_parallel_gathers_the_outputs():
    source, module = partitioned(EXAMPLES / "mlp.mlir", "ge-partition{devices=2 strategy=dp}")
    assert collectives(module) == {"ge.all_gather": 2}
    assert_devices_match_reference(source, module)


@pytest.mark.parametrize("devices", [2, 4])
def test_bert_layer_tensor_parallel_one_all_reduce_per_block(devices):
    source, module = partitioned(EXAMPLES / "bert_layer.mlir", f"ge-partition{{devices={devices} strategy=tp token-split=never}}")
    # Attention and FFN: one all_reduce each per device, nothing gathered.
    assert collectives(module) == {"ge.all_reduce": 2 * devices}
    heads = [op for op in device_functions(module)[0].walk() if op.name == "ge.softmax"]
    assert heads[0].results[0].type.get_shape()[0] == 12 // devices
    assert_devices_match_reference(source, module)


@pytest.mark.parametrize("devices", [2, 4])
def test_llama_layer_tensor_parallel(devices):
    source, module = partitioned(EXAMPLES / "llama_layer.mlir", f"ge-partition{{devices={devices} strategy=tp token-split=never}}")
    assert collectives(module) == {"ge.all_reduce": 2 * devices}
    assert_devices_match_reference(source, module)


def test_mlp_tensor_parallel():
    source, module = partitioned(EXAMPLES / "mlp.mlir", "ge-partition{devices=4 strategy=tp token-split=never}")
    assert collectives(module) == {"ge.all_reduce": 4}
    assert_devices_match_reference(source, module)


def test_bert_layer_with_more_devices_than_heads_divide_splits_the_ffn_only():
    source, module = partitioned(EXAMPLES / "bert_layer.mlir", "ge-partition{devices=8 strategy=tp token-split=never}")
    assert collectives(module) == {"ge.all_reduce": 8}
    assert_devices_match_reference(source, module)


def test_reshape_keeps_a_split_whose_dim_survives():
    assert reshaped_axis((128, 768), (128, 12, 64), 1, 4) == 1
    assert reshaped_axis((128, 768), (128, 12, 64), 1, 8) is None
    assert reshaped_axis((12, 128, 64), (1536, 64), 0, 4) == 0
    assert reshaped_axis((8, 6), (2, 4, 6), 0, 2) == 0
    assert reshaped_axis((8, 6), (2, 4, 6), 0, 4) is None


def test_bert_layer_is_not_data_parallel():
    with pytest.raises(CompileError, match="'ge.batch_matmul' op ge-partition: strategy dp does not apply"):
        partitioned(EXAMPLES / "bert_layer.mlir", "ge-partition{devices=2 strategy=dp}")


@pytest.mark.parametrize(
    "options, message",
    [
        ("devices=1", "devices must be 2 or more"),
        ("devices=2 strategy=xp", "strategy must be one of dp, tp, pp"),
        ("devices=2 strategy=tp micro-batches=2", "micro-batches apply to strategy pp only"),
    ],
)
def test_bad_options(options, message):
    with pytest.raises(CompileError, match=message):
        partitioned(EXAMPLES / "mlp.mlir", f"ge-partition{{{options}}}")


@pytest.mark.parametrize("pipeline", ["ge-partition{devices=4 strategy=dp}", "ge-partition{devices=2 strategy=tp}"])
def test_onnx_classifier_partitioned_matches_onnxruntime(pipeline):
    """The ONNX example imported (batch 32), partitioned, and every device's
    probabilities equal to onnxruntime's on the original model."""
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import parser as onnx_parser

    from gecomp.frontend.importer import translate_file

    path = EXAMPLES / "classifier.onnxtxt"
    source = translate_file(str(path), {"N": 32}, {})
    module = source.clone()
    run_pipeline(parse_pass_pipeline(pipeline), make_context(), module)
    results = assert_devices_match_reference(source, module)
    features = random_inputs(input_specs(main_function(source)), 0)[0]
    model = onnx_parser.parse_model(path.read_text())
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (expected,) = session.run(None, {"features": features})
    for outputs in results:
        np.testing.assert_allclose(outputs[0], expected, rtol=1e-5, atol=1e-6)


def repeated_layer(path: Path, layers: int) -> str:
    """@main of `path` applied `layers` times in sequence (one input, one output of
    the same type): the layer's values renamed per copy, each copy's input the
    previous copy's output."""
    import re

    lines = path.read_text().splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("func.func @main"))
    ret = next(i for i, line in enumerate(lines) if "func.return" in line)
    argument = re.search(r"@main\((%\w+)", lines[header]).group(1)
    output = re.search(r"func.return (%\w+)", lines[ret]).group(1)
    body = []
    previous = argument
    for k in range(layers):
        def rename(match, k=k, previous=previous):
            return previous if match.group(0) == argument else f"{match.group(0)}_l{k}"
        body += [re.sub(r"%\w+", rename, line) for line in lines[header + 1 : ret]]
        previous = f"{output}_l{k}"
    return "\n".join([lines[header], *body, lines[ret].replace(output, previous), "}"])


def test_four_stage_pipeline_of_the_bert_layer_repeated():
    text = repeated_layer(EXAMPLES / "bert_layer.mlir", 4)
    source, module = partitioned(text, "ge-partition{devices=4 strategy=pp}")
    functions = device_functions(module)
    # Balanced stages: each device computes one layer's worth of matmuls.
    assert [sum(op.name == "ge.matmul" for op in f.walk()) for f in functions] == [6, 6, 6, 6]
    assert [len(f.function_type.outputs.data) for f in functions] == [0, 0, 0, 1]
    assert_devices_match_reference(source, module, expect_outputs_on=[3])


def test_pipeline_with_micro_batches_sends_each_part():
    source, module = partitioned(EXAMPLES / "mlp.mlir", "ge-partition{devices=2 strategy=pp micro-batches=4}")
    assert collectives(module) == {"ge.send": 4, "ge.recv": 4}
    assert_devices_match_reference(source, module, expect_outputs_on=[1])


def test_pipeline_micro_batches_need_a_batch():
    with pytest.raises(CompileError, match="strategy pp with 2 micro-batches does not apply"):
        partitioned(EXAMPLES / "bert_layer.mlir", "ge-partition{devices=2 strategy=pp micro-batches=2}")


@pytest.mark.parametrize(
    "example, options",
    [
        ("wide_deep.mlir", "devices=4 strategy=dp"),  # embedding lookups split by their indices
        ("wide_deep.mlir", "devices=2 strategy=tp"),
        ("mmoe.mlir", "devices=2 strategy=dp"),
        ("mmoe.mlir", "devices=2 strategy=tp"),
    ],
)
def test_other_examples_partitioned(example, options):
    source, module = partitioned(EXAMPLES / example, f"ge-partition{{{options}}}")
    assert_devices_match_reference(source, module)


@pytest.mark.parametrize("example", ["resnet_block.mlir", "mmoe.mlir"])
def test_other_examples_pipelined(example):
    source, module = partitioned(EXAMPLES / example, "ge-partition{devices=2 strategy=pp}")
    assert_devices_match_reference(source, module, expect_outputs_on=[1])


def test_expand_keeps_a_split_it_does_not_broadcast():
    text = """func.func @main(%x: tensor<4x6xf32>, %m: tensor<4x1xf32>) -> tensor<4x6xf32> {
  %e = ge.expand %m : (tensor<4x1xf32>) -> tensor<4x6xf32>
  %y = ge.mul %x, %e : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  func.return %y : tensor<4x6xf32>
}"""
    source, module = partitioned(text, "ge-partition{devices=2 strategy=dp}")
    assert collectives(module) == {"ge.all_gather": 2}
    assert_devices_match_reference(source, module)
