"""The differential fuzzer (`bench/fuzz.py`): a CI slice of fixed random graphs on
every path, and the generator, classifier and reducer themselves.

The slice: small graphs (3 to 6 drawn ops) of seed 1, each run by onnxruntime
and by every gecomp path (reference interpreter; ge-compile fused and eager on
ascend910 and tiny, verified after every pass); none may crash, miscompile,
make the simulator refuse its code, or be refused on ascend910 although each of
its nodes compiles alone.
"""

from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from gecomp.frontend.fuzz_graphs import generate, op_types  # noqa: E402
from gecomp.frontend.fuzz_paths import (  # noqa: E402
    CRASH,
    FAILURES,
    MISCOMPILE,
    OK,
    PATHS,
    REFUSAL,
    Outcome,
    Path,
    compare,
    oracle,
    run_graph,
)
from gecomp.frontend.fuzz_reduce import reduce_graph, to_text  # noqa: E402

SLICE_SEED = 1
SLICE_OPS = [
    "Abs", "Add", "AveragePool", "BatchNormalization", "Cast", "CastLike", "Concat", "Conv", "Div", "Dropout",
    "Erf", "Exp", "Expand", "Flatten", "Gather", "Gelu", "Gemm", "GlobalAveragePool", "Identity",
    "LayerNormalization", "LeakyRelu", "Log", "LogSoftmax", "MatMul", "Max", "MaxPool", "Min", "Mul", "Neg",
    "Pad", "Pow", "RMSNormalization", "Reciprocal", "ReduceMax", "ReduceMean", "ReduceSum", "Relu", "Reshape",
    "Sigmoid", "Slice", "Softmax", "Split", "Sqrt", "Squeeze", "Sub", "Tanh", "Transpose", "Unsqueeze", "Where",
]
"""The ops the slice draws from, fixed: graph i of the seed stays the same graph
when the fuzzer learns more ops."""
SLICE = (0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26)


@pytest.mark.parametrize("index", SLICE)
def test_fuzz_slice_has_no_failure(index: int):
    g = generate(SLICE_SEED, index, min_nodes=3, max_nodes=6, ops=SLICE_OPS)
    outcomes = run_graph(g.model, g.inputs, PATHS)
    failures = {p: str(o) for p, o in outcomes.items() if o.status in FAILURES}
    assert failures == {}, f"{g.name}:\n{to_text(g.model)}"


def test_a_seed_and_index_name_one_graph():
    a, b = generate(5, 3), generate(5, 3)
    assert a.model.SerializeToString() == b.model.SerializeToString()
    assert a.inputs.keys() == b.inputs.keys()
    assert all(np.array_equal(a.inputs[k], b.inputs[k]) for k in a.inputs)
    assert generate(5, 4).model.SerializeToString() != a.model.SerializeToString()


def test_graphs_are_valid_and_cover_the_supported_ops():
    """Every graph passes ONNX's full check and runs on onnxruntime with finite
    outputs (f16 stays meaningful, log / sqrt / div / pow stay in their domains);
    together they draw every op the fuzzer knows that the importer supports."""
    import onnx

    drawn = set()
    for index in range(60):
        g = generate(2, index)
        onnx.checker.check_model(g.model, full_check=True)
        nodes = len(g.model.graph.node)
        assert 3 <= nodes
        for out in oracle(g.model, g.inputs):
            assert np.all(np.isfinite(out)), g.name
        drawn.update(n.op_type for n in g.model.graph.node)
    assert set(op_types()) <= drawn


def test_reduction_keeps_the_failure_and_drops_the_rest():
    """A path that refuses every graph (an unknown preset) reduces any graph to
    one node that still runs on onnxruntime and is still refused the same way."""
    path = Path("broken", "ge-compile{hw=no-such-preset}", "tiny")
    g = generate(0, 1)
    target = run_graph(g.model, g.inputs, [path], judge_refusals=False)["broken"]
    assert target.status == REFUSAL and len(g.model.graph.node) > 3
    model, inputs = reduce_graph(g.model, g.inputs, path, target, budget_s=120)
    assert len(model.graph.node) == 1
    oracle(model, inputs)
    assert run_graph(model, inputs, [path], judge_refusals=False)["broken"].signature == target.signature
    assert "=>" in to_text(model)


def test_classification():
    f16 = np.array([1.0, 2.0], np.float16)
    assert compare([f16], [f16], None) == Outcome(OK)
    assert compare([f16], [f16 + 1], None).status == MISCOMPILE
    assert compare([f16], [f16.astype(np.float32)], None).status == MISCOMPILE
    assert compare([f16], [], None).status == MISCOMPILE
    assert Outcome(CRASH, "x at 3:4").signature == Outcome(CRASH, "x at 5:6").signature


def test_bench_prints_the_table(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location(
        "fuzz_bench", os.path.join(os.path.dirname(__file__), "..", "..", "bench", "fuzz.py"))
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    status = bench.main(["--seed", "1", "--count", "2", "--first", "3", "--paths", "reference,eager/tiny",
                         "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert status == 0
    assert "graphs: 2" in out and "eager/tiny" in out and "miscompile" in out
    assert bench.main(["--paths", "nowhere"]) == 1
    assert bench.main(["--ops", "Relu,NoSuchOp"]) == 1
    assert bench.main(["--seed", "1", "--count", "1", "--ops", "Conv,Relu", "--paths", "reference",
                       "--out", str(tmp_path)]) == 0


def test_a_list_of_ops_restricts_the_draw():
    drawn = {n.op_type for i in range(5) for n in generate(3, i, ops=["Conv", "MatMul"]).model.graph.node}
    assert {"Conv", "MatMul"} <= drawn
    assert drawn <= {"Conv", "MatMul", "Reshape", "Tanh", "Mul"}  # and the guards they need
