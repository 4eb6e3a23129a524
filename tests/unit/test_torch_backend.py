"""`torch.compile` with the gecomp backend against eager PyTorch: small models in
the fused and the eager pipeline, graph breaks, ops that fall back (and strict
mode), gears, and `export_module` through `ge-sim`."""

import subprocess
import sys
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import gecomp.frontend.torch as gtorch  # noqa: E402
from gecomp.core.diagnostics import CompileError  # noqa: E402
from gecomp.simulator.compare import tolerance  # noqa: E402

FUSED = "ge-compile"
EAGER = "ge-compile{fuse=false reuse=false streams=1}"


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def assert_close(actual, expected, precision=None):
    floor = np.float16 if precision == "f16" else None
    atol, rtol = tolerance(np.dtype(np.float32), floor)
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    torch.testing.assert_close(actual, expected, atol=atol, rtol=rtol)


def run_compiled(model, inputs, **options):
    """(compiled output, eager output, backend) under no_grad."""
    torch.manual_seed(0)
    model.eval()
    backend = gtorch.backend(**options)
    with torch.no_grad():
        expected = model(*inputs)
        actual = torch.compile(model, backend=backend)(*inputs)
    return actual, expected, backend


def mlp():
    return torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.Linear(64, 16),
                               torch.nn.LayerNorm(16)), (torch.randn(8, 32),)


def cnn():
    return torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.BatchNorm2d(16), torch.nn.ReLU(),
                               torch.nn.MaxPool2d(2), torch.nn.Conv2d(16, 16, 3, padding=1), torch.nn.ReLU(),
                               torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(16, 10)), \
        (torch.randn(1, 3, 16, 16),)


def encoder_layer():
    return torch.nn.TransformerEncoderLayer(32, 2, 64, batch_first=True), (torch.randn(2, 8, 32),)


def bert():
    transformers = pytest.importorskip("transformers")
    config = transformers.BertConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                     intermediate_size=64, vocab_size=50, max_position_embeddings=16)
    torch.manual_seed(0)
    return transformers.BertModel(config), (torch.randint(0, 50, (1, 8)),)


def audio():
    """wav2vec2's feature encoder in small: 1-D convolutions, a group norm, GELU."""
    return torch.nn.Sequential(torch.nn.Conv1d(1, 8, 10, stride=5, bias=False), torch.nn.GroupNorm(8, 8),
                               torch.nn.GELU(), torch.nn.Conv1d(8, 8, 3, stride=2, padding=1), torch.nn.GELU()), \
        (torch.randn(1, 1, 200),)


MODELS = {"mlp": mlp, "cnn": cnn, "encoder_layer": encoder_layer, "bert": bert, "audio": audio}


@pytest.mark.parametrize("pipeline", [FUSED, EAGER], ids=["fused", "eager"])
@pytest.mark.parametrize("name", list(MODELS))
def test_compiled_model_matches_eager_pytorch(name, pipeline):
    torch.manual_seed(0)
    model, inputs = MODELS[name]()
    with warnings.catch_warnings():
        warnings.simplefilter("error", gtorch.FallbackWarning)  # the whole model runs on the NPU
        actual, expected, backend = run_compiled(model, inputs, pipeline=pipeline)
    if not isinstance(expected, torch.Tensor):
        actual, expected = actual[0], expected[0]
    assert_close(actual, expected)
    report = gtorch.last_report()
    assert report.cycles > 0 and report.kernels > 0 and report.fallbacks == [] and report.parts == 1
    assert report.time_us == pytest.approx(report.cycles / 1000, rel=0.5)  # about 1 GHz presets


def test_f16_precision_within_fp16_tolerance():
    model, inputs = mlp()
    actual, expected, _ = run_compiled(model, inputs, precision="f16")
    assert_close(actual, expected, "f16")
    with pytest.raises(AssertionError):  # computed in f16: not as close as f32 would be
        assert_close(actual, expected)


