"""The model set through `torch.compile` with the gecomp backend: per model the
time to capture (retrace to core ATen, fold constants, split) and to convert to
ge, the ATen ops, what fell back to eager PyTorch, the simulated cycles, the
worst error against eager PyTorch, and the cycles of the same model's ONNX export
(bench/models, imported and compiled the same way) where it imports and compiles.

    python bench/torch_backend.py                  # every model
    python bench/torch_backend.py --only bert gpt2 --precision f16

Capture + conversion is given in this process's CPU seconds (the target: at most
2 s a model), which a loaded machine does not inflate as it does the wall seconds
of the other columns.

The models are the set of bench/models/export.py at its configurations (batch 1,
random weights, nothing downloaded), built as a user would: Hugging Face models
with their default attention and no mask, no fast path switched off; like their
exports they return the last hidden state only (no pooler, no key/value cache), so
both paths compute the same thing.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "models"))


def _hf(model_class: str, config_class: str, **config):
    """A Hugging Face model at the configuration of its ONNX export, returning its
    last hidden state as the export does (export._hidden_state), but with the
    model's default attention and no mask: as a user would call it."""

    def build():
        import torch
        import transformers

        import export

        torch.manual_seed(0)
        model = getattr(transformers, model_class)(getattr(transformers, config_class)(**config)).eval()
        ids = torch.randint(0, 1000, (1, 16), generator=torch.Generator().manual_seed(0))
        return export._hidden_state(model), (ids,)

    return build


def _whisper_encoder():
    """Whisper's encoder at the configuration of its export (export._whisper), with
    the model's default attention."""
    import torch
    import transformers

    import export

    torch.manual_seed(0)
    config = transformers.WhisperConfig(
        num_mel_bins=80, d_model=64, encoder_layers=2, encoder_attention_heads=4, encoder_ffn_dim=128,
        decoder_layers=1, decoder_attention_heads=4, decoder_ffn_dim=128, max_source_positions=32,
        vocab_size=1000, bos_token_id=0, eos_token_id=0, pad_token_id=0, decoder_start_token_id=0)
    encoder = transformers.WhisperModel(config).get_encoder()
    return export._hidden_state(encoder), (torch.randn(1, 80, 64),)


def models() -> dict:
    """Every model of bench/models/export.py: the ones with no Hugging Face attention
    as built there, the Hugging Face ones rebuilt with their default attention."""
    import export  # bench/models/export.py: the same builders and configurations

    small = dict(vocab_size=1000, max_position_embeddings=64)
    ids = dict(bos_token_id=0, eos_token_id=0, pad_token_id=0)
    as_exported = {s.name: s.build for s in export.MODELS if s.name in (
        "resnet18", "mobilenet_v2", "efficientnet_b0", "squeezenet1_1", "vit_tiny", "transformer_encoder_layer",
        "wav2vec2_features", "lstm")}
    return {
        **as_exported,
        "bert": _hf("BertModel", "BertConfig", hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                    intermediate_size=128, **small),
        "gpt2": _hf("GPT2Model", "GPT2Config", n_embd=64, n_layer=2, n_head=4, n_positions=64, vocab_size=1000,
                    use_cache=False, **ids),
        "llama": _hf("LlamaModel", "LlamaConfig", hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                     num_attention_heads=4, num_key_value_heads=2, use_cache=False, **small),
        "t5_encoder": _hf("T5EncoderModel", "T5Config", d_model=64, d_kv=16, d_ff=128, num_layers=2, num_heads=4,
                          vocab_size=1000, use_cache=False),
        "distilbert": _hf("DistilBertModel", "DistilBertConfig", dim=64, n_layers=2, n_heads=4, hidden_dim=128,
                          **small),
        "whisper_encoder": _whisper_encoder,
    }


def first_tensor(out):
    import torch

    if isinstance(out, torch.Tensor):
        return out
    return out[0] if isinstance(out, tuple | list) else next(iter(out.values()))


def measure(name: str, build, precision: str | None, hw: str) -> dict:
    import torch

    import gecomp.frontend.torch as gtorch

    row = {"model": name}
    model, inputs = build()
    torch._dynamo.reset()
    backend = gtorch.backend(hw=hw, precision=precision)
    with torch.no_grad(), warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        expected = first_tensor(model(*inputs))
        start = time.perf_counter()
        try:
            actual = first_tensor(torch.compile(model, backend=backend)(*inputs))
        except Exception as e:  # noqa: BLE001 - the row says why
            row.update(error=str(e).strip().splitlines()[-1][:160], compilations=backend.compilations)
            return _summarise(row, backend)
        row["first_call_s"] = time.perf_counter() - start
    report = gtorch.last_report()
    if not backend.compilations:  # dynamo handed the backend no graph: all of it ran in eager PyTorch
        row.update(error="dynamo captured no graph (the model ran in eager PyTorch)")
        return _summarise(row, backend)
    row.update(err=float((actual.float() - expected.float()).abs().max()), cycles=report.cycles,
               kernels=report.kernels)
    return _summarise(row, backend)


