"""Export the project's model set: a fixed, seeded list of networks at small
configurations (batch 1, static shapes, random weights built from configs: nothing
is downloaded), each with both of torch's ONNX exporters, committed with their
large weights stripped (`stored.py`) into `graphs/`.

    pip install -e '.[models]'            # torch, torchvision, transformers, onnxscript
    python bench/models/export.py         # all; --only NAME for one; --list

Each model is written as `graphs/<name>.torchscript.onnx` (the legacy TorchScript
exporter, `torch.onnx.export(..., dynamo=False, opset_version=17)`) and
`graphs/<name>.dynamo.onnx` (`dynamo=True`, the exporter's default opset); what
each exporter did is recorded in `graphs/status.json` (ok, or the one-line error
of an export that failed). Nothing in a graph is edited by hand: the only
changes are the ones a user would make before exporting, listed here.

Workarounds a user would apply (and nothing else):

* Hugging Face models are built with `attn_implementation="eager"` (the attention
  written out as ops, as exporters used to see it) and `use_cache=False`, and
  wrapped to return the last hidden state as one tensor.
* GPT-2 and LLaMA are given an attention mask of ones (`torch.ones_like(input_ids)`):
  without one, transformers' mask code checks the position ids for packed
  sequences with `torch.diff`, which the TorchScript exporter cannot export at
  opset 17 (`aten::diff`).
* `nn.TransformerEncoderLayer` takes its fused fast path
  (`torch._transformer_encoder_layer_fwd`, which the TorchScript exporter cannot
  export) in eval mode when autograd is off; both exporters are run with
  `torch.backends.mha.set_fastpath_enabled(False)`, the documented switch. It is
  also wrapped in a module whose `forward` takes the one tensor: the TorchScript
  exporter fills a `forward`'s defaulted parameters in as traced tensors, so the
  layer's own `is_causal=False` reached `scaled_dot_product_attention` as a
  Tensor (torch 2.14: `argument 'is_causal' must be bool, not Tensor`).
* torchvision's ViT initialises its classifier head to zeros (an output of zeros
  tests nothing): the head's weight is drawn from N(0, 0.02) instead.
* torchvision CNNs: BatchNorm running statistics are set from a few random batches
  in train mode (cumulative average, `momentum=None`), then eval, so that the
  activations keep their scale through the network instead of shrinking to
  nothing with the initial statistics.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
GRAPHS = os.path.join(HERE, "graphs")
STATUS = os.path.join(GRAPHS, "status.json")
EXPORTERS = ("torchscript", "dynamo")
SEED = 0
VOCAB = 1000
SEQ = 16

sys.path.insert(0, HERE)
import stored  # noqa: E402  (bench/models is not a package of the install)


@dataclass
class Spec:
    """One model of the set: how to build it and its example inputs."""

    name: str
    build: Callable[[], tuple[object, tuple]]  # -> (module in eval mode, example args)
    inputs: list[dict] = field(default_factory=lambda: [{"kind": "normal"}])
    input_names: tuple[str, ...] = ("input",)


# ---- builders ------------------------------------------------------------------------


def _torch():
    import torch

    torch.manual_seed(SEED)
    return torch


def _calibrated(model, image: tuple[int, int, int]):
    """`model` with its BatchNorm running statistics averaged over random batches."""
    torch = _torch()
    for m in model.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            m.reset_running_stats()
            m.momentum = None
    model.train()
    with torch.no_grad():
        for _ in range(4):
            model(torch.randn(8, *image))
    return model.eval()


def _vision(name: str, size: int, **kwargs):
    def build():
        torch = _torch()
        import torchvision

        model = getattr(torchvision.models, name)(weights=None, **kwargs)
        model = _calibrated(model, (3, size, size))
        return model, (torch.randn(1, 3, size, size),)

    return build


def _vit():
    torch = _torch()
    from torchvision.models.vision_transformer import VisionTransformer

    model = VisionTransformer(
        image_size=32, patch_size=8, num_layers=2, num_heads=4, hidden_dim=64, mlp_dim=128, num_classes=10
    ).eval()
    torch.nn.init.normal_(model.heads.head.weight, std=0.02)  # torchvision starts it at zero
    return model, (torch.randn(1, 3, 32, 32),)


def _encoder_layer():
    torch = _torch()

    class EncoderLayer(torch.nn.Module):
        """The layer called with its one tensor (see the module docstring)."""

        def __init__(self):
            super().__init__()
            self.layer = torch.nn.TransformerEncoderLayer(
                d_model=64, nhead=4, dim_feedforward=128, dropout=0.0, batch_first=True
            )

        def forward(self, x):
            return self.layer(x)

    return EncoderLayer().eval(), (torch.randn(1, SEQ, 64),)


def _lstm():
    torch = _torch()

    class LSTM(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = torch.nn.LSTM(input_size=32, hidden_size=64, num_layers=2, batch_first=True)

        def forward(self, x):
            return self.lstm(x)[0]

    return LSTM().eval(), (torch.randn(1, SEQ, 32),)


def _hidden_state(model, full_mask: bool = False):
    """A Hugging Face model as a module of one tensor in, one tensor out;
    `full_mask` passes an attention mask of ones (see the module docstring)."""
    torch = _torch()

    class LastHiddenState(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, x):
            mask = {"attention_mask": torch.ones_like(x)} if full_mask else {}
            return self.inner(x, return_dict=False, **mask)[0]

    return LastHiddenState(model).eval()


def _hf(model_class: str, config_class: str, full_mask: bool = False, **config):
    def build():
        torch = _torch()
        import transformers

        cfg = getattr(transformers, config_class)(**config)
        cfg._attn_implementation = "eager"
        model = getattr(transformers, model_class)(cfg)
        return _hidden_state(model, full_mask), (torch.randint(0, VOCAB, (1, SEQ)),)

    return build


def _whisper():
    torch = _torch()
    import transformers

    cfg = transformers.WhisperConfig(
        num_mel_bins=80, d_model=64, encoder_layers=2, encoder_attention_heads=4, encoder_ffn_dim=128,
        decoder_layers=1, decoder_attention_heads=4, decoder_ffn_dim=128, max_source_positions=32,
        vocab_size=VOCAB, **TOKEN_IDS, decoder_start_token_id=0,
    )
    cfg._attn_implementation = "eager"
    encoder = transformers.WhisperModel(cfg).get_encoder()
    return _hidden_state(encoder), (torch.randn(1, 80, 64),)


def _wav2vec2():
    torch = _torch()
    import transformers

    cfg = transformers.Wav2Vec2Config(
        conv_dim=(32, 32, 32), conv_kernel=(10, 3, 3), conv_stride=(5, 2, 2), feat_extract_norm="group"
    )
    encoder = transformers.Wav2Vec2Model(cfg).feature_extractor.eval()
    return encoder, (torch.randn(1, 1600),)


TOKENS = [{"kind": "integers", "low": 0, "high": VOCAB}]
TOKEN_IDS = dict(bos_token_id=0, eos_token_id=0, pad_token_id=0)  # inside the small vocabulary
SMALL = dict(vocab_size=VOCAB, max_position_embeddings=64)

MODELS = [
    Spec("resnet18", _vision("resnet18", 64)),
    Spec("mobilenet_v2", _vision("mobilenet_v2", 64)),
    Spec("efficientnet_b0", _vision("efficientnet_b0", 64)),
    Spec("squeezenet1_1", _vision("squeezenet1_1", 64)),
    Spec("vit_tiny", _vit),
    Spec("transformer_encoder_layer", _encoder_layer),
    Spec("bert", _hf("BertModel", "BertConfig", hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=128, **SMALL), TOKENS, ("input_ids",)),
    Spec("distilbert", _hf("DistilBertModel", "DistilBertConfig", dim=64, n_layers=2, n_heads=4,
                           hidden_dim=128, **SMALL), TOKENS, ("input_ids",)),
    Spec("gpt2", _hf("GPT2Model", "GPT2Config", n_embd=64, n_layer=2, n_head=4, n_positions=64,
                     vocab_size=VOCAB, use_cache=False, full_mask=True, **TOKEN_IDS), TOKENS, ("input_ids",)),
    Spec("llama", _hf("LlamaModel", "LlamaConfig", hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, use_cache=False, full_mask=True, **SMALL),
         TOKENS, ("input_ids",)),
    Spec("t5_encoder", _hf("T5EncoderModel", "T5Config", d_model=64, d_kv=16, d_ff=128, num_layers=2,
                           num_heads=4, vocab_size=VOCAB, use_cache=False), TOKENS, ("input_ids",)),
    Spec("whisper_encoder", _whisper, input_names=("input_features",)),
    Spec("wav2vec2_features", _wav2vec2, input_names=("input_values",)),
    Spec("lstm", _lstm),
]


# ---- exporting -----------------------------------------------------------------------


def export(spec: Spec, exporter: str, path: str) -> None:
    """Export one model with one exporter to `path` (weights stripped)."""
    import onnx
    import torch

    model, args = spec.build()
    with tempfile.TemporaryDirectory() as tmp, _quiet(), _no_fastpath():
        raw = os.path.join(tmp, "model.onnx")
        common = dict(input_names=list(spec.input_names), output_names=["output"])
        if exporter == "torchscript":
            torch.onnx.export(model, args, raw, dynamo=False, opset_version=17, **common)
        else:
            torch.onnx.export(model, args, raw, dynamo=True, **common)
        proto = onnx.load(raw)  # external data, if any, loaded into the model
    onnx.checker.check_model(proto, full_check=True)
    stored.strip(proto)
    stored.drop_node_metadata(proto)
    stored.describe_inputs(proto, spec.inputs)
    onnx.save(proto, path)


@contextlib.contextmanager
def _no_fastpath():
    """Multi-head attention without its fused inference fast path (see the module docstring)."""
    import torch

    before = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        yield
    finally:
        torch.backends.mha.set_fastpath_enabled(before)


@contextlib.contextmanager
def _quiet():
    """The exporters print progress and warnings; the status file keeps what matters."""
    import warnings

    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        yield


def _one_line(e: BaseException) -> str:
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    return f"{type(e).__name__}: {lines[0] if lines else ''}"[:300]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", action="append", metavar="NAME", help="only this model (repeatable)")
    p.add_argument("--exporter", choices=EXPORTERS, action="append", help="only this exporter")
    p.add_argument("--list", action="store_true", help="list the models and exit")
    args = p.parse_args(argv)
    if args.list:
        print("\n".join(s.name for s in MODELS))
        return 0
    unknown = set(args.only or ()) - {s.name for s in MODELS}
    if unknown:
        print(f"error: unknown model(s) {', '.join(sorted(unknown))} (see --list)", file=sys.stderr)
        return 1
    os.makedirs(GRAPHS, exist_ok=True)
    status = json.load(open(STATUS)) if os.path.exists(STATUS) else {}
    for spec in MODELS:
        if args.only and spec.name not in args.only:
            continue
        for exporter in args.exporter or EXPORTERS:
            path = os.path.join(GRAPHS, f"{spec.name}.{exporter}.onnx")
            start = time.perf_counter()
            try:
                export(spec, exporter, path)
                outcome = "ok"
            except Exception as e:  # noqa: BLE001 - an export that fails is recorded, not fatal
                if os.environ.get("EXPORT_DEBUG"):
                    traceback.print_exc()
                outcome = _one_line(e)
                if os.path.exists(path):
                    os.remove(path)
            status.setdefault(spec.name, {})[exporter] = outcome
            size = os.path.getsize(path) if os.path.exists(path) else 0
            print(f"{spec.name:<28}{exporter:<13}{time.perf_counter() - start:6.1f} s {size:>9} B  {outcome}",
                  flush=True)
            with open(STATUS, "w") as f:
                json.dump(status, f, indent=1, sort_keys=True)
                f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