class WithBreak(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = torch.nn.Linear(16, 32), torch.nn.Linear(32, 8)

    def forward(self, x):
        h = torch.relu(self.a(x))
        print("", end="")  # a graph break: dynamo compiles two graphs
        return self.b(h)


def test_graph_break_gives_the_right_answer():
    actual, expected, backend = run_compiled(WithBreak(), (torch.randn(4, 16),))
    assert_close(actual, expected)
    assert len(backend.compilations) == 2


class WithSine(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = torch.nn.Linear(16, 32), torch.nn.Linear(32, 8)

    def forward(self, x):
        return self.b(torch.sin(self.a(x)))


def test_unsupported_op_warns_and_runs_in_eager_pytorch():
    with pytest.warns(gtorch.FallbackWarning, match=r"aten.sin.default \(node 'sin'\) has no ge conversion; "
                                                    r"it runs in eager PyTorch"):
        actual, expected, backend = run_compiled(WithSine(), (torch.randn(4, 16),))
    assert_close(actual, expected)
    report = gtorch.last_report()
    assert report.parts == 2 and report.fallbacks  # the two linears on the NPU, sin between them


def test_strict_mode_refuses_the_unsupported_op():
    with pytest.raises(Exception, match=r"aten.sin.default \(node 'sin'\) has no ge conversion.*strict=True"):
        run_compiled(WithSine(), (torch.randn(4, 16),), strict=True)


def test_each_shape_compiles_once():
    model, _ = mlp()
    model.eval()
    backend = gtorch.backend()
    compiled = torch.compile(model, backend=backend, dynamic=False)
    with torch.no_grad():
        for batch in (2, 4, 2, 4, 2):
            x = torch.randn(batch, 32)
            assert_close(compiled(x), model(x))
    assert sorted(c.input_shapes for c in backend.compilations) == [[(2, 32)], [(4, 32)]]


def test_gears_compile_up_front():
    model, _ = mlp()
    model.eval()
    backend = gtorch.backend(gears=[(2, 32), (4, 32), (6, 32)])
    compiled = torch.compile(model, backend=backend, dynamic=True)
    with torch.no_grad():
        assert_close(compiled(torch.ones(4, 32)), model(torch.ones(4, 32)))
        assert len(backend.compilations) == 3  # every gear, before the first call returns
        for batch in (2, 6):
            x = torch.randn(batch, 32)
            assert_close(compiled(x), model(x))
    assert sorted(c.input_shapes for c in backend.compilations) == [[(2, 32)], [(4, 32)], [(6, 32)]]


def test_export_module_runs_in_ge_sim_with_the_same_result(tmp_path):
    model, (x,) = mlp()
    model.eval()
    path = tmp_path / "mlp.mlir"
    gtorch.export_module(model, (x,), str(path))
    np.savez(tmp_path / "in.npz", input0=x.numpy())
    run = subprocess.run([sys.executable, "-m", "gecomp.tools.ge_sim", str(path), "--pipeline", FUSED,
                          "--inputs", str(tmp_path / "in.npz"), "--outputs", str(tmp_path / "out.npz")],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    with torch.no_grad():
        expected = model(x)
    assert_close(torch.from_numpy(np.load(tmp_path / "out.npz")["result0"]), expected)


def test_bad_options_are_one_line_errors():
    with pytest.raises(CompileError, match="unknown precision 'f8'"):
        gtorch.backend(precision="f8")
    with pytest.raises(CompileError):
        gtorch.backend(pipeline="no-such-pass")


def test_importable_as_gecomp_torch():
    from gecomp import torch as alias

    assert alias.backend is gtorch.backend


def test_import_gecomp_torch_works_in_a_fresh_interpreter_and_is_one_module():
    """`import gecomp.torch` as the first import (an alias, no root torch.py that
    would shadow the real torch for anyone running Python in the repository)."""
    check = (
        "import gecomp.torch, gecomp.frontend.torch as f, torch, sys;"
        "assert gecomp.torch is f and sys.modules['gecomp.torch'] is f;"
        "assert hasattr(torch, 'compile')"
    )
    subprocess.run([sys.executable, "-c", check], check=True, timeout=300)


def test_attention_from_sdpa_fuses_as_the_onnx_form_does():
    """SDPA's decomposition (views merging the heads into one batch, q and k each
    scaled by sqrt(scale)) converts to batch_matmul(q, k^T) * scale, which fusion
    turns into flash attention."""
    from gecomp.frontend.torch.backend import compile_module

    model, inputs = bert()
    module = gtorch.export_module(model.eval(), inputs)
    fused = str(compile_module(module, "ge-graph-opt,ge-fuse"))
    assert fused.count("fused.flash_attention") == 1
    assert "ge.softmax" not in fused


@pytest.mark.parametrize("name, attentions", [("bert", 2), ("gpt2", 2), ("transformer_encoder_layer", 1),
                                              ("whisper_encoder", 2)])
def test_torch_path_compiles_to_the_same_ops_as_the_onnx_export(name, attentions):
    """The same model through `torch.compile`'s capture and through its committed
    ONNX export (bench/models) reaches the same fused graph: the same kernels of
    the same kinds (weights aside, which are the exports' own), so the same
    simulated time. The torch side is built as a user would (default SDPA
    attention, no mask, the encoder layer's fast path); the export used eager
    attention and a mask of ones, and for the encoder layer the packed
    in-projection picked apart by Gathers (one multi-product kernel either way).
    Whisper's zero biases are kept by the capture and dropped by the exporter's
    optimiser: ge-simplify drops a zero bias_add, so its 1-D convolutions and GELUs
    fuse the same way on both paths."""
    if name != "transformer_encoder_layer":
        pytest.importorskip("transformers")
    import collections

    from gecomp.bench import models as model_set
    from gecomp.bench import torch_backend
    from gecomp.bench.models import run
    from gecomp.frontend.torch.backend import compile_module

    model, inputs = torch_backend.models()[name]()

    def kinds(module):
        fused = compile_module(module, "ge-graph-opt,ge-fuse")
        return collections.Counter(op.name for op in fused.walk() if op.name != "ge.const")

    from_torch = kinds(gtorch.export_module(model, inputs))
    from_onnx = kinds(run.import_proto(model_set.load(f"{name}.dynamo")))
    assert from_torch == from_onnx
    assert from_torch["fused.flash_attention"] == attentions


def test_spatial_mean_stays_a_reduce_mean_reading_nd():
    """`adaptive_avg_pool2d` to 1x1 (`aten.mean.dim` over H and W) converts to the
    `ge.reduce_mean` the dynamo ONNX exporter writes, not `ge.global_avg_pool`:
    after layout the mean reads ND, so the convolution before it writes ND on both
    paths (with `global_avg_pool` in NC1HWC0 ResNet-18's last convolution wrote
    NC1HWC0 on the torch path only, 5% more cycles)."""
    from gecomp.dialects.ge import ReduceMeanOp
    from gecomp.dialects.ge.formats import Format, format_of
    from gecomp.frontend.torch.backend import compile_module

    model, inputs = cnn()
    module = gtorch.export_module(model.eval(), inputs)
    assert "ge.global_avg_pool" not in str(module)
    optimised = compile_module(module, "ge-graph-opt")
    (mean,) = [op for op in optimised.walk() if isinstance(op, ReduceMeanOp)]
    assert list(mean.attr_value("axes")) == [2, 3]
    assert format_of(mean.operands[0].type) == Format.ND


class Recurrent(torch.nn.Module):
    """A recurrent module returning its whole output: the sequence and the final states."""

    def __init__(self, cell):
        super().__init__()
        self.cell = cell

    def forward(self, x):
        y, state = self.cell(x)
        return (y, *state) if isinstance(state, tuple) else (y, state)


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_recurrent_modules_run_on_the_npu_with_no_fallback(cell):
    """nn.LSTM / nn.GRU through torch.compile: dynamo captures them (the backend sets
    `allow_rnn`) and the retrace takes torch._decomp's step-by-step decomposition
    (oneDNN's `mkldnn_rnn_layer` is not chosen), so every op converts. The user's
    oneDNN setting is as it was."""
    torch.manual_seed(0)
    module = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU}[cell](8, 16, num_layers=2, batch_first=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", gtorch.FallbackWarning)
        actual, expected, backend = run_compiled(Recurrent(module), (torch.randn(2, 5, 8),), strict=True)
    assert len(actual) == len(expected) == (3 if cell == "lstm" else 2)
    for a, e in zip(actual, expected):
        assert_close(a, e)
    assert len(backend.compilations) == 1 and backend.compilations[0].aten_ops > 0
    assert gtorch.last_report().cycles > 0 and gtorch.last_report().parts == 1
    assert torch.backends.mkldnn.enabled


def test_export_module_allows_rnn_capture_for_its_own_capture_only():
    torch.manual_seed(0)
    model = Recurrent(torch.nn.LSTM(4, 8, batch_first=True)).eval()
    with torch._dynamo.config.patch(allow_rnn=False):
        module = gtorch.export_module(model, (torch.randn(1, 3, 4),))
        assert torch._dynamo.config.allow_rnn is False
    assert "ge.sigmoid" in str(module)


def test_lstm_torch_path_fuses_as_its_onnx_export():
    """The model set's LSTM through torch.compile's capture and through its committed
    ONNX export: each step is one product with the recurrent bias and the step's
    input projection as its residual, one split into the gates and one group of
    the gate arithmetic, on both paths (the ONNX converter builds PyTorch's cell;
    the capture's `linear(h) + x_t` reads the product before its unit-dim view)."""
    import collections

    from gecomp.bench import models as model_set
    from gecomp.bench import torch_backend
    from gecomp.bench.models import run
    from gecomp.frontend.torch.backend import compile_module

    model, inputs = torch_backend.models()["lstm"]()

    def kernels(module):
        fused = compile_module(module, "ge-graph-opt,ge-fuse")
        kinds = ("fused.matmul_bias_act", "fused.group", "ge.split", "ge.slice", "ge.add")
        return collections.Counter(op.name for op in fused.walk() if op.name in kinds)

    from_torch = kernels(gtorch.export_module(model, inputs))
    assert from_torch == kernels(run.import_proto(model_set.load("lstm.dynamo")))
    assert from_torch["fused.matmul_bias_act"] == 32 and from_torch["ge.split"] == 32