def _summarise(row: dict, backend) -> dict:
    compilations = backend.compilations
    row.update(
        graphs=len(compilations),
        capture_s=sum(c.timings.capture for c in compilations),
        convert_s=sum(c.timings.conversion for c in compilations),
        cpu_s=sum(c.timings.capture_cpu + c.timings.conversion_cpu for c in compilations),
        compile_s=sum(c.timings.compile for c in compilations),
        aten_ops=sum(c.aten_ops for c in compilations),
        fallbacks=sorted({f for c in compilations for f in c.fallbacks}),
    )
    row.pop("compilations", None)
    return row


def onnx_cycles(name: str, hw: str) -> str:
    """Simulated cycles of the model's ONNX export (dynamo exporter, else the
    TorchScript one) through the importer and ge-compile."""
    try:
        from gecomp.bench import models as model_set
        from gecomp.bench.models import run
    except ImportError as e:
        return f"n/a ({e})"
    for exporter in ("dynamo", "torchscript"):
        key = f"{name}.{exporter}"
        if key not in model_set.names(zoo=False):
            continue
        try:
            proto = model_set.load(key)
            feeds = model_set.inputs(key)
            module = run.import_proto(proto)
            run.compile_module(module, hw)
            sim = run.simulate(module, feeds, run.onnxruntime_outputs(proto, feeds), hw)
            return f"{sim.cycles} ({exporter})"
        except Exception as e:  # noqa: BLE001
            return f"fails ({exporter}: {str(e).strip().splitlines()[-1][:60]})"
    return "no export"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="model names (default: all)")
    parser.add_argument("--precision", default=None, help="f16 or f32 (default: the model's, f32)")
    parser.add_argument("--hw", default="ascend910")
    parser.add_argument("--no-onnx", action="store_true", help="skip the ONNX path column")
    parser.add_argument("--budget-s", type=float, default=600, help="time budget per model (a child process)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    table = models()
    names = args.only or list(table)
    unknown = [n for n in names if n not in table]
    if unknown:
        print(f"error: unknown model {unknown[0]!r} (one of: {', '.join(table)})", file=sys.stderr)
        return 1
    header = ("| model | capture + convert CPU s | capture s | convert s | compile s | ATen ops | fallbacks | cycles "
              "| ONNX path cycles | ratio | max err vs eager |")
    print(header)
    print("|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|")
    if args.child:
        print(format_row(names[0], measure(names[0], table[names[0]], args.precision, args.hw),
                         "" if args.no_onnx or args.precision == "f16" else onnx_cycles(names[0], args.hw)))
        return 0
    for name in names:
        command = [sys.executable, os.path.abspath(__file__), "--child", "--only", name, "--hw", args.hw]
        command += (["--precision", args.precision] if args.precision else []) + (["--no-onnx"] if args.no_onnx else [])
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=args.budget_s)
            lines = done.stdout.strip().splitlines()
            print(lines[-1] if lines else f"| {name} | failed: {done.stderr.strip().splitlines()[-1]} |", flush=True)
        except subprocess.TimeoutExpired:
            print(f"| {name} | over the {args.budget_s:.0f} s budget |", flush=True)
    return 0


def format_row(name: str, row: dict, onnx: str) -> str:
    cycles = row.get("cycles", row.get("error", ""))
    err = f"{row['err']:.2g}" if "err" in row else ""
    return (f"| {name} | {row['cpu_s']:.2f} | {row['capture_s']:.2f} | {row['convert_s']:.2f} | {row['compile_s']:.2f} | "
            f"{row['aten_ops']} | {', '.join(row['fallbacks']) or '-'} | {cycles} | {onnx} | "
            f"{_ratio(row.get('cycles'), onnx)} | {err} |")


def _ratio(cycles: int | None, onnx: str) -> str:
    """torch path cycles / ONNX path cycles (the target: within 2%), where both ran."""
    words = onnx.split()
    if cycles is None or not words or not words[0].isdigit() or not int(words[0]):
        return ""
    return f"{cycles / int(words[0]):.3f}"


if __name__ == "__main__":
    sys.exit(main())
