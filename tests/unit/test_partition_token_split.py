"""ge-partition{token-split=...}: where an op reads a row-parallel product's
partial sums, the sums are reduce-scattered by rows (tokens) and what follows
runs on 1/N of the tokens with its weights whole, the outputs all-gathered.
Every device's outputs equal the single-device reference; `auto` keeps the plan
the estimate ranks cheaper; the estimate counts a launch per compute run."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from gecomp.core.diagnostics import CompileError
from gecomp.core.parsing import parse_module
from gecomp.core.signature import main_function
from gecomp.dialects.context import make_context
from gecomp.simulator.collectives import collective_cost, load_interconnect
from gecomp.simulator.devices import device_functions
from gecomp.simulator.hardware import load_preset
from gecomp.transforms.distributed.device_estimate import estimated_us
from gecomp.transforms.distributed.partition import build_device_function, split_tokens, tensor_parallel_plan

from test_partition import assert_devices_match_reference, partitioned

EXAMPLES = Path(__file__).parents[2] / "examples"
COLLECTIVES = ("ge.all_reduce", "ge.all_gather", "ge.reduce_scatter")


def collectives(function) -> Counter:
    return Counter(op.name for op in function.body.block.ops if op.name in COLLECTIVES)


@pytest.mark.parametrize("example", ["llama_layer.mlir", "bert_layer.mlir"])
@pytest.mark.parametrize("devices", [2, 4])
def test_token_split_layer_matches_reference(example, devices):
    source, module = partitioned(EXAMPLES / example, f"ge-partition{{devices={devices} strategy=tp token-split=always}}")
    for function in device_functions(module):
        # Attention's all_reduce becomes a reduce_scatter; the FFN then runs on the
        # device's tokens with its weights whole, and only the outputs are gathered.
        assert collectives(function) == {"ge.reduce_scatter": 1, "ge.all_gather": 1}
        products = [op for op in function.body.block.ops if op.name == "ge.matmul"]
        ffn_in = products[-2]
        assert ffn_in.operands[0].type.get_shape()[0] * devices == main_function(source).function_type.inputs.data[0].get_shape()[0]
    whole = {tuple(op.result.type.get_shape()) for op in main_function(source).body.block.ops if op.name == "ge.const"}
    last_weight = products[-1].operands[1].type.get_shape()
    assert tuple(last_weight) in whole
    assert_devices_match_reference(source, module)


def plans(example: str, devices: int):
    source, _ = partitioned(EXAMPLES / example, f"ge-partition{{devices={devices} strategy=tp token-split=never}}")
    main = main_function(source)
    whole = tensor_parallel_plan(main, devices)
    split = split_tokens(main, whole, "always", "ascend910")
    hw = load_preset("ascend910")
    link = load_interconnect(hw)
    return [estimated_us(build_device_function(main, p, 0), hw, link) for p in (whole, split)]


@pytest.mark.parametrize("example", ["llama_layer.mlir", "bert_layer.mlir"])
@pytest.mark.parametrize("devices", [4, 8])
def test_auto_keeps_the_plan_the_estimate_ranks_cheaper(example, devices):
    whole_us, split_us = plans(example, devices)
    assert abs(whole_us - split_us) > 0.01 * whole_us
    _, module = partitioned(EXAMPLES / example, f"ge-partition{{devices={devices} strategy=tp}}")
    chose_split = collectives(device_functions(module)[0])["ge.reduce_scatter"] > 0
    assert chose_split == (split_us < whole_us)


def test_auto_decides_by_the_graph():
    """The LLaMA layer splits its tokens on 8 devices (the hierarchical reduce_scatter
    and all_gather cost what the FFN's all_reduce saves and more); the BERT layer on
    8 does not: its 12 heads do not divide by 8, attention is replicated, and only
    the FFN's all_reduce at the end would become a reduce_scatter and an all_gather,
    which across the bridge cost a bridge latency more than the hierarchical
    all_reduce and save only the last norm on 7/8 of the rows."""
    llama, bert = plans("llama_layer.mlir", 8), plans("bert_layer.mlir", 8)
    assert llama[1] < llama[0]
    assert bert[1] > bert[0]


def test_the_estimate_counts_a_launch_per_compute_run_and_each_collective():
    t = "tensor<64x64xf16>"
    text = f"""func.func @device0(%x: {t}) -> {t} {{
  %a = ge.matmul %x, %x : ({t}, {t}) -> {t}
  %r = ge.all_reduce %a {{devices = 4}} : ({t}) -> {t}
  %b = ge.matmul %r, %r : ({t}, {t}) -> {t}
  %c = ge.add %b, %x : ({t}, {t}) -> {t}
  func.return %c : {t}
}}"""
    function = main_function(parse_module(make_context(), "builtin.module {\n" + text.replace("@device0", "@main") + "\n}", "<test>"))
    hw = load_preset("ascend910")
    link = load_interconnect(hw)
    reduce_us = collective_cost("all_reduce", (0, 1, 2, 3), 64 * 64 * 2, link).time_us
    # Two runs (the second starts where an op reads the all_reduce), each a launch.
    assert estimated_us(function, hw, link) > 2 * hw.kernel_launch_us + reduce_us
    assert estimated_us(function, hw, link) < 2 * hw.kernel_launch_us + reduce_us + 1.0


@pytest.mark.parametrize(
    "options, message",
    [
        ("devices=2 strategy=tp token-split=sometimes", "token-split must be one of auto, always, never"),
        ("devices=2 strategy=dp token-split=always", "token-split=always applies to strategy tp only"),
        ("devices=2 strategy=tp chunks=2 token-split=always", "do not combine"),
    ],
)
def test_bad_token_split_options(options, message):
    with pytest.raises(CompileError, match=message):
        partitioned(EXAMPLES / "mlp.mlir", f"ge-partition{{{options}}}")
